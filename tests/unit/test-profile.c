/* Unit test of daemon/profile/profile.c: rows merge by names, and every reader
 * (folded, samples, foreach) sees the same rows. */
#include <stdlib.h>
#include <string.h>

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

#define DOCKER_ID "4d1f7a6c0123456789abcdef0123456789abcdef0123456789abcdef89abcdef"

/* --group-by: the identity as the root frame, the thread's name below it;
 * the same stack in two cgroups stays two rows, with their identities. */
static void test_group_by(void)
{
	static const struct {
		uint32_t tgid, pid;
		const char *comm, *cgroup;
		uint64_t ns;
	} rows[] = {
		{ 10, 10, "nginx", "/system.slice/nginx.service", 1000000 },
		{ 10, 12, "worker", "/system.slice/nginx.service", 2000000 },
		{ 20, 21, "java", "/system.slice/docker-" DOCKER_ID ".scope", 3000000 },
		{ 30, 30, "odd;name", "", 4000000 },
		{ 40, 40, "app", "/a b;c\xe2\x98\x83", 5000000 },
	};
	static const struct {
		enum proto_group_by by;
		const char *want;
	} cases[] = {
		{ PROTO_GROUP_BY_COMM, "app;f 5000\njava;f 3000\nnginx;f 1000\nodd_name;f 4000\n"
				       "worker;f 2000\n" },
		{ PROTO_GROUP_BY_PROCESS, "app [40];app;f 5000\njava [20];java;f 3000\n"
					  "nginx [10];nginx;f 1000\nnginx [10];worker;f 2000\n"
					  "odd_name [30];odd_name;f 4000\n" },
		{ PROTO_GROUP_BY_UNIT, "[no unit];app;f 5000\n[no unit];odd_name;f 4000\n"
				       "docker-" DOCKER_ID ".scope;java;f 3000\n"
				       "nginx.service;nginx;f 1000\nnginx.service;worker;f 2000\n" },
		{ PROTO_GROUP_BY_CONTAINER, "[no container];app;f 5000\n[no container];nginx;f 1000\n"
					    "[no container];odd_name;f 4000\n"
					    "[no container];worker;f 2000\n"
					    "docker:4d1f7a6c0123;java;f 3000\n" },
		{ PROTO_GROUP_BY_CGROUP, "/a b_c\xe2\x98\x83;app;f 5000\n"
					 "/system.slice/docker-" DOCKER_ID ".scope;java;f 3000\n"
					 "/system.slice/nginx.service;nginx;f 1000\n"
					 "/system.slice/nginx.service;worker;f 2000\n"
					 "[no cgroup];odd_name;f 4000\n" },
	};
	struct proto_sample *samples;
	struct profile *p;
	size_t n;

	CHECK(profile_new(&p) == 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK(profile_add_row(p, &(struct profile_row){ .comm = rows[i].comm,
								 .tgid = rows[i].tgid,
								 .pid = rows[i].pid,
								 .sum_ns = rows[i].ns,
								 .count = 1,
								 .ustack = "f",
								 .kstack = "",
								 .cgroup = rows[i].cgroup,
								 .ns_pid = i == 2 ? 1 : 0 }) == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = profile_folded_by(p, true, false, PROTO_METRIC_TIME, cases[i].by);

		CHECK_MSG(text && !strcmp(text, cases[i].want), "(by %d: %s)", cases[i].by, text);
		free(text);
	}
	/* One stack, two cgroups: two rows. */
	CHECK(profile_add_row(p, &(struct profile_row){ .comm = "nginx", .tgid = 10, .pid = 10,
							 .sum_ns = 1, .ustack = "f", .kstack = "",
							 .cgroup = "/other" }) == 0);
	CHECK(profile_rows(p) == 6);
	/* JSON rows: the path, what it names, the pid in its namespace. */
	CHECK(profile_samples(p, &samples, &n) == 0 && n == 6);
	for (size_t i = 0; i < n; i++) {
		if (samples[i].tgid == 20) {
			CHECK_STR(samples[i].container, DOCKER_ID);
			CHECK_STR(samples[i].runtime, "docker");
			CHECK_STR(samples[i].unit, "docker-" DOCKER_ID ".scope");
			CHECK(samples[i].ns_pid == 1 && !samples[i].pod);
		} else if (samples[i].tgid == 30) {
			CHECK(!samples[i].cgroup && !samples[i].unit && !samples[i].container);
		} else if (samples[i].pid == 12) {
			CHECK_STR(samples[i].unit, "nginx.service");
			CHECK(!samples[i].container && !samples[i].runtime);
		}
	}
	profile_samples_free(samples, n);
	profile_free(p);
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
	test_group_by();
	return CHECK_DONE();
}
