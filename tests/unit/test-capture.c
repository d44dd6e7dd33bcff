/* Unit test of daemon/profile/capture.c: targets checked against a proc root of
 * our own, the collector filter of a request, and the reply of a finished
 * capture (stack filters narrow the profile that is then stored, drops are
 * the counters' growth, svg replies are drawn, an empty one is no_data). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"

static void add_row(struct profile *p, const char *comm, const char *ustack, uint64_t ns)
{
	struct profile_row row = {
		.comm = comm,
		.tgid = 10,
		.pid = 10,
		.state = 1,
		.sum_ns = ns,
		.count = 1,
		.ustack = ustack,
		.kstack = "schedule",
		.chain = "",
	};

	CHECK(profile_add_row(p, &row) == 0);
}

static struct capture *capture_new(enum proto_format format)
{
	struct capture *c = calloc(1, sizeof(*c));

	c->id = 7;
	c->req.format = format;
	c->req.kind = PROTO_KIND_OFFCPU;
	c->req.stacks = PROTO_STACKS_BOTH;
	c->req.metric = PROTO_METRIC_TIME;
	c->req.lines = 1;
	c->start_ns = 1000000000;
	c->end_ns = 3000000000;
	CHECK(profile_new(&c->profile) == 0);
	return c;
}

static void capture_destroy(struct capture *c)
{
	profile_free(c->profile);
	free(c);
}

static void test_targets(void)
{
	char root[] = "/tmp/offcpu-test-capture-XXXXXX", path[128], err[128] = "";
	struct proto_capture_request req = { .n_pids = 1, .pids = { 100 } };
	FILE *f;

	CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/100", root);
	CHECK(mkdir(path, 0755) == 0);

	CHECK(capture_check_targets(root, &req, err, sizeof(err)) == 0);
	CHECK(!capture_target_exited(root, &req));
	req.pids[1] = 999;
	req.n_pids = 2;
	CHECK(capture_check_targets(root, &req, err, sizeof(err)) == -ESRCH);
	CHECK_STR(err, "no process with pid 999");
	CHECK(capture_target_exited(root, &req));
	req.n_pids = 1;
	req.tids[0] = 555;
	req.n_tids = 1;
	CHECK(capture_check_targets(root, &req, err, sizeof(err)) == -ESRCH);
	CHECK_STR(err, "no thread with tid 555");
	/* A thread's id given as a pid: refused, naming both ways to ask. */
	snprintf(path, sizeof(path), "%s/101", root);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/101/status", root);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("Name:\tworker\nTgid:\t100\nPid:\t101\n", f);
		fclose(f);
	}
	req.n_tids = 0;
	req.pids[0] = 101;
	CHECK(capture_check_targets(root, &req, err, sizeof(err)) == -ESRCH);
	CHECK_STR(err, "pid 101 is a thread of process 100, not a process: give --tid 101 for that "
		       "thread, or --pid 100 for its process");
	CHECK(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/101", root);
	CHECK(rmdir(path) == 0);
	snprintf(path, sizeof(path), "%s/100", root);
	/* No target: the whole system, which cannot exit. */
	memset(&req, 0, sizeof(req));
	CHECK(!capture_target_exited(root, &req));
	CHECK(rmdir(path) == 0 && rmdir(root) == 0);
}

static void test_targets_describe(void)
{
	struct proto_capture_request req = {
		.n_pids = 2, .pids = { 12, 13 }, .n_tids = 1, .tids = { 14 }
	};
	char buf[CAPTURE_TARGETS_MAX + 1];

	capture_targets_describe(&req, buf, sizeof(buf));
	CHECK_STR(buf, "pid 12,13; tid 14");
	snprintf(req.comm, sizeof(req.comm), "nginx");
	snprintf(req.who.unit, sizeof(req.who.unit), "nginx.service");
	capture_targets_describe(&req, buf, sizeof(buf));
	CHECK_STR(buf, "pid 12,13; tid 14; comm nginx; unit nginx.service");
	memset(&req, 0, sizeof(req));
	capture_targets_describe(&req, buf, sizeof(buf));
	CHECK_STR(buf, "");
	/* Cut short, terminated. */
	req.n_pids = 3;
	req.pids[0] = req.pids[1] = req.pids[2] = 1234567;
	capture_targets_describe(&req, buf, 12);
	CHECK_STR(buf, "pid 1234567");
}

static void test_filter(void)
{
	static struct capture c = {
		.req = { .kind = PROTO_KIND_OFFCPU, .min_block_us = 5 },
		.cgroups = { { .id = 4242, .level = 2 } },
		.n_cgroups = 1,
	};
	struct proto_capture_request *req = &c.req;
	struct collector_filter f;

	capture_filter(&c, &f);
	CHECK(f.user_stacks && f.kernel_stacks);
	CHECK(f.min_block_ns == 5000);
	CHECK(f.sample_period_ns == 0);
	/* The subtrees its cgroup, unit or container named go to the kernel. */
	CHECK(f.n_cgroups == 1 && f.cgroups[0].id == 4242 && f.cgroups[0].level == 2);
	req->stacks = PROTO_STACKS_KERNEL;
	req->sampled = 1;
	req->sample_period_us = 250;
	capture_filter(&c, &f);
	CHECK(!f.user_stacks && f.kernel_stacks);
	CHECK(f.sample_period_ns == 250000);
	/* A wakeup graph walks only the waker's stacks, not the target's. */
	req->stacks = PROTO_STACKS_BOTH;
	req->kind = PROTO_KIND_WAKEUP;
	capture_filter(&c, &f);
	CHECK(!f.user_stacks && !f.kernel_stacks);
}

static struct proto_reply *reply_of(char *line)
{
	struct proto_reply *r = NULL;

	CHECK(line != NULL);
	if (line)
		CHECK(proto_reply_parse(line, strlen(line), &r) == 0);
	free(line);
	return r;
}

static uint64_t drop_named(const struct proto_capture_result *res, const char *name)
{
	for (size_t i = 0; i < res->n_drops; i++)
		if (!strcmp(res->drops[i].name, name))
			return res->drops[i].value;
	return UINT64_MAX;
}

static void test_reply_folded(void)
{
	struct capture *c = capture_new(PROTO_FORMAT_FOLDED);
	uint64_t now[OFFCPU_CNT_MAX] = { 0 };
	struct proto_reply *r;

	add_row(c->profile, "app", "main;work", 3000);
	add_row(c->profile, "app", "main;idle", 5000);
	strcpy(c->req.grep, "^work$");
	c->counters_start[OFFCPU_CNT_DROP_AGG_FULL] = 4;
	now[OFFCPU_CNT_DROP_AGG_FULL] = 10;

	r = reply_of(capture_reply(c, now, true, NULL, 0));
	CHECK(r && r->ok && r->cmd == PROTO_CMD_CAPTURE);
	if (r && r->ok) {
		CHECK(r->capture.id == 7);
		CHECK(r->capture.duration_ns == 2000000000);
		CHECK(r->capture.total_ns == 3000);
		CHECK(r->capture.target_exited);
		CHECK_STR(r->capture.folded, "app;main;work;-;schedule 3\n"); /* in us */
		CHECK(drop_named(&r->capture, "agg_map_full") == 6);
	}
	proto_reply_free(r);
	/* The stored window holds what the client got. */
	CHECK(profile_rows(c->profile) == 1);
	CHECK(profile_total_ns(c->profile) == 3000);
	capture_destroy(c);
}

/* An empty reply says why. */
static void test_reply_notes(void)
{
	struct capture *c = capture_new(PROTO_FORMAT_FOLDED);
	uint64_t now[OFFCPU_CNT_MAX] = { 0 };
	struct proto_reply *r;

	c->req.n_pids = 1;
	c->req.pids[0] = 10;
	r = reply_of(capture_reply(c, now, false, NULL, 0));
	CHECK(r && r->ok && r->capture.n_notes == 1);
	if (r && r->capture.n_notes == 1)
		CHECK_STR(r->capture.notes[0], "no offcpu stacks were recorded (targets: pid 10)");
	proto_reply_free(r);

	add_row(c->profile, "app", "main;work", 3000);
	add_row(c->profile, "app", "main;rest", 3000);
	snprintf(c->req.comm, sizeof(c->req.comm), "other");
	r = reply_of(capture_reply(c, now, false, NULL, 0));
	CHECK(r && r->ok && r->capture.n_notes == 1);
	if (r && r->capture.n_notes == 1)
		CHECK_STR(r->capture.notes[0],
			  "2 stacks were recorded, but none passed the filters: --comm other");
	proto_reply_free(r);
	capture_destroy(c);
}

static void test_reply_svg(void)
{
	struct capture *c = capture_new(PROTO_FORMAT_SVG);
	uint64_t now[OFFCPU_CNT_MAX] = { 0 };
	struct proto_reply *r;

	/* Nothing recorded: nothing to draw. */
	r = reply_of(capture_reply(c, now, false, NULL, 0));
	CHECK(r && !r->ok);
	if (r && !r->ok)
		CHECK_STR(r->error_code, PROTO_ERR_NO_DATA);
	proto_reply_free(r);

	add_row(c->profile, "app", "main;work", 3000000);
	c->req.pids[0] = 123;
	c->req.n_pids = 1;
	c->start_ms = 1795903805000; /* 2026-11-28 22:10:05 UTC, for 2 s */
	r = reply_of(capture_reply(c, now, false, NULL, 0));
	CHECK(r && r->ok);
	if (r && r->ok) {
		CHECK(r->capture.folded == NULL);
		CHECK(r->capture.output && strstr(r->capture.output, "<svg"));
		/* What it shows as the title, and the metric's unit, as none was
		 * asked for. */
		CHECK(r->capture.output &&
		      strstr(r->capture.output, ">Off-CPU Time \u2014 pid 123 \u2014 "
						"2026-11-28 22:10:05\u201322:10:07 UTC</text>"));
		CHECK(r->capture.output && strstr(r->capture.output, "main"));
	}
	proto_reply_free(r);
	capture_destroy(c);
}

int main(void)
{
	test_targets();
	test_targets_describe();
	test_filter();
	test_reply_notes();
	test_reply_folded();
	test_reply_svg();
	return CHECK_DONE();
}
