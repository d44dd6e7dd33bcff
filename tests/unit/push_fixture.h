/*
 * push_fixture: what the tests of the pusher's encoders share
 * (test-push_request.c, test-otlp_request.c): a window of synthetic rows
 * (two units, a container, a process without a cgroup, a comm that is not
 * UTF-8; kinds offcpu and runq) with the series each row belongs to, the
 * inputs both encoders refuse, the stacks pprof.c gives the rows, and the
 * helpers that run a reference reader. Included after _GNU_SOURCE
 * (asprintf, fmemopen).
 */
#ifndef PUSH_FIXTURE_H
#define PUSH_FIXTURE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "push_series.h"

#define HOST	 "host-a"
#define WIN_ID	 42
#define START_MS 1700000000000LL
#define END_MS	 (START_MS + 10000)
#define CT_ID	 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ---- the window ---- */

static const char *const u_nginx_w[] = { "main", "ngx_worker_cycle", "epoll_wait" };
static const char *const k_epoll[] = { "do_epoll_wait", "schedule" };
static const char *const u_nginx_m[] = { "main", "ngx_master_cycle", "sigsuspend" };
static const char *const k_sig[] = { "sys_rt_sigsuspend", "schedule" };
static const char *const u_pg[] = { "main", "PostgresMain", "WaitEventSetWait" };
static const char *const u_redis[] = { "main", "aeMain", "epoll_wait" };
static const char *const u_worker[] = { "start_thread", "worker", "pthread_cond_wait" };
static const char *const k_futex[] = { "futex_wait", "schedule" };
static const char *const u_bad[] = { "main", "nanosleep" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Each row and the service it must be filed under, by each naming. */
struct case_row {
	struct proto_sample s;
	const char *by_who, *by_process;
};

/* clang-format off */
static const struct case_row cases[] = {
	{ { .comm = "nginx", .tgid = 100, .pid = 101, .state = "S", .value_ns = 5000000, .count = 5,
	    .ustack = u_nginx_w, .n_ustack = N(u_nginx_w), .kstack = k_epoll, .n_kstack = N(k_epoll),
	    .kind = "offcpu", .cgroup = "/system.slice/nginx.service", .unit = "nginx.service" },
	  "nginx.service", "nginx" },
	{ { .comm = "nginx", .tgid = 100, .pid = 100, .state = "S", .value_ns = 3000000, .count = 1,
	    .ustack = u_nginx_m, .n_ustack = N(u_nginx_m), .kstack = k_sig, .n_kstack = N(k_sig),
	    .kind = NULL /* offcpu */, .cgroup = "/system.slice/nginx.service",
	    .unit = "nginx.service" },
	  "nginx.service", "nginx" },
	{ { .comm = "nginx", .tgid = 100, .pid = 101, .state = "R", .value_ns = 700000, .count = 7,
	    .ustack = u_nginx_w, .n_ustack = N(u_nginx_w), .kind = "runq",
	    .cgroup = "/system.slice/nginx.service", .unit = "nginx.service" },
	  "nginx.service", "nginx" },
	{ { .comm = "postgres", .tgid = 200, .pid = 200, .state = "S", .value_ns = 9000000,
	    .count = 3, .ustack = u_pg, .n_ustack = N(u_pg), .kstack = k_epoll,
	    .n_kstack = N(k_epoll), .kind = "offcpu",
	    .cgroup = "/system.slice/system-postgresql.slice/postgresql@15-main.service",
	    .unit = "postgresql@15-main.service" },
	  "postgresql@15-main.service", "postgres" },
	{ { .comm = "redis-server", .tgid = 300, .pid = 301, .state = "S", .value_ns = 2000000,
	    .count = 2, .ustack = u_redis, .n_ustack = N(u_redis), .kstack = k_epoll,
	    .n_kstack = N(k_epoll), .kind = "offcpu", .cgroup = "/system.slice/docker-" CT_ID ".scope",
	    .unit = "docker-" CT_ID ".scope", .container = CT_ID, .runtime = "docker" },
	  "docker:0123456789ab", "redis-server" },
	{ { .comm = "redis-server", .tgid = 300, .pid = 300, .state = "R", .value_ns = 100000,
	    .count = 1, .ustack = u_redis, .n_ustack = N(u_redis), .kind = "runq",
	    .cgroup = "/system.slice/docker-" CT_ID ".scope", .unit = "docker-" CT_ID ".scope",
	    .container = CT_ID, .runtime = "docker" },
	  "docker:0123456789ab", "redis-server" },
	/* No cgroup, no main-thread row: the least thread name names it. */
	{ { .comm = "worker-3", .tgid = 400, .pid = 401, .state = "S", .value_ns = 1500000,
	    .count = 4, .ustack = u_worker, .n_ustack = N(u_worker), .kstack = k_futex,
	    .n_kstack = N(k_futex), .kind = "offcpu" },
	  "worker-1", "worker-1" },
	{ { .comm = "worker-1", .tgid = 400, .pid = 402, .state = "S", .value_ns = 500000,
	    .count = 1, .ustack = u_worker, .n_ustack = N(u_worker), .kstack = k_futex,
	    .n_kstack = N(k_futex), .kind = "offcpu" },
	  "worker-1", "worker-1" },
	/* A comm is whatever bytes a program wrote. */
	{ { .comm = "bad\xff", .tgid = 500, .pid = 500, .state = "S", .value_ns = 250000, .count = 1,
	    .ustack = u_bad, .n_ustack = N(u_bad), .kind = "offcpu" },
	  "bad\xef\xbf\xbd", "bad\xef\xbf\xbd" },
};
/* clang-format on */

#define N_ROWS	 N(cases)
#define N_SERIES 7 /* distinct (service, kind) of cases, either naming */

static const struct push_label statics[] = { { "region", "eu_west" }, { "env", "prod" } };

static struct proto_sample rows[N_ROWS];

static struct push_window window(uint64_t id, int64_t start_ms)
{
	return (struct push_window){ .id = id,
				     .start_ms = start_ms,
				     .end_ms = start_ms + 10000,
				     .rows = rows,
				     .n_rows = N_ROWS };
}

static struct push_request_opts opts(enum push_service_by by)
{
	return (struct push_request_opts){
		.host = HOST, .labels = statics, .n_labels = N(statics), .service_by = by
	};
}

/* The rows of cases filed under (service, kind) by the naming by. */
static size_t expected_rows(enum push_service_by by, const char *service, const char *kind,
			    size_t *ret_idx)
{
	size_t n = 0;

	for (size_t i = 0; i < N_ROWS; i++) {
		const char *s = by == PUSH_SERVICE_BY_WHO ? cases[i].by_who : cases[i].by_process;
		const char *k = cases[i].s.kind ? cases[i].s.kind : "offcpu";

		if (!strcmp(s, service) && !strcmp(k, kind))
			ret_idx[n++] = i;
	}
	return n;
}

/* An encoder: push_request_build() or otlp_request_build(). */
typedef int build_fn(const struct push_window *w, const struct push_request_opts *o, uint8_t **ret,
		     size_t *ret_len);

/* The inputs every encoder refuses, and the window without rows. */
static void check_refused(build_fn *build)
{
	struct push_label many[PUSH_LABELS_MAX];
	char names[PUSH_LABELS_MAX][8];
	struct push_window w = window(WIN_ID, START_MS);
	struct push_request_opts o = opts(PUSH_SERVICE_BY_WHO);
	uint8_t *buf = (uint8_t *)"untouched";
	size_t len = 12345;

	for (size_t i = 0; i < PUSH_LABELS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "l%zu", i);
		many[i] = (struct push_label){ names[i], "v" };
	}
	o.labels = many;
	o.n_labels = PUSH_LABELS_MAX - PUSH_LABELS_OWN + 1;
	CHECK(build(&w, &o, &buf, &len) == -E2BIG);
	o = opts(PUSH_SERVICE_BY_WHO);
	o.host = "";
	CHECK(build(&w, &o, &buf, &len) == -EINVAL);
	o = opts(PUSH_SERVICE_BY_WHO);
	w.end_ms = w.start_ms - 1;
	CHECK(build(&w, &o, &buf, &len) == -EINVAL);
	w = window(WIN_ID, START_MS);
	rows[3].kind = "nope";
	CHECK(build(&w, &o, &buf, &len) == -EINVAL);
	rows[3] = cases[3].s;
	CHECK(!strcmp((char *)buf, "untouched") && len == 12345);

	/* A window without rows: no series, nothing to free. */
	w.n_rows = 0;
	CHECK(build(&w, &o, &buf, &len) == 0 && !buf && len == 0);
}

#define MAX_STACKS 16

/* Totals by key (a stack: "frame;frame;..." root first): [count, ns]. */
struct totals {
	char *stack[MAX_STACKS];
	uint64_t v[MAX_STACKS][2];
	size_t n;
};

static void totals_add(struct totals *t, const char *stack, uint64_t count, uint64_t ns)
{
	size_t i;

	for (i = 0; i < t->n && strcmp(t->stack[i], stack); i++)
		;
	if (i == t->n) {
		if (t->n == MAX_STACKS) {
			CHECK(!"too many stacks");
			return;
		}
		t->stack[t->n++] = strdup(stack);
		t->v[i][0] = t->v[i][1] = 0;
	}
	t->v[i][0] += count;
	t->v[i][1] += ns;
}

/* got holds what want holds, the same values by the same keys; a failure
 * names what and the caller's line. */
#define TOTALS_CHECK(got, want, what) totals_check(__FILE__, __LINE__, got, want, what)
static void totals_check(const char *file, int line, const struct totals *got,
			 const struct totals *want, const char *what)
{
	CHECK_AT(file, line, got->n == want->n, "(%s: %zu entries, want %zu)", what, got->n,
		 want->n);
	for (size_t k = 0; k < want->n; k++) {
		size_t g;

		for (g = 0; g < got->n && strcmp(got->stack[g], want->stack[k]); g++)
			;
		CHECK_AT(file, line,
			 g < got->n && got->v[g][0] == want->v[k][0] &&
				 got->v[g][1] == want->v[k][1],
			 "(%s: %s)", what, want->stack[k]);
	}
}

static void totals_free(struct totals *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->stack[i]);
	t->n = 0;
}

/* The frames pprof.c gives row r, root first: the user, then the kernel
 * frames, then the kind's leaf. */
static void row_stack(const struct proto_sample *r, char *buf, size_t size)
{
	FILE *f = fmemopen(buf, size, "w");
	const char *sep = "";

	for (size_t i = 0; f && i < r->n_ustack; i++, sep = ";")
		fprintf(f, "%s%s", sep, r->ustack[i]);
	for (size_t i = 0; f && i < r->n_kstack; i++, sep = ";")
		fprintf(f, "%s%s", sep, r->kstack[i]);
	if (f && r->kind && !strcmp(r->kind, "runq"))
		fprintf(f, "%s[runqueue]", sep);
	if (f)
		fclose(f);
}

/* Made by the test with mkdtemp(); run() puts the readers' stderr there. */
static char tmpdir[] = "/tmp/test-push-XXXXXX";

static char *have(const char *tool)
{
	char *cmd, *path = NULL;
	size_t cap = 0;
	FILE *p;

	if (asprintf(&cmd, "command -v %s 2>/dev/null", tool) < 0)
		return NULL;
	p = popen(cmd, "r");
	free(cmd);
	if (!p)
		return NULL;
	if (getline(&path, &cap, p) <= 0) {
		free(path);
		path = NULL;
	} else {
		path[strcspn(path, "\n")] = '\0';
	}
	pclose(p);
	return path;
}

/* The output of cmd, malloc'd; NULL if it failed. Whatever it says on
 * stderr (a reader's warning) fails the test. */
static char *run(const char *cmd)
{
	char *out = NULL, *full = NULL, *err = NULL, *errs = NULL;
	size_t len = 0, cap = 0;
	FILE *f = open_memstream(&out, &len), *p = NULL, *e;
	char buf[4096];
	size_t n;
	int status = -1;

	if (f && asprintf(&err, "%s/stderr", tmpdir) >= 0 &&
	    asprintf(&full, "%s 2>'%s'", cmd, err) >= 0)
		p = popen(full, "r");
	if (p) {
		while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
			fwrite(buf, 1, n, f);
		status = pclose(p);
	}
	if (f)
		fclose(f);
	CHECK_MSG(status == 0, "(%s: status %d)", cmd, status);
	e = err ? fopen(err, "r") : NULL;
	if (e) {
		if (getdelim(&errs, &cap, '\0', e) > 0)
			CHECK_MSG(!"a warning", "(%s said: %s)", cmd, errs);
		fclose(e);
		unlink(err);
	}
	free(errs);
	free(err);
	free(full);
	if (status) {
		free(out);
		return NULL;
	}
	return out;
}

static int write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, len, f) == len;

	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -EIO;
}

#endif
