/* Unit test of daemon/profile/profile.c: rows merge by names, and every reader
 * (folded, samples, foreach) sees the same rows. */
#include <stdlib.h>

#include "check.h"
#include "profile.h"

static struct drain_row row(uint64_t uhash, const char *ustack, uint32_t state, uint64_t ns)
{
	struct drain_row r = {
		.key = { .slot = 3,
			 .tgid = 10,
			 .pid = 11,
			 .state = state,
			 .kstack = 7,
			 .ustack = uhash },
		.value = { .sum_ns = ns, .count = 1, .comm = "app" },
		.ustack = ustack,
		.kstack = "entry;schedule",
	};
	return r;
}

static int count_rows(void *arg, const struct profile_row *r)
{
	(void)r;
	++*(int *)arg;
	return 0;
}

/* Keeps the ustack and kstack pointers of threads 11 and 12's "main;work"
 * rows in state 1. */
static int same_stack_names(void *arg, const struct profile_row *r)
{
	const char *(*names)[2] = arg;

	if (r->state == 1 && !strcmp(r->ustack, "main;work") && (r->pid == 11 || r->pid == 12)) {
		names[r->pid - 11][0] = r->ustack;
		names[r->pid - 11][1] = r->kstack;
	}
	return 0;
}

int main(void)
{
	struct proto_sample *samples;
	struct profile *p;
	struct drain_row r;
	size_t n;
	int rows = 0;
	char *text;

	CHECK(profile_new(&p) == 0);
	/* Two address stacks that name the same frames: one row. */
	r = row(0x1111, "main;work", 1, 1500000);
	CHECK(profile_add(p, &r) == 0);
	r = row(0x2222, "main;work", 1, 500000);
	CHECK(profile_add(p, &r) == 0);
	/* Another state or another stack: other rows. */
	r = row(0x1111, "main;work", 0, 1000000);
	CHECK(profile_add(p, &r) == 0);
	r = row(0x3333, "main;idle", 1, 2000000);
	CHECK(profile_add(p, &r) == 0);

	CHECK(profile_rows(p) == 3);
	/* Metrics: counts and bytes (0 for these off-CPU rows) instead of time. */
	text = profile_folded(p, true, false, PROTO_METRIC_COUNT);
	CHECK_STR(text, "app;main;idle 1\napp;main;work 3\n");
	free(text);
	text = profile_folded(p, true, false, PROTO_METRIC_BYTES);
	CHECK_STR(text, "");
	free(text);
	r = row(0x4444, "main;read", 2, 3000);
	r.value.bytes = 8192;
	CHECK(profile_add(p, &r) == 0);
	r.value.bytes = 4096;
	CHECK(profile_add(p, &r) == 0);
	text = profile_folded(p, true, false, PROTO_METRIC_BYTES);
	CHECK_STR(text, "app;main;read 12288\n");
	free(text);
	profile_free(p);
	CHECK(profile_new(&p) == 0);
	r = row(0x1111, "main;work", 1, 1500000);
	CHECK(profile_add(p, &r) == 0);
	r = row(0x2222, "main;work", 1, 500000);
	CHECK(profile_add(p, &r) == 0);
	r = row(0x1111, "main;work", 0, 1000000);
	CHECK(profile_add(p, &r) == 0);
	r = row(0x3333, "main;idle", 1, 2000000);
	CHECK(profile_add(p, &r) == 0);
	CHECK(profile_rows(p) == 3);
	CHECK(profile_total_ns(p) == 5000000);
	CHECK(profile_foreach(p, count_rows, &rows) == 0 && rows == 3);

	CHECK(profile_samples(p, &samples, &n) == 0);
	CHECK(n == 3);
	for (size_t i = 0; i < n; i++) {
		if (samples[i].value_ns == 2000000 && samples[i].n_ustack == 2 &&
		    !strcmp(samples[i].ustack[1], "work")) {
			CHECK(samples[i].count == 2);
			CHECK_STR(samples[i].state, "S");
			CHECK(samples[i].n_kstack == 2);
			CHECK_STR(samples[i].kstack[1], "schedule");
			rows = -1;
		}
	}
	CHECK(rows == -1); /* the merged row was there */
	profile_samples_free(samples, n);

	/* Folded sums the states together: one line per stack. */
	text = profile_folded(p, true, true, PROTO_METRIC_TIME);
	CHECK_STR(text,
		  "app;main;idle;-;entry;schedule 2000\napp;main;work;-;entry;schedule 3000\n");
	free(text);
	text = profile_folded(p, true, false, PROTO_METRIC_TIME);
	CHECK_STR(text, "app;main;idle 2000\napp;main;work 3000\n");
	free(text);

	/* Rows read back by name (from the store) merge with drained ones. */
	CHECK(profile_add_row(p, &(struct profile_row){ .comm = "app",
							.tgid = 10,
							.pid = 11,
							.state = 1,
							.sum_ns = 1000,
							.count = 1,
							.ustack = "main;work",
							.kstack = "entry;schedule" }) == 0);
	CHECK(profile_rows(p) == 3);

	/* Rows of two threads with one stack share one copy of its names:
	 * the store's window write takes a stack once by its address. */
	{
		const char *names[2][2] = { { NULL } };

		r = row(0x1111, "main;work", 1, 1000);
		r.key.pid = 12;
		CHECK(profile_add(p, &r) == 0);
		CHECK(profile_foreach(p, same_stack_names, names) == 0);
		CHECK(names[0][0] && names[0][0] == names[1][0] && names[0][1] == names[1][1]);
	}
	profile_free(p);
	profile_free(NULL);
	return CHECK_DONE();
}
