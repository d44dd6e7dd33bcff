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
 */
#include "requests.bpf.h"
#include "sched_frames.bpf.h"
#include "wakers.bpf.h"

/*
 * Deferred user stack walks. A sampled thread's user stack is walked when it
 * is current again: at its return to user mode, or at its next switch-out if
 * it blocks again in the kernel first. The return to user mode is met by a
 * BPF task work (its callback runs in the thread's context; one entry here
 * per thread with one scheduled), or while walk_at_rseq is attached at the
 * rseq_update tracepoint, which every return after a switch of a thread
 * with rseq registered passes (glibc registers it since 2.35).
 *
 * Which costs less depends on the host and the load: a task work queues an
 * irq_work, a self-IPI, that a VM pays for in exits (22 us a sample on the
 * development VM), while walk_at_rseq runs at every switch (~80 ns there).
 * sampled_walk = auto attaches it while it costs less (daemon/walk_return.h).
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

/* Set by user space while walk_at_rseq is attached: a deferred walk of a
 * thread with rseq registered waits for that tracepoint, not a task work. */
bool rseq_walks = false;

/* By CPU: the thread switched in there last with a walk for walk_at_rseq
 * (0: none). The thread stays current on its CPU until it returns to user
 * mode or blocks again (sample_finish() at its switch-out): a per-CPU word
 * the tracepoint reads, where task storage would cost every return a lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} rseq_walk_tid SEC(".maps");

/* Set by the loader where the kernel counts each task's wait on its run
 * queue (sched_info.last_queued, CONFIG_SCHED_INFO) and a task's run queue
 * is reachable (se.cfs_rq->rq, CONFIG_FAIR_GROUP_SCHED, tp_btf; the per-CPU
 * runqueues symbol is not where kallsyms lists no data): a block's
 * run-queue part is then read at switch-in, and sched_waking runs only for
 * the waker kinds (daemon/collector.c). */
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

__noinline int sample_account(struct start_rec *rec, __u32 slots);

/*
 * Completes the sample rec waits for with the user stack of t, the current
 * task, if t has not been back in user mode since the block (its user
 * registers are those of then) and still has its memory (an exiting thread
 * has until exit_mm(), which its task works run after); else the sample is
 * lost, and counted.
 */
static __always_inline void sample_finish(struct start_rec *rec, struct task_struct *t,
					  __u32 walk_counter)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	__u32 slots = rec->walk_pending;

	rec->walk_pending = 0;
	if (!regs || BPF_CORE_READ(regs, ip) != rec->walk_ip ||
	    BPF_CORE_READ(regs, sp) != rec->walk_sp || !t->mm) {
		count(OFFCPU_CNT_DEFER_LOST);
		return;
	}
	/* At the return to user mode, irqs are on: a process's mappings can be
	 * read from its VMAs there. */
	walk_task_user_stack(t, rec->tgid, &rec->ustack,
			     walk_counter != OFFCPU_CNT_WALK_NEXT_SWITCH);
	count(walk_counter);
	sample_account(rec, slots);
}

static __always_inline bool walk_defer(struct task_struct *t, __u32 pid);

/* Slots of the I/O kinds, which sched_switch leaves alone (offcpu_io.bpf.h). */
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
	if (btf) /* two loads, cheaper than the helper */
		__builtin_memcpy(rec->comm, prev->comm, sizeof(rec->comm));
	else
		bpf_get_current_comm(rec->comm, sizeof(rec->comm)); /* prev is current here */
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

/* What of a block (or of the part of it counted) a slot counts. */
struct block_part {
	__u64 delta, blocked, runq;
};

static __always_inline __u64 part_value(const struct block_part *p, __u32 kind)
{
	return kind == OFFCPU_KIND_OFFCPU ? p->delta
	       : kind == OFFCPU_KIND_RUNQ ? p->runq
					  : p->blocked;
}

/* The part of a whole block a slot of this kind counts. */
static __always_inline __u64 block_value(const struct start_rec *rec, __u32 kind)
{
	struct block_part whole = { rec->delta, rec->blocked, rec->runq };

	return part_value(&whole, kind);
}

/* What of rec's block the slot of bit counts: all of it, or for a slot of
 * progress_slots what the in-progress pass did not count already. */
static __always_inline void block_part_of(const struct start_rec *rec, __u32 bit,
					  struct block_part *p)
{
	if (rec->part_charged && (progress_slots & bit)) {
		p->delta = rec->part_delta;
		p->blocked = rec->part_blocked;
		p->runq = rec->part_runq;
	} else {
		p->delta = rec->delta;
		p->blocked = rec->blocked;
		p->runq = rec->runq;
	}
}

static __always_inline void slot_hist_add(void *hist_map, const struct start_rec *rec, __u32 slot)
{
	hist_add(hist_map, slot, rec->tgid, OFFCPU_HIST_OFFCPU, rec->delta);
	/* As the rows: a wait the scheduler's clock calls 0 is no wait (it
	 * skips its update when the woken task preempts at once). */
	if (rec->runq)
		hist_add(hist_map, slot, rec->tgid, OFFCPU_HIST_RUNQ, rec->runq);
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
		if (map_insert(total_map, key, &init, OFFCPU_CNT_DROP_TOTAL_FULL, (void **)&t))
			return; /* in, with this block, or no room */
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
__noinline int total_add(struct start_rec *rec, __u32 slot, __u32 taken)
{
	__u32 i = slot & (OFFCPU_MAX_SLOTS - 1), bit = 1u << i, buf = epoch & 1;
	struct offcpu_key key = {};
	struct buffers b = {};
	struct block_part p;
	bool is_short;

	if (!rec)
		return 0;
	block_part_of(rec, bit, &p);
	/* Only the two buffers this needs: it runs for every block. */
	b.totals = bpf_map_lookup_elem(&totals, &buf);
	b.hists = bpf_map_lookup_elem(&hists, &buf);
	if (!b.totals || !b.hists) {
		count(OFFCPU_CNT_BUFFER_MISSING);
		return 0;
	}
	is_short = p.delta < slots[i].sample_period_ns;
	key.slot = i;
	key.tgid = rec->tgid;
	key.pid = rec->pid;
	key.state = rec->state;
	key.kind = slots[i].kind;
	if (key.kind == OFFCPU_KIND_OFFCPU && (split_runq_slots & bit)) {
		if (p.blocked)
			total_one(b.totals, &key, p.blocked, is_short, taken, rec->comm);
		key.kind = OFFCPU_KIND_RUNQ;
		if (p.runq)
			total_one(b.totals, &key, p.runq, is_short, taken && !p.blocked,
				  rec->comm); /* one sample per block */
	} else {
		total_one(b.totals, &key, part_value(&p, key.kind), is_short, taken, rec->comm);
	}
	if (hist_slots & bit)
		slot_hist_add(b.hists, rec, i);
	return 0;
}

/* Set by the loader where start records are task storage (tp_btf): the first
 * sampled slot a block counts in keeps its totals in the thread's banks. */
const volatile bool thread_banks = false;

static __always_inline void hist_merge(void *hist_map, __u32 slot, __u32 tgid, __u32 type,
				       __u32 bucket, __u64 n)
{
	struct offcpu_hist_key k = { .slot = slot, .tgid = tgid, .type = type, .bucket = bucket };
	__u64 *v;

	v = bpf_map_lookup_elem(hist_map, &k);
	if (!v && map_insert(hist_map, &k, &n, OFFCPU_CNT_DROP_HIST_FULL, (void **)&v))
		return;
	__sync_fetch_and_add(v, n);
}

/*
 * Moves bank buf of rec (struct thread_totals) into the totals and hists
 * maps of buffer dst, and empties it. The first to take the bank's stamp
 * moves it: a thread freed while the drain's iterator visits it is flushed
 * once. Returns 0 (a global function: verified once for its callers).
 */
__noinline int bank_flush(struct start_rec *rec, __u32 buf, __u32 dst)
{
	struct offcpu_key key = {};
	struct thread_totals *b;
	void *tot, *hst;
	__u64 start;

	if (!rec)
		return 0;
	b = &rec->banks[buf & 1];
	if (!b->slot_start)
		return 0;
	start = __sync_lock_test_and_set(&b->slot_start, 0);
	if (!start)
		return 0;
	dst &= 1;
	tot = bpf_map_lookup_elem(&totals, &dst);
	hst = bpf_map_lookup_elem(&hists, &dst);
	if (!tot || !hst) {
		count(OFFCPU_CNT_BUFFER_MISSING);
		return 0;
	}
	key.slot = b->slot;
	key.tgid = rec->tgid;
	key.pid = rec->pid;
	for (__u32 part = 0; part < 2; part++) {
		for (__u32 st = 0; st < OFFCPU_STATE_COUNT; st++) {
			struct thread_total_cell *c = &b->cells[part][st];

			if (!c->count)
				continue;
			key.state = st;
			key.kind = part ? OFFCPU_KIND_RUNQ : b->kind;
			total_merge(tot, &key, c, rec->comm);
			c->sum_ns = c->short_ns = 0;
			c->count = c->samples = 0;
		}
	}
	for (__u32 type = 0; type < 2; type++) {
		for (__u32 bucket = 0; bucket < OFFCPU_HIST_BUCKETS; bucket++) {
			__u32 n = b->hist[type][bucket];

			if (!n)
				continue;
			hist_merge(hst, key.slot, key.tgid, type, bucket, n);
			b->hist[type][bucket] = 0;
		}
	}
	return 0;
}

static __always_inline void bank_cell_add(struct thread_total_cell *c, __u64 ns, bool is_short,
					  bool taken)
{
	c->sum_ns += ns;
	c->count++;
	if (is_short)
		c->short_ns += ns;
	c->samples += taken;
}

/*
 * total_add() into rec's bank of buffer buf: the thread's own memory, no
 * map. A bank that holds another slot's counts (an earlier slot in this
 * index, or a lower sampled slot that came since) is flushed first.
 */
static __always_inline void bank_add(struct start_rec *rec, __u32 i, __u32 buf, bool taken)
{
	struct thread_totals *b = &rec->banks[buf & 1];
	struct offcpu_slot *s = &slots[i & (OFFCPU_MAX_SLOTS - 1)];
	__u32 st = rec->state & (OFFCPU_STATE_COUNT - 1);
	struct block_part p;
	bool is_short;

	block_part_of(rec, 1u << (i & (OFFCPU_MAX_SLOTS - 1)), &p);
	is_short = p.delta < s->sample_period_ns;

	if (b->slot_start != s->start_ns || b->slot != i) {
		bank_flush(rec, buf, buf);
		b->slot = i;
		b->kind = s->kind;
		b->slot_start = s->start_ns;
	}
	if (b->kind == OFFCPU_KIND_OFFCPU && (split_runq_slots & (1u << i))) {
		if (p.blocked)
			bank_cell_add(&b->cells[0][st], p.blocked, is_short, taken);
		if (p.runq) /* one sample per block */
			bank_cell_add(&b->cells[1][st], p.runq, is_short, taken && !p.blocked);
	} else {
		bank_cell_add(&b->cells[0][st], part_value(&p, b->kind), is_short, taken);
	}
	if (hist_slots & (1u << i)) {
		b->hist[OFFCPU_HIST_OFFCPU][log2_bucket(rec->delta) & (OFFCPU_HIST_BUCKETS - 1)]++;
		if (rec->runq) /* as slot_hist_add() */
			b->hist[OFFCPU_HIST_RUNQ][log2_bucket(rec->runq) & (OFFCPU_HIST_BUCKETS - 1)]++;
	}
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

/*
 * The callback of a deferred walk, in the sampled thread's context on its
 * way back to user mode: its user registers and stack are those of the
 * block. (Task work callbacks may sleep; nothing here does.)
 */
static int deferred_walk_cb(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct start_rec *rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	__u32 tgid = t->tgid;

	if (rec && rec->walk_pending)
		sample_finish(rec, t, OFFCPU_CNT_WALK_DEFERRED);
	else if (unwind_dwarf)
		unwind_proc_current(tgid); /* asked for by switch_out() */
	bpf_map_delete_elem(&deferred_walks, key);
	return 0;
}

/* Schedules deferred_walk_cb for next, unless one is scheduled already
 * (it will find rec's pending walk). Returns false if it cannot be. */
static __always_inline bool walk_defer(struct task_struct *next, __u32 pid)
{
	struct deferred_walk *w;
	__u64 zero = 0, t0;
	long err;

	if (!defer_walks || !bpf_task_work_schedule_resume_impl) /* a __weak kfunc: 0 if missing */
		return false;
	if (bpf_map_update_elem(&deferred_walks, &pid, &zero, BPF_NOEXIST))
		return bpf_map_lookup_elem(&deferred_walks, &pid) != NULL;
	w = bpf_map_lookup_elem(&deferred_walks, &pid);
	if (w) {
		/* Timed: its self-IPI is what a VM makes dear (status shows it),
		 * and two clock reads are little beside it. */
		t0 = bpf_ktime_get_ns();
		err = bpf_task_work_schedule_resume_impl(next, &w->tw, &deferred_walks,
							 deferred_walk_cb, NULL);
		count_add(OFFCPU_CNT_TASK_WORK_NS, bpf_ktime_get_ns() - t0);
		if (!err) {
			count(OFFCPU_CNT_TASK_WORKS);
			return true;
		}
	}
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
	bool published;

	rec->kstack.nr = 0;
	rec->kstack.flags = 0;
	rec->ustack.nr = 0;
	rec->ustack.flags = 0;
	if (need & kernel_stack_slots)
		task_kernel_stack(next, &rec->kstack, NULL);
	mm = next->mm;
	if (!(need & user_stack_slots) || !mm || (next->flags & PF_KTHREAD)) {
		sample_account(rec, need);
		return;
	}
	/* A process not published yet is walked from the task work, where its
	 * mappings can be read from its VMAs. */
	published = !unwind_dwarf || bpf_map_lookup_elem(&unwind_procs, &rec->tgid);
	if (mm == prev->mm && published) {
		walk_task_user_stack(next, rec->tgid, &rec->ustack, false);
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
	if (rseq_walks && bpf_core_field_exists(next->rseq) && next->rseq) {
		__u32 zero = 0, *tid = bpf_map_lookup_elem(&rseq_walk_tid, &zero);

		if (tid) {
			*tid = rec->pid;
			return;
		}
	}
	if (!walk_defer(next, rec->pid)) {
		rec->walk_pending = 0;
		count(OFFCPU_CNT_DEFER_LOST);
	}
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

/*
 * A thread with rseq registered on its way back to user mode after a switch
 * (__rseq_handle_notify_resume()): the deferred walk of the thread switched
 * in last on this CPU, if that is this one.
 */
SEC("tp_btf/rseq_update")
int BPF_PROG(walk_at_rseq, struct task_struct *t)
{
	__u32 zero = 0, *tid = bpf_map_lookup_elem(&rseq_walk_tid, &zero);
	struct start_rec *rec;

	if (!tid || *tid != t->pid)
		return 0;
	*tid = 0;
	rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	if (rec && rec->walk_pending)
		sample_finish(rec, t, OFFCPU_CNT_WALK_AT_RSEQ);
	return 0;
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
 * The drain's flush of every thread's banks of the buffer it drains (the
 * one not written since its epoch flip): run by user space through an
 * iterator link after the flip, before it reads the totals and hists maps.
 */
SEC("iter/task")
int flush_thread_totals(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct start_rec *rec;
	__u32 old = (epoch & 1) ^ 1;

	if (!t)
		return 0;
	rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	if (rec)
		bank_flush(rec, old, old);
	return 0;
}

/* Moves t's banks, each into its own buffer, where its rows are too. */
static __always_inline void task_banks_flush(struct task_struct *t)
{
	struct start_rec *rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	__u32 cur = epoch & 1;

	if (rec) {
		bank_flush(rec, cur, cur);
		bank_flush(rec, cur ^ 1, cur ^ 1);
	}
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
