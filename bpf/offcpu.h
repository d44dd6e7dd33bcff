/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Structures shared by the BPF programs and their loader
 * (daemon/kernel/collector.c). The programs are split by concern into
 * bpf/maps.bpf.c, sched.bpf.c, banks.bpf.c, deferred_walk.bpf.c,
 * wakers.bpf.c, requests.bpf.c, oncpu.bpf.c, io.bpf.c, in_progress.bpf.c,
 * stack.bpf.c, stack_cache.bpf.c, sched_frames.bpf.c and cgroups.bpf.c
 * (each with its .bpf.h where others share its code; all include
 * bpf/offcpu.bpf.h), and
 * linked into one object (bpf/CMakeLists.txt).
 *
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
#define OFFCPU_MAX_SAMPLE_PERIOD_NS 1000000000ull /* 1 s (bpf/sampling.h) */

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
	OFFCPU_REQUEST_CALLS,	 /* calls entered (bucket 0): did the probes fire at all */
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
 * wants is kept as bit masks over all slots (see bpf/offcpu.bpf.h), so the
 * switch-out path tests every slot at once. Only blocks that begin at or after
 * start_ns count, so a slot never inherits time from before it was activated.
 */
struct offcpu_slot {
	__u64 start_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 min_block_ns;
	__u64 max_block_ns;	/* 0: unbounded */
	__u64 sample_period_ns; /* sampled stacks (bpf/sampling.h); 0: every block's */
	__u32 kind;		/* enum offcpu_kind */
	__u32 chain_depth;	/* CHAIN: levels kept, 1..OFFCPU_MAX_CHAIN */
};

/* Aggregation key: one row of a capture's result. Stacks are named by hash. */
struct offcpu_key {
	__u32 slot;
	__u32 tgid;
	__u32 pid;
	__u32 state;
	__u32 kind;  /* enum offcpu_kind; RUNQ and ONCPU rows also come from OFFCPU slots */
	__u32 flags; /* OFFCPU_KEY_* */
	__u64 kstack; /* 0: none collected */
	__u64 ustack; /* 0: none collected (kernel thread, or not requested) */
	__u64 chain;  /* hash in the chains map; 0: none */
	/* The cgroup v2 id (kernfs inode) of the thread when its block began
	 * (of the issuer, for I/O kinds); user space names it by path
	 * (daemon/profile/cgroup_paths.h). Where no v2 hierarchy is mounted,
	 * every thread is in its root, which user space ignores. */
	__u64 cgroup;
};

/* offcpu_key.flags */
#define OFFCPU_KEY_SAMPLED   1u /* a sampled slot's row: an estimate, scaled to its totals */
#define OFFCPU_KEY_UNSAMPLED 2u /* (user space) time of a sampled slot no sample stands for */
/* A capture's block still open at its end: its time inside the capture,
 * counted by the in-progress pass (bpf/in_progress.bpf.c), count 0. */
#define OFFCPU_KEY_IN_PROGRESS 4u

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
	/* A sampled slot's rows: of sum_ns, the weight of samples of blocks
	 * shorter than the period, which user space scales to their exact
	 * total; the rest is long blocks at their true length. */
	__u64 short_ns;
};

/*
 * Exact totals of a sampled slot, per CPU (a per-CPU hash, so that a block
 * whose stacks are not sampled writes no cache line another CPU reads), keyed
 * like its rows with no stacks and no chain. The sampled rows carry estimates
 * that user space scales to these totals (daemon/profile/sampling.c).
 */
struct offcpu_total {
	__u64 sum_ns;
	__u64 count;
	__u64 short_ns; /* of blocks shorter than the period: the estimate's error */
	__u64 samples;	/* blocks whose stacks were taken */
	char comm[OFFCPU_COMM_LEN];
};

struct offcpu_stack {
	__u32 nr;
	__u32 flags; /* OFFCPU_STACK_* */
	__u64 ips[OFFCPU_MAX_STACK_DEPTH];
};

/*
 * In-kernel unwinding (.eh_frame tables built by daemon/kernel/unwind_table.c).
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
	__u32 file_id;	  /* the mapped file's (OFFCPU_FRAME_FILE); 0: none */
	__u32 pad;
};

/*
 * A user frame in a mapped file whose id the mapping carries is recorded as
 * that file's id and the ELF virtual address, not the process's address:
 * the same code then has the same frame in every process that maps the
 * file (and one stack id for one stack), and it is named from the file,
 * whether the process still lives or not. Bit 63 marks such a frame (user
 * addresses are below 2^47); other frames (JIT and anonymous code, the
 * vDSO, walks with no tables) keep the process's address.
 */
#define OFFCPU_FRAME_FILE	(1ull << 63)
/* No user address is at or above this (x86-64 with 5-level paging
 * included): a return address a walk finds there is stack garbage (a
 * frame-pointer walk through code that keeps data in rbp), which must not
 * be taken for a file or CPython frame. Walks stop before one. */
#define OFFCPU_USER_PC_END	(1ull << 56)
#define OFFCPU_FRAME_FILE_SHIFT 40
#define OFFCPU_FRAME_VADDR_MASK ((1ull << OFFCPU_FRAME_FILE_SHIFT) - 1)
#define OFFCPU_FRAME_FILE_IDS	(1u << 23) /* ids are 1 to OFFCPU_FRAME_FILE_IDS - 1 */
#define OFFCPU_FRAME_FILE_ID(frame) \
	((__u32)((frame) >> OFFCPU_FRAME_FILE_SHIFT) & (OFFCPU_FRAME_FILE_IDS - 1))

/*
 * A CPython interpreter frame in a user stack (bpf/python.bpf.h): after a
 * walk's native frames, the thread's chain of interpreter frames, newest
 * first, each as its code object's address and the instruction it is at.
 * User space names them "qualname (file.py:LINE)" (symbols/cpython_code.c)
 * and splices each activation's frames in place of its
 * _PyEval_EvalFrameDefault (daemon/profile/drain.c). Bit 62 marks one (bit
 * 63 clear: not a file frame; user addresses are below 2^47). Code objects
 * are 16-byte aligned: bit 0 marks the first frame an activation of the
 * eval loop ran (its oldest), so frames up to and including one marked
 * belong to one _PyEval_EvalFrameDefault. A code address below 4096 is a
 * reason the chain stopped there (OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_*)):
 * "[python: WHY]".
 */
#define OFFCPU_FRAME_PYTHON	     (1ull << 62)
#define OFFCPU_FRAME_PYTHON_ENTRY    1ull
#define OFFCPU_FRAME_PYTHON_CODE(f)  ((f) & ((1ull << 47) - 1) & ~0xfull)
#define OFFCPU_FRAME_PYTHON_INSTR_SHIFT 47
#define OFFCPU_FRAME_PYTHON_INSTR_MAX 0x7fffu /* code units; saturated */
#define OFFCPU_FRAME_PYTHON_INSTR(f) \
	((__u32)((f) >> OFFCPU_FRAME_PYTHON_INSTR_SHIFT) & OFFCPU_FRAME_PYTHON_INSTR_MAX)
#define OFFCPU_FRAME_IS_PYTHON(f)    (((f) & (3ull << 62)) == OFFCPU_FRAME_PYTHON)
#define OFFCPU_FRAME_PYTHON_ERR(e)   (OFFCPU_FRAME_PYTHON | (__u64)(e) << 4)

enum offcpu_python_err {
	OFFCPU_PYTHON_ERR_READ = 1,  /* a frame or its thread state could not be read */
	OFFCPU_PYTHON_ERR_DEPTH = 2, /* the stack had no room for older frames */
	OFFCPU_PYTHON_ERR_LOOP = 3,  /* the chain came back to a frame: corrupt */
};

/* offcpu_python_layout.flags */
#define OFFCPU_PYTHON_ID_PTHREAD 1u  /* tstate_id is pthread_self() (3.10), else the tid */
#define OFFCPU_PYTHON_INSTR_INDEX 2u /* frame_instr is an int index of code units (3.10's
					f_lasti), else a pointer into co_code_adaptive */
#define OFFCPU_PYTHON_ENTRY_FLAG 4u  /* frame_owner is 3.11's is_entry: set on an
					activation's first frame */
#define OFFCPU_PYTHON_ENTRY_SHIM 8u  /* frame_owner is owner (3.12+): a shim frame owned
					by the C stack (3) comes before each activation */
#define OFFCPU_PYTHON_OWNER_CSTACK 3
#define OFFCPU_PYTHON_NO_FIELD	  0xffffu

/*
 * Where one CPython version keeps what the walk reads, as byte offsets
 * (symbols/cpython_layout.c: a table per version, 3.13's own
 * _Py_DebugOffsets). The walk reads the interpreter's thread states from
 * _PyRuntime, finds the thread's by its id and follows its frames. Every
 * frame field is below OFFCPU_PYTHON_FRAME_READ bytes.
 */
#define OFFCPU_PYTHON_FRAME_READ 104

struct offcpu_python_layout {
	__u16 runtime_interp; /* in _PyRuntime: the (main) interpreter's address */
	__u16 interp_threads; /* in the interpreter: its newest thread state */
	__u16 tstate_next;
	__u16 tstate_id;	 /* native_thread_id, or thread_id (ID_PTHREAD) */
	__u16 tstate_frame;	 /* the current frame, or the current _PyCFrame */
	__u16 cframe_frame;	 /* in _PyCFrame: the current frame; NO_FIELD: no cframe */
	__u16 frame_code;	 /* the code object */
	__u16 frame_previous;	 /* the caller's frame */
	__u16 frame_instr;	 /* the instruction (INSTR_INDEX: an int index) */
	__u16 frame_owner;	 /* is_entry (ENTRY_FLAG) or owner (ENTRY_SHIM); NO_FIELD */
	__u16 code_instrs;	 /* in the code object: its first instruction */
	__u8 minor;		 /* 3.MINOR */
	__u8 flags;		 /* OFFCPU_PYTHON_* */
};

/* A CPython process, published by user space with its unwind tables. */
struct offcpu_python_proc {
	__u64 runtime; /* _PyRuntime's address in the process */
	struct offcpu_python_layout layout;
	__u32 pad;
};

/* What the kernel side asks user space through the unwind_requests ring
 * buffer: read the mappings of process tgid (and build their tables). */
#define OFFCPU_UNWIND_REQUEST_NOW 1u /* the loader is done mapping: read at once */
#define OFFCPU_UNWIND_REQUEST_QUEUED 2u /* sent without waking user space: no hurry */

struct offcpu_unwind_request {
	__u32 tgid;
	__u32 flags;
	__u64 asked_ns; /* bpf_ktime_get_ns() when asked: status says how long reads wait */
};

/* offcpu_unwind_proc.flags */
#define OFFCPU_UNWIND_FROM_VMAS 1u /* built by the kernel side: provisional */
/* FROM_VMAS, and every executable file mapping among the VMAs had a table:
 * user space may take the list as it is, without reading the maps. */
#define OFFCPU_UNWIND_COMPLETE	2u
/* The process runs CPython: python_procs has its layout. */
#define OFFCPU_UNWIND_PYTHON	4u

/* Sorted by start; a process with none has n = 0 (known, nothing to use). */
struct offcpu_unwind_proc {
	__u32 n;
	__u32 flags;
	__u32 files_added; /* FROM_VMAS: unwind_files_added when it was built */
	__u32 pad;
	struct offcpu_unwind_mapping maps[OFFCPU_UNWIND_MAPPINGS];
};

/*
 * A file's table, by file identity, for the kernel side to build a new
 * process's mappings itself from its VMAs before user space publishes them
 * (unwind_proc_from_vmas()): the process's first blocks are walked with the
 * tables of the files it shares with processes seen before.
 */
#define OFFCPU_UNWIND_FILE_LOADS 4

struct offcpu_unwind_file_key {
	__u32 major, minor; /* the file system's device */
	__u64 ino;
};

struct offcpu_unwind_load {
	__u64 offset, vaddr, filesz; /* an ELF PT_LOAD segment */
};

struct offcpu_unwind_file {
	__u32 first_row, n_rows; /* in the unwind_rows array; n_rows > 0 */
	__u32 n_loads;
	__u32 file_id; /* as offcpu_unwind_mapping's */
	struct offcpu_unwind_load loads[OFFCPU_UNWIND_FILE_LOADS];
	/* The file's size and status change time when its table was made: a
	 * file rewritten in place since (the same inode) is not this table's. */
	__s64 size, ctime_sec;
	__u32 ctime_nsec, pad;
	/* A CPython runtime (layout.minor not 0): runtime is _PyRuntime's ELF
	 * virtual address, for a new process's layout built from its VMAs. */
	struct offcpu_python_proc python;
};

/* fileio --with-filename: the file's name (its last path component), by
 * hash in the file_names map; the hash is the row key's chain field. */
#define OFFCPU_FILE_NAME_LEN 64

struct offcpu_file_name {
	char name[OFFCPU_FILE_NAME_LEN];
};

/*
 * A thread off the CPU now (offcpuctl blocked), as the in-progress pass's
 * snapshot prints it (bpf/in_progress.bpf.c), one record after another.
 */
struct offcpu_blocked {
	__u32 tgid, pid;
	__u32 state; /* enum offcpu_state */
	__u32 pad;
	__u64 since_ns; /* when it left the CPU (CLOCK_MONOTONIC); 0: before any record */
	__u64 wake_ns;	/* when it was woken; 0: not yet */
	char comm[OFFCPU_COMM_LEN];
	struct offcpu_waker waker; /* who woke it, where a waker kind recorded it (pid 0: none) */
	__u64 cgroup;		   /* as offcpu_key's */
	struct offcpu_stack kstack, ustack;
};

/* A slot's cgroup filter names subtrees at levels 1 to this less one: the
 * levels in use are a __u32 mask (bpf/cgroups.bpf.c). */
#define OFFCPU_CGROUP_FILTER_LEVELS 32

/*
 * A cgroup of the v2 hierarchy made, renamed or removed (the cgroup_mkdir,
 * cgroup_rename and cgroup_rmdir tracepoints), through the cgroup_events
 * ring buffer: user space learns each cgroup's path when it is made, so
 * that samples of a cgroup removed before they are drained keep its name.
 */
#define OFFCPU_CGROUP_PATH_LEN 1024 /* the tracepoints' own buffer (TRACE_CGROUP_PATH_LEN) */

enum offcpu_cgroup_event_type {
	OFFCPU_CGROUP_MKDIR = 0,
	OFFCPU_CGROUP_RENAME,
	OFFCPU_CGROUP_RMDIR,
};

struct offcpu_cgroup_event {
	__u64 id;    /* as offcpu_key.cgroup */
	__u32 type;  /* enum offcpu_cgroup_event_type */
	__u32 level; /* 0: the root; /a/b is 2 */
	char path[OFFCPU_CGROUP_PATH_LEN]; /* from the hierarchy's root, "/a/b"; NUL-terminated */
};

/* offcpu_stack.flags */
#define OFFCPU_STACK_DWARF    1u /* walked with unwind tables (else bpf_get_stack) */
#define OFFCPU_STACK_COMPLETE 2u /* reached the outermost frame (DWARF walks only) */
/* a kernel stack read while its task was off the CPU whose __sched frames
 * (bpf/sched_frames.bpf.h) could not be put back */
#define OFFCPU_STACK_SCHED_LOST 4u

/*
 * Counters, a per-CPU array indexed by enum offcpu_counter: one table for
 * the enum, the names offcpuctl status shows and the names a capture
 * reports its drops under (NULL: not a drop). X(NAME, status, drop).
 * (clang-format off: it would re-align the whole table for one new line.)
 */
/* clang-format off */
#define OFFCPU_COUNTERS(X)                                                                         \
	X(SWITCHES, "switches", NULL)		      /* sched_switch events seen */               \
	X(RECORDED, "recorded", NULL)		      /* blocks aggregated (per slot) */           \
	X(DROP_START_ALLOC, "drop_start_alloc", "start_alloc") /* no room for a start record */   \
	X(DROP_NEGATIVE_DELTA, "drop_negative_delta", "negative_delta") /* a clock oddity */      \
	X(DROP_AGG_FULL, "drop_agg_map_full", "agg_map_full")	 /* time lost */                    \
	X(DROP_STACK_FULL, "drop_stack_map_full", "stack_map_full") /* time kept, stack lost */  \
	X(DROP_KSTACK_ERROR, "drop_kernel_stack_error", "kernel_stack_error") /* time kept */    \
	X(DROP_USTACK_ERROR, "drop_user_stack_error", "user_stack_error")	/* time kept */    \
	X(BUFFER_MISSING, "buffer_missing", "buffer_missing") /* epoch named no buffer */          \
	X(WAKEUPS, "wakeups", NULL) /* sched_waking of a thread in a block we track */             \
	X(DROP_CHAIN_FULL, "drop_chain_map_full", "chain_map_full") /* time kept, chain lost */  \
	X(DROP_HIST_FULL, "drop_hist_map_full", "hist_map_full")				   \
	X(REQUESTS, "requests", NULL) /* requests that ended (returned) */                         \
	X(DROP_REQUEST_ALLOC, "drop_request_alloc", "request_alloc")				   \
	X(DROP_REQUEST_FULL, "drop_request_map_full", "request_map_full")			   \
	X(SWITCH_IN_UNSEEN, "switch_in_unseen", NULL) /* a block's end estimated */                \
	X(USTACK_TABLE_WALKS, "ustack_table_walks", NULL) /* user stacks walked with tables */     \
	X(USTACK_TRUNCATED, "ustack_truncated", NULL) /* ... that stopped before the first frame */ \
	X(ONCPU_SAMPLES, "oncpu_samples", NULL) /* on-CPU samples kept (per sample) */             \
	X(IO_EVENTS, "io_events", NULL) /* block requests and file I/O syscalls ended */           \
	X(DROP_IO_ALLOC, "drop_io_alloc", "io_alloc") /* no room to track an I/O in flight */      \
	/* Sampled slots (bpf/sampling.h), per block rather than per slot: */                     \
	X(SAMPLED_BLOCKS, "sampled_blocks", NULL) /* blocks sampled slots counted */               \
	X(SAMPLES, "samples", NULL) /* of those, blocks whose stacks were taken */                 \
	X(WALK_SAME_MM, "walks_same_mm", NULL) /* user stack read at switch-in */                  \
	X(WALK_DEFERRED, "walks_deferred", NULL) /* ... at the return to user mode, task work */   \
	X(WALK_AT_RSEQ, "walks_at_rseq", NULL) /* ... there, at rseq_update (sampled_walk = rseq) */\
	X(WALK_NEXT_SWITCH, "walks_next_switch", NULL) /* ... at the next switch-out */            \
	X(WALK_AT_EXIT, "walks_at_exit", NULL) /* ... at its exit (killed while blocked) */       \
	X(WALK_SWITCH_OUT, "walks_switch_out", NULL) /* fallback: at every switch-out */           \
	X(DEFER_LOST, "samples_lost", NULL) /* a deferred walk not done: sample lost, time kept */ \
	X(USER_STACK_WALKS, "user_stack_walks", NULL)	  /* every path and kind */                \
	X(KERNEL_STACK_WALKS, "kernel_stack_walks", NULL) /* every path and kind */                \
	X(DROP_TOTAL_FULL, "drop_total_map_full", "total_map_full") /* a sampled block lost */  \
	/* user stacks walked with frame pointers where tables were wanted: the  \
	 * process's were not built yet (its first blocks) or could not be */     \
	X(USTACK_FP_FALLBACK, "ustack_fp_fallback", NULL)				   \
	/* a new process's mappings, built by the kernel side from its VMAs \
	 * and the tables of files seen before, before user space published \
	 * them: its first blocks walked with tables after all */             \
	X(UNWIND_FROM_VMAS, "unwind_from_vmas", NULL)					   \
	/* exact kernel stacks from the verified cache (bpf/stack_cache.bpf.c), \
	 * not walked; stacks learned into it; hits walked anyway to check it, \
	 * and those whose walk differed */                                      \
	X(KSTACK_CACHE_HITS, "kstack_cache_hits", NULL)					   \
	X(KSTACK_CACHE_LEARNED, "kstack_cache_learned", NULL)				   \
	X(KSTACK_CACHE_AUDITS, "kstack_cache_audits", NULL)				   \
	X(KSTACK_CACHE_MISMATCHES, "kstack_cache_mismatches", NULL)			   \
	/* blocks whose run-queue part was timed from sched_waking where the  \
	 * scheduler's queueing stamp was missing or after its run queue's    \
	 * clock (runq clock "sched_info") */                                  \
	X(RUNQ_UNSTAMPED, "runq_unstamped", NULL)					   \
	/* BPF task works scheduled (deferred walks, and new processes'      \
	 * mappings read from their VMAs); with sampled_walk = rseq, only for \
	 * threads without rseq. Each costs an irq_work, a self-IPI */         \
	X(TASK_WORKS, "task_works", NULL)						   \
	/* nanoseconds the switches spent scheduling them: sending the self-IPI \
	 * (the part of a task work's cost a program can time) */              \
	X(TASK_WORK_NS, "task_work_ns", NULL)						   \
	/* parts of blocks still open counted by the in-progress pass (a \
	 * window's end, a capture's), and of those the ones whose stacks  \
	 * it walked itself (the block's were not walked at switch-out)   */ \
	X(IN_PROGRESS_PARTS, "in_progress_parts", NULL)					   \
	X(IN_PROGRESS_WALKS, "in_progress_walks", NULL)					   \
	/* __sched frames put back into kernel stacks of tasks not running    \
	 * (bpf/sched_frames.bpf.h), which the kernel's walk leaves out */     \
	X(KSTACK_SCHED_FRAMES, "kstack_sched_frames", NULL)				   \
	/* cgroup_mkdir/rename/rmdir events the cgroup_events ring had no room \
	 * for (bpf/cgroups.bpf.c): user space names those from /proc */      \
	X(CGROUP_EVENTS_LOST, "cgroup_events_lost", NULL)				   \
	/* user stacks of CPython processes' threads walked for interpreter    \
	 * frames (bpf/python.bpf.h), the frames found, threads that had no    \
	 * Python thread state (threads of the C side alone), and chains cut  \
	 * short: unreadable, looping, or no room left in the stack */          \
	X(PYTHON_WALKS, "python_walks", NULL)						   \
	X(PYTHON_FRAMES, "python_frames", NULL)						   \
	X(PYTHON_NO_THREAD, "python_no_thread", NULL)					   \
	X(PYTHON_CUT, "python_cut", NULL)						   \
	/* a child of a follow_children capture's process left out: no room in \
	 * filter_tgids (bpf/follow.bpf.c) */                                  \
	X(DROP_FOLLOW_FULL, "drop_follow_map_full", "follow_map_full")
/* clang-format on */

enum offcpu_counter {
#define OFFCPU_COUNTER_ENUM(name, status, drop) OFFCPU_CNT_##name,
	OFFCPU_COUNTERS(OFFCPU_COUNTER_ENUM)
#undef OFFCPU_COUNTER_ENUM
	OFFCPU_CNT_MAX,
};

#endif
