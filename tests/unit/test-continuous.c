/*
 * Unit test of continuous: the always-on slots' filters per kind, the
 * request specs and the windows' clock boundaries, from a configuration.
 */
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "continuous.h"

static struct config cfg_make(unsigned stacks)
{
	struct config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.continuous_states = 0x5;
	cfg.continuous_min_block_us = 7;
	cfg.continuous_split_runq = true;
	cfg.continuous_stacks = stacks;
	cfg.sample_period_us = 250;
	cfg.window_seconds = 10;
	return cfg;
}

static void test_filters(void)
{
	struct config cfg = cfg_make(CONFIG_STACKS_SAMPLED);
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

	cfg = cfg_make(CONFIG_STACKS_EXACT);
	cfg.continuous_split_runq = false;
	continuous_filter(&cfg, OFFCPU_KIND_OFFCPU, false, &f);
	CHECK(f.sample_period_ns == 0 && !f.split_runq && f.hist);
}

/* Requests gate the blocks of off-CPU kinds, not on-CPU samples nor I/O. */
static void test_requests(void)
{
	struct config cfg = cfg_make(CONFIG_STACKS_SAMPLED);
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
	struct config cfg = cfg_make(CONFIG_STACKS_SAMPLED);
	const char *specs[CONFIG_MAX_REQUESTS];
	char buf[sizeof(cfg.continuous_requests)];
	size_t n;

	CHECK(continuous_specs(&cfg, buf, sizeof(buf), specs) == 0);
	snprintf(cfg.continuous_requests, sizeof(cfg.continuous_requests),
		 " handle@/usr/sbin/mysqld\tdo_command@/usr/sbin/mysqld  ");
	n = continuous_specs(&cfg, buf, sizeof(buf), specs);
	CHECK(n == 2);
	if (n == 2) {
		CHECK_STR(specs[0], "handle@/usr/sbin/mysqld");
		CHECK_STR(specs[1], "do_command@/usr/sbin/mysqld");
	}
	/* The configuration is left as it was. */
	CHECK_STR(cfg.continuous_requests,
		  " handle@/usr/sbin/mysqld\tdo_command@/usr/sbin/mysqld  ");
	/* More words than slots take probes for: the first CONFIG_MAX_REQUESTS. */
	snprintf(cfg.continuous_requests, sizeof(cfg.continuous_requests), "a b c d e f g h i j");
	n = continuous_specs(&cfg, buf, sizeof(buf), specs);
	CHECK(n == CONFIG_MAX_REQUESTS);
	CHECK_STR(specs[CONFIG_MAX_REQUESTS - 1], "h");
}

static void test_window_close(void)
{
	CHECK(continuous_window_close_ms(12345, 10) == 20000);
	CHECK(continuous_window_close_ms(20000, 10) == 30000); /* on a boundary: the next */
	CHECK(continuous_window_close_ms(19999, 10) == 20000);
	CHECK(continuous_window_close_ms(1764000000123, 60) == 1764000060000);
	CHECK(continuous_window_close_ms(0, 1) == 1000);
}

int main(void)
{
	test_filters();
	test_requests();
	test_specs();
	test_window_close();
	return CHECK_DONE();
}
