/* Unit test of daemon/store/store.c, on real SQLite files in a temporary directory. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "array.h"
#include "check.h"
#include "store.h"
#include "store_push.h"

/* tests/data/store-v5.db: a file the previous release wrote (tests/CMakeLists.txt). */
#ifndef STORE_V5_DB
#error "STORE_V5_DB must name tests/data/store-v5.db"
#endif

#define STACK_MAX 1024

static char dir[] = "/tmp/test-store-XXXXXX";
static char err[512];

/* A fresh database path in the test directory. */
static const char *db_path(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void remove_db(const char *path)
{
	char side[300];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t pragma(struct store *s, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(store__db(s), sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static uint64_t file_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Rows a query returned, with copies of their strings. */
struct got_row {
	struct store_sample s;
	char *comm, *ustack, *kstack, *chain, *cgroup;
};

struct got {
	struct got_row *v;
	size_t n, cap;
	size_t stop_after; /* 0: never */
};

static int collect(void *arg, const struct store_sample *sample)
{
	struct got *g = arg;
	struct got_row *r;

	if (array_grow(&g->v, &g->cap, g->n + 1, sizeof(*g->v), 64) < 0) {
		CHECK(!"out of memory");
		return -ENOMEM;
	}
	r = &g->v[g->n++];
	r->s = *sample;
	r->comm = strdup(sample->comm);
	r->ustack = strdup(sample->ustack);
	r->kstack = strdup(sample->kstack);
	r->chain = strdup(sample->chain);
	CHECK(sample->cgroup); /* "" when not known, never NULL */
	r->cgroup = strdup(sample->cgroup ? sample->cgroup : "(null)");
	if (g->stop_after && g->n == g->stop_after)
		return 42;
	return 0;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].comm);
		free(g->v[i].ustack);
		free(g->v[i].kstack);
		free(g->v[i].chain);
		free(g->v[i].cgroup);
	}
	free(g->v);
	memset(g, 0, sizeof(*g));
}

static const struct got_row *got_find(const struct got *g, uint32_t pid, const char *comm,
				      uint32_t state, const char *ustack, const char *kstack)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct got_row *r = &g->v[i];

		if (r->s.pid == pid && r->s.state == state && !strcmp(r->comm, comm) &&
		    !strcmp(r->ustack, ustack) && !strcmp(r->kstack, kstack))
			return r;
	}
	return NULL;
}

/* The row of a kind with that chain (and any other fields). */
static const struct got_row *got_find_chain(const struct got *g, uint32_t pid, uint32_t kind,
					    const char *ustack, const char *kstack,
					    const char *chain)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct got_row *r = &g->v[i];

		if (r->s.pid == pid && r->s.kind == kind && !strcmp(r->ustack, ustack) &&
		    !strcmp(r->kstack, kstack) && !strcmp(r->chain, chain))
			return r;
	}
	return NULL;
}

static int query(struct store *s, const struct store_query *q, struct got *g, uint64_t *windows)
{
	got_free(g);
	return store_query(s, q, collect, g, windows, err, sizeof(err));
}

static int query_range(struct store *s, int64_t from, int64_t to, struct got *g, uint64_t *windows)
{
	struct store_query q = { .from_ms = from, .to_ms = to };

	return query(s, &q, g, windows);
}

static uint64_t got_sum_ns(const struct got *g)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < g->n; i++)
		sum += g->v[i].s.sum_ns;
	return sum;
}

static int add_hists(struct store *s, int64_t start_ms, int64_t end_ms, uint64_t capture_id,
		     const struct store_sample *v, size_t n, const struct store_hist *h, size_t n_h,
		     struct store_window *ret)
{
	struct store_window w = { .start_ms = start_ms,
				  .end_ms = end_ms,
				  .capture_id = capture_id };
	int r = store_window_add(s, &w, v, n, h, n_h, err, sizeof(err));

	if (ret)
		*ret = w;
	if (r < 0 && r != -ENOSPC && r != -EINVAL)
		fprintf(stderr, "store_window_add: %s\n", err);
	return r;
}

static int add(struct store *s, int64_t start_ms, int64_t end_ms, uint64_t capture_id,
	       const struct store_sample *v, size_t n, struct store_window *ret)
{
	return add_hists(s, start_ms, end_ms, capture_id, v, n, NULL, 0, ret);
}

/* A generated window: n samples over stacks numbered from first. */
struct gen {
	struct store_sample v[2000];
	char u[2000][STACK_MAX];
	char k[2000][STACK_MAX];
};

/* A deterministic stack, 20 frames deep, distinct for each id. */
static void make_stack(char *buf, uint32_t id, const char *tag)
{
	size_t len = 0;

	for (uint32_t j = 0; j < 19; j++)
		len += snprintf(buf + len, STACK_MAX - len, "%s_function_number_%03u;", tag,
				(id * 7 + j * 13) % 200);
	snprintf(buf + len, STACK_MAX - len, "%s_leaf_%u", tag, id);
}

static void gen_fill(struct gen *g, size_t n, uint32_t first)
{
	static const char *const comms[] = { "nginx", "postgres", "java", "kworker/0:1" };

	for (size_t i = 0; i < n; i++) {
		uint32_t id = first + (uint32_t)i;

		make_stack(g->u[i], id, "user");
		make_stack(g->k[i], id % 50, "kern");
		g->v[i] = (struct store_sample){
			.tgid = 100 + id % 4,
			.pid = 100 + id % 4 + id % 3,
			.comm = comms[id % 4],
			.state = id % 4,
			.sum_ns = 1000 + id,
			.count = 1 + id % 5,
			.ustack = g->u[i],
			.kstack = g->k[i],
		};
	}
}

static void test_create_reopen(void)
{
	const char *path = db_path("reopen.db");
	struct store_sample v = { .tgid = 7,
				  .pid = 8,
				  .comm = "c",
				  .state = 1,
				  .sum_ns = 5,
				  .count = 1,
				  .ustack = "main;f",
				  .kstack = "",
				  .bytes = 4096 };
	struct store_window w, *list = NULL;
	struct store *s;
	struct got g = { 0 };
	size_t n = 0;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(pragma(s, "PRAGMA user_version") == 8);
	CHECK(pragma(s, "PRAGMA auto_vacuum") == 2); /* incremental */
	CHECK(add(s, 1000, 2000, 0, &v, 1, &w) == 0);
	CHECK(w.id > 0 && w.n_samples == 1 && w.n_stacks == 1 && w.bytes > 0);
	store_close(s);
	store_close(NULL);

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(pragma(s, "PRAGMA user_version") == 8);
	CHECK(store_windows_list(s, 0, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 1 && list[0].id == w.id && list[0].start_ms == 1000 && list[0].end_ms == 2000);
	CHECK(n == 1 && list[0].n_samples == 1 && list[0].n_stacks == 1 &&
	      list[0].bytes == w.bytes);
	free(list);
	CHECK(query_range(s, 0, 5000, &g, NULL) == 0);
	CHECK(g.n == 1);
	if (g.n == 1) {
		CHECK_STR(g.v[0].ustack, "main;f");
		CHECK_STR(g.v[0].kstack, "");
		CHECK_STR(g.v[0].chain, "");
		CHECK(g.v[0].s.sum_ns == 5 && g.v[0].s.tgid == 7 && g.v[0].s.bytes == 4096);
	}
	got_free(&g);
	store_close(s);
}

static void test_round_trip(void)
{
	const char *path = db_path("round.db");
	/* Any byte but NUL: ';' in a comm, invalid UTF-8, empty frames. */
	static const char odd_comm[] = "a;b \x01\xff\xc3\x28'\"%";
	static const char odd_stack[] = ";\xfe\xff;;x y;";
	struct store_sample w1[] = {
		{ 10, 11, "app", 0, 1, 100, 1, "main;read", "sys_read;schedule", "", 0, "", 0 },
		{ 10, 12, "app", 0, 2, 200, 2, "main;write", "", "", 0, "", 0 },
		/* A duplicate of the first. */
		{ 10, 11, "app", 0, 1, 7, 3, "main;read", "sys_read;schedule", "", 0, "", 0 },
		{ 20, 20, odd_comm, 0, 3, 5, 1, odd_stack, ";", "", 0, "", 0 },
		{ 30, 30, NULL, 0, 0, 1, 1, NULL, NULL, NULL, 0, NULL, 0 },
	};
	struct store_sample w2[] = {
		{ 10, 11, "app", 0, 1, 1000, 10, "main;read", "sys_read;schedule", "", 0, "", 0 },
		{ 20, 20, odd_comm, 0, 3, UINT64_MAX - 2, 1, odd_stack, ";", "", 0, "", 0 },
	};
	const struct got_row *r;
	struct store_window w;
	struct got g = { 0 };
	uint64_t windows = 0;
	struct store *s;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 10000, 20000, 0, w1, 5, &w) == 0);
	CHECK(w.n_samples == 4); /* the duplicate merged */
	CHECK(w.n_stacks == 4);
	CHECK(add(s, 20000, 30000, 0, w2, 2, &w) == 0);
	CHECK(w.n_samples == 2 && w.n_stacks == 2);

	CHECK(query_range(s, 10000, 30000, &g, &windows) == 0);
	CHECK(windows == 2);
	CHECK(g.n == 4);
	r = got_find(&g, 11, "app", 1, "main;read", "sys_read;schedule");
	CHECK(r && r->s.sum_ns == 1107 && r->s.count == 14 && r->s.tgid == 10);
	r = got_find(&g, 12, "app", 2, "main;write", "");
	CHECK(r && r->s.sum_ns == 200 && r->s.count == 2);
	r = got_find(&g, 20, odd_comm, 3, odd_stack, ";");
	CHECK(r && r->s.sum_ns == UINT64_MAX && r->s.count == 2); /* saturated */
	r = got_find(&g, 30, "", 0, "", "");
	CHECK(r && r->s.sum_ns == 1 && r->s.tgid == 30);
	for (size_t i = 0; i < g.n; i++) {
		CHECK_STR(g.v[i].chain, "");
		CHECK_STR(g.v[i].cgroup, ""); /* NULL or "" written */
	}

	/* One window only: no merging across. */
	CHECK(query_range(s, 10000, 20000, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 4);
	r = got_find(&g, 11, "app", 1, "main;read", "sys_read;schedule");
	CHECK(r && r->s.sum_ns == 107 && r->s.count == 4);

	/* A nonzero return from the callback stops the query. */
	got_free(&g);
	g.stop_after = 1;
	CHECK(store_query(s, &(struct store_query){ .from_ms = 0, .to_ms = 99999 }, collect, &g,
			  NULL, err, sizeof(err)) == 42);
	CHECK(g.n == 1);
	g.stop_after = 0;

	/* A deep stack of long frames reads back whole. */
	{
		size_t cap = 5000 * 64, len = 0;
		char *big = malloc(cap);
		struct store_sample deep = { 40, 40, "deep", 0, 1, 9, 1, big, big, big, 0, "", 0 };

		for (int i = 0; i < 5000; i++)
			len += snprintf(big + len, cap - len, "%sframe_%d_%040d", i ? ";" : "",
					i % 700, i);
		CHECK(add(s, 40000, 50000, 0, &deep, 1, &w) == 0);
		CHECK(query_range(s, 40000, 50000, &g, NULL) == 0);
		CHECK(g.n == 1);
		if (g.n == 1) {
			CHECK(!strcmp(g.v[0].ustack, big) && !strcmp(g.v[0].kstack, big) &&
			      !strcmp(g.v[0].chain, big));
			CHECK_STR(g.v[0].comm, "deep");
		}
		free(big);
	}

	/* Bad input. */
	CHECK(add(s, 5000, 4000, 0, w1, 1, NULL) == -EINVAL);
	CHECK(add(s, 5000, 6000, 0, NULL, 1, NULL) == -EINVAL);
	CHECK(add(s, 5000, 6000, 0, NULL, 0, &w) == 0); /* an empty window is fine */
	CHECK(w.n_samples == 0 && w.n_stacks == 0);
	got_free(&g);
	store_close(s);
}

static void test_filters(void)
{
	const char *path = db_path("filters.db");
	struct store_sample v[] = {
		{ 1, 1, "one", 0, 0, 1, 1, "a", "k", "", 0, "", 0 },
		{ 1, 2, "one", 0, 1, 2, 1, "a", "k", "", 0, "", 0 },
		{ 2, 2, "two", 0, 2, 4, 1, "b", "k", "", 0, "", 0 },
		{ 3, 3, "three", 0, 3, 8, 1, "c", "k", "", 0, "", 0 },
		{ 3, 4, "three", 0, 1, 16, 1, "c", "k", "", 0, "", 0 },
		{ 4, 4, "one", 0, 2, 32, 1, "d", "k", "", 0, "", 0 },
	};
	struct store_sample cap[] = { { 1, 1, "one", 0, 0, 1000, 1, "capture", "", "", 0, "", 0 } };
	uint32_t pids[] = { 1, 3 }, many[STORE_QUERY_MAX_PIDS + 1];
	struct store_query q = { .from_ms = 0, .to_ms = 100000 };
	struct got g = { 0 };
	uint64_t windows;
	struct store *s;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 1000, 2000, 0, v, 6, NULL) == 0);
	/* A capture overlapping the continuous window in time. */
	CHECK(add(s, 1500, 1800, 77, cap, 1, NULL) == 0);

	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 6 && got_sum_ns(&g) == 63);

	q.pids = pids;
	q.n_pids = 2;
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 4 && got_sum_ns(&g) == 1 + 2 + 8 + 16);

	q.comm = "three";
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 2 && got_sum_ns(&g) == 24);

	q.state_mask = 1u << 1;
	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(g.n == 1 && got_sum_ns(&g) == 16);
	CHECK(windows == 1); /* filters do not change the window count */

	q.n_pids = 0;
	q.comm = "one";
	q.state_mask = (1u << 0) | (1u << 2);
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 2 && got_sum_ns(&g) == 33);

	q.comm = "nobody";
	q.state_mask = 0;
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 0);

	q.comm = "";
	for (size_t i = 0; i < STORE_QUERY_MAX_PIDS + 1; i++)
		many[i] = (uint32_t)(i < 2 ? i + 1 : 1000 + i);
	q.pids = many;
	q.n_pids = STORE_QUERY_MAX_PIDS;
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 3 && got_sum_ns(&g) == 7);
	q.n_pids = STORE_QUERY_MAX_PIDS + 1;
	CHECK(query(s, &q, &g, NULL) == -EINVAL);

	/* The capture alone, by id; the range never includes it. */
	memset(&q, 0, sizeof(q));
	q.capture_id = 77;
	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 1 && got_sum_ns(&g) == 1000);
	if (g.n == 1)
		CHECK_STR(g.v[0].ustack, "capture");
	q.capture_id = 78;
	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(windows == 0 && g.n == 0);
	got_free(&g);
	store_close(s);
}

static void test_range(void)
{
	const char *path = db_path("range.db");
	struct store_sample v = { 1, 1, "c", 0, 0, 1, 1, "u", "k", "", 0, "", 0 };
	struct got g = { 0 };
	uint64_t windows;
	struct store *s;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	for (int i = 1; i <= 3; i++) {
		v.sum_ns = (uint64_t)i;
		CHECK(add(s, i * 1000, i * 1000 + 1000, 0, &v, 1, NULL) == 0);
	}
	/* from_ms <= start_ms < to_ms */
	CHECK(query_range(s, 2000, 3000, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 1 && got_sum_ns(&g) == 2);
	CHECK(query_range(s, 1999, 3001, &g, &windows) == 0);
	CHECK(windows == 2 && g.n == 1 && got_sum_ns(&g) == 5);
	CHECK(query_range(s, 2001, 3000, &g, &windows) == 0);
	CHECK(windows == 0 && g.n == 0);
	CHECK(query_range(s, 3000, 2000, &g, &windows) == 0);
	CHECK(windows == 0 && g.n == 0);
	got_free(&g);
	store_close(s);
}

static void test_interning(struct gen *gen)
{
	const char *path = db_path("intern.db");
	struct store_window w1, w2;
	int64_t pages0, pages1, pages2;
	struct got g = { 0 };
	struct store *s;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	gen_fill(gen, 500, 0);
	pages0 = pragma(s, "PRAGMA page_count");
	CHECK(add(s, 1000, 2000, 0, gen->v, 500, &w1) == 0);
	pages1 = pragma(s, "PRAGMA page_count");
	CHECK(add(s, 2000, 3000, 0, gen->v, 500, &w2) == 0);
	pages2 = pragma(s, "PRAGMA page_count");
	CHECK(w1.n_samples == 500 && w2.n_samples == 500 && w1.n_stacks == 500);
	CHECK_MSG((pages2 - pages1) * 3 < pages1 - pages0, "pages: %lld, %lld, %lld",
		  (long long)pages0, (long long)pages1, (long long)pages2);
	CHECK_MSG(w2.bytes * 3 < w1.bytes, "bytes %llu then %llu", (unsigned long long)w1.bytes,
		  (unsigned long long)w2.bytes);

	CHECK(query_range(s, 0, 5000, &g, NULL) == 0);
	CHECK(g.n == 500);
	for (size_t i = 0; i < g.n && i < 500; i++) {
		const struct store_sample *in = &gen->v[i];
		const struct got_row *r =
			got_find(&g, in->pid, in->comm, in->state, in->ustack, in->kstack);

		CHECK(r && r->s.sum_ns == 2 * in->sum_ns && r->s.count == 2 * in->count);
	}
	got_free(&g);
	store_close(s);
}

/* The writer's caches stay bounded however many distinct stacks come (process
 * churn), and a stack that recurs keeps its row through the generations. */
static void test_cache_bound(struct gen *gen)
{
	const char *path = db_path("cache.db");
	const size_t windows = 60, fresh = 1900, recurring = 100;
	size_t most = 0;
	struct got g = { 0 };
	struct store *s;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	for (size_t w = 0; w < windows; w++) {
		struct store_window win;

		gen_fill(gen, recurring, 1000000); /* the same stacks every window */
		for (size_t i = 0; i < fresh; i++) {
			uint32_t id = (uint32_t)(w * fresh + i);

			make_stack(gen->u[recurring + i], id, "user");
			make_stack(gen->k[recurring + i], id % 50, "kern");
			gen->v[recurring + i] = gen->v[i % recurring];
			gen->v[recurring + i].ustack = gen->u[recurring + i];
			gen->v[recurring + i].kstack = gen->k[recurring + i];
		}
		CHECK(add(s, 1000 * (int64_t)(w + 1), 1000 * (int64_t)(w + 2), 0, gen->v,
			  recurring + fresh, &win) == 0);
		if (store_cache_bytes(s) > most)
			most = store_cache_bytes(s);
	}
	/* Some 57 MiB of distinct stack text went through (caches that only
	 * dropped at 64 MiB took 74); two generations of each cache take at
	 * most 38 MiB. */
	CHECK_MSG(most <= (size_t)38 << 20, "the caches took %zu bytes", most);
	CHECK(query_range(s, 0, 1000 * (int64_t)(windows + 2), &g, NULL) == 0);
	gen_fill(gen, recurring, 1000000);
	for (size_t i = 0; i < recurring; i++) {
		const struct store_sample *in = &gen->v[i];
		const struct got_row *r =
			got_find(&g, in->pid, in->comm, in->state, in->ustack, in->kstack);

		CHECK(r && r->s.sum_ns == windows * in->sum_ns && r->s.count == windows * in->count);
	}
	CHECK(pragma(s, "SELECT count(*) FROM stacks") >= (int64_t)(windows * fresh));
	got_free(&g);
	store_close(s);
}

static void test_age(void)
{
	const char *path = db_path("age.db");
	struct store_limits limits = { .max_age_ms = 3600 * 1000 };
	struct store_sample v = { 1, 1, "c", 0, 0, 1, 1, "u", "k", "", 0, "", 0 };
	struct store_window w1, w2, w3, *list = NULL;
	int64_t now = now_ms();
	struct store *s;
	size_t n = 0;

	CHECK(store_open(path, &limits, &s, err, sizeof(err)) == 0);
	/* Too old already, but the window just added is never evicted. */
	CHECK(add(s, now - 7200 * 1000, now - 7100 * 1000, 0, &v, 1, &w1) == 0);
	CHECK(add(s, now - 7100 * 1000, now - 7000 * 1000, 0, &v, 1, &w2) == 0);
	CHECK(store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 1 && list[0].id == w2.id);
	free(list);
	CHECK(add(s, now - 1000, now, 0, &v, 1, &w3) == 0);
	CHECK(store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 1 && list[0].id == w3.id);
	free(list);
	store_close(s);
}

/*
 * The push outbox: a new target starts at the newest continuous window; the
 * next window after a cursor skips captures' windows; sent and set aside
 * move the cursor forward only; an evicted window that a target had not
 * sent counts as lost for it alone; all of it read back on another
 * connection (the pusher's) and after reopening.
 */
static void test_push_outbox(void)
{
	const char *path = db_path("push.db");
	struct store_limits limits = { .max_age_ms = 3600 * 1000 };
	struct store_sample v = { 1, 1, "c", 0, 0, 1, 1, "u", "k", "", 0, "", 0 };
	struct store_window w[5], next, *list = NULL;
	struct store_push_cursor a, b;
	struct store *s, *s2;
	int64_t now = now_ms(), newest_end;
	uint64_t backlog;
	size_t n = 0;
	sqlite3_stmt *st;

	remove_db(path);
	CHECK(store_open(path, &limits, &s, err, sizeof(err)) == 0);
	CHECK(store_open_another(path, &s2, err, sizeof(err)) == 0);
	/* Old enough to be evicted by the next add. */
	CHECK(add(s, now - 7300 * 1000, now - 7200 * 1000, 0, &v, 1, &w[0]) == 0);
	CHECK(store_push_target(s2, "a", &a, err, sizeof(err)) == 0);
	CHECK(a.cursor == w[0].id && !a.sent && !a.lost && !a.last_success_ms);
	CHECK(store_push_next(s2, a.cursor, &next, err, sizeof(err)) == -ENOENT);
	CHECK(add(s, now - 3000, now - 2000, 7, &v, 1, &w[1]) == 0); /* a capture's */
	CHECK(add(s, now - 2000, now - 1000, 0, &v, 1, &w[2]) == 0);
	CHECK(store_push_next(s2, a.cursor, &next, err, sizeof(err)) == 0);
	CHECK(next.id == w[2].id && next.start_ms == w[2].start_ms && next.end_ms == w[2].end_ms);
	/* b is made now: w[2] is before it. */
	CHECK(store_push_target(s2, "b", &b, err, sizeof(err)) == 0 && b.cursor == w[2].id);
	CHECK(store_push_backlog(s2, a.cursor, &backlog, &newest_end, err, sizeof(err)) == 0);
	CHECK(backlog == 1 && newest_end == w[2].end_ms);

	CHECK(store_push_sent(s2, "a", w[2].id, now, err, sizeof(err)) == 0);
	CHECK(store_push_sent(s2, "a", w[0].id, now + 1, err, sizeof(err)) == 0); /* never back */
	CHECK(store_push_target(s2, "a", &a, err, sizeof(err)) == 0);
	CHECK(a.cursor == w[2].id && a.sent == 2 && a.last_success_ms == now + 1);
	CHECK(add(s, now - 1000, now, 0, &v, 1, &w[3]) == 0);
	CHECK(store_push_set_aside(s2, "a", w[3].id, now, 400, "too old", err, sizeof(err)) == 0);
	CHECK(store_push_target(s2, "a", &a, err, sizeof(err)) == 0);
	CHECK(a.cursor == w[3].id && a.set_aside == 1 && a.sent == 2);
	CHECK(sqlite3_prepare_v2(store__db(s2),
				 "SELECT status, message FROM push_set_aside WHERE target = 'a' AND "
				 "window_id = ?1",
				 -1, &st, NULL) == SQLITE_OK);
	sqlite3_bind_int64(st, 1, (int64_t)w[3].id);
	CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 400 &&
	      !strcmp((const char *)sqlite3_column_text(st, 1), "too old"));
	sqlite3_finalize(st);

	/* w[0] goes by age with this add: every cursor is past it, nobody lost
	 * it. w[4] goes with the next: a and b had not sent it, c (made when it
	 * was the newest) had nothing to send. */
	CHECK(add(s, now - 7100 * 1000, now - 7000 * 1000, 0, &v, 1, &w[4]) == 0);
	CHECK(store_push_target(s2, "a", &a, err, sizeof(err)) == 0 && a.lost == 0);
	CHECK(store_push_target(s2, "c", &a, err, sizeof(err)) == 0 && a.cursor == w[4].id);
	CHECK(add(s, now, now + 1000, 0, &v, 1, NULL) == 0); /* evicts w[4] */
	CHECK(store_push_target(s2, "a", &a, err, sizeof(err)) == 0 && a.lost == 1);
	CHECK(store_push_target(s2, "b", &b, err, sizeof(err)) == 0 && b.lost == 1);
	CHECK(store_push_target(s2, "c", &a, err, sizeof(err)) == 0 && a.lost == 0);
	CHECK(store_push_range(s2, now - 2000, now + 1, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 3 && list[0].id == w[2].id && list[1].id == w[3].id); /* not the capture's */
	free(list);
	store_close(s2);
	store_close(s);

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(store_push_target(s, "a", &a, err, sizeof(err)) == 0);
	CHECK(a.cursor == w[3].id && a.sent == 2 && a.set_aside == 1);
	store_close(s);
}

static void test_size(struct gen *gen)
{
	const char *path = db_path("size.db");
	struct store_limits limits = { .max_db_bytes = 512 * 1024 };
	struct store_hist hists[4] = {
		{ 100, "proc", 0, 1, 1 },
		{ 100, "proc", 0, 2, 1 },
		{ 101, "proc", 1, 1, 1 },
		{ 102, "other", 1, 9, 1 },
	};
	struct store_window w, *list = NULL;
	uint64_t first_id = 0, last_id = 0;
	struct got g = { 0 };
	struct store_stats stats;
	char wal[300];
	struct store *s;
	size_t n = 0;
	bool within = true;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	CHECK(store_open(path, &limits, &s, err, sizeof(err)) == 0);
	for (int i = 0; i < 80; i++) {
		/* Mostly the same stacks, a few new ones each window. */
		gen_fill(gen, 500, (uint32_t)i * 10);
		CHECK(add_hists(s, i * 10000, i * 10000 + 10000, 0, gen->v, 500, hists, 4, &w) ==
		      0);
		if (!i)
			first_id = w.id;
		last_id = w.id;
		CHECK(store_stats(s, &stats) == 0);
		if (stats.db_bytes > limits.max_db_bytes ||
		    file_bytes(path) + file_bytes(wal) > limits.max_db_bytes) {
			fprintf(stderr, "window %d: db_bytes %llu, file %llu + wal %llu\n", i,
				(unsigned long long)stats.db_bytes,
				(unsigned long long)file_bytes(path),
				(unsigned long long)file_bytes(wal));
			within = false;
		}
	}
	CHECK(within);
	CHECK(store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) == 0);
	CHECK(n > 5 && n < 80);
	/* The newest survive, contiguous: the oldest went first. */
	for (size_t i = 0; i < n; i++)
		CHECK(list[i].id == last_id - (n - 1 - i) &&
		      list[i].start_ms == (int64_t)(80 - n + i) * 10000);
	CHECK(n && list[0].id > first_id);
	CHECK(store_stats(s, &stats) == 0);
	CHECK(stats.windows == n);
	free(list);
	/* Evicted windows took their histograms with them. */
	CHECK(pragma(s, "SELECT count(*) FROM hist") == (int64_t)(3 * n));
	CHECK(pragma(s, "SELECT count(*) FROM hist WHERE window_id NOT IN (SELECT id FROM "
			"windows)") == 0);
	/* The newest window reads back exactly, after collections that
	 * emptied the interning caches. */
	CHECK(query_range(s, 79 * 10000, 80 * 10000, &g, NULL) == 0);
	CHECK(g.n == 500);
	for (size_t i = 0; i < g.n && i < 500; i++) {
		const struct store_sample *in = &gen->v[i];
		const struct got_row *r =
			got_find(&g, in->pid, in->comm, in->state, in->ustack, in->kstack);

		CHECK(r && r->s.sum_ns == in->sum_ns && r->s.count == in->count);
	}
	got_free(&g);
	/* The stacks of evicted windows were collected: the user stacks of the
	 * n windows left, plus the 50 kernel stacks and the empty chain. */
	CHECK_MSG(pragma(s, "SELECT count(*) FROM stacks") == (int64_t)(500 + 10 * (n - 1) + 51),
		  "%lld stacks, %zu windows", (long long)pragma(s, "SELECT count(*) FROM stacks"),
		  n);

	/* A window alone larger than the bound is kept, everything else goes. */
	gen_fill(gen, 2000, 100000);
	CHECK(add(s, 900000, 910000, 0, gen->v, 2000, &w) == 0);
	CHECK(store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 1 && list[0].id == w.id);
	free(list);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 0);
	store_close(s);
}

static void test_full(struct gen *gen)
{
	const char *path = db_path("full.db");
	struct store_sample v = { 1, 1, "c", 0, 0, 10, 1, "u;v", "k", "", 0, "", 0 };
	struct store_window w, *list = NULL;
	struct got g = { 0 };
	uint64_t windows;
	struct store *s;
	size_t n = 0;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 1000, 2000, 0, &v, 1, NULL) == 0);
	CHECK(add(s, 2000, 3000, 0, &v, 1, NULL) == 0);
	CHECK(pragma(s, "PRAGMA max_page_count = 1") > 0); /* the current size */

	gen_fill(gen, 2000, 5000);
	CHECK(add(s, 3000, 4000, 0, gen->v, 2000, NULL) == -ENOSPC);
	CHECK(store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 2);
	free(list);
	CHECK(query_range(s, 0, 10000, &g, &windows) == 0);
	CHECK(windows == 2 && g.n == 1 && got_sum_ns(&g) == 20);
	CHECK(pragma(s, "SELECT count(*) FROM stacks") == 3); /* u;v, k and the empty chain */

	/* Limit lifted: the same window goes in whole. */
	CHECK(pragma(s, "PRAGMA max_page_count = 1000000") >= 1000000);
	CHECK(add(s, 3000, 4000, 0, gen->v, 2000, &w) == 0);
	CHECK(w.n_samples == 2000);
	CHECK(query_range(s, 3000, 4000, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 2000);
	for (size_t i = 0; i < g.n && i < 2000; i += 97) {
		const struct store_sample *in = &gen->v[i];
		const struct got_row *r =
			got_find(&g, in->pid, in->comm, in->state, in->ustack, in->kstack);

		CHECK(r && r->s.sum_ns == in->sum_ns);
	}
	got_free(&g);
	store_close(s);
}

static char *read_all(const char *path, size_t *ret_n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*ret_n = (size_t)n;
	return buf;
}

static void write_all(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	CHECK(f && fwrite(p, 1, n, f) == n);
	if (f)
		fclose(f);
}

/* store_open fails with want and leaves the file's bytes as they were. */
static void check_refused(const char *path, int want, const char *text)
{
	size_t n0, n1;
	char *before = read_all(path, &n0), *after;
	struct store *s = NULL;
	int r;

	err[0] = '\0';
	r = store_open(path, NULL, &s, err, sizeof(err));
	CHECK_MSG(r == want, "%s: got %d, want %d (%s)", path, r, want, err);
	CHECK_MSG(strstr(err, text), "message \"%s\" lacks \"%s\"", err, text);
	if (r == 0)
		store_close(s);
	after = read_all(path, &n1);
	CHECK(before && after && n0 == n1 && !memcmp(before, after, n0));
	free(before);
	free(after);
}

static void test_refused(void)
{
	const char *path = db_path("garbage.db");
	struct store_sample v = { 1, 1, "c", 0, 0, 10, 1, "u;v", "k", "", 0, "", 0 };
	unsigned char junk[16384];
	uint32_t x = 12345;
	struct store *s;
	size_t n;
	char *bytes;
	sqlite3 *db;

	for (size_t i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245 + 12345;
		junk[i] = (unsigned char)(x >> 16);
	}
	write_all(path, junk, sizeof(junk));
	check_refused(path, -EIO, "not a usable SQLite database");

	/* A real store with its pages after the first overwritten. */
	path = db_path("corrupt.db");
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 1000, 2000, 0, &v, 1, NULL) == 0);
	store_close(s);
	bytes = read_all(path, &n);
	CHECK(bytes && n > 8192);
	if (bytes && n > 8192) {
		memset(bytes + 4096, 0x5a, n - 4096);
		write_all(path, bytes, n);
	}
	free(bytes);
	check_refused(path, -EIO, "failed its integrity check: ");

	/* A newer schema than this code knows. */
	path = db_path("newer.db");
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	store_close(s);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA user_version = 9", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	check_refused(path, -EPROTO, "schema version 9");

	/* An empty database made elsewhere, in WAL mode, is adopted. */
	path = db_path("empty.db");
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(pragma(s, "PRAGMA auto_vacuum") == 2 && pragma(s, "PRAGMA user_version") == 8);
	store_close(s);

	/* Somebody else's database. */
	path = db_path("foreign.db");
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "CREATE TABLE samples (x)", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	check_refused(path, -EPROTO, "another program");

	/* No such directory. */
	CHECK(store_open(db_path("nodir/x.db"), NULL, &s, err, sizeof(err)) < 0);
}

/* A committed window survives kill -9 of the process that wrote it. */
static void test_crash(void)
{
	const char *path = db_path("crash.db");
	struct store_sample v = { 1, 2, "c", 0, 1, 12345, 6, "main;f", "k", "", 0, "", 0 };
	struct got g = { 0 };
	struct store *s;
	int status = 0;
	pid_t pid;

	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (store_open(path, NULL, &s, err, sizeof(err)) == 0 &&
		    add(s, 1000, 2000, 0, &v, 1, NULL) == 0)
			raise(SIGKILL);
		_exit(1);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(query_range(s, 0, 5000, &g, NULL) == 0);
	CHECK(g.n == 1 && got_sum_ns(&g) == 12345);
	got_free(&g);
	store_close(s);
}

static void test_chain(void)
{
	const char *path = db_path("chain.db");
	static const char odd_chain[] = "waker;\xfe\xff;;x y;";
	static const char u[] = "main;read", k[] = "sys_read;schedule";
	struct store_sample v[] = {
		/* The same target stacks woken by two wakers: two rows. */
		{ 10, 11, "app", 2, 1, 100, 1, u, k, "kworker;wake_up_process", 0, "", 0 },
		{ 10, 11, "app", 2, 1, 200, 2, u, k, "irq;wake_up", 0, "", 0 },
		{ 10, 11, "app", 2, 1, 5, 1, u, k, "kworker;wake_up_process", 0, "", 0 }, /* dup */
		/* No chain: "" and NULL are the same. */
		{ 10, 11, "app", 2, 1, 1000, 1, u, k, "", 0, "", 0 },
		{ 10, 11, "app", 2, 1, 2000, 1, u, k, NULL, 0, "", 0 },
		/* A chain equal to a user stack is the same stacks row. */
		{ 10, 11, "app", 3, 1, 7, 1, u, "", u, 0, "", 0 },
		{ 20, 20, "x", 1, 1, 9, 1, "", "", odd_chain, 0, "", 0 },
	};
	const struct got_row *r;
	struct store_window w1, w2;
	struct got g = { 0 };
	struct store *s;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 1000, 2000, 0, v, 7, &w1) == 0);
	CHECK(w1.n_samples == 5);
	CHECK(w1.n_stacks == 5); /* (ustack, kstack, chain) triples */
	/* main;read, sys_read;schedule, two chains, "" and odd_chain. */
	CHECK(pragma(s, "SELECT count(*) FROM stacks") == 6);
	CHECK(pragma(s, "SELECT count(*) FROM series") == 5);
	store_close(s);

	/* Read back after a reopen: nothing lives in the caches only. */
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(query_range(s, 0, 5000, &g, NULL) == 0);
	CHECK(g.n == 5);
	r = got_find_chain(&g, 11, 2, u, k, "kworker;wake_up_process");
	CHECK(r && r->s.sum_ns == 105 && r->s.count == 2 && r->s.tgid == 10);
	r = got_find_chain(&g, 11, 2, u, k, "irq;wake_up");
	CHECK(r && r->s.sum_ns == 200 && r->s.count == 2);
	r = got_find_chain(&g, 11, 2, u, k, "");
	CHECK(r && r->s.sum_ns == 3000 && r->s.count == 2);
	r = got_find_chain(&g, 11, 3, u, "", u);
	CHECK(r && r->s.sum_ns == 7);
	r = got_find_chain(&g, 20, 1, "", "", odd_chain);
	CHECK(r && r->s.sum_ns == 9 && r->s.state == 1);
	if (r)
		CHECK_STR(r->comm, "x");

	/* The series recur in the next window: no new rows but samples. */
	CHECK(add(s, 2000, 3000, 0, v, 7, &w2) == 0);
	CHECK(w2.n_samples == 5 && w2.n_stacks == 5);
	CHECK(pragma(s, "SELECT count(*) FROM series") == 5);
	CHECK(w2.bytes < w1.bytes);
	CHECK(query_range(s, 0, 5000, &g, NULL) == 0);
	CHECK(g.n == 5);
	r = got_find_chain(&g, 11, 2, u, k, "irq;wake_up");
	CHECK(r && r->s.sum_ns == 400 && r->s.count == 4);
	got_free(&g);
	store_close(s);
}

static void test_kinds(void)
{
	const char *path = db_path("kinds.db");
	struct store_sample v[] = {
		{ 1, 1, "a", 0, 1, 1, 1, "u", "k", "", 0, "", 0 },    /* offcpu */
		{ 1, 1, "a", 1, 1, 2, 1, "u", "k", "w", 0, "", 0 },   /* wakeup */
		{ 1, 1, "a", 2, 1, 4, 1, "u", "k", "w", 0, "", 0 },   /* offwake */
		{ 1, 1, "a", 3, 2, 8, 1, "u", "k", "w;v", 0, "", 0 }, /* chain */
		{ 2, 2, "b", 4, 0, 16, 1, "u", "k", "", 0, "", 0 },   /* runq */
	};
	struct store_sample cap[] = { { 1, 1, "a", 4, 0, 1000, 1, "u", "k", "", 0, "", 0 } };
	struct store_query q = { .from_ms = 0, .to_ms = 10000 };
	uint32_t pid2[] = { 2 };
	struct got g = { 0 };
	uint64_t windows;
	struct store *s;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 1000, 2000, 0, v, 5, NULL) == 0);
	CHECK(add(s, 1000, 2000, 3, cap, 1, NULL) == 0);

	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 5 && got_sum_ns(&g) == 31);
	q.kind_mask = 1u << 0;
	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 1 && got_sum_ns(&g) == 1);
	if (g.n == 1)
		CHECK(g.v[0].s.kind == 0);
	q.kind_mask = (1u << 1) | (1u << 2);
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 2 && got_sum_ns(&g) == 6);
	q.kind_mask = 1u << 4;
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 1 && got_sum_ns(&g) == 16);
	if (g.n == 1)
		CHECK(g.v[0].s.kind == 4 && g.v[0].s.tgid == 2);

	/* With the other filters. */
	q.kind_mask = 1u << 3;
	q.state_mask = 1u << 1;
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 0);
	q.state_mask = 1u << 2;
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 1 && got_sum_ns(&g) == 8);
	if (g.n == 1)
		CHECK_STR(g.v[0].chain, "w;v");
	q.state_mask = 0;
	q.kind_mask = (1u << 2) | (1u << 4);
	q.pids = pid2;
	q.n_pids = 1;
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 1 && got_sum_ns(&g) == 16);
	q.comm = "a";
	CHECK(query(s, &q, &g, NULL) == 0);
	CHECK(g.n == 0);

	/* A kind nobody has: no rows, the same windows. */
	memset(&q, 0, sizeof(q));
	q.to_ms = 10000;
	q.kind_mask = 1u << 5;
	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(g.n == 0 && windows == 1);

	/* A capture, by kind. */
	memset(&q, 0, sizeof(q));
	q.capture_id = 3;
	q.kind_mask = 1u << 4;
	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 1 && got_sum_ns(&g) == 1000);
	q.kind_mask = 1u << 0;
	CHECK(query(s, &q, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 0);
	got_free(&g);
	store_close(s);
}

/* Histogram rows a query returned, with copies of their comms. */
struct hgot_row {
	struct store_hist h;
	char *comm;
};

struct hgot {
	struct hgot_row *v;
	size_t n;
	size_t stop_after; /* 0: never */
};

static int hcollect(void *arg, const struct store_hist *h)
{
	struct hgot *g = arg;
	struct hgot_row *r;

	g->v = realloc(g->v, (g->n + 1) * sizeof(*g->v));
	r = &g->v[g->n++];
	r->h = *h;
	r->comm = strdup(h->comm);
	if (g->stop_after && g->n == g->stop_after)
		return 42;
	return 0;
}

static void hgot_free(struct hgot *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].comm);
	free(g->v);
	memset(g, 0, sizeof(*g));
}

static int hquery(struct store *s, const struct store_query *q, uint32_t type, struct hgot *g,
		  uint64_t *windows)
{
	hgot_free(g);
	return store_hist_query(s, q, type, hcollect, g, windows, err, sizeof(err));
}

static int hquery_range(struct store *s, int64_t from, int64_t to, uint32_t type, struct hgot *g,
			uint64_t *windows)
{
	struct store_query q = { .from_ms = from, .to_ms = to };

	return hquery(s, &q, type, g, windows);
}

/* Row i of g is (tgid, bucket, count, comm) of type. */
#define CHECK_HIST(g, i, type_, tgid_, bucket_, count_, comm_)                                     \
	CHECK_MSG((i) < (g)->n && (g)->v[i].h.type == (type_) && (g)->v[i].h.tgid == (tgid_) &&    \
			  (g)->v[i].h.bucket == (bucket_) && (g)->v[i].h.count == (count_) &&      \
			  !strcmp((g)->v[i].comm, comm_),                                          \
		  "row %zu of %zu: want %u/%u/%llu/%s", (size_t)(i), (g)->n, (unsigned)(tgid_),    \
		  (unsigned)(bucket_), (unsigned long long)(count_), comm_)

static void test_hist(void)
{
	const char *path = db_path("hist.db");
	struct store_hist a[] = {
		{ 10, "old10", 0, 3, 5 },
		{ 10, "old10", 0, 3, 2 }, /* summed */
		{ 10, "old10", 0, 4, 1 },
		{ 10, "old10", 1, 0, 100 },
		{ 20, "twenty", 0, 31, UINT64_MAX - 1 },
		{ 40, "first", 0, 1, 1 },
		{ 40, "second", 0, 1, 1 }, /* summed; the first comm stays */
	};
	struct store_hist b[] = {
		{ 10, "new10", 0, 3, 10 },
		{ 20, "twenty", 0, 31, 5 }, /* saturates across windows */
		{ 30, "thirty", 1, 2, 4 },
		{ 10, "new10", 0, 0, 1 },
	};
	struct store_hist c[] = { { 10, "cap", 0, 3, 1000 } };
	struct store_hist d[] = { { 10, "later", 0, 3, 1 } };
	struct store_hist bad_type[] = { { 1, "x", 2, 0, 1 } };
	struct store_hist bad_bucket[] = { { 1, "x", 0, STORE_HIST_BUCKETS, 1 } };
	struct store_sample v = { 1, 1, "c", 0, 0, 10, 1, "u", "k", "", 0, "", 0 };
	struct store_query q = { .from_ms = 0, .to_ms = 3000 };
	uint32_t pids[] = { 20, 30 };
	struct store_window wa, wb, *list = NULL;
	struct hgot g = { 0 };
	uint64_t windows;
	struct store *s;
	size_t n = 0;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 0, 500, 0, &v, 1, NULL) == 0); /* without histograms */
	CHECK(add_hists(s, 1000, 2000, 0, &v, 1, a, 7, &wa) == 0);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 4); /* a row per process and type */
	CHECK(add_hists(s, 2000, 3000, 0, NULL, 0, b, 4, &wb) == 0);
	CHECK(wb.n_samples == 0 && wb.bytes > 4 * 10);
	CHECK(add_hists(s, 1500, 1800, 5, NULL, 0, c, 1, NULL) == 0);
	CHECK(add_hists(s, 5000, 6000, 0, NULL, 0, d, 1, NULL) == 0);

	/* Summed within a call and across windows, ordered by tgid and bucket;
	 * comm from the newest window. */
	CHECK(hquery(s, &q, 0, &g, &windows) == 0);
	CHECK(windows == 3 && g.n == 5);
	CHECK_HIST(&g, 0, 0, 10, 0, 1, "new10");
	CHECK_HIST(&g, 1, 0, 10, 3, 17, "new10");
	CHECK_HIST(&g, 2, 0, 10, 4, 1, "new10");
	CHECK_HIST(&g, 3, 0, 20, 31, UINT64_MAX, "twenty");
	CHECK_HIST(&g, 4, 0, 40, 1, 2, "first");

	/* The other type, with its own newest comm: tgid 10 has run-queue
	 * buckets in the older window only. */
	CHECK(hquery(s, &q, 1, &g, &windows) == 0);
	CHECK(windows == 3 && g.n == 2);
	CHECK_HIST(&g, 0, 1, 10, 0, 100, "old10");
	CHECK_HIST(&g, 1, 1, 30, 2, 4, "thirty");

	/* Range selection: from_ms <= start_ms < to_ms. */
	CHECK(hquery_range(s, 1000, 2000, 0, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 4);
	CHECK_HIST(&g, 0, 0, 10, 3, 7, "old10");
	CHECK_HIST(&g, 1, 0, 10, 4, 1, "old10");
	CHECK_HIST(&g, 2, 0, 20, 31, UINT64_MAX - 1, "twenty");
	CHECK_HIST(&g, 3, 0, 40, 1, 2, "first");
	CHECK(hquery_range(s, 1001, 2000, 0, &g, &windows) == 0);
	CHECK(windows == 0 && g.n == 0);
	CHECK(hquery_range(s, 0, 10000, 0, &g, &windows) == 0);
	CHECK(windows == 4 && g.n == 5);
	CHECK_HIST(&g, 1, 0, 10, 3, 18, "later");
	CHECK_HIST(&g, 0, 0, 10, 0, 1, "later");

	/* The capture alone. */
	memset(&q, 0, sizeof(q));
	q.capture_id = 5;
	CHECK(hquery(s, &q, 0, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 1);
	CHECK_HIST(&g, 0, 0, 10, 3, 1000, "cap");
	CHECK(hquery(s, &q, 1, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 0);

	/* pids and comm filter; state_mask and kind_mask do not. */
	memset(&q, 0, sizeof(q));
	q.to_ms = 3000;
	q.pids = pids;
	q.n_pids = 2;
	q.state_mask = 1u << 3;
	q.kind_mask = 1u << 4;
	CHECK(hquery(s, &q, 0, &g, &windows) == 0);
	CHECK(windows == 3 && g.n == 1);
	CHECK_HIST(&g, 0, 0, 20, 31, UINT64_MAX, "twenty");
	CHECK(hquery(s, &q, 1, &g, NULL) == 0);
	CHECK(g.n == 1);
	CHECK_HIST(&g, 0, 1, 30, 2, 4, "thirty");
	q.n_pids = 0;
	q.comm = "old10";
	CHECK(hquery(s, &q, 0, &g, NULL) == 0);
	CHECK(g.n == 2);
	CHECK_HIST(&g, 0, 0, 10, 3, 7, "old10");
	CHECK_HIST(&g, 1, 0, 10, 4, 1, "old10");
	q.comm = "nobody";
	CHECK(hquery(s, &q, 0, &g, NULL) == 0);
	CHECK(g.n == 0);

	/* A nonzero return from the callback stops the query. */
	hgot_free(&g);
	g.stop_after = 2;
	CHECK(store_hist_query(s, &(struct store_query){ .to_ms = 3000 }, 0, hcollect, &g, NULL,
			       err, sizeof(err)) == 42);
	CHECK(g.n == 2);
	g.stop_after = 0;

	/* Newest is by start_ms, then id: not the order of insertion alone. */
	memset(&q, 0, sizeof(q));
	q.capture_id = 6;
	c[0].comm = "e1";
	CHECK(add_hists(s, 1500, 1600, 6, NULL, 0, c, 1, NULL) == 0);
	c[0].comm = "e2";
	CHECK(add_hists(s, 1500, 1600, 6, NULL, 0, c, 1, NULL) == 0);
	c[0].comm = "e0";
	CHECK(add_hists(s, 1400, 1500, 6, NULL, 0, c, 1, NULL) == 0);
	CHECK(hquery(s, &q, 0, &g, &windows) == 0);
	CHECK(windows == 3 && g.n == 1);
	CHECK_HIST(&g, 0, 0, 10, 3, 3000, "e2");

	/* Bad input; nothing is stored. */
	CHECK(hquery_range(s, 0, 3000, 2, &g, NULL) == -EINVAL);
	q.comm = NULL;
	q.n_pids = STORE_QUERY_MAX_PIDS + 1;
	CHECK(hquery(s, &q, 0, &g, NULL) == -EINVAL);
	CHECK(add_hists(s, 7000, 8000, 0, &v, 1, bad_type, 1, NULL) == -EINVAL);
	CHECK(add_hists(s, 7000, 8000, 0, &v, 1, bad_bucket, 1, NULL) == -EINVAL);
	CHECK(add_hists(s, 7000, 8000, 0, &v, 1, NULL, 1, NULL) == -EINVAL);
	CHECK(store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 8);
	free(list);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 4 + 3 + 1 + 1 + 3);

	/* A row whose buckets are not (bucket, count) pairs is an error, not
	 * a histogram: a truncated varint, a bucket out of range, nothing. */
	static const char *const corrupt[] = { "x'8080'", "x'2001'", "x''" };

	for (size_t i = 0; i < sizeof(corrupt) / sizeof(corrupt[0]); i++) {
		char sql[128];

		snprintf(sql, sizeof(sql), "UPDATE hist SET buckets = %s WHERE tgid = 30",
			 corrupt[i]);
		CHECK(sqlite3_exec(store__db(s), sql, NULL, NULL, NULL) == SQLITE_OK);
		CHECK(hquery_range(s, 0, 3000, 1, &g, NULL) == -EIO);
		CHECK(strstr(err, "histogram of process 30 is corrupt"));
	}
	hgot_free(&g);
	store_close(s);
}

/* Age eviction takes a window's histograms; the comms only they use are
 * collected with them, the others stay. */
static void test_hist_evict(void)
{
	const char *path = db_path("hist-evict.db");
	struct store_limits limits = { .max_age_ms = 3600 * 1000 };
	struct store_sample v = { 1, 1, "c", 0, 0, 1, 1, "u", "k", "", 0, "", 0 };
	struct store_hist h1[] = { { 5, "histonly1", 0, 2, 3 } };
	struct store_hist h2[] = { { 6, "histonly2", 1, 2, 3 } };
	struct store_window w1, w2;
	int64_t now = now_ms();
	struct hgot g = { 0 };
	struct store *s;
	char sql[128];

	CHECK(store_open(path, &limits, &s, err, sizeof(err)) == 0);
	CHECK(add_hists(s, now - 7200 * 1000, now - 7100 * 1000, 0, &v, 1, h1, 1, &w1) == 0);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 1);
	CHECK(add_hists(s, now - 7100 * 1000, now - 7000 * 1000, 0, &v, 1, h2, 1, &w2) == 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM hist WHERE window_id = %llu",
		 (unsigned long long)w1.id);
	CHECK(pragma(s, sql) == 0);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 1);
	CHECK(pragma(s, "SELECT count(*) FROM strings WHERE name = CAST('histonly1' AS BLOB)") ==
	      0);
	CHECK(pragma(s, "SELECT count(*) FROM strings WHERE name = CAST('histonly2' AS BLOB)") ==
	      1);
	CHECK(hquery_range(s, INT64_MIN, INT64_MAX, 1, &g, NULL) == 0);
	CHECK(g.n == 1);
	CHECK_HIST(&g, 0, 1, 6, 2, 3, "histonly2");
	CHECK(hquery_range(s, INT64_MIN, INT64_MAX, 0, &g, NULL) == 0);
	CHECK(g.n == 0);

	/* The comm comes back as a new string when used again. */
	CHECK(add_hists(s, now - 1000, now, 0, &v, 1, h1, 1, NULL) == 0);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 1);
	CHECK(hquery_range(s, INT64_MIN, INT64_MAX, 0, &g, NULL) == 0);
	CHECK(g.n == 1);
	CHECK_HIST(&g, 0, 0, 5, 2, 3, "histonly1");
	hgot_free(&g);
	store_close(s);
}

/*
 * Schema version 1, as store.c wrote it before version 2. A copy, not a
 * reference: it must stay what shipped whatever store.c becomes.
 */
static const char schema_v1[] =
	"CREATE TABLE strings (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	name BLOB NOT NULL UNIQUE\n"
	");\n"
	"CREATE TABLE stacks (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	frames BLOB NOT NULL UNIQUE\n"
	");\n"
	"CREATE TABLE series (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	pid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	kind INTEGER NOT NULL,\n"
	"	state INTEGER NOT NULL,\n"
	"	ustack_id INTEGER NOT NULL,\n"
	"	kstack_id INTEGER NOT NULL,\n"
	"	UNIQUE (tgid, pid, comm_id, kind, state, ustack_id, kstack_id)\n"
	");\n"
	"CREATE TABLE windows (\n"
	"	id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"	start_ms INTEGER NOT NULL,\n"
	"	end_ms INTEGER NOT NULL,\n"
	"	capture_id INTEGER NOT NULL,\n"
	"	n_stacks INTEGER NOT NULL,\n"
	"	n_samples INTEGER NOT NULL,\n"
	"	bytes INTEGER NOT NULL\n"
	");\n"
	"CREATE INDEX windows_by_capture_start ON windows (capture_id, start_ms);\n"
	"CREATE TABLE samples (\n"
	"	window_id INTEGER NOT NULL,\n"
	"	series_id INTEGER NOT NULL,\n"
	"	sum_ns INTEGER NOT NULL,\n"
	"	count INTEGER NOT NULL,\n"
	"	PRIMARY KEY (window_id, series_id)\n"
	") WITHOUT ROWID;\n";

enum v1_content {
	V1_NOTHING,	       /* the schema only */
	V1_WINDOW,	       /* one window; no stack is empty */
	V1_WINDOW_EMPTY_STACK, /* one window; series 3 has empty stacks */
};

/* A version 1 file as the version 1 store left it. Stacks are LEB128 ids
 * of strings, root first: x'0203' is main;read. */
static void make_v1(const char *path, enum v1_content content)
{
	static const char window[] =
		"INSERT INTO strings (id, name) VALUES (1, CAST('app' AS BLOB)),\n"
		"	(2, CAST('main' AS BLOB)), (3, CAST('read' AS BLOB)),\n"
		"	(4, CAST('sys_read' AS BLOB)), (5, CAST('schedule' AS BLOB));\n"
		"INSERT INTO stacks (id, frames) VALUES (1, x'0203'), (2, x'0405');\n"
		"INSERT INTO series VALUES (1, 10, 11, 1, 0, 1, 1, 2), (2, 10, 12, 1, 0, 2, 1, "
		"2),\n"
		"	(3, 30, 30, 1, 0, 0, 3, 3);\n"
		"INSERT INTO windows VALUES (1, 1000, 2000, 0, 2, 3, 321);\n"
		/* -2: UINT64_MAX - 1 as stored */
		"INSERT INTO samples VALUES (1, 1, 100, 3), (1, 2, -2, 4), (1, 3, 7, 1);\n";
	sqlite3 *db;

	remove_db(path);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db,
			   "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL; "
			   "PRAGMA application_id = 1329811541; PRAGMA user_version = 1",
			   NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(db, schema_v1, NULL, NULL, NULL) == SQLITE_OK);
	if (content != V1_NOTHING)
		CHECK(sqlite3_exec(db, window, NULL, NULL, NULL) == SQLITE_OK);
	if (content == V1_WINDOW_EMPTY_STACK)
		CHECK(sqlite3_exec(db, "INSERT INTO stacks (id, frames) VALUES (3, x'')", NULL,
				   NULL, NULL) == SQLITE_OK);
	if (content == V1_WINDOW)
		CHECK(sqlite3_exec(db, "INSERT INTO stacks (id, frames) VALUES (3, x'01')", NULL,
				   NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
}

static void check_migrated(const char *path, enum v1_content content)
{
	const char *stack3 = content == V1_WINDOW ? "app" : "";
	struct store_sample again[] = {
		{ 10, 11, "app", 0, 1, 1, 1, "main;read", "sys_read;schedule", "", 0, "", 0 },
		{ 10, 11, "app", 0, 1, 2, 1, "main;read", "sys_read;schedule", "w", 0, "", 0 },
	};
	struct store_hist h = { 10, "app", 0, 7, 9 };
	struct store_window w, *list = NULL;
	const struct got_row *r;
	struct got g = { 0 };
	struct hgot hg = { 0 };
	uint64_t windows;
	struct store *s;
	size_t n = 0;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(pragma(s, "PRAGMA user_version") == 8);
	CHECK(pragma(s, "PRAGMA application_id") == 1329811541);
	CHECK(pragma(s, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = "
			"'ok'") == 1);
	/* series rebuilt with its ids, the chain (v2), the cgroup and the
	 * namespace pid (v6) in its UNIQUE constraint, nothing left of the
	 * rebuilds; hist created empty. */
	CHECK(pragma(s, "SELECT count(*) FROM pragma_table_info('series') WHERE name IN "
			"('chain_id', 'cgroup_id', 'ns_pid')") == 3);
	CHECK(pragma(s, "SELECT count(*) FROM pragma_index_list('series') l, "
			"pragma_index_info(l.name) i WHERE l.\"unique\" = 1") == 10);
	CHECK(pragma(s, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%v2%' OR "
			"name LIKE '%v6%'") == 0);
	/* v3: bytes of I/O rows; the old rows read back with 0. */
	CHECK(pragma(s, "SELECT count(*) FROM pragma_table_info('samples') WHERE name = "
			"'bytes'") == 1);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 0);
	/* v4: the heatmap's index, empty: the first heatmap indexes the old
	 * window (test-store_heatmap). */
	CHECK(pragma(s, "SELECT count(*) FROM heat_cells") == 0);
	CHECK(pragma(s, "SELECT count(*) FROM heat_windows") == 0);
	if (content == V1_NOTHING) {
		CHECK(pragma(s, "SELECT count(*) FROM stacks") == 0);
		CHECK(pragma(s, "SELECT count(*) FROM series") == 0);
		CHECK(add(s, 1000, 2000, 0, again, 2, &w) == 0);
		CHECK(w.n_samples == 2);
		store_close(s);
		return;
	}
	CHECK(pragma(s, "SELECT count(*) FROM stacks WHERE frames = x''") == 1);
	CHECK(pragma(s, "SELECT count(*) FROM stacks") == (content == V1_WINDOW ? 4 : 3));
	CHECK(pragma(s, "SELECT count(*) FROM series WHERE id IN (1, 2, 3) AND chain_id = "
			"(SELECT id FROM stacks WHERE frames = x'') AND cgroup_id = 0 AND "
			"ns_pid = 0") == 3);

	/* The window and its rows, intact. */
	CHECK(store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 1 && list[0].id == 1 && list[0].start_ms == 1000 && list[0].end_ms == 2000 &&
	      list[0].capture_id == 0 && list[0].n_stacks == 2 && list[0].n_samples == 3 &&
	      list[0].bytes == 321);
	free(list);
	CHECK(query_range(s, 0, 5000, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 3);
	r = got_find_chain(&g, 11, 0, "main;read", "sys_read;schedule", "");
	CHECK(r && r->s.tgid == 10 && r->s.state == 1 && r->s.sum_ns == 100 && r->s.count == 3);
	if (r)
		CHECK_STR(r->comm, "app");
	r = got_find_chain(&g, 12, 0, "main;read", "sys_read;schedule", "");
	CHECK(r && r->s.state == 2 && r->s.sum_ns == UINT64_MAX - 1 && r->s.count == 4);
	r = got_find_chain(&g, 30, 0, stack3, stack3, "");
	CHECK(r && r->s.tgid == 30 && r->s.sum_ns == 7 && r->s.count == 1);
	for (size_t i = 0; i < g.n; i++)
		CHECK(!strcmp(g.v[i].cgroup, "") && g.v[i].s.ns_pid == 0);

	/* New windows find the old series (no chain) and strings; a chain
	 * makes a new series. The window ids go on. */
	CHECK(add_hists(s, 2000, 3000, 0, again, 2, &h, 1, &w) == 0);
	CHECK(w.id == 2 && w.n_samples == 2);
	CHECK(pragma(s, "SELECT count(*) FROM heat_windows") == 1);
	CHECK(pragma(s, "SELECT count(*) FROM heat_windows WHERE window_id = 2") == 1);
	CHECK(pragma(s, "SELECT usum(sum_ns) FROM heat_cells WHERE window_id = 2") == 3);
	CHECK(pragma(s, "SELECT count(*) FROM series") == 4);
	CHECK(pragma(s, "SELECT count(*) FROM strings") == 6 /* "w" added */);
	CHECK(query_range(s, 0, 5000, &g, &windows) == 0);
	CHECK(windows == 2 && g.n == 4);
	r = got_find_chain(&g, 11, 0, "main;read", "sys_read;schedule", "");
	CHECK(r && r->s.sum_ns == 101 && r->s.count == 4);
	r = got_find_chain(&g, 11, 0, "main;read", "sys_read;schedule", "w");
	CHECK(r && r->s.sum_ns == 2);
	CHECK(hquery_range(s, 0, 5000, 0, &hg, &windows) == 0);
	CHECK(windows == 2 && hg.n == 1);
	CHECK_HIST(&hg, 0, 0, 10, 7, 9, "app");
	store_close(s);

	/* Migrated once: the next open finds the current version and the same
	 * rows. */
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(pragma(s, "PRAGMA user_version") == 8);
	CHECK(query_range(s, 0, 5000, &g, &windows) == 0);
	CHECK(windows == 2 && g.n == 4);
	got_free(&g);
	hgot_free(&hg);
	store_close(s);
}

/* A capture's window keeps its kind and targets; a continuous one neither. */
static void test_capture_kinds(void)
{
	const char *path = db_path("kinds.db");
	struct store_sample v = { .tgid = 7, .pid = 8, .comm = "c", .state = 1, .sum_ns = 5,
				  .count = 1, .ustack = "main", .kstack = "" };
	struct store_window w = { .start_ms = 3000, .end_ms = 4000, .capture_id = 9, .kind = 1 };
	struct store_window *list = NULL;
	struct store *s = NULL;
	size_t n = 0;
	int32_t kind = 0;

	remove_db(path);
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	if (!s)
		return;
	CHECK(add(s, 1000, 2000, 0, &v, 1, NULL) == 0);
	snprintf(w.targets, sizeof(w.targets), "pid 7; comm c");
	CHECK(store_window_add(s, &w, &v, 1, NULL, 0, err, sizeof(err)) == 0);
	CHECK(store_windows_list(s, 0, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 2);
	if (n == 2) {
		CHECK(list[0].capture_id == 0 && list[0].kind == -1 && !list[0].targets[0]);
		CHECK(list[1].capture_id == 9 && list[1].kind == 1);
		CHECK_STR(list[1].targets, "pid 7; comm c");
	}
	free(list);
	CHECK(store_capture_kind(s, 9, &kind, err, sizeof(err)) == 0 && kind == 1);
	CHECK(store_capture_kind(s, 10, &kind, err, sizeof(err)) == 0 && kind == -1);
	store_close(s);
}

/*
 * Version 3 as an older offcpud left it: the heatmap's tables made at its
 * first heatmap, with rows of an evicted window in them, and a histogram
 * row per bucket. Version 4 keeps the tables and their rows of stored
 * windows and drops the others; version 5 packs a process's buckets of a
 * type in a window into one row, with the comm of its lowest bucket.
 */
static void test_migrate_v3(void)
{
	const char *path = db_path("v3.db");
	struct store_sample v = { .tgid = 7, .pid = 8, .comm = "c", .state = 1, .sum_ns = 5,
				  .count = 1, .ustack = "main", .kstack = "" };
	struct store_window w;
	struct store *s = NULL;
	struct hgot g = { 0 };
	uint64_t windows;
	sqlite3 *db;

	remove_db(path);
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 1000, 2000, 0, &v, 1, &w) == 0);
	store_close(s);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(
		      db,
		      "INSERT INTO heat_cells VALUES (99, 7, 8, 1, 1, 0, 5); "
		      "INSERT INTO heat_windows VALUES (99); "
		      "INSERT INTO strings (name) VALUES (CAST('d' AS BLOB)); "
		      "DROP TABLE hist; "
		      "CREATE TABLE hist (window_id INTEGER NOT NULL, tgid INTEGER NOT NULL, "
		      "comm_id INTEGER NOT NULL, type INTEGER NOT NULL, bucket INTEGER NOT NULL, "
		      "count INTEGER NOT NULL, PRIMARY KEY (window_id, tgid, type, bucket)) "
		      "WITHOUT ROWID; "
		      "INSERT INTO hist SELECT 1, 7, (SELECT id FROM strings WHERE name = "
		      "CAST('c' AS BLOB)), 0, 3, 5; "
		      "INSERT INTO hist SELECT 1, 7, (SELECT id FROM strings WHERE name = "
		      "CAST('d' AS BLOB)), 0, 1, 2; "
		      "INSERT INTO hist SELECT 1, 7, (SELECT id FROM strings WHERE name = "
		      "CAST('c' AS BLOB)), 1, 2, -2; " /* UINT64_MAX - 1 as stored */
		      "INSERT INTO hist SELECT 1, 8, (SELECT id FROM strings WHERE name = "
		      "CAST('c' AS BLOB)), 0, 31, 1; "
		      "PRAGMA user_version = 3",
		      NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);

	s = NULL;
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	if (!s)
		return;
	CHECK(pragma(s, "PRAGMA user_version") == 8);
	CHECK(pragma(s, "SELECT count(*) FROM heat_cells") == 1);
	CHECK(pragma(s, "SELECT count(*) FROM heat_cells WHERE window_id = 99") == 0);
	CHECK(pragma(s, "SELECT count(*) FROM heat_windows") == 1);
	CHECK(pragma(s, "SELECT count(*) FROM hist") == 3);
	CHECK(pragma(s, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%v5%'") == 0);
	CHECK(hquery_range(s, 0, 5000, 0, &g, &windows) == 0);
	CHECK(windows == 1 && g.n == 3);
	CHECK_HIST(&g, 0, 0, 7, 1, 2, "d");
	CHECK_HIST(&g, 1, 0, 7, 3, 5, "d");
	CHECK_HIST(&g, 2, 0, 8, 31, 1, "c");
	CHECK(hquery_range(s, 0, 5000, 1, &g, &windows) == 0);
	CHECK(g.n == 1);
	CHECK_HIST(&g, 0, 1, 7, 2, UINT64_MAX - 1, "c");
	hgot_free(&g);
	store_close(s);
}

static void test_migrate_v1(void)
{
	make_v1(db_path("v1.db"), V1_WINDOW);
	check_migrated(db_path("v1.db"), V1_WINDOW);
	make_v1(db_path("v1-empty-stack.db"), V1_WINDOW_EMPTY_STACK);
	check_migrated(db_path("v1-empty-stack.db"), V1_WINDOW_EMPTY_STACK);
	make_v1(db_path("v1-nothing.db"), V1_NOTHING);
	check_migrated(db_path("v1-nothing.db"), V1_NOTHING);
}

/* The row of pid in that cgroup with that namespace pid. */
static const struct got_row *got_find_cgroup(const struct got *g, uint32_t pid, const char *cgroup,
					     uint32_t ns_pid)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct got_row *r = &g->v[i];

		if (r->s.pid == pid && r->s.ns_pid == ns_pid && !strcmp(r->cgroup, cgroup))
			return r;
	}
	return NULL;
}

/* The row with like's identity. */
static const struct got_row *got_find_like(const struct got *g, const struct store_sample *like)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct got_row *r = &g->v[i];

		if (r->s.tgid == like->tgid && r->s.pid == like->pid && r->s.kind == like->kind &&
		    r->s.state == like->state && r->s.ns_pid == like->ns_pid &&
		    !strcmp(r->comm, like->comm) && !strcmp(r->ustack, like->ustack) &&
		    !strcmp(r->kstack, like->kstack) && !strcmp(r->chain, like->chain) &&
		    !strcmp(r->cgroup, like->cgroup))
			return r;
	}
	return NULL;
}

/* Strings (frames, comms, cgroup paths) named name. */
static int64_t strings_named(struct store *s, const char *name)
{
	sqlite3_stmt *st;
	int64_t n = -1;

	if (sqlite3_prepare_v2(store__db(s), "SELECT count(*) FROM strings WHERE name = ?1", -1,
			       &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_blob(st, 1, name, (int)strlen(name), SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* The cgroup and the namespace pid belong to a row's identity: paths of any
 * bytes but NUL read back as written, rows that differ in them alone stay
 * apart, equal ones merge, within a window and across windows. */
static void test_cgroup(void)
{
	const char *path = db_path("cgroup.db");
	static const char spaces[] = "/system.slice/my app.service";
	static const char utf8[] = "/user.slice/été/日本語.scope";
	enum { LONG_BYTES = 4000 };
	char *long_path = malloc(LONG_BYTES + 1);
	struct store_sample v[] = {
		{ 10, 11, "app", 0, 1, 1, 1, "main;f", "k", "", 0, spaces, 0 },
		{ 10, 11, "app", 0, 1, 2, 1, "main;f", "k", "", 0, utf8, 0 },
		{ 10, 11, "app", 0, 1, 4, 1, "main;f", "k", "", 0, long_path, 0 },
		{ 10, 11, "app", 0, 1, 8, 1, "main;f", "k", "", 0, "", 0 },
		{ 10, 11, "app", 0, 1, 16, 1, "main;f", "k", "", 0, NULL, 0 }, /* as "" */
		{ 10, 11, "app", 0, 1, 32, 1, "main;f", "k", "", 0, spaces, 0 },
		{ 10, 11, "app", 0, 1, 64, 1, "main;f", "k", "", 0, spaces, 7 },
	};
	const struct got_row *r;
	struct store_window w;
	struct got g = { 0 };
	struct store *s;
	size_t len = 0;

	if (!long_path)
		return;
	for (int i = 0; len < LONG_BYTES; i++)
		len += snprintf(long_path + len, LONG_BYTES + 1 - len, "/kubepods-%04d.slice", i);
	long_path[LONG_BYTES] = '\0';
	v[2].cgroup = long_path;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(add(s, 1000, 2000, 0, v, 7, &w) == 0);
	CHECK(w.n_samples == 5 && w.n_stacks == 1);
	CHECK(pragma(s, "SELECT count(*) FROM series") == 5);
	/* "" is no string: 0. */
	CHECK(pragma(s, "SELECT count(*) FROM series WHERE cgroup_id = 0") == 1);
	CHECK(strings_named(s, spaces) == 1 && strings_named(s, utf8) == 1 &&
	      strings_named(s, long_path) == 1);
	/* The heatmap's cells are by thread, whatever the cgroup. */
	CHECK(pragma(s, "SELECT count(*) FROM heat_cells") == 1);
	CHECK(pragma(s, "SELECT usum(sum_ns) FROM heat_cells") == 127);
	store_close(s);

	/* After a reopen: nothing lives in the caches only. */
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	for (int pass = 1; pass <= 2; pass++) {
		uint64_t n = (uint64_t)pass;

		CHECK(query_range(s, 0, 10000, &g, NULL) == 0);
		CHECK(g.n == 5);
		r = got_find_cgroup(&g, 11, spaces, 0);
		CHECK(r && r->s.sum_ns == 33 * n && r->s.count == 2 * n);
		r = got_find_cgroup(&g, 11, utf8, 0);
		CHECK(r && r->s.sum_ns == 2 * n && r->s.count == n);
		r = got_find_cgroup(&g, 11, long_path, 0);
		CHECK(r && r->s.sum_ns == 4 * n && strlen(r->cgroup) == LONG_BYTES);
		r = got_find_cgroup(&g, 11, "", 0);
		CHECK(r && r->s.sum_ns == 24 * n && r->s.count == 2 * n);
		r = got_find_cgroup(&g, 11, spaces, 7);
		CHECK(r && r->s.sum_ns == 64 * n && r->s.tgid == 10);
		for (size_t i = 0; i < g.n; i++)
			CHECK(!strcmp(g.v[i].comm, "app") && !strcmp(g.v[i].ustack, "main;f"));
		/* The next window finds the same series. */
		if (pass == 1)
			CHECK(add(s, 2000, 3000, 0, v, 7, &w) == 0);
	}
	CHECK(pragma(s, "SELECT count(*) FROM series") == 5);
	got_free(&g);
	store_close(s);
	free(long_path);
}

/* A cgroup path is a string that only a series may name: collected with
 * the last series that names it, kept while one does, and made again when
 * it comes back. */
static void test_cgroup_gc(void)
{
	const char *path = db_path("cgroup-gc.db");
	struct store_limits limits = { .max_age_ms = 3600 * 1000 };
	struct store_sample old[] = {
		{ 1, 1, "c", 0, 1, 1, 1, "u", "k", "", 0, "/gone.slice", 0 },
		{ 1, 1, "c", 0, 1, 2, 1, "u", "k", "", 0, "/kept.slice", 0 },
	};
	/* Its comm and stacks are other strings than the old window's. */
	struct store_sample kept = { 2, 2, "d", 0, 1, 4, 1, "v", "j", "", 0, "/kept.slice", 3 };
	int64_t now = now_ms();
	struct got g = { 0 };
	struct store *s;

	CHECK(store_open(path, &limits, &s, err, sizeof(err)) == 0);
	CHECK(add(s, now - 7200 * 1000, now - 7100 * 1000, 0, old, 2, NULL) == 0);
	CHECK(strings_named(s, "/gone.slice") == 1 && strings_named(s, "/kept.slice") == 1);
	/* Evicts the old window by age and collects what it alone used. */
	CHECK(add(s, now - 7100 * 1000, now - 7000 * 1000, 0, &kept, 1, NULL) == 0);
	CHECK(pragma(s, "SELECT count(*) FROM windows") == 1);
	CHECK(pragma(s, "SELECT count(*) FROM series") == 1);
	CHECK(strings_named(s, "/gone.slice") == 0);
	CHECK(strings_named(s, "/kept.slice") == 1);
	CHECK(strings_named(s, "c") == 0 && strings_named(s, "u") == 0);
	CHECK(query_range(s, INT64_MIN, INT64_MAX, &g, NULL) == 0);
	CHECK(g.n == 1 && got_find_cgroup(&g, 2, "/kept.slice", 3));

	/* Used again after it was collected: a new string, read back. */
	CHECK(add(s, now - 1000, now, 0, old, 1, NULL) == 0);
	CHECK(strings_named(s, "/gone.slice") == 1);
	CHECK(query_range(s, now - 1000, now + 1, &g, NULL) == 0);
	CHECK(g.n == 1 && got_find_cgroup(&g, 1, "/gone.slice", 0));
	got_free(&g);
	store_close(s);
}

/* path opened read-only and immutable: SQLite writes nothing, not even the
 * -wal and -shm files a WAL database gets otherwise. */
static sqlite3 *open_immutable(const char *path)
{
	char uri[4200] = "file:";
	size_t n = strlen(uri);
	sqlite3 *db = NULL;

	for (const unsigned char *p = (const unsigned char *)path; *p && n + 20 < sizeof(uri);
	     p++) {
		if (isalnum(*p) || strchr("/._-~", *p))
			uri[n++] = (char)*p;
		else
			n += snprintf(uri + n, sizeof(uri) - n, "%%%02X", *p);
	}
	snprintf(uri + n, sizeof(uri) - n, "?immutable=1");
	if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", uri, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

/* The first column of sql's first row as text, malloc'd ("" if none). */
static char *db_text(sqlite3 *db, const char *sql)
{
	const unsigned char *text = NULL;
	sqlite3_stmt *st;
	char *copy;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return strdup("(error)");
	if (sqlite3_step(st) == SQLITE_ROW)
		text = sqlite3_column_text(st, 0);
	copy = strdup(text ? (const char *)text : "");
	sqlite3_finalize(st);
	return copy;
}

static int64_t db_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Rows of the previous release's file, in the columns it had, in id order. */
static const char v5_series_sql[] =
	"SELECT group_concat(id || ',' || tgid || ',' || pid || ',' || comm_id || ',' || kind || "
	"',' || state || ',' || ustack_id || ',' || kstack_id || ',' || chain_id, ';') FROM "
	"(SELECT * FROM series ORDER BY id)";
static const char *const v5_counts_sql[] = {
	"SELECT count(*) FROM windows",	   "SELECT count(*) FROM samples",
	"SELECT count(*) FROM series",	   "SELECT count(*) FROM strings",
	"SELECT count(*) FROM stacks",	   "SELECT count(*) FROM hist",
	"SELECT count(*) FROM heat_cells", "SELECT count(*) FROM heat_windows",
};

/* A window's totals by (tgid, comm, kind, state), as the raw file has them
 * and as store_query() reads them back. */
struct v5_total {
	int64_t window_id;
	uint32_t tgid, kind, state;
	char *comm;
	uint64_t sum_ns, count, bytes;
	uint64_t got_sum_ns, got_count, got_bytes;
};

static struct v5_total *v5_totals(sqlite3 *db, size_t *ret_n)
{
	static const char sql[] =
		"SELECT sa.window_id, se.tgid, st.name, se.kind, se.state, sum(sa.sum_ns), "
		"sum(sa.count), sum(sa.bytes) FROM samples sa JOIN series se ON se.id = "
		"sa.series_id JOIN strings st ON st.id = se.comm_id GROUP BY sa.window_id, "
		"se.tgid, st.name, se.kind, se.state";
	struct v5_total *t = NULL;
	sqlite3_stmt *st;
	size_t n = 0;
	int rc;

	CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *name = sqlite3_column_blob(st, 2);

		t = realloc(t, (n + 1) * sizeof(*t));
		t[n] = (struct v5_total){
			.window_id = sqlite3_column_int64(st, 0),
			.tgid = (uint32_t)sqlite3_column_int64(st, 1),
			.comm = strndup(name ? name : "", (size_t)sqlite3_column_bytes(st, 2)),
			.kind = (uint32_t)sqlite3_column_int64(st, 3),
			.state = (uint32_t)sqlite3_column_int64(st, 4),
			.sum_ns = (uint64_t)sqlite3_column_int64(st, 5),
			.count = (uint64_t)sqlite3_column_int64(st, 6),
			.bytes = (uint64_t)sqlite3_column_int64(st, 7),
		};
		n++;
	}
	CHECK(rc == SQLITE_DONE);
	sqlite3_finalize(st);
	*ret_n = n;
	return t;
}

/* Every window of the migrated file reads back with the raw file's totals,
 * in no cgroup and with no namespace pid. */
static void check_v5_windows(struct store *s, struct v5_total *t, size_t n_t,
			     const struct store_window *list, size_t n)
{
	struct got g = { 0 };

	for (size_t i = 0; i < n; i++) {
		struct store_query q = { .capture_id = list[i].capture_id };
		uint64_t windows = 0;

		if (!q.capture_id) {
			q.from_ms = list[i].start_ms;
			q.to_ms = list[i].start_ms + 1;
		}
		CHECK(query(s, &q, &g, &windows) == 0);
		CHECK_MSG(windows == 1, "window %llu: %llu windows selected",
			  (unsigned long long)list[i].id, (unsigned long long)windows);
		CHECK(g.n == list[i].n_samples);
		for (size_t j = 0; j < g.n; j++) {
			const struct got_row *r = &g.v[j];
			struct v5_total *e = NULL;

			CHECK(!strcmp(r->cgroup, "") && r->s.ns_pid == 0);
			for (size_t k = 0; k < n_t && !e; k++)
				if (t[k].window_id == (int64_t)list[i].id &&
				    t[k].tgid == r->s.tgid && t[k].kind == r->s.kind &&
				    t[k].state == r->s.state && !strcmp(t[k].comm, r->comm))
					e = &t[k];
			CHECK_MSG(e, "window %llu: tgid %u comm %s not in the raw file",
				  (unsigned long long)list[i].id, r->s.tgid, r->comm);
			if (e) {
				e->got_sum_ns += r->s.sum_ns;
				e->got_count += r->s.count;
				e->got_bytes += r->s.bytes;
			}
		}
	}
	for (size_t k = 0; k < n_t; k++)
		CHECK_MSG(t[k].got_sum_ns == t[k].sum_ns && t[k].got_count == t[k].count &&
				  t[k].got_bytes == t[k].bytes,
			  "window %lld tgid %u comm %s kind %u state %u: %llu ns %llu, want %llu "
			  "ns %llu",
			  (long long)t[k].window_id, t[k].tgid, t[k].comm, t[k].kind, t[k].state,
			  (unsigned long long)t[k].got_sum_ns, (unsigned long long)t[k].got_count,
			  (unsigned long long)t[k].sum_ns, (unsigned long long)t[k].count);
	got_free(&g);
}

/*
 * tests/data/store-v5.db, written by the previous release (schema version
 * 5): a copy migrates to version 6 with every window, series (ids kept),
 * string and histogram intact, its rows in no cgroup; new windows with
 * cgroups go in beside them; a second open changes nothing.
 */
static void test_migrate_v5_file(void)
{
	const char *path = db_path("v5.db");
	size_t n_fixture = 0, n_t = 0, n_bytes = 0, n_again = 0, n_list = 0, n_last = 0;
	char *fixture = read_all(STORE_V5_DB, &n_fixture), *bytes = NULL, *again = NULL;
	char *raw_series = NULL, *series = NULL;
	struct store_window *list = NULL, *last = NULL, w;
	struct store_sample ref = { 0 }, add_v[3];
	int64_t raw_counts[8], max_end = 0;
	struct v5_total *t = NULL;
	const struct got_row *r;
	struct store *s = NULL;
	struct got g = { 0 };
	uint64_t windows;
	sqlite3 *raw;

	CHECK_MSG(fixture && n_fixture > 0, "cannot read %s", STORE_V5_DB);
	raw = open_immutable(STORE_V5_DB);
	CHECK(raw);
	if (!fixture || !raw)
		goto out;
	CHECK(db_int(raw, "PRAGMA user_version") == 5);
	raw_series = db_text(raw, v5_series_sql);
	for (size_t i = 0; i < 8; i++)
		raw_counts[i] = db_int(raw, v5_counts_sql[i]);
	CHECK(raw_counts[0] > 1 && raw_counts[1] > 0 && raw_counts[5] > 0);
	CHECK(db_int(raw, "SELECT count(*) FROM windows WHERE capture_id != 0") > 0);
	max_end = db_int(raw, "SELECT max(end_ms) FROM windows");
	t = v5_totals(raw, &n_t);
	sqlite3_close(raw);

	remove_db(path);
	write_all(path, fixture, n_fixture);
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	if (!s)
		goto out;
	CHECK(pragma(s, "PRAGMA user_version") == 8);
	CHECK(pragma(s, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = "
			"'ok'") == 1);
	series = db_text(store__db(s), v5_series_sql);
	CHECK(!strcmp(series, raw_series));
	for (size_t i = 0; i < 8; i++)
		CHECK_MSG(pragma(s, v5_counts_sql[i]) == raw_counts[i], "%s: %lld, want %lld",
			  v5_counts_sql[i], (long long)pragma(s, v5_counts_sql[i]),
			  (long long)raw_counts[i]);
	CHECK(pragma(s, "SELECT count(*) FROM series WHERE cgroup_id != 0 OR ns_pid != 0") == 0);
	CHECK(store_windows_list(s, INT64_MIN, &list, &n_list, err, sizeof(err)) == 0);
	CHECK((int64_t)n_list == raw_counts[0]);
	check_v5_windows(s, t, n_t, list, n_list);
	/* Version 8's kind and targets: not known for the old captures. */
	for (size_t i = 0; i < n_list; i++)
		CHECK(list[i].kind == -1 && !list[i].targets[0]);
	CHECK(pragma(s, "SELECT count(*) FROM windows WHERE kind IS NOT NULL OR "
			"targets IS NOT NULL") == 0);

	/* A row of the newest continuous window, as a new window's model. */
	for (size_t i = 0; i < n_list; i++)
		if (!list[i].capture_id)
			last = &list[i];
	CHECK(last && query_range(s, last->start_ms, last->start_ms + 1, &g, NULL) == 0);
	CHECK(g.n > 0);
	if (!last || !g.n)
		goto out;
	n_last = g.n;
	r = &g.v[0];
	ref = r->s;
	ref.comm = r->comm;
	ref.ustack = r->ustack;
	ref.kstack = r->kstack;
	ref.chain = r->chain;
	ref.count = 1;
	for (size_t i = 0; i < 3; i++) {
		add_v[i] = ref;
		add_v[i].sum_ns = 1000 * (i + 1);
	}
	add_v[0].cgroup = "";
	add_v[1].cgroup = "/system.slice/new one.service";
	add_v[2].cgroup = "/system.slice/new one.service";
	add_v[2].ns_pid = 42;
	CHECK(add(s, max_end, max_end + 2000, 0, add_v, 3, &w) == 0);
	CHECK(w.n_samples == 3);
	/* An old series for the row in no cgroup; two new ones. */
	CHECK(pragma(s, "SELECT count(*) FROM series") == raw_counts[2] + 2);

	/* Both windows read back, the old row summed with its like. */
	{
		struct got both = { 0 };

		CHECK(query_range(s, last->start_ms, max_end + 1, &both, &windows) == 0);
		CHECK(windows == 2 && both.n == n_last + 2);
		r = got_find_like(&both, &add_v[0]);
		CHECK(r && r->s.sum_ns == ref.sum_ns + 1000);
		r = got_find_like(&both, &add_v[1]);
		CHECK(r && r->s.sum_ns == 2000 && r->s.count == 1);
		r = got_find_like(&both, &add_v[2]);
		CHECK(r && r->s.sum_ns == 3000 && r->s.count == 1);
		got_free(&both);
	}
	free(series);
	series = db_text(store__db(s), "SELECT group_concat(id || ',' || cgroup_id || ',' || "
				       "ns_pid, ';') FROM (SELECT * FROM series ORDER BY id)");
	store_close(s);
	s = NULL;

	/* Opened again: already version 6, nothing migrated or written. */
	bytes = read_all(path, &n_bytes);
	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	if (!s)
		goto out;
	CHECK(pragma(s, "PRAGMA user_version") == 8);
	{
		char *now = db_text(store__db(s), "SELECT group_concat(id || ',' || cgroup_id || "
						  "',' || ns_pid, ';') FROM (SELECT * FROM series "
						  "ORDER BY id)");

		CHECK(!strcmp(now, series));
		free(now);
	}
	for (size_t k = 0; k < n_t; k++)
		t[k].got_sum_ns = t[k].got_count = t[k].got_bytes = 0;
	check_v5_windows(s, t, n_t, list, n_list);
	store_close(s);
	s = NULL;
	again = read_all(path, &n_again);
	CHECK(bytes && again && n_bytes == n_again && !memcmp(bytes, again, n_bytes));

out:
	/* The committed file is only ever read. */
	{
		size_t n_after = 0;
		char *after = read_all(STORE_V5_DB, &n_after);

		CHECK(fixture && after && n_after == n_fixture &&
		      !memcmp(after, fixture, n_fixture));
		free(after);
	}
	store_close(s);
	got_free(&g);
	for (size_t k = 0; k < n_t; k++)
		free(t[k].comm);
	free(t);
	free(list);
	free(fixture);
	free(bytes);
	free(again);
	free(raw_series);
	free(series);
}

static void test_stats(void)
{
	const char *path = db_path("stats.db");
	struct store_sample v = { 1, 1, "c", 0, 0, 10, 1, "u;v", "k", "", 0, "", 0 };
	struct store_window *list = NULL;
	struct store_stats st;
	struct store *s;
	size_t n = 0;

	CHECK(store_open(path, NULL, &s, err, sizeof(err)) == 0);
	CHECK(store_stats(s, &st) == 0);
	CHECK(st.windows == 0 && st.oldest_start_ms == 0 && st.newest_end_ms == 0);
	CHECK(st.db_bytes > 0);
	CHECK(add(s, 5000, 6000, 0, &v, 1, NULL) == 0);
	CHECK(add(s, 1000, 2000, 0, &v, 1, NULL) == 0);
	CHECK(add(s, 3000, 9000, 9, &v, 1, NULL) == 0);
	CHECK(store_stats(s, &st) == 0);
	CHECK(st.windows == 3 && st.oldest_start_ms == 1000 && st.newest_end_ms == 9000);
	CHECK(st.db_bytes ==
	      (uint64_t)(pragma(s, "PRAGMA page_count") * pragma(s, "PRAGMA page_size")) +
		      file_bytes(db_path("stats.db-wal")));
	/* Oldest first, from since_ms on, captures included. */
	CHECK(store_windows_list(s, 2000, &list, &n, err, sizeof(err)) == 0);
	CHECK(n == 2 && list[0].start_ms == 3000 && list[0].capture_id == 9 &&
	      list[1].start_ms == 5000);
	free(list);
	store_close(s);
}

int main(void)
{
	struct gen *gen = calloc(1, sizeof(*gen));

	if (!gen || !mkdtemp(dir)) {
		perror("setup");
		return 1;
	}
	test_create_reopen();
	test_round_trip();
	test_filters();
	test_range();
	test_interning(gen);
	test_cache_bound(gen);
	test_age();
	test_push_outbox();
	test_size(gen);
	test_full(gen);
	test_refused();
	test_crash();
	test_stats();
	test_chain();
	test_kinds();
	test_hist();
	test_hist_evict();
	test_migrate_v1();
	test_migrate_v3();
	test_migrate_v5_file();
	test_capture_kinds();
	test_cgroup();
	test_cgroup_gc();

	{
		static const char *const names[] = {
			"reopen.db",	     "round.db",      "filters.db",    "range.db",
			"intern.db",	     "age.db",	      "size.db",       "full.db",
			"garbage.db",	     "corrupt.db",    "newer.db",      "foreign.db",
			"crash.db",	     "empty.db",      "stats.db",      "chain.db",
			"kinds.db",	     "hist.db",	      "hist-evict.db", "v1.db",
			"v1-empty-stack.db", "v1-nothing.db", "v3.db",	       "v5.db",
			"cgroup.db",	     "cgroup-gc.db",  "push.db"
		};

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			remove_db(db_path(names[i]));
		rmdir(dir);
	}
	free(gen);
	return CHECK_DONE();
}
