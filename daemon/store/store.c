/* store: see store.h. The connection, its statements and its errors;
 * the rest is in store_schema.c, store_write.c, store_gc.c and store_query.c
 * (store_internal.h). */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hashtab.h"
#include "store_internal.h"

static const char *const stmt_sql[STMT_COUNT] = {
	[STMT_BEGIN] = "BEGIN IMMEDIATE",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
	[STMT_STRING_FIND] = "SELECT id FROM strings WHERE name = ?1",
	[STMT_STRING_INSERT] = "INSERT INTO strings (name) VALUES (?1) ON CONFLICT DO NOTHING",
	[STMT_STRING_GET] = "SELECT name FROM strings WHERE id = ?1",
	[STMT_STRING_DELETE] = "DELETE FROM strings WHERE id = ?1",
	[STMT_STRINGS_ALL] = "SELECT id FROM strings",
	[STMT_STACK_FIND] = "SELECT id FROM stacks WHERE frames = ?1",
	[STMT_STACK_INSERT] = "INSERT INTO stacks (frames) VALUES (?1) ON CONFLICT DO NOTHING",
	[STMT_STACK_GET] = "SELECT frames FROM stacks WHERE id = ?1",
	[STMT_STACK_DELETE] = "DELETE FROM stacks WHERE id = ?1",
	[STMT_STACKS_ALL] = "SELECT id, frames FROM stacks",
	[STMT_WINDOW_INSERT] = "INSERT INTO windows (start_ms, end_ms, capture_id, n_stacks, "
			       "n_samples, bytes, kind, targets) VALUES (?1, ?2, ?3, ?4, ?5, "
			       "?6, ?7, ?8)",
	[STMT_WINDOW_DELETE] = "DELETE FROM windows WHERE id = ?1",
	[STMT_WINDOW_SAMPLES_DELETE] = "DELETE FROM samples WHERE window_id = ?1",
	[STMT_WINDOW_HIST_DELETE] = "DELETE FROM hist WHERE window_id = ?1",
	[STMT_WINDOW_HEAT_DELETE] = "DELETE FROM heat_cells WHERE window_id = ?1",
	[STMT_WINDOW_HEAT_MARK_DELETE] = "DELETE FROM heat_windows WHERE window_id = ?1",
	[STMT_WINDOWS_SINCE] = "SELECT id, start_ms, end_ms, capture_id, n_stacks, n_samples, "
			       "bytes, kind, targets FROM windows WHERE start_ms >= ?1 "
			       "ORDER BY start_ms, id",
	[STMT_WINDOWS_ENDED_BEFORE] = "SELECT id FROM windows WHERE end_ms < ?1 AND id != ?2",
	[STMT_WINDOWS_OLDEST] = "SELECT id FROM windows WHERE id != ?1 ORDER BY start_ms, id",
	[STMT_WINDOWS_STATS] = "SELECT count(*), min(start_ms), max(end_ms) FROM windows",
	[STMT_WINDOWS_IN_RANGE] = "SELECT count(*) FROM windows WHERE capture_id = 0 AND "
				  "start_ms >= ?1 AND start_ms < ?2",
	[STMT_WINDOWS_OF_CAPTURE] = "SELECT count(*) FROM windows WHERE capture_id = ?1",
	[STMT_CAPTURE_KIND] = "SELECT coalesce(max(kind), -1) FROM windows WHERE capture_id = ?1",
	[STMT_WINDOW_EXISTS] = "SELECT count(*) FROM windows WHERE id = ?1",
	/* A continuous window evicted before a push target had it. */
	[STMT_PUSH_LOST] = "UPDATE push_targets SET lost = lost + 1 WHERE cursor < ?1 AND "
			   "EXISTS (SELECT 1 FROM windows WHERE id = ?1 AND capture_id = 0)",
	[STMT_SERIES_FIND] = "SELECT id FROM series WHERE tgid = ?1 AND pid = ?2 AND comm_id = ?3 "
			     "AND kind = ?4 AND state = ?5 AND ustack_id = ?6 AND kstack_id = ?7 "
			     "AND chain_id = ?8 AND cgroup_id = ?9 AND ns_pid = ?10",
	[STMT_SERIES_INSERT] = "INSERT INTO series (tgid, pid, comm_id, kind, state, ustack_id, "
			       "kstack_id, chain_id, cgroup_id, ns_pid) VALUES (?1, ?2, ?3, ?4, "
			       "?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING",
	[STMT_SERIES_DELETE] = "DELETE FROM series WHERE id = ?1",
	[STMT_SERIES_ALL] = "SELECT id, comm_id, ustack_id, kstack_id, chain_id, cgroup_id "
			    "FROM series",
	[STMT_SAMPLE_INSERT] = "INSERT INTO samples (window_id, series_id, sum_ns, count, bytes) "
			       "VALUES (?1, ?2, ?3, ?4, ?5)",
	[STMT_SAMPLES_REFS] = "SELECT series_id FROM samples",
	[STMT_HIST_INSERT] = "INSERT INTO hist (window_id, tgid, type, comm_id, buckets) "
			     "VALUES (?1, ?2, ?3, ?4, ?5)",
	[STMT_HIST_REFS] = "SELECT comm_id FROM hist",
	[STMT_HEAT_INSERT] = "INSERT INTO heat_cells (window_id, tgid, pid, comm_id, state, kind, "
			     "sum_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[STMT_HEAT_MARK] = "INSERT INTO heat_windows (window_id) VALUES (?1)",
	[STMT_PAGE_COUNT] = "PRAGMA page_count",
	[STMT_FREELIST_COUNT] = "PRAGMA freelist_count",
};

int store__error(struct store *s, int r, const char *fmt, ...)
{
	va_list ap;

	if (s->err && s->err_size) {
		va_start(ap, fmt);
		vsnprintf(s->err, s->err_size, fmt, ap);
		va_end(ap);
	}
	return r;
}

int store__errno(sqlite3 *db, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CANTOPEN:
		return db && sqlite3_system_errno(db) == ENOENT ? -ENOENT : -EACCES;
	case SQLITE_READONLY:
		return -EROFS;
	default: /* SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_IOERR, ... */
		return -EIO;
	}
}

int store__fail(struct store *s, int rc, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (s->err && s->err_size) {
		va_start(ap, fmt);
		n = vsnprintf(s->err, s->err_size, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < s->err_size)
			snprintf(s->err + n, s->err_size - n, ": %s",
				 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
	}
	return store__errno(s->db, rc);
}

void store__rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db)) {
		sqlite3_stmt *st = stmt(s, STMT_ROLLBACK);

		sqlite3_step(st);
		sqlite3_reset(st);
	}
	/* The caches may name rows that are gone now. */
	store__forget(s);
}

/* sum() of uint64 values kept as int64 bit patterns. Saturates where SQL's
 * sum() would fail the whole query with "integer overflow". */
static void usum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	uint64_t *acc = sqlite3_aggregate_context(ctx, sizeof(*acc));

	(void)argc;
	if (!acc) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	*acc = add_saturated(*acc, (uint64_t)sqlite3_value_int64(argv[0]));
}

static void usum_final(sqlite3_context *ctx)
{
	uint64_t *acc = sqlite3_aggregate_context(ctx, 0);

	sqlite3_result_int64(ctx, acc ? (int64_t)*acc : 0);
}

int store__pragma_read(struct store *s, const char *sql, int64_t *ret)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store__fail(s, rc, "cannot read the database");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return store__fail(s, rc == SQLITE_DONE ? SQLITE_ERROR : rc,
				   "cannot read the database");
	return 0;
}

int store__exec(struct store *s, const char *sql, const char *what)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return store__fail(s, rc, "%s", what);
	return 0;
}

/* Keeps the WAL a small part of the budget: it counts against it. */
static int store__apply_limits(struct store *s)
{
	int64_t pages = 1000; /* SQLite's default */
	char sql[64];

	if (s->limits.max_db_bytes) {
		pages = (int64_t)(s->limits.max_db_bytes / 16 / (uint64_t)s->page_size);
		pages = pages < 16 ? 16 : pages > 1000 ? 1000 : pages;
	}
	sqlite3_wal_autocheckpoint(s->db, (int)pages);
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %lld",
		 (long long)(pages * s->page_size));
	return store__exec(s, sql, "cannot limit the WAL");
}

/* A connection to path (opened with SQLITE_OPEN_READWRITE | flags),
 * reporting to err; on failure closed, with -errno. */
static int store__connect(const char *path, int flags, int busy_ms, struct store **ret, char *err,
			  size_t err_size)
{
	struct store *s = calloc(1, sizeof(*s));
	int rc;

	if (!s) {
		if (err && err_size)
			snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	s->err = err;
	s->err_size = err_size;
	/* NOMUTEX: one thread at a time uses a connection (see store.h). */
	rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | flags,
			     NULL);
	if (rc != SQLITE_OK) {
		int r = store__fail(s, rc, "cannot open '%s'", path);

		store_close(s);
		return r;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, busy_ms);
	*ret = s;
	return 0;
}

/* What every connection has: usum() and the prepared statements. */
static int store__prepare(struct store *s)
{
	int rc = sqlite3_create_function(s->db, "usum", 1,
					 SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY,
					 NULL, NULL, usum_step, usum_final);

	if (rc != SQLITE_OK)
		return store__fail(s, rc, "cannot register usum()");
	for (int i = 0; i < STMT_COUNT; i++) {
		rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					&s->stmts[i], NULL);
		if (rc != SQLITE_OK)
			return store__fail(s, rc, "cannot prepare \"%s\"", stmt_sql[i]);
	}
	return 0;
}

/* The end of an open whose set-up so far returned r: the statements, then
 * *ret; or the connection closed and -errno. */
static int store__finish(struct store *s, int r, struct store **ret)
{
	if (r >= 0)
		r = store__prepare(s);
	if (r < 0) {
		store_close(s);
		return r;
	}
	s->err = NULL;
	s->err_size = 0;
	*ret = s;
	return 0;
}

int store_open(const char *path, const struct store_limits *limits, struct store **ret, char *err,
	       size_t err_size)
{
	struct store *s;
	char mode[16] = "";
	sqlite3_stmt *st;
	int64_t version = 0, auto_vacuum;
	int rc, r;

	assert(path && ret);
	r = store__connect(path, SQLITE_OPEN_CREATE, 1000, &s, err, err_size);
	if (r < 0)
		return r;
	if (limits)
		s->limits = *limits;
	r = store__check(s, path, &version);
	if (r < 0)
		goto fail;

	r = store__exec(s,
			"PRAGMA synchronous = NORMAL; PRAGMA cache_size = -8192; "
			"PRAGMA temp_store = MEMORY",
			"cannot configure the connection");
	/* Takes effect at once only before the file has its first page (the
	 * switch to WAL writes one); an empty file someone else made needs the
	 * VACUUM. Version 0 has no tables (store__check). */
	if (r >= 0 && version == 0)
		r = store__exec(s, "PRAGMA auto_vacuum = INCREMENTAL", "cannot set auto_vacuum");
	if (r >= 0 && version == 0)
		r = store__pragma_read(s, "PRAGMA auto_vacuum", &auto_vacuum);
	if (r >= 0 && version == 0 && auto_vacuum != 2)
		r = store__exec(s, "VACUUM", "cannot set auto_vacuum");
	if (r < 0)
		goto fail;
	/* WAL + synchronous=NORMAL: a committed window survives a crash of
	 * the process (not necessarily of the machine). */
	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			snprintf(mode, sizeof(mode), "%s",
				 (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_ROW) {
		r = store__fail(s, rc, "cannot switch '%s' to WAL", path);
		goto fail;
	}
	if (strcmp(mode, "wal")) {
		r = store__error(s, -EIO, "'%s' cannot use WAL (journal mode stays %s)", path,
				 mode);
		goto fail;
	}
	r = store__migrate(s, version);
	if (r >= 0)
		r = store__pragma_read(s, "PRAGMA page_size", &s->page_size);
	if (r >= 0)
		r = store__apply_limits(s);
	if (r >= 0)
		store__forget(s);
	return store__finish(s, r, ret);
fail:
	store_close(s);
	return r;
}

int store_open_another(const char *path, struct store **ret, char *err, size_t err_size)
{
	struct store *s;
	int r;

	assert(path && ret);
	/* A longer busy wait than the first connection's: this one waits, not
	 * the windows. */
	r = store__connect(path, 0, 5000, &s, err, err_size);
	if (r < 0)
		return r;
	r = store__schema_current(s, path);
	if (r >= 0)
		r = store__exec(s, "PRAGMA synchronous = NORMAL",
				"cannot configure the connection");
	if (r >= 0)
		r = store__pragma_read(s, "PRAGMA page_size", &s->page_size);
	return store__finish(s, r, ret);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < STMT_COUNT; i++)
		sqlite3_finalize(s->stmts[i]);
	/* The last connection checkpoints and removes the WAL. */
	sqlite3_close(s->db);
	store__intern_free(&s->strings);
	store__intern_free(&s->stacks);
	hashtab_free(s->series);
	hashtab_free(s->series_older);
	free(s->frames);
	free(s);
}

struct sqlite3 *store__db(struct store *s)
{
	return s->db;
}
