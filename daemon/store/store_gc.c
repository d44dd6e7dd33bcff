/* store_gc: retention. Windows evicted by age and size, and the series,
 * stacks and strings nothing refers to any more collected. */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "hashtab.h"
#include "store_internal.h"

/* Size eviction goes down to 7/8 of max_db_bytes, so the vacuum and the
 * checkpoint that shrink the file run once per many windows, not per add. */
#define EVICT_LOW_WATERMARK(max) ((max) - (max) / 8)

/* Windows evicted by age leave garbage strings and stacks; they are collected
 * once 1/8 of the windows have gone since the last collection, which keeps
 * the cost of the full scan per window bounded. */
#define GC_FRACTION 8

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Deletes one window, its samples, its histograms and its heatmap cells,
 * inside the caller's transaction; push targets that had not sent it count
 * it as lost. */
static int store__evict(struct store *s, int64_t id)
{
	static const enum stmt deletes[] = {
		STMT_PUSH_LOST,		 STMT_WINDOW_SAMPLES_DELETE,   STMT_WINDOW_HIST_DELETE,
		STMT_WINDOW_HEAT_DELETE, STMT_WINDOW_HEAT_MARK_DELETE, STMT_WINDOW_DELETE,
	};
	int rc = SQLITE_DONE;

	for (size_t i = 0; rc == SQLITE_DONE && i < sizeof(deletes) / sizeof(deletes[0]); i++) {
		sqlite3_stmt *st = stmt(s, deletes[i]);

		sqlite3_bind_int64(st, 1, id);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
	}
	if (rc != SQLITE_DONE)
		return store__fail(s, rc, "cannot delete window %lld", (long long)id);
	return 0;
}

static int set_add(struct store *s, struct hashtab *set, int64_t id)
{
	if (!hashtab_put(set, &id, NULL))
		return store__error(s, -ENOMEM, "out of memory");
	return 0;
}

struct id_list {
	int64_t *v;
	size_t n;
	size_t cap;
};

static int id_list_push(struct store *s, struct id_list *l, int64_t id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		int64_t *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return store__error(s, -ENOMEM, "out of memory");
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = id;
	return 0;
}

/* The first column of every row of st, which is bound and ready. */
static int collect_ids(struct store *s, sqlite3_stmt *st, struct id_list *ret)
{
	int rc, r = 0;

	while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = id_list_push(s, ret, sqlite3_column_int64(st, 0));
	sqlite3_reset(st);
	if (r >= 0 && rc != SQLITE_DONE)
		r = store__fail(s, rc, "cannot list windows");
	return r;
}

/* Deletes the rows of ids, then forgets the list. */
static int delete_ids(struct store *s, enum stmt del, struct id_list *ids)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ids->n; i++) {
		sqlite3_stmt *st = stmt(s, del);
		int rc;

		sqlite3_bind_int64(st, 1, ids->v[i]);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			r = store__fail(s, rc, "cannot delete unused rows");
	}
	if (r >= 0 && ids->n)
		store__forget(s); /* the caches may name them */
	ids->n = 0;
	return r;
}

/*
 * Deletes the series no sample refers to, then the stacks no series refers
 * to, then the strings none of series (comms and cgroups), stacks and hist
 * refers to, inside the caller's transaction: one scan of each table. Each
 * scan only collects ids, as deleting from a table while it is being
 * scanned is not safe.
 */
static int store__gc(struct store *s)
{
	struct hashtab *series = NULL, *stacks = NULL, *strings = NULL;
	struct id_list dead = { 0 };
	sqlite3_stmt *st;
	int rc = SQLITE_DONE, r = 0;

	s->evicted_since_gc = 0;
	if (hashtab_new(sizeof(int64_t), 1, &series) < 0 ||
	    hashtab_new(sizeof(int64_t), 1, &stacks) < 0 ||
	    hashtab_new(sizeof(int64_t), 1, &strings) < 0) {
		r = store__error(s, -ENOMEM, "out of memory");
		goto out;
	}

	st = stmt(s, STMT_SAMPLES_REFS);
	while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = set_add(s, series, sqlite3_column_int64(st, 0));
	sqlite3_reset(st);
	if (r >= 0 && rc != SQLITE_DONE)
		r = store__fail(s, rc, "cannot scan samples");

	st = stmt(s, STMT_SERIES_ALL);
	while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (!hashtab_get(series, &id)) {
			r = id_list_push(s, &dead, id);
			continue;
		}
		r = set_add(s, strings, sqlite3_column_int64(st, 1));
		if (r >= 0)
			r = set_add(s, stacks, sqlite3_column_int64(st, 2));
		if (r >= 0)
			r = set_add(s, stacks, sqlite3_column_int64(st, 3));
		if (r >= 0)
			r = set_add(s, stacks, sqlite3_column_int64(st, 4));
		if (r >= 0 && sqlite3_column_int64(st, 5)) /* 0: no cgroup, no string */
			r = set_add(s, strings, sqlite3_column_int64(st, 5));
	}
	sqlite3_reset(st);
	if (r >= 0 && rc != SQLITE_DONE)
		r = store__fail(s, rc, "cannot scan series");
	if (r >= 0)
		r = delete_ids(s, STMT_SERIES_DELETE, &dead);

	st = stmt(s, STMT_STACKS_ALL);
	while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0), frame;
		const unsigned char *p = sqlite3_column_blob(st, 1);
		/* NULL for an empty blob, and NULL + 0 is undefined. */
		const unsigned char *end = p ? p + sqlite3_column_bytes(st, 1) : NULL;

		if (!hashtab_get(stacks, &id)) {
			r = id_list_push(s, &dead, id);
			continue;
		}
		while (r >= 0 && p && p < end && store__varint_next(&p, end, &frame))
			r = set_add(s, strings, frame);
	}
	sqlite3_reset(st);
	if (r >= 0 && rc != SQLITE_DONE)
		r = store__fail(s, rc, "cannot scan stacks");
	if (r >= 0)
		r = delete_ids(s, STMT_STACK_DELETE, &dead);

	st = stmt(s, STMT_HIST_REFS);
	while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = set_add(s, strings, sqlite3_column_int64(st, 0));
	sqlite3_reset(st);
	if (r >= 0 && rc != SQLITE_DONE)
		r = store__fail(s, rc, "cannot scan histograms");

	st = stmt(s, STMT_STRINGS_ALL);
	while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (!hashtab_get(strings, &id))
			r = id_list_push(s, &dead, id);
	}
	sqlite3_reset(st);
	if (r >= 0 && rc != SQLITE_DONE)
		r = store__fail(s, rc, "cannot scan strings");
	if (r >= 0)
		r = delete_ids(s, STMT_STRING_DELETE, &dead);
out:
	free(dead.v);
	hashtab_free(series);
	hashtab_free(stacks);
	hashtab_free(strings);
	return r;
}

static int pragma_get(struct store *s, enum stmt i, int64_t *ret)
{
	return store__stmt_int(s, stmt(s, i), "cannot read the database size", ret);
}

/* page_count * page_size plus the WAL file, as documented for db_bytes. */
int store__db_bytes(struct store *s, uint64_t *ret)
{
	const char *wal = sqlite3_filename_wal(sqlite3_db_filename(s->db, "main"));
	struct stat st;
	int64_t pages = 0; /* stmt_int fails < 0, which gcc cannot see */
	int r;

	r = pragma_get(s, STMT_PAGE_COUNT, &pages);
	if (r < 0)
		return r;
	*ret = (uint64_t)pages * (uint64_t)s->page_size;
	if (wal && stat(wal, &st) == 0)
		*ret += (uint64_t)st.st_size;
	return 0;
}

/* Bytes of the pages in use: what is left once the free pages are vacuumed. */
static int store__used_bytes(struct store *s, uint64_t *ret)
{
	int64_t pages = 0, free_pages = 0; /* as in store__db_bytes */
	int r;

	r = pragma_get(s, STMT_PAGE_COUNT, &pages);
	if (r >= 0)
		r = pragma_get(s, STMT_FREELIST_COUNT, &free_pages);
	if (r < 0)
		return r;
	*ret = (uint64_t)(pages - free_pages) * (uint64_t)s->page_size;
	return 0;
}

static int store__checkpoint(struct store *s)
{
	int rc = sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);

	if (rc != SQLITE_OK)
		return store__fail(s, rc, "cannot checkpoint the WAL");
	return 0;
}

int store__evict_old(struct store *s, int64_t keep_id)
{
	struct id_list ids = { 0 };
	int64_t now = now_ms(), windows = 0; /* as in store__db_bytes */
	sqlite3_stmt *st;
	int r;

	if ((uint64_t)now <= s->limits.max_age_ms)
		return 0;
	st = stmt(s, STMT_WINDOWS_ENDED_BEFORE);
	sqlite3_bind_int64(st, 1, now - (int64_t)s->limits.max_age_ms);
	sqlite3_bind_int64(st, 2, keep_id);
	r = collect_ids(s, st, &ids);
	if (r < 0 || !ids.n)
		goto out;
	r = store__stmt_exec(s, STMT_BEGIN, "cannot begin a transaction");
	for (size_t i = 0; r >= 0 && i < ids.n; i++)
		r = store__evict(s, ids.v[i]);
	if (r >= 0) {
		s->evicted_since_gc += ids.n;
		r = store__stmt_int(s, stmt(s, STMT_WINDOWS_STATS), "cannot count windows",
				    &windows);
	}
	if (r >= 0 && s->evicted_since_gc * GC_FRACTION >= (uint64_t)windows)
		r = store__gc(s);
	if (r >= 0)
		r = store__stmt_exec(s, STMT_COMMIT, "cannot commit");
	if (r < 0)
		store__rollback(s);
out:
	free(ids.v);
	return r;
}

/* Brings page_count * page_size + WAL back under max_db_bytes: evicts the
 * oldest windows until the pages in use fit the low watermark, then vacuums
 * and truncates the WAL so the file itself shrinks. */
int store__shrink(struct store *s, int64_t keep_id)
{
	uint64_t max = s->limits.max_db_bytes, size, used;
	struct id_list ids = { 0 };
	sqlite3_stmt *st;
	int r;

	r = store__db_bytes(s, &size);
	if (r < 0 || size <= max)
		return r;
	r = store__used_bytes(s, &used);
	if (r < 0)
		return r;
	if (used > EVICT_LOW_WATERMARK(max)) {
		st = stmt(s, STMT_WINDOWS_OLDEST);
		sqlite3_bind_int64(st, 1, keep_id);
		r = collect_ids(s, st, &ids);
		if (r >= 0)
			r = store__stmt_exec(s, STMT_BEGIN, "cannot begin a transaction");
		for (size_t i = 0; r >= 0 && i < ids.n && used > EVICT_LOW_WATERMARK(max); i++) {
			r = store__evict(s, ids.v[i]);
			if (r >= 0)
				r = store__used_bytes(s, &used);
		}
		if (r >= 0)
			r = store__gc(s);
		if (r >= 0)
			r = store__stmt_exec(s, STMT_COMMIT, "cannot commit");
		if (r < 0)
			store__rollback(s);
		free(ids.v);
		if (r < 0)
			return r;
	}
	if (sqlite3_exec(s->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL) != SQLITE_OK)
		return store__fail(s, sqlite3_errcode(s->db), "cannot vacuum");
	return store__checkpoint(s);
}
