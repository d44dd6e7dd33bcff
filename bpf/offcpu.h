/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Structures shared by bpf/offcpu.bpf.c and its loader (daemon/collector.c).
 * Only fixed-width fields: these cross the kernel/user boundary as raw bytes.
 * Times are nanoseconds throughout this layer.
 */
#ifndef OFFCPU_H
#define OFFCPU_H

#define OFFCPU_MAX_SLOTS       16  /* one is the continuous profile; masks are __u32 */
#define OFFCPU_MAX_STACK_DEPTH 127 /* the kernel's perf_event_max_stack default */
#define OFFCPU_COMM_LEN	       16
#define OFFCPU_MAX_CHAIN       8  /* waker levels of a chain */
#define OFFCPU_HIST_BUCKETS    32 /* log2 of microseconds */
#define OFFCPU_MAX_REQUESTS    8  /* request symbols (specs) of one slot */

/* Thread state classes at switch-out, as bit numbers of a slot's state_mask. */
enum offcpu_state {
	OFFCPU_STATE_RUNNING = 0,  /* preempted: involuntary, still runnable */
	OFFCPU_STATE_SLEEPING = 1, /* S: TASK_INTERRUPTIBLE */
	OFFCPU_STATE_DISK = 2,	   /* D: TASK_UNINTERRUPTIBLE (not TASK_IDLE) */
	OFFCPU_STATE_OTHER = 3,	   /* idle kthreads (I), stopped, traced, parked... */
	OFFCPU_STATE_COUNT = 4,
};

/* What a slot aggregates, and the value of a block. */
enum offcpu_kind {
	OFFCPU_KIND_OFFCPU = 0, /* target stacks; switch-out to switch-in */
	OFFCPU_KIND_WAKEUP,	/* waker stacks; blocked time */
	OFFCPU_KIND_OFFWAKE,	/* target stacks + waker; blocked time */
	OFFCPU_KIND_CHAIN,	/* target stacks + waker chain; blocked time */
	OFFCPU_KIND_RUNQ,	/* target stacks; run-queue wait (woken to running) */
	OFFCPU_KIND_ONCPU,	/* stacks sampled on CPU (perf_event); samples x period */
	OFFCPU_KIND_BIO,	/* block requests by issuing stacks; see OFFCPU_IO_* */
	OFFCPU_KIND_FILEIO,	/* read/write/fsync syscalls by user stack; latency */
	OFFCPU_KIND_COUNT,
};

/* Where a waker ran: interrupts and the idle task wake on nobody's behalf.
 * BPF sets TASK or IDLE; user space finds interrupts in the kernel stack. */
enum offcpu_waker_ctx {
	OFFCPU_WAKER_TASK = 0,
	OFFCPU_WAKER_HARDIRQ,
	OFFCPU_WAKER_SOFTIRQ, /* serving a softirq, or ksoftirqd */
	OFFCPU_WAKER_IDLE,
	OFFCPU_WAKER_NMI,
};

struct offcpu_waker {
	__u64 kstack; /* hash in the waker_stacks map; 0: none */
	__u64 ustack;
	__u32 tgid; /* 0 in interrupt or idle context */
	__u32 pid;
	__u32 ctx; /* enum offcpu_waker_ctx */
	__u32 pad;
	char comm[OFFCPU_COMM_LEN];
};

/* levels[0] woke the target; levels[i + 1] last woke levels[i]. */
struct offcpu_chain {
	__u32 n;
	__u32 pad;
	struct offcpu_waker levels[OFFCPU_MAX_CHAIN];
};

/* Histogram key: per slot, process and kind of wait, log2(us) bucket. */
enum offcpu_hist_type {
	OFFCPU_HIST_OFFCPU = 0, /* whole off-CPU time (cpudist -O) */
	OFFCPU_HIST_RUNQ,	/* run-queue latency (runqlat) */
};

struct offcpu_hist_key {
	__u32 slot;
	__u32 tgid;
	__u32 type;   /* enum offcpu_hist_type */
	__u32 bucket; /* [2^b, 2^(b+1)) microseconds; b = 0 holds [0, 2) */
};

/*
 * Request latency: per slot, request symbol and measure, log2(us) buckets
 * with the count and the summed time of the requests that fell in each.
 * A request is the outermost call, on one thread, of any of a slot's
 * request functions; its uprobes carry the cookie slot * OFFCPU_MAX_REQUESTS
 * + request, the index of the symbol among the slot's.
 */
enum offcpu_request_measure {
	OFFCPU_REQUEST_WALL = 0, /* entry to return */
	OFFCPU_REQUEST_OFFCPU,	 /* the part of it spent off-CPU (any state) */
};

struct offcpu_request_key {
	__u32 slot;
	__u32 request;
	__u32 measure; /* enum offcpu_request_measure */
	__u32 bucket;
};

struct offcpu_request_value {
	__u64 count;
	__u64 sum_ns;
};

/*
 * One capture's duration filter. Which threads, states and stacks a slot
 * wants is kept as bit masks over all slots (see offcpu.bpf.c), so the
 * switch-out path tests every slot at once. Only blocks that begin at or after
 * start_ns count, so a slot never inherits time from before it was activated.
 */
struct offcpu_slot {
	__u64 start_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 min_block_ns;
	__u64 max_block_ns; /* 0: unbounded */
	__u32 kind;	    /* enum offcpu_kind */
	__u32 chain_depth;  /* CHAIN: levels kept, 1..OFFCPU_MAX_CHAIN */
};

/* Aggregation key: one row of a capture's result. Stacks are named by hash. */
struct offcpu_key {
	__u32 slot;
	__u32 tgid;
	__u32 pid;
	__u32 state;
	__u32 kind; /* enum offcpu_kind; RUNQ and ONCPU rows also come from OFFCPU slots */
	__u32 pad;
	__u64 kstack; /* 0: none collected */
	__u64 ustack; /* 0: none collected (kernel thread, or not requested) */
	__u64 chain;  /* hash in the chains map; 0: none */
};

/*
 * I/O kinds reuse the key's state for the phase of the time: a BIO request
 * is one row of its device time (issue to completion) in state DISK, which
 * carries the request count and bytes, and one of its queue time (insert to
 * issue) in state RUNNING, count 0; their sum is insert to completion.
 * FILEIO rows are in state DISK.
 */
#define OFFCPU_IO_STATE_DEVICE OFFCPU_STATE_DISK
#define OFFCPU_IO_STATE_QUEUE  OFFCPU_STATE_RUNNING

struct offcpu_value {
	__u64 sum_ns;
	__u64 count;
	char comm[OFFCPU_COMM_LEN];
	__u64 bytes; /* I/O kinds: bytes transferred; 0 for the others */
};

struct offcpu_stack {
	__u32 nr;
	__u32 flags; /* OFFCPU_STACK_* */
	__u64 ips[OFFCPU_MAX_STACK_DEPTH];
};

/*
 * In-kernel unwinding (.eh_frame tables built by daemon/unwind_table.c).
 * A row holds from its pc to the next row's. The return address is always at
 * CFA - 8 (x86-64 psABI); rows where it is not are OFFCPU_CFA_UNSUPPORTED.
 */
enum offcpu_cfa_rule {
	OFFCPU_CFA_NONE = 0,	/* no CFI here: walk frame pointers */
	OFFCPU_CFA_RSP,		/* CFA = rsp + cfa_off */
	OFFCPU_CFA_RBP,		/* CFA = rbp + cfa_off */
	OFFCPU_CFA_PLT,		/* CFA = rsp + 8, + 8 more from byte 11 of a 16-byte PLT entry */
	OFFCPU_CFA_END,		/* return address undefined: the outermost frame */
	OFFCPU_CFA_UNSUPPORTED, /* a DWARF expression we do not evaluate: stop */
};

enum offcpu_rbp_rule {
	OFFCPU_RBP_SAME = 0,  /* the caller's rbp is rbp */
	OFFCPU_RBP_AT_CFA,    /* the caller's rbp is saved at CFA + rbp_off */
	OFFCPU_RBP_UNDEFINED, /* not recoverable (or a rule we do not evaluate) */
};

struct offcpu_unwind_row {
	__u64 pc; /* ELF virtual address */
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 cfa_rule; /* enum offcpu_cfa_rule */
	__u8 rbp_rule; /* enum offcpu_rbp_rule */
};

#define OFFCPU_UNWIND_MAPPINGS 64 /* executable file mappings of one process */

struct offcpu_unwind_mapping {
	__u64 start, end; /* [start, end) in the process */
	__u64 bias;	  /* address in the process - ELF virtual address */
	__u32 first_row;  /* in the unwind_rows array */
	__u32 n_rows;	  /* 0: no table; frame pointers */
};

/* Sorted by start; a process with none has n = 0 (known, nothing to use). */
struct offcpu_unwind_proc {
	__u32 n;
	__u32 pad;
	struct offcpu_unwind_mapping maps[OFFCPU_UNWIND_MAPPINGS];
};

/* fileio --with-filename: the file's name (its last path component), by
 * hash in the file_names map; the hash is the row key's chain field. */
#define OFFCPU_FILE_NAME_LEN 64

struct offcpu_file_name {
	char name[OFFCPU_FILE_NAME_LEN];
};

/* offcpu_stack.flags */
#define OFFCPU_STACK_DWARF    1u /* walked with unwind tables (else bpf_get_stack) */
#define OFFCPU_STACK_COMPLETE 2u /* reached the outermost frame (DWARF walks only) */

/* Counters of what could not be recorded; per-CPU array indexed by this. */
enum offcpu_counter {
	OFFCPU_CNT_SWITCHES = 0,	/* sched_switch events seen */
	OFFCPU_CNT_RECORDED,		/* blocks aggregated (per matching slot) */
	OFFCPU_CNT_DROP_START_ALLOC,	/* no room to store a switch-out timestamp */
	OFFCPU_CNT_DROP_NEGATIVE_DELTA, /* switch-in before switch-out: clock oddity */
	OFFCPU_CNT_DROP_AGG_FULL,	/* aggregation map full */
	OFFCPU_CNT_DROP_STACK_FULL,	/* stack map full: time kept, stack lost */
	OFFCPU_CNT_DROP_KSTACK_ERROR,	/* kernel stack walk failed: time kept */
	OFFCPU_CNT_DROP_USTACK_ERROR,	/* user stack walk failed: time kept */
	OFFCPU_CNT_BUFFER_MISSING,	/* epoch selected a buffer that does not exist */
	OFFCPU_CNT_WAKEUPS,		/* sched_waking of a thread in a block we track */
	OFFCPU_CNT_DROP_CHAIN_FULL,	/* chain map full: time kept, chain lost */
	OFFCPU_CNT_DROP_HIST_FULL,	/* histogram map full */
	OFFCPU_CNT_REQUESTS,		/* requests that ended (returned) */
	OFFCPU_CNT_DROP_REQUEST_ALLOC,	/* no room for a thread's request state */
	OFFCPU_CNT_DROP_REQUEST_FULL,	/* request latency map full */
	OFFCPU_CNT_SWITCH_IN_UNSEEN,	/* a block's switch-in was not traced: its end estimated */
	OFFCPU_CNT_USTACK_TABLE_WALKS,	/* user stacks walked with unwind tables */
	OFFCPU_CNT_USTACK_TRUNCATED,	/* such a walk stopped before the outermost frame */
	OFFCPU_CNT_ONCPU_SAMPLES,	/* on-CPU samples kept (per sample, not per slot) */
	OFFCPU_CNT_IO_EVENTS,	  /* block requests and file I/O syscalls ended while traced */
	OFFCPU_CNT_DROP_IO_ALLOC, /* no room to track an I/O in flight */
	OFFCPU_CNT_MAX,
};

#endif
