/* store_write: adding a window (store_window_add, see store.h), its
 * frames, stacks and series interned, and a continuous window's heatmap
 * cells (store_heatmap.c reads them). */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hashtab.h"
#include "store_internal.h"

/* A generation of the interning caches (struct intern). Under churn, new
 * frames and stacks keep coming (stripped binaries' frames named by
 * offset): caches of 64 MiB each, dropped when full, took 40 MiB of the
 * daemon's heap in 5 minutes of bench/churn.py. A window's stacks number in
 * the thousands; a generation holds some 15,000 (their text averages
 * 600 bytes) and 32,768 frame names. Two generations of the three caches,
 * tables included, take at most 38 MiB (store_cache_bytes()). */
#define STRINGS_GENERATION_ENTRIES (1u << 15)
#define STRINGS_GENERATION_BYTES   ((size_t)2 << 20)
#define STACKS_GENERATION_ENTRIES  (1u << 15)
#define STACKS_GENERATION_BYTES	   ((size_t)8 << 20)
/* A generation of the series cache: 5 MiB of table. Under process churn
 * most series are a new thread's, used in one window; a cache of every
 * series up to 2^20 grew toward 128 MiB of table, and its lookups spent
 * their time waiting for their first entry's cache line (perf, under
 * bench/churn.py and bench/store_replay). */
#define SERIES_GENERATION_ENTRIES (1u << 15)

/* An estimate of SQLite's per-row overhead in a b-tree: the payload length
 * varint, the cell pointer and a little slack for interior pages. */
#define ROW_OVERHEAD_BYTES 4

struct sample_sum {
	uint64_t sum_ns;
	uint64_t count;
	uint64_t bytes;
};

_Static_assert(sizeof(struct series_key) == 5 * sizeof(int64_t) + 6 * sizeof(uint32_t),
	       "struct series_key has padding");

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

/* A window's histogram bucket before insertion: the buckets of one key
 * merged. */
struct hist_row {
	struct hist_key key;
	struct hist_value value;
};

/* A window's histogram row as stored: a process's buckets of one type. */
struct hist_blob {
	uint32_t tgid;
	uint32_t type;
	int64_t comm_id; /* its lowest bucket's */
	size_t len;
	unsigned char buckets[HIST_BLOB_MAX];
};

/* A heatmap cell's key within its window: a thread's comm, state and kind.
 * No padding: a hashtab key. */
struct cell_key {
	int64_t comm_id;
	uint32_t tgid;
	uint32_t pid;
	uint32_t state;
	uint32_t kind;
};

/* A window's heatmap cell before insertion: its samples' time summed. */
struct cell_row {
	struct cell_key key;
	uint64_t sum_ns;
};

static void intern_gen_free(struct intern_gen *g)
{
	hashtab_free(g->map);
	free(g->arena);
	*g = (struct intern_gen){ 0 };
}

/* Empties c, its limits set to a generation of gen_entries and gen_bytes
 * (intern_add() makes the newer generation's table on first use). */
static void intern_reset(struct intern *c, size_t gen_entries, size_t gen_bytes)
{
	intern_gen_free(&c->newer);
	intern_gen_free(&c->older);
	c->gen_entries = gen_entries;
	c->gen_bytes = gen_bytes;
}

void store__intern_free(struct intern *c)
{
	intern_gen_free(&c->newer);
	intern_gen_free(&c->older);
}

static size_t intern_gen_bytes(const struct intern_gen *g)
{
	return g->cap + (g->map ? hashtab_bytes(g->map) : 0);
}

size_t store_cache_bytes(const struct store *s)
{
	size_t n = intern_gen_bytes(&s->strings.newer) + intern_gen_bytes(&s->strings.older) +
		   intern_gen_bytes(&s->stacks.newer) + intern_gen_bytes(&s->stacks.older);

	if (s->series)
		n += hashtab_bytes(s->series);
	if (s->series_older)
		n += hashtab_bytes(s->series_older);
	return n;
}

/* 1 with *ret_id: in g. 0: not in g. -1: another content has this hash. */
static int intern_gen_find(const struct intern_gen *g, uint64_t hash, const char *p, size_t n,
			   int64_t *ret_id)
{
	const struct intern_entry *e = g->map ? hashtab_get(g->map, &hash) : NULL;

	if (!e)
		return 0;
	if (e->len != n || (n && memcmp(g->arena + e->off, p, n)))
		return -1;
	*ret_id = e->id;
	return 1;
}

/* Best effort: on ENOMEM the content is simply not cached. */
static void intern_add(struct intern *c, uint64_t hash, const char *p, size_t n, int64_t id)
{
	struct intern_gen *g = &c->newer;
	struct intern_entry *e;
	bool created;

	if (n > c->gen_bytes)
		return;
	if (!g->map || hashtab_count(g->map) >= c->gen_entries || g->used + n > c->gen_bytes) {
		struct hashtab *map;

		if (hashtab_new(sizeof(uint64_t), sizeof(struct intern_entry), &map) < 0)
			return;
		intern_gen_free(&c->older);
		c->older = *g;
		*g = (struct intern_gen){ .map = map };
	}
	if (g->used + n > g->cap) {
		size_t cap = g->cap ? g->cap : 65536;
		char *arena;

		while (cap < g->used + n)
			cap *= 2;
		if (cap > c->gen_bytes)
			cap = c->gen_bytes;
		arena = realloc(g->arena, cap);
		if (!arena)
			return;
		g->arena = arena;
		g->cap = cap;
	}
	e = hashtab_put(g->map, &hash, &created);
	if (!e || !created)
		return;
	if (n)
		memcpy(g->arena + g->used, p, n);
	e->id = id;
	e->off = g->used;
	e->len = n;
	g->used += n;
}

/* 1 with *ret_id: cached. 0: not cached. -1: another content has this hash;
 * such content is looked up in SQL every time and never cached. */
static int intern_find(struct intern *c, uint64_t hash, const char *p, size_t n, int64_t *ret_id)
{
	int r = intern_gen_find(&c->newer, hash, p, n, ret_id);

	if (r)
		return r;
	r = intern_gen_find(&c->older, hash, p, n, ret_id);
	if (r > 0)
		intern_add(c, hash, p, n, *ret_id); /* may free the older: p is the caller's */
	return r;
}

void store__forget(struct store *s)
{
	intern_reset(&s->strings, STRINGS_GENERATION_ENTRIES, STRINGS_GENERATION_BYTES);
	intern_reset(&s->stacks, STACKS_GENERATION_ENTRIES, STACKS_GENERATION_BYTES);
	hashtab_free(s->series);
	hashtab_free(s->series_older);
	s->series_older = NULL;
	if (hashtab_new(sizeof(struct series_key), sizeof(int64_t), &s->series) < 0)
		s->series = NULL;
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

/*
 * Id of the blob p[0..n) in a table whose blob column is UNIQUE, inserted if
 * absent; a new row's bytes (row and index entry) are added to *bytes.
 * Inserted first (insert ignores a conflict), looked up only if it was
 * there: what the caches miss is mostly new (a new thread's series, a new
 * stack), and the insert's uniqueness check is the lookup.
 */
static int db_intern(struct store *s, enum stmt find, enum stmt insert, const char *what,
		     const void *p, size_t n, int64_t *ret_id, uint64_t *bytes)
{
	sqlite3_stmt *st = stmt(s, insert);
	int rc;

	/* A non-NULL pointer binds an empty blob, not NULL. */
	rc = sqlite3_bind_blob64(st, 1, n ? p : "", n, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store__fail(s, rc, "cannot store a %s of %zu bytes", what, n);
	if (sqlite3_changes(s->db)) {
		*ret_id = sqlite3_last_insert_rowid(s->db);
		*bytes += 2 * (n + 8 + ROW_OVERHEAD_BYTES);
		return 0;
	}
	st = stmt(s, find);
	rc = sqlite3_bind_blob64(st, 1, n ? p : "", n, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : store__fail(s, rc, "cannot look up a %s", what);
}

static int string_id(struct store *s, const char *p, size_t n, int64_t *ret_id, uint64_t *bytes)
{
	uint64_t hash = hashtab_hash(p, n);
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
	uint64_t hash = hashtab_hash(str, n);
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

/* stack_id() through ids, a window's cache by the string's address: the
 * samples of a window share their stack strings (a profile keeps one copy
 * of each), so a stack is hashed and compared once per window, not once
 * per thread. */
static int window_stack_id(struct store *s, struct hashtab *ids, const char *str, int64_t *ret_id,
			   uint64_t *bytes)
{
	int64_t *id = hashtab_get(ids, &str);
	int r;

	if (id) {
		*ret_id = *id;
		return 0;
	}
	r = stack_id(s, str, ret_id, bytes);
	if (r < 0)
		return r;
	id = hashtab_put(ids, &str, NULL);
	if (!id)
		return store__error(s, -ENOMEM, "out of memory");
	*id = *ret_id;
	return 0;
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
	sqlite3_bind_int64(st, 9, key->cgroup_id);
	sqlite3_bind_int64(st, 10, key->ns_pid);
}

/* Caches a series' id in the newer generation, which becomes the older
 * when full. Best effort, like intern_add(). */
static void series_cache(struct store *s, const struct series_key *key, int64_t id)
{
	struct hashtab *newer;
	int64_t *slot;

	if (!s->series)
		return;
	if (hashtab_count(s->series) >= SERIES_GENERATION_ENTRIES) {
		if (hashtab_new(sizeof(struct series_key), sizeof(int64_t), &newer) < 0)
			return;
		hashtab_free(s->series_older);
		s->series_older = s->series;
		s->series = newer;
	}
	slot = hashtab_put(s->series, key, NULL);
	if (slot)
		*slot = id;
}

/* The cached id of a series, from either generation: one found in the
 * older is cached in the newer again. False if not cached. */
static bool series_cached(struct store *s, const struct series_key *key, int64_t *ret_id)
{
	const int64_t *id = s->series ? hashtab_get(s->series, key) : NULL;

	if (id) {
		*ret_id = *id;
		return true;
	}
	id = s->series_older ? hashtab_get(s->series_older, key) : NULL;
	if (!id)
		return false;
	*ret_id = *id; /* before series_cache() may free the older */
	series_cache(s, key, *ret_id);
	return true;
}

/* Id of a series, inserted if absent. */
static int series_id(struct store *s, const struct series_key *key, int64_t *ret_id,
		     uint64_t *bytes)
{
	sqlite3_stmt *st;
	int rc;

	if (series_cached(s, key, ret_id))
		return 0;
	/* Inserted first, as in db_intern(). */
	st = stmt(s, STMT_SERIES_INSERT);
	series_bind(st, key);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return store__fail(s, rc, "cannot store a series");
	if (sqlite3_changes(s->db)) {
		*ret_id = sqlite3_last_insert_rowid(s->db);
		/* The row and its UNIQUE index entry. */
		*bytes += 2 * (8 + 20 + int_bytes(key->cgroup_id) + int_bytes(key->ns_pid) +
			       ROW_OVERHEAD_BYTES);
	} else {
		st = stmt(s, STMT_SERIES_FIND);
		series_bind(st, key);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			*ret_id = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (rc != SQLITE_ROW)
			return store__fail(s, rc, "cannot look up a series");
	}
	series_cache(s, key, *ret_id);
	return 0;
}

static int merged_row_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct merged_row *)a)->series_id;
	int64_t y = ((const struct merged_row *)b)->series_id;

	return x < y ? -1 : x > y;
}

/* Merges the samples into rows by series, and into heatmap cells (cells
 * NULL: a capture's window, which no heatmap shows). */
static int window_merge(struct store *s, const struct store_sample *samples, size_t n_samples,
			struct hashtab *rows, struct hashtab *triples, struct hashtab *stack_ids,
			struct hashtab *cells, uint64_t *bytes)
{
	for (size_t i = 0; i < n_samples; i++) {
		const struct store_sample *in = &samples[i];
		const char *comm = in->comm ? in->comm : "";
		const char *cgroup = in->cgroup ? in->cgroup : "";
		struct stack_triple triple;
		struct series_key key;
		struct sample_sum *sum;
		uint64_t *cell_ns = NULL;
		int64_t id;
		int r;

		memset(&key, 0, sizeof(key));
		r = string_id(s, comm, strlen(comm), &key.comm_id, bytes);
		if (r >= 0)
			r = window_stack_id(s, stack_ids, in->ustack ? in->ustack : "",
					    &key.ustack_id, bytes);
		if (r >= 0)
			r = window_stack_id(s, stack_ids, in->kstack ? in->kstack : "",
					    &key.kstack_id, bytes);
		if (r >= 0)
			r = window_stack_id(s, stack_ids, in->chain ? in->chain : "", &key.chain_id,
					    bytes);
		/* Not known: cgroup_id 0 and no string, as series before version 6. */
		if (r >= 0 && cgroup[0])
			r = string_id(s, cgroup, strlen(cgroup), &key.cgroup_id, bytes);
		key.tgid = in->tgid;
		key.pid = in->pid;
		key.kind = in->kind;
		key.state = in->state;
		key.ns_pid = in->ns_pid;
		if (r >= 0)
			r = series_id(s, &key, &id, bytes);
		if (r < 0)
			return r;
		sum = hashtab_put(rows, &id, NULL);
		triple = (struct stack_triple){ key.ustack_id, key.kstack_id, key.chain_id };
		if (cells) {
			struct cell_key cell = { key.comm_id, key.tgid, key.pid, key.state,
						 key.kind };

			cell_ns = hashtab_put(cells, &cell, NULL);
		}
		if (!sum || !hashtab_put(triples, &triple, NULL) || (cells && !cell_ns))
			return store__error(s, -ENOMEM, "out of memory");
		if (cell_ns)
			*cell_ns = add_saturated(*cell_ns, in->sum_ns);
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

static size_t hist_blob_bytes(const struct hist_blob *h)
{
	/* A header byte per column plus its length (the blob's, one byte);
	 * window_id taken as 3 bytes. */
	return 6 + 3 + int_bytes(h->tgid) + int_bytes(h->type) + int_bytes(h->comm_id) + h->len +
	       ROW_OVERHEAD_BYTES;
}

/* Whether bucket i of sorted starts a stored row (a new tgid or type). */
static bool hist_row_starts(const struct hist_row *sorted, size_t i)
{
	return !i || sorted[i].key.tgid != sorted[i - 1].key.tgid ||
	       sorted[i].key.type != sorted[i - 1].key.type;
}

/* The merged buckets as the rows that store them, a row per process and
 * type, in primary key order: *ret is malloc'd (NULL if none), *ret_n. */
static int hists_encode(struct store *s, struct hashtab *merged, struct hist_blob **ret,
			size_t *ret_n, uint64_t *bytes)
{
	size_t n = hashtab_count(merged), i = 0, pos = 0, n_blobs = 0;
	const struct hist_key *key;
	struct hist_value *value;
	struct hist_row *sorted;
	struct hist_blob *blobs;

	*ret = NULL;
	*ret_n = 0;
	if (!n)
		return 0;
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return store__error(s, -ENOMEM, "out of memory");
	while (hashtab_next(merged, &pos, (const void **)&key, (void **)&value)) {
		sorted[i].key = *key;
		sorted[i].value = *value;
		i++;
	}
	qsort(sorted, n, sizeof(*sorted), hist_row_cmp);
	for (i = 0; i < n; i++)
		n_blobs += hist_row_starts(sorted, i);
	blobs = malloc(n_blobs * sizeof(*blobs));
	if (!blobs) {
		free(sorted);
		return store__error(s, -ENOMEM, "out of memory");
	}
	n_blobs = 0;
	for (i = 0; i < n; i++) {
		struct hist_blob *b;

		if (hist_row_starts(sorted, i)) {
			b = &blobs[n_blobs++];
			b->tgid = sorted[i].key.tgid;
			b->type = sorted[i].key.type;
			b->comm_id = sorted[i].value.comm_id; /* the lowest bucket's */
			b->len = 0;
		}
		b = &blobs[n_blobs - 1];
		b->len += store__hist_blob_put(b->buckets + b->len, sorted[i].key.bucket,
					       sorted[i].value.count);
	}
	for (i = 0; i < n_blobs; i++)
		*bytes += hist_blob_bytes(&blobs[i]);
	free(sorted);
	*ret = blobs;
	*ret_n = n_blobs;
	return 0;
}

static int hists_insert(struct store *s, int64_t window_id, const struct hist_blob *blobs, size_t n)
{
	sqlite3_stmt *st = s->stmts[STMT_HIST_INSERT];
	int rc;

	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, window_id);
		sqlite3_bind_int64(st, 2, blobs[i].tgid);
		sqlite3_bind_int64(st, 3, blobs[i].type);
		sqlite3_bind_int64(st, 4, blobs[i].comm_id);
		sqlite3_bind_blob64(st, 5, blobs[i].buckets, blobs[i].len, SQLITE_STATIC);
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

static int cell_row_cmp(const void *a, const void *b)
{
	const struct cell_key *x = &((const struct cell_row *)a)->key;
	const struct cell_key *y = &((const struct cell_row *)b)->key;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->state != y->state)
		return x->state < y->state ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static size_t cell_row_bytes(const struct cell_row *h)
{
	/* A header byte per column plus its length; window_id taken as 3 bytes. */
	return 8 + 3 + int_bytes(h->key.tgid) + int_bytes(h->key.pid) + int_bytes(h->key.comm_id) +
	       int_bytes(h->key.state) + int_bytes(h->key.kind) + int_bytes((int64_t)h->sum_ns) +
	       ROW_OVERHEAD_BYTES;
}

/* The window's heatmap cells, sorted by key; *ret is malloc'd, NULL if
 * none. */
static int cells_sort(struct store *s, struct hashtab *cells, struct cell_row **ret,
		      uint64_t *bytes)
{
	size_t n = cells ? hashtab_count(cells) : 0, i = 0, pos = 0;
	const struct cell_key *key;
	uint64_t *sum_ns;
	struct cell_row *sorted;

	*ret = NULL;
	if (!n)
		return 0;
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return store__error(s, -ENOMEM, "out of memory");
	while (hashtab_next(cells, &pos, (const void **)&key, (void **)&sum_ns)) {
		sorted[i].key = *key;
		sorted[i].sum_ns = *sum_ns;
		*bytes += cell_row_bytes(&sorted[i]);
		i++;
	}
	/* In primary key order, so the window fills whole pages. */
	qsort(sorted, n, sizeof(*sorted), cell_row_cmp);
	*ret = sorted;
	return 0;
}

/* Inserts the window's heatmap cells and marks it indexed (cells NULL: a
 * capture's window, which is not). */
static int cells_insert(struct store *s, int64_t window_id, struct hashtab *cells,
			const struct cell_row *sorted)
{
	sqlite3_stmt *st = s->stmts[STMT_HEAT_INSERT];
	int rc = SQLITE_DONE;

	if (!cells)
		return 0;
	for (size_t i = 0; rc == SQLITE_DONE && i < hashtab_count(cells); i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, window_id);
		sqlite3_bind_int64(st, 2, sorted[i].key.tgid);
		sqlite3_bind_int64(st, 3, sorted[i].key.pid);
		sqlite3_bind_int64(st, 4, sorted[i].key.comm_id);
		sqlite3_bind_int64(st, 5, sorted[i].key.state);
		sqlite3_bind_int64(st, 6, sorted[i].key.kind);
		/* uint64 kept as its int64 bit pattern; usum() reads it back. */
		sqlite3_bind_int64(st, 7, (int64_t)sorted[i].sum_ns);
		rc = sqlite3_step(st);
	}
	sqlite3_reset(st);
	if (rc == SQLITE_DONE) {
		st = stmt(s, STMT_HEAT_MARK);
		sqlite3_bind_int64(st, 1, window_id);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
	}
	return rc == SQLITE_DONE ? 0 : store__fail(s, rc, "cannot store the heatmap's cells");
}

/* Inserts the window, its samples, its histogram rows and its heatmap cells. */
static int window_insert(struct store *s, struct store_window *w, struct hashtab *rows,
			 struct hashtab *triples, struct hashtab *hists, struct hashtab *cells,
			 uint64_t bytes)
{
	size_t n = hashtab_count(rows), i = 0, pos = 0;
	struct merged_row *sorted = NULL;
	struct hist_blob *hist_blobs = NULL;
	size_t n_hist_blobs = 0;
	struct cell_row *cells_sorted = NULL;
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
	r = hists_encode(s, hists, &hist_blobs, &n_hist_blobs, &bytes);
	if (r >= 0)
		r = cells_sort(s, cells, &cells_sorted, &bytes);
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
	if (w->capture_id && w->kind >= 0) {
		sqlite3_bind_int64(st, 7, w->kind);
		sqlite3_bind_text(st, 8, w->targets, -1, SQLITE_STATIC);
	} else {
		sqlite3_bind_null(st, 7);
		sqlite3_bind_null(st, 8);
	}
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
	r = hists_insert(s, id, hist_blobs, n_hist_blobs);
	if (r >= 0)
		r = cells_insert(s, id, cells, cells_sorted);
	if (r < 0)
		goto out;
	w->id = (uint64_t)id;
	w->n_stacks = hashtab_count(triples);
	w->n_samples = n;
	w->bytes = bytes;
out:
	free(sorted);
	free(hist_blobs);
	free(cells_sorted);
	return r;
}

int store_window_add(struct store *s, struct store_window *w, const struct store_sample *samples,
		     size_t n_samples, const struct store_hist *hists, size_t n_hists, char *err,
		     size_t err_size)
{
	struct hashtab *rows = NULL, *triples = NULL, *merged_hists = NULL, *stack_ids = NULL;
	struct hashtab *cells = NULL;
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
	    hashtab_new(sizeof(struct hist_key), sizeof(struct hist_value), &merged_hists) < 0 ||
	    hashtab_new(sizeof(const char *), sizeof(int64_t), &stack_ids) < 0 ||
	    (!w->capture_id &&
	     hashtab_new(sizeof(struct cell_key), sizeof(uint64_t), &cells) < 0) ||
	    /* About a row, a stack triple and a cell per sample (a profile's
	     * rows are merged already); room at once, rather than growing. */
	    hashtab_reserve(rows, n_samples) < 0 || hashtab_reserve(triples, n_samples) < 0 ||
	    hashtab_reserve(stack_ids, n_samples) < 0 ||
	    (cells && hashtab_reserve(cells, n_samples) < 0) ||
	    hashtab_reserve(merged_hists, n_hists) < 0) {
		r = store__error(s, -ENOMEM, "out of memory");
		goto out;
	}
	r = store__stmt_exec(s, STMT_BEGIN, "cannot begin a transaction");
	if (r < 0)
		goto out;
	r = window_merge(s, samples, n_samples, rows, triples, stack_ids, cells, &bytes);
	if (r >= 0)
		r = hists_merge(s, hists, n_hists, merged_hists, &bytes);
	if (r >= 0)
		r = window_insert(s, w, rows, triples, merged_hists, cells, bytes);
	if (r >= 0)
		r = store__stmt_exec(s, STMT_COMMIT, "cannot commit the window");
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
	hashtab_free(stack_ids);
	hashtab_free(cells);
	return r;
}
