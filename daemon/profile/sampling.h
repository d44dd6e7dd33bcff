/*
 * sampling: makes a window's rows of a sampled slot out of the kernel's
 * samples and exact totals (bpf/sampling.h). A block as long as the period
 * is always sampled, at its true length; the samples of shorter blocks of
 * one (slot, thread, state, kind) are scaled to that group's exact time in
 * short blocks, which the kernel keeps for every block. Totals per thread
 * and state are exact, long blocks' stacks are exact, and only how a
 * thread's short blocks divide among its stacks is estimated. Time of a
 * group that no sample stands for (short blocks none of which was sampled,
 * long blocks whose samples were lost) becomes one row without stacks
 * (OFFCPU_KEY_UNSAMPLED); where a group had no sample at all in a drain,
 * its time is first carried to the next drains of its window or capture,
 * whose samples of it then stand for it too (struct sampling_carry).
 * Called by drain_run() on the worker thread. Does not log.
 */
#ifndef SAMPLING_H
#define SAMPLING_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"

/* What one drain saw of one sampled slot. */
struct sampling_summary {
	uint64_t blocks;    /* blocks counted (rows' counts: a block split into blocked
			       and run-queue time counts in each) */
	uint64_t samples;   /* blocks whose stacks were taken */
	uint64_t sum_ns;    /* exact off-CPU time */
	uint64_t short_ns;  /* of it, in blocks shorter than the period: estimated */
	uint64_t late_rows; /* samples whose block's totals an earlier drain took */
	/* Of sum_ns, what no sample stood for: the [unsampled] rows' time. A
	 * drain's own, or added at the end of its window or capture for the
	 * time carried there (sampling_carry_take()'s caller). */
	uint64_t unsampled_ns;
};

/*
 * The time of groups (a row's key without stacks) that no sample has stood
 * for yet, carried from drain to drain. A drain often takes none of a
 * thread's few short blocks at the start or the end of its activity, where
 * the next drain takes some: scaled over both drains, those samples stand
 * for all of it, and only a group with no sample in its whole window or
 * capture keeps an unsampled row. Zero-filled is empty. Not thread-safe:
 * the drain worker and the loop take turns.
 */
struct sampling_carry {
	struct collector_total *groups;
	size_t n, cap;
};

/*
 * Scales the OFFCPU_KEY_SAMPLED rows of *rows to totals, drops those no total
 * stands for (late: their block was counted by an earlier drain) and appends
 * a row for each total no sample stands for. With carry (may be NULL), the
 * carried groups join this drain's, and a group with no sample here is
 * carried on instead of getting its row. *rows may be reallocated.
 * Adds each slot's summary to ret (indexed by slot). Returns 0 or -ENOMEM
 * (rows and carry then unchanged).
 */
int sampling_calibrate(struct collector_row **rows, size_t *n_rows,
		       const struct collector_total *totals, size_t n_totals,
		       struct sampling_carry *carry, struct sampling_summary ret[OFFCPU_MAX_SLOTS]);

/*
 * Takes the carried groups of the slots in the mask slots out of carry, at
 * the end of their window or capture: calls row(arg, r) with each one's
 * unsampled row (the row is the callee's to copy; its time is not in any
 * summary's unsampled_ns yet), or drops them where row is NULL. Returns how
 * many were taken.
 */
size_t sampling_carry_take(struct sampling_carry *carry, uint32_t slots,
			   void (*row)(void *arg, const struct collector_row *r), void *arg);

void sampling_carry_release(struct sampling_carry *carry);

/* Adds b to a. */
void sampling_summary_add(struct sampling_summary *a, const struct sampling_summary *b);

/* Of s's time, the % no sample stood for; 0 if it has none. */
double sampling_unsampled_pct(const struct sampling_summary *s);

/*
 * The relative standard error of the estimated total of a stack that holds
 * share (0..1] of short_ns, the time of blocks shorter than period_ns: each
 * such block weighs at least period_ns, so the variance is at most
 * period_ns * share * short_ns. 0 if nothing was estimated.
 */
double sampling_relative_error(uint64_t period_ns, uint64_t short_ns, double share);

#endif
