// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Sampled slots' exact totals (banks.bpf.h): total_add() into the per-CPU
 * totals and hists maps, the thread banks' flush into them, and the task
 * iterator through which the drain flushes every thread's banks.
 */
#include "banks.bpf.h"

const volatile bool thread_banks = false; /* set by the loader */

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
	key.cgroup = rec->cgroup;
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
	key.cgroup = b->cgroup;
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
