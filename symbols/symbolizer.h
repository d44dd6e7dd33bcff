/*
 * symbolizer: turns stack addresses into frame names.
 * Kernel addresses via <proc>/kallsyms (read by kallsyms.h); user addresses
 * via <proc>/PID/maps, the mapped ELF file's DWARF (its own or a separate
 * debug file, through debuginfo.h: inline frames and source lines) and else
 * its .symtab (else .dynsym), read with libelf; JIT code via the process's
 * /tmp/perf-PID.map (perfmap.h). ELF files are cached per binary (by
 * build-id where present, else by device and inode) and shared by every
 * process that maps it; process maps are cached per tgid and refreshed by
 * symbolizer_refresh_processes(). The proc root is a parameter so tests can
 * use a fixture directory. Called by the daemon when it drains stacks. Does
 * not log.
 *
 * A frame is never dropped: what cannot be named is written as
 * "module+0xOFFSET" (OFFSET: the ELF virtual address, as addr2line takes it),
 * or "[unknown: WHY]" when there is no module: see enum symbolizer_unnamed.
 */
#ifndef SYMBOLIZER_H
#define SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

/* proc_root is usually "/proc"; debug_root, where separate debug files are
 * looked for (debuginfo.h), usually "/usr/lib/debug". Returns 0 or -ENOMEM. */
int symbolizer_new(const char *proc_root, const char *debug_root, struct symbolizer **ret);
void symbolizer_free(struct symbolizer *s); /* NULL-safe */

/* Why a user frame is [unknown: WHY], counted by symbolizer_unnamed(). */
enum symbolizer_unnamed {
	SYMBOLIZER_UNNAMED_EXITED,    /* "exited": the process's mappings were never read */
	SYMBOLIZER_UNNAMED_UNMAPPED,  /* "unmapped": no executable mapping at the address */
	SYMBOLIZER_UNNAMED_ANONYMOUS, /* "anonymous": anonymous code no perf map names */
	SYMBOLIZER_UNNAMED_FORGOTTEN, /* "file forgotten": a file frame (symbolizer_user_file())
					 whose id was retired too long ago */
	SYMBOLIZER_UNNAMED_COUNT,
};

/* The user frames written [unknown: WHY] since s was made, by WHY. May be
 * called from any thread. */
void symbolizer_unnamed(struct symbolizer *s, uint64_t ret[SYMBOLIZER_UNNAMED_COUNT]);

/* Bytes the caches' symbol tables, named addresses and DWARF readers take
 * (the last estimated: debuginfo_bytes()). The names are bounded at 32 MiB
 * in all, the DWARF readers at 96 MiB. May be called from any thread. */
size_t symbolizer_cache_bytes(struct symbolizer *s);

struct proc_files;

/* Names the stacks of a process that has exited from what files kept of
 * it (proc_files.h: its last-known mappings, their files held open) when
 * its own maps and map_files are gone. files must outlive s. */
void symbolizer_use_proc_files(struct symbolizer *s, struct proc_files *files);

/* Writes the name of the kernel function containing addr into buf (always
 * NUL-terminated, truncated to size). Returns 0 if found, -ENOENT if written
 * as a raw address. */
int symbolizer_kernel(struct symbolizer *s, uint64_t addr, char *buf, size_t size);

/*
 * Same for an address in process tgid's user address space, where one
 * address may name several frames: with DWARF, the function and the
 * functions inlined into it at addr, written ';'-joined root to leaf, the
 * inlined ones marked and each with its source line (common/frame.h); else
 * the ELF symbol. C++ names are demangled. A name holds no ';'. Results are
 * cached per ELF file and address. Returns 0 if named, -ENOENT if written as
 * module+0xOFFSET, [vdso] (a special mapping's name) or [unknown: WHY].
 */
int symbolizer_user(struct symbolizer *s, uint32_t tgid, uint64_t addr, char *buf, size_t size);

struct file_ids;

/* Names the frames recorded by file id and ELF virtual address
 * (symbolizer_user_file()) from the files ids says they stand for. ids must
 * outlive s. */
void symbolizer_use_file_ids(struct symbolizer *s, struct file_ids *ids);

/*
 * As symbolizer_user(), for an ELF virtual address of the file that id
 * stands for in the ids of symbolizer_use_file_ids(): the same name in
 * every process that maps the file, whether it lives or not. The file is
 * opened where the unwinder read it (held by proc_files, its process's
 * root, its path; the inode must match). Returns 0 if named, -ENOENT if
 * written as module+0xVADDR or [unknown: file forgotten].
 */
int symbolizer_user_file(struct symbolizer *s, uint32_t id, uint64_t vaddr, char *buf, size_t size);

/* Marks cached process maps stale, so the next lookup re-reads them
 * (mappings change with dlopen and exec; pids get reused). A process whose
 * maps can no longer be read has exited: it keeps its last-known maps, so
 * the stacks of its final blocks are still named. ELF caches are kept. */
void symbolizer_refresh_processes(struct symbolizer *s);

/* Reads tgid's maps (and its JIT's perf map, if any) now if they are not
 * cached or stale, and the symbols of its mapped files, so they are known
 * even if the process exits (or its binary is deleted) before any of its
 * stacks is named. */
void symbolizer_prime(struct symbolizer *s, uint32_t tgid);

#endif
