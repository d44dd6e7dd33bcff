/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sampled slots' exact totals (banks.bpf.c), and what of a block each slot
 * counts, which block_end() and slot_account() (sched.bpf.c) share with
 * them. A sampled slot counts every block its filters pass, its stacks
 * taken or not, keyed as its rows are but without stacks: in the per-CPU
 * totals map (total_add()) or, where start records are task storage, in
 * the thread's banks (struct thread_totals, offcpu.bpf.h), which
 * bank_flush() moves into that map: at each drain (flush_thread_totals),
 * at the thread's exit and free (sched.bpf.c), and when a bank is wanted
 * for another slot. bank_add() and task_banks_flush() are inline, for
 * block_end() and the exit hooks.
 */
#ifndef OFFCPU_BANKS_BPF_H
#define OFFCPU_BANKS_BPF_H

#include "offcpu.bpf.h"

/* Set by the loader where start records are task storage (tp_btf): the first
 * sampled slot a block counts in keeps its totals in the thread's banks. */
extern const volatile bool thread_banks;

/* Adds one block to a sampled slot's exact totals and histograms, in the
 * per-CPU maps of the buffer being written. */
int total_add(struct start_rec *rec, __u32 slot, __u32 taken);

/* Moves bank buf of rec into the totals and hists maps of buffer dst. */
int bank_flush(struct start_rec *rec, __u32 buf, __u32 dst);

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
 * index, or a lower sampled slot that came since), or another cgroup's
 * (the thread moved), is flushed first.
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

	if (b->slot_start != s->start_ns || b->slot != i || b->cgroup != rec->cgroup) {
		bank_flush(rec, buf, buf);
		b->slot = i;
		b->kind = s->kind;
		b->cgroup = rec->cgroup;
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

#endif
