/* store_query: reading windows back (store_windows_list, store_query,
 * store_hist_query, store_stats: see store.h). */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hashtab.h"
#include "store_internal.h"

/* Columns id, start_ms, end_ms, capture_id, n_stacks, n_samples, bytes,
 * and where the statement has them kind and targets. */
static void window_from_row(sqlite3_stmt *st, struct store_window *w)
{
	const unsigned char *targets;

	w->id = (uint64_t)sqlite3_column_int64(st, 0);
	w->start_ms = sqlite3_column_int64(st, 1);
	w->end_ms = sqlite3_column_int64(st, 2);
	w->capture_id = (uint64_t)sqlite3_column_int64(st, 3);
	w->n_stacks = (uint64_t)sqlite3_column_int64(st, 4);
	w->n_samples = (uint64_t)sqlite3_column_int64(st, 5);
	w->bytes = (uint64_t)sqlite3_column_int64(st, 6);
	w->kind = -1;
	w->targets[0] = '\0';
	if (sqlite3_column_count(st) < 9 || sqlite3_column_type(st, 7) == SQLITE_NULL)
		return;
	w->kind = (int32_t)sqlite3_column_int64(st, 7);
	targets = sqlite3_column_text(st, 8);
	snprintf(w->targets, sizeof(w->targets), "%s", targets ? (const char *)targets : "");
}

int store_capture_kind(struct store *s, uint64_t capture_id, int32_t *ret_kind, char *err,
		       size_t err_size)
{
	sqlite3_stmt *st;
	int64_t kind = -1;
	int r;

	assert(s && ret_kind);
	s->err = err;
	s->err_size = err_size;
	st = stmt(s, STMT_CAPTURE_KIND);
	sqlite3_bind_int64(st, 1, (int64_t)capture_id);
	r = store__stmt_int(s, st, "cannot read a capture's kind", &kind);
	if (r < 0)
		return r;
	*ret_kind = (int32_t)kind;
	return 0;
}

int store__windows_collect(struct store *s, sqlite3_stmt *st, struct store_window **ret,
			   size_t *ret_n)
{
	struct store_window *list = NULL;
	size_t n = 0, cap = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			struct store_window *more;

			cap = cap ? cap * 2 : 64;
			more = realloc(list, cap * sizeof(*list));
			if (!more) {
				sqlite3_reset(st);
				free(list);
				return store__error(s, -ENOMEM, "out of memory");
			}
			list = more;
		}
		window_from_row(st, &list[n++]);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free(list);
		return store__fail(s, rc, "cannot list windows");
	}
	*ret = list;
	*ret_n = n;
	return 0;
}

int store_windows_list(struct store *s, int64_t since_ms, struct store_window **ret, size_t *ret_n,
		       char *err, size_t err_size)
{
	sqlite3_stmt *st;

	assert(s && ret && ret_n);
	s->err = err;
	s->err_size = err_size;
	st = stmt(s, STMT_WINDOWS_SINCE);
	sqlite3_bind_int64(st, 1, since_ms);
	return store__windows_collect(s, st, ret, ret_n);
}

/* Growing text with spans into it; strings in it are NUL-terminated. */
struct buf {
	char *p;
	size_t len;
	size_t cap;
};

struct span {
	size_t off;
	size_t len;
};

static int buf_append(struct buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 16384;
		char *more;

		while (cap < b->len + n + 1)
			cap *= 2;
		more = realloc(b->p, cap);
		if (!more)
			return -ENOMEM;
		b->p = more;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* One query's id -> text caches. */
struct query_cache {
	struct hashtab *strings; /* strings.id -> span in names */
	struct hashtab *stacks;	 /* stacks.id -> span in joined */
	struct buf names;
	struct buf joined;
};

static int query_string(struct store *s, struct query_cache *qc, int64_t id, struct span *ret)
{
	struct span *cached = hashtab_get(qc->strings, &id), span;
	sqlite3_stmt *st;
	int rc, r = 0;

	if (cached) {
		*ret = *cached;
		return 0;
	}
	st = stmt(s, STMT_STRING_GET);
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		span.off = qc->names.len;
		span.len = (size_t)sqlite3_column_bytes(st, 0);
		r = buf_append(&qc->names, sqlite3_column_blob(st, 0), span.len);
		/* Skip past the NUL so the next string starts after it. */
		if (r >= 0)
			qc->names.len++;
	}
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return store__error(s, -EIO, "string %lld is missing", (long long)id);
	if (rc != SQLITE_ROW)
		return store__fail(s, rc, "cannot read string %lld", (long long)id);
	if (r < 0)
		return store__error(s, r, "out of memory");
	cached = hashtab_put(qc->strings, &id, NULL);
	if (!cached)
		return store__error(s, -ENOMEM, "out of memory");
	*cached = span;
	*ret = span;
	return 0;
}

static int query_stack(struct store *s, struct query_cache *qc, int64_t id, struct span *ret)
{
	struct span *cached = hashtab_get(qc->stacks, &id), span;
	const unsigned char *p, *end;
	bool first = true;
	sqlite3_stmt *st;
	int rc, r = 0;

	if (cached) {
		*ret = *cached;
		return 0;
	}
	st = stmt(s, STMT_STACK_GET);
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			return store__error(s, -EIO, "stack %lld is missing", (long long)id);
		return store__fail(s, rc, "cannot read stack %lld", (long long)id);
	}
	/* The blob stays valid: the string lookups use another statement. */
	p = sqlite3_column_blob(st, 0);
	end = p ? p + sqlite3_column_bytes(st, 0) : NULL; /* NULL for an empty blob */
	span.off = qc->joined.len;
	r = buf_append(&qc->joined, NULL, 0);
	while (r >= 0 && p && p < end) {
		struct span frame;
		int64_t frame_id;

		if (!store__varint_next(&p, end, &frame_id)) {
			r = store__error(s, -EIO, "stack %lld is corrupt", (long long)id);
			break;
		}
		r = query_string(s, qc, frame_id, &frame);
		if (r < 0)
			break;
		if (!first && buf_append(&qc->joined, ";", 1) < 0)
			r = store__error(s, -ENOMEM, "out of memory");
		first = false;
		if (r >= 0 && buf_append(&qc->joined, qc->names.p + frame.off, frame.len) < 0)
			r = store__error(s, -ENOMEM, "out of memory");
	}
	sqlite3_reset(st);
	if (r < 0)
		return r;
	span.len = qc->joined.len - span.off;
	qc->joined.len++; /* keep the NUL */
	cached = hashtab_put(qc->stacks, &id, NULL);
	if (!cached)
		return store__error(s, -ENOMEM, "out of memory");
	*cached = span;
	*ret = span;
	return 0;
}

/*
 * The queries' parameters: ?1 capture_id, ?2 from_ms, ?3 to_ms, ?4
 * state_mask, ?5 comm, ?6 kind_mask, ?7 the histogram type, ?8 on the pids.
 * Built as text, as the number of pids varies.
 */
#define PARAM_PIDS 8

#define APPEND(sql, r, str)                                                                        \
	do {                                                                                       \
		if ((r) >= 0)                                                                      \
			(r) = buf_append(sql, str, strlen(str));                                   \
	} while (0)

/* The condition on windows w that q selects. */
static void query_append_windows(struct buf *sql, int *r, const struct store_query *q)
{
	if (q->window_id)
		APPEND(sql, *r, "w.id = ?1");
	else if (q->capture_id)
		APPEND(sql, *r, "w.capture_id = ?1");
	else
		APPEND(sql, *r, "w.capture_id = 0 AND w.start_ms >= ?2 AND w.start_ms < ?3");
}

/* " AND column IN (the pids)", if q has pids. */
static void query_append_pids(struct buf *sql, int *r, const struct store_query *q,
			      const char *column)
{
	char param[32];

	if (!q->n_pids)
		return;
	APPEND(sql, *r, " AND ");
	APPEND(sql, *r, column);
	APPEND(sql, *r, " IN (");
	for (size_t i = 0; i < q->n_pids; i++) {
		snprintf(param, sizeof(param), "%s?%zu", i ? ", " : "", PARAM_PIDS + i);
		APPEND(sql, *r, param);
	}
	APPEND(sql, *r, ")");
}

/* Prepares sql (freed) and binds the window, comm and pid parameters. */
static int query_finish(struct store *s, const struct store_query *q, struct buf *sql, int r,
			sqlite3_stmt **ret)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (r < 0) {
		free(sql->p);
		return store__error(s, -ENOMEM, "out of memory");
	}
	rc = sqlite3_prepare_v2(s->db, sql->p, -1, &st, NULL);
	free(sql->p);
	if (rc != SQLITE_OK)
		return store__fail(s, rc, "cannot prepare the query");
	if (q->window_id) {
		sqlite3_bind_int64(st, 1, (int64_t)q->window_id);
	} else if (q->capture_id) {
		sqlite3_bind_int64(st, 1, (int64_t)q->capture_id);
	} else {
		sqlite3_bind_int64(st, 2, q->from_ms);
		sqlite3_bind_int64(st, 3, q->to_ms);
	}
	if (q->comm && q->comm[0])
		sqlite3_bind_blob64(st, 5, q->comm, strlen(q->comm), SQLITE_STATIC);
	for (size_t i = 0; i < q->n_pids; i++)
		sqlite3_bind_int64(st, (int)(PARAM_PIDS + i), q->pids[i]);
	*ret = st;
	return 0;
}

/* The merging query for q, bound and ready to step. The filters select a
 * set of series, built once; the unary + keeps SQLite from turning that set
 * into one primary key lookup per window and series, which is much slower
 * than probing the set with each sample unless the set is tiny. */
static int query_prepare(struct store *s, const struct store_query *q, sqlite3_stmt **ret)
{
	struct buf sql = { 0 };
	int r = 0;

	APPEND(&sql, r,
	       "SELECT se.tgid, se.pid, se.comm_id, se.kind, se.state, se.ustack_id, "
	       "se.kstack_id, se.chain_id, g.sum_ns, g.count, g.bytes, se.cgroup_id, se.ns_pid "
	       "FROM (SELECT sa.series_id, "
	       "usum(sa.sum_ns) AS sum_ns, usum(sa.count) AS count, usum(sa.bytes) AS bytes "
	       "FROM windows w "
	       "JOIN samples sa ON sa.window_id = w.id WHERE ");
	query_append_windows(&sql, &r, q);
	if (q->state_mask || q->kind_mask || (q->comm && q->comm[0]) || q->n_pids) {
		APPEND(&sql, r, " AND +sa.series_id IN (SELECT id FROM series WHERE 1");
		if (q->state_mask)
			APPEND(&sql, r, " AND ((1 << state) & ?4) != 0");
		if (q->kind_mask)
			APPEND(&sql, r, " AND ((1 << kind) & ?6) != 0");
		if (q->comm && q->comm[0])
			APPEND(&sql, r, " AND comm_id = (SELECT id FROM strings WHERE name = ?5)");
		query_append_pids(&sql, &r, q, "tgid");
		APPEND(&sql, r, ")");
	}
	APPEND(&sql, r, " GROUP BY sa.series_id) g JOIN series se ON se.id = g.series_id");
	r = query_finish(s, q, &sql, r, ret);
	if (r < 0)
		return r;
	if (q->state_mask)
		sqlite3_bind_int64(*ret, 4, q->state_mask);
	if (q->kind_mask)
		sqlite3_bind_int64(*ret, 6, q->kind_mask);
	return 0;
}

/*
 * The histogram query for q and type, bound and ready to step: the rows
 * (a process's buckets in a window) of the windows in range, by tgid, each
 * with its window's age (1 is the newest in range). store_hist_query() sums
 * a process's rows as they come and takes the comm of its newest.
 */
static int hist_query_prepare(struct store *s, const struct store_query *q, uint32_t type,
			      sqlite3_stmt **ret)
{
	struct buf sql = { 0 };
	int r = 0;

	APPEND(&sql, r,
	       "WITH r AS (SELECT w.id, row_number() OVER (ORDER BY w.start_ms DESC, w.id DESC) "
	       "AS age FROM windows w WHERE ");
	query_append_windows(&sql, &r, q);
	APPEND(&sql, r,
	       ") SELECT h.tgid, r.age, h.comm_id, h.buckets FROM r JOIN hist h ON "
	       "h.window_id = r.id WHERE h.type = ?7");
	if (q->comm && q->comm[0])
		APPEND(&sql, r, " AND h.comm_id = (SELECT id FROM strings WHERE name = ?5)");
	query_append_pids(&sql, &r, q, "h.tgid");
	APPEND(&sql, r, " ORDER BY h.tgid");
	r = query_finish(s, q, &sql, r, ret);
	if (r < 0)
		return r;
	sqlite3_bind_int64(*ret, 7, type);
	return 0;
}
#undef APPEND

/* Checks q's arguments, then counts the windows it selects. */
static int query_windows(struct store *s, const struct store_query *q, int64_t *ret)
{
	sqlite3_stmt *st;

	if (q->n_pids > STORE_QUERY_MAX_PIDS)
		return store__error(s, -EINVAL, "%zu pids; at most %d", q->n_pids,
				    STORE_QUERY_MAX_PIDS);
	if (q->n_pids && !q->pids)
		return store__error(s, -EINVAL, "%zu pids but no array", q->n_pids);
	if (q->window_id) {
		st = stmt(s, STMT_WINDOW_EXISTS);
		sqlite3_bind_int64(st, 1, (int64_t)q->window_id);
	} else if (q->capture_id) {
		st = stmt(s, STMT_WINDOWS_OF_CAPTURE);
		sqlite3_bind_int64(st, 1, (int64_t)q->capture_id);
	} else {
		st = stmt(s, STMT_WINDOWS_IN_RANGE);
		sqlite3_bind_int64(st, 1, q->from_ms);
		sqlite3_bind_int64(st, 2, q->to_ms);
	}
	return store__stmt_int(s, st, "cannot count windows", ret);
}

static void query_cache_free(struct query_cache *qc)
{
	hashtab_free(qc->strings);
	hashtab_free(qc->stacks);
	free(qc->names.p);
	free(qc->joined.p);
}

int store_query(struct store *s, const struct store_query *q,
		int (*row)(void *arg, const struct store_sample *sample), void *arg,
		uint64_t *ret_windows, char *err, size_t err_size)
{
	struct query_cache qc = { 0 };
	sqlite3_stmt *st = NULL;
	int64_t windows;
	int rc, r;

	assert(s && q && row);
	s->err = err;
	s->err_size = err_size;
	r = query_windows(s, q, &windows);
	if (r < 0)
		return r;

	if (hashtab_new(sizeof(int64_t), sizeof(struct span), &qc.strings) < 0 ||
	    hashtab_new(sizeof(int64_t), sizeof(struct span), &qc.stacks) < 0) {
		r = store__error(s, -ENOMEM, "out of memory");
		goto out;
	}
	r = query_prepare(s, q, &st);
	if (r < 0)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_sample sample = {
			.tgid = (uint32_t)sqlite3_column_int64(st, 0),
			.pid = (uint32_t)sqlite3_column_int64(st, 1),
			.kind = (uint32_t)sqlite3_column_int64(st, 3),
			.state = (uint32_t)sqlite3_column_int64(st, 4),
			.sum_ns = (uint64_t)sqlite3_column_int64(st, 8),
			.count = (uint64_t)sqlite3_column_int64(st, 9),
			.bytes = (uint64_t)sqlite3_column_int64(st, 10),
			.ns_pid = (uint32_t)sqlite3_column_int64(st, 12),
		};
		int64_t cgroup_id = sqlite3_column_int64(st, 11);
		struct span comm, ustack, kstack, chain, cgroup = { 0 };

		r = query_string(s, &qc, sqlite3_column_int64(st, 2), &comm);
		if (r >= 0)
			r = query_stack(s, &qc, sqlite3_column_int64(st, 5), &ustack);
		if (r >= 0)
			r = query_stack(s, &qc, sqlite3_column_int64(st, 6), &kstack);
		if (r >= 0)
			r = query_stack(s, &qc, sqlite3_column_int64(st, 7), &chain);
		/* 0: not known, no string to read. */
		if (r >= 0 && cgroup_id)
			r = query_string(s, &qc, cgroup_id, &cgroup);
		if (r < 0)
			goto out;
		/* Pointers only now: the lookups above may move the buffers. */
		sample.comm = qc.names.p + comm.off;
		sample.cgroup = cgroup_id ? qc.names.p + cgroup.off : "";
		sample.ustack = qc.joined.p + ustack.off;
		sample.kstack = qc.joined.p + kstack.off;
		sample.chain = qc.joined.p + chain.off;
		r = row(arg, &sample);
		if (r)
			goto out;
	}
	if (rc != SQLITE_DONE) {
		r = store__fail(s, rc, "query failed");
		goto out;
	}
	if (ret_windows)
		*ret_windows = (uint64_t)windows;
	r = 0;
out:
	sqlite3_finalize(st);
	query_cache_free(&qc);
	return r;
}

/* A process's buckets of one type, summed over the windows of a query. */
struct hist_sum {
	uint32_t tgid;
	uint32_t present;		    /* bit b: bucket b has a row */
	uint64_t count[STORE_HIST_BUCKETS]; /* saturating */
	int64_t age;			    /* of the newest window seen */
	int64_t comm_id;		    /* that window's */
};

/* Calls row() for each bucket of sum, in order; its result, or 0. */
static int hist_sum_emit(struct store *s, struct query_cache *qc, const struct hist_sum *sum,
			 uint32_t type, int (*row)(void *arg, const struct store_hist *h),
			 void *arg)
{
	struct span comm;
	int r;

	if (!sum->present)
		return 0;
	r = query_string(s, qc, sum->comm_id, &comm);
	for (uint32_t b = 0; r >= 0 && b < STORE_HIST_BUCKETS; b++) {
		struct store_hist h = {
			.tgid = sum->tgid,
			.type = type,
			.bucket = b,
			.count = sum->count[b],
			.comm = qc->names.p + comm.off,
		};

		if (sum->present & (1u << b))
			r = row(arg, &h);
		if (r)
			break;
	}
	return r;
}

int store_hist_query(struct store *s, const struct store_query *q, uint32_t type,
		     int (*row)(void *arg, const struct store_hist *h), void *arg,
		     uint64_t *ret_windows, char *err, size_t err_size)
{
	struct query_cache qc = { 0 };
	struct hist_sum sum = { 0 };
	sqlite3_stmt *st = NULL;
	int64_t windows;
	int rc, r;

	assert(s && q && row);
	s->err = err;
	s->err_size = err_size;
	if (type > 1)
		return store__error(s, -EINVAL, "histogram type %u; 0 or 1 expected", type);
	r = query_windows(s, q, &windows);
	if (r < 0)
		return r;

	if (hashtab_new(sizeof(int64_t), sizeof(struct span), &qc.strings) < 0) {
		r = store__error(s, -ENOMEM, "out of memory");
		goto out;
	}
	r = hist_query_prepare(s, q, type, &st);
	if (r < 0)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *p = sqlite3_column_blob(st, 3); /* NULL if empty */
		const unsigned char *end = p ? p + sqlite3_column_bytes(st, 3) : NULL;
		uint32_t tgid = (uint32_t)sqlite3_column_int64(st, 0), bucket;
		int64_t age = sqlite3_column_int64(st, 1);
		bool corrupt = false;
		size_t pairs = 0;
		uint64_t count;

		if (sum.present && tgid != sum.tgid) {
			r = hist_sum_emit(s, &qc, &sum, type, row, arg);
			if (r)
				goto out;
			memset(&sum, 0, sizeof(sum));
		}
		if (!sum.present || age < sum.age) {
			sum.age = age;
			sum.comm_id = sqlite3_column_int64(st, 2);
		}
		sum.tgid = tgid;
		while (p && store__hist_blob_next(&p, end, &bucket, &count, &corrupt)) {
			sum.count[bucket] = add_saturated(sum.count[bucket], count);
			sum.present |= 1u << bucket;
			pairs++;
		}
		if (corrupt || !pairs) {
			r = store__error(s, -EIO, "a histogram of process %" PRIu32 " is corrupt",
					 tgid);
			goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		r = store__fail(s, rc, "histogram query failed");
		goto out;
	}
	r = hist_sum_emit(s, &qc, &sum, type, row, arg);
	if (r)
		goto out;
	if (ret_windows)
		*ret_windows = (uint64_t)windows;
	r = 0;
out:
	sqlite3_finalize(st);
	query_cache_free(&qc);
	return r;
}

int store_stats(struct store *s, struct store_stats *ret)
{
	sqlite3_stmt *st;
	int rc, r;

	assert(s && ret);
	s->err = NULL;
	s->err_size = 0;
	st = stmt(s, STMT_WINDOWS_STATS);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		ret->windows = (uint64_t)sqlite3_column_int64(st, 0);
		ret->oldest_start_ms = sqlite3_column_int64(st, 1);
		ret->newest_end_ms = sqlite3_column_int64(st, 2);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return store__errno(s->db, rc);
	ret->cache_bytes = store_cache_bytes(s);
	r = store__db_bytes(s, &ret->db_bytes);
	return r < 0 ? r : 0;
}
