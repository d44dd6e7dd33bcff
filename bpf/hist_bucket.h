/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The histograms' bucket of a time, shared by the BPF programs and its unit
 * test (tests/unit/test-hist_bucket.c): log2 of the microseconds.
 */
#ifndef OFFCPU_HIST_BUCKET_H
#define OFFCPU_HIST_BUCKET_H

#include "offcpu.h"

/* The highest bit set in x (0 for 0), found by halving the width searched. */
static __always_inline __u32 log2_floor(__u64 x)
{
	__u32 b = 0;

	if (x >> 32) {
		x >>= 32;
		b += 32;
	}
	if (x >> 16) {
		x >>= 16;
		b += 16;
	}
	if (x >> 8) {
		x >>= 8;
		b += 8;
	}
	if (x >> 4) {
		x >>= 4;
		b += 4;
	}
	if (x >> 2) {
		x >>= 2;
		b += 2;
	}
	if (x >> 1)
		b += 1;
	return b;
}

/*
 * log2 of the microseconds (0 for 0 and 1), capped to the last bucket,
 * without a division (it runs for every block): with l = log2(ns), ns / 1000
 * lies in [2^(l-10), 2^(l-8)), so its log2 is l - 10, or l - 9 where
 * ns >= 1000 * 2^(l-9).
 */
static __always_inline __u32 log2_bucket(__u64 ns)
{
	__u32 l, b;

	if (ns < 2000)
		return 0;
	l = log2_floor(ns); /* >= 10 */
	b = l - 10 + (ns >= 1000ull << (l - 9));
	return b < OFFCPU_HIST_BUCKETS - 1 ? b : OFFCPU_HIST_BUCKETS - 1;
}

#endif
