// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The in-progress pass: the time of blocks still open, counted where an
 * interval ends rather than only when the block does.
 *
 * sched.bpf.c counts a block at its end. User space runs this task iterator
 * (reading it to its end) before the drain that closes an interval:
 *   - a window's end (pass_progress): the part of each open block of
 *     progress_slots (the continuous profile) since it began, or since the
 *     last pass, goes into the window that ends; the block's end counts only
 *     the rest (charged_ts, block_end()). Counts and histograms take the
 *     block once, whole, at its end.
 *   - a capture's end (pass_final_slots): the part inside the capture of
 *     each block open at its end, as in-progress rows (count 0); also of
 *     blocks that began before the capture, where another slot's record
 *     shows the open block (when it began, its state).
 * A block whose stacks were not walked at switch-out (a sampled slot's, or
 * one that began before the capture) is walked here: its kernel stack with
 * bpf_get_task_stack(), its user stack from the thread's saved user
 * registers, read with bpf_copy_from_user_task() (so the program is
 * sleepable) and its process's unwind tables. A part of a sampled slot is
 * sampled as a block of its length is (bpf/sampling.h).
 *
 * The pass and a block's end never count the same time: the pass claims
 * the record with START_CHARGING (progress) or by taking the capture's bit
 * out of its slots, each with a compare-and-swap; block_end() takes the
 * slots with one exchange (offcpu.bpf.h).
 */
#include "sched_frames.bpf.h"
#include "wakers.bpf.h"

/* Written by user space before each pass; one pass runs at a time. */
__u64 pass_now_ns;	/* where the interval ends (CLOCK_MONOTONIC) */
__u32 pass_progress;	/* count progress_slots' open blocks */
__u32 pass_final_slots; /* captures that end with this pass */

/* What the pass knows of the task it is at, beside pointers (which stay on
 * the stack, struct pass_task): one pass at a time, so one copy. */
struct pass_state {
	struct offcpu_stack kstack, ustack;
	struct sched_scan scan;
	__u64 khash, uhash;
	__u64 ts;     /* when the block began */
	__u64 now;    /* pass_now_ns */
	__u64 cgroup; /* the block's (start_rec.cgroup) */
	__u32 tgid, pid, state;
	__u32 rand; /* one draw per block, as block_end() */
	/* The slots counted: progress_slots' in parts, a capture's own block,
	 * a block that began before the capture (other). */
	__u32 progress, own, other;
	__u32 cgroup_slots; /* for other: slots whose cgroup filters accept the thread */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pass_state);
} pass_scratch SEC(".maps");

/* Kinds whose time has a value before the block ends: a waker's (the
 * others') is known only once it is woken. */
#define PASS_KINDS ((1u << OFFCPU_KIND_OFFCPU) | (1u << OFFCPU_KIND_RUNQ))

/* What one task's pass works with: the pointers (their types are known
 * on the stack only), and the rest in st. */
struct pass_task {
	struct task_struct *t;
	struct start_rec *rec;
	struct pass_state *st;
	void *agg, *stacks, *totals; /* the current buffer's */
};

/*
 * The stacks of t's open block, begun at ts, into k and u: those walked at
 * switch-out (walked: rec's are this block's), else walked now.
 */
static __always_inline void open_block_stacks(struct task_struct *t, struct start_rec *rec,
					      bool walked, __u64 ts, __u32 tgid,
					      struct offcpu_stack *k, struct offcpu_stack *u,
					      struct sched_scan *scan)
{
	if (walked && rec) {
		__builtin_memcpy(k, &rec->kstack, sizeof(*k));
		__builtin_memcpy(u, &rec->ustack, sizeof(*u));
		if (rec->ts != ts) /* it ran, and may have blocked again: not this block's */
			k->nr = u->nr = 0;
		return;
	}
	count(OFFCPU_CNT_IN_PROGRESS_WALKS);
	task_kernel_stack(t, k, scan);
	u->nr = 0;
	u->flags = 0;
	if (t->mm && !(t->flags & PF_KTHREAD)) {
		const struct offcpu_unwind_proc *proc = NULL;

		if (unwind_dwarf)
			proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
		unwind_user_stack_of(t, tgid, proc, u, true);
	}
}

/*
 * The stacks of blocks the pass walked, by hash, for its next passes while
 * the block is open (start_rec.walked_ts): an idle thread is walked once,
 * not at every window's end. Shared by every thread (the threads of a pool
 * idle in one place); an evicted stack is walked again.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct offcpu_stack);
} open_stacks SEC(".maps");

/* Puts the stack of hash (0: none) from open_stacks into stack_map, the
 * drained buffer's. False if it is not there. */
static __always_inline bool stack_reuse(void *stack_map, __u64 hash)
{
	struct offcpu_stack *st;

	if (!hash)
		return true;
	st = bpf_map_lookup_elem(&open_stacks, &hash);
	if (!st)
		return false;
	if (!bpf_map_lookup_elem(stack_map, &hash) &&
	    bpf_map_update_elem(stack_map, &hash, st, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(stack_map, &hash))
		count(OFFCPU_CNT_DROP_STACK_FULL);
	return true;
}

/* Copies the stacks the pass walked for rec's block begun at ts into k and
 * u, from open_stacks. False where it has not walked them, or they are gone. */
static __always_inline bool stacks_copy(struct start_rec *rec, __u64 ts, struct offcpu_stack *k,
					struct offcpu_stack *u)
{
	struct offcpu_stack *ks = NULL, *us = NULL;

	if (!rec || rec->walked_ts != ts)
		return false;
	if (rec->walked_khash && !(ks = bpf_map_lookup_elem(&open_stacks, &rec->walked_khash)))
		return false;
	if (rec->walked_uhash && !(us = bpf_map_lookup_elem(&open_stacks, &rec->walked_uhash)))
		return false;
	k->nr = u->nr = 0;
	if (ks)
		__builtin_memcpy(k, ks, sizeof(*k));
	if (us)
		__builtin_memcpy(u, us, sizeof(*u));
	return true;
}

/* The stacks of the open block, taken before the slots count it (in the
 * program's own frame: the slots' loop has no stack left for a walk), also
 * for a sampled part that then takes no sample: most parts are long, and
 * long parts are always taken. A block walked by an earlier pass reuses its
 * stacks. */
static __always_inline void pass_stacks_take(struct pass_task *p, bool walked)
{
	struct pass_state *st = p->st;
	struct start_rec *rec = p->rec;

	if (!walked && rec->walked_ts == st->ts && stack_reuse(p->stacks, rec->walked_khash) &&
	    stack_reuse(p->stacks, rec->walked_uhash)) {
		st->khash = rec->walked_khash;
		st->uhash = rec->walked_uhash;
		return;
	}
	open_block_stacks(p->t, rec, walked, st->ts, st->tgid, &st->kstack, &st->ustack, &st->scan);
	st->khash = intern_stack(p->stacks, &st->kstack);
	st->uhash = intern_stack(p->stacks, &st->ustack);
	if (walked)
		return;
	if (st->khash)
		bpf_map_update_elem(&open_stacks, &st->khash, &st->kstack, BPF_ANY);
	if (st->uhash)
		bpf_map_update_elem(&open_stacks, &st->uhash, &st->ustack, BPF_ANY);
	rec->walked_ts = st->ts;
	rec->walked_khash = st->khash;
	rec->walked_uhash = st->uhash;
}

/* Adds a part of value ns to slot i's row of kind under key (stacks set by
 * the caller): weighted as a sample of a block of delta ns where period is
 * not 0 (with its exact total), else as it is. */
static __always_inline void pass_row(struct pass_task *p, struct offcpu_key *key, __u64 value,
				     __u64 delta, __u64 period, bool take)
{
	bool is_short = period && delta < period;
	struct thread_total_cell cell = { .sum_ns = value,
					  .short_ns = is_short ? value : 0,
					  .samples = take };
	__u64 weight;

	if (!value)
		return;
	if (period) {
		__u64 flags = key->flags, k = key->kstack, u = key->ustack;

		key->flags = 0;
		key->kstack = key->ustack = 0;
		total_merge(p->totals, key, &cell, p->rec->comm);
		key->flags = flags;
		key->kstack = k;
		key->ustack = u;
	}
	if (!take)
		return;
	weight = sample_weight(value, delta, period);
	aggregate_add(p->agg, key, weight, 0, 0, is_short ? weight : 0, p->rec->comm);
}

/*
 * Counts [from, to] of the open block in slot i: rows as slot_account()
 * keys them (flags: OFFCPU_KEY_IN_PROGRESS for a capture's end), its stacks
 * taken before.
 */
static __always_inline void pass_part(struct pass_task *p, __u32 i, __u64 from, __u64 to,
				      __u32 flags)
{
	struct pass_state *st = p->st;
	__u32 bit = 1u << (i & (OFFCPU_MAX_SLOTS - 1)), kind;
	struct offcpu_slot *s = &slots[i & (OFFCPU_MAX_SLOTS - 1)];
	__u64 delta = to - from, blocked, runq, period = 0;
	struct offcpu_key key = {};
	bool take = true;

	if (to <= from)
		return;
	kind = s->kind;
	if ((sampled_slots & bit) && !(flags & OFFCPU_KEY_IN_PROGRESS)) {
		period = s->sample_period_ns;
		take = sample_take(delta, period, st->rand);
	}
	block_split(p->rec, from, to, &blocked, &runq);
	key.slot = i & (OFFCPU_MAX_SLOTS - 1);
	key.tgid = st->tgid;
	key.pid = st->pid;
	key.state = st->state;
	key.kind = kind;
	key.flags = flags | (period ? OFFCPU_KEY_SAMPLED : 0);
	key.cgroup = st->cgroup;
	key.kstack = (kernel_stack_slots & bit) ? st->khash : 0;
	key.ustack = (user_stack_slots & bit) ? st->uhash : 0;
	if (kind == OFFCPU_KIND_OFFCPU && (split_runq_slots & bit)) {
		pass_row(p, &key, blocked, delta, period, take);
		key.kind = OFFCPU_KIND_RUNQ;
		pass_row(p, &key, runq, delta, period, take && !blocked);
	} else {
		pass_row(p, &key, kind == OFFCPU_KIND_RUNQ ? runq : delta, delta, period, take);
	}
	count(OFFCPU_CNT_IN_PROGRESS_PARTS);
}

/* Slot i of a capture that ends: whether it would have counted this block,
 * begun before it (before the slot's start), had it been on then. */
static __always_inline bool pass_before(struct pass_task *p, __u32 i, __u64 ts)
{
	struct pass_state *st = p->st;
	struct offcpu_slot *s = &slots[i & (OFFCPU_MAX_SLOTS - 1)];
	__u32 bit = 1u << (i & (OFFCPU_MAX_SLOTS - 1));

	if (ts >= s->start_ns || (request_slots & bit) || s->max_block_ns)
		return false;
	return id_filter(bit & state_slots[st->state & (OFFCPU_STATE_COUNT - 1)], st->tgid,
			 st->pid) &
	       (~cgroup_filter_slots | st->cgroup_slots);
}

/* Slot i's part of the open block, if it counts one (a bpf_loop callback). */
static long pass_slot(__u32 i, void *arg)
{
	struct pass_task *p = arg;
	struct pass_state *st = p->st;
	struct offcpu_slot *sl;
	__u32 bit;

	i &= OFFCPU_MAX_SLOTS - 1;
	bit = 1u << i;
	if (!((st->progress | st->own | st->other) >> i))
		return 1; /* no slot left */
	sl = &slots[i];
	if (!(PASS_KINDS & (1u << (sl->kind & 31))))
		return 0;
	if (st->progress & bit) {
		__u64 charged = p->rec->charged_ts;

		pass_part(p, i, charged > st->ts ? charged : st->ts, st->now, 0);
	} else if ((st->own & bit) && st->ts >= sl->start_ns &&
		   st->now - st->ts >= sl->min_block_ns &&
		   (!sl->max_block_ns || st->now - st->ts <= sl->max_block_ns)) {
		pass_part(p, i, st->ts, st->now, OFFCPU_KEY_IN_PROGRESS);
	} else if (st->other & bit) { /* (kept by pass_other_slot()) */
		pass_part(p, i, sl->start_ns, st->now, OFFCPU_KEY_IN_PROGRESS);
	}
	return 0;
}

/* Keeps slot i in st->other only if it would have counted the open block,
 * had it been on when the block began (a bpf_loop callback): decided before
 * the stacks are walked, so that a capture of one process does not walk
 * every other blocked thread at its end. */
static long pass_other_slot(__u32 i, void *arg)
{
	struct pass_task *p = arg;
	struct pass_state *st = p->st;
	__u32 bit;

	i &= OFFCPU_MAX_SLOTS - 1;
	bit = 1u << i;
	if (!(st->other >> i))
		return 1;
	if ((st->other & bit) &&
	    (!pass_before(p, i, st->ts) || st->now - st->ts < slots[i].min_block_ns))
		st->other &= ~bit;
	return 0;
}

static __always_inline void pass_task_run(struct pass_task *p)
{
	struct pass_state *st = p->st;
	struct start_rec *rec = p->rec;
	__u64 now = pass_now_ns, s = rec->slots, claim = s, ts;
	__u32 open = (__u32)s & active_mask, progress = 0, own, other;

	if (!open || (s & START_CHARGING))
		return;
	if (pass_progress)
		progress = open & progress_slots & active_mask;
	own = open & pass_final_slots;
	other = pass_final_slots & ~(__u32)s & active_mask;
	if (progress)
		claim |= START_CHARGING;
	claim &= ~(__u64)own; /* the capture's: its end counts no more of it */
	if (claim != s) {
		rec->charging_to = now; /* read by an end that finds START_CHARGING */
		if (__sync_val_compare_and_swap(&rec->slots, s, claim) != s)
			return; /* it ended, or began anew, meanwhile */
	}
	ts = rec->ts; /* after the claim: of the block claimed */
	if (ts >= now)
		goto release;
	st->ts = ts;
	st->tgid = p->t->tgid; /* rec's are set at switch-in: none before the first */
	st->pid = p->t->pid;
	st->state = rec->state;
	st->cgroup = rec->cgroup;
	st->rand = bpf_get_prandom_u32();
	st->now = now;
	st->progress = progress;
	st->own = own;
	st->other = other;
	/* Its cgroup now, read through its task: the thread is not current. */
	st->cgroup_slots = 0;
	if (other & cgroup_filter_slots) {
		struct task_struct *t = p->t;

		st->cgroup_slots = cgroup_slots_of((__u64)BPF_CORE_READ(t, cgroups, dfl_cgrp));
	}
	if (other)
		bpf_loop(OFFCPU_MAX_SLOTS, pass_other_slot, p, 0);
	st->khash = st->uhash = 0;
	if ((progress | own | st->other) & (kernel_stack_slots | user_stack_slots))
		pass_stacks_take(p, rec->walked & (__u32)s);
	/* A loop the verifier checks once, not once per slot. */
	bpf_loop(OFFCPU_MAX_SLOTS, pass_slot, p, 0);
release:
	if (!progress)
		return;
	rec->charged_ts = now;
	/* Fails where the block ended meanwhile: its end took charging_to. */
	__sync_val_compare_and_swap(&rec->slots, claim, claim & ~START_CHARGING);
}

SEC("iter.s/task")
int pass_in_progress(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct pass_task p = {};
	__u32 zero = 0, buf = epoch & 1;

	if (!t)
		return 0;
	p.rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	if (!p.rec || !p.rec->slots)
		return 0;
	p.st = bpf_map_lookup_elem(&pass_scratch, &zero);
	p.agg = bpf_map_lookup_elem(&aggs, &buf);
	p.stacks = bpf_map_lookup_elem(&stacks, &buf);
	p.totals = bpf_map_lookup_elem(&totals, &buf);
	if (!p.st || !p.agg || !p.stacks || !p.totals) {
		count(OFFCPU_CNT_BUFFER_MISSING);
		return 0;
	}
	p.t = t;
	pass_task_run(&p);
	return 0;
}

/* Written by user space before each snapshot (run on the pass's thread). */
__u64 snapshot_now_ns;
__u64 snapshot_min_ns; /* off the CPU at least this long */
__u32 snapshot_tgid;   /* 0: every process */

struct blocked_scratch {
	struct offcpu_blocked b;
	struct sched_scan scan;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct blocked_scratch);
} blocked_scratch SEC(".maps");

#define TASK_STATE_SLEEPS (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)

/*
 * The snapshot of offcpuctl blocked: prints a struct offcpu_blocked for
 * every thread off the CPU now: one whose open block a start record times
 * (with its waker, where a waker kind recorded it), or one asleep with none,
 * since before offcpud's programs saw it switch (since_ns 0). Counts
 * nothing.
 */
SEC("iter.s/task")
int snapshot_blocked(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct blocked_scratch *scratch;
	struct offcpu_blocked *b;
	struct start_rec *rec;
	__u32 zero = 0, state;
	__u64 ts = 0, cgroup;
	bool open;

	if (!t || (snapshot_tgid && t->tgid != snapshot_tgid) ||
	    (self_tgid && t->tgid == self_tgid))
		return 0;
	rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	open = rec && ((__u32)rec->slots & active_mask);
	if (open) {
		ts = rec->ts;
		if (ts > snapshot_now_ns || snapshot_now_ns - ts < snapshot_min_ns)
			return 0;
		state = rec->state;
		cgroup = rec->cgroup;
	} else {
		state = task_state(t, true);
		if (!(state & TASK_STATE_SLEEPS) || t->on_cpu)
			return 0;
		state = state_class(false, state);
		cgroup = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
	}
	scratch = bpf_map_lookup_elem(&blocked_scratch, &zero);
	if (!scratch)
		return 0;
	b = &scratch->b;
	b->tgid = t->tgid;
	b->pid = t->pid;
	b->state = state;
	b->cgroup = cgroup;
	b->since_ns = ts;
	b->wake_ns = 0;
	__builtin_memset(&b->waker, 0, sizeof(b->waker));
	__builtin_memcpy(b->comm, t->comm, sizeof(b->comm));
	if (open && rec->wake_ts >= ts) {
		b->wake_ns = rec->wake_ts;
		if (rec->chain.n) /* recorded where a waker kind is on */
			__builtin_memcpy(&b->waker, &rec->chain.levels[0], sizeof(b->waker));
	}
	if (!open || !stacks_copy(rec, ts, &b->kstack, &b->ustack))
		open_block_stacks(t, rec, open && (rec->walked & (__u32)rec->slots), ts, b->tgid,
				  &b->kstack, &b->ustack, &scratch->scan);
	bpf_seq_write(ctx->meta->seq, b, sizeof(*b));
	return 0;
}
