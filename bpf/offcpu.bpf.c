// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Off-CPU time by stack, aggregated in the kernel.
 *
 * At switch-out a thread that matches at least one active slot gets a start
 * record (timestamp, state class, matched slots, raw stacks) in task-local
 * storage. At switch-in the block time is checked against each slot's
 * min/max filter; only if one passes are the stacks interned (hashed into a
 * stack map) and the time added to the aggregation map. Stacks must be read
 * at switch-out because a thread's user stack can only be walked while it is
 * current, but they cost no map space until a filter has passed.
 *
 * Aggregation and stack maps are double-buffered: "epoch" selects the buffer
 * that receives new data, so user space can drain the other one completely.
 * A start record carries its stacks by value, not by id, so a thread that
 * blocks across an epoch flip lands whole in the new buffer.
 *
 * Who woke a thread is recorded at sched_waking, which runs in the waker's
 * context (sched_wakeup may run on the target's CPU, after an IPI, where the
 * current task is not the waker). Waker stacks are interned at once into an
 * LRU map that is not double-buffered, because a chain refers to stacks
 * walked long before (a waker's own last wakeup); user space only reads it.
 *
 * Request-synchronous slots count a block only if the thread was inside one
 * of the slot's request functions at switch-out. A uprobe and a uretprobe on
 * each request function keep a per-thread depth per slot; they also time each
 * request and the off-CPU part of it, which switch-out and switch-in sum up
 * for threads inside a request. Requests need task storage: tp_btf only.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "offcpu.h"
#include "sampling.h"

#define TASK_INTERRUPTIBLE   0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_NOLOAD	     0x0400
#define PF_EXITING	     0x00000004
#define PF_KTHREAD	     0x00200000
#define UNWIND_REFRESH_NS    1000000000ull /* 1 s */
#define MAX_FRAME_BYTES	     (8u << 20) /* the default stack rlimit */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 self_tgid = 0; /* the daemon; not traced unless 0 */

/*
 * Written by user space through the mmapped .bss. Each mask has one bit per
 * slot. A slot's bit is set in active_mask only after everything else about
 * it is written, and cleared before it is reused; the other masks are always
 * ANDed with active_mask, so stale bits in them are harmless.
 */
struct offcpu_slot slots[OFFCPU_MAX_SLOTS];
__u32 active_mask;
__u32 state_slots[OFFCPU_STATE_COUNT]; /* slots that accept each state class */
__u32 tgid_filter_slots;	       /* slots limited to the tgids in filter_tgids */
__u32 tid_filter_slots;		       /* slots limited to the tids in filter_tids */
__u32 user_stack_slots;		       /* slots that want user stacks */
__u32 kernel_stack_slots;	       /* slots that want kernel stacks */
__u32 kind_slots[OFFCPU_KIND_COUNT];   /* slots of each kind */
__u32 split_runq_slots;		       /* OFFCPU slots that count run-queue wait apart (as RUNQ) */
__u32 hist_slots;		       /* slots that keep log2 histograms */
__u32 request_slots;		       /* slots that count only inside a request */
__u32 filename_slots;		       /* FILEIO slots that key rows by file name too */
__u32 sampled_slots;		       /* slots that sample stacks (slot.sample_period_ns) */
__u32 epoch;			       /* its low bit selects the buffer being written */

struct start_rec {
	__u64 ts;
	__u64 wake_ts; /* first sched_waking of this block; 0: none yet */
	__u32 slots;   /* matched at switch-out; 0 once consumed */
	__u32 state;
	__u32 walked;  /* slots whose stacks were walked at switch-out */
	/* A sampled block waiting for its user stack (see sample_stacks()): its
	 * slots, and the user registers it must still have when walked. */
	__u32 walk_pending;
	__u64 walk_ip, walk_sp;
	/* Filled at switch-in for slot_account(): */
	__u64 delta, blocked, runq;
	__u64 khash, uhash;
	__u32 tgid, pid;
	char comm[OFFCPU_COMM_LEN];	/* at switch-out, when the thread is current */
	struct offcpu_chain chain;	/* who woke this block */
	struct offcpu_chain last_chain; /* who woke this thread last: its wakees' next levels */
	struct offcpu_stack kstack;
	struct offcpu_stack ustack;
};

static const struct start_rec zero_rec;

/* tp_btf path: start records live with the task, no hashing, no cleanup. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct start_rec);
} task_starts SEC(".maps");

/* raw_tp fallback: older kernels cannot use task storage from raw_tp. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct start_rec);
} hash_starts SEC(".maps");

struct agg_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_value);
} agg0 SEC(".maps"), agg1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct agg_map);
} aggs SEC(".maps") = {
	.values = { &agg0, &agg1 },
};

/* Preallocated: allocating at run time fails under bursts of new stacks. */
struct stack_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct offcpu_stack);
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct stack_map);
} stacks SEC(".maps") = {
	.values = { &stacks0, &stacks1 },
};

/* Waker stacks: interned when walked, read (not emptied) by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct offcpu_stack);
} waker_stacks SEC(".maps");

struct chain_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct offcpu_chain);
} chains0 SEC(".maps"), chains1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct chain_map);
} chains SEC(".maps") = {
	.values = { &chains0, &chains1 },
};

/* Per CPU: histograms are kept for every block, sampled or not. */
struct hist_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_hist_key);
	__type(value, __u64);
} hists0 SEC(".maps"), hists1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct hist_map);
} hists SEC(".maps") = {
	.values = { &hists0, &hists1 },
};

/* Sampled slots' exact totals (struct offcpu_total), per CPU. */
struct total_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_total);
} totals0 SEC(".maps"), totals1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct total_map);
} totals SEC(".maps") = {
	.values = { &totals0, &totals1 },
};

/*
 * Deferred user stack walks. A sampled thread's user stack is walked when it
 * is current again: at its return to user mode, by a BPF task work (the
 * callback runs in its context), or at its next switch-out if it blocks
 * again in the kernel first. One entry per thread with a walk scheduled.
 */
struct deferred_walk {
	struct bpf_task_work tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct deferred_walk);
} deferred_walks SEC(".maps");

extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

/* Set by the loader: defer user walks of sampled slots (the kernel has BPF
 * task work and the configuration allows it); else walk them at switch-out. */
const volatile bool defer_walks = false;

/* A thread's requests, one entry per slot. A slot's entry is valid only
 * while its start_ns equals the slot's: a request still open when its
 * capture ended (its return no longer probed) must not leak into the next
 * capture of the slot. */
struct request_slot_state {
	__u64 slot_start_ns;
	__u64 entry_ns;
	__u64 offcpu_at_entry; /* offcpu_ns when the request began */
	__u32 depth;	       /* nested calls of the slot's request functions */
	__u32 request;	       /* index of the outermost call's symbol */
};

struct request_thread {
	__u32 in_slots; /* slots with depth > 0 (possibly stale, see above) */
	__u32 pad;
	__u64 offcpu_since; /* switch-out time while in a request; 0 on CPU */
	__u64 offcpu_ns;    /* off-CPU time summed while in any request */
	struct request_slot_state slots[OFFCPU_MAX_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct request_thread);
} request_threads SEC(".maps");

/* Not double-buffered: a capture's requests are read once, at its end;
 * the continuous profile's add up from the daemon's start. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OFFCPU_MAX_SLOTS *OFFCPU_MAX_REQUESTS * 2 * OFFCPU_HIST_BUCKETS);
	__type(key, struct offcpu_request_key);
	__type(value, struct offcpu_request_value);
} request_stats SEC(".maps");

/*
 * In-kernel unwinding: daemon/unwinder.c fills unwind_rows with the tables of
 * the files processes map, and unwind_procs with each process's executable
 * mappings and where their rows are. A process not in unwind_procs is asked
 * for through unwind_requests (once, unwind_requested remembers), and walked
 * with frame pointers meanwhile. Exec forgets a process; a walk that meets
 * code outside its known mappings (a library loaded since, JIT code) asks
 * again, at most once per UNWIND_REFRESH_NS. (Tracing mmap instead would need
 * a syscall tracepoint, which slows every system call on the machine.)
 */
const volatile __u32 unwind_dwarf = 0;	    /* set by the loader: 0 frame pointers only */
const volatile __u32 unwind_max_depth = 64; /* frames, at most OFFCPU_MAX_STACK_DEPTH */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* user space writes tables by memcpy */
	__uint(max_entries, 1);		   /* set by the loader */
	__type(key, __u32);
	__type(value, struct offcpu_unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 2 KiB each, written from user space only */
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct offcpu_unwind_proc);
} unwind_procs SEC(".maps");

/* tgid -> when its tables were asked for: user space publishes tables only
 * if this did not change while it read the process's maps (an exec). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} unwind_requested SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} unwind_requests SEC(".maps");

/* Scratch space too large for the 512-byte BPF stack. */
struct scratch {
	struct offcpu_stack stack;
	struct offcpu_chain chain;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Task filters: id -> bit mask of the slots that include it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} filter_tgids SEC(".maps"), filter_tids SEC(".maps");

struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		*c += 1;
}

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre_5_14 *)t, state);
}

static __always_inline __u32 state_class(bool preempt, __u32 state)
{
	if (preempt || state == 0)
		return OFFCPU_STATE_RUNNING;
	if (state & TASK_UNINTERRUPTIBLE)
		return (state & TASK_NOLOAD) ? OFFCPU_STATE_OTHER : OFFCPU_STATE_DISK;
	if (state & TASK_INTERRUPTIBLE)
		return OFFCPU_STATE_SLEEPING;
	return OFFCPU_STATE_OTHER;
}

/* Those of slots whose task filters accept this thread. */
static __always_inline __u32 task_filter(__u32 matched, __u32 tgid, __u32 pid)
{
	__u32 *allowed;

	if (matched & tgid_filter_slots) {
		allowed = bpf_map_lookup_elem(&filter_tgids, &tgid);
		matched &= ~tgid_filter_slots | (allowed ? *allowed : 0);
	}
	if (matched & tid_filter_slots) {
		allowed = bpf_map_lookup_elem(&filter_tids, &pid);
		matched &= ~tid_filter_slots | (allowed ? *allowed : 0);
	}
	return matched;
}

/* Slots whose task and state filters accept this thread. */
static __always_inline __u32 match_slots(__u32 tgid, __u32 pid, __u32 state)
{
	return task_filter(active_mask & state_slots[state & (OFFCPU_STATE_COUNT - 1)], tgid, pid);
}

static __always_inline struct start_rec *start_get(struct task_struct *t, __u32 pid, bool btf,
						   bool create)
{
	struct start_rec *rec;

	if (btf)
		return bpf_task_storage_get(&task_starts, t, NULL,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	rec = bpf_map_lookup_elem(&hash_starts, &pid);
	if (rec || !create)
		return rec;
	bpf_map_update_elem(&hash_starts, &pid, &zero_rec, BPF_NOEXIST);
	return bpf_map_lookup_elem(&hash_starts, &pid);
}

static __always_inline void walk_stack(void *ctx, struct offcpu_stack *st, __u64 flags,
				       __u32 err_counter)
{
	long n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);

	count(flags & BPF_F_USER_STACK ? OFFCPU_CNT_USER_STACK_WALKS
				       : OFFCPU_CNT_KERNEL_STACK_WALKS);
	if (n < 0) {
		count(err_counter);
		n = 0;
	}
	st->nr = n / sizeof(__u64);
	st->flags = 0;
}

static __always_inline bool unwind_submit(__u32 tgid)
{
	__u32 *req = bpf_ringbuf_reserve(&unwind_requests, sizeof(*req), 0);

	if (!req)
		return false;
	*req = tgid;
	bpf_ringbuf_submit(req, 0);
	return true;
}

/* Asks user space for tgid's unwind tables, unless it was asked already. */
static __always_inline void unwind_request(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&unwind_requested, &tgid, &now, BPF_NOEXIST))
		return;
	if (!unwind_submit(tgid))
		bpf_map_delete_elem(&unwind_requested, &tgid); /* ask again next time */
}

/* Asks again for the tables of tgid, which has code its published mappings
 * do not cover, unless it asked less than UNWIND_REFRESH_NS ago. The new
 * time also tells user space that maps it is reading may be stale. */
static __always_inline void unwind_refresh(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns(), *asked = bpf_map_lookup_elem(&unwind_requested, &tgid);

	if (!asked || now - *asked < UNWIND_REFRESH_NS)
		return;
	*asked = now;
	unwind_submit(tgid);
}

struct user_walk {
	struct offcpu_stack *st;
	const struct offcpu_unwind_proc *proc;
	__u64 ip, sp, bp;
	bool bp_known;
	bool unknown_pc; /* met code outside the published mappings */
	/* A uretprobe replaces a return address with its trampoline; the real
	 * ones are in the task's return instances, newest first. */
	__u64 trampoline;
	struct return_instance *ri;
};

/* The return address a uretprobe trampoline stands for, popping the
 * instances of that one frame (a chained one shares its caller's slot). */
static __always_inline __u64 uretprobe_return_address(struct user_walk *s)
{
	struct return_instance *ri = s->ri;
	__u64 ra = BPF_CORE_READ(ri, orig_ret_vaddr);

	for (int i = 0; i < 8 && ri && BPF_CORE_READ(ri, chained); i++)
		ri = BPF_CORE_READ(ri, next);
	s->ri = ri ? BPF_CORE_READ(ri, next) : NULL;
	return ra;
}

/* The row that covers pc in m's table; NULL if none does. */
static __always_inline const struct offcpu_unwind_row *
unwind_find_row(const struct offcpu_unwind_mapping *m, __u64 pc)
{
	const struct offcpu_unwind_row *row;
	__u32 lo = 0, hi = m->n_rows, idx; /* the row is in [lo, hi) once found */
	__u64 rel = pc - m->bias;

	for (int i = 0; i < 24 && lo + 1 < hi; i++) { /* 2^24 rows: beyond any table */
		__u32 mid = lo + (hi - lo) / 2;

		idx = m->first_row + mid;
		row = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!row)
			return NULL;
		if (row->pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	idx = m->first_row + lo;
	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	return row && row->pc <= rel ? row : NULL;
}

/* Mappings are sorted by start and do not overlap. */
static __always_inline const struct offcpu_unwind_mapping *
unwind_find_mapping(const struct offcpu_unwind_proc *p, __u64 pc)
{
	__u32 lo = 0, hi = p->n < OFFCPU_UNWIND_MAPPINGS ? p->n : OFFCPU_UNWIND_MAPPINGS;
	const struct offcpu_unwind_mapping *m;

	if (!hi)
		return NULL;
	for (int i = 0; i < 7 && lo + 1 < hi; i++) { /* 2^7 > OFFCPU_UNWIND_MAPPINGS */
		__u32 mid = lo + (hi - lo) / 2;

		if (p->maps[mid & (OFFCPU_UNWIND_MAPPINGS - 1)].start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	m = &p->maps[lo & (OFFCPU_UNWIND_MAPPINGS - 1)];
	return pc >= m->start && pc < m->end ? m : NULL;
}

/*
 * The unwind rule for pc in process p: 0 if no mapping of p covers pc, 1 if
 * one does but its table has no row for pc (rule NONE), 2 with *row filled.
 * A global function: the verifier checks its searches once, not per frame.
 */
__noinline int unwind_rule(const struct offcpu_unwind_proc *p, __u64 pc,
			   struct offcpu_unwind_row *row)
{
	const struct offcpu_unwind_mapping *m;
	const struct offcpu_unwind_row *r;

	if (!p || !row)
		return 0;
	m = unwind_find_mapping(p, pc);
	if (!m)
		return 0;
	if (!m->n_rows)
		return 1;
	r = unwind_find_row(m, pc);
	if (!r)
		return 1;
	*row = *r;
	return 2;
}

static __always_inline bool read_user_u64(__u64 addr, __u64 *v)
{
	return !bpf_probe_read_user(v, sizeof(*v), (const void *)addr);
}

/*
 * One frame of an unwind: records ip, then finds the caller's ip, sp and bp
 * from the table row that covers ip (a return address: ip - 1 is in the
 * call), or from frame pointers where no table covers it. Returns 1 to stop.
 */
static long unwind_step(__u32 i, void *arg)
{
	struct user_walk *s = arg;
	struct offcpu_unwind_row row = { .cfa_rule = OFFCPU_CFA_NONE };
	__u64 pc = i ? s->ip - 1 : s->ip, cfa, ra, bp = s->bp;
	struct offcpu_stack *st = s->st;
	__u32 at = i;
	int known;

	/* The verifier needs the bound on the register that indexes. */
	asm volatile("%[at] &= 0x7f" : [at] "+r"(at));
	if (!st || !s->proc || at >= OFFCPU_MAX_STACK_DEPTH)
		return 1;
	st->ips[at] = s->ip;
	st->nr = at + 1;
	known = unwind_rule(s->proc, pc, &row);
	if (!known && i) /* a preempted thread's own PC is often in the vDSO */
		s->unknown_pc = true;
	switch (row.cfa_rule) {
	case OFFCPU_CFA_END:
		st->flags |= OFFCPU_STACK_COMPLETE;
		return 1;
	case OFFCPU_CFA_RSP:
		cfa = s->sp + row.cfa_off;
		break;
	case OFFCPU_CFA_RBP:
		if (!s->bp_known)
			return 1;
		cfa = s->bp + row.cfa_off;
		break;
	case OFFCPU_CFA_PLT:
		cfa = s->sp + 8 + ((s->ip & 15) >= 11 ? 8 : 0);
		break;
	case OFFCPU_CFA_NONE:
		/* Frame pointers: rbp 0 ends the chain, by the psABI's convention. */
		if (!s->bp_known)
			return 1;
		if (!s->bp) {
			if (known) /* a file's code, not JIT code that may clobber rbp */
				st->flags |= OFFCPU_STACK_COMPLETE;
			return 1;
		}
		cfa = s->bp + 16;
		if (!read_user_u64(s->bp, &bp))
			return 1;
		break;
	default:
		return 1;
	}
	/* The stack grows down: a caller's frame is above, and not far above
	 * (a frame-pointer walk through code that uses rbp otherwise can
	 * land anywhere). */
	if (cfa <= s->sp || cfa - s->sp > MAX_FRAME_BYTES || !read_user_u64(cfa - 8, &ra))
		return 1;
	if (ra && ra == s->trampoline && s->ri)
		ra = uretprobe_return_address(s);
	if (row.rbp_rule == OFFCPU_RBP_AT_CFA && row.cfa_rule != OFFCPU_CFA_NONE) {
		if (!read_user_u64(cfa + row.rbp_off, &bp))
			return 1;
	} else if (row.rbp_rule == OFFCPU_RBP_UNDEFINED) {
		s->bp_known = false;
	}
	if (!ra) {
		st->flags |= OFFCPU_STACK_COMPLETE; /* a thread's first frame has none */
		return 1;
	}
	s->ip = ra;
	s->sp = cfa;
	s->bp = bp;
	return 0;
}

/* A process with no mappings known: every frame is walked with frame
 * pointers. Never written; not const, because a global function's pointer
 * arguments must be writable memory. */
struct offcpu_unwind_proc no_tables;

/* t's user stack, walked with its process's unwind tables (proc), or with
 * frame pointers alone (proc NULL). t's mm must be the current task's: user
 * memory is read from there. */
static __always_inline void unwind_user_stack(struct task_struct *t, __u32 tgid,
					      const struct offcpu_unwind_proc *proc,
					      struct offcpu_stack *st)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	struct user_walk s = { .st = st, .proc = proc ? proc : &no_tables, .bp_known = true };
	__u32 depth = unwind_max_depth;

	st->nr = 0;
	st->flags = proc ? OFFCPU_STACK_DWARF : 0;
	count(OFFCPU_CNT_USER_STACK_WALKS);
	if (!regs)
		return;
	s.ip = BPF_CORE_READ(regs, ip);
	s.sp = BPF_CORE_READ(regs, sp);
	s.bp = BPF_CORE_READ(regs, bp);
	s.ri = BPF_CORE_READ(t, utask, return_instances);
	if (s.ri)
		s.trampoline = BPF_CORE_READ(t, mm, uprobes_state.xol_area, vaddr);
	if (depth > OFFCPU_MAX_STACK_DEPTH)
		depth = OFFCPU_MAX_STACK_DEPTH;
	bpf_loop(depth, unwind_step, &s, 0);
	if (!proc)
		return;
	if (s.unknown_pc)
		unwind_refresh(tgid);
	count(OFFCPU_CNT_USTACK_TABLE_WALKS);
	if (!(st->flags & OFFCPU_STACK_COMPLETE))
		count(OFFCPU_CNT_USTACK_TRUNCATED);
}

/* The unwind tables of tgid; NULL (asking for them) if it has none yet. */
static __always_inline const struct offcpu_unwind_proc *unwind_proc(__u32 tgid)
{
	const struct offcpu_unwind_proc *proc = bpf_map_lookup_elem(&unwind_procs, &tgid);

	if (!proc)
		unwind_request(tgid);
	return proc;
}

/* prev's user stack: with unwind tables when its process has them, else
 * (and meanwhile) with frame pointers. prev is the current task. */
static __always_inline void walk_user_stack(void *ctx, struct task_struct *prev, __u32 tgid,
					    struct offcpu_stack *st, bool btf)
{
	const struct offcpu_unwind_proc *proc;

	if (btf && unwind_dwarf) {
		proc = unwind_proc(tgid);
		if (proc) {
			unwind_user_stack(prev, tgid, proc, st);
			return;
		}
	}
	walk_stack(ctx, st, BPF_F_USER_STACK, OFFCPU_CNT_DROP_USTACK_ERROR);
}

/* t's user stack where there is no program context to walk from (a task
 * work, or t not current but of the current mm). tp_btf only. */
static __always_inline void walk_task_user_stack(struct task_struct *t, __u32 tgid,
						 struct offcpu_stack *st)
{
	unwind_user_stack(t, tgid, unwind_dwarf ? unwind_proc(tgid) : NULL, st);
}

/* Slots whose request r is inside; clears r's stale bits (see struct
 * request_slot_state). A global function: its loop is verified once. */
__noinline __u32 request_valid_slots(struct request_thread *r)
{
	__u32 valid = 0;

	if (!r)
		return 0;
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		const struct request_slot_state *st = &r->slots[i];

		if ((r->in_slots & (1u << i)) && st->depth &&
		    st->slot_start_ns == slots[i].start_ns)
			valid |= 1u << i;
	}
	r->in_slots = valid;
	return valid;
}

/* Keeps request slots in matched only if prev is inside one of their
 * requests, and starts timing the off-CPU part of its open requests. */
static __always_inline __u32 request_switch_out(struct task_struct *prev, __u32 matched)
{
	struct request_thread *r = bpf_task_storage_get(&request_threads, prev, NULL, 0);
	__u32 inside = 0;

	if (r && r->in_slots) {
		inside = request_valid_slots(r) & active_mask;
		if (inside)
			r->offcpu_since = bpf_ktime_get_ns();
	}
	return matched & (~request_slots | inside);
}

static __always_inline void request_switch_in(struct task_struct *next)
{
	struct request_thread *r = bpf_task_storage_get(&request_threads, next, NULL, 0);

	if (r && r->offcpu_since) {
		r->offcpu_ns += bpf_ktime_get_ns() - r->offcpu_since;
		r->offcpu_since = 0;
	}
}

/*
 * When the current thread t, about to be switched out, was switched in, for
 * a block whose switch-in was not seen: now less the CPU time t has had since
 * the scheduler last picked it (CFS restarts that count at every switch-in).
 * Never before the block began or before its wakeup; now if the count does
 * not fit (other scheduling classes do not restart it).
 */
static __always_inline __u64 switched_in_at(struct task_struct *t, const struct start_rec *rec,
					    bool btf)
{
	__u64 now = bpf_ktime_get_ns(), ran, at;

	ran = btf ? t->se.sum_exec_runtime - t->se.prev_sum_exec_runtime
		  : BPF_CORE_READ(t, se.sum_exec_runtime) -
			      BPF_CORE_READ(t, se.prev_sum_exec_runtime);
	at = ran < now - rec->ts ? now - ran : now;
	if (rec->wake_ts > at && rec->wake_ts <= now)
		at = rec->wake_ts;
	return at;
}

__noinline int block_end(struct start_rec *rec, __u64 now);
__noinline int sample_account(struct start_rec *rec, __u32 slots);

/*
 * Completes the sample rec waits for with the user stack of t, the current
 * task, if t has not been back in user mode since the block (its user
 * registers are those of then); else the sample is lost, and counted.
 */
static __always_inline void sample_finish(struct start_rec *rec, struct task_struct *t,
					  __u32 walk_counter)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	__u32 slots = rec->walk_pending;

	rec->walk_pending = 0;
	if (!regs || BPF_CORE_READ(regs, ip) != rec->walk_ip ||
	    BPF_CORE_READ(regs, sp) != rec->walk_sp || (t->flags & PF_EXITING)) {
		count(OFFCPU_CNT_DEFER_LOST);
		return;
	}
	walk_task_user_stack(t, rec->tgid, &rec->ustack);
	count(walk_counter);
	sample_account(rec, slots);
}

/* Slots of the I/O kinds, which sched_switch leaves alone (offcpu_io.bpf.h). */
static __always_inline __u32 io_kind_slots(void)
{
	return kind_slots[OFFCPU_KIND_BIO] | kind_slots[OFFCPU_KIND_FILEIO];
}

static __always_inline void switch_out(void *ctx, bool preempt, struct task_struct *prev, bool btf)
{
	__u32 pid, tgid, state, matched, walk;
	struct start_rec *rec;

	pid = btf ? prev->pid : BPF_CORE_READ(prev, pid);
	if (!pid)
		return; /* the idle task */
	tgid = btf ? prev->tgid : BPF_CORE_READ(prev, tgid);
	if (self_tgid && tgid == self_tgid)
		return;
	/* A block still open: the kernel did not trace the switch that put prev
	 * back on a CPU (seen on VMs, after switches out of some host threads).
	 * Count it, with an estimated end, before this block takes the record. */
	rec = start_get(prev, pid, btf, false);
	/* Blocking again before it went back to user mode: the user stack a
	 * sample of its last block waits for is still there. */
	if (btf && rec && rec->walk_pending)
		sample_finish(rec, prev, OFFCPU_CNT_WALK_NEXT_SWITCH);
	if (rec && rec->slots) {
		count(OFFCPU_CNT_SWITCH_IN_UNSEEN);
		rec->tgid = tgid;
		rec->pid = pid;
		if (block_end(rec, switched_in_at(prev, rec, btf)))
			count(OFFCPU_CNT_DEFER_LOST); /* its kernel stack is gone */
	}
	state = state_class(preempt, task_state(prev));
	matched = match_slots(tgid, pid, state) & ~io_kind_slots();
	if (btf && (active_mask & request_slots))
		matched = request_switch_out(prev, matched);
	if (!matched)
		return;

	if (!rec)
		rec = start_get(prev, pid, btf, true);
	if (!rec) {
		count(OFFCPU_CNT_DROP_START_ALLOC);
		return;
	}
	rec->kstack.nr = 0;
	rec->ustack.nr = 0;
	rec->wake_ts = 0;
	rec->chain.n = 0;
	bpf_get_current_comm(rec->comm, sizeof(rec->comm)); /* prev is current here */
	/* Sampled slots take their stacks at switch-in, and only for the
	 * blocks they sample (sample_stacks()), unless walks cannot wait. */
	walk = matched;
	if (btf && defer_walks)
		walk &= ~sampled_slots;
	else if (walk & sampled_slots)
		count(OFFCPU_CNT_WALK_SWITCH_OUT);
	if (walk & kernel_stack_slots)
		walk_stack(ctx, &rec->kstack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
	if ((walk & user_stack_slots) &&
	    !((btf ? prev->flags : BPF_CORE_READ(prev, flags)) & PF_KTHREAD))
		walk_user_stack(ctx, prev, tgid, &rec->ustack, btf);
	rec->walked = walk;
	rec->state = state;
	rec->slots = matched;
	rec->ts = bpf_ktime_get_ns();
}

/*
 * Never 0: 0 means "no stack" in struct offcpu_key. A global function, so the
 * verifier checks its data-dependent loop once rather than at every call path.
 */
__noinline __u64 stack_hash(const struct offcpu_stack *st)
{
	__u64 h;

	if (!st)
		return 0;
	h = 0xcbf29ce484222325ULL ^ st->nr ^ (__u64)st->flags << 32;

	for (__u32 i = 0; i < OFFCPU_MAX_STACK_DEPTH; i++) {
		if (i >= st->nr)
			break;
		h = (h ^ st->ips[i]) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* Store the stack under its hash in the current buffer; 0 if it has none. */
static __always_inline __u64 intern_stack(void *stack_map, const struct offcpu_stack *st)
{
	__u64 h;

	if (!st->nr)
		return 0;
	h = stack_hash(st);
	if (!bpf_map_lookup_elem(stack_map, &h) &&
	    bpf_map_update_elem(stack_map, &h, st, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(stack_map, &h))
		count(OFFCPU_CNT_DROP_STACK_FULL); /* the time is still counted */
	return h;
}

/* Adds delta, n events and bytes to key's row. */
static __always_inline void aggregate_io(void *agg_map, struct offcpu_key *key, __u64 delta,
					 __u64 n, __u64 bytes, const char *comm)
{
	struct offcpu_value *v, init = {};

	v = bpf_map_lookup_elem(agg_map, key);
	if (!v) {
		__builtin_memcpy(init.comm, comm, sizeof(init.comm));
		init.sum_ns = delta;
		init.count = n;
		init.bytes = bytes;
		if (!bpf_map_update_elem(agg_map, key, &init, BPF_NOEXIST))
			goto recorded;
		v = bpf_map_lookup_elem(agg_map, key); /* lost a race to another CPU */
		if (!v) {
			count(OFFCPU_CNT_DROP_AGG_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->sum_ns, delta);
	if (n)
		__sync_fetch_and_add(&v->count, n);
	if (bytes)
		__sync_fetch_and_add(&v->bytes, bytes);
recorded:
	count(OFFCPU_CNT_RECORDED);
}

static __always_inline void aggregate(void *agg_map, struct offcpu_key *key, __u64 delta,
				      const char *comm)
{
	aggregate_io(agg_map, key, delta, 1, 0, comm);
}

/*
 * levels[0] = first, then the waker's own chain (src, may be NULL), stopping
 * at depth OFFCPU_MAX_CHAIN, after an idle waker (nobody woke on its behalf;
 * user space also ends chains at interrupt wakers, see drain.c), and before
 * a thread already in the chain or the target itself (a loop). A global
 * function: the verifier checks its loops once.
 */
__noinline int chain_build(struct offcpu_chain *dst, const struct offcpu_waker *first,
			   const struct offcpu_chain *src, __u32 target_pid)
{
	__u32 n = 1;

	if (!dst || !first)
		return 0;
	dst->levels[0] = *first;
	if (src && first->ctx == OFFCPU_WAKER_TASK) {
		for (__u32 i = 0; i < OFFCPU_MAX_CHAIN - 1; i++) {
			const struct offcpu_waker *l;
			bool seen = false;

			if (i >= src->n || n >= OFFCPU_MAX_CHAIN)
				break;
			l = &src->levels[i];
			if (l->pid == target_pid && l->pid)
				break;
			for (__u32 j = 0; j < OFFCPU_MAX_CHAIN; j++)
				if (j < n && l->pid && dst->levels[j].pid == l->pid)
					seen = true;
			if (seen)
				break;
			dst->levels[n & (OFFCPU_MAX_CHAIN - 1)] = *l;
			n++;
			if (l->ctx != OFFCPU_WAKER_TASK)
				break; /* the idle task ends a chain: it woke on nobody's behalf */
		}
	}
	dst->n = n;
	return n;
}

/* Hash of the first depth levels of a chain; never 0. Global, as above. */
__noinline __u64 chain_hash(const struct offcpu_chain *c, __u32 depth)
{
	__u64 h = 0x84222325cbf29ce4ULL;

	if (!c)
		return 0;
	for (__u32 i = 0; i < OFFCPU_MAX_CHAIN; i++) {
		const struct offcpu_waker *l = &c->levels[i];

		if (i >= c->n || i >= depth)
			break;
		h = (h ^ l->kstack) * 0x100000001b3ULL;
		h = (h ^ l->ustack) * 0x100000001b3ULL;
		h = (h ^ ((__u64)l->pid << 32 | l->ctx)) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/*
 * Only the idle task is told apart here. The preempt count would show
 * interrupt context, but __preempt_count has no kallsyms address on kernels
 * without CONFIG_KALLSYMS_ALL; user space recognizes interrupt entry frames
 * in the waker's kernel stack instead (drain.c).
 */
static __always_inline __u32 waker_context(__u32 cur_pid)
{
	return cur_pid ? OFFCPU_WAKER_TASK : OFFCPU_WAKER_IDLE;
}

/* Walks the current stack into the scratch buffer and interns it in the
 * waker_stacks map; returns its hash, 0 if empty. */
static __always_inline __u64 waker_stack(void *ctx, struct offcpu_stack *buf, __u64 flags,
					 __u32 err_counter)
{
	__u64 h;

	walk_stack(ctx, buf, flags, err_counter);
	if (!buf->nr)
		return 0;
	h = stack_hash(buf);
	if (!bpf_map_lookup_elem(&waker_stacks, &h))
		bpf_map_update_elem(&waker_stacks, &h, buf, BPF_ANY);
	return h;
}

static __always_inline void waking(void *ctx, struct task_struct *p, bool btf)
{
	__u32 active = active_mask, zero = 0, pid, cur_pid, waker_kinds;
	struct start_rec *rec, *wrec = NULL;
	struct offcpu_waker w = {};
	struct task_struct *cur;
	struct scratch *scr;
	bool pending, chains_on;
	__u64 id;

	if (!active)
		return;
	pid = btf ? p->pid : BPF_CORE_READ(p, pid);
	chains_on = active & kind_slots[OFFCPU_KIND_CHAIN];
	/* A chain needs every thread's last waker, so it may create storage. */
	rec = start_get(p, pid, btf, chains_on);
	if (!rec)
		return;
	pending = (rec->slots & active) && !rec->wake_ts;
	if (pending) {
		rec->wake_ts = bpf_ktime_get_ns();
		count(OFFCPU_CNT_WAKEUPS);
	}
	waker_kinds = kind_slots[OFFCPU_KIND_WAKEUP] | kind_slots[OFFCPU_KIND_OFFWAKE] |
		      kind_slots[OFFCPU_KIND_CHAIN];
	if (!chains_on && !(pending && (rec->slots & active & waker_kinds)))
		return;

	scr = bpf_map_lookup_elem(&scratch, &zero);
	if (!scr)
		return;
	id = bpf_get_current_pid_tgid();
	cur_pid = (__u32)id;
	w.ctx = waker_context(cur_pid);
	w.kstack = waker_stack(ctx, &scr->stack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
	if (w.ctx == OFFCPU_WAKER_TASK) {
		cur = btf ? bpf_get_current_task_btf()
			  : (struct task_struct *)bpf_get_current_task();
		w.tgid = id >> 32;
		w.pid = cur_pid;
		bpf_get_current_comm(w.comm, sizeof(w.comm));
		if (!((btf ? cur->flags : BPF_CORE_READ(cur, flags)) & PF_KTHREAD))
			w.ustack = waker_stack(ctx, &scr->stack, BPF_F_USER_STACK,
					       OFFCPU_CNT_DROP_USTACK_ERROR);
		if (chains_on)
			wrec = start_get(cur, cur_pid, btf, false);
	}
	chain_build(&rec->last_chain, &w, wrec ? &wrec->last_chain : NULL, pid);
	if (pending)
		__builtin_memcpy(&rec->chain, &rec->last_chain, sizeof(rec->chain));
}

/* log2 of the microseconds (0 for 0 and 1), capped to the last bucket:
 * the highest bit set, found by halving the width searched. */
static __always_inline __u32 log2_bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 b = 0;

	if (us >> 32) {
		us >>= 32;
		b += 32;
	}
	if (us >> 16) {
		us >>= 16;
		b += 16;
	}
	if (us >> 8) {
		us >>= 8;
		b += 8;
	}
	if (us >> 4) {
		us >>= 4;
		b += 4;
	}
	if (us >> 2) {
		us >>= 2;
		b += 2;
	}
	if (us >> 1)
		b += 1;
	return b < OFFCPU_HIST_BUCKETS - 1 ? b : OFFCPU_HIST_BUCKETS - 1;
}

static __always_inline void hist_add(void *hist_map, __u32 slot, __u32 tgid, __u32 type, __u64 ns)
{
	struct offcpu_hist_key k = {
		.slot = slot, .tgid = tgid, .type = type, .bucket = log2_bucket(ns)
	};
	__u64 one = 1, *v;

	v = bpf_map_lookup_elem(hist_map, &k);
	if (!v) {
		if (!bpf_map_update_elem(hist_map, &k, &one, BPF_NOEXIST))
			return;
		v = bpf_map_lookup_elem(hist_map, &k); /* lost a race to another CPU */
		if (!v) {
			count(OFFCPU_CNT_DROP_HIST_FULL);
			return;
		}
	}
	*v += 1; /* this CPU's copy */
}

/* The first depth levels of the block's chain, in the current buffer. */
static __always_inline __u64 intern_chain(void *chain_map, const struct offcpu_chain *c,
					  __u32 depth)
{
	__u32 zero = 0;
	struct scratch *scr;
	__u64 h;

	if (!c->n)
		return 0; /* no wakeup seen: woken before we looked */
	h = chain_hash(c, depth);
	if (bpf_map_lookup_elem(chain_map, &h))
		return h;
	scr = bpf_map_lookup_elem(&scratch, &zero);
	if (!scr)
		return h;
	__builtin_memcpy(&scr->chain, c, sizeof(*c));
	scr->chain.n = c->n < depth ? c->n : depth;
	if (bpf_map_update_elem(chain_map, &h, &scr->chain, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(chain_map, &h))
		count(OFFCPU_CNT_DROP_CHAIN_FULL); /* the time is still counted */
	return h;
}

/* Buffers of the current epoch. */
struct buffers {
	void *agg, *stacks, *chains, *hists, *totals;
};

static __always_inline bool buffers_get(struct buffers *b)
{
	__u32 buf = epoch & 1;

	b->agg = bpf_map_lookup_elem(&aggs, &buf);
	b->stacks = bpf_map_lookup_elem(&stacks, &buf);
	b->chains = bpf_map_lookup_elem(&chains, &buf);
	b->hists = bpf_map_lookup_elem(&hists, &buf);
	b->totals = bpf_map_lookup_elem(&totals, &buf);
	if (b->agg && b->stacks && b->chains && b->hists && b->totals)
		return true;
	count(OFFCPU_CNT_BUFFER_MISSING);
	return false;
}

/* The part of a block a slot of this kind counts. */
static __always_inline __u64 block_value(const struct start_rec *rec, __u32 kind)
{
	return kind == OFFCPU_KIND_OFFCPU ? rec->delta
	       : kind == OFFCPU_KIND_RUNQ ? rec->runq
					  : rec->blocked;
}

static __always_inline void slot_hist_add(void *hist_map, const struct start_rec *rec, __u32 slot)
{
	hist_add(hist_map, slot, rec->tgid, OFFCPU_HIST_OFFCPU, rec->delta);
	if (rec->runq)
		hist_add(hist_map, slot, rec->tgid, OFFCPU_HIST_RUNQ, rec->runq);
}

/*
 * Adds one block to slot's rows (and histograms), as the slot's kind wants
 * it. The block's values are in rec; value is the one the slot's kind
 * counts, already checked against the slot's filters by block_end(). A
 * sampled slot's rows get the sample's weight, and its histograms were
 * kept by total_add(). A global function, so the verifier checks it once
 * rather than once per slot of block_end()'s loop.
 */
__noinline int slot_account(struct start_rec *rec, __u32 slot, __u64 value)
{
	__u32 i = slot & (OFFCPU_MAX_SLOTS - 1), bit = 1u << i, kind, depth;
	__u64 period = slots[i].sample_period_ns, blocked, runq;
	struct offcpu_key key = {};
	struct buffers b = {};

	if (!rec || !buffers_get(&b))
		return 0;
	if (!(sampled_slots & bit))
		period = 0;
	kind = slots[i].kind;
	depth = slots[i].chain_depth;
	key.slot = i;
	key.tgid = rec->tgid;
	key.pid = rec->pid;
	key.state = rec->state;
	key.kind = kind;
	key.flags = period ? OFFCPU_KEY_SAMPLED : 0;
	key.kstack = (kernel_stack_slots & bit) ? rec->khash : 0;
	key.ustack = (user_stack_slots & bit) ? rec->uhash : 0;
	if (kind == OFFCPU_KIND_WAKEUP || kind == OFFCPU_KIND_OFFWAKE)
		key.chain = intern_chain(b.chains, &rec->chain, 1);
	else if (kind == OFFCPU_KIND_CHAIN)
		key.chain = intern_chain(b.chains, &rec->chain, depth);
	value = sample_weight(value, rec->delta, period);
	blocked = sample_weight(rec->blocked, rec->delta, period);
	runq = sample_weight(rec->runq, rec->delta, period);
	if (kind == OFFCPU_KIND_OFFCPU && (split_runq_slots & bit)) {
		if (blocked)
			aggregate(b.agg, &key, blocked, rec->comm);
		key.kind = OFFCPU_KIND_RUNQ;
		if (runq)
			aggregate(b.agg, &key, runq, rec->comm);
	} else {
		aggregate(b.agg, &key, value, rec->comm);
	}
	if ((hist_slots & bit) && !period)
		slot_hist_add(b.hists, rec, i);
	return 0;
}

/* Adds ns to a sampled slot's exact total under key, on this CPU. */
static __always_inline void total_one(void *total_map, struct offcpu_key *key, __u64 ns,
				      bool is_short, bool taken, const char *comm)
{
	struct offcpu_total *t, init = {};

	t = bpf_map_lookup_elem(total_map, key);
	if (!t) {
		__builtin_memcpy(init.comm, comm, sizeof(init.comm));
		init.sum_ns = ns;
		init.count = 1;
		init.short_ns = is_short ? ns : 0;
		init.samples = taken;
		if (!bpf_map_update_elem(total_map, key, &init, BPF_NOEXIST))
			return;
		t = bpf_map_lookup_elem(total_map, key); /* lost a race to another CPU */
		if (!t) {
			count(OFFCPU_CNT_DROP_TOTAL_FULL);
			return;
		}
	}
	t->sum_ns += ns; /* this CPU's copy: no other CPU writes it */
	t->count++;
	if (is_short)
		t->short_ns += ns;
	t->samples += taken;
}

/*
 * Adds one block to a sampled slot's exact totals and histograms: keyed as
 * slot_account() keys its rows, without stacks. Writes only per-CPU maps.
 */
__noinline int total_add(struct start_rec *rec, __u32 slot, __u64 value, __u32 taken)
{
	__u32 i = slot & (OFFCPU_MAX_SLOTS - 1), bit = 1u << i, buf = epoch & 1;
	struct offcpu_key key = {};
	struct buffers b = {};
	bool is_short;

	if (!rec)
		return 0;
	/* Only the two buffers this needs: it runs for every block. */
	b.totals = bpf_map_lookup_elem(&totals, &buf);
	b.hists = bpf_map_lookup_elem(&hists, &buf);
	if (!b.totals || !b.hists) {
		count(OFFCPU_CNT_BUFFER_MISSING);
		return 0;
	}
	is_short = rec->delta < slots[i].sample_period_ns;
	key.slot = i;
	key.tgid = rec->tgid;
	key.pid = rec->pid;
	key.state = rec->state;
	key.kind = slots[i].kind;
	if (key.kind == OFFCPU_KIND_OFFCPU && (split_runq_slots & bit)) {
		if (rec->blocked)
			total_one(b.totals, &key, rec->blocked, is_short, taken, rec->comm);
		key.kind = OFFCPU_KIND_RUNQ;
		if (rec->runq)
			total_one(b.totals, &key, rec->runq, is_short, taken && !rec->blocked,
				  rec->comm); /* one sample per block */
	} else {
		total_one(b.totals, &key, value, is_short, taken, rec->comm);
	}
	if (hist_slots & bit)
		slot_hist_add(b.hists, rec, i);
	return 0;
}

/* Adds a sampled block, its stacks in rec, to the sampled slots in slots. */
__noinline int sample_account(struct start_rec *rec, __u32 slots_mask)
{
	struct buffers b = {};

	if (!rec || !buffers_get(&b))
		return 0;
	rec->khash = intern_stack(b.stacks, &rec->kstack);
	rec->uhash = intern_stack(b.stacks, &rec->ustack);
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++)
		if (slots_mask & (1u << i))
			slot_account(rec, i, block_value(rec, slots[i].kind));
	return 0;
}

/*
 * Ends rec's block at now: splits it into blocked and run-queue time and adds
 * it to every slot whose filters it passes. The caller has set rec->tgid and
 * rec->pid. A sampled slot counts the block in its totals, and decides
 * whether it takes the block's stacks (one random draw per block for all
 * slots). Returns the sampled slots that took the block but have no stacks
 * for it yet (not walked at switch-out), for the caller to walk. A global
 * function: switch_in() and switch_out() share one verified copy.
 */
__noinline int block_end(struct start_rec *rec, __u64 now)
{
	__u32 matched, rand = bpf_get_prandom_u32(), need = 0;
	bool interned = false, seen = false, took = false;
	struct buffers b = {};
	__u64 delta;

	if (!rec || !rec->slots)
		return 0;
	matched = rec->slots & active_mask;
	rec->slots = 0; /* consumed: a record counts once */
	delta = now - rec->ts;
	if ((__s64)delta < 0) {
		count(OFFCPU_CNT_DROP_NEGATIVE_DELTA);
		return 0;
	}
	/* Blocked until woken, then waiting for a CPU. A preempted thread was
	 * runnable all along; without a wakeup seen, all of it counts as blocked. */
	rec->delta = delta;
	if (rec->state == OFFCPU_STATE_RUNNING) {
		rec->blocked = 0;
		rec->runq = delta;
	} else if (rec->wake_ts >= rec->ts && rec->wake_ts <= now) {
		rec->blocked = rec->wake_ts - rec->ts;
		rec->runq = now - rec->wake_ts;
	} else {
		rec->blocked = delta;
		rec->runq = 0;
	}
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct offcpu_slot *s = &slots[i];
		__u64 value = block_value(rec, s->kind);
		__u32 bit = 1u << i;

		if (!(matched & bit) || rec->ts < s->start_ns || !value ||
		    value < s->min_block_ns || (s->max_block_ns && value > s->max_block_ns))
			continue;
		if (sampled_slots & bit) {
			bool take = sample_take(delta, s->sample_period_ns, rand);

			total_add(rec, i, value, take);
			seen = true;
			took |= take;
			if (!take)
				continue;
			if (!(rec->walked & bit)) {
				need |= bit;
				continue;
			}
		}
		if (!interned) { /* the first slot that keeps this block interns its stacks */
			if (!buffers_get(&b))
				return 0;
			rec->khash = intern_stack(b.stacks, &rec->kstack);
			rec->uhash = intern_stack(b.stacks, &rec->ustack);
			interned = true;
		}
		slot_account(rec, i, value);
	}
	if (seen)
		count(OFFCPU_CNT_SAMPLED_BLOCKS);
	if (took)
		count(OFFCPU_CNT_SAMPLES);
	return need;
}

/*
 * The callback of a deferred walk, in the sampled thread's context on its
 * way back to user mode: its user registers and stack are those of the
 * block. (Task work callbacks may sleep; nothing here does.)
 */
static int deferred_walk_cb(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct start_rec *rec = bpf_task_storage_get(&task_starts, t, NULL, 0);

	if (rec && rec->walk_pending)
		sample_finish(rec, t, OFFCPU_CNT_WALK_DEFERRED);
	bpf_map_delete_elem(&deferred_walks, key);
	return 0;
}

/* Schedules deferred_walk_cb for next, unless one is scheduled already
 * (it will find rec's pending walk). Returns false if it cannot be. */
static __always_inline bool walk_defer(struct task_struct *next, __u32 pid)
{
	struct deferred_walk *w;
	__u64 zero = 0;

	if (!defer_walks || !bpf_task_work_schedule_resume_impl) /* a __weak kfunc: 0 if missing */
		return false;
	if (bpf_map_update_elem(&deferred_walks, &pid, &zero, BPF_NOEXIST))
		return bpf_map_lookup_elem(&deferred_walks, &pid) != NULL;
	w = bpf_map_lookup_elem(&deferred_walks, &pid);
	if (w && !bpf_task_work_schedule_resume_impl(next, &w->tw, &deferred_walks,
						     deferred_walk_cb, NULL))
		return true;
	bpf_map_delete_elem(&deferred_walks, &pid);
	return false;
}

/*
 * The stacks of a block that sampled slots took, for next, the thread being
 * switched in by prev. Its kernel stack is still there: it has not run yet.
 * Its user stack stays as it was until it returns to user mode; it can be
 * read now only if prev shares its memory, else it is walked when next is
 * current again (sample_finish()).
 */
static __always_inline void sample_stacks(struct task_struct *prev, struct task_struct *next,
					  struct start_rec *rec, __u32 need)
{
	struct pt_regs *regs;
	struct mm_struct *mm;
	long n = 0;

	rec->kstack.nr = 0;
	rec->kstack.flags = 0;
	rec->ustack.nr = 0;
	rec->ustack.flags = 0;
	if (need & kernel_stack_slots) {
		n = bpf_get_task_stack(next, rec->kstack.ips, sizeof(rec->kstack.ips), 0);
		count(OFFCPU_CNT_KERNEL_STACK_WALKS);
		if (n < 0) {
			count(OFFCPU_CNT_DROP_KSTACK_ERROR);
			n = 0;
		}
		rec->kstack.nr = n / sizeof(__u64);
	}
	mm = next->mm;
	if (!(need & user_stack_slots) || !mm || (next->flags & PF_KTHREAD)) {
		sample_account(rec, need);
		return;
	}
	if (mm == prev->mm) {
		walk_task_user_stack(next, rec->tgid, &rec->ustack);
		count(OFFCPU_CNT_WALK_SAME_MM);
		sample_account(rec, need);
		return;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(next);
	if (!regs) {
		count(OFFCPU_CNT_DEFER_LOST);
		return;
	}
	rec->walk_ip = BPF_CORE_READ(regs, ip);
	rec->walk_sp = BPF_CORE_READ(regs, sp);
	rec->walk_pending = need;
	if (!walk_defer(next, rec->pid)) {
		rec->walk_pending = 0;
		count(OFFCPU_CNT_DEFER_LOST);
	}
}

static __always_inline void switch_in(struct task_struct *prev, struct task_struct *next,
				      bool btf)
{
	struct start_rec *rec;
	__u32 pid, need;

	if (!active_mask)
		return; /* any start record left would not count anyway */
	pid = btf ? next->pid : BPF_CORE_READ(next, pid);
	if (!pid)
		return;
	if (btf && (active_mask & request_slots))
		request_switch_in(next);
	rec = start_get(next, pid, btf, false);
	if (!rec || !rec->slots)
		return;
	rec->tgid = btf ? next->tgid : BPF_CORE_READ(next, tgid);
	rec->pid = pid;
	need = block_end(rec, bpf_ktime_get_ns());
	if (btf && need) /* (only with defer_walks, which needs tp_btf) */
		sample_stacks(prev, next, rec, need);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	count(OFFCPU_CNT_SWITCHES);
	switch_out(ctx, preempt, prev, true);
	switch_in(prev, next, true);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	count(OFFCPU_CNT_SWITCHES);
	switch_out(ctx, preempt, prev, false);
	switch_in(prev, next, false);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking_btf, struct task_struct *p)
{
	waking(ctx, p, true);
	return 0;
}

SEC("raw_tp/sched_waking")
int BPF_PROG(sched_waking_raw, struct task_struct *p)
{
	waking(ctx, p, false);
	return 0;
}

static __always_inline void request_add(__u32 slot, __u32 request, __u32 measure, __u64 ns)
{
	struct offcpu_request_key k = {
		.slot = slot, .request = request, .measure = measure, .bucket = log2_bucket(ns)
	};
	struct offcpu_request_value *v, init = { .count = 1, .sum_ns = ns };

	v = bpf_map_lookup_elem(&request_stats, &k);
	if (!v) {
		if (!bpf_map_update_elem(&request_stats, &k, &init, BPF_NOEXIST))
			return;
		v = bpf_map_lookup_elem(&request_stats, &k); /* lost a race to another CPU */
		if (!v) {
			count(OFFCPU_CNT_DROP_REQUEST_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->sum_ns, ns);
}

/* The slot a request probe belongs to, if that slot is counting. */
static __always_inline bool request_probe_slot(void *ctx, __u32 *slot, __u32 *request)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	*slot = (cookie / OFFCPU_MAX_REQUESTS) & (OFFCPU_MAX_SLOTS - 1);
	*request = cookie % OFFCPU_MAX_REQUESTS;
	return active_mask & request_slots & (1u << *slot);
}

SEC("uprobe")
int request_enter(struct pt_regs *ctx)
{
	struct request_slot_state *st;
	struct request_thread *r;
	__u32 slot, request;

	if (!request_probe_slot(ctx, &slot, &request))
		return 0;
	r = bpf_task_storage_get(&request_threads, bpf_get_current_task_btf(), NULL,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!r) {
		count(OFFCPU_CNT_DROP_REQUEST_ALLOC);
		return 0;
	}
	st = &r->slots[slot];
	if (st->slot_start_ns != slots[slot].start_ns) { /* left over from an earlier capture */
		st->slot_start_ns = slots[slot].start_ns;
		st->depth = 0;
	}
	if (st->depth++ == 0) {
		st->entry_ns = bpf_ktime_get_ns();
		st->offcpu_at_entry = r->offcpu_ns;
		st->request = request;
		r->in_slots |= 1u << slot;
	}
	return 0;
}

SEC("uretprobe")
int request_exit(struct pt_regs *ctx)
{
	struct request_slot_state *st;
	struct request_thread *r;
	__u32 slot, request;
	__u64 wall;

	if (!request_probe_slot(ctx, &slot, &request))
		return 0;
	r = bpf_task_storage_get(&request_threads, bpf_get_current_task_btf(), NULL, 0);
	if (!r)
		return 0;
	st = &r->slots[slot];
	/* A return whose call began before the probes were attached. */
	if (!st->depth || st->slot_start_ns != slots[slot].start_ns)
		return 0;
	if (--st->depth)
		return 0;
	r->in_slots &= ~(1u << slot);
	wall = bpf_ktime_get_ns() - st->entry_ns;
	request_add(slot, st->request, OFFCPU_REQUEST_WALL, wall);
	request_add(slot, st->request, OFFCPU_REQUEST_OFFCPU, r->offcpu_ns - st->offcpu_at_entry);
	count(OFFCPU_CNT_REQUESTS);
	return 0;
}

/* raw_tp fallback only: task storage frees itself, the hash does not. */
SEC("raw_tp/sched_process_free")
int BPF_PROG(sched_process_free_raw, struct task_struct *t)
{
	__u32 pid = BPF_CORE_READ(t, pid);

	bpf_map_delete_elem(&hash_starts, &pid);
	return 0;
}

/* A new program image: its unwind tables are asked for at its next walk. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(unwind_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	bpf_map_delete_elem(&unwind_procs, &tgid);
	bpf_map_delete_elem(&unwind_requested, &tgid);
	return 0;
}

/* ======================= On-CPU sampling (OFFCPU_KIND_ONCPU) =======================
 *
 * A perf_event program, attached to one CPU-clock event per CPU, samples the
 * thread on that CPU. Each sample adds the event's period (ns of CPU time)
 * to the slots in oncpu_slots whose task filters accept the thread: ONCPU
 * slots, and OFFCPU slots that put on-CPU time beside off-CPU time (hot/cold),
 * as ONCPU rows of the same maps. State and block-length filters are about
 * blocks and do not apply; request-synchronous slots take no samples.
 */
__u32 oncpu_slots;			  /* slots that take on-CPU samples */
const volatile __u64 oncpu_period_ns = 0; /* the events' period, if a sample lacks it */

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx)
{
	__u32 matched = active_mask & oncpu_slots & ~request_slots, zero = 0, pid, tgid;
	__u64 id, period, khash = 0, uhash = 0;
	struct offcpu_key key = {};
	char comm[OFFCPU_COMM_LEN];
	struct buffers b = {};
	struct scratch *scr;

	if (!matched)
		return 0;
	id = bpf_get_current_pid_tgid();
	pid = (__u32)id;
	tgid = id >> 32;
	if (!pid || (self_tgid && tgid == self_tgid))
		return 0; /* the idle task, or the daemon */
	matched = task_filter(matched, tgid, pid);
	scr = bpf_map_lookup_elem(&scratch, &zero);
	if (!matched || !scr || !buffers_get(&b))
		return 0;
	count(OFFCPU_CNT_ONCPU_SAMPLES);
	period = ctx->sample_period ? ctx->sample_period : oncpu_period_ns;
	bpf_get_current_comm(comm, sizeof(comm));
	if (matched & kernel_stack_slots) {
		walk_stack(ctx, &scr->stack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
		khash = intern_stack(b.stacks, &scr->stack);
	}
	if ((matched & user_stack_slots) &&
	    !(BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), flags) & PF_KTHREAD)) {
		walk_user_stack(ctx, bpf_get_current_task_btf(), tgid, &scr->stack, true);
		uhash = intern_stack(b.stacks, &scr->stack);
	}
	key.tgid = tgid;
	key.pid = pid;
	key.state = OFFCPU_STATE_RUNNING;
	key.kind = OFFCPU_KIND_ONCPU;
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		__u32 bit = 1u << i;

		if (!(matched & bit))
			continue;
		key.slot = i;
		key.kstack = (kernel_stack_slots & bit) ? khash : 0;
		key.ustack = (user_stack_slots & bit) ? uhash : 0;
		aggregate(b.agg, &key, period, comm);
	}
	return 0;
}
#include "offcpu_io.bpf.h"
