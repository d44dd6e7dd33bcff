/*
 * Unit test of the stack sampling estimator: bpf/sampling.h's decision and
 * weight (the code the BPF programs run) on synthetic block streams, and
 * daemon/profile/sampling.c's scaling of samples to exact totals.
 */
#include <linux/types.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/cdefs.h>

#include "check.h"
#include "sampling.h"

#include "../../bpf/sampling.h"

#define T_NS 1000000ull /* 1 ms */

/* xorshift64*: the test's own deterministic random numbers. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng32(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

/* A stack's stream of blocks: n blocks of d_ns each. */
struct stream {
	uint64_t n, d_ns;
};

/* One estimate of a stream's total, as the kernel would make it. */
static double estimate(const struct stream *s)
{
	double sum = 0;

	for (uint64_t i = 0; i < s->n; i++)
		if (sample_take(s->d_ns, T_NS, rng32()))
			sum += sample_weight(s->d_ns, s->d_ns, T_NS);
	return sum;
}

/* Over many trials: the mean converges to the true total, and the spread is
 * the stated sqrt(sum of d(T - d)) over blocks shorter than T. */
static void test_estimator(void)
{
	const struct stream streams[] = {
		{ 20000, 5000 },   /* a ping-pong's 5 us blocks: 100 ms in all */
		{ 2000, 200000 },  /* 200 us lock waits: 400 ms */
		{ 100, 10000000 }, /* 10 ms sleeps: always taken, exact */
		{ 50000, 1000 },   /* 1 us blocks: 50 ms */
	};
	const int trials = 400;

	for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++) {
		const struct stream *s = &streams[i];
		double truth = (double)s->n * s->d_ns, mean = 0, var = 0, want_sd, sd;
		double x[trials];

		for (int t = 0; t < trials; t++) {
			x[t] = estimate(s);
			mean += x[t] / trials;
		}
		for (int t = 0; t < trials; t++)
			var += (x[t] - mean) * (x[t] - mean) / (trials - 1);
		sd = sqrt(var);
		want_sd = s->d_ns >= T_NS ? 0 : sqrt((double)s->n * s->d_ns * (T_NS - s->d_ns));
		/* The mean of 400 trials is within 4 standard errors of the truth. */
		CHECK_MSG(fabs(mean - truth) <= 4 * want_sd / sqrt(trials) + 1e-9 * truth,
			  "stream %zu: mean %.0f, truth %.0f", i, mean, truth);
		/* The spread is the formula's, within the sampling error of an sd
		 * from 400 trials (about 3.5 %; 15 % leaves room). */
		CHECK_MSG(want_sd ? fabs(sd / want_sd - 1) < 0.15 : sd == 0,
			  "stream %zu: sd %.0f, formula %.0f", i, sd, want_sd);
		/* And the formula is the one status states: sqrt(T / X) at most. */
		CHECK(want_sd <= truth * sampling_relative_error(T_NS, truth, 1.0) + 1e-6);
	}
	/* Blocks of T or more always count, at their own length. */
	CHECK(sample_take(T_NS, T_NS, UINT32_MAX) && sample_weight(123, T_NS, T_NS) == 123);
	CHECK(!sample_take(1, T_NS, UINT32_MAX) && sample_take(1, T_NS, 0));
	CHECK(sample_weight(300, 500, T_NS) == 600000); /* a part of a 500 ns block */
	CHECK(sample_take(5, 0, UINT32_MAX) && sample_weight(5, 5, 0) == 5); /* exact slots */
}

static struct collector_row row(uint32_t pid, uint32_t kind, uint64_t ustack, uint64_t ns,
				uint64_t count, uint32_t flags)
{
	struct collector_row r = { .key = { .slot = 0,
					    .tgid = 10,
					    .pid = pid,
					    .state = 1,
					    .kind = kind,
					    .flags = flags,
					    .ustack = ustack },
				   .value = { .sum_ns = ns, .count = count } };

	if (flags & OFFCPU_KEY_SAMPLED) /* samples of short blocks, unless changed */
		r.value.short_ns = ns;

	snprintf(r.value.comm, sizeof(r.value.comm), "t%u", pid);
	return r;
}

static struct collector_total total(uint32_t pid, uint32_t kind, uint64_t ns, uint64_t count,
				    uint64_t short_ns, uint64_t samples)
{
	struct collector_total t = {
		.key = { .slot = 0, .tgid = 10, .pid = pid, .state = 1, .kind = kind },
		.total = { .sum_ns = ns, .count = count, .short_ns = short_ns, .samples = samples }
	};

	snprintf(t.total.comm, sizeof(t.total.comm), "t%u", pid);
	return t;
}

static const struct collector_row *find(const struct collector_row *r, size_t n, uint32_t pid,
					uint64_t ustack, uint32_t flags)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].key.pid == pid && r[i].key.ustack == ustack && r[i].key.flags == flags)
			return &r[i];
	return NULL;
}

/* Samples are scaled to their thread's exact total; time no sample stands
 * for gets an unsampled row; late samples go; exact rows stay as they are. */
static void test_calibrate(void)
{
	struct collector_row *rows = malloc(5 * sizeof(*rows));
	struct collector_total totals[] = {
		total(1, 0, 1000000, 300, 1000000, 3), /* thread 1: three samples */
		total(2, 0, 7777, 9, 7777, 0),	       /* thread 2: no sample */
	};
	struct sampling_summary sum[OFFCPU_MAX_SLOTS] = { { 0 } };
	const struct collector_row *r;
	size_t n = 5;
	uint64_t t1 = 0;

	rows[0] = row(1, 0, 0xa, 2000000, 2, OFFCPU_KEY_SAMPLED); /* two samples of stack a */
	rows[1] = row(1, 0, 0xb, 1000000, 1, OFFCPU_KEY_SAMPLED); /* one of b */
	rows[2] = row(3, 0, 0xc, 5000, 1, OFFCPU_KEY_SAMPLED);	  /* late: its total is gone */
	rows[3] = row(4, 0, 0xd, 4242, 7, 0);			  /* an exact slot's row */
	rows[4] = row(1, 4, 0xa, 999, 1, 0);			  /* another kind, exact */
	CHECK(sampling_calibrate(&rows, &n, totals, 2, NULL, sum) == 0);
	CHECK(n == 5); /* one dropped, one added */
	r = find(rows, n, 1, 0xa, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->value.sum_ns == 666667 && r->value.count == 200);
	t1 += r ? r->value.sum_ns : 0;
	r = find(rows, n, 1, 0xb, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->value.sum_ns == 333333 && r->value.count == 100);
	t1 += r ? r->value.sum_ns : 0;
	CHECK(t1 == 1000000); /* the thread's total is exact */
	CHECK(!find(rows, n, 3, 0xc, OFFCPU_KEY_SAMPLED));
	r = find(rows, n, 4, 0xd, 0);
	CHECK(r && r->value.sum_ns == 4242 && r->value.count == 7);
	r = find(rows, n, 1, 0xa, 0);
	CHECK(r && r->key.kind == 4 && r->value.sum_ns == 999);
	r = find(rows, n, 2, 0, OFFCPU_KEY_UNSAMPLED);
	CHECK(r && r->value.sum_ns == 7777 && r->value.count == 9 && !strcmp(r->value.comm, "t2"));
	CHECK(sum[0].blocks == 309 && sum[0].samples == 3 && sum[0].sum_ns == 1007777 &&
	      sum[0].short_ns == 1007777 && sum[0].late_rows == 1 && sum[0].unsampled_ns == 7777);
	CHECK(fabs(sampling_unsampled_pct(&sum[0]) - 100.0 * 7777 / 1007777) < 1e-9);
	free(rows);
}

/* Long blocks keep their true length: only the short samples are scaled,
 * to the short time; long time whose sample was lost, or short time no
 * sample stands for, is unsampled. */
static void test_calibrate_long_blocks(void)
{
	struct collector_row *rows = malloc(4 * sizeof(*rows));
	struct collector_total totals[] = {
		/* thread 1: a 50 ms block (stack w) and 10 ms of short ones (stack s) */
		total(1, 0, 60000000, 11, 10000000, 2),
		/* thread 2: 80 ms in long blocks, of which 30 ms lost their samples */
		total(2, 0, 80000000, 2, 0, 2),
	};
	struct sampling_summary sum[OFFCPU_MAX_SLOTS] = { { 0 } };
	const struct collector_row *r;
	size_t n = 3;

	rows[0] = row(1, 0, 0xa, 50000000, 1, OFFCPU_KEY_SAMPLED);
	rows[0].value.short_ns = 0;
	/* one sample of T = 20 ms stands for the 10 ms of short blocks */
	rows[1] = row(1, 0, 0xb, 20000000, 1, OFFCPU_KEY_SAMPLED);
	rows[2] = row(2, 0, 0xa, 50000000, 1, OFFCPU_KEY_SAMPLED);
	rows[2].value.short_ns = 0;
	CHECK(sampling_calibrate(&rows, &n, totals, 2, NULL, sum) == 0);
	CHECK(n == 4);
	r = find(rows, n, 1, 0xa, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->value.sum_ns == 50000000); /* not scaled by the short samples' luck */
	r = find(rows, n, 1, 0xb, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->value.sum_ns == 10000000);
	CHECK(!find(rows, n, 1, 0, OFFCPU_KEY_UNSAMPLED));
	r = find(rows, n, 2, 0xa, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->value.sum_ns == 50000000);
	r = find(rows, n, 2, 0, OFFCPU_KEY_UNSAMPLED);
	CHECK(r && r->value.sum_ns == 30000000);
	free(rows);
}

static void collect(void *arg, const struct collector_row *r)
{
	struct collector_row *taken = arg;

	CHECK(taken->key.pid == 0); /* called once */
	*taken = *r;
}

/* A group with no sample in a drain is carried to the next drains, whose
 * samples then stand for it too (short blocks, and a long block whose
 * deferred sample came a drain late); what no sample stood for when its
 * window ends is taken out as its unsampled row. */
static void test_calibrate_carry(void)
{
	struct sampling_carry carry = { 0 };
	struct sampling_summary sum[OFFCPU_MAX_SLOTS] = { { 0 } };
	struct collector_total totals[2];
	struct collector_row *rows = malloc(sizeof(*rows)), taken = { 0 };
	const struct collector_row *r;
	size_t n = 0;

	/* Drain 1: 9 short blocks of thread 2, none sampled; a 50 ms block of
	 * thread 6 whose sample is still pending. No row: both are carried. */
	totals[0] = total(2, 0, 7777, 9, 7777, 0);
	totals[1] = total(6, 0, 50000000, 1, 0, 0);
	CHECK(sampling_calibrate(&rows, &n, totals, 2, &carry, sum) == 0);
	CHECK(n == 0 && carry.n == 2);
	CHECK(sum[0].blocks == 10 && sum[0].sum_ns == 50007777 && sum[0].unsampled_ns == 0);

	/* Drain 2: one more short block of thread 2, sampled (weight T = 1 ms),
	 * and thread 6's late sample: each stands for its whole group. */
	totals[0] = total(2, 0, 2223, 1, 2223, 1);
	free(rows);
	rows = malloc(2 * sizeof(*rows));
	rows[0] = row(2, 0, 0xe, 1000000, 1, OFFCPU_KEY_SAMPLED);
	rows[1] = row(6, 0, 0xf, 50000000, 1, OFFCPU_KEY_SAMPLED);
	rows[1].value.short_ns = 0;
	n = 2;
	CHECK(sampling_calibrate(&rows, &n, totals, 1, &carry, sum) == 0);
	CHECK(n == 2 && carry.n == 0);
	r = find(rows, n, 2, 0xe, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->value.sum_ns == 10000 && r->value.count == 10);
	r = find(rows, n, 6, 0xf, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->value.sum_ns == 50000000 && r->value.count == 1);
	CHECK(sum[0].late_rows == 0 && sum[0].unsampled_ns == 0);

	/* Drain 3: thread 5 unsampled, carried; its window ends: one row. */
	totals[0] = total(5, 0, 4444, 3, 4444, 0);
	n = 0;
	CHECK(sampling_calibrate(&rows, &n, totals, 1, &carry, sum) == 0);
	CHECK(n == 0 && carry.n == 1);
	CHECK(sampling_carry_take(&carry, 1u << 1, collect, &taken) == 0); /* another slot's end */
	CHECK(carry.n == 1);
	CHECK(sampling_carry_take(&carry, 1u << 0, collect, &taken) == 1 && carry.n == 0);
	CHECK(taken.key.pid == 5 && taken.key.flags == OFFCPU_KEY_UNSAMPLED && taken.key.ustack == 0);
	CHECK(taken.value.sum_ns == 4444 && taken.value.count == 3 && !strcmp(taken.value.comm, "t5"));
	sampling_carry_release(&carry);
	free(rows);
}

/* A thread that moved to another cgroup has a total in each, as its rows
 * are keyed: samples in one never stand for time in the other. */
static void test_calibrate_cgroups(void)
{
	struct collector_row *rows = malloc(sizeof(*rows));
	struct collector_total totals[] = {
		total(1, 0, 1000000, 300, 1000000, 1),
		total(1, 0, 4000, 2, 4000, 0),
	};
	struct sampling_summary sum[OFFCPU_MAX_SLOTS] = { { 0 } };
	const struct collector_row *r;
	size_t n = 1;

	totals[0].key.cgroup = 100;
	totals[1].key.cgroup = 200;
	rows[0] = row(1, 0, 0xa, 1000000, 1, OFFCPU_KEY_SAMPLED);
	rows[0].key.cgroup = 100;
	CHECK(sampling_calibrate(&rows, &n, totals, 2, NULL, sum) == 0);
	CHECK(n == 2);
	r = find(rows, n, 1, 0xa, OFFCPU_KEY_SAMPLED);
	CHECK(r && r->key.cgroup == 100 && r->value.sum_ns == 1000000 && r->value.count == 300);
	r = find(rows, n, 1, 0, OFFCPU_KEY_UNSAMPLED);
	CHECK(r && r->key.cgroup == 200 && r->value.sum_ns == 4000 && r->value.count == 2);
	free(rows);
}

int main(void)
{
	test_estimator();
	test_calibrate();
	test_calibrate_long_blocks();
	test_calibrate_carry();
	test_calibrate_cgroups();
	return check_failures ? 1 : 0;
}
