/*
 * drain: one emptying of the kernel's aggregation maps, with every stack
 * named. drain_run() names a batch through lookup callbacks (struct
 * drain_lookup), so it runs without BPF in unit tests; the daemon drains on
 * a libuv worker thread, one at a time, and names from there with the
 * symbolizer (manager_drain.c), which is used only there. Does not log.
 */
#ifndef DRAIN_H
#define DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "proto.h"
#include "sampling.h"

/* The leaf frame of a fileio --with-filename row: the prefix, then the
 * file's name. */
#define DRAIN_FILE_FRAME_PREFIX "[file] "

/* The leaf frame of a kernel stack read off the CPU whose frames of the
 * scheduler's text section (do_nanosleep, mutex_lock, ..., schedule) could
 * not be put back (OFFCPU_STACK_SCHED_LOST). */
#define DRAIN_SCHED_LOST_FRAME "[wait frames unknown]"

/* The root frame of a user stack whose table walk stopped early. */
#define DRAIN_TRUNCATED_FRAME "[truncated]"

/* The leaf frame of a capture's block still open at its end (the part of it
 * inside the capture; OFFCPU_KEY_IN_PROGRESS). */
#define DRAIN_IN_PROGRESS_FRAME PROTO_IN_PROGRESS_FRAME

/* The stack of a sampled slot's time that no sample stands for. */
#define DRAIN_UNSAMPLED_FRAME "[unsampled]"

struct drain_row {
	struct offcpu_key key;
	struct offcpu_value value;
	const char *ustack; /* ';'-joined frames root->leaf; "" if none */
	const char *kstack;
	const char *chain;     /* the waker part (levels joined by "--"); "" if none */
	uint32_t ustack_flags; /* OFFCPU_STACK_* of the user stack */
	const char *cgroup;    /* the key's cgroup by path; "" if not known */
	uint32_t ns_pid;       /* its process's pid in its own pid namespace; 0: tgid */
};

struct drain_result {
	struct drain_row *rows;
	size_t n_rows;
	struct collector_hist *hists; /* log2 histogram counts, by slot */
	size_t n_hists;
	size_t n_stacks, n_chains;	   /* entries the stack and chain maps held */
	uint64_t counters[OFFCPU_CNT_MAX]; /* totals since the programs were loaded */
	struct sampling_summary sampling[OFFCPU_MAX_SLOTS]; /* of sampled slots */
	/* private: */
	struct hashtab *names;
	struct hashtab *ns_pids; /* tgid -> its ns_pid, as named this drain */
};

/* What naming a batch asks of the world: the daemon answers from the
 * symbolizer and the collector's maps (manager_drain.c), unit tests from
 * tables. Called on drain_run's thread. */
struct drain_lookup {
	void *arg;
	/* The frame name of one kernel address, into buf. */
	void (*kernel_frame)(void *arg, uint64_t addr, char *buf, size_t size);
	/* The frames of one user address of process tgid, into buf: an inline
	 * chain, root first, ';'-joined. */
	void (*user_frames)(void *arg, uint32_t tgid, uint64_t addr, char *buf, size_t size);
	/* The name of one CPython frame (OFFCPU_FRAME_PYTHON) of process
	 * tgid, into buf. NULL: "[python]". */
	void (*python_frame)(void *arg, uint32_t tgid, uint64_t frame, char *buf, size_t size);
	/* A waker's stack by its hash: 0, or < 0 if it is gone. */
	int (*waker_stack)(void *arg, uint64_t hash, struct offcpu_stack *ret);
	/* A fileio row's file name by its hash: 0, or < 0 if it is gone. */
	int (*file_name)(void *arg, uint64_t hash, struct offcpu_file_name *ret);
	/* A number that changes when a name given before for a stack of file
	 * frames may no longer be right (a file id forgotten); NULL: never. */
	uint64_t (*names_epoch)(void *arg);
	/* The path of cgroup id (of a thread of process tgid), into buf: 0, or
	 * < 0 if it is not known (the row's cgroup is then ""). NULL: none. */
	int (*cgroup_path)(void *arg, uint64_t id, uint32_t tgid, char *buf, size_t size);
	/* Process tgid's pid in its own pid namespace; 0: the same, or not
	 * known. NULL: none. */
	uint32_t (*ns_pid)(void *arg, uint32_t tgid);
};

/* Names kept from one drain to the next, for the stacks whose names do not
 * change (drain.c). NULL-safe; drain_names_new() returns 0 or -ENOMEM. */
struct drain_names;
int drain_names_new(struct drain_names **ret);
void drain_names_free(struct drain_names *n);
size_t drain_names_count(const struct drain_names *n);

/* The frames of st, a leaf-first stack (a user one of process tgid),
 * ';'-joined root to leaf as rows' stacks are, named through lk; a user
 * stack whose table walk stopped early has DRAIN_TRUNCATED_FRAME as its
 * root. Returns a string to free(), or NULL on ENOMEM. */
char *drain_stack_name(const struct drain_lookup *lk, const struct offcpu_stack *st, uint32_t tgid,
		       bool kernel);

/* How a waker is named, as in wakeup graphs: its comm, or for interrupts
 * and idle, which wake on nobody's behalf, "[hardirq]", "[softirq]",
 * "[idle]", "[nmi]". Returns a label, or buf with the comm in it. */
const char *drain_waker_name(const struct offcpu_waker *w, char *buf, size_t size);

/* Names row, an OFFCPU_KEY_UNSAMPLED one: DRAIN_UNSAMPLED_FRAME, no other
 * frames. Also for the unsampled rows of carried time (sampling_carry_take()). */
void drain_unsampled_names(struct drain_row *row);

/* Names the rows of batch b, one collector_drain()'s: scales the sampled
 * rows (sampling_calibrate, with carry: may be NULL), sorts the stacks and
 * chains, and takes the histograms (b->hists is NULL after); b stays the
 * caller's to release. Names are taken from and kept in kept (may be NULL):
 * rows may point into it, so the result of one drain_run() must be released
 * before the next with the same kept. ret->counters are b's whatever
 * happens. Returns 0 or -errno; *ret must be released with
 * drain_result_release() either way. */
int drain_run(struct collector_batch *b, const struct drain_lookup *lk,
	      struct sampling_carry *carry, struct drain_names *kept, struct drain_result *ret);
void drain_result_release(struct drain_result *r);

#endif
