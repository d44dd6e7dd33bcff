/* store_push: see store_push.h. Statements are prepared per call: they run
 * about once per window and target. */
#include "store_push.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define MESSAGE_MAX 1024

/* What store__windows_collect() reads. */
#define WINDOW_COLUMNS "id, start_ms, end_ms, capture_id, n_stacks, n_samples, bytes"

/* Prepares sql with the integer parameters args[0, n) bound as ?1.. and
 * the text parameter name, if not NULL, as ?(n+1). */
static int prepare(struct store *s, const char *sql, const int64_t *args, size_t n,
		   const char *name, sqlite3_stmt **ret)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);

	if (rc != SQLITE_OK)
		return store__fail(s, rc, "cannot prepare \"%s\"", sql);
	for (size_t i = 0; i < n; i++)
		sqlite3_bind_int64(*ret, (int)i + 1, args[i]);
	if (name)
		sqlite3_bind_text(*ret, (int)n + 1, name, -1, SQLITE_STATIC);
	return 0;
}

/* Runs a statement without rows. */
static int run(struct store *s, const char *sql, const int64_t *args, size_t n, const char *name,
	       const char *what)
{
	sqlite3_stmt *st;
	int r = prepare(s, sql, args, n, name, &st), rc;

	if (r < 0)
		return r;
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : store__fail(s, rc, "%s", what);
}

static int read_cursor(struct store *s, const char *name, struct store_push_cursor *ret)
{
	sqlite3_stmt *st;
	int r = prepare(s,
			"SELECT cursor, sent, set_aside, lost, last_success_ms FROM push_targets "
			"WHERE name = ?1",
			NULL, 0, name, &st),
	    rc;

	if (r < 0)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		ret->cursor = (uint64_t)sqlite3_column_int64(st, 0);
		ret->sent = (uint64_t)sqlite3_column_int64(st, 1);
		ret->set_aside = (uint64_t)sqlite3_column_int64(st, 2);
		ret->lost = (uint64_t)sqlite3_column_int64(st, 3);
		ret->last_success_ms = sqlite3_column_int64(st, 4);
		r = 0;
	} else {
		r = rc == SQLITE_DONE ? -ENOENT : store__fail(s, rc, "cannot read push target");
	}
	sqlite3_finalize(st);
	return r;
}

int store_push_target(struct store *s, const char *name, struct store_push_cursor *ret, char *err,
		      size_t err_size)
{
	int r;

	assert(s && name && ret);
	s->err = err;
	s->err_size = err_size;
	r = read_cursor(s, name, ret);
	if (r != -ENOENT)
		return r;
	r = run(s,
		"INSERT INTO push_targets (name, cursor) SELECT ?1, coalesce(max(id), 0) FROM "
		"windows WHERE capture_id = 0 ON CONFLICT DO NOTHING",
		NULL, 0, name, "cannot add the push target");
	return r < 0 ? r : read_cursor(s, name, ret);
}

int store_push_next(struct store *s, uint64_t after, struct store_window *ret, char *err,
		    size_t err_size)
{
	int64_t arg = (int64_t)after;
	struct store_window *list = NULL;
	sqlite3_stmt *st;
	size_t n = 0;
	int r;

	assert(s && ret);
	s->err = err;
	s->err_size = err_size;
	r = prepare(s,
		    "SELECT " WINDOW_COLUMNS " FROM windows WHERE capture_id = 0 AND id > ?1 "
		    "ORDER BY id LIMIT 1",
		    &arg, 1, NULL, &st);
	if (r < 0)
		return r;
	r = store__windows_collect(s, st, &list, &n);
	sqlite3_finalize(st);
	if (r >= 0 && !n)
		r = -ENOENT;
	if (r >= 0)
		*ret = list[0];
	free(list);
	return r;
}

int store_push_backlog(struct store *s, uint64_t after, uint64_t *ret_windows,
		       int64_t *ret_newest_end_ms, char *err, size_t err_size)
{
	int64_t arg = (int64_t)after;
	sqlite3_stmt *st;
	int r, rc;

	assert(s && ret_windows && ret_newest_end_ms);
	s->err = err;
	s->err_size = err_size;
	r = prepare(s,
		    "SELECT (SELECT count(*) FROM windows WHERE capture_id = 0 AND id > ?1), "
		    "(SELECT coalesce(max(end_ms), 0) FROM windows WHERE capture_id = 0)",
		    &arg, 1, NULL, &st);
	if (r < 0)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret_windows = (uint64_t)sqlite3_column_int64(st, 0);
		*ret_newest_end_ms = sqlite3_column_int64(st, 1);
	} else {
		r = store__fail(s, rc, "cannot count the windows to send");
	}
	sqlite3_finalize(st);
	return r;
}

int store_push_range(struct store *s, int64_t from_ms, int64_t to_ms, struct store_window **ret,
		     size_t *ret_n, char *err, size_t err_size)
{
	int64_t args[] = { from_ms, to_ms };
	sqlite3_stmt *st;
	int r;

	assert(s && ret && ret_n);
	s->err = err;
	s->err_size = err_size;
	r = prepare(s,
		    "SELECT " WINDOW_COLUMNS " FROM windows WHERE capture_id = 0 AND "
		    "start_ms >= ?1 AND start_ms < ?2 ORDER BY id",
		    args, 2, NULL, &st);
	if (r < 0)
		return r;
	r = store__windows_collect(s, st, ret, ret_n);
	sqlite3_finalize(st);
	return r;
}

int store_push_sent(struct store *s, const char *name, uint64_t id, int64_t now_ms, char *err,
		    size_t err_size)
{
	int64_t args[] = { (int64_t)id, now_ms };

	assert(s && name);
	s->err = err;
	s->err_size = err_size;
	return run(s,
		   "UPDATE push_targets SET cursor = max(cursor, ?1), sent = sent + 1, "
		   "last_success_ms = ?2 WHERE name = ?3",
		   args, 2, name, "cannot move the push cursor");
}

int store_push_set_aside(struct store *s, const char *name, uint64_t id, int64_t now_ms, int status,
			 const char *message, char *err, size_t err_size)
{
	int64_t args[] = { (int64_t)id, now_ms, status };
	char msg[MESSAGE_MAX + 1];
	sqlite3_stmt *st;
	int r, rc;

	assert(s && name && message);
	s->err = err;
	s->err_size = err_size;
	snprintf(msg, sizeof(msg), "%s", message);
	r = store__exec(s, "BEGIN IMMEDIATE", "cannot begin");
	if (r < 0)
		return r;
	r = prepare(s,
		    "INSERT INTO push_set_aside (window_id, at_ms, status, target, message) "
		    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO UPDATE SET at_ms = ?2, "
		    "status = ?3, message = ?5",
		    args, 3, name, &st);
	if (r >= 0) {
		sqlite3_bind_text(st, 5, msg, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			r = store__fail(s, rc, "cannot record the window set aside");
	}
	if (r >= 0)
		r = run(s,
			"UPDATE push_targets SET cursor = max(cursor, ?1), "
			"set_aside = set_aside + 1 WHERE name = ?2",
			args, 1, name, "cannot move the push cursor");
	if (r >= 0)
		r = store__exec(s, "COMMIT", "cannot commit");
	if (r < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}
