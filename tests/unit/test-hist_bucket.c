/*
 * Unit test of bpf/hist_bucket.h, the code the BPF programs run: its bucket
 * of a time, found without a division, is log2 of the whole microseconds,
 * as the division gives it, at every bucket's edges and between them.
 */
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/cdefs.h>

#include "check.h"

#include "../../bpf/hist_bucket.h"

/* The definition: floor(log2(ns / 1000)), 0 below 2 us, capped. */
static uint32_t bucket_by_division(uint64_t ns)
{
	uint64_t us = ns / 1000;
	uint32_t b = 0;

	while (us >> (b + 1))
		b++;
	return b < OFFCPU_HIST_BUCKETS - 1 ? b : OFFCPU_HIST_BUCKETS - 1;
}

static bool same_bucket(uint64_t ns)
{
	return log2_bucket(ns) == bucket_by_division(ns);
}

int main(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	CHECK(log2_floor(0) == 0 && log2_floor(1) == 0 && log2_floor(1023) == 9 &&
	      log2_floor(1024) == 10 && log2_floor(UINT64_MAX) == 63);
	CHECK(log2_bucket(0) == 0 && log2_bucket(1999) == 0 && log2_bucket(2000) == 1 &&
	      log2_bucket(3999) == 1 && log2_bucket(4000) == 2 &&
	      log2_bucket(UINT64_MAX) == OFFCPU_HIST_BUCKETS - 1);
	/* Every edge of a bucket (1000 * 2^k ns) and of a power of two, and
	 * their neighbours, up to the largest time. */
	for (unsigned k = 0; k < 64; k++) {
		uint64_t edges[2] = { k < 54 ? 1000ull << k : 0, 1ull << k };

		for (unsigned e = 0; e < 2; e++)
			for (int d = -2; d <= 2; d++)
				CHECK(same_bucket(edges[e] + (uint64_t)(int64_t)d));
	}
	/* Random times of every magnitude. */
	for (unsigned i = 0; i < 1000000; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		CHECK(same_bucket((x * 0x2545f4914f6cdd1dull) >> (i % 64)));
	}
	return check_failures ? 1 : 0;
}
