/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sampling stacks in proportion to time, shared by the BPF programs and the
 * unit test of the estimator (tests/unit/test-sampling.c).
 *
 * A block of d ns is given its stacks with probability min(1, d/T), where T
 * is the slot's sample period, and then weighs max(d, T): a block of T or
 * more is always taken at its true length, a shorter one stands for T. Each
 * stack's expected total is its true total (Horvitz-Thompson), the variance
 * of a stack's total is the sum of d(T - d) over its blocks shorter than T,
 * so at most T times their time: a stack holding X ns of short blocks is
 * estimated within a relative standard error of sqrt(T / X).
 */
#ifndef OFFCPU_SAMPLING_H
#define OFFCPU_SAMPLING_H

/* Whether a block of d ns is sampled, given a uniform 32-bit random number:
 * rand / 2^32 < d / T, multiplied out (a division costs every block). T is
 * at most OFFCPU_MAX_SAMPLE_PERIOD_NS (< 2^30), so neither side overflows. */
static __always_inline bool sample_take(__u64 d, __u64 period_ns, __u32 rand)
{
	if (!period_ns || d >= period_ns)
		return true;
	return (__u64)rand * period_ns < d << 32;
}

/* What a part (value <= d) of a sampled block adds to its stack's total. */
static __always_inline __u64 sample_weight(__u64 value, __u64 d, __u64 period_ns)
{
	if (!period_ns || d >= period_ns || !d)
		return value;
	return value * period_ns / d;
}

#endif
