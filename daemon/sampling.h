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
 * (OFFCPU_KEY_UNSAMPLED). Called by drain_run() on the worker
 * thread. Does not log.
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
};

/*
 * Scales the OFFCPU_KEY_SAMPLED rows of *rows to totals, drops those no total
 * stands for (late: their block was counted by an earlier drain) and appends
 * a row for each total no sample stands for. *rows may be reallocated.
 * Adds each slot's summary to ret (indexed by slot). Returns 0 or -ENOMEM
 * (rows then unchanged).
 */
int sampling_calibrate(struct collector_row **rows, size_t *n_rows,
		       const struct collector_total *totals, size_t n_totals,
		       struct sampling_summary ret[OFFCPU_MAX_SLOTS]);

/* Adds b to a. */
void sampling_summary_add(struct sampling_summary *a, const struct sampling_summary *b);

/*
 * The relative standard error of the estimated total of a stack that holds
 * share (0..1] of short_ns, the time of blocks shorter than period_ns: each
 * such block weighs at least period_ns, so the variance is at most
 * period_ns * share * short_ns. 0 if nothing was estimated.
 */
double sampling_relative_error(uint64_t period_ns, uint64_t short_ns, double share);

#endif
