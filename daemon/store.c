/*
 * store: see store.h. Schema version 2:
 *
 *   strings(id, name BLOB UNIQUE)     frame names and comms
 *   stacks(id, frames BLOB UNIQUE)    LEB128 varints of strings.id, root first;
 *                                     waker chains too (x'': no frames)
 *   series(id, tgid, pid, comm_id, kind, state, ustack_id, kstack_id,
 *          chain_id) UNIQUE
 *   windows(id, start_ms, end_ms, capture_id, n_stacks, n_samples, bytes)
 *   samples(window_id, series_id, sum_ns, count, bytes)
 *                                     WITHOUT ROWID, clustered by window
 *   hist(window_id, tgid, comm_id, type, bucket, count)
 *                                     WITHOUT ROWID, key (window_id, tgid,
 *                                     type, bucket)
 *
 * Version 1 had no chain_id and no hist; its series all get the empty chain.
 *
 * Everything but the values is interned, down to the series (a thread of a
 * kind in a state at a pair of stacks and a waker chain), which recurs from
 * window to window: a sample row is about 20 bytes, and merging windows
 * groups by one integer. Histogram rows are not interned (a handful of
 * small integers each) but are clustered by window like the samples.
 *
 * Strings are BLOBs so any byte but NUL survives without encoding rules.
 * There are no foreign keys: a window is deleted with its samples, and the
 * series, stacks and strings nothing refers to are collected in batches
 * (store__gc), because finding them means scanning every sample.
 */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "hashtab.h"

/* PRAGMA application_id: tells our file from someone else's database. */
#define STORE_APPLICATION_ID 0x4f435055 /* "OCPU" */

/* The interning caches are dropped and refilled rather than grown past this. */
#define INTERN_MAX_ENTRIES (1u << 20)
#define INTERN_MAX_BYTES   ((size_t)64 << 20)

/* Size eviction goes down to 7/8 of max_db_bytes, so the vacuum and the
 * checkpoint that shrink the file run once per many windows, not per add. */
#define EVICT_LOW_WATERMARK(max) ((max) - (max) / 8)

/* Windows evicted by age leave garbage strings and stacks; they are collected
 * once 1/8 of the windows have gone since the last collection, which keeps
 * the cost of the full scan per window bounded. */
#define GC_FRACTION 8

/* An estimate of SQLite's per-row overhead in a b-tree: the payload length
 * varint, the cell pointer and a little slack for interior pages. */
#define ROW_OVERHEAD_BYTES 4

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

static int migrate_to_1(sqlite3 *db)
{
	return sqlite3_exec(db, schema_v1, NULL, NULL, NULL);
}

/*
 * The chain joins the series' identity. SQLite cannot alter a UNIQUE
 * constraint, so series is rebuilt: a new table, the rows copied with their
 * ids (samples refer to them) and the empty chain, the old one dropped and
 * the new one renamed. Its only index is the constraint's own, which comes
 * with the new table. The empty stack is added only if some series needs it,
 * else store__gc would have to collect it.
 */
static const char migration_v2[] =
	"CREATE TABLE series_v2 (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	pid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	kind INTEGER NOT NULL,\n"
	"	state INTEGER NOT NULL,\n"
	"	ustack_id INTEGER NOT NULL,\n"
	"	kstack_id INTEGER NOT NULL,\n"
	"	chain_id INTEGER NOT NULL,\n"
	"	UNIQUE (tgid, pid, comm_id, kind, state, ustack_id, kstack_id, chain_id)\n"
	");\n"
	"INSERT INTO stacks (frames) SELECT x'' WHERE EXISTS (SELECT 1 FROM series) AND\n"
	"	NOT EXISTS (SELECT 1 FROM stacks WHERE frames = x'');\n"
	"INSERT INTO series_v2 (id, tgid, pid, comm_id, kind, state, ustack_id, kstack_id,\n"
	"	chain_id) SELECT id, tgid, pid, comm_id, kind, state, ustack_id, kstack_id,\n"
	"	(SELECT id FROM stacks WHERE frames = x'') FROM series ORDER BY id;\n"
	"DROP TABLE series;\n"
	"ALTER TABLE series_v2 RENAME TO series;\n"
	"CREATE TABLE hist (\n"
	"	window_id INTEGER NOT NULL,\n"
	"	tgid INTEGER NOT NULL,\n"
	"	comm_id INTEGER NOT NULL,\n"
	"	type INTEGER NOT NULL,\n"
	"	bucket INTEGER NOT NULL,\n"
	"	count INTEGER NOT NULL,\n"
	"	PRIMARY KEY (window_id, tgid, type, bucket)\n"
	") WITHOUT ROWID;\n";

static int migrate_to_2(sqlite3 *db)
{
	return sqlite3_exec(db, migration_v2, NULL, NULL, NULL);
}

/* I/O kinds count bytes too; older windows read back as 0 bytes. */
static int migrate_to_3(sqlite3 *db)
{
	return sqlite3_exec(db, "ALTER TABLE samples ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
			    NULL, NULL, NULL);
}

/* migrations[v] turns a version v database into version v + 1; the schema
 * version is the number of entries. Append only: never edit a shipped step. */
static int (*const migrations[])(sqlite3 *db) = {
	migrate_to_1,
	migrate_to_2,
	migrate_to_3,
};

#define STORE_SCHEMA_VERSION ((int64_t)(sizeof(migrations) / sizeof(migrations[0])))

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
	STMT_WINDOWS_SINCE,
	STMT_WINDOWS_ENDED_BEFORE,
	STMT_WINDOWS_OLDEST,
	STMT_WINDOWS_STATS,
	STMT_WINDOWS_IN_RANGE,
	STMT_WINDOWS_OF_CAPTURE,
	STMT_SERIES_FIND,
	STMT_SERIES_INSERT,
	STMT_SERIES_DELETE,
	STMT_SERIES_ALL,
	STMT_SAMPLE_INSERT,
	STMT_SAMPLES_REFS,
	STMT_HIST_INSERT,
	STMT_HIST_REFS,
	STMT_PAGE_COUNT,
	STMT_FREELIST_COUNT,
	STMT_COUNT,
};

static const char *const stmt_sql[STMT_COUNT] = {
	[STMT_BEGIN] = "BEGIN IMMEDIATE",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
	[STMT_STRING_FIND] = "SELECT id FROM strings WHERE name = ?1",
	[STMT_STRING_INSERT] = "INSERT INTO strings (name) VALUES (?1)",
	[STMT_STRING_GET] = "SELECT name FROM strings WHERE id = ?1",
	[STMT_STRING_DELETE] = "DELETE FROM strings WHERE id = ?1",
	[STMT_STRINGS_ALL] = "SELECT id FROM strings",
	[STMT_STACK_FIND] = "SELECT id FROM stacks WHERE frames = ?1",
	[STMT_STACK_INSERT] = "INSERT INTO stacks (frames) VALUES (?1)",
	[STMT_STACK_GET] = "SELECT frames FROM stacks WHERE id = ?1",
	[STMT_STACK_DELETE] = "DELETE FROM stacks WHERE id = ?1",
	[STMT_STACKS_ALL] = "SELECT id, frames FROM stacks",
	[STMT_WINDOW_INSERT] = "INSERT INTO windows (start_ms, end_ms, capture_id, n_stacks, "
			       "n_samples, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[STMT_WINDOW_DELETE] = "DELETE FROM windows WHERE id = ?1",
	[STMT_WINDOW_SAMPLES_DELETE] = "DELETE FROM samples WHERE window_id = ?1",
	[STMT_WINDOW_HIST_DELETE] = "DELETE FROM hist WHERE window_id = ?1",
	[STMT_WINDOWS_SINCE] = "SELECT id, start_ms, end_ms, capture_id, n_stacks, n_samples, "
			       "bytes FROM windows WHERE start_ms >= ?1 ORDER BY start_ms, id",
	[STMT_WINDOWS_ENDED_BEFORE] = "SELECT id FROM windows WHERE end_ms < ?1 AND id != ?2",
	[STMT_WINDOWS_OLDEST] = "SELECT id FROM windows WHERE id != ?1 ORDER BY start_ms, id",
	[STMT_WINDOWS_STATS] = "SELECT count(*), min(start_ms), max(end_ms) FROM windows",
	[STMT_WINDOWS_IN_RANGE] = "SELECT count(*) FROM windows WHERE capture_id = 0 AND "
				  "start_ms >= ?1 AND start_ms < ?2",
	[STMT_WINDOWS_OF_CAPTURE] = "SELECT count(*) FROM windows WHERE capture_id = ?1",
	[STMT_SERIES_FIND] = "SELECT id FROM series WHERE tgid = ?1 AND pid = ?2 AND comm_id = ?3 "
			     "AND kind = ?4 AND state = ?5 AND ustack_id = ?6 AND kstack_id = ?7 "
			     "AND chain_id = ?8",
	[STMT_SERIES_INSERT] = "INSERT INTO series (tgid, pid, comm_id, kind, state, ustack_id, "
			       "kstack_id, chain_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[STMT_SERIES_DELETE] = "DELETE FROM series WHERE id = ?1",
	[STMT_SERIES_ALL] = "SELECT id, comm_id, ustack_id, kstack_id, chain_id FROM series",
	[STMT_SAMPLE_INSERT] = "INSERT INTO samples (window_id, series_id, sum_ns, count, bytes) "
			       "VALUES (?1, ?2, ?3, ?4, ?5)",
	[STMT_SAMPLES_REFS] = "SELECT series_id FROM samples",
	[STMT_HIST_INSERT] = "INSERT INTO hist (window_id, tgid, comm_id, type, bucket, count) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[STMT_HIST_REFS] = "SELECT comm_id FROM hist",
	[STMT_PAGE_COUNT] = "PRAGMA page_count",
	[STMT_FREELIST_COUNT] = "PRAGMA freelist_count",
};

struct intern_entry {
	int64_t id;
	size_t off; /* of the content in the arena */
	size_t len;
};

/* Content -> row id, so recurring frames and stacks cost no SQL. Keyed by a
 * 64-bit hash; the content is kept to tell a collision from a hit. */
struct intern {
	struct hashtab *map; /* hash -> struct intern_entry; NULL: off after ENOMEM */
	char *arena;
	size_t used;
	size_t cap;
};

struct store {
	sqlite3 *db;
	sqlite3_stmt *stmts[STMT_COUNT];
	struct store_limits limits;
	int64_t page_size;
	uint64_t evicted_since_gc; /* windows, see GC_FRACTION */
	struct intern strings;	   /* frame name or comm -> strings.id */
	struct intern stacks;	   /* ';'-joined stack or chain -> stacks.id */
	struct hashtab *series;	   /* struct series_key -> series.id; NULL: off */
	unsigned char *frames;	   /* scratch: a stack's varint encoding */
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
	uint32_t tgid;
	uint32_t pid;
	uint32_t kind;
	uint32_t state;
};

struct sample_sum {
	uint64_t sum_ns;
	uint64_t count;
	uint64_t bytes;
};

/* A window's row before insertion: the samples of one series merged. */
struct merged_row {
	int64_t series_id;
	struct sample_sum sum;
};

/* What a window counts as one stack (n_stacks). No padding: a hashtab key. */
struct stack_triple {
	int64_t ustack_id;
	int64_t kstack_id;
	int64_t chain_id;
};

/* A histogram row's key within its window. No padding: a hashtab key. */
struct hist_key {
	uint32_t tgid;
	uint32_t type;
	uint32_t bucket;
};

struct hist_value {
	int64_t comm_id;
	uint64_t count;
};

/* A window's histogram row before insertion: the buckets of one key merged. */
struct hist_row {
	struct hist_key key;
	struct hist_value value;
};

/* Writes a message and returns r. */
static int store__error(struct store *s, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int store__error(struct store *s, int r, const char *fmt, ...)
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

/* Writes "what: SQLite's message" and returns rc as -errno. Call before
 * anything else runs on the connection, which would replace the message. */
static int store__fail(struct store *s, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int store__fail(struct store *s, int rc, const char *fmt, ...)
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

/* FNV-1a, then a final mix; collisions are checked by the callers. */
static uint64_t hash64(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static void intern_reset(struct intern *c)
{
	hashtab_free(c->map);
	c->used = 0;
	if (hashtab_new(sizeof(uint64_t), sizeof(struct intern_entry), &c->map) < 0)
		c->map = NULL;
}

static void intern_free(struct intern *c)
{
	hashtab_free(c->map);
	free(c->arena);
}

/* 1 with *ret_id: cached. 0: not cached. -1: another content has this hash;
 * such content is looked up in SQL every time and never cached. */
static int intern_find(const struct intern *c, uint64_t hash, const char *p, size_t n,
		       int64_t *ret_id)
{
	const struct intern_entry *e;

	if (!c->map)
		return 0;
	e = hashtab_get(c->map, &hash);
	if (!e)
		return 0;
	if (e->len != n || (n && memcmp(c->arena + e->off, p, n)))
		return -1;
	*ret_id = e->id;
	return 1;
}

/* Best effort: on ENOMEM the content is simply not cached. */
static void intern_add(struct intern *c, uint64_t hash, const char *p, size_t n, int64_t id)
{
	struct intern_entry *e;
	bool created;

	if (n > INTERN_MAX_BYTES)
		return;
	if (!c->map || hashtab_count(c->map) >= INTERN_MAX_ENTRIES ||
	    c->used + n > INTERN_MAX_BYTES)
		intern_reset(c);
	if (!c->map)
		return;
	if (c->used + n > c->cap) {
		size_t cap = c->cap ? c->cap : 65536;
		char *arena;

		while (cap < c->used + n)
			cap *= 2;
		arena = realloc(c->arena, cap);
		if (!arena)
			return;
		c->arena = arena;
		c->cap = cap;
	}
	e = hashtab_put(c->map, &hash, &created);
	if (!e || !created)
		return;
	if (n)
		memcpy(c->arena + c->used, p, n);
	e->id = id;
	e->off = c->used;
	e->len = n;
	c->used += n;
}

static void store__forget(struct store *s)
{
	intern_reset(&s->strings);
	intern_reset(&s->stacks);
	hashtab_free(s->series);
	if (hashtab_new(sizeof(struct series_key), sizeof(int64_t), &s->series) < 0)
		s->series = NULL;
}

/* The statement, reset and ready to bind. */
static sqlite3_stmt *stmt(struct store *s, enum stmt i)
{
	sqlite3_reset(s->stmts[i]);
	return s->stmts[i];
}

/* Runs a statement that returns no rows. */
static int stmt_exec(struct store *s, enum stmt i, const char *what)
{
	sqlite3_stmt *st = stmt(s, i);
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store__fail(s, rc, "%s", what);
	return 0;
}

/* The first column of a one-row statement. */
static int stmt_int(struct store *s, sqlite3_stmt *st, const char *what, int64_t *ret)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return store__fail(s, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "%s", what);
	return 0;
}

static void store__rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db)) {
		sqlite3_stmt *st = stmt(s, STMT_ROLLBACK);

		sqlite3_step(st);
		sqlite3_reset(st);
	}
	/* The caches may name rows that are gone now. */
	store__forget(s);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Bytes an integer takes in a record (SQLite's serial types). */
static size_t int_bytes(int64_t v)
{
	if (v == 0 || v == 1)
		return 0;
	if (v >= -128 && v <= 127)
		return 1;
	if (v >= -32768 && v <= 32767)
		return 2;
	if (v >= -8388608 && v <= 8388607)
		return 3;
	if (v >= INT32_MIN && v <= INT32_MAX)
		return 4;
	if (v >= -(1LL << 47) && v < (1LL << 47))
		return 6;
	return 8;
}

static size_t sample_row_bytes(const struct merged_row *m)
{
	/* A header byte per column plus its length; window_id taken as 3 bytes. */
	return 5 + 3 + int_bytes(m->series_id) + int_bytes((int64_t)m->sum.sum_ns) +
	       int_bytes((int64_t)m->sum.count) + int_bytes((int64_t)m->sum.bytes) +
	       ROW_OVERHEAD_BYTES;
}

/* Id of the blob p[0..n) in a table whose blob column is UNIQUE, inserted if
 * absent; a new row's bytes (row and index entry) are added to *bytes. */
static int db_intern(struct store *s, enum stmt find, enum stmt insert, const char *what,
		     const void *p, size_t n, int64_t *ret_id, uint64_t *bytes)
{
	sqlite3_stmt *st = stmt(s, find);
	int rc;

	/* A non-NULL pointer binds an empty blob, not NULL. */
	rc = sqlite3_bind_blob64(st, 1, n ? p : "", n, SQLITE_STATIC);
	if (rc != SQLITE_OK)
		return store__fail(s, rc, "cannot look up a %s of %zu bytes", what, n);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc != SQLITE_DONE)
		return store__fail(s, rc, "cannot look up a %s", what);
	st = stmt(s, insert);
	rc = sqlite3_bind_blob64(st, 1, n ? p : "", n, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store__fail(s, rc, "cannot store a %s of %zu bytes", what, n);
	*ret_id = sqlite3_last_insert_rowid(s->db);
	*bytes += 2 * (n + 8 + ROW_OVERHEAD_BYTES);
	return 0;
}

static int string_id(struct store *s, const char *p, size_t n, int64_t *ret_id, uint64_t *bytes)
{
	uint64_t hash = hash64(p, n);
	int cached = intern_find(&s->strings, hash, p, n, ret_id);
	int r;

	if (cached > 0)
		return 0;
	r = db_intern(s, STMT_STRING_FIND, STMT_STRING_INSERT, "string", p, n, ret_id, bytes);
	if (r < 0)
		return r;
	if (!cached)
		intern_add(&s->strings, hash, p, n, *ret_id);
	return 0;
}

static int frames_reserve(struct store *s, size_t n)
{
	unsigned char *p;
	size_t cap;

	if (n <= s->frames_cap)
		return 0;
	cap = s->frames_cap ? s->frames_cap * 2 : 1024;
	while (cap < n)
		cap *= 2;
	p = realloc(s->frames, cap);
	if (!p)
		return store__error(s, -ENOMEM, "out of memory");
	s->frames = p;
	s->frames_cap = cap;
	return 0;
}

/* Id of a ';'-joined stack. "" is the stack of no frames; every other string,
 * ";" and "a;" included, splits into frames that join back to it exactly. */
static int stack_id(struct store *s, const char *str, int64_t *ret_id, uint64_t *bytes)
{
	size_t n = strlen(str), len = 0;
	uint64_t hash = hash64(str, n);
	int cached = intern_find(&s->stacks, hash, str, n, ret_id);
	const char *p = str, *end = str + n;
	int r;

	if (cached > 0)
		return 0;
	while (n) {
		const char *semi = memchr(p, ';', end - p);
		size_t frame_len = (semi ? semi : end) - p;
		uint64_t id;
		int64_t fid;

		r = string_id(s, p, frame_len, &fid, bytes);
		if (r < 0)
			return r;
		r = frames_reserve(s, len + 10);
		if (r < 0)
			return r;
		for (id = (uint64_t)fid; id >= 0x80; id >>= 7)
			s->frames[len++] = (unsigned char)(id | 0x80);
		s->frames[len++] = (unsigned char)id;
		if (!semi)
			break;
		p = semi + 1;
	}
	r = db_intern(s, STMT_STACK_FIND, STMT_STACK_INSERT, "stack", s->frames, len, ret_id,
		      bytes);
	if (r < 0)
		return r;
	if (!cached)
		intern_add(&s->stacks, hash, str, n, *ret_id);
	return 0;
}

/* Reads one LEB128 varint; false if truncated or too long. */
static bool varint_next(const unsigned char **p, const unsigned char *end, int64_t *ret)
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

static uint64_t add_saturated(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void series_bind(sqlite3_stmt *st, const struct series_key *key)
{
	sqlite3_bind_int64(st, 1, key->tgid);
	sqlite3_bind_int64(st, 2, key->pid);
	sqlite3_bind_int64(st, 3, key->comm_id);
	sqlite3_bind_int64(st, 4, key->kind);
	sqlite3_bind_int64(st, 5, key->state);
	sqlite3_bind_int64(st, 6, key->ustack_id);
	sqlite3_bind_int64(st, 7, key->kstack_id);
	sqlite3_bind_int64(st, 8, key->chain_id);
}

/* Id of a series, inserted if absent. */
static int series_id(struct store *s, const struct series_key *key, int64_t *ret_id,
		     uint64_t *bytes)
{
	const int64_t *cached = s->series ? hashtab_get(s->series, key) : NULL;
	sqlite3_stmt *st;
	int64_t *slot;
	int rc;

	if (cached) {
		*ret_id = *cached;
		return 0;
	}
	st = stmt(s, STMT_SERIES_FIND);
	series_bind(st, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE) {
		st = stmt(s, STMT_SERIES_INSERT);
		series_bind(st, key);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		*ret_id = sqlite3_last_insert_rowid(s->db);
		/* The row and its UNIQUE index entry. */
		*bytes += 2 * (8 + 18 + ROW_OVERHEAD_BYTES);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store__fail(s, rc, "cannot store a series");

	/* Cached best effort, like intern_add(). */
	if (s->series && hashtab_count(s->series) >= INTERN_MAX_ENTRIES) {
		hashtab_free(s->series);
		if (hashtab_new(sizeof(struct series_key), sizeof(int64_t), &s->series) < 0)
			s->series = NULL;
	}
	slot = s->series ? hashtab_put(s->series, key, NULL) : NULL;
	if (slot)
		*slot = *ret_id;
	return 0;
}

static int merged_row_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct merged_row *)a)->series_id;
	int64_t y = ((const struct merged_row *)b)->series_id;

	return x < y ? -1 : x > y;
}

/* Merges the samples into rows by series. */
static int window_merge(struct store *s, const struct store_sample *samples, size_t n_samples,
			struct hashtab *rows, struct hashtab *triples, uint64_t *bytes)
{
	for (size_t i = 0; i < n_samples; i++) {
		const struct store_sample *in = &samples[i];
		const char *comm = in->comm ? in->comm : "";
		struct stack_triple triple;
		struct series_key key;
		struct sample_sum *sum;
		int64_t id;
		int r;

		memset(&key, 0, sizeof(key));
		r = string_id(s, comm, strlen(comm), &key.comm_id, bytes);
		if (r >= 0)
			r = stack_id(s, in->ustack ? in->ustack : "", &key.ustack_id, bytes);
		if (r >= 0)
			r = stack_id(s, in->kstack ? in->kstack : "", &key.kstack_id, bytes);
		if (r >= 0)
			r = stack_id(s, in->chain ? in->chain : "", &key.chain_id, bytes);
		key.tgid = in->tgid;
		key.pid = in->pid;
		key.kind = in->kind;
		key.state = in->state;
		if (r >= 0)
			r = series_id(s, &key, &id, bytes);
		if (r < 0)
			return r;
		sum = hashtab_put(rows, &id, NULL);
		triple = (struct stack_triple){ key.ustack_id, key.kstack_id, key.chain_id };
		if (!sum || !hashtab_put(triples, &triple, NULL))
			return store__error(s, -ENOMEM, "out of memory");
		sum->sum_ns = add_saturated(sum->sum_ns, in->sum_ns);
		sum->count = add_saturated(sum->count, in->count);
		sum->bytes = add_saturated(sum->bytes, in->bytes);
	}
	return 0;
}

/* -EINVAL for a bucket no histogram has; checked before anything is written. */
static int hists_check(struct store *s, const struct store_hist *hists, size_t n_hists)
{
	if (n_hists && !hists)
		return store__error(s, -EINVAL, "%zu histogram buckets but no array", n_hists);
	for (size_t i = 0; i < n_hists; i++) {
		if (hists[i].type > 1)
			return store__error(s, -EINVAL, "histogram type %u; 0 or 1 expected",
					    hists[i].type);
		if (hists[i].bucket >= STORE_HIST_BUCKETS)
			return store__error(s, -EINVAL, "histogram bucket %u; at most %d",
					    hists[i].bucket, STORE_HIST_BUCKETS - 1);
	}
	return 0;
}

/* Merges the histogram buckets by key; the first comm of a key stays. */
static int hists_merge(struct store *s, const struct store_hist *hists, size_t n_hists,
		       struct hashtab *merged, uint64_t *bytes)
{
	for (size_t i = 0; i < n_hists; i++) {
		const struct store_hist *in = &hists[i];
		const char *comm = in->comm ? in->comm : "";
		struct hist_key key = { in->tgid, in->type, in->bucket };
		struct hist_value *value;
		bool created;
		int r;

		value = hashtab_put(merged, &key, &created);
		if (!value)
			return store__error(s, -ENOMEM, "out of memory");
		if (created) {
			r = string_id(s, comm, strlen(comm), &value->comm_id, bytes);
			if (r < 0)
				return r;
		}
		value->count = add_saturated(value->count, in->count);
	}
	return 0;
}

static int hist_row_cmp(const void *a, const void *b)
{
	const struct hist_key *x = &((const struct hist_row *)a)->key;
	const struct hist_key *y = &((const struct hist_row *)b)->key;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

static size_t hist_row_bytes(const struct hist_row *h)
{
	/* A header byte per column plus its length; window_id taken as 3 bytes. */
	return 7 + 3 + int_bytes(h->key.tgid) + int_bytes(h->value.comm_id) +
	       int_bytes(h->key.type) + int_bytes(h->key.bucket) +
	       int_bytes((int64_t)h->value.count) + ROW_OVERHEAD_BYTES;
}

/* The merged histogram rows, sorted by key; *ret is malloc'd, NULL if none. */
static int hists_sort(struct store *s, struct hashtab *merged, struct hist_row **ret,
		      uint64_t *bytes)
{
	size_t n = hashtab_count(merged), i = 0, pos = 0;
	const struct hist_key *key;
	struct hist_value *value;
	struct hist_row *sorted;

	*ret = NULL;
	if (!n)
		return 0;
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return store__error(s, -ENOMEM, "out of memory");
	while (hashtab_next(merged, &pos, (const void **)&key, (void **)&value)) {
		sorted[i].key = *key;
		sorted[i].value = *value;
		*bytes += hist_row_bytes(&sorted[i]);
		i++;
	}
	/* In primary key order, so the window fills whole pages. */
	qsort(sorted, n, sizeof(*sorted), hist_row_cmp);
	*ret = sorted;
	return 0;
}

static int hists_insert(struct store *s, int64_t window_id, const struct hist_row *sorted, size_t n)
{
	sqlite3_stmt *st = s->stmts[STMT_HIST_INSERT];
	int rc;

	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, window_id);
		sqlite3_bind_int64(st, 2, sorted[i].key.tgid);
		sqlite3_bind_int64(st, 3, sorted[i].value.comm_id);
		sqlite3_bind_int64(st, 4, sorted[i].key.type);
		sqlite3_bind_int64(st, 5, sorted[i].key.bucket);
		/* uint64 kept as its int64 bit pattern; usum() reads it back. */
		sqlite3_bind_int64(st, 6, (int64_t)sorted[i].value.count);
		rc = sqlite3_step(st);
		if (rc != SQLITE_DONE) {
			int r = store__fail(s, rc, "cannot store a histogram");

			sqlite3_reset(st);
			return r;
		}
	}
	sqlite3_reset(st);
	return 0;
}

/* Inserts the window, its samples and its histogram rows. */
static int window_insert(struct store *s, struct store_window *w, struct hashtab *rows,
			 struct hashtab *triples, struct hashtab *hists, uint64_t bytes)
{
	size_t n = hashtab_count(rows), i = 0, pos = 0;
	struct merged_row *sorted = NULL;
	struct hist_row *hist_sorted = NULL;
	const int64_t *series;
	struct sample_sum *sum;
	sqlite3_stmt *st;
	int64_t id;
	int rc, r = 0;

	if (n) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			return store__error(s, -ENOMEM, "out of memory");
	}
	while (hashtab_next(rows, &pos, (const void **)&series, (void **)&sum)) {
		sorted[i].series_id = *series;
		sorted[i].sum = *sum;
		bytes += sample_row_bytes(&sorted[i]);
		i++;
	}
	/* In primary key order, so the window fills whole pages. */
	if (n)
		qsort(sorted, n, sizeof(*sorted), merged_row_cmp);
	r = hists_sort(s, hists, &hist_sorted, &bytes);
	if (r < 0)
		goto out;
	bytes += 32; /* the windows row */

	st = stmt(s, STMT_WINDOW_INSERT);
	sqlite3_bind_int64(st, 1, w->start_ms);
	sqlite3_bind_int64(st, 2, w->end_ms);
	sqlite3_bind_int64(st, 3, (int64_t)w->capture_id);
	sqlite3_bind_int64(st, 4, (int64_t)hashtab_count(triples));
	sqlite3_bind_int64(st, 5, (int64_t)n);
	sqlite3_bind_int64(st, 6, (int64_t)bytes);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		r = store__fail(s, rc, "cannot store a window");
		goto out;
	}
	id = sqlite3_last_insert_rowid(s->db);

	st = s->stmts[STMT_SAMPLE_INSERT];
	for (i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, sorted[i].series_id);
		/* uint64 kept as its int64 bit pattern; usum() reads it back. */
		sqlite3_bind_int64(st, 3, (int64_t)sorted[i].sum.sum_ns);
		sqlite3_bind_int64(st, 4, (int64_t)sorted[i].sum.count);
		sqlite3_bind_int64(st, 5, (int64_t)sorted[i].sum.bytes);
		rc = sqlite3_step(st);
		if (rc != SQLITE_DONE) {
			r = store__fail(s, rc, "cannot store a sample");
			sqlite3_reset(st);
			goto out;
		}
	}
	sqlite3_reset(st);
	r = hists_insert(s, id, hist_sorted, hashtab_count(hists));
	if (r < 0)
		goto out;
	w->id = (uint64_t)id;
	w->n_stacks = hashtab_count(triples);
	w->n_samples = n;
	w->bytes = bytes;
out:
	free(sorted);
	free(hist_sorted);
	return r;
}

/* Deletes one window, its samples and its histograms, inside the caller's
 * transaction. */
static int store__evict(struct store *s, int64_t id)
{
	sqlite3_stmt *st = stmt(s, STMT_WINDOW_SAMPLES_DELETE);
	int rc;

	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE) {
		st = stmt(s, STMT_WINDOW_HIST_DELETE);
		sqlite3_bind_int64(st, 1, id);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
	}
	if (rc == SQLITE_DONE) {
		st = stmt(s, STMT_WINDOW_DELETE);
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
 * to, then the strings none of series, stacks and hist refers to, inside the
 * caller's transaction: one scan of each table. Each scan only collects ids,
 * as deleting from a table while it is being scanned is not safe.
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
		while (r >= 0 && p && p < end && varint_next(&p, end, &frame))
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
	return stmt_int(s, stmt(s, i), "cannot read the database size", ret);
}

/* page_count * page_size plus the WAL file, as documented for db_bytes. */
static int store__db_bytes(struct store *s, uint64_t *ret)
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

static int store__evict_old(struct store *s, int64_t keep_id)
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
	r = stmt_exec(s, STMT_BEGIN, "cannot begin a transaction");
	for (size_t i = 0; r >= 0 && i < ids.n; i++)
		r = store__evict(s, ids.v[i]);
	if (r >= 0) {
		s->evicted_since_gc += ids.n;
		r = stmt_int(s, stmt(s, STMT_WINDOWS_STATS), "cannot count windows", &windows);
	}
	if (r >= 0 && s->evicted_since_gc * GC_FRACTION >= (uint64_t)windows)
		r = store__gc(s);
	if (r >= 0)
		r = stmt_exec(s, STMT_COMMIT, "cannot commit");
	if (r < 0)
		store__rollback(s);
out:
	free(ids.v);
	return r;
}

/* Brings page_count * page_size + WAL back under max_db_bytes: evicts the
 * oldest windows until the pages in use fit the low watermark, then vacuums
 * and truncates the WAL so the file itself shrinks. */
static int store__shrink(struct store *s, int64_t keep_id)
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
			r = stmt_exec(s, STMT_BEGIN, "cannot begin a transaction");
		for (size_t i = 0; r >= 0 && i < ids.n && used > EVICT_LOW_WATERMARK(max); i++) {
			r = store__evict(s, ids.v[i]);
			if (r >= 0)
				r = store__used_bytes(s, &used);
		}
		if (r >= 0)
			r = store__gc(s);
		if (r >= 0)
			r = stmt_exec(s, STMT_COMMIT, "cannot commit");
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

int store_window_add(struct store *s, struct store_window *w, const struct store_sample *samples,
		     size_t n_samples, const struct store_hist *hists, size_t n_hists, char *err,
		     size_t err_size)
{
	struct hashtab *rows = NULL, *triples = NULL, *merged_hists = NULL;
	uint64_t bytes = 0;
	int r;

	assert(s && w);
	s->err = err;
	s->err_size = err_size;
	if (n_samples && !samples)
		return store__error(s, -EINVAL, "%zu samples but no array", n_samples);
	if (w->end_ms < w->start_ms)
		return store__error(s, -EINVAL, "window ends (%lld) before it starts (%lld)",
				    (long long)w->end_ms, (long long)w->start_ms);
	r = hists_check(s, hists, n_hists);
	if (r < 0)
		return r;
	if (hashtab_new(sizeof(int64_t), sizeof(struct sample_sum), &rows) < 0 ||
	    hashtab_new(sizeof(struct stack_triple), 1, &triples) < 0 ||
	    hashtab_new(sizeof(struct hist_key), sizeof(struct hist_value), &merged_hists) < 0) {
		r = store__error(s, -ENOMEM, "out of memory");
		goto out;
	}
	r = stmt_exec(s, STMT_BEGIN, "cannot begin a transaction");
	if (r < 0)
		goto out;
	r = window_merge(s, samples, n_samples, rows, triples, &bytes);
	if (r >= 0)
		r = hists_merge(s, hists, n_hists, merged_hists, &bytes);
	if (r >= 0)
		r = window_insert(s, w, rows, triples, merged_hists, bytes);
	if (r >= 0)
		r = stmt_exec(s, STMT_COMMIT, "cannot commit the window");
	if (r < 0) {
		store__rollback(s);
		goto out;
	}
	/* The window is stored; retention failing now does not undo that, and
	 * it is tried again after the next add. */
	s->err = NULL;
	if (s->limits.max_age_ms)
		store__evict_old(s, (int64_t)w->id);
	if (s->limits.max_db_bytes)
		store__shrink(s, (int64_t)w->id);
	r = 0;
out:
	hashtab_free(rows);
	hashtab_free(triples);
	hashtab_free(merged_hists);
	return r;
}

static void window_from_row(sqlite3_stmt *st, struct store_window *w)
{
	w->id = (uint64_t)sqlite3_column_int64(st, 0);
	w->start_ms = sqlite3_column_int64(st, 1);
	w->end_ms = sqlite3_column_int64(st, 2);
	w->capture_id = (uint64_t)sqlite3_column_int64(st, 3);
	w->n_stacks = (uint64_t)sqlite3_column_int64(st, 4);
	w->n_samples = (uint64_t)sqlite3_column_int64(st, 5);
	w->bytes = (uint64_t)sqlite3_column_int64(st, 6);
}

int store_windows_list(struct store *s, int64_t since_ms, struct store_window **ret, size_t *ret_n,
		       char *err, size_t err_size)
{
	struct store_window *list = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int rc;

	assert(s && ret && ret_n);
	s->err = err;
	s->err_size = err_size;
	st = stmt(s, STMT_WINDOWS_SINCE);
	sqlite3_bind_int64(st, 1, since_ms);
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
	if (rc != SQLITE_DONE) {
		int r = store__fail(s, rc, "cannot list windows");

		sqlite3_reset(st);
		free(list);
		return r;
	}
	sqlite3_reset(st);
	*ret = list;
	*ret_n = n;
	return 0;
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

		if (!varint_next(&p, end, &frame_id)) {
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
	if (q->capture_id)
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
	if (q->capture_id) {
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
	       "se.kstack_id, se.chain_id, g.sum_ns, g.count, g.bytes FROM (SELECT sa.series_id, "
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
 * The histogram query for q and type, bound and ready to step. One pass
 * over the buckets, grouped by (tgid, bucket): with min() the only min or
 * max aggregate, SQLite takes the bare comm_id from the row of the newest
 * window (age 1 is the newest in range; a window has at most one row per
 * group, so there is no tie). first_value() then gives each tgid the comm
 * of its group with the newest window, the lowest bucket on a tie. Finding
 * the comm costs no second scan, nor a sort of every row.
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
	       "), g AS (SELECT h.tgid, h.bucket, usum(h.count) AS count, min(r.age) AS age, "
	       "h.comm_id FROM r JOIN hist h ON h.window_id = r.id WHERE h.type = ?7");
	if (q->comm && q->comm[0])
		APPEND(&sql, r, " AND h.comm_id = (SELECT id FROM strings WHERE name = ?5)");
	query_append_pids(&sql, &r, q, "h.tgid");
	APPEND(&sql, r,
	       " GROUP BY h.tgid, h.bucket) SELECT tgid, bucket, count, first_value(comm_id) "
	       "OVER (PARTITION BY tgid ORDER BY age, bucket) FROM g ORDER BY tgid, bucket");
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
	if (q->capture_id) {
		st = stmt(s, STMT_WINDOWS_OF_CAPTURE);
		sqlite3_bind_int64(st, 1, (int64_t)q->capture_id);
	} else {
		st = stmt(s, STMT_WINDOWS_IN_RANGE);
		sqlite3_bind_int64(st, 1, q->from_ms);
		sqlite3_bind_int64(st, 2, q->to_ms);
	}
	return stmt_int(s, st, "cannot count windows", ret);
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
		};
		struct span comm, ustack, kstack, chain;

		r = query_string(s, &qc, sqlite3_column_int64(st, 2), &comm);
		if (r >= 0)
			r = query_stack(s, &qc, sqlite3_column_int64(st, 5), &ustack);
		if (r >= 0)
			r = query_stack(s, &qc, sqlite3_column_int64(st, 6), &kstack);
		if (r >= 0)
			r = query_stack(s, &qc, sqlite3_column_int64(st, 7), &chain);
		if (r < 0)
			goto out;
		/* Pointers only now: the lookups above may move the buffers. */
		sample.comm = qc.names.p + comm.off;
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

int store_hist_query(struct store *s, const struct store_query *q, uint32_t type,
		     int (*row)(void *arg, const struct store_hist *h), void *arg,
		     uint64_t *ret_windows, char *err, size_t err_size)
{
	struct query_cache qc = { 0 };
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
		struct store_hist h = {
			.tgid = (uint32_t)sqlite3_column_int64(st, 0),
			.type = type,
			.bucket = (uint32_t)sqlite3_column_int64(st, 1),
			.count = (uint64_t)sqlite3_column_int64(st, 2),
		};
		struct span comm;

		r = query_string(s, &qc, sqlite3_column_int64(st, 3), &comm);
		if (r < 0)
			goto out;
		h.comm = qc.names.p + comm.off;
		r = row(arg, &h);
		if (r)
			goto out;
	}
	if (rc != SQLITE_DONE) {
		r = store__fail(s, rc, "histogram query failed");
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
	r = store__db_bytes(s, &ret->db_bytes);
	return r < 0 ? r : 0;
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

static int pragma_read(struct store *s, const char *sql, int64_t *ret)
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

static int exec_sql(struct store *s, const char *sql, const char *what)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return store__fail(s, rc, "%s", what);
	return 0;
}

/* Reads without writing: a file that is not ours stays as it was. */
static int store__check(struct store *s, const char *path, int64_t *ret_version)
{
	sqlite3_stmt *st;
	int64_t version = 0, app_id, tables;
	char problem[256] = "";
	int rc, r;

	rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			version = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_ROW)
		return store__fail(s, rc, "'%s' is not a usable SQLite database", path);
	r = pragma_read(s, "PRAGMA application_id", &app_id);
	if (r >= 0)
		r = pragma_read(s, "SELECT count(*) FROM sqlite_schema", &tables);
	if (r < 0)
		return r;

	if (tables) {
		rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW)
				snprintf(problem, sizeof(problem), "%s",
					 (const char *)sqlite3_column_text(st, 0));
			sqlite3_finalize(st);
		}
		if (rc != SQLITE_ROW)
			return store__fail(s, rc, "'%s' failed its integrity check", path);
		/* One line: the check's report spans several. */
		for (char *p = problem; *p; p++)
			if (*p == '\n')
				*p = ' ';
		if (strcmp(problem, "ok"))
			return store__error(s, -EIO, "'%s' failed its integrity check: %s", path,
					    problem);
	}
	if (tables && (version == 0 || app_id != STORE_APPLICATION_ID))
		return store__error(s, -EPROTO, "'%s' is a database of another program", path);
	if (version > STORE_SCHEMA_VERSION)
		return store__error(s, -EPROTO,
				    "'%s' has schema version %lld; this offcpud knows up to %lld",
				    path, (long long)version, (long long)STORE_SCHEMA_VERSION);
	*ret_version = version;
	return 0;
}

static int store__migrate(struct store *s, int64_t version)
{
	char sql[128];
	int rc, r;

	if (version == STORE_SCHEMA_VERSION)
		return 0;
	r = exec_sql(s, "BEGIN IMMEDIATE", "cannot begin the migration");
	if (r < 0)
		return r;
	for (int64_t v = version; v < STORE_SCHEMA_VERSION; v++) {
		rc = migrations[v](s->db);
		if (rc != SQLITE_OK) {
			r = store__fail(s, rc, "cannot migrate the schema from version %lld",
					(long long)v);
			goto fail;
		}
	}
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %lld",
		 STORE_APPLICATION_ID, (long long)STORE_SCHEMA_VERSION);
	r = exec_sql(s, sql, "cannot set the schema version");
	if (r >= 0)
		r = exec_sql(s, "COMMIT", "cannot commit the migration");
	if (r >= 0)
		return 0;
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
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
	return exec_sql(s, sql, "cannot limit the WAL");
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
	s = calloc(1, sizeof(*s));
	if (!s) {
		if (err && err_size)
			snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	s->err = err;
	s->err_size = err_size;
	if (limits)
		s->limits = *limits;
	/* NOMUTEX: one thread at a time uses the store (see store.h). */
	rc = sqlite3_open_v2(path, &s->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			     NULL);
	if (rc != SQLITE_OK) {
		r = store__fail(s, rc, "cannot open '%s'", path);
		goto fail;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, 1000);

	r = store__check(s, path, &version);
	if (r < 0)
		goto fail;

	r = exec_sql(s,
		     "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -8192; "
		     "PRAGMA temp_store = MEMORY",
		     "cannot configure the connection");
	/* Takes effect at once only before the file has its first page (the
	 * switch to WAL writes one); an empty file someone else made needs the
	 * VACUUM. Version 0 has no tables (store__check). */
	if (r >= 0 && version == 0)
		r = exec_sql(s, "PRAGMA auto_vacuum = INCREMENTAL", "cannot set auto_vacuum");
	if (r >= 0 && version == 0)
		r = pragma_read(s, "PRAGMA auto_vacuum", &auto_vacuum);
	if (r >= 0 && version == 0 && auto_vacuum != 2)
		r = exec_sql(s, "VACUUM", "cannot set auto_vacuum");
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
		r = pragma_read(s, "PRAGMA page_size", &s->page_size);
	if (r >= 0)
		r = store__apply_limits(s);
	if (r < 0)
		goto fail;

	rc = sqlite3_create_function(s->db, "usum", 1,
				     SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, NULL,
				     NULL, usum_step, usum_final);
	if (rc != SQLITE_OK) {
		r = store__fail(s, rc, "cannot register usum()");
		goto fail;
	}
	for (int i = 0; i < STMT_COUNT; i++) {
		rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					&s->stmts[i], NULL);
		if (rc != SQLITE_OK) {
			r = store__fail(s, rc, "cannot prepare \"%s\"", stmt_sql[i]);
			goto fail;
		}
	}
	store__forget(s);
	s->err = NULL;
	s->err_size = 0;
	*ret = s;
	return 0;
fail:
	store_close(s);
	return r;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < STMT_COUNT; i++)
		sqlite3_finalize(s->stmts[i]);
	/* The last connection checkpoints and removes the WAL. */
	sqlite3_close(s->db);
	intern_free(&s->strings);
	intern_free(&s->stacks);
	hashtab_free(s->series);
	free(s->frames);
	free(s);
}

struct sqlite3 *store__db(struct store *s)
{
	return s->db;
}
