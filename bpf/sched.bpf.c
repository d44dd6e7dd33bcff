// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Off-CPU time by stack, aggregated in the kernel: the scheduler hooks.
 *
 * At switch-out a thread that matches at least one active slot gets a start
 * record (timestamp, state class, matched slots, and for exact slots its
 * raw stacks) in task-local storage. At switch-in the block time is checked
 * against each slot's min/max filter; only if one passes are the stacks
 * interned (hashed into a stack map) and the time added to the aggregation
 * map. An exact slot's stacks are read at switch-out because a thread's user
 * stack can only be walked while it is current; a sampled slot
 * (bpf/sampling.h) decides at switch-in, where the block's length is known,
 * and reads the stacks of the blocks it takes then, or the user stack when
 * the thread is current again.
 *
 * Here: the switch hooks, the accounting of a block at its end into the
 * slots' rows (block_end(), slot_account()), and the exit hooks, which end
 * a thread's start record. Beside them, split by concern: the exact totals
 * of sampled slots and the per-thread banks that keep them (banks.bpf.c,
 * banks.bpf.h), the user stack walks deferred to the thread's return to
 * user mode (deferred_walk.bpf.c, deferred_walk.bpf.h, whose switch-hook
 * part is inline here), the in-progress pass (in_progress.bpf.c) and the
 * wakers (wakers.bpf.c).
 */
#include "banks.bpf.h"
#include "deferred_walk.bpf.h"
#include "requests.bpf.h"
#include "sched_frames.bpf.h"
#include "wakers.bpf.h"

/* Set by the loader where the kernel counts each task's wait on its run
 * queue (sched_info.last_queued, CONFIG_SCHED_INFO) and a task's run queue
 * is reachable (se.cfs_rq->rq, CONFIG_FAIR_GROUP_SCHED, tp_btf; the per-CPU
 * runqueues symbol is not where kallsyms lists no data): a block's
 * run-queue part is then read at switch-in, and sched_waking runs only for
 * the waker kinds (daemon/kernel/collector.c). */
const volatile bool runq_from_sched_info = false;

/*
 * Sets rec->wake_ts, which block_end() splits a block at, to when next was
 * queued to run, as the scheduler counts it: now less the time since
 * sched_info_enqueue() stamped it with the run queue's clock (both clocks
 * count nanoseconds; the wait is what the scheduler adds to run_delay).
 * Keeps what sched_waking set where the scheduler stamped nothing.
 */
static __always_inline void queued_at(struct start_rec *rec, struct task_struct *next, __u64 now)
{
	/* next is on this CPU's run queue, which every class's task's
	 * se.cfs_rq points into (set_task_rq()). */
	__u64 queued = next->sched_info.last_queued, clock = next->se.cfs_rq->rq->clock, wait;

	if (!queued || clock < queued) {
		if (rec->wake_ts)
			count(OFFCPU_CNT_RUNQ_UNSTAMPED);
		return;
	}
	wait = clock - queued;
	rec->wake_ts = wait < now - rec->ts ? now - wait : rec->ts;
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

/* Slots of the I/O kinds, which sched_switch leaves alone (io.bpf.c). */
static __always_inline __u32 io_kind_slots(void)
{
	return kind_slots[OFFCPU_KIND_BIO] | kind_slots[OFFCPU_KIND_FILEIO];
}

/* The time of this switch, read once for prev's block and next's: the
 * clock costs as much as a map lookup. */
static __always_inline __u64 switch_time(__u64 *now)
{
	if (!*now)
		*now = bpf_ktime_get_ns();
	return *now;
}

static __always_inline void switch_out(void *ctx, bool preempt, struct task_struct *prev, bool btf,
				       __u64 *now)
{
	__u32 pid, tgid, state, matched, walk;
	struct start_rec *rec;

	if (!active_mask)
		return; /* nothing counts: what a record holds is void */
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
	state = state_class(preempt, task_state(prev, btf));
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
	if (btf) { /* loads rather than helper calls */
		__builtin_memcpy(rec->comm, prev->comm, sizeof(rec->comm));
		rec->cgroup = prev->cgroups->dfl_cgrp->kn->id;
	} else { /* prev is current here */
		bpf_get_current_comm(rec->comm, sizeof(rec->comm));
		rec->cgroup = bpf_get_current_cgroup_id();
	}
	/* Sampled slots take their stacks at switch-in, and only for the
	 * blocks they sample (sample_stacks()), unless walks cannot wait. */
	walk = matched;
	if (btf && defer_walks)
		walk &= ~sampled_slots;
	else if (walk & sampled_slots)
		count(OFFCPU_CNT_WALK_SWITCH_OUT);
	if ((walk & kernel_stack_slots) && btf) /* the cache needs task storage */
		walk_kernel_stack(ctx, &rec->kstack, OFFCPU_CNT_DROP_KSTACK_ERROR);
	else if (walk & kernel_stack_slots)
		walk_stack(ctx, &rec->kstack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
	if ((walk & user_stack_slots) &&
	    !((btf ? prev->flags : BPF_CORE_READ(prev, flags)) & PF_KTHREAD)) {
		walk_user_stack(ctx, prev, tgid, &rec->ustack, btf);
		/* Its process not published yet (frame pointers): its mappings
		 * can be built from its VMAs, for its next blocks, once it is
		 * back in a task context (deferred_walk_cb()). */
		if (btf && unwind_dwarf && !(rec->ustack.flags & OFFCPU_STACK_DWARF) &&
		    unwind_asked_lately(tgid))
			walk_defer(prev, pid);
	} else if (btf && unwind_dwarf && (matched & user_stack_slots) &&
		 rec->tables_mm != (__u64)prev->mm) {
		/* Ask for the process's unwind tables now, not at its first
		 * sampled block: once per thread and program image (an exec
		 * gives a new mm), so that its first samples are whole. */
		unwind_proc(tgid);
		rec->tables_mm = (__u64)prev->mm;
	}
	rec->walked = walk;
	rec->state = state;
	rec->slots = matched;
	rec->ts = switch_time(now);
	if (btf && (matched & request_slots))
		request_block_start(prev, rec->ts);
}

/*
 * Adds one block to slot's rows (and histograms), as the slot's kind wants
 * it. The block's values are in rec, already checked against the slot's
 * filters by block_end(). A sampled slot's rows get the sample's weight,
 * and its histograms were kept by total_add(). A global function, so the
 * verifier checks it once rather than once per slot of block_end()'s loop.
 */
__noinline int slot_account(struct start_rec *rec, __u32 slot)
{
	__u32 i = slot & (OFFCPU_MAX_SLOTS - 1), bit = 1u << i, kind, depth;
	__u64 period = slots[i].sample_period_ns, blocked, runq, value;
	struct offcpu_key key = {};
	struct buffers b = {};
	struct block_part p;
	bool estimated;

	if (!rec || !buffers_get(&b))
		return 0;
	if (!(sampled_slots & bit))
		period = 0;
	kind = slots[i].kind;
	block_part_of(rec, bit, &p);
	value = part_value(&p, kind);
	depth = slots[i].chain_depth;
	key.slot = i;
	key.tgid = rec->tgid;
	key.pid = rec->pid;
	key.state = rec->state;
	key.kind = kind;
	key.flags = period ? OFFCPU_KEY_SAMPLED : 0;
	key.cgroup = rec->cgroup;
	key.kstack = (kernel_stack_slots & bit) ? rec->khash : 0;
	key.ustack = (user_stack_slots & bit) ? rec->uhash : 0;
	if (kind == OFFCPU_KIND_WAKEUP || kind == OFFCPU_KIND_OFFWAKE)
		key.chain = intern_chain(b.chains, &rec->chain, 1);
	else if (kind == OFFCPU_KIND_CHAIN)
		key.chain = intern_chain(b.chains, &rec->chain, depth);
	value = sample_weight(value, p.delta, period);
	blocked = sample_weight(p.blocked, p.delta, period);
	runq = sample_weight(p.runq, p.delta, period);
	/* A short block's sample stands for T: its weight is the estimate user
	 * space scales. A long one is taken always, at its true length. */
	estimated = period && p.delta < period;
	if (kind == OFFCPU_KIND_OFFCPU && (split_runq_slots & bit)) {
		if (blocked)
			aggregate_add(b.agg, &key, blocked, 1, 0, estimated ? blocked : 0, rec->comm);
		key.kind = OFFCPU_KIND_RUNQ;
		if (runq)
			aggregate_add(b.agg, &key, runq, 1, 0, estimated ? runq : 0, rec->comm);
	} else {
		aggregate_add(b.agg, &key, value, 1, 0, estimated ? value : 0, rec->comm);
	}
	if ((hist_slots & bit) && !period)
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
			slot_account(rec, i);
	return 0;
}

/*
 * Ends rec's block at now: splits it into blocked and run-queue time and adds
 * it to every slot whose filters it passes (a slot of progress_slots, what
 * the in-progress pass did not count of it already). The caller has set rec->tgid and
 * rec->pid. A sampled slot counts the block in its totals, and decides
 * whether it takes the block's stacks (one random draw per block for all
 * slots). Returns the sampled slots that took the block but have no stacks
 * for it yet (not walked at switch-out), for the caller to walk. A global
 * function: switch_in() and switch_out() share one verified copy.
 */
__noinline int block_end(struct start_rec *rec, __u64 now)
{
	__u32 matched, rand = bpf_get_prandom_u32(), need = 0, buf = epoch & 1;
	bool interned = false, seen = false, took = false, banked = false;
	struct buffers b = {};
	__u64 delta, taken, charged;

	if (!rec || !rec->slots)
		return 0;
	/* consumed: a record counts once, here or (a part) in the pass */
	taken = __sync_lock_test_and_set(&rec->slots, 0);
	matched = (__u32)taken & active_mask;
	delta = now - rec->ts;
	if ((__s64)delta < 0) {
		count(OFFCPU_CNT_DROP_NEGATIVE_DELTA);
		return 0;
	}
	rec->delta = delta;
	block_split(rec, rec->ts, now, &rec->blocked, &rec->runq);
	charged = (taken & START_CHARGING) ? rec->charging_to : rec->charged_ts;
	rec->part_charged = charged > rec->ts && (matched & progress_slots);
	if (rec->part_charged) {
		/* The pass may have read its clock after this switch's. */
		if (charged > now)
			charged = now;
		rec->part_delta = now - charged;
		block_split(rec, charged, now, &rec->part_blocked, &rec->part_runq);
	}
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct offcpu_slot *s = &slots[i];
		__u64 value = block_value(rec, s->kind);
		__u32 bit = 1u << i;

		if (!(matched >> i))
			break; /* no slot left: most blocks match slot 0 alone */
		if (!(matched & bit) || rec->ts < s->start_ns || !value ||
		    value < s->min_block_ns || (s->max_block_ns && value > s->max_block_ns))
			continue;
		if (sampled_slots & bit) {
			bool part = rec->part_charged && (progress_slots & bit);
			bool take = sample_take(part ? rec->part_delta : delta, s->sample_period_ns,
						rand);

			if (thread_banks && !banked)
				bank_add(rec, i, buf, take);
			else
				total_add(rec, i, take);
			banked = thread_banks;
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
		slot_account(rec, i);
	}
	if (seen)
		count(OFFCPU_CNT_SAMPLED_BLOCKS);
	if (took)
		count(OFFCPU_CNT_SAMPLES);
	return need;
}

static __always_inline void switch_in(struct task_struct *prev, struct task_struct *next, bool btf,
				      __u64 *now)
{
	struct start_rec *rec;
	__u32 pid, need;

	if (!active_mask)
		return; /* any start record left would not count anyway */
	pid = btf ? next->pid : BPF_CORE_READ(next, pid);
	if (!pid)
		return;
	if (btf && (active_mask & request_slots)) /* the block and the request end at one time */
		request_switch_in(next, switch_time(now));
	rec = start_get(next, pid, btf, false);
	if (!rec || !rec->slots)
		return;
	rec->tgid = btf ? next->tgid : BPF_CORE_READ(next, tgid);
	rec->pid = pid;
	if (btf && runq_from_sched_info)
		queued_at(rec, next, switch_time(now));
	need = block_end(rec, switch_time(now));
	if (btf && need) /* (only with defer_walks, which needs tp_btf) */
		sample_stacks(prev, next, rec, need);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = 0;

	count(OFFCPU_CNT_SWITCHES);
	switch_out(ctx, preempt, prev, true, &now);
	switch_in(prev, next, true, &now);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = 0;

	count(OFFCPU_CNT_SWITCHES);
	switch_out(ctx, preempt, prev, false, &now);
	switch_in(prev, next, false, &now);
	return 0;
}

/*
 * An exiting thread's banks, while it is still where the drain's iterator
 * looks: a thread leaves the task list at its exit and is freed only a grace
 * period later, so a drain between the two would carry its last rows
 * without their totals (and sampling_calibrate() drops such rows). First
 * the user stack of the block it was woken from (killed while blocked, say):
 * its memory is still there (the tracepoint comes before exit_mm() since
 * 6.16), and its task work would run only after.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit_btf, struct task_struct *t)
{
	struct start_rec *rec = bpf_task_storage_get(&task_starts, t, NULL, 0);

	if (rec && rec->walk_pending && t == bpf_get_current_task_btf())
		sample_finish(rec, t, OFFCPU_CNT_WALK_AT_EXIT);
	task_banks_flush(t);
	return 0;
}

/* ... and what blocks on its way out added: its storage goes with it. */
SEC("tp_btf/sched_process_free")
int BPF_PROG(sched_process_free_btf, struct task_struct *t)
{
	task_banks_flush(t);
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
