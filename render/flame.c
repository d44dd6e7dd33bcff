/*
 * flame: see flame.h. Parsing and merging of folded stacks.
 *
 * Built for big inputs (200k lines of 26 frames in well under a second, and
 * no more memory at the peak than the final tree): frame names are interned
 * once; while parsing, the tree is a flat array of 16-byte build nodes (name
 * id, parent id, self), found through one hash table keyed by (parent, name)
 * (8-byte slots: name and child; the node holds the parent). The frames a
 * line shares with the last one (input usually comes sorted) are found with
 * one byte scan and skip the table, as do the frames below a new node.
 * flame_root() lays the nodes out depth-first with each node's children
 * contiguous, gathers them in that order, grows that array to struct
 * flame_node size (40 bytes) and expands the nodes in place, from the last
 * one down.
 */
#define _GNU_SOURCE /* qsort_r */
#include "flame.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "array.h"

#define KERNEL_BIT  0x80000000u /* in build_node.name */
#define DIFF_BIT    0x40000000u /* in build_node.name: on a 3-column line's path */
#define NAME_MASK   0x3fffffffu /* build_node.name's string id */
#define MAX_IDS	    0x7fffffffu /* nodes are uint32_t ids */
#define CHUNK_BYTES (256 * 1024)
#define PENDING	    32 /* child table inserts batched, to overlap their cache misses */

/* Interned strings: each distinct string stored once, NUL-terminated. */
struct str {
	const char *s;
	uint32_t len;
	uint32_t hash;
};

struct chunk {
	struct chunk *next;
	char data[];
};

struct strtab {
	struct str *strs;
	uint32_t n, cap;
	uint32_t *slots; /* id + 1; 0 is empty */
	size_t mask;
	struct chunk *chunks;
	char *free_at;
	size_t free_len;
};

struct build_node {
	uint32_t name; /* string id, KERNEL_BIT if a kernel frame, DIFF_BIT */
	uint32_t parent;
	double self; /* width column's count (NEW, or 2-column count) */
};

/* A child not yet in the table: the whole key. */
struct child_slot {
	uint32_t parent;
	uint32_t name;
	uint32_t child;
};

/* A slot of the table: the name and the child, whose node holds the
 * parent. 8 bytes, not 12: the table is the largest thing while parsing
 * (doubled while it grows), and a lookup touches the node only when the
 * name matches, which is nearly always the hit. child 0 (the root, never a
 * child) marks an empty slot. */
struct table_slot {
	uint32_t name;
	uint32_t child;
};

struct span {
	const char *p;
	size_t len;
};

struct flame {
	struct flame_parse_opts opts;
	struct flame_parse_stats stats;
	uint64_t line_no;
	int columns;   /* 0 until the first valid line, then 2, or 3 after a 3-column one */
	bool decimal;  /* a count had a fraction */
	double sum[2]; /* [0] NEW (or the only count), [1] OLD */

	struct strtab names;

	/* Build state, freed by flame_root(). */
	struct build_node *nodes; /* [0] is the root */
	double *self_old;	  /* 3 columns only, parallel to nodes */
	uint32_t n_nodes, cap_nodes, cap_old;
	struct table_slot *child_slots;	    /* (parent, name) -> child */
	size_t child_mask, n_children;	    /* n_children: in child_slots */
	struct child_slot pending[PENDING]; /* not yet in child_slots */
	unsigned n_pending;
	uint32_t *path; /* the last line's path: path[0] root, path[d] depth d */
	size_t path_len, path_cap;
	char *prev; /* the last line's stack, to find the frames it shares */
	size_t prev_len, prev_cap;
	struct span *frames;
	size_t frames_cap;
	char *scratch; /* strip_hex output */
	size_t scratch_cap;

	bool merging;		 /* flame_root() was called: no more input */
	struct flame_node *tree; /* after flame_root() */
	size_t n_tree;
};

static uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* Eight bytes a step: names are hashed once per frame of the input. */
static uint32_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9fb21c651e98df25ULL;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, p, n);
	return (uint32_t)mix64(h ^ w);
}

/*
 * Big zeroed tables, probed at random: mapped directly, so that they can
 * ask for transparent huge pages (fewer TLB misses and page faults; the
 * kernel zeroes them anyway). Small ones come from calloc.
 */
#define BIG_BYTES (2u << 20)

static void *table_alloc(size_t size)
{
	void *p;

	if (size < BIG_BYTES)
		return calloc(1, size);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, size, MADV_HUGEPAGE); /* a hint: failure is fine */
	return p;
}

static void table_free(void *p, size_t size)
{
	if (!p)
		return;
	if (size < BIG_BYTES)
		free(p);
	else
		munmap(p, size);
}

/* Contents kept up to the smaller size; NULL on ENOMEM (p unchanged). */
static void *table_realloc(void *p, size_t old_size, size_t size)
{
	void *q;

	if (!p)
		return table_alloc(size);
	if (old_size >= BIG_BYTES && size >= BIG_BYTES) {
		q = mremap(p, old_size, size, MREMAP_MAYMOVE);
		return q == MAP_FAILED ? NULL : q;
	}
	if (old_size < BIG_BYTES && size < BIG_BYTES)
		return realloc(p, size);
	q = table_alloc(size);
	if (!q)
		return NULL;
	memcpy(q, p, old_size < size ? old_size : size);
	table_free(p, old_size);
	return q;
}

static void child_table_free(struct flame *f)
{
	if (f->child_slots)
		table_free(f->child_slots, (f->child_mask + 1) * sizeof(*f->child_slots));
	f->child_slots = NULL;
}

static void strtab_free(struct strtab *t)
{
	struct chunk *c, *next;

	for (c = t->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->strs);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static int strtab_rehash(struct strtab *t, size_t n_slots)
{
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 0; id < t->n; id++) {
		size_t i = t->strs[id].hash & (n_slots - 1);

		while (slots[i])
			i = (i + 1) & (n_slots - 1);
		slots[i] = id + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = n_slots - 1;
	return 0;
}

static char *strtab_store(struct strtab *t, const char *p, size_t len)
{
	char *s;

	if (t->free_len < len + 1) {
		size_t size = len + 1 > CHUNK_BYTES ? len + 1 : CHUNK_BYTES;
		struct chunk *c = malloc(sizeof(*c) + size);

		if (!c)
			return NULL;
		c->next = t->chunks;
		t->chunks = c;
		t->free_at = c->data;
		t->free_len = size;
	}
	s = t->free_at;
	memcpy(s, p, len);
	s[len] = '\0';
	t->free_at += len + 1;
	t->free_len -= len + 1;
	return s;
}

/* Id of the string p[0..len), added if new (*ret_created then true).
 * Returns 0 or -ENOMEM. */
static int strtab_intern(struct strtab *t, const char *p, size_t len, uint32_t *ret_id,
			 bool *ret_created)
{
	uint32_t h = hash_bytes(p, len);
	size_t i;
	char *s;

	if (len > UINT32_MAX)
		return -ENOMEM;
	if (t->slots) {
		for (i = h & t->mask; t->slots[i]; i = (i + 1) & t->mask) {
			const struct str *e = &t->strs[t->slots[i] - 1];

			if (e->hash == h && e->len == len && !memcmp(e->s, p, len)) {
				*ret_id = t->slots[i] - 1;
				if (ret_created)
					*ret_created = false;
				return 0;
			}
		}
	}
	if (t->n >= NAME_MASK)
		return -ENOMEM;
	if (!t->slots || (size_t)(t->n + 1) * 2 > t->mask + 1) {
		if (strtab_rehash(t, t->slots ? (t->mask + 1) * 2 : 1024) < 0)
			return -ENOMEM;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap;

		if (array_grow(&t->strs, &cap, (size_t)t->n + 1, sizeof(*t->strs), 0) < 0)
			return -ENOMEM;
		t->cap = cap;
	}
	s = strtab_store(t, p, len);
	if (!s)
		return -ENOMEM;
	t->strs[t->n] = (struct str){ .s = s, .len = len, .hash = h };
	for (i = h & t->mask; t->slots[i];)
		i = (i + 1) & t->mask;
	t->slots[i] = t->n + 1;
	*ret_id = t->n++;
	if (ret_created)
		*ret_created = true;
	return 0;
}

int flame_new(const struct flame_parse_opts *opts, struct flame **ret)
{
	struct flame *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	if (opts)
		f->opts = *opts;
	f->cap_nodes = 1024;
	f->nodes = table_alloc(f->cap_nodes * sizeof(*f->nodes));
	if (!f->nodes) {
		free(f);
		return -ENOMEM;
	}
	f->nodes[0] = (struct build_node){ 0 };
	f->n_nodes = 1;
	*ret = f;
	return 0;
}

static void build_free(struct flame *f)
{
	table_free(f->nodes, (size_t)f->cap_nodes * sizeof(*f->nodes));
	table_free(f->self_old, (size_t)f->cap_old * sizeof(*f->self_old));
	child_table_free(f);
	free(f->path);
	free(f->prev);
	free(f->frames);
	free(f->scratch);
	f->nodes = NULL;
	f->self_old = NULL;
	f->child_slots = NULL;
	f->path = NULL;
	f->prev = NULL;
	f->frames = NULL;
	f->scratch = NULL;
}

void flame_free(struct flame *f)
{
	if (!f)
		return;
	build_free(f);
	strtab_free(&f->names);
	table_free(f->tree, f->n_tree * sizeof(*f->tree));
	free(f);
}

/* Perl's \s, as flamegraph.pl matches it. */
static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* flamegraph.pl's count, \d+(\.\d*)?, by hand: strtod would follow the
 * locale and take "inf", "-1" or "1e3". Fraction digits past the 18th are
 * ignored. */
static bool parse_count(const char *p, size_t len, double *ret, bool *ret_decimal)
{
	double v = 0, frac = 0, scale = 1;
	size_t i = 0;

	if (!len || p[0] < '0' || p[0] > '9')
		return false;
	for (; i < len && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (p[i] - '0');
	if (i < len && p[i] == '.') {
		*ret_decimal = true;
		for (i++; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
			if (scale < 1e18) {
				frac = frac * 10 + (p[i] - '0');
				scale *= 10;
			}
		}
		v += frac / scale;
	}
	if (i != len || !isfinite(v))
		return false;
	*ret = v;
	return true;
}

/* Takes the count off the end of p[0..*len): the last token must be a
 * count with whitespace before it; *len becomes the length of what stands
 * before that whitespace. As flamegraph.pl's /^(.*)\s+?(\d+...)$/, exactly
 * one whitespace character goes: more belongs to the stack, so a frame may
 * be named " " ("main;write0;  3"). */
static bool take_count(const char *p, size_t *len, double *ret, bool *ret_decimal)
{
	size_t start = *len;

	while (start > 0 && !is_space(p[start - 1]))
		start--;
	if (start == 0 || !parse_count(p + start, *len - start, ret, ret_decimal))
		return false;
	*len = start - 1;
	return true;
}

/* The last whitespace-separated token of p[0..*len) (trailing whitespace
 * skipped); *len becomes what stands before it. */
static const char *last_token(const char *p, size_t *len, size_t *ret_len)
{
	size_t end = *len, start;

	while (end > 0 && is_space(p[end - 1]))
		end--;
	for (start = end; start > 0 && !is_space(p[start - 1]); start--)
		;
	*ret_len = end - start;
	*len = start;
	return p + start;
}

/* A count written with an exponent, \d+(\.\d*)?[eE][+-]?\d+, which
 * flamegraph.pl does not read: its value, or -1. */
static double exponent_count(const char *p, size_t len)
{
	char buf[64], *end;
	size_t i = 0;
	double v;

	while (i < len && p[i] >= '0' && p[i] <= '9')
		i++;
	if (i == 0)
		return -1;
	if (i < len && p[i] == '.')
		for (i++; i < len && p[i] >= '0' && p[i] <= '9'; i++)
			;
	if (i == len || (p[i] != 'e' && p[i] != 'E') || len >= sizeof(buf))
		return -1;
	if (++i < len && (p[i] == '+' || p[i] == '-'))
		i++;
	if (i == len)
		return -1;
	for (; i < len; i++)
		if (p[i] < '0' || p[i] > '9')
			return -1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	v = strtod(buf, &end);
	return *end == '\0' ? v : -1;
}

/* Notes in st the first count above a limit: tok as written, or v as %g. */
static void too_large(struct flame_parse_stats *st, uint64_t line_no, const char *tok,
		      size_t tok_len, double v)
{
	st->too_large_line = line_no;
	if (tok && tok_len < sizeof(st->too_large_count))
		snprintf(st->too_large_count, sizeof(st->too_large_count), "%.*s", (int)tok_len,
			 tok);
	else if (tok)
		snprintf(st->too_large_count, sizeof(st->too_large_count), "%g", v);
	else
		st->too_large_count[0] = '\0';
}

enum line_kind { LINE_EMPTY, LINE_INVALID, LINE_OK };

struct line {
	const char *stack;
	size_t stack_len;
	double count; /* the only or the NEW count */
	double old;   /* 3 columns; 2 columns: the same as count */
	bool decimal;
	bool differential;  /* 3 columns */
	size_t two_col_len; /* the stack read as 2 columns: all before the last count */
};

/*
 * One line (without its '\n'). Each line has 2 or 3 columns of its own, as
 * flamegraph.pl reads them: a line whose stack again ends in whitespace and
 * a count has 3 (*columns gets the larger count seen). Whitespace at the
 * end of the line (CRLF included) is ignored, where flamegraph.pl would
 * skip the line. An empty stack (" 5", ";; 5") counts for the root alone.
 */
static enum line_kind parse_line(const char *p, size_t len, int *columns, struct line *ret)
{
	struct line l = { .stack = p };
	size_t before_second;
	double second;
	bool has_second, dec = false;

	while (len > 0 && is_space(p[len - 1]))
		len--;
	if (len == 0)
		return LINE_EMPTY;
	if (!take_count(p, &len, &l.count, &l.decimal))
		return LINE_INVALID;
	l.two_col_len = len;
	before_second = len;
	has_second = take_count(p, &before_second, &second, &dec);
	if (has_second) {
		l.old = second;
		l.decimal |= dec;
		l.differential = true;
		len = before_second;
	} else {
		l.old = l.count; /* in a differential graph: unchanged */
	}
	l.stack_len = len;
	if (*columns < (has_second ? 3 : 2))
		*columns = has_second ? 3 : 2;
	*ret = l;
	return LINE_OK;
}

/*
 * max_count on one line p[0..len) (parsed as k, l): false, with st's
 * too_large_* set, if a count of it is above max, or takes sum[0] (the last
 * column's total) or sum[1] (the other's) above it. An invalid line is
 * looked at only for a count with an exponent.
 */
static bool counts_within(double max, const char *p, size_t len, enum line_kind k,
			  const struct line *l, const double sum[2], uint64_t line_no,
			  struct flame_parse_stats *st)
{
	const char *tok;
	size_t tok_len;
	double v;

	if (k == LINE_EMPTY)
		return true;
	tok = last_token(p, &len, &tok_len);
	if (k == LINE_INVALID) {
		v = exponent_count(tok, tok_len);
		if (v <= max)
			return true;
		too_large(st, line_no, tok, tok_len, v);
		return false;
	}
	if (l->count > max) {
		too_large(st, line_no, tok, tok_len, l->count);
		return false;
	}
	if (l->differential && l->old > max) {
		tok = last_token(p, &len, &tok_len);
		too_large(st, line_no, tok, tok_len, l->old);
		return false;
	}
	/* max - sum: exact where sum + count would round (2^53 + 1) */
	if (l->count > max - sum[0] || l->old > max - sum[1]) {
		too_large(st, line_no, NULL, 0, 0);
		return false;
	}
	return true;
}

/* Splits the stack at ';' into f->frames; trailing empty frames dropped,
 * as Perl's split does. Returns the number of frames or -ENOMEM. */
static ssize_t split_frames(struct flame *f, const char *p, size_t len)
{
	const char *end = p + len;
	size_t n = 0;

	for (;;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *e = semi ? semi : end;

		if (array_grow(&f->frames, &f->frames_cap, n + 1, sizeof(*f->frames), 0) < 0)
			return -ENOMEM;
		f->frames[n++] = (struct span){ p, (size_t)(e - p) };
		if (!semi)
			break;
		p = semi + 1;
	}
	while (n > 0 && f->frames[n - 1].len == 0)
		n--;
	return n;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* p[0..len) with /0x[0-9a-fA-F]+/ rewritten as "0x...", in *buf (grown as
 * needed); the result never grows by more than a factor 5/3. NULL on ENOMEM. */
static char *strip_hex(const char *p, size_t len, char **buf, size_t *cap, size_t *ret_len)
{
	size_t n = 0;
	char *b;

	if (array_grow(buf, cap, len * 2 + 8, 1, 0) < 0)
		return NULL;
	b = *buf;
	for (size_t i = 0; i < len;) {
		if (p[i] == '0' && i + 2 < len && p[i + 1] == 'x' && is_hex(p[i + 2])) {
			memcpy(b + n, "0x...", 5);
			n += 5;
			for (i += 2; i < len && is_hex(p[i]);)
				i++;
		} else {
			b[n++] = p[i++];
		}
	}
	*ret_len = n;
	return b;
}

static bool has_hex(const char *p, size_t len)
{
	const char *x = memchr(p, 'x', len);

	for (; x; x = memchr(x + 1, 'x', len - (size_t)(x + 1 - p))) {
		if (x > p && x[-1] == '0' && x + 1 < p + len && is_hex(x[1]))
			return true;
	}
	return false;
}

static size_t child_hash(uint32_t parent, uint32_t name, size_t mask)
{
	return mix64((uint64_t)parent << 32 | name) & mask;
}

static void child_insert(struct table_slot *slots, size_t mask, uint32_t parent, uint32_t name,
			 uint32_t child)
{
	size_t i = child_hash(parent, name, mask);

	while (slots[i].child)
		i = (i + 1) & mask;
	slots[i] = (struct table_slot){ name, child };
}

static int child_rehash(struct flame *f, size_t n_slots)
{
	struct table_slot *slots = table_alloc(n_slots * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; f->child_slots && i <= f->child_mask; i++) {
		const struct table_slot *c = &f->child_slots[i];

		if (c->child)
			child_insert(slots, n_slots - 1, f->nodes[c->child].parent, c->name,
				     c->child);
	}
	child_table_free(f);
	f->child_slots = slots;
	f->child_mask = n_slots - 1;
	return 0;
}

/* Moves the pending children into the table: their slots are fetched
 * together, rather than one cache miss after the other. */
static int child_flush(struct flame *f)
{
	size_t at[PENDING];

	if ((f->n_children + f->n_pending) * 10 > (f->child_mask + 1) * 7 || !f->child_slots) {
		size_t n = f->child_slots ? f->child_mask + 1 : 1024;

		while ((f->n_children + f->n_pending) * 10 > n * 7)
			n *= 2;
		if (child_rehash(f, n) < 0)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < f->n_pending; i++) {
		at[i] = child_hash(f->pending[i].parent, f->pending[i].name, f->child_mask);
		__builtin_prefetch(&f->child_slots[at[i]], 1);
	}
	for (unsigned i = 0; i < f->n_pending; i++) {
		size_t j = at[i];

		while (f->child_slots[j].child)
			j = (j + 1) & f->child_mask;
		f->child_slots[j] = (struct table_slot){ f->pending[i].name, f->pending[i].child };
	}
	f->n_children += f->n_pending;
	f->n_pending = 0;
	return 0;
}

/* A new child of parent named name; -ENOMEM or its id. */
static int64_t node_add(struct flame *f, uint32_t parent, uint32_t name)
{
	uint32_t id = f->n_nodes;

	if (id >= MAX_IDS)
		return -ENOMEM;
	if (id == f->cap_nodes) {
		size_t cap = (size_t)f->cap_nodes * 2;
		struct build_node *nodes = table_realloc(f->nodes, f->cap_nodes * sizeof(*nodes),
							 cap * sizeof(*nodes));

		if (!nodes)
			return -ENOMEM;
		f->nodes = nodes;
		f->cap_nodes = cap;
	}
	if (f->self_old && id == f->cap_old) {
		size_t cap = f->cap_nodes;
		double *old =
			table_realloc(f->self_old, f->cap_old * sizeof(*old), cap * sizeof(*old));

		if (!old)
			return -ENOMEM;
		f->self_old = old;
		f->cap_old = cap;
	}
	if (!f->opts.flamechart && f->n_pending == PENDING && child_flush(f) < 0)
		return -ENOMEM;
	f->nodes[id] = (struct build_node){ .name = name, .parent = parent };
	if (f->self_old)
		f->self_old[id] = 0;
	if (!f->opts.flamechart)
		f->pending[f->n_pending++] = (struct child_slot){ parent, name, id };
	f->n_nodes++;
	return id;
}

/* The child of parent named by string id name, or 0. */
static uint32_t child_find(const struct flame *f, uint32_t parent, uint32_t name)
{
	for (unsigned i = 0; i < f->n_pending; i++) {
		if (f->pending[i].parent == parent && f->pending[i].name == name)
			return f->pending[i].child;
	}
	if (!f->child_slots)
		return 0;
	for (size_t i = child_hash(parent, name, f->child_mask); f->child_slots[i].child;
	     i = (i + 1) & f->child_mask) {
		const struct table_slot *c = &f->child_slots[i];

		if (c->name == name && f->nodes[c->child].parent == parent)
			return c->child;
	}
	return 0;
}

static bool ends_with_k(const char *p, size_t len)
{
	return len >= 4 && !memcmp(p + len - 4, "_[k]", 4);
}

/*
 * How many frames, in path order, the stack p[0..len) shares with the last
 * merged one: those lie on f->path. One scan of the bytes (input is usually
 * sorted, so lines share long prefixes) rather than one comparison a frame.
 */
static size_t shared_frames(const struct flame *f, const char *p, size_t len, size_t n)
{
	const char *q = f->prev;
	size_t qlen = f->prev_len, max = len < qlen ? len : qlen, c = 0, k;
	uint64_t a, b;

	if (!f->opts.leaf_root) {
		for (; c + 8 <= max; c += 8) {
			memcpy(&a, p + c, 8);
			memcpy(&b, q + c, 8);
			if (a != b)
				break;
		}
		while (c < max && p[c] == q[c])
			c++;
		for (k = 0; k < n; k++) {
			size_t e = (size_t)(f->frames[k].p - p) + f->frames[k].len;

			if (e > c || (e < len && p[e] != ';') || (e < qlen && q[e] != ';'))
				break;
		}
		return k;
	}
	/* Leaf first: the common suffix. */
	for (; c + 8 <= max; c += 8) {
		memcpy(&a, p + len - c - 8, 8);
		memcpy(&b, q + qlen - c - 8, 8);
		if (a != b)
			break;
	}
	while (c < max && p[len - c - 1] == q[qlen - c - 1])
		c++;
	for (k = 0; k < n; k++) {
		size_t s = (size_t)(f->frames[n - 1 - k].p - p), tail = len - s;

		if (tail > c || (s > 0 && p[s - 1] != ';') ||
		    (tail < qlen && q[qlen - tail - 1] != ';'))
			break;
	}
	return k;
}

/* Merges one valid stack into the tree. 0 or -ENOMEM. */
static int tree_add(struct flame *f, const struct line *l)
{
	ssize_t n = split_frames(f, l->stack, l->stack_len);
	size_t dash, depth, shared, len, last_len = f->path_len;
	bool fresh = false;  /* the parent was just created: no child to look up */
	bool on_last = true; /* the parent is on the last line's path */

	if (n < 0)
		return -ENOMEM;
	if (n == 0) { /* no frame: the root's own count, as flamegraph.pl adds it */
		f->nodes[0].self += l->count;
		if (f->self_old)
			f->self_old[0] += l->old;
		if (l->differential)
			f->nodes[0].name |= DIFF_BIT;
		return 0;
	}
	if (array_grow(&f->path, &f->path_cap, (size_t)n + 1, sizeof(*f->path), 0) < 0)
		return -ENOMEM;
	len = (size_t)(f->frames[n - 1].p - l->stack) + f->frames[n - 1].len;
	shared = shared_frames(f, l->stack, len, (size_t)n);
	if (shared >= f->path_len) /* a line cut short by ENOMEM */
		shared = f->path_len ? f->path_len - 1 : 0;
	for (dash = 0; dash < (size_t)n; dash++) {
		if (f->frames[dash].len == 1 && f->frames[dash].p[0] == '-')
			break;
	}
	f->path[0] = 0;
	f->path_len = 1;
	for (depth = shared + 1; depth <= (size_t)n; depth++) {
		size_t j = f->opts.leaf_root ? (size_t)n - depth : depth - 1;
		const char *name = f->frames[j].p;
		size_t name_len = f->frames[j].len;
		bool is_dash = name_len == 1 && name[0] == '-';
		bool kernel = (j > dash && !is_dash) || ends_with_k(name, name_len);
		uint32_t parent = f->path[depth - 1], child = 0, id;
		bool created;

		if (f->opts.strip_hex && has_hex(name, name_len)) {
			name = strip_hex(name, name_len, &f->scratch, &f->scratch_cap, &name_len);
			if (!name)
				return -ENOMEM;
		}
		if (strtab_intern(&f->names, name, name_len, &id, &created) < 0)
			return -ENOMEM;
		/* Bytes differ, the name may not: strip_hex made it equal. */
		if (on_last && depth < last_len &&
		    (f->nodes[f->path[depth]].name & NAME_MASK) == id)
			child = f->path[depth];
		else
			on_last = false;
		if (!child && !f->opts.flamechart && !created && !fresh)
			child = child_find(f, parent, id);
		if (!child) {
			int64_t r = node_add(f, parent, id);

			if (r < 0)
				return -ENOMEM;
			child = (uint32_t)r;
			fresh = true;
			if (kernel)
				f->nodes[child].name |= KERNEL_BIT;
		}
		/* A frame's kernel flag follows from its path, except in a
		 * leaf-first tree, where the "-" comes after it. */
		if (kernel && f->opts.leaf_root)
			f->nodes[child].name |= KERNEL_BIT;
		f->path[depth] = child;
	}
	if (f->opts.leaf_root) {
		/* The shared frames' kernel flags may come from this line's "-". */
		for (depth = 1; depth <= shared; depth++) {
			size_t j = (size_t)n - depth;

			if (j > dash && !(f->frames[j].len == 1 && f->frames[j].p[0] == '-'))
				f->nodes[f->path[depth]].name |= KERNEL_BIT;
		}
	}
	if (array_grow(&f->prev, &f->prev_cap, len, 1, 0) < 0)
		return -ENOMEM;
	memcpy(f->prev, l->stack, len);
	f->prev_len = len;
	f->path_len = (size_t)n + 1;
	f->nodes[f->path[n]].self += l->count;
	if (f->self_old)
		f->self_old[f->path[n]] += l->old;
	/* flamegraph.pl colours by change only the frames a 3-column line
	 * passed through; the others of a mixed input by the palette. */
	if (l->differential) {
		for (depth = 0; depth <= (size_t)n; depth++)
			f->nodes[f->path[depth]].name |= DIFF_BIT;
	}
	return 0;
}

int flame_parse(struct flame *f, const char *text, size_t len)
{
	const char *end = text + len;

	assert(f);
	assert(!f->merging); /* the build state is gone */
	if (f->merging)
		return -EINVAL;
	while (text < end) {
		const char *nl = memchr(text, '\n', (size_t)(end - text));
		const char *eol = nl ? nl : end;
		struct line l;
		enum line_kind k;

		f->line_no++;
		k = parse_line(text, (size_t)(eol - text), &f->columns, &l);
		if (f->opts.max_count > 0 &&
		    !counts_within(f->opts.max_count, text, (size_t)(eol - text), k, &l, f->sum,
				   f->line_no, &f->stats))
			return -ERANGE;
		text = nl ? nl + 1 : end;
		if (k == LINE_EMPTY)
			continue;
		f->stats.lines++;
		if (k == LINE_INVALID) {
			if (!f->stats.invalid++)
				f->stats.first_invalid = f->line_no;
			continue;
		}
		if (f->columns == 3 && !f->self_old) {
			f->self_old = table_alloc(f->cap_nodes * sizeof(*f->self_old));
			if (!f->self_old)
				return -ENOMEM;
			f->cap_old = f->cap_nodes;
			f->stats.differential = true;
			/* 2-column lines before: unchanged */
			for (uint32_t id = 0; id < f->n_nodes; id++)
				f->self_old[id] = f->nodes[id].self;
		}
		f->decimal |= l.decimal;
		f->sum[0] += l.count;
		f->sum[1] += l.old;
		if (l.count == 0 && l.old == 0)
			continue;
		if (tree_add(f, &l) < 0)
			return -ENOMEM;
	}
	/* Until flame_root(), the running sums stand for the root's value. */
	if (f->stats.differential) {
		f->stats.total = f->sum[f->opts.widths_from_old];
		f->stats.total_other = f->sum[!f->opts.widths_from_old];
	} else {
		f->stats.total = f->sum[0];
	}
	return 0;
}

int flame_check_counts(const char *text, size_t len, double max_count,
		       struct flame_parse_stats *ret)
{
	const char *end = text + len;
	double sum[2] = { 0 };
	uint64_t line_no = 0;

	while (text < end) {
		const char *nl = memchr(text, '\n', (size_t)(end - text));
		const char *eol = nl ? nl : end;
		int columns = 2;
		struct line l;
		enum line_kind k;

		line_no++;
		k = parse_line(text, (size_t)(eol - text), &columns, &l);
		if (!counts_within(max_count, text, (size_t)(eol - text), k, &l, sum, line_no, ret))
			return -ERANGE;
		if (k == LINE_OK) {
			sum[0] += l.count;
			sum[1] += l.old;
		}
		text = nl ? nl + 1 : end;
	}
	return 0;
}

static int cmp_name(const void *a, const void *b, void *arg)
{
	const struct strtab *t = arg;

	return strcmp(t->strs[*(const uint32_t *)a].s, t->strs[*(const uint32_t *)b].s);
}

/* Sibling order. flamegraph.pl sorts whole lines, so frames compare as if
 * each were followed by the ';' before its callee: "foo2" before "foo",
 * "b c" before "b" (names hold no ';'). */
static int cmp_frame(const void *a, const void *b, void *arg)
{
	const struct strtab *t = arg;
	const unsigned char *p = (const unsigned char *)t->strs[*(const uint32_t *)a].s;
	const unsigned char *q = (const unsigned char *)t->strs[*(const uint32_t *)b].s;

	for (;; p++, q++) {
		unsigned x = *p ? *p : ';', y = *q ? *q : ';';

		if (x != y)
			return x < y ? -1 : 1;
		if (!*p)
			return 0;
	}
}

/* rank[id]: the position of string id in sibling order. */
static uint32_t *names_rank(const struct strtab *t)
{
	uint32_t *order = malloc(((size_t)t->n + 1) * sizeof(*order));
	uint32_t *rank = malloc(((size_t)t->n + 1) * sizeof(*rank));

	if (!order || !rank) {
		free(order);
		free(rank);
		return NULL;
	}
	for (uint32_t i = 0; i < t->n; i++)
		order[i] = i;
	qsort_r(order, t->n, sizeof(*order), cmp_frame, (void *)t);
	for (uint32_t i = 0; i < t->n; i++)
		rank[order[i]] = i;
	free(order);
	return rank;
}

struct sort_ctx {
	const struct build_node *nodes;
	const uint32_t *rank;
};

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	uint32_t ra = c->rank[c->nodes[*(const uint32_t *)a].name & NAME_MASK];
	uint32_t rb = c->rank[c->nodes[*(const uint32_t *)b].name & NAME_MASK];

	return ra < rb ? -1 : ra > rb;
}

static void sort_children(uint32_t *ids, size_t n, const struct sort_ctx *c)
{
	if (n > 16) {
		qsort_r(ids, n, sizeof(*ids), cmp_child, (void *)c);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		uint32_t id = ids[i];
		size_t j = i;

		for (; j > 0 && cmp_child(&ids[j - 1], &id, (void *)c) > 0; j--)
			ids[j] = ids[j - 1];
		ids[j] = id;
	}
}

/*
 * Final positions: *ret_pos[id] and its inverse *ret_order[k]. Children of a
 * node are contiguous, ordered by name (or by creation in a flame chart),
 * and the groups are laid out in depth-first order of their parents, so a
 * renderer walking the tree reads memory mostly forward, and a node's
 * position is below its children's. 0 or -ENOMEM.
 */
static int layout(struct flame *f, uint32_t **ret_pos, uint32_t **ret_order)
{
	uint32_t n = f->n_nodes, *start, *group, *pos = NULL, *stack = NULL, *rank = NULL;
	uint32_t next = 1, top = 0;

	start = table_alloc(((size_t)n + 1) * sizeof(*start));
	group = table_alloc((size_t)n * sizeof(*group));
	if (!f->opts.flamechart)
		rank = names_rank(&f->names);
	if (!start || !group || (!f->opts.flamechart && !rank))
		goto enomem;
	for (uint32_t id = 1; id < n; id++)
		start[f->nodes[id].parent]++;
	for (uint32_t id = 0, at = 1; id <= n; id++) {
		uint32_t c = id < n ? start[id] : 0;

		start[id] = at;
		at += c;
	}
	/* start[p] serves as p's cursor, then is moved back. */
	for (uint32_t id = 1; id < n; id++)
		group[start[f->nodes[id].parent]++] = id;
	for (uint32_t id = n; id > 0; id--)
		start[id] = start[id - 1];
	start[0] = 1;
	if (rank) {
		struct sort_ctx ctx = { f->nodes, rank };

		for (uint32_t id = 0; id < n; id++)
			sort_children(group + start[id], start[id + 1] - start[id], &ctx);
		free(rank);
		rank = NULL;
	}
	pos = table_alloc((size_t)n * sizeof(*pos));
	stack = table_alloc((size_t)n * sizeof(*stack));
	if (!pos || !stack)
		goto enomem;
	pos[0] = 0;
	stack[top++] = 0;
	while (top) {
		uint32_t u = stack[--top], first = start[u], count = start[u + 1] - first;

		for (uint32_t i = 0; i < count; i++)
			pos[group[first + i]] = next + i;
		next += count;
		for (uint32_t i = count; i-- > 0;)
			stack[top++] = group[first + i];
	}
	table_free(stack, (size_t)n * sizeof(*stack));
	table_free(start, ((size_t)n + 1) * sizeof(*start));
	for (uint32_t id = 0; id < n; id++)
		group[pos[id]] = id;
	*ret_pos = pos;
	*ret_order = group;
	return 0;
enomem:
	table_free(start, ((size_t)n + 1) * sizeof(*start));
	table_free(group, (size_t)n * sizeof(*group));
	free(rank);
	table_free(pos, (size_t)n * sizeof(*pos));
	table_free(stack, (size_t)n * sizeof(*stack));
	return -ENOMEM;
}

/* The build nodes in their final order, parents as positions: gathered
 * into new arrays (independent loads, unlike an in-place permutation,
 * whose cache misses come one after the other). 0 or -ENOMEM. */
static int permute(struct flame *f, const uint32_t *pos, const uint32_t *order)
{
	uint32_t n = f->n_nodes;
	struct build_node *nodes = table_alloc((size_t)n * sizeof(*nodes));
	double *old = NULL;

	if (f->self_old)
		old = table_alloc((size_t)n * sizeof(*old));
	if (!nodes || (f->self_old && !old)) {
		table_free(nodes, (size_t)n * sizeof(*nodes));
		table_free(old, (size_t)n * sizeof(*old));
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < n; k++) {
		nodes[k] = f->nodes[order[k]];
		nodes[k].parent = k ? pos[nodes[k].parent] : 0;
		if (old)
			old[k] = f->self_old[order[k]];
	}
	table_free(f->nodes, (size_t)f->cap_nodes * sizeof(*f->nodes));
	table_free(f->self_old, (size_t)f->cap_old * sizeof(*f->self_old));
	f->nodes = nodes;
	f->self_old = old;
	f->cap_nodes = n;
	f->cap_old = old ? n : 0;
	return 0;
}

_Static_assert(sizeof(struct flame_node) >= sizeof(struct build_node), "expanded in place");

/*
 * The final tree, in the build nodes' own memory: grown by realloc, then
 * each node expanded from the last one down (node k's new place starts at or
 * after its old one, so nothing is overwritten before it is read). Peak
 * memory is the final tree plus the names.
 */
const struct flame_node *flame_root(struct flame *f)
{
	uint32_t n = f->n_nodes, *pos, *order;
	bool diff = f->stats.differential, from_old = diff && f->opts.widths_from_old;
	struct flame_node *t;
	double scale = 1;
	int r;

	if (f->tree)
		return f->tree;
	if (f->stats.lines == f->stats.invalid)
		return NULL;
	/* From here the build state is dismantled; after an ENOMEM below,
	 * the nodes are still a valid tree and a later call starts over. */
	f->merging = true;
	child_table_free(f);
	if (layout(f, &pos, &order) < 0)
		return NULL;
	r = permute(f, pos, order);
	table_free(pos, (size_t)n * sizeof(*pos));
	table_free(order, (size_t)n * sizeof(*order));
	if (r < 0)
		return NULL;
	t = table_realloc(f->nodes, (size_t)n * sizeof(*f->nodes), (size_t)n * sizeof(*t));
	if (!t)
		return NULL;
	f->nodes = NULL;
	f->cap_nodes = 0;
	for (uint32_t k = n; k-- > 0;) {
		struct build_node b;
		struct flame_node x;
		double old = diff ? f->self_old[k] : 0;

		/* memcpy: the bytes change type. */
		memcpy(&b, (char *)t + (size_t)k * sizeof(b), sizeof(b));
		x = (struct flame_node){
			.name = k ? f->names.strs[b.name & NAME_MASK].s : "",
			.value = from_old ? old : b.self, /* its own, for now */
			.delta = from_old ? b.self : old, /* the other column, for now */
			/* the parent's position, for now */
			.children = (struct flame_node *)(uintptr_t)(k ? b.parent : 0),
			.kernel = !!(b.name & KERNEL_BIT),
			.changed = !!(b.name & DIFF_BIT),
		};
		memcpy(&t[k], &x, sizeof(x));
	}
	for (uint32_t k = 1; k < n; k++) {
		struct flame_node *p = &t[(uintptr_t)t[k].children];

		t[k].children = NULL; /* until its first child comes */
		t[k].depth = p->depth + 1;
		if (!p->n_children++)
			p->children = &t[k];
	}
	/* Width column in value, the other one in delta, summed bottom-up. */
	for (uint32_t k = n; k-- > 0;) {
		for (size_t i = 0; i < t[k].n_children; i++) {
			t[k].value += t[k].children[i].value;
			t[k].delta += t[k].children[i].delta;
		}
	}
	build_free(f);
	free(f->names.strs);
	free(f->names.slots);
	f->names.strs = NULL;
	f->names.slots = NULL;

	f->stats.total = t[0].value;
	f->stats.total_other = diff ? t[0].delta : 0;
	if (diff && f->opts.normalize) {
		double old_total = from_old ? t[0].value : t[0].delta;
		double new_total = from_old ? t[0].delta : t[0].value;

		if (old_total > 0)
			scale = new_total / old_total;
	}
	for (uint32_t k = 0; k < n; k++) {
		struct flame_node *x = &t[k];
		double d = 0;

		if (diff)
			d = from_old ? x->delta - x->value * scale : x->value - x->delta * scale;
		x->delta = f->opts.negate && d != 0 ? -d : d; /* never -0 */
	}
	f->tree = t;
	f->n_tree = n;
	return t;
}

const struct flame_parse_stats *flame_stats(const struct flame *f)
{
	return &f->stats;
}

/* Differential folded text ------------------------------------------------ */

/* Per stack: the summed count of each input. */
struct diff_side {
	struct flame_parse_stats stats;
	bool decimal;
};

static int diff_read(struct strtab *t, double **counts, size_t *cap, int side, const char *text,
		     size_t len, bool strip, struct diff_side *ret)
{
	const char *end = text + len;
	char *buf = NULL;
	size_t buf_cap = 0;
	uint64_t line_no = 0;
	int r = 0;

	while (text < end) {
		const char *nl = memchr(text, '\n', (size_t)(end - text));
		const char *eol = nl ? nl : end;
		const char *stack;
		size_t stack_len;
		int columns = 2;
		struct line l;
		enum line_kind k;
		uint32_t id;

		line_no++;
		k = parse_line(text, (size_t)(eol - text), &columns, &l);
		text = nl ? nl + 1 : end;
		if (k == LINE_EMPTY)
			continue;
		ret->stats.lines++;
		if (k == LINE_INVALID) {
			if (!ret->stats.invalid++)
				ret->stats.first_invalid = line_no;
			continue;
		}
		ret->decimal |= l.decimal;
		ret->stats.total += l.count;
		stack = l.stack;
		stack_len = l.two_col_len; /* difffolded.pl reads one count */
		if (strip && has_hex(stack, stack_len)) {
			stack = strip_hex(stack, stack_len, &buf, &buf_cap, &stack_len);
			if (!stack) {
				r = -ENOMEM;
				break;
			}
		}
		r = strtab_intern(t, stack, stack_len, &id, NULL);
		if (r < 0)
			break;
		if ((size_t)id * 2 + 2 > *cap) {
			size_t old = *cap;

			if (array_grow(counts, cap, (size_t)id * 2 + 2, sizeof(**counts), 0) < 0) {
				r = -ENOMEM;
				break;
			}
			memset(*counts + old, 0, (*cap - old) * sizeof(**counts));
		}
		(*counts)[(size_t)id * 2 + side] += l.count;
	}
	free(buf);
	return r;
}

/* Longest count format_count() writes: DBL_MAX has 309 digits, then 7. */
#define COUNT_MAX 320

/* A count as flamegraph.pl reads it back: an integer, or up to 6 decimals
 * with trailing zeros dropped (never an exponent). buf holds COUNT_MAX. */
static size_t format_count(char *buf, double v, bool integral)
{
	int n;

	if (integral)
		return (size_t)snprintf(buf, COUNT_MAX, "%.0f", floor(v + 0.5));
	n = snprintf(buf, COUNT_MAX, "%.6f", v);
	while (n > 0 && buf[n - 1] == '0')
		n--;
	if (n > 0 && buf[n - 1] == '.')
		n--;
	buf[n] = '\0';
	return (size_t)n;
}

char *flame_diff_folded(const char *old_text, size_t old_len, const char *new_text, size_t new_len,
			bool normalize, bool strip_hex, struct flame_parse_stats *ret_old,
			struct flame_parse_stats *ret_new)
{
	struct strtab t = { 0 };
	struct diff_side side[2] = { 0 };
	double *counts = NULL;
	size_t cap = 0, size = 0, at = 0;
	uint32_t *order = NULL;
	char *out = NULL;
	bool integral;

	if (diff_read(&t, &counts, &cap, 0, old_text, old_len, strip_hex, &side[0]) < 0 ||
	    diff_read(&t, &counts, &cap, 1, new_text, new_len, strip_hex, &side[1]) < 0)
		goto fail;
	integral = !side[0].decimal && !side[1].decimal;
	/* difffolded.pl -n: int(OLD * total NEW / total OLD), truncated. */
	normalize =
		normalize && side[0].stats.total > 0 && side[0].stats.total != side[1].stats.total;
	order = malloc(((size_t)t.n + 1) * sizeof(*order));
	if (!order)
		goto fail;
	for (uint32_t i = 0; i < t.n; i++)
		order[i] = i;
	qsort_r(order, t.n, sizeof(*order), cmp_name, &t);
	for (uint32_t i = 0; i < t.n; i++) {
		const struct str *s = &t.strs[order[i]];
		const double *c = &counts[(size_t)order[i] * 2];
		if (array_grow(&out, &size, at + s->len + 2 * COUNT_MAX + 3, 1, 0) < 0)
			goto fail;
		memcpy(out + at, s->s, s->len);
		at += s->len;
		out[at++] = ' ';
		if (normalize)
			at += format_count(out + at,
					   trunc(c[0] * side[1].stats.total / side[0].stats.total),
					   true);
		else
			at += format_count(out + at, c[0], integral);
		out[at++] = ' ';
		at += format_count(out + at, c[1], integral);
		out[at++] = '\n';
	}
	if (!out) {
		out = malloc(1);
		if (!out)
			goto fail;
	}
	out[at] = '\0';
	if (ret_old)
		*ret_old = side[0].stats;
	if (ret_new)
		*ret_new = side[1].stats;
	free(order);
	free(counts);
	strtab_free(&t);
	return out;
fail:
	free(out);
	free(order);
	free(counts);
	strtab_free(&t);
	return NULL;
}
