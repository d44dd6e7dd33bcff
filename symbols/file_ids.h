/*
 * file_ids: the files user frames are recorded by. The in-kernel unwinder
 * records a frame in a mapped file as the file's id and an ELF virtual
 * address (bpf/offcpu.h, OFFCPU_FRAME_FILE), so that the same code has the
 * same frame in every process and is named from the file, whether its
 * process still lives or not. The unwinder gives each file it builds a
 * table of an id and says here which file it is; the symbolizer asks.
 *
 * An id the unwinder retires (its table evicted) is kept a while (the
 * daemon: FILE_IDS_KEEP_S seconds), for the stacks recorded before, then
 * forgotten; ids are handed out again only after the id space wraps, and
 * never one still known.
 * Thread-safe. Does not log.
 */
#ifndef FILE_IDS_H
#define FILE_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "elf_build_id.h"

#define FILE_IDS_KEEP_S 60

struct file_ids;

/* What an id stands for. */
struct file_id_info {
	uint64_t dev, ino; /* as stat() gives them */
	uint8_t build_id[ELF_BUILD_ID_MAX];
	size_t build_id_len; /* 0: none; the file is identified by dev and ino */
	char path[4096];     /* as the process it was first read for mapped it */
	uint32_t tgid;	     /* that process (its root may be another mount namespace's) */
	uint64_t serial;     /* unique to this id's current file: ids wrap */
};

/* Ids are 1 to max_id; a retired id is kept keep_s seconds. Returns 0 or
 * -ENOMEM. */
int file_ids_new(uint32_t max_id, uint32_t keep_s, struct file_ids **ret);
void file_ids_free(struct file_ids *ids); /* NULL-safe */

/* A new id for the file info describes (its serial is set here). Returns
 * the id, or 0 if none is free or memory is out. */
uint32_t file_ids_add(struct file_ids *ids, const struct file_id_info *info);

/* The file is no longer recorded under id: it is forgotten keep_s seconds
 * later (at a file_ids_add()). */
void file_ids_retire(struct file_ids *ids, uint32_t id);

/* The file of id into *ret: 0, or -ENOENT if the id is not known (never
 * given, or forgotten). */
int file_ids_get(struct file_ids *ids, uint32_t id, struct file_id_info *ret);

/* The serial of id's file (struct file_id_info), 0 if the id is not known:
 * a cheap check that what was got for id is still what it stands for. */
uint64_t file_ids_serial(struct file_ids *ids, uint32_t id);

/* How many ids were forgotten so far: names given for ids before stay
 * right while it does not change. */
uint64_t file_ids_forgotten(struct file_ids *ids);

/* Ids known now (retired ones included). */
size_t file_ids_count(struct file_ids *ids);

#endif
