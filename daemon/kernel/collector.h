/*
 * collector: owns the BPF side. Loads and attaches the scheduler core of the
 * programs of bpf/ (linked into offcpu.bpf.o) at start (tp_btf/sched_switch,
 * or raw_tp where tp_btf is missing), and each other group of its programs
 * (on-CPU, requests, bio, fileio) when a slot first needs it, sharing the
 * core's maps; manages the filter slots that captures occupy, and drains the
 * double-buffered aggregation maps. Slot calls come from the event loop
 * thread; collector_drain() runs on a worker thread, one at a time;
 * collector_group_load() may run on any thread. Does not log (libbpf prints
 * through the daemon's libbpf print callback).
 */
#ifndef COLLECTOR_H
#define COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h> /* the __u32/__u64 of offcpu.h */

#include "offcpu.h"

struct collector;

enum collector_attach {
	COLLECTOR_ATTACH_AUTO, /* tp_btf, else raw_tp */
	COLLECTOR_ATTACH_TP_BTF,
	COLLECTOR_ATTACH_RAW_TP,
};

/* How a deferred user walk meets its thread's return to user mode: by BPF
 * task work; at the rseq_update tracepoint, where the thread registered
 * rseq (task work for the rest); or by task work until
 * collector_walk_return_set() says otherwise (bpf/sched.bpf.c says when
 * which pays). */
enum collector_walk_return {
	COLLECTOR_RETURN_TASK_WORK,
	COLLECTOR_RETURN_RSEQ,
	COLLECTOR_RETURN_SWITCHABLE,
};

struct collector_options {
	uint32_t agg_map_entries;
	uint32_t stack_map_entries;
	bool trace_self;
	enum collector_attach attach;
	bool unwind_dwarf;	   /* user stacks from unwind tables (tp_btf only) */
	uint32_t unwind_max_depth; /* frames, 1..OFFCPU_MAX_STACK_DEPTH */
	bool python_frames;	   /* CPython's interpreter frames too (unwind_dwarf only) */
	uint32_t unwind_rows;	   /* rows of all loaded unwind tables */
	uint32_t unwind_processes; /* processes with tables at once */
	uint32_t oncpu_frequency;  /* on-CPU samples per second and CPU; 0: no sampling */
	bool bpf_stats;		   /* keep the kernel's BPF run-time stats on (status) */
	bool defer_walks;	   /* sampled slots walk user stacks when threads are current
				      again, where the kernel can (else at switch-out) */
	enum collector_walk_return walk_return; /* how deferred walks meet the return to
						   user mode */
	bool stack_cache;	   /* exact kernel stacks from a verified cache, where the
				      kernel can (bpf/stack_cache.bpf.c) */
	uint32_t stack_cache_audit; /* one cache hit in this many is walked and compared */
};

/* A cgroup v2 subtree: the cgroup of that id and every cgroup below it. */
struct collector_cgroup {
	uint64_t id;	/* as offcpu_key.cgroup */
	uint32_t level; /* its depth: 1 for /a, 2 for /a/b (the root, 0, is everything) */
};

/* Subtrees one filter may name (a unit, a container's cgroups). */
#define COLLECTOR_MAX_CGROUPS 64

/* One capture's filter. Empty id lists mean "all". */
struct collector_filter {
	const uint32_t *tgids;
	size_t n_tgids;
	const uint32_t *tids;
	size_t n_tids;
	/* Only threads in these subtrees (decided in the kernel, when a block
	 * begins, as tgids and tids are); at most COLLECTOR_MAX_CGROUPS. */
	const struct collector_cgroup *cgroups;
	size_t n_cgroups;
	uint32_t state_mask;
	uint64_t min_block_ns;
	uint64_t max_block_ns; /* 0: unbounded */
	bool user_stacks;      /* the target's stacks */
	bool kernel_stacks;
	unsigned kind;	      /* enum offcpu_kind */
	unsigned chain_depth; /* OFFCPU_KIND_CHAIN: 1..OFFCPU_MAX_CHAIN */
	bool split_runq;      /* OFFCPU: run-queue wait as separate RUNQ rows */
	bool filename;	      /* FILEIO: rows by file name too (hash in the key's chain) */
	bool oncpu;	      /* OFFCPU: on-CPU samples beside, as ONCPU rows (hot/cold) */
	bool hist;	      /* keep log2 histograms */
	bool requests;	      /* count only inside the slot's request functions */
	uint64_t sample_period_ns; /* sampled stacks (bpf/sampling.h); 0: every block's */
	/* With tgids: processes they fork, and theirs, join the filter as they
	 * are made (collector_follow_available() says whether they can). */
	bool follow_children;
};

/* Probes (one per entry, one per return) that one slot may attach. */
#define COLLECTOR_MAX_REQUEST_PROBES 1024

/* One request symbol's latency, from struct offcpu_request_key rows. */
struct collector_request_stats {
	uint64_t count[2][OFFCPU_HIST_BUCKETS]; /* [enum offcpu_request_measure][bucket] */
	uint64_t sum_ns[2][OFFCPU_HIST_BUCKETS];
	uint64_t calls; /* outermost calls entered: 0, the probes never fired */
};

struct collector_stack {
	uint64_t hash;
	struct offcpu_stack stack;
};

struct collector_row {
	struct offcpu_key key;
	struct offcpu_value value;
};

struct collector_chain {
	uint64_t hash;
	struct offcpu_chain chain;
};

struct collector_hist {
	struct offcpu_hist_key key;
	uint64_t count;
};

/* A sampled slot's exact total, summed over CPUs. */
struct collector_total {
	struct offcpu_key key;
	struct offcpu_total total;
};

/* What one drain emptied out of the kernel. */
struct collector_batch {
	struct collector_row *rows;
	size_t n_rows;
	struct collector_stack *stacks;
	size_t n_stacks;
	struct collector_chain *chains;
	size_t n_chains;
	struct collector_hist *hists;
	size_t n_hists;
	struct collector_total *totals;
	size_t n_totals;
	uint64_t counters[OFFCPU_CNT_MAX]; /* totals since load, read after the flip */
	int banks_error; /* -errno: the threads' banks were not moved (a later drain will) */
};

/* Opens, loads and attaches the scheduler core (no optional group). Returns
 * 0, or -errno: -EPERM without privileges, other codes from libbpf. */
int collector_new(const struct collector_options *opts, struct collector **ret);
void collector_free(struct collector *c); /* NULL-safe; detaches */

/* Where sampled slots walk user stacks: "deferred" (when the thread is
 * current again) or "switch-out" (every block's, as exact slots do);
 * *ret_why says why not deferred ("" if it is). */
const char *collector_walk_mode(const struct collector *c, const char **ret_why);

/* How a deferred walk meets its thread's return to user mode: "rseq_update"
 * (that tracepoint, for threads with rseq registered; else a BPF task work)
 * or "task work"; "" if walks are not deferred. *ret_why says why not
 * rseq_update where it was asked for ("" otherwise). */
const char *collector_walk_return(const struct collector *c, const char **ret_why);

/* With COLLECTOR_RETURN_SWITCHABLE: whether deferred walks can wait for
 * rseq_update here, and the switch between that (rseq true) and task
 * works. A walk waiting for rseq_update when it is switched off is lost
 * and counted (samples_lost), unless its thread blocks again first.
 * Returns 0; -EOPNOTSUPP where it cannot; -errno of the attach (task works
 * go on). Event loop only, as the slots' calls. */
bool collector_walk_return_switchable(const struct collector *c);
int collector_walk_return_set(struct collector *c, bool rseq);

/* Whether exact kernel stack walks are cached (stack_cache.bpf.c); if not,
 * *ret_why says why. */
bool collector_kstack_cache(const struct collector *c, const char **ret_why);

/* Whether the kernel side builds a new process's mappings from its VMAs,
 * for its walks before user space has read them (bpf/stack.bpf.c): it
 * needs the VMA iterator kfuncs and deferred walks. */
bool collector_unwind_from_vmas(const struct collector *c);

/* Whether those lists are also built when the dynamic loader has mapped a
 * new process's libraries (a uprobe on its _dl_debug_state). */
bool collector_unwind_loader_hook(const struct collector *c);

/* "tp_btf" or "raw_tp": which sched_switch program is attached. */
const char *collector_tracepoint(const struct collector *c);

/* Where blocks' run-queue parts come from: "sched_info" (the scheduler's
 * own count, read at switch-in: sched_waking then runs only for the waker
 * kinds) or "sched_waking". */
const char *collector_runq_clock(const struct collector *c);

/* The tracepoints an I/O kind (OFFCPU_KIND_BIO or _FILEIO) is traced with,
 * e.g. "block_io_start/block_rq_issue/block_rq_complete"; NULL if that kind is
 * unavailable on this kernel (its group's status says why) or kind is not an
 * I/O kind. Known before the kind's programs are loaded. */
const char *collector_io_path(struct collector *c, unsigned kind);
const char *collector_program_name(const struct collector *c);

/*
 * The optional groups of programs. Each is loaded (and attached, where it
 * is attached for good) the first time a slot needs it, then stays loaded:
 * verifying programs nobody asked for made the start slow.
 */
enum collector_group {
	COLLECTOR_GROUP_ONCPU,	  /* oncpu_sample on per-CPU perf events: kinds oncpu, hotcold */
	COLLECTOR_GROUP_REQUESTS, /* request_enter/exit, uprobes per slot: requests */
	COLLECTOR_GROUP_BIO,	  /* block tracepoints: kind bio */
	COLLECTOR_GROUP_FILEIO,	  /* syscall tracepoints, attached while a fileio slot is on */
	COLLECTOR_GROUP_COUNT,
};

enum collector_group_state {
	COLLECTOR_GROUP_ON_DEMAND,   /* not loaded yet: loads when a slot first needs it */
	COLLECTOR_GROUP_LOADED,	     /* loaded (and attached where it stays attached) */
	COLLECTOR_GROUP_UNAVAILABLE, /* cannot work here, or its load failed (kept) */
};

struct collector_group_status {
	enum collector_group_state state;
	int error;	  /* UNAVAILABLE: -errno */
	char reason[256]; /* UNAVAILABLE: why, for people */
	uint64_t load_ns; /* LOADED: how long loading and attaching took */
};

/* "oncpu", "requests", "bio", "fileio". */
const char *collector_group_name(unsigned group);
void collector_group_status(struct collector *c, unsigned group,
			    struct collector_group_status *ret);

/* The groups (mask of 1 << enum collector_group) a slot of filter f needs. */
uint32_t collector_filter_groups(const struct collector_filter *f);

/*
 * Loads and attaches group unless it is loaded already. Takes seconds (the
 * verifier): call it off the event loop; returns at once for a group that
 * is loaded or unavailable. Safe from any thread; loads run one at a time.
 * Returns 0 with *ret_load_ns (may be NULL) the time this call
 * spent loading (0 if it was loaded already), or the -errno that made it
 * unavailable (then and for good: collector_group_status says why).
 */
int collector_group_load(struct collector *c, unsigned group, uint64_t *ret_load_ns);

/* Publishes a filter in a free slot, counting only blocks that start from
 * now on; loads the groups it needs first (see collector_group_load: may
 * take seconds if they are not loaded yet). A cgroup of level 0 (the root)
 * in f->cgroups takes in every thread: the slot then has no cgroup filter.
 * Returns 0 with *ret_slot set, -EBUSY if all slots are taken, -E2BIG past
 * COLLECTOR_MAX_CGROUPS cgroups, -EINVAL for a cgroup at level
 * OFFCPU_CGROUP_FILTER_LEVELS or deeper, -ENOSPC if the id or cgroup
 * filter maps are full, -EOPNOTSUPP if a group it needs is unavailable
 * (collector_group_status) or it follows children and cannot
 * (collector_follow_available); nothing is published then. */
int collector_slot_add(struct collector *c, const struct collector_filter *f, unsigned *ret_slot);

/* Adds a subtree to the cgroup filter of slot, which has one: a unit or
 * container restarted in a new cgroup while its capture runs. Event loop
 * only, as the other slot calls. Returns 0, -EINVAL (no such filter, or
 * level 0 or too deep) or -ENOSPC (the map is full). */
int collector_slot_cgroup_add(struct collector *c, unsigned slot, const struct collector_cgroup *cg);

/* (Re)starts counting for a deactivated slot, from now on: only blocks and
 * requests that begin from now on count (and, at the slot's end, the part
 * since now of blocks open from before). Returns now (CLOCK_MONOTONIC). */
uint64_t collector_slot_activate(struct collector *c, unsigned slot);

/* Stops counting for slot. Rows already aggregated for it are returned by
 * the next collector_drain() that starts after this call, and by none after
 * that one; only then may the slot be released. */
void collector_slot_deactivate(struct collector *c, unsigned slot);

/*
 * Makes the function at offset in the ELF file at path one of slot's
 * request functions, number request (< OFFCPU_MAX_REQUESTS; the index of
 * the symbol it was found by): in process pid, or in every process that runs
 * the file if pid <= 0. The return probe goes in first, so that no call is
 * seen to begin without its end. Returns 0, -EOPNOTSUPP on the raw_tp
 * fallback (no task storage), -E2BIG past COLLECTOR_MAX_REQUEST_PROBES, or
 * the kernel's -errno. Probes are removed when the slot is released.
 */
int collector_request_attach(struct collector *c, unsigned slot, unsigned request, int pid,
			     const char *path, uint64_t offset);

/* Removes slot's request probes. The kernel may take seconds for each in a
 * busy process: call it off the event loop. Only this slot is touched, so
 * other slots may be used meanwhile. */
void collector_request_detach(struct collector *c, unsigned slot);

/* The latency of slot's requests so far, indexed by request number. */
int collector_request_stats(struct collector *c, unsigned slot,
			    struct collector_request_stats ret[OFFCPU_MAX_REQUESTS]);

/* Makes a deactivated slot free for collector_slot_add() again, removing
 * its request probes (see collector_request_detach) and latency. */
void collector_slot_release(struct collector *c, unsigned slot);
unsigned collector_slots_active(const struct collector *c);

/* A waker's stack by hash (waker stacks are kept in an LRU map, not drained).
 * Returns 0, or -ENOENT if it was evicted. */
int collector_waker_stack(struct collector *c, uint64_t hash, struct offcpu_stack *ret);

/* Whether CPython's frames are walked (python_frames, with unwind tables). */
bool collector_python_frames(const struct collector *c);

/* The CPython minor version (3.MINOR) of process tgid, as its unwind
 * tables published it; 0 if it has none published (not CPython, or gone). */
unsigned collector_python_minor(struct collector *c, uint32_t tgid);

/* A fileio row's file name by hash (an LRU map, not drained). Returns 0, or
 * -ENOENT if it was evicted. */
int collector_file_name(struct collector *c, uint64_t hash, struct offcpu_file_name *ret);

/* A program and the kernel's run statistics of it. */
struct collector_program {
	const char *name;
	bool loaded; /* false: its group loads on first use */
	bool attached;
	uint64_t run_cnt, run_time_ns; /* 0 where the kernel keeps no BPF stats */
};

/* Programs in the object at most (collector.c checks it when built), so
 * the most collector_programs() returns: an array of this many holds all. */
#define COLLECTOR_MAX_PROGRAMS 64

/* The programs loaded or to be loaded on first use (at most max), in the
 * object's order; not those of the other tracepoint flavour. Returns how
 * many. */
size_t collector_programs(struct collector *c, struct collector_program *ret, size_t max);

/* Whether the kernel measures the programs' run time (BPF_ENABLE_STATS,
 * held for the collector's lifetime where options.bpf_stats asked; two
 * clock reads per program run). */
bool collector_bpf_stats(const struct collector *c);

/* Entries each buffer of the drained maps holds at most. */
struct collector_map_sizes {
	uint32_t agg, stacks, chains, hists;
};
void collector_map_sizes(const struct collector *c, struct collector_map_sizes *ret);

/* The unwind maps (fds owned by the collector), for the unwinder; false if
 * unwinding with tables is off (configured so, or the raw_tp fallback). */
struct unwinder_maps;
bool collector_unwind_maps(const struct collector *c, struct unwinder_maps *ret);

/* Totals since load, summed over CPUs (enum offcpu_counter). */
void collector_counters(struct collector *c, uint64_t ret[OFFCPU_CNT_MAX]);

/*
 * The in-progress pass (bpf/in_progress.bpf.c), run before a drain that
 * closes an interval, from the drain's thread: with progress, the parts of
 * the open blocks of the progress slots (collector_progress_slots_set())
 * since the last pass; for each slot of final_slots (captures that end),
 * the part inside it of every block open now, as in-progress rows. Sets
 * *ret_now_ns to where it counted up to (CLOCK_MONOTONIC), also where the
 * pass cannot run. Returns 0 or -errno.
 */
int collector_pass_in_progress(struct collector *c, bool progress, uint32_t final_slots,
			       uint64_t *ret_now_ns);
/* Threads a snapshot reads at most (2 KiB each). */
#define COLLECTOR_BLOCKED_MAX 65536

/*
 * The threads off the CPU now (offcpuctl blocked): of process tgid (0: all)
 * that left it at least min_ns ago, or that sleep since before any switch
 * the programs saw (since_ns 0). *ret (free() it) holds *ret_n records;
 * *ret_now_ns is when they were read (CLOCK_MONOTONIC). From the drain's
 * thread, as the pass. Returns 0, -EOPNOTSUPP where the pass cannot run
 * (collector_in_progress()), -E2BIG past COLLECTOR_BLOCKED_MAX threads, or
 * -errno.
 */
int collector_blocked(struct collector *c, uint32_t tgid, uint64_t min_ns,
		      struct offcpu_blocked **ret, size_t *ret_n, uint64_t *ret_now_ns);
/* Slots whose open blocks the pass counts in parts (the continuous ones of
 * kinds with a value before the block ends: offcpu, runq). */
void collector_progress_slots_set(struct collector *c, uint32_t slots);
/* Whether the pass runs here, and if not why (*ret_why, "" if it does). */
bool collector_in_progress(const struct collector *c, const char **ret_why);
/* Whether kernel stacks walked while their task is off the CPU (sampled
 * blocks, the pass) get back the __sched frames the kernel's walk leaves
 * out (bpf/sched_frames.bpf.h), and if not why. */
bool collector_sched_frames(const struct collector *c, const char **ret_why);

/*
 * Calls fn on each cgroup event (bpf/offcpu.h struct offcpu_cgroup_event)
 * the kernel has queued since the last call, oldest first, until fn returns
 * nonzero (the event it was given is taken; the rest wait for the next
 * call). From one thread at a time (the drain's). Returns the number of
 * events given to fn, fn's return where it was negative, -EOPNOTSUPP where
 * the events do not come (collector_cgroup_events_available()), or -errno.
 * Events that did not fit the ring are lost and counted (counter
 * cgroup_events_lost): their cgroups are named from /proc or the hierarchy
 * instead, while they exist.
 */
int collector_cgroup_events(struct collector *c,
			    int (*fn)(void *arg, const struct offcpu_cgroup_event *ev), void *arg);

/* Whether the cgroup events come here (their tracepoints attached at
 * start), and if not why (*ret_why, "" if they do). */
bool collector_cgroup_events_available(const struct collector *c, const char **ret_why);

/* Whether a filter can follow children here (their tracepoints attached at
 * start), and if not why (*ret_why, "" if it can). */
bool collector_follow_available(const struct collector *c, const char **ret_why);

/* Switches the kernel to the other buffer, waits until no program can still
 * write to the old one, and empties it into *ret (free with
 * collector_batch_release). Returns 0 or -errno (batch then empty). */
int collector_drain(struct collector *c, struct collector_batch *ret);
void collector_batch_release(struct collector_batch *b);

#endif
