/*
 * store_internal: what the store's files share (store.c: the connection and
 * its statements; store_schema.c: tables and migrations; store_write.c:
 * adding windows; store_gc.c: eviction and collection; store_query.c:
 * reading). Not for the rest of the daemon: store.h is its interface.
 */
#ifndef STORE_INTERNAL_H
#define STORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store.h"

enum stmt {
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_STRING_FIND,
	STMT_STRING_INSERT,
	STMT_STRING_GET,
	STMT_STRING_DELETE,
	STMT_STRINGS_ALL,
	STMT_STACK_FIND,
	STMT_STACK_INSERT,
	STMT_STACK_GET,
	STMT_STACK_DELETE,
	STMT_STACKS_ALL,
	STMT_WINDOW_INSERT,
	STMT_WINDOW_DELETE,
	STMT_WINDOW_SAMPLES_DELETE,
	STMT_WINDOW_HIST_DELETE,
	STMT_WINDOW_HEAT_DELETE,
	STMT_WINDOW_HEAT_MARK_DELETE,
	STMT_WINDOWS_SINCE,
	STMT_WINDOWS_ENDED_BEFORE,
	STMT_WINDOWS_OLDEST,
	STMT_WINDOWS_STATS,
	STMT_WINDOWS_IN_RANGE,
	STMT_WINDOWS_OF_CAPTURE,
	STMT_CAPTURE_KIND,
	STMT_WINDOW_EXISTS,
	STMT_PUSH_LOST,
	STMT_SERIES_FIND,
	STMT_SERIES_INSERT,
	STMT_SERIES_DELETE,
	STMT_SERIES_ALL,
	STMT_SAMPLE_INSERT,
	STMT_SAMPLES_REFS,
	STMT_HIST_INSERT,
	STMT_HIST_REFS,
	STMT_HEAT_INSERT,
	STMT_HEAT_MARK,
	STMT_PAGE_COUNT,
	STMT_FREELIST_COUNT,
	STMT_COUNT,
};

struct intern_entry {
	int64_t id;
	size_t off; /* of the content in the arena */
	size_t len;
};

/* One generation of an intern cache: its contents side by side in arena. */
struct intern_gen {
	struct hashtab *map; /* hash -> struct intern_entry; NULL: none yet */
	char *arena;
	size_t used;
	size_t cap;
};

/* Content -> row id, so recurring frames and stacks cost no SQL. Keyed by a
 * 64-bit hash; the content is kept to tell a collision from a hit. In two
 * generations, as the series: a hit in the older is cached in the newer
 * again, and a full newer becomes the older, the older's memory freed. What
 * recurs stays; what came once (churn's stripped binaries named by offset,
 * a new thread's start) goes within two generations, so the cache holds at
 * most twice a generation's limits (store_cache_bytes()). */
struct intern {
	struct intern_gen newer, older;
	size_t gen_entries, gen_bytes; /* a generation's limits */
};

struct store {
	sqlite3 *db;
	sqlite3_stmt *stmts[STMT_COUNT];
	struct store_limits limits;
	int64_t page_size;
	uint64_t evicted_since_gc; /* windows, see GC_FRACTION */
	struct intern strings;	   /* frame name, comm or cgroup path -> strings.id */
	struct intern stacks;	   /* ';'-joined stack or chain -> stacks.id */
	/* struct series_key -> series.id, in two generations (NULL: off): a
	 * series found in the older moves to the newer, and when the newer is
	 * full it becomes the older. What recurs stays; a dead thread's series
	 * go within two generations. */
	struct hashtab *series, *series_older;
	unsigned char *frames; /* scratch: a stack's varint encoding */
	size_t frames_cap;
	char *err; /* the current call's message buffer */
	size_t err_size;
};

/* A series as its row in the series table. No padding: it keys a hashtab. */
struct series_key {
	int64_t comm_id;
	int64_t ustack_id;
	int64_t kstack_id;
	int64_t chain_id;
	int64_t cgroup_id; /* 0: not known */
	uint32_t tgid;
	uint32_t pid;
	uint32_t kind;
	uint32_t state;
	uint32_t ns_pid;
	uint32_t zero; /* always 0: fills what would be padding */
};

/* Writes a message and returns r. */
int store__error(struct store *s, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes "what: SQLite's message" and returns rc as -errno. Call before
 * anything else runs on the connection, which would replace the message. */
int store__fail(struct store *s, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* store.c */
void store__rollback(struct store *s);
int store__pragma_read(struct store *s, const char *sql, int64_t *ret);
int store__exec(struct store *s, const char *sql, const char *what);

/* store_schema.c */
int store__check(struct store *s, const char *path, int64_t *ret_version);
int store__migrate(struct store *s, int64_t version);
/* store_query.c: the windows a statement selects (the columns of
 * STMT_WINDOWS_SINCE), malloc'd into *ret; the statement is reset. */
int store__windows_collect(struct store *s, sqlite3_stmt *st, struct store_window **ret,
			   size_t *ret_n);
/* 0, or -EPROTO unless the database has the schema this build writes. */
int store__schema_current(struct store *s, const char *path);

/* store_write.c */
void store__intern_free(struct intern *c);
void store__forget(struct store *s);

/* store_gc.c */
int store__db_bytes(struct store *s, uint64_t *ret);
int store__evict_old(struct store *s, int64_t keep_id);
int store__shrink(struct store *s, int64_t keep_id);

/* The statement, reset and ready to bind. */
static inline sqlite3_stmt *stmt(struct store *s, enum stmt i)
{
	sqlite3_reset(s->stmts[i]);
	return s->stmts[i];
}

/* Runs a statement that returns no rows. */
static inline int store__stmt_exec(struct store *s, enum stmt i, const char *what)
{
	sqlite3_stmt *st = stmt(s, i);
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store__fail(s, rc, "%s", what);
	return 0;
}

/* The first column of a one-row statement. */
static inline int store__stmt_int(struct store *s, sqlite3_stmt *st, const char *what, int64_t *ret)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return store__fail(s, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "%s", what);
	return 0;
}

/* Reads one LEB128 varint; false if truncated or too long. */
static inline bool store__varint_next(const unsigned char **p, const unsigned char *end,
				      int64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 63; shift += 7) {
		unsigned char b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = (int64_t)v;
			return true;
		}
	}
	return false;
}

/* Writes v as a LEB128 varint at p (room for 10 bytes); returns its length. */
static inline size_t store__varint_put(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		p[n++] = (unsigned char)(v | 0x80);
	p[n++] = (unsigned char)v;
	return n;
}

/*
 * A histogram row's buckets (hist.buckets): (bucket, count) varint pairs,
 * buckets ascending; a count is a uint64. HIST_BLOB_MAX bytes at most.
 */
#define HIST_BLOB_MAX (STORE_HIST_BUCKETS * (1 + 10))

/* Appends the pair (bucket, count) to a histogram row's buckets at p (room
 * for 20 bytes); returns its length. */
static inline size_t store__hist_blob_put(unsigned char *p, uint64_t bucket, uint64_t count)
{
	size_t n = store__varint_put(p, bucket);

	return n + store__varint_put(p + n, count);
}

/* Reads one LEB128 varint of up to 64 bits (10 bytes); false if truncated
 * or too long. */
static inline bool store__uvarint_next(const unsigned char **p, const unsigned char *end,
				       uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift <= 63; shift += 7) {
		unsigned char b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

/* Decodes the next pair of a histogram row's buckets; false at the end, or
 * (*ret_corrupt set) where the blob is not such pairs. */
static inline bool store__hist_blob_next(const unsigned char **p, const unsigned char *end,
					 uint32_t *ret_bucket, uint64_t *ret_count,
					 bool *ret_corrupt)
{
	uint64_t bucket;

	*ret_corrupt = false;
	if (*p == end)
		return false;
	if (!store__uvarint_next(p, end, &bucket) || bucket >= STORE_HIST_BUCKETS ||
	    !store__uvarint_next(p, end, ret_count)) {
		*ret_corrupt = true;
		return false;
	}
	*ret_bucket = (uint32_t)bucket;
	return true;
}

static inline uint64_t add_saturated(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif
