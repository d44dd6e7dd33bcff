/*
 * proc_files: the executable mappings of processes seen alive, and their
 * files held open, so that a process that exits before the drain that
 * names its stacks is still named (issue 16). The unwinder notes each
 * process the kernel walks (on its first walk, after an exec, a dlopen);
 * the symbolizer reads a process's last-known mappings from here when its
 * /proc/PID/maps is gone, and opens a mapped file here when its
 * /proc/PID/map_files entry is gone.
 *
 * A file is held once however many processes map it (one descriptor per
 * device and inode), while a kept process maps it. An exited process is
 * kept PROC_FILES_KEEP_S seconds after its exit is noticed, at most
 * PROC_FILES_PROCS_MAX processes and PROC_FILES_FILES_MAX files in all
 * (beyond that, the oldest sixteenth of the processes goes, exited ones
 * first; a file that does not fit is not held and is opened by path).
 * Thread-safe. Does not log.
 */
#ifndef PROC_FILES_H
#define PROC_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define PROC_FILES_KEEP_S    60
#define PROC_FILES_PROCS_MAX 4096
#define PROC_FILES_FILES_MAX 256

struct proc_files;

struct proc_files_stats {
	uint32_t processes, exited; /* kept, of which exited */
	uint32_t files;		    /* descriptors held */
	uint64_t files_not_held;    /* mappings left to their path: PROC_FILES_FILES_MAX */
};

/* proc_root is usually "/proc". Returns 0 or -ENOMEM. */
int proc_files_new(const char *proc_root, struct proc_files **ret);
void proc_files_free(struct proc_files *pf); /* NULL-safe; closes the files */

/* Keeps lines, /proc/PID/maps lines of live tgid's executable mappings
 * each ending in '\n', that the caller has just read (the unwinder reads
 * them anyway: one read of the maps, not two), in place of what was kept
 * of it, and opens the files not held yet. Returns 0, -EINVAL, -ESRCH (no
 * lines: a zombie's maps are empty) or -ENOMEM (what was kept stays). */
int proc_files_note(struct proc_files *pf, uint32_t tgid, const char *lines, size_t len);

/* Keeps lines, /proc/PID/maps lines of executable mappings, each ending
 * in '\n', for tgid, which has exited without its maps read: what another
 * source knew of them (the unwinder's kernel-built list). Its files are
 * held where some other kept process holds them, else opened by path.
 * Returns 0, -EINVAL or -ENOMEM. */
int proc_files_keep(struct proc_files *pf, uint32_t tgid, const char *lines, size_t len);

/* The pid in its own pid namespace (pid_ns.h) of tgid as read when its
 * maps were noted, into *ret (0: tgid itself, or not read). Returns 0, or
 * -ENOENT if tgid is not kept. */
int proc_files_ns_pid(struct proc_files *pf, uint32_t tgid, uint32_t *ret);

/* Calls parse(arg, line) on each kept executable mapping of tgid, a
 * /proc/PID/maps line (parse may change it), until parse returns < 0.
 * Returns that, 0, or -ENOENT if tgid is not kept. */
int proc_files_maps(struct proc_files *pf, uint32_t tgid, int (*parse)(void *arg, char *line),
		    void *arg);

/* Opens the held file of device dev and inode ino (as /proc/PID/maps
 * writes them) for reading, with a file offset of its own. Returns an fd
 * or -ENOENT. */
int proc_files_open(struct proc_files *pf, uint64_t dev, uint64_t ino);

/* The status (fstat) of the held file of device dev and inode ino, as
 * /proc/PID/maps writes them, without a path lookup: while it is held its
 * inode cannot be reused, and its ctime tells a rewrite. Returns 0 or
 * -ENOENT (not held). */
int proc_files_stat(struct proc_files *pf, uint64_t dev, uint64_t ino, struct stat *ret);

void proc_files_stats(struct proc_files *pf, struct proc_files_stats *ret);

#endif
