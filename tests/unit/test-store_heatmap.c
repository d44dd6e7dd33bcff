/* Unit tests of store_heatmap (per-window totals by process, thread and
 * state in SQL) and of its reply (proto_heatmap), on a real SQLite file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "check.h"
#include "proto_heatmap.h"
#include "store.h"
#include "store_heatmap.h"

static char dir[] = "/tmp/test-store_heatmap-XXXXXX";

static int64_t count(struct store *s, const char *sql)
{
	sqlite3_stmt *st;
	int64_t n = -1;

	if (sqlite3_prepare_v2(store__db(s), sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Three windows of 10 s; pid 100 (threads 100, 101) and pid 200; window 1
 * has nothing of 200; a capture's window in the middle is not a column. */
static struct store *fill(void)
{
	static const struct store_sample w0[] = {
		{ 100, 100, "main", 0, 1, 1000, 1, "a;b", "k", "", 0, "", 0 },
		{ 100, 101, "worker", 0, 2, 2000, 1, "a;c", "k", "", 0, "", 0 },
		{ 100, 101, "worker", 4, 0, 300, 1, "a;c", "k", "", 0, "", 0 }, /* runq */
		{ 200, 200, "other", 0, 1, 5000, 1, "x", "k", "", 0, "", 0 },
	};
	static const struct store_sample w1[] = {
		{ 100, 101, "worker", 0, 1, 7000, 2, "a;c", "k", "", 0, "", 0 },
		{ 100, 101, "worker", 1, 1, 9999, 2, "w", "k", "y", 0, "", 0 }, /* wakeup */
	};
	static const struct store_sample w2[] = {
		{ 100, 100, "main", 0, 1, 10, 1, "a;b", "k", "", 0, "", 0 },
		{ 200, 201, "other2", 0, 2, 40, 1, "x", "k", "", 0, "", 0 },
	};
	static const struct store_sample cap[] = {
		{ 100, 100, "main", 0, 1, 123456, 1, "a;b", "k", "", 0, "", 0 },
	};
	struct store_window w = { 0 };
	struct store *s;
	char path[128], err[256];

	snprintf(path, sizeof(path), "%s/db", dir);
	if (store_open(path, NULL, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "store_open: %s\n", err);
		exit(1);
	}
	/* The first window indexed as it is stored, the others by the first
	 * query: their cells deleted, as windows an offcpud before schema
	 * version 4 stored, without an index. */
	w = (struct store_window){ .start_ms = 10000, .end_ms = 20000 };
	CHECK(store_window_add(s, &w, w0, 4, NULL, 0, err, sizeof(err)) == 0);
	CHECK(count(s, "SELECT count(*) FROM heat_cells") == 4);
	w = (struct store_window){ .start_ms = 15000, .end_ms = 17000, .capture_id = 7 };
	CHECK(store_window_add(s, &w, cap, 1, NULL, 0, err, sizeof(err)) == 0);
	CHECK(count(s, "SELECT count(*) FROM heat_windows") == 1); /* not a capture's */
	w = (struct store_window){ .start_ms = 20000, .end_ms = 30000 };
	CHECK(store_window_add(s, &w, w1, 2, NULL, 0, err, sizeof(err)) == 0);
	w = (struct store_window){ .start_ms = 30000, .end_ms = 40000 };
	CHECK(store_window_add(s, &w, w2, 2, NULL, 0, err, sizeof(err)) == 0);
	CHECK(sqlite3_exec(store__db(s),
			   "DELETE FROM heat_cells WHERE window_id > 2; "
			   "DELETE FROM heat_windows WHERE window_id > 2",
			   NULL, NULL, NULL) == SQLITE_OK);
	return s;
}

static const struct store_heatmap_row *row_of(const struct store_heatmap *h, uint64_t key)
{
	for (size_t i = 0; i < h->n_rows; i++)
		if (!h->rows[i].other && h->rows[i].key == key)
			return &h->rows[i];
	return NULL;
}

static void test_processes(struct store *s)
{
	struct store_heatmap_query q = {
		.from_ms = 1,
		.to_ms = 100000,
		.kind_mask = 1u << 0 | 1u << 4,
		.max_rows = 10,
	};
	struct store_heatmap h;
	const struct store_heatmap_row *r;
	char err[256];

	CHECK(count(s, "SELECT count(*) FROM heat_windows") == 1);
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	CHECK(h.n_windows == 3); /* the capture's window is no column */
	CHECK(count(s, "SELECT count(*) FROM heat_windows") == 3); /* not the capture's */
	/* window 0: (100,100,S,offcpu) (101,D,offcpu) (101,R,runq) (200,S,offcpu) */
	CHECK(count(s, "SELECT count(*) FROM heat_cells h JOIN windows w ON w.id = h.window_id "
		       "WHERE w.start_ms = 10000") == 4);
	CHECK(h.start_ms[0] == 10000 && h.start_ms[1] == 20000 && h.end_ms[2] == 40000);
	CHECK(h.n_rows == 2);
	/* 100: 1000 + 2000 + 300 | 7000 | 10 (offcpu and runq, no wakeup) */
	r = &h.rows[0];
	CHECK(r->key == 100 && !r->other && r->total_ns == 10310);
	CHECK(r->cells[0] == 3300 && r->cells[1] == 7000 && r->cells[2] == 10);
	CHECK_STR(r->label, "main"); /* the main thread's comm */
	r = row_of(&h, 200);
	CHECK(r && r->total_ns == 5040 && r->cells[1] == 0);
	CHECK_STR(r->label, "other");
	store_heatmap_free(&h);

	/* One row kept: the other summed. A range of one window. */
	q.max_rows = 1;
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	CHECK(h.n_rows == 2 && h.rows[0].key == 100 && h.rows[1].other);
	CHECK(h.rows[1].total_ns == 5040 && h.rows[1].cells[0] == 5000 && h.rows[1].cells[2] == 40);
	store_heatmap_free(&h);
	q.from_ms = 20000;
	q.to_ms = 30000;
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	CHECK(h.n_windows == 1 && h.n_rows == 1 && h.rows[0].cells[0] == 7000);
	store_heatmap_free(&h);
}

static void test_threads_states_filters(struct store *s)
{
	uint32_t pids[] = { 100 };
	struct store_heatmap_query q = {
		.from_ms = 1,
		.to_ms = 100000,
		.pids = pids,
		.n_pids = 1,
		.key = STORE_HEATMAP_PID,
		.max_rows = 10,
	};
	struct store_heatmap h;
	char err[256];

	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0); /* every kind */
	CHECK(h.n_rows == 2 && row_of(&h, 101)->total_ns == 2000 + 300 + 7000 + 9999);
	CHECK(row_of(&h, 100)->total_ns == 1010);
	CHECK_STR(row_of(&h, 101)->label, "worker");
	store_heatmap_free(&h);

	q.key = STORE_HEATMAP_STATE;
	q.n_pids = 0;
	q.kind_mask = 1u << 0;
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	CHECK(h.n_rows == 2 && row_of(&h, 1)->total_ns == 1000 + 5000 + 7000 + 10);
	CHECK(row_of(&h, 2)->total_ns == 2040);
	store_heatmap_free(&h);

	q.key = STORE_HEATMAP_TGID;
	q.comm = "other2";
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	CHECK(h.n_windows == 3 && h.n_rows == 1 && h.rows[0].cells[2] == 40);
	store_heatmap_free(&h);
	q.comm = NULL;
	q.state_mask = 1u << 2;
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	CHECK(h.n_rows == 2 && row_of(&h, 100)->total_ns == 2000);
	store_heatmap_free(&h);

	q.max_rows = 0;
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == -EINVAL);
}

static void test_reply(struct store *s)
{
	struct proto_heatmap_request req = { .kind = PROTO_KIND_OFFCPU,
					     .rows = PROTO_HEATMAP_ROWS_PROCESS };
	struct store_heatmap_query q = {
		.from_ms = 1, .to_ms = 100000, .kind_mask = 1, .max_rows = 1
	};
	struct proto_heatmap_row rows[4];
	struct store_heatmap h;
	char err[256], *line;
	cJSON *root, *body, *series, *cells;

	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	for (size_t i = 0; i < h.n_rows; i++)
		rows[i] =
			(struct proto_heatmap_row){ h.rows[i].key, h.rows[i].label, h.rows[i].other,
						    h.rows[i].total_ns, h.rows[i].cells };
	rows[0].label = "bad\xff"; /* comms may hold any byte */
	line = proto_reply_heatmap(&(struct proto_heatmap_result){ .req = &req,
								   .from_ms = 1,
								   .to_ms = 100000,
								   .n_windows = h.n_windows,
								   .start_ms = h.start_ms,
								   .end_ms = h.end_ms,
								   .rows = rows,
								   .n_rows = h.n_rows });
	CHECK(line && line[strlen(line) - 1] == '\n' && !strchr(line, '\n')[1]);
	root = cJSON_Parse(line);
	CHECK(root);
	body = cJSON_GetObjectItem(root, "heatmap");
	CHECK_STR(cJSON_GetObjectItem(root, "cmd")->valuestring, "heatmap");
	CHECK_STR(cJSON_GetObjectItem(body, "rows")->valuestring, "process");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(body, "start_ms")) == 3);
	series = cJSON_GetObjectItem(body, "series");
	CHECK(cJSON_GetArraySize(series) == 2);
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(series, 0), "label")->valuestring,
		  "bad\xef\xbf\xbd");
	cells = cJSON_GetObjectItem(cJSON_GetArrayItem(series, 0), "cells");
	/* 100: 3000 (no runq) | 7000 | 10: all three columns, in pairs */
	CHECK(cJSON_GetArraySize(cells) == 6);
	CHECK(cJSON_GetArrayItem(cells, 1)->valuedouble == 3000);
	cells = cJSON_GetObjectItem(cJSON_GetArrayItem(series, 1), "cells");
	CHECK(cJSON_GetArraySize(cells) == 4); /* the other row: column 1 is empty */
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(series, 1), "other")));
	cJSON_Delete(root);
	free(line);
	store_heatmap_free(&h);
}

/* Rows of evicted windows leave the index at its next write. */
static void test_evicted(void)
{
	static const struct store_sample row = { 1, 1, "c", 0, 1, 5, 1, "a", "k", "", 0, "", 0 };
	struct store_limits limits = { .max_age_ms = 60000 };
	struct store_window w;
	struct store_heatmap h;
	struct store_heatmap_query q = { .from_ms = 1, .to_ms = INT64_MAX, .max_rows = 5 };
	struct store *s;
	char path[128], err[256];

	snprintf(path, sizeof(path), "%s/evict", dir);
	CHECK(store_open(path, &limits, &s, err, sizeof(err)) == 0);
	w = (struct store_window){ .start_ms = 1000, .end_ms = 2000 }; /* long gone */
	CHECK(store_window_add(s, &w, &row, 1, NULL, 0, err, sizeof(err)) == 0);
	CHECK(count(s, "SELECT count(*) FROM heat_cells") == 1);
	w = (struct store_window){ .start_ms = (int64_t)time(NULL) * 1000,
				   .end_ms = (int64_t)time(NULL) * 1000 + 1000 };
	CHECK(store_window_add(s, &w, &row, 1, NULL, 0, err, sizeof(err)) == 0); /* evicts */
	CHECK(count(s, "SELECT count(*) FROM windows") == 1);
	CHECK(count(s, "SELECT count(*) FROM heat_cells") == 1);
	CHECK(count(s, "SELECT count(*) FROM heat_windows") == 1);
	CHECK(store_heatmap_query(s, &q, &h, err, sizeof(err)) == 0);
	CHECK(h.n_windows == 1 && h.n_rows == 1 && h.rows[0].total_ns == 5);
	store_heatmap_free(&h);
	store_close(s);
}

int main(void)
{
	struct store *s;
	char path[128];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	s = fill();
	test_processes(s);
	test_threads_states_filters(s);
	test_reply(s);
	store_close(s);
	test_evicted();
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	if (system(path) != 0)
		return 1;
	return check_failures ? 1 : 0;
}
