/* Unit test of daemon/store/store_jobs.c over a real store and a real libuv loop:
 * a window written is listed and exported as it was written, a bad regex
 * is refused before anything is queued, and a large flame graph is drawn
 * on a worker while the event loop keeps running its timers. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "check.h"
#include "store_jobs.h"
#include "thread_state.h"

struct reply {
	bool done;
	char *line;
};

static void got_reply(void *arg, char *line)
{
	struct reply *r = arg;

	r->done = true;
	r->line = line;
}

static void written(void *arg, const struct store_window *w, int r, const char *msg,
		    const struct store_stats *stats)
{
	(void)w;
	(void)stats;
	CHECK_MSG(r == 0, "window write: %s", msg);
	++*(int *)arg;
}

/* A window of capture id, with n rows of distinct stacks. */
static void write_window(uv_loop_t *loop, struct store_queue *q, uint64_t id, size_t n)
{
	struct store_window w = { .start_ms = 1000 * id,
				  .end_ms = 1000 * id + 500,
				  .capture_id = id };
	struct profile *p;
	int writes = 0;

	CHECK(profile_new(&p) == 0);
	for (size_t i = 0; i < n; i++) {
		char ustack[96];
		struct profile_row row = {
			.comm = "app",
			.tgid = 10,
			.pid = 10,
			.state = 1,
			.sum_ns = 1000 * (i + 1),
			.count = 1,
			.ustack = ustack,
			.kstack = "schedule",
			.chain = "",
		};

		snprintf(ustack, sizeof(ustack), "main;f%zu;g%zu;h%zu", i % 97, i % 1013, i);
		CHECK(profile_add_row(p, &row) == 0);
	}
	CHECK(store_jobs_write(q, p, NULL, &w, written, &writes) == 0);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK(writes == 1);
}

static struct proto_reply *parse(struct reply *r)
{
	struct proto_reply *reply = NULL;

	CHECK(r->done && r->line);
	if (r->line)
		CHECK(proto_reply_parse(r->line, strlen(r->line), &reply) == 0);
	free(r->line);
	return reply;
}

static void export_request(struct proto_export_request *req, uint64_t id, enum proto_format f)
{
	memset(req, 0, sizeof(*req));
	req->capture_id = id;
	req->state_mask = THREAD_STATE_ALL;
	req->format = f;
	req->kind = PROTO_KIND_OFFCPU;
	req->metric = PROTO_METRIC_TIME;
	req->lines = 1;
}

static void test_windows_and_export(uv_loop_t *loop, struct store_queue *q)
{
	struct proto_windows_request wr = { 0 };
	struct proto_export_request req;
	struct proto_reply *reply;
	struct reply r = { 0 };
	char err[128] = "";

	write_window(loop, q, 5, 2);
	CHECK(store_jobs_windows(q, &wr, got_reply, &r) == 0);
	uv_run(loop, UV_RUN_DEFAULT);
	reply = parse(&r);
	CHECK(reply && reply->ok && reply->n_windows == 1);
	if (reply && reply->n_windows == 1)
		CHECK(reply->windows[0].capture_id == 5 && reply->windows[0].samples == 2);
	proto_reply_free(reply);

	export_request(&req, 5, PROTO_FORMAT_FOLDED);
	memset(&r, 0, sizeof(r));
	CHECK(store_jobs_export(q, &req, got_reply, &r, err, sizeof(err)) == 0);
	uv_run(loop, UV_RUN_DEFAULT);
	reply = parse(&r);
	CHECK(reply && reply->ok && reply->export.windows == 1);
	if (reply && reply->ok)
		CHECK_STR(reply->export.folded, "app;main;f0;g0;h0;-;schedule 1\n"
						"app;main;f1;g1;h1;-;schedule 2\n");
	proto_reply_free(reply);

	/* Refused at once: no reply will come. */
	strcpy(req.grep, "(");
	memset(&r, 0, sizeof(r));
	CHECK(store_jobs_export(q, &req, got_reply, &r, err, sizeof(err)) == -EINVAL);
	CHECK(*err != '\0');
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK(!r.done);
}

static int collect_cgroups(void *arg, const struct store_sample *s)
{
	char *seen = arg;
	size_t n = strlen(seen);

	snprintf(seen + n, 512 - n, "%s %u %llu;", s->cgroup, s->ns_pid,
		 (unsigned long long)s->sum_ns);
	return 0;
}

/* Containers' cgroups: 64 hex digits of id. */
#define ID_A	 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_B	 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define CGROUP_A "/system.slice/docker-" ID_A ".scope"
#define CGROUP_B "/system.slice/docker-" ID_B ".scope"

/* A window's cgroups and namespace pids are stored with its rows, rows
 * that differ only in the cgroup stay apart, and an export reads them back
 * into its samples. */
static void test_cgroup(uv_loop_t *loop, struct store_queue *q, struct store *store)
{
	/* cgroup, ns_pid and sum_ns of each row, as collect_cgroups() writes them. */
	static const char a[] = CGROUP_A " 7 1000;", b[] = CGROUP_B " 7 2000;";
	struct store_window w = { .start_ms = 7000, .end_ms = 7500, .capture_id = 7 };
	struct profile_row row = {
		.comm = "app",
		.tgid = 10,
		.pid = 11,
		.state = 1,
		.sum_ns = 1000,
		.count = 1,
		.ustack = "main;f",
		.kstack = "schedule",
		.chain = "",
		.cgroup = CGROUP_A,
		.ns_pid = 7,
	};
	struct store_query sq = { .capture_id = 7 };
	struct proto_export_request req;
	struct proto_reply *reply;
	struct reply r = { 0 };
	char seen[512] = "", err[128] = "";
	struct profile *p;
	int writes = 0;

	CHECK(profile_new(&p) == 0);
	CHECK(profile_add_row(p, &row) == 0);
	row.cgroup = CGROUP_B;
	row.sum_ns = 2000;
	CHECK(profile_add_row(p, &row) == 0);
	CHECK(store_jobs_write(q, p, NULL, &w, written, &writes) == 0);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK(writes == 1);

	/* The worker is idle: the store is the test's until the next job. */
	CHECK(store_query(store, &sq, collect_cgroups, seen, NULL, err, sizeof(err)) == 0);
	CHECK_MSG(strstr(seen, a) && strstr(seen, b) && strlen(seen) == strlen(a) + strlen(b),
		  "stored: %s", seen);

	export_request(&req, 7, PROTO_FORMAT_JSON);
	CHECK(store_jobs_export(q, &req, got_reply, &r, err, sizeof(err)) == 0);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK(r.line && strstr(r.line, "\"" CGROUP_A "\"") && strstr(r.line, "\"" CGROUP_B "\"") &&
	      strstr(r.line, "\"ns_pid\":7"));
	reply = parse(&r);
	CHECK(reply && reply->ok && reply->export.n_samples == 2);
	proto_reply_free(reply);
}

struct ticker {
	uv_timer_t timer;
	unsigned ticks;
	struct reply *r;
};

static void tick(uv_timer_t *t)
{
	struct ticker *k = t->data;

	if (k->r->done)
		uv_timer_stop(t);
	else
		k->ticks++;
}

/* A flame graph of many stacks, every frame drawn: it takes the worker long
 * enough that a loop which drew it itself could not tick meanwhile. */
static void test_loop_runs_while_drawing(uv_loop_t *loop, struct store_queue *q)
{
	struct proto_export_request req;
	struct proto_reply *reply;
	struct reply r = { 0 };
	struct ticker k = { .r = &r };
	uint64_t start, ms;
	char err[128];

	write_window(loop, q, 6, 40000);
	export_request(&req, 6, PROTO_FORMAT_SVG);
	strcpy(req.render.minwidth, "0");
	uv_timer_init(loop, &k.timer);
	k.timer.data = &k;
	uv_update_time(loop);
	start = uv_hrtime();
	CHECK(store_jobs_export(q, &req, got_reply, &r, err, sizeof(err)) == 0);
	uv_timer_start(&k.timer, tick, 2, 2);
	uv_run(loop, UV_RUN_DEFAULT);
	ms = (uv_hrtime() - start) / 1000000;
	reply = parse(&r);
	CHECK(reply && reply->ok && reply->export.output && strstr(reply->export.output, "h39999"));
	proto_reply_free(reply);
	/* The loop ticks every 2 ms: while the export takes 100 ms or more,
	 * a handful of ticks at the least, however busy the machine. */
	CHECK_MSG(ms >= 100, "the export took only %llu ms: draw more", (unsigned long long)ms);
	CHECK_MSG(k.ticks >= 5, "%u ticks in %llu ms", k.ticks, (unsigned long long)ms);
	printf("export of 40000 stacks as svg: %llu ms, loop ticked %u times\n",
	       (unsigned long long)ms, k.ticks);
	uv_close((uv_handle_t *)&k.timer, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
}

int main(void)
{
	char dir[] = "/tmp/offcpu-test-history-XXXXXX", path[128], err[256];
	struct store_queue *q;
	struct store *store;
	uv_loop_t loop;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/offcpu.db", dir);
	if (store_open(path, NULL, &store, err, sizeof(err)) < 0) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	CHECK(uv_loop_init(&loop) == 0);
	CHECK(store_queue_new(&loop, store, &q) == 0);

	test_windows_and_export(&loop, q);
	test_cgroup(&loop, q, store);
	test_loop_runs_while_drawing(&loop, q);

	store_queue_free(q);
	store_close(store);
	CHECK(uv_loop_close(&loop) == 0);
	snprintf(err, sizeof(err), "rm -rf %s", dir);
	CHECK(system(err) == 0);
	return CHECK_DONE();
}
