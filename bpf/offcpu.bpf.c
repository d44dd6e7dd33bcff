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
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "offcpu.h"

#define TASK_INTERRUPTIBLE   0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_NOLOAD	     0x0400
#define PF_KTHREAD	     0x00200000

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
__u32 epoch;			       /* its low bit selects the buffer being written */

struct start_rec {
	__u64 ts;
	__u32 slots; /* matched at switch-out; 0 once consumed */
	__u32 state;
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

/* Slots whose task and state filters accept this thread. */
static __always_inline __u32 match_slots(__u32 tgid, __u32 pid, __u32 state)
{
	__u32 matched = active_mask & state_slots[state & (OFFCPU_STATE_COUNT - 1)];
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

	if (n < 0) {
		count(err_counter);
		n = 0;
	}
	st->nr = n / sizeof(__u64);
}

static __always_inline void switch_out(void *ctx, bool preempt, struct task_struct *prev, bool btf)
{
	__u32 pid, tgid, state, matched;
	struct start_rec *rec;

	pid = btf ? prev->pid : BPF_CORE_READ(prev, pid);
	if (!pid)
		return; /* the idle task */
	tgid = btf ? prev->tgid : BPF_CORE_READ(prev, tgid);
	if (self_tgid && tgid == self_tgid)
		return;
	state = state_class(preempt, task_state(prev));
	matched = match_slots(tgid, pid, state);
	if (!matched)
		return;

	rec = start_get(prev, pid, btf, true);
	if (!rec) {
		count(OFFCPU_CNT_DROP_START_ALLOC);
		return;
	}
	rec->kstack.nr = 0;
	rec->ustack.nr = 0;
	if (matched & kernel_stack_slots)
		walk_stack(ctx, &rec->kstack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
	if ((matched & user_stack_slots) &&
	    !((btf ? prev->flags : BPF_CORE_READ(prev, flags)) & PF_KTHREAD))
		walk_stack(ctx, &rec->ustack, BPF_F_USER_STACK, OFFCPU_CNT_DROP_USTACK_ERROR);
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
	h = 0xcbf29ce484222325ULL ^ st->nr;

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

static __always_inline void aggregate(void *agg_map, struct offcpu_key *key, __u64 delta,
				      struct task_struct *t)
{
	struct offcpu_value *v, init = {};

	v = bpf_map_lookup_elem(agg_map, key);
	if (!v) {
		bpf_probe_read_kernel(init.comm, sizeof(init.comm), t->comm);
		init.sum_ns = delta;
		init.count = 1;
		if (!bpf_map_update_elem(agg_map, key, &init, BPF_NOEXIST))
			goto recorded;
		v = bpf_map_lookup_elem(agg_map, key); /* lost a race to another CPU */
		if (!v) {
			count(OFFCPU_CNT_DROP_AGG_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->sum_ns, delta);
	__sync_fetch_and_add(&v->count, 1);
recorded:
	count(OFFCPU_CNT_RECORDED);
}

static __always_inline void switch_in(struct task_struct *next, bool btf)
{
	__u32 pid, buf, matched;
	__u64 delta, khash = 0, uhash = 0;
	void *agg_map = NULL, *stack_map;
	struct start_rec *rec;
	struct offcpu_key key;

	if (!active_mask)
		return; /* any start record left would not count anyway */
	pid = btf ? next->pid : BPF_CORE_READ(next, pid);
	if (!pid)
		return;
	rec = start_get(next, pid, btf, false);
	if (!rec || !rec->slots)
		return;
	matched = rec->slots & active_mask;
	rec->slots = 0; /* consumed: a record counts once */
	delta = bpf_ktime_get_ns() - rec->ts;
	if ((__s64)delta < 0) {
		count(OFFCPU_CNT_DROP_NEGATIVE_DELTA);
		return;
	}

	key.tgid = btf ? next->tgid : BPF_CORE_READ(next, tgid);
	key.pid = pid;
	key.state = rec->state;
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct offcpu_slot *s = &slots[i];

		if (!(matched & (1u << i)) || rec->ts < s->start_ns || delta < s->min_block_ns ||
		    (s->max_block_ns && delta > s->max_block_ns))
			continue;
		if (!agg_map) { /* first slot that keeps this block: intern its stacks */
			buf = epoch & 1;
			agg_map = bpf_map_lookup_elem(&aggs, &buf);
			stack_map = bpf_map_lookup_elem(&stacks, &buf);
			if (!agg_map || !stack_map) {
				count(OFFCPU_CNT_BUFFER_MISSING);
				return;
			}
			khash = intern_stack(stack_map, &rec->kstack);
			uhash = intern_stack(stack_map, &rec->ustack);
		}
		key.slot = i;
		key.kstack = (kernel_stack_slots & (1u << i)) ? khash : 0;
		key.ustack = (user_stack_slots & (1u << i)) ? uhash : 0;
		aggregate(agg_map, &key, delta, next);
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	count(OFFCPU_CNT_SWITCHES);
	switch_out(ctx, preempt, prev, true);
	switch_in(next, true);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	count(OFFCPU_CNT_SWITCHES);
	switch_out(ctx, preempt, prev, false);
	switch_in(next, false);
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
