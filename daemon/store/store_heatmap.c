/* store_heatmap: see store_heatmap.h. */
#include "store_heatmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hashtab.h"
#include "store_internal.h" /* add_saturated */

/* A cell's key in the sums. No padding: a hashtab key. */
struct heat_cell {
	uint64_t col;
	uint64_t key;
};

/* A cell's sum, and the comm its row may be labelled with. */
struct heat_sum {
	uint64_t ns;
	int64_t comm_id;
	bool main_thread; /* comm_id is the main thread's (pid == tgid) */
};

/* What is known of a row once the cells are in. */
struct heat_key {
	uint64_t total_ns;
	int64_t comm_id;
	bool main_thread;
	size_t row; /* its row in the result; max_rows for "other" */
};

struct heat_build {
	struct hashtab *cols;	/* window id -> size_t column */
	struct hashtab *sums;	/* struct heat_cell -> struct heat_sum */
	struct hashtab *keys;	/* uint64_t key -> struct heat_key, from sums */
	int64_t last_id;	/* the window of the last sample, and its column: */
	const size_t *last_col; /* samples come window by window */
};

static int heat_fail(sqlite3 *db, int rc, const char *what, char *err, size_t err_size)
{
	snprintf(err, err_size, "%s: %s", what, sqlite3_errmsg(db));
	return store__errno(db, rc);
}

/*
 * The index (heat_cells, see store_schema.c): each continuous window's time
 * summed by (process, thread, comm, state, kind), written with the window
 * (store_write.c) or, for windows an offcpud before schema version 4
 * stored, by the first query that reads them. A heatmap then reads a row
 * per thread and state rather than one per stack. heat_windows lists the
 * windows indexed (one without rows too).
 */

/* Indexes window id, in the caller's transaction. */
static int heat_index_one(sqlite3 *db, int64_t id, char *err, size_t err_size)
{
	static const char sql[] =
		"INSERT INTO heat_cells SELECT ?1, se.tgid, se.pid, se.comm_id, se.state, se.kind, "
		"usum(sa.sum_ns) FROM samples sa JOIN series se ON se.id = sa.series_id "
		"WHERE sa.window_id = ?1 GROUP BY se.tgid, se.pid, se.comm_id, se.state, se.kind";
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_DONE) {
		rc = sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO heat_windows VALUES (?1)", -1,
					&st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, id);
			rc = sqlite3_step(st);
			sqlite3_finalize(st);
		}
	}
	return rc == SQLITE_DONE ? 0 : heat_fail(db, rc, "cannot index a window", err, err_size);
}

static int heat_exec(sqlite3 *db, const char *sql, const char *what, char *err, size_t err_size)
{
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : heat_fail(db, rc, what, err, err_size);
}

/* Indexes the continuous windows of [from_ms, to_ms) not indexed yet. */
static int heat_index_range(sqlite3 *db, int64_t from_ms, int64_t to_ms, char *err, size_t err_size)
{
	static const char missing[] =
		"SELECT w.id FROM windows w WHERE w.capture_id = 0 AND w.start_ms >= ?1 "
		"AND w.start_ms < ?2 AND w.id NOT IN (SELECT window_id FROM heat_windows)";
	int64_t *ids = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int rc, r;

	rc = sqlite3_prepare_v2(db, missing, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return heat_fail(db, rc, "cannot find windows to index", err, err_size);
	sqlite3_bind_int64(st, 1, from_ms);
	sqlite3_bind_int64(st, 2, to_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			int64_t *grown = realloc(ids, (cap = cap ? cap * 2 : 64) * sizeof(*ids));

			if (!grown) {
				sqlite3_finalize(st);
				free(ids);
				snprintf(err, err_size, "out of memory");
				return -ENOMEM;
			}
			ids = grown;
		}
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(ids);
		return heat_fail(db, rc, "cannot find windows to index", err, err_size);
	}
	if (!n) /* nothing to write: a query over indexed windows stays a read */
		return 0;
	r = heat_exec(db, "BEGIN IMMEDIATE", "cannot begin the index", err, err_size);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = heat_index_one(db, ids[i], err, err_size);
	if (r == 0)
		r = heat_exec(db, "COMMIT", "cannot commit the index", err, err_size);
	if (r < 0)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	free(ids);
	return r;
}

/* The range's windows: the columns. */
static int heat_windows(sqlite3 *db, const struct store_heatmap_query *q, struct heat_build *b,
			struct store_heatmap *h, char *err, size_t err_size)
{
	static const char sql[] = "SELECT id, start_ms, end_ms FROM windows WHERE capture_id = 0 "
				  "AND start_ms >= ?1 AND start_ms < ?2 ORDER BY start_ms, id";
	size_t cap = 0;
	sqlite3_stmt *st;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return heat_fail(db, rc, "cannot prepare the window list", err, err_size);
	sqlite3_bind_int64(st, 1, q->from_ms);
	sqlite3_bind_int64(st, 2, q->to_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		size_t *col;

		if (h->n_windows == cap) {
			size_t n = cap ? cap * 2 : 256;
			int64_t *start = realloc(h->start_ms, n * sizeof(*start));

			if (start)
				h->start_ms = start;
			int64_t *end = start ? realloc(h->end_ms, n * sizeof(*end)) : NULL;

			if (!end) {
				r = -ENOMEM;
				break;
			}
			h->end_ms = end;
			cap = n;
		}
		col = hashtab_put(b->cols, &id, NULL);
		if (!col) {
			r = -ENOMEM;
			break;
		}
		*col = h->n_windows;
		h->start_ms[h->n_windows] = sqlite3_column_int64(st, 1);
		h->end_ms[h->n_windows] = sqlite3_column_int64(st, 2);
		h->n_windows++;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = heat_fail(db, rc, "cannot list the windows", err, err_size);
	sqlite3_finalize(st);
	if (r == -ENOMEM)
		snprintf(err, err_size, "out of memory");
	return r;
}

/*
 * The rows' query: each index row of the range (a thread's time in a state
 * of a kind in a window) with its row's key. It is summed here rather than
 * with GROUP BY, which would sort every row into a temporary b-tree first.
 */
static int heat_prepare(sqlite3 *db, const struct store_heatmap_query *q, sqlite3_stmt **ret,
			char *err, size_t err_size)
{
	static const char *const keys[] = {
		[STORE_HEATMAP_TGID] = "se.tgid",
		[STORE_HEATMAP_PID] = "se.pid",
		[STORE_HEATMAP_STATE] = "se.state",
	};
	char sql[4096 + STORE_QUERY_MAX_PIDS * 8];
	size_t n;
	int rc;

	n = snprintf(sql, sizeof(sql),
		     "SELECT se.window_id, %s, se.sum_ns, se.comm_id, se.pid = se.tgid "
		     "FROM windows w JOIN heat_cells se ON se.window_id = w.id "
		     "WHERE w.capture_id = 0 AND w.start_ms >= ?1 AND w.start_ms < ?2",
		     keys[q->key]);
	if (q->state_mask)
		n += snprintf(sql + n, sizeof(sql) - n, " AND ((1 << se.state) & ?3) != 0");
	if (q->kind_mask)
		n += snprintf(sql + n, sizeof(sql) - n, " AND ((1 << se.kind) & ?4) != 0");
	if (q->comm && q->comm[0])
		n += snprintf(sql + n, sizeof(sql) - n,
			      " AND se.comm_id = (SELECT id FROM strings WHERE name = ?5)");
	if (q->n_pids) {
		n += snprintf(sql + n, sizeof(sql) - n, " AND se.tgid IN (");
		for (size_t i = 0; i < q->n_pids; i++)
			n += snprintf(sql + n, sizeof(sql) - n, "%s?%zu", i ? ", " : "", 6 + i);
		snprintf(sql + n, sizeof(sql) - n, ")");
	}

	rc = sqlite3_prepare_v2(db, sql, -1, ret, NULL);
	if (rc != SQLITE_OK)
		return heat_fail(db, rc, "cannot prepare the heatmap query", err, err_size);
	sqlite3_bind_int64(*ret, 1, q->from_ms);
	sqlite3_bind_int64(*ret, 2, q->to_ms);
	if (q->state_mask)
		sqlite3_bind_int64(*ret, 3, q->state_mask);
	if (q->kind_mask)
		sqlite3_bind_int64(*ret, 4, q->kind_mask);
	if (q->comm && q->comm[0])
		sqlite3_bind_blob64(*ret, 5, q->comm, strlen(q->comm), SQLITE_STATIC);
	for (size_t i = 0; i < q->n_pids; i++)
		sqlite3_bind_int64(*ret, (int)(6 + i), q->pids[i]);
	return 0;
}

/* Adds one sample to its cell: one hash lookup per sample, as a day of
 * windows has millions of them. */
static int heat_cell_add(struct heat_build *b, sqlite3_stmt *st)
{
	int64_t id = sqlite3_column_int64(st, 0);
	bool main_thread = sqlite3_column_int64(st, 4) != 0;
	struct heat_cell cell;
	struct heat_sum *sum;
	bool created;

	if (id != b->last_id || !b->last_col) {
		b->last_id = id;
		b->last_col = hashtab_get(b->cols, &id);
	}
	if (!b->last_col) /* a window added after the list was read: not a column */
		return 0;
	cell = (struct heat_cell){ *b->last_col, (uint64_t)sqlite3_column_int64(st, 1) };
	sum = hashtab_put(b->sums, &cell, &created);
	if (!sum)
		return -ENOMEM;
	/* sum_ns holds a uint64 as its int64 bits, as usum() reads it. */
	sum->ns = add_saturated(sum->ns, (uint64_t)sqlite3_column_int64(st, 2));
	if (created || (main_thread && !sum->main_thread)) {
		sum->comm_id = sqlite3_column_int64(st, 3);
		sum->main_thread = main_thread;
	}
	return 0;
}

/* The rows' totals and labels, from the cells. */
static int heat_keys(struct heat_build *b)
{
	const void *key;
	void *value;
	size_t pos = 0;

	while (hashtab_next(b->sums, &pos, &key, &value)) {
		const struct heat_cell *c = key;
		const struct heat_sum *sum = value;
		struct heat_key *k;
		bool created;

		k = hashtab_put(b->keys, &c->key, &created);
		if (!k)
			return -ENOMEM;
		k->total_ns = add_saturated(k->total_ns, sum->ns);
		if (created || (sum->main_thread && !k->main_thread)) {
			k->comm_id = sum->comm_id;
			k->main_thread = sum->main_thread;
		}
	}
	return 0;
}

struct heat_rank {
	uint64_t key;
	struct heat_key *info;
};

static int heat_rank_cmp(const void *a, const void *b)
{
	const struct heat_rank *x = a, *y = b;

	if (x->info->total_ns != y->info->total_ns)
		return x->info->total_ns < y->info->total_ns ? 1 : -1;
	return (x->key > y->key) - (x->key < y->key);
}

/* A comm's name by its id; "" if it has none. malloc'd, NULL on ENOMEM. */
static char *heat_label(sqlite3 *db, int64_t comm_id)
{
	sqlite3_stmt *st;
	char *label = NULL;

	if (sqlite3_prepare_v2(db, "SELECT name FROM strings WHERE id = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return strdup("");
	sqlite3_bind_int64(st, 1, comm_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(st, 0);
		int n = sqlite3_column_bytes(st, 0);

		label = strndup(p ? p : "", n);
	} else {
		label = strdup("");
	}
	sqlite3_finalize(st);
	return label;
}

/* Ranks the keys, keeps max_rows of them and sums the others into one row. */
static int heat_rows(sqlite3 *db, const struct store_heatmap_query *q, struct heat_build *b,
		     struct store_heatmap *h)
{
	size_t n_keys = hashtab_count(b->keys), pos = 0, n_rows, i = 0;
	struct heat_rank *rank;
	const void *key;
	void *value;

	rank = calloc(n_keys + 1, sizeof(*rank));
	if (!rank)
		return -ENOMEM;
	while (hashtab_next(b->keys, &pos, &key, &value)) {
		memcpy(&rank[i].key, key, sizeof(uint64_t));
		rank[i++].info = value;
	}
	qsort(rank, n_keys, sizeof(*rank), heat_rank_cmp);
	n_rows = n_keys > q->max_rows ? q->max_rows + 1 : n_keys;
	h->rows = calloc(n_rows + 1, sizeof(*h->rows));
	if (!h->rows)
		goto enomem;
	h->n_rows = n_rows;
	for (i = 0; i < n_rows; i++) {
		struct store_heatmap_row *row = &h->rows[i];

		row->cells = calloc(h->n_windows + 1, sizeof(*row->cells));
		if (!row->cells)
			goto enomem;
		if (i == q->max_rows) {
			row->other = true;
			row->label = strdup("");
		} else {
			row->key = rank[i].key;
			row->total_ns = rank[i].info->total_ns;
			row->label = q->key == STORE_HEATMAP_STATE
					     ? strdup("")
					     : heat_label(db, rank[i].info->comm_id);
		}
		if (!row->label)
			goto enomem;
	}
	for (i = 0; i < n_keys; i++)
		rank[i].info->row = i < q->max_rows ? i : q->max_rows;
	pos = 0;
	while (hashtab_next(b->sums, &pos, &key, &value)) {
		const struct heat_cell *c = key;
		const struct heat_key *k = hashtab_get(b->keys, &c->key);
		struct store_heatmap_row *row = &h->rows[k->row];
		uint64_t ns = ((const struct heat_sum *)value)->ns;

		row->cells[c->col] = add_saturated(row->cells[c->col], ns);
		if (row->other)
			row->total_ns = add_saturated(row->total_ns, ns);
	}
	free(rank);
	return 0;
enomem:
	free(rank);
	return -ENOMEM;
}

int store_heatmap_query(struct store *s, const struct store_heatmap_query *q,
			struct store_heatmap *ret, char *err, size_t err_size)
{
	struct heat_build b = { 0 };
	struct store_heatmap h = { 0 };
	sqlite3 *db = store__db(s);
	sqlite3_stmt *st = NULL;
	int rc, r;

	if (q->n_pids > STORE_QUERY_MAX_PIDS || (q->n_pids && !q->pids) || !q->max_rows ||
	    q->key > STORE_HEATMAP_STATE) {
		snprintf(err, err_size, "bad heatmap query");
		return -EINVAL;
	}
	if (hashtab_new(sizeof(int64_t), sizeof(size_t), &b.cols) < 0 ||
	    hashtab_new(sizeof(uint64_t), sizeof(struct heat_key), &b.keys) < 0 ||
	    hashtab_new(sizeof(struct heat_cell), sizeof(struct heat_sum), &b.sums) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = heat_index_range(db, q->from_ms, q->to_ms, err, err_size);
	if (r < 0)
		goto out;
	/* One read transaction: the columns and the cells see the same ring. */
	rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		r = heat_fail(db, rc, "cannot begin a read", err, err_size);
		goto out;
	}
	r = heat_windows(db, q, &b, &h, err, err_size);
	if (r == 0)
		r = heat_prepare(db, q, &st, err, err_size);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = heat_cell_add(&b, st);
	if (r == 0 && rc != SQLITE_DONE)
		r = heat_fail(db, rc, "the heatmap query failed", err, err_size);
	sqlite3_finalize(st);
	if (r == 0)
		r = heat_keys(&b);
	if (r == 0)
		r = heat_rows(db, q, &b, &h);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
out:
	if (r == -ENOMEM)
		snprintf(err, err_size, "out of memory");
	hashtab_free(b.cols);
	hashtab_free(b.keys);
	hashtab_free(b.sums);
	if (r < 0) {
		store_heatmap_free(&h);
		return r;
	}
	*ret = h;
	return 0;
}

void store_heatmap_free(struct store_heatmap *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n_rows; i++) {
		free(h->rows[i].label);
		free(h->rows[i].cells);
	}
	free(h->rows);
	free(h->start_ms);
	free(h->end_ms);
	memset(h, 0, sizeof(*h));
}
