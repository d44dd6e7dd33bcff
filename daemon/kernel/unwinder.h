/*
 * unwinder: feeds the in-kernel unwinder (bpf/stack.bpf.c) its tables. For
 * each process the BPF side asks about (unwind_requests ring buffer: a new
 * process, an exec, a walk that met code outside the known mappings), reads
 * /proc/PID/maps, builds the
 * unwind table of each executable file mapping (unwind_table.c) unless a
 * table of that file (same build-id, else device and inode) is loaded
 * already, copies it into the unwind_rows array, and publishes the process's
 * mappings in unwind_procs. Tables no process uses any more are evicted,
 * least recently used first, when rows run out. Runs on its own thread;
 * the functions below may be called from any. Does not log; problems show
 * in unwinder_stats().
 */
#ifndef UNWINDER_H
#define UNWINDER_H

#include <stdbool.h>
#include <stdint.h>

struct unwinder;

struct unwinder_maps {
	int rows_fd;	   /* unwind_rows: BPF_F_MMAPABLE array of struct offcpu_unwind_row */
	uint32_t rows_max; /* its max_entries */
	int procs_fd;	   /* unwind_procs */
	int requested_fd;  /* unwind_requested */
	int requests_fd;   /* unwind_requests ring buffer */
	int files_fd;	   /* unwind_files: loaded tables by file identity */
	volatile uint32_t *files_gen; /* unwind_files_gen, in the mmapped .bss */
	volatile uint32_t *files_added; /* unwind_files_added, likewise */
	int python_procs_fd; /* python_procs; -1: CPython's frames are not walked */
};

struct unwinder_stats {
	uint32_t tables, processes;
	uint64_t rows_used, rows_max;
	uint64_t table_bytes;	 /* rows_used * row size, in the BPF array */
	uint64_t builds;	 /* tables built since start */
	uint64_t build_ns_total; /* their summed build time */
	uint64_t build_ns_max;
	char build_max_path[128]; /* the file that took longest */
	uint64_t evictions;	  /* tables dropped to make room */
	uint64_t no_room;	  /* mappings left to frame pointers: rows full */
	uint32_t given_up;	  /* files not built again for a while: no room last time */
	uint64_t failed;	  /* mappings without a usable table (no .eh_frame...) */
	uint64_t requests;	  /* process (re)loads asked for by the BPF side */
	uint64_t files_opened;	  /* mappings whose file was opened to find its table */
	uint64_t files_known;	  /* mappings whose table was known from the maps line */
	uint64_t adopted;	  /* processes published from the kernel side's list, maps unread */
	/* Reads the loader asked for once it mapped a new process's libraries
	 * (or a dlopen's): the time from its ask to the read's start (the
	 * request queued, this thread waiting for a CPU) and the read's own
	 * (tables built included). Under CPU load the wait is what grows. */
	uint64_t loader_reads;
	int nice; /* this thread's niceness: -10, or the daemon's without CAP_SYS_NICE */
	uint64_t loader_wait_ns_total, loader_wait_ns_max;
	uint64_t loader_read_ns_total, loader_read_ns_max;
	/* Large tables built by the builder thread, off the reads new processes
	 * wait for; the longest one waited there for the builds before it. */
	uint64_t background_builds, background_wait_ns_max;
	uint32_t python_processes;	/* CPython processes whose frames are walked */
	uint64_t python_unsupported;	/* CPython processes the walk does not know */
	char python_unsupported_what[48]; /* the last one's version and why ("3.14.0: unknown version") */
};

struct proc_files;
struct file_ids;

/* proc_root is usually "/proc". files, if not NULL, is told each process
 * whose maps are read (proc_files_note()), and the files it holds
 * are recognized from a maps line without an open; file_ids, if not NULL, gives
 * each file a table is made for the id its frames are recorded by
 * (OFFCPU_FRAME_FILE; else they keep their process's addresses). Both must
 * outlive u. Starts the thread. Returns 0 or -errno. */
int unwinder_new(const struct unwinder_maps *maps, const char *proc_root, struct proc_files *files,
		 struct file_ids *file_ids, struct unwinder **ret);
void unwinder_free(struct unwinder *u); /* NULL-safe; stops the thread */

/* Loads tgid's tables now, before a capture of it starts, so that its
 * first blocks are walked with them too. Blocks while a table is built
 * (mariadbd: 0.2 s the first time), large ones by the builder thread
 * included: call it off the event loop. Returns 0,
 * -ESRCH if the process is gone, -EAGAIN if it exec'd meanwhile. */
int unwinder_prepare(struct unwinder *u, uint32_t tgid);

void unwinder_stats(struct unwinder *u, struct unwinder_stats *ret);

#endif
