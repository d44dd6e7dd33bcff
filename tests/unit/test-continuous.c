/*
 * Unit test of continuous: the always-on slots' filters per kind, the
 * request specs, from the config's settings.
 */
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "continuous.h"

static struct continuous_settings cfg_make(bool sampled)
{
	return (struct continuous_settings){
		.states = 0x5,
		.min_block_us = 7,
		.split_runq = true,
		.sampled = sampled,
		.sample_period_us = 250,
		.requests = "",
	};
}

static void test_filters(void)
{
	struct continuous_settings cfg = cfg_make(true);
	struct collector_filter f;

	continuous_filter(&cfg, OFFCPU_KIND_OFFCPU, false, &f);
	CHECK(f.kind == OFFCPU_KIND_OFFCPU && f.state_mask == 0x5 && f.min_block_ns == 7000);
	CHECK(f.user_stacks && f.kernel_stacks && f.hist && f.split_runq && !f.requests);
	CHECK(f.sample_period_ns == 250000 && f.chain_depth == 3);
	CHECK(!f.n_tgids && !f.n_tids && !f.max_block_ns); /* every process, every block */

	/* Run-queue rows are blocks by the blocked thread's stacks: sampled. */
	continuous_filter(&cfg, OFFCPU_KIND_RUNQ, false, &f);
	CHECK(f.sample_period_ns == 250000 && !f.hist && !f.split_runq);
	/* Wakeup rows are by the waker's stacks: none of the target's. */
	continuous_filter(&cfg, OFFCPU_KIND_WAKEUP, false, &f);
	CHECK(!f.user_stacks && !f.kernel_stacks && f.sample_period_ns == 0);
	for (unsigned kind = OFFCPU_KIND_OFFWAKE; kind < OFFCPU_KIND_COUNT; kind++) {
		continuous_filter(&cfg, kind, false, &f);
		CHECK_MSG(f.user_stacks && f.kernel_stacks && !f.hist, "kind %u", kind);
		CHECK_MSG(f.sample_period_ns == (kind == OFFCPU_KIND_RUNQ ? 250000u : 0u),
			  "kind %u", kind);
	}

	cfg = cfg_make(false);
	cfg.split_runq = false;
	continuous_filter(&cfg, OFFCPU_KIND_OFFCPU, false, &f);
	CHECK(f.sample_period_ns == 0 && !f.split_runq && f.hist);
}

/* Requests gate the blocks of off-CPU kinds, not on-CPU samples nor I/O. */
static void test_requests(void)
{
	struct continuous_settings cfg = cfg_make(true);
	struct collector_filter f;

	for (unsigned kind = 0; kind < OFFCPU_KIND_COUNT; kind++) {
		bool gated = kind != OFFCPU_KIND_ONCPU && kind != OFFCPU_KIND_BIO &&
			     kind != OFFCPU_KIND_FILEIO;

		continuous_filter(&cfg, kind, true, &f);
		CHECK_MSG(f.requests == gated, "kind %u", kind);
		continuous_filter(&cfg, kind, false, &f);
		CHECK_MSG(!f.requests, "kind %u", kind);
	}
}

static void test_specs(void)
{
	struct continuous_settings cfg = cfg_make(true);
	const char *specs[OFFCPU_MAX_REQUESTS];
	char buf[1024];
	size_t n;

	CHECK(continuous_specs(&cfg, buf, sizeof(buf), specs) == 0);
	cfg.requests = " handle@/usr/sbin/mysqld\tdo_command@/usr/sbin/mysqld  ";
	n = continuous_specs(&cfg, buf, sizeof(buf), specs);
	CHECK(n == 2);
	if (n == 2) {
		CHECK_STR(specs[0], "handle@/usr/sbin/mysqld");
		CHECK_STR(specs[1], "do_command@/usr/sbin/mysqld");
	}
	/* The setting is left as it was. */
	CHECK_STR(cfg.requests, " handle@/usr/sbin/mysqld\tdo_command@/usr/sbin/mysqld  ");
	/* More words than slots take probes for: the first OFFCPU_MAX_REQUESTS. */
	cfg.requests = "a b c d e f g h i j";
	n = continuous_specs(&cfg, buf, sizeof(buf), specs);
	CHECK(n == OFFCPU_MAX_REQUESTS);
	CHECK_STR(specs[OFFCPU_MAX_REQUESTS - 1], "h");
}

int main(void)
{
	test_filters();
	test_requests();
	test_specs();
	return CHECK_DONE();
}
