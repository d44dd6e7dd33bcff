/*
 * proc_maps: one line of /proc/PID/maps, parsed. The symbolizer, the
 * unwinder, request symbol lookup (elf_funcs) and Intel PT sessions all
 * read a process's mappings; this is the one place that knows the format:
 *   "start-end perms offset dev inode   path"
 * where path may be empty (anonymous), "[vdso]"-like, contain spaces, or
 * end in " (deleted)". Does not log.
 */
#ifndef PROC_MAPS_H
#define PROC_MAPS_H

#include <stdbool.h>
#include <stdint.h>

struct proc_map {
	uint64_t start, end; /* start < end */
	uint64_t pgoff;	     /* file offset of start */
	uint64_t dev;	     /* makedev(major, minor) of "major:minor" */
	uint64_t ino;
	char perms[5];	     /* "r-xp" */
	bool deleted;	     /* the path ended in " (deleted)" */
	const char *path;    /* into the line: "" for anonymous memory */
};

/* Parses line in place: the path is NUL-terminated there, without the
 * trailing newline and " (deleted)". Returns false for a line that is not a
 * mapping (the line may then be changed). */
bool proc_maps_parse(char *line, struct proc_map *ret);

/* Whether line is of an executable mapping, from its perms, without parsing
 * it: readers that want only those (most lines are not) skip the others at
 * this cost. A line it passes may still fail proc_maps_parse(). */
bool proc_maps_line_exec(const char *line);

/* An executable mapping: perms "..x.". */
static inline bool proc_map_exec(const struct proc_map *m)
{
	return m->perms[2] == 'x';
}

#endif
