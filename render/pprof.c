/*
 * pprof: see pprof.h. profile.proto needs only two of protobuf's wire
 * types, varints and length-delimited fields, so this file encodes them
 * with a few helpers instead of using protobuf-c, whose generated code
 * would need protoc and a build step for this one message. Samples are
 * encoded and compressed as they come; the tables they refer to (locations,
 * functions, strings) follow them, which protobuf allows: the fields of a
 * message may come in any order, and decoders resolve ids after reading
 * the whole profile.
 */
#include "pprof.h"

#include <math.h>

#include "flame.h"
#include "flame_palette.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* profile.proto's field numbers, by message. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };
enum { MAPPING_ID = 1, MAPPING_HAS_FUNCTIONS = 7 };
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3 };

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* The encoded profile goes to zlib in pieces of about this size. */
#define PPROF_FLUSH_BYTES (64 * 1024)

/* A byte buffer that grows; the first failure sticks in err. */
struct pb {
	uint8_t *p;
	size_t n, cap;
	int err;
};

static void pb_mem(struct pb *b, const void *p, size_t len)
{
	size_t cap;
	uint8_t *np;

	if (b->err || !len)
		return;
	if (len > b->cap - b->n) {
		for (cap = b->cap ? b->cap : 256; cap - b->n < len; cap *= 2) {
			if (cap > SIZE_MAX / 2) {
				b->err = -ENOMEM;
				return;
			}
		}
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, len);
	b->n += len;
}

/* Base 128, low groups first, the high bit set on all bytes but the last. */
static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (uint8_t)v;
	pb_mem(b, buf, n);
}

static void pb_key(struct pb *b, unsigned field, unsigned wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field (uint64, or int64 that is never negative here). proto3
 * leaves out fields that hold their default, 0. */
static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, WIRE_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *p, size_t len)
{
	pb_key(b, field, WIRE_LEN);
	pb_varint(b, len);
	pb_mem(b, p, len);
}

/* Appends the message (or packed array) built in sub as field, and empties
 * sub for the next one. */
static void pb_sub(struct pb *b, unsigned field, struct pb *sub)
{
	if (sub->err && !b->err)
		b->err = sub->err;
	pb_bytes(b, field, sub->p, sub->n);
	sub->n = 0;
}

/* pprof's values are int64. */
static uint64_t pprof_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : v;
}

/* The string table, with each frame name's location (= function) id. */
struct strtab {
	const char **strs; /* by index; [0] is "" */
	uint32_t *loc;	   /* by index: the location id of a frame of that name, 0: none */
	uint32_t n, cap;
	uint32_t *slots; /* index + 1; 0: empty */
	size_t mask;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

static int strtab_rehash(struct strtab *t, size_t n_slots)
{
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++) {
		size_t j = hash_str(t->strs[i]) & (n_slots - 1);

		while (slots[j])
			j = (j + 1) & (n_slots - 1);
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = n_slots - 1;
	return 0;
}

/* The index of s (which must outlive t), added if new; -ENOMEM. */
static int64_t strtab_index(struct strtab *t, const char *s)
{
	size_t j;

	if (t->slots) {
		for (j = hash_str(s) & t->mask; t->slots[j]; j = (j + 1) & t->mask) {
			if (!strcmp(t->strs[t->slots[j] - 1], s))
				return t->slots[j] - 1;
		}
	}
	if (t->n >= UINT32_MAX / 2)
		return -ENOMEM;
	if (!t->slots || (size_t)(t->n + 1) * 2 > t->mask + 1) {
		if (strtab_rehash(t, t->slots ? (t->mask + 1) * 2 : 256) < 0)
			return -ENOMEM;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		const char **strs = reallocarray(t->strs, cap, sizeof(*strs));
		uint32_t *loc;

		if (!strs)
			return -ENOMEM;
		t->strs = strs;
		loc = reallocarray(t->loc, cap, sizeof(*loc));
		if (!loc)
			return -ENOMEM;
		t->loc = loc;
		t->cap = cap;
	}
	for (j = hash_str(s) & t->mask; t->slots[j];)
		j = (j + 1) & t->mask;
	t->slots[j] = t->n + 1;
	t->strs[t->n] = s;
	t->loc[t->n] = 0;
	return t->n++;
}

/* gzip onto a FILE; the first failure sticks in err. */
struct gz {
	z_stream z;
	FILE *out;
	int err;
	uint8_t buf[64 * 1024];
};

static void gz_put(struct gz *g, const uint8_t *p, size_t len, int flush)
{
	do {
		uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
		int last = chunk == len ? flush : Z_NO_FLUSH;
		int r;

		g->z.next_in = (Bytef *)p;
		g->z.avail_in = chunk;
		do {
			size_t have;

			g->z.next_out = g->buf;
			g->z.avail_out = sizeof(g->buf);
			r = deflate(&g->z, last);
			if (r == Z_STREAM_ERROR) {
				g->err = -EIO;
				return;
			}
			have = sizeof(g->buf) - g->z.avail_out;
			if (have && !g->err && fwrite(g->buf, 1, have, g->out) != have)
				g->err = errno ? -errno : -EIO;
		} while (g->z.avail_out == 0);
		p += chunk;
		len -= chunk;
	} while (len);
}

struct enc {
	struct strtab st;
	uint32_t *loc_str; /* by location id - 1: its frame name's string index */
	uint32_t n_locs, locs_cap;
	uint32_t *frames; /* one row's frames as string indices, root first */
	size_t frames_cap;
	struct pb top, msg, sub; /* the profile, a message in it, a message in that */
	struct gz *gz;
	int err;
	/* String indices used by every sample. */
	uint32_t key_comm, key_pid, key_tid, key_state, key_kind;
	uint32_t key_cgroup, key_unit, key_container, key_pod, key_ns_pid;
};

static uint32_t enc_str(struct enc *e, const char *s)
{
	int64_t i = strtab_index(&e->st, s);

	if (i < 0) {
		e->err = -ENOMEM;
		return 0;
	}
	return (uint32_t)i;
}

/* The location id of the frame named by string index s, new ones numbered
 * from 1 as they come. */
static uint32_t enc_loc(struct enc *e, uint32_t s)
{
	if (e->err)
		return 0;
	if (!e->st.loc[s]) {
		if (e->n_locs == e->locs_cap) {
			uint32_t cap = e->locs_cap ? e->locs_cap * 2 : 256;
			uint32_t *l = reallocarray(e->loc_str, cap, sizeof(*l));

			if (!l) {
				e->err = -ENOMEM;
				return 0;
			}
			e->loc_str = l;
			e->locs_cap = cap;
		}
		e->loc_str[e->n_locs++] = s;
		e->st.loc[s] = e->n_locs;
	}
	return e->st.loc[s];
}

static void enc_push(struct enc *e, size_t *n, const char *frame)
{
	uint32_t s = enc_str(e, frame);

	if (e->err)
		return;
	if (*n == e->frames_cap) {
		size_t cap = e->frames_cap ? e->frames_cap * 2 : 128;
		uint32_t *f = reallocarray(e->frames, cap, sizeof(*f));

		if (!f) {
			e->err = -ENOMEM;
			return;
		}
		e->frames = f;
		e->frames_cap = cap;
	}
	e->frames[(*n)++] = s;
}

/* The waker part, without its "-" delimiters (between a waker's kernel and
 * user frames): pprof has no kernel/user distinction to draw. */
static void row_chain(const struct proto_sample *r, pprof_frame_cb *cb, void *arg)
{
	for (size_t i = 0; i < r->n_chain; i++)
		if (strcmp(r->chain[i], "-"))
			cb(arg, r->chain[i]);
}

void pprof_row_frames(const struct proto_sample *r, pprof_frame_cb *cb, void *arg)
{
	const char *kind = r->kind ? r->kind : "offcpu";

	if (!strcmp(kind, "wakeup")) {
		row_chain(r, cb, arg);
		return;
	}
	for (size_t i = 0; i < r->n_ustack; i++)
		cb(arg, r->ustack[i]);
	for (size_t i = 0; i < r->n_kstack; i++)
		cb(arg, r->kstack[i]);
	if (!strcmp(kind, "runq")) {
		cb(arg, "[runqueue]");
	} else if (!strcmp(kind, "oncpu")) {
		cb(arg, KIND_FRAME_ONCPU);
	} else if (!strcmp(kind, "offwake") || !strcmp(kind, "chain")) {
		cb(arg, "--");
		row_chain(r, cb, arg);
	}
}

/* A row's frames as string indices into e->frames. */
struct enc_frames {
	struct enc *e;
	size_t n;
};

static void enc_frame_cb(void *arg, const char *frame)
{
	struct enc_frames *f = arg;

	enc_push(f->e, &f->n, frame);
}

/* The frames of the row, root first; returns how many. */
static size_t enc_row_frames(struct enc *e, const struct proto_sample *r)
{
	struct enc_frames f = { e, 0 };

	pprof_row_frames(r, enc_frame_cb, &f);
	return f.n;
}

static void enc_label_str(struct enc *e, uint32_t key, const char *value)
{
	uint32_t v = enc_str(e, value);

	pb_uint(&e->sub, LABEL_KEY, key);
	pb_uint(&e->sub, LABEL_STR, v);
	pb_sub(&e->msg, SAMPLE_LABEL, &e->sub);
}

static void enc_label_num(struct enc *e, uint32_t key, uint64_t value)
{
	pb_uint(&e->sub, LABEL_KEY, key);
	pb_uint(&e->sub, LABEL_NUM, pprof_i64(value));
	pb_sub(&e->msg, SAMPLE_LABEL, &e->sub);
}

/* Compresses what top holds so far, once it is large enough (or always,
 * with Z_FINISH). */
static void enc_flush(struct enc *e, int flush)
{
	if (e->top.err && !e->err)
		e->err = e->top.err;
	if (e->err || (flush == Z_NO_FLUSH && e->top.n < PPROF_FLUSH_BYTES))
		return;
	gz_put(e->gz, e->top.p, e->top.n, flush);
	e->top.n = 0;
	if (e->gz->err)
		e->err = e->gz->err;
}

static void enc_sample(struct enc *e, const struct proto_sample *r)
{
	size_t n = enc_row_frames(e, r);

	if (e->err)
		return;
	/* Leaf first; packed, as proto3 writes repeated numbers. */
	for (size_t i = n; i-- > 0;)
		pb_varint(&e->sub, enc_loc(e, e->frames[i]));
	if (n)
		pb_sub(&e->msg, SAMPLE_LOCATION_ID, &e->sub);
	pb_varint(&e->sub, pprof_i64(r->count));
	pb_varint(&e->sub, pprof_i64(r->value_ns));
	pb_sub(&e->msg, SAMPLE_VALUE, &e->sub);
	enc_label_str(e, e->key_comm, r->comm);
	enc_label_num(e, e->key_pid, r->tgid);
	enc_label_num(e, e->key_tid, r->pid);
	enc_label_str(e, e->key_state, r->state);
	enc_label_str(e, e->key_kind, r->kind ? r->kind : "offcpu");
	/* Who, where known: the labels Pyroscope and pprof's -tagfocus filter on. */
	if (r->cgroup && *r->cgroup)
		enc_label_str(e, e->key_cgroup, r->cgroup);
	if (r->unit)
		enc_label_str(e, e->key_unit, r->unit);
	if (r->container)
		enc_label_str(e, e->key_container, r->container);
	if (r->pod)
		enc_label_str(e, e->key_pod, r->pod);
	if (r->ns_pid)
		enc_label_num(e, e->key_ns_pid, r->ns_pid);
	pb_sub(&e->top, PROFILE_SAMPLE, &e->msg);
	enc_flush(e, Z_NO_FLUSH);
}

static void enc_value_type(struct enc *e, unsigned field, uint32_t type, uint32_t unit)
{
	pb_uint(&e->msg, VALUE_TYPE_TYPE, type);
	pb_uint(&e->msg, VALUE_TYPE_UNIT, unit);
	pb_sub(&e->top, field, &e->msg);
}

/* Everything after the samples: the tables and the profile's own fields. */
/* Ends an encoding: its first error, or the flush's; frees what it holds. */
static int enc_finish(struct enc *e, FILE *out)
{
	int r;

	if (e->msg.err || e->sub.err || e->top.err)
		e->err = e->err ? e->err : -ENOMEM;
	r = e->err;
	if (!r && fflush(out) == EOF)
		r = errno ? -errno : -EIO;
	deflateEnd(&e->gz->z);
	free(e->gz);
	free(e->top.p);
	free(e->msg.p);
	free(e->sub.p);
	free(e->frames);
	free(e->loc_str);
	free(e->st.strs);
	free(e->st.loc);
	free(e->st.slots);
	return r;
}

static void enc_tail(struct enc *e, uint32_t type, uint32_t unit, uint32_t comment)
{
	/* One mapping that says the frames are symbolized already, or pprof
	 * tries to symbolize them and warns that it has no binary. */
	pb_uint(&e->msg, MAPPING_ID, 1);
	pb_uint(&e->msg, MAPPING_HAS_FUNCTIONS, 1);
	pb_sub(&e->top, PROFILE_MAPPING, &e->msg);
	for (uint32_t id = 1; id <= e->n_locs && !e->err; id++) {
		pb_uint(&e->msg, LOCATION_ID, id);
		pb_uint(&e->msg, LOCATION_MAPPING_ID, 1);
		pb_uint(&e->sub, LINE_FUNCTION_ID, id);
		pb_sub(&e->msg, LOCATION_LINE, &e->sub);
		pb_sub(&e->top, PROFILE_LOCATION, &e->msg);
		enc_flush(e, Z_NO_FLUSH);
	}
	for (uint32_t id = 1; id <= e->n_locs && !e->err; id++) {
		pb_uint(&e->msg, FUNCTION_ID, id);
		pb_uint(&e->msg, FUNCTION_NAME, e->loc_str[id - 1]);
		/* pprof shows a system_name that differs from the name. */
		pb_uint(&e->msg, FUNCTION_SYSTEM_NAME, e->loc_str[id - 1]);
		pb_sub(&e->top, PROFILE_FUNCTION, &e->msg);
		enc_flush(e, Z_NO_FLUSH);
	}
	/* Every block is counted, none sampled: a period of 1 ns. */
	enc_value_type(e, PROFILE_PERIOD_TYPE, type, unit);
	pb_uint(&e->top, PROFILE_PERIOD, 1);
	if (comment) {
		pb_varint(&e->sub, comment);
		pb_sub(&e->top, PROFILE_COMMENT, &e->sub);
	}
	pb_uint(&e->top, PROFILE_DEFAULT_SAMPLE_TYPE, type);
	/* Last, so that it holds every string used before. */
	for (uint32_t i = 0; i < e->st.n && !e->err; i++) {
		pb_bytes(&e->top, PROFILE_STRING_TABLE, e->st.strs[i], strlen(e->st.strs[i]));
		enc_flush(e, Z_NO_FLUSH);
	}
	enc_flush(e, Z_FINISH);
}

const char *pprof_sample_type_name(enum proto_kind kind, bool oncpu)
{
	if (oncpu)
		return "wall";
	if (kind == PROTO_KIND_ONCPU)
		return "on_cpu";
	return kind == PROTO_KIND_OFFCPU ? "off_cpu" : proto_kind_name(kind);
}

int pprof_write(const struct proto_sample *rows, size_t n, const struct pprof_opts *opts, FILE *out)
{
	struct enc e = { 0 };
	uint32_t blocks, count, type, unit, comment = 0;
	int r;

	e.gz = malloc(sizeof(*e.gz));
	if (!e.gz)
		return -ENOMEM;
	memset(&e.gz->z, 0, sizeof(e.gz->z));
	e.gz->out = out;
	e.gz->err = 0;
	/* windowBits 15 + 16: a gzip wrapper, as pprof files are on disk. */
	if (deflateInit2(&e.gz->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(e.gz);
		return -ENOMEM;
	}
	/* The order fixes the first indices: tests check the bytes. */
	enc_str(&e, ""); /* string_table[0] must be "" */
	blocks = enc_str(&e, "blocks");
	count = enc_str(&e, "count");
	type = enc_str(&e, pprof_sample_type_name(opts->kind, opts->oncpu));
	unit = enc_str(&e, "nanoseconds");
	e.key_comm = enc_str(&e, "comm");
	e.key_pid = enc_str(&e, "pid");
	e.key_tid = enc_str(&e, "tid");
	e.key_state = enc_str(&e, "state");
	e.key_kind = enc_str(&e, "kind");
	e.key_cgroup = enc_str(&e, "cgroup");
	e.key_unit = enc_str(&e, "unit");
	e.key_container = enc_str(&e, "container");
	e.key_pod = enc_str(&e, "pod");
	e.key_ns_pid = enc_str(&e, "ns_pid");
	if (opts->comment)
		comment = enc_str(&e, opts->comment);

	/* The count first, as profile.proto's convention has it, and the time
	 * last, which readers that ignore default_sample_type pick. */
	enc_value_type(&e, PROFILE_SAMPLE_TYPE, blocks, count);
	enc_value_type(&e, PROFILE_SAMPLE_TYPE, type, unit);
	pb_uint(&e.top, PROFILE_TIME_NANOS, opts->time_nanos > 0 ? (uint64_t)opts->time_nanos : 0);
	pb_uint(&e.top, PROFILE_DURATION_NANOS,
		opts->duration_nanos > 0 ? (uint64_t)opts->duration_nanos : 0);
	for (size_t i = 0; i < n && !e.err; i++)
		enc_sample(&e, &rows[i]);
	if (!e.err)
		enc_tail(&e, type, unit, comment);
	r = enc_finish(&e, out);
	return r;
}

/* ---- folded stacks (offcpuctl flamegraph|diff --format pprof) ---------- */

/* A count of folded text as pprof's int64: rounded, negative as 0. */
static uint64_t folded_value(double v)
{
	if (!(v > 0))
		return 0;
	return v >= 9.2e18 ? (uint64_t)INT64_MAX : (uint64_t)llround(v);
}

/* One sample per frame with a count of its own: the path to it, leaf
 * first, and its own count (before and after, differential). */
static void enc_flame_sample(struct enc *e, size_t depth, const struct flame_node *n, bool diff)
{
	double change = n->delta, self = flame_node_self(n);

	for (size_t i = 0; i < n->n_children; i++)
		change -= n->children[i].delta;
	if (self == 0 && (!diff || change == 0))
		return; /* no count of its own */
	for (size_t i = depth; i-- > 0;)
		pb_varint(&e->sub, enc_loc(e, e->frames[i]));
	if (depth)
		pb_sub(&e->msg, SAMPLE_LOCATION_ID, &e->sub);
	if (diff)
		pb_varint(&e->sub, pprof_i64(folded_value(self - change)));
	pb_varint(&e->sub, pprof_i64(folded_value(self)));
	pb_sub(&e->msg, SAMPLE_VALUE, &e->sub);
	pb_sub(&e->top, PROFILE_SAMPLE, &e->msg);
	enc_flush(e, Z_NO_FLUSH);
}

/* pprof's unit for offcpuctl's and flamegraph.pl's usual count names. */
static const char *folded_unit(const char *countname)
{
	static const char *const units[][2] = {
		{ "us", "microseconds" }, { "ns", "nanoseconds" }, { "ms", "milliseconds" },
		{ "s", "seconds" },	  { "bytes", "bytes" },	   { "samples", "count" },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(countname, units[i][0]))
			return units[i][1];
	}
	return "count";
}

int pprof_write_folded(struct flame *f, const char *countname, FILE *out)
{
	const struct flame_node *root = flame_root(f);
	struct enc e = { 0 };
	const struct flame_node **stack = NULL;
	size_t *next = NULL, cap = 0, depth = 0;
	uint32_t type, before = 0, unit;
	bool diff = flame_stats(f)->differential;
	char *name, **owned = NULL;
	size_t n_owned = 0;
	int r;

	if (!root)
		return flame_stats(f)->lines > flame_stats(f)->invalid ? -ENOMEM : -ENODATA;
	e.gz = malloc(sizeof(*e.gz));
	if (!e.gz)
		return -ENOMEM;
	memset(&e.gz->z, 0, sizeof(e.gz->z));
	e.gz->out = out;
	e.gz->err = 0;
	if (deflateInit2(&e.gz->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(e.gz);
		return -ENOMEM;
	}
	enc_str(&e, ""); /* string_table[0] must be "" */
	countname = countname ? countname : "samples";
	unit = enc_str(&e, folded_unit(countname));
	if (diff) {
		before = enc_str(&e, "before");
		type = enc_str(&e, "after");
		enc_value_type(&e, PROFILE_SAMPLE_TYPE, before, unit);
	} else {
		type = enc_str(&e, countname);
	}
	enc_value_type(&e, PROFILE_SAMPLE_TYPE, type, unit);

	/* Depth first: stack[0..depth) the frames above the next one, next[]
	 * their next child; e.frames[k] names stack[k + 1]. */
	stack = malloc(64 * sizeof(*stack));
	next = malloc(64 * sizeof(*next));
	cap = 64;
	if (!stack || !next)
		e.err = -ENOMEM;
	else
		enc_flame_sample(&e, 0, root, diff);
	if (!e.err) {
		stack[0] = root;
		next[0] = 0;
		depth = 1;
	}
	while (depth && !e.err) {
		const struct flame_node *p = stack[depth - 1], *n;
		size_t len, d = depth - 1;

		if (next[depth - 1] == p->n_children) {
			depth--;
			continue;
		}
		n = &p->children[next[depth - 1]++];
		/* The frame's name without an annotation, as drawn; the
		 * string table keeps pointers, so a cut name is kept too. */
		len = flame_annotation_strip(n->name, strlen(n->name));
		name = (char *)n->name;
		if (n->name[len]) {
			char **o = reallocarray(owned, n_owned + 1, sizeof(*o));

			if (!o) {
				e.err = -ENOMEM;
				break;
			}
			owned = o;
			name = strndup(n->name, len);
			if (!name) {
				e.err = -ENOMEM;
				break;
			}
			owned[n_owned++] = name;
		}
		enc_push(&e, &d, name);
		if (!e.err)
			enc_flame_sample(&e, d, n, diff);
		if (!n->n_children)
			continue;
		if (depth == cap) {
			const struct flame_node **s2 = reallocarray(stack, cap * 2, sizeof(*s2));
			size_t *n2;

			if (!s2) {
				e.err = -ENOMEM;
				break;
			}
			stack = s2;
			n2 = reallocarray(next, cap * 2, sizeof(*n2));
			if (!n2) {
				e.err = -ENOMEM;
				break;
			}
			next = n2;
			cap *= 2;
		}
		stack[depth] = n;
		next[depth] = 0;
		depth++;
	}
	if (!e.err)
		enc_tail(&e, type, unit, 0);
	r = enc_finish(&e, out);
	free(stack);
	free(next);
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	free(owned);
	return r;
}
