/*
 * cpython_code: see cpython_code.h. An entry keeps a code object's names as
 * UTF-8, its line table decoded into ranges of byte offsets with a line
 * each, and the header fields it was read from, to re-check them. Nothing
 * read from the process is trusted: every length is bounded, every pointer
 * is read through process_vm_readv, which fails cleanly on bad addresses.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include "cpython_code.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <linux/types.h>

#include "array.h"
#include "frame.h"
#include "hashtab.h"
#include "offcpu.h"

/* The reasons of "[python: WHY]", by enum cpython_code_reason. */
#define CPYTHON_CODE_REASONS(X)                                                                    \
	X(EXITED, "exited")                                                                        \
	X(FRAME, "unreadable frame")                                                               \
	X(DEPTH, "deeper than the stack")                                                          \
	X(LOOP, "frame chain loops")                                                               \
	X(UNREADABLE, "unreadable code")                                                           \
	X(NOT_CODE, "not a code object")                                                           \
	X(VERSION, "unknown version")                                                              \
	X(NOMEM, "out of memory")

#define CPYTHON_CODE_REASON_ENUM(id, text) CPYTHON_CODE_##id,
#define CPYTHON_CODE_REASON_TEXT(id, text) [CPYTHON_CODE_##id] = text,
enum cpython_code_reason { CPYTHON_CODE_REASONS(CPYTHON_CODE_REASON_ENUM) };
static const char *const cpython_code_reasons[] = { CPYTHON_CODE_REASONS(
	CPYTHON_CODE_REASON_TEXT) };

/* Object layouts common to 3.10-3.13 (x86-64, release builds). */
#define PY_OB_TYPE	 8  /* PyObject.ob_type */
#define PY_OB_SIZE	 16 /* PyVarObject.ob_size */
#define PY_TYPE_NAME	 24 /* PyTypeObject.tp_name */
#define PY_STR_LENGTH	 16 /* PyASCIIObject.length, in code points */
#define PY_STR_STATE	 32 /* PyASCIIObject.state, a bitfield */
#define PY_STR_KIND(s)	 (((s) >> 2) & 7)
#define PY_STR_COMPACT	 (1u << 5)
#define PY_STR_ASCII	 (1u << 6)
#define PY_BYTES_DATA	 32 /* PyBytesObject.ob_sval */
#define PY_TYPE_NAME_MAX 8  /* of the names checked, with the NUL */

/* Where one version keeps what is read, in bytes (from its DWARF). */
struct cpython_code_layout {
	uint8_t firstlineno, filename, name, qualname, linetable; /* in PyCodeObject */
	uint8_t ascii_data, compact_data; /* in a compact str: its characters */
	/* co_linetable is 3.11's location table, else 3.10's */
	bool locations;
};

#define CPYTHON_CODE_MINOR_MIN	10
#define CPYTHON_CODE_MINOR_MAX	13
#define CPYTHON_CODE_HEADER_MAX 144 /* the most of a code object's header read */

static const struct cpython_code_layout cpython_code_layouts[] = {
	/* 3.10 has no co_qualname: co_name stands in */
	{ 40, 104, 112, 112, 120, 48, 72, false },
	{ 72, 112, 120, 128, 136, 48, 72, true },
	{ 68, 112, 120, 128, 136, 40, 56, true },
	{ 68, 112, 120, 128, 136, 40, 56, true },
};

/* The header fields an entry was read from: equal on re-check, or read
 * again. Compared bytewise: no padding left uninitialized. */
struct cpython_code_fields {
	uint64_t type, filename, name, qualname, linetable;
	int32_t firstlineno;
	uint32_t pad;
};

struct cpython_code_range {
	uint32_t start; /* byte offset of its first instruction */
	int32_t line;	/* -1: no line */
};

struct cpython_code_key {
	uint32_t tgid, pad;
	uint64_t addr;
};

struct cpython_code_entry {
	struct cpython_code_fields fields;
	uint64_t checked_pass, used_pass;
	char *name, *file; /* qualname; the base name of co_filename */
	struct cpython_code_range *ranges;
	size_t n_ranges;
	size_t bytes;	   /* held, counted against CPYTHON_CODE_BYTES_MAX */
	uint32_t end;	   /* byte offset past the last range */
	int32_t last_line; /* of the last range that has one; -1: none */
	unsigned minor;
};

struct cpython_code {
	struct hashtab *entries; /* cpython_code_key -> cpython_code_entry */
	/* the keys of entries to drop, collected before the removals (which
	 * move entries); room for every entry, so dropping never allocates */
	struct cpython_code_key *scratch;
	size_t scratch_cap;
	uint64_t pass; /* from 1: an entry's 0 is "never" */
	size_t bytes;
};

int cpython_code_new(struct cpython_code **ret)
{
	struct cpython_code *c = calloc(1, sizeof(*c));

	if (!c || hashtab_new(sizeof(struct cpython_code_key), sizeof(struct cpython_code_entry),
			      &c->entries) < 0) {
		free(c);
		return -ENOMEM;
	}
	c->pass = 1;
	*ret = c;
	return 0;
}

static void cpython_code__entry_clear(struct cpython_code_entry *e)
{
	free(e->name);
	free(e->file);
	free(e->ranges);
}

void cpython_code_free(struct cpython_code *c)
{
	size_t pos = 0;
	void *value;

	if (!c)
		return;
	while (hashtab_next(c->entries, &pos, NULL, &value))
		cpython_code__entry_clear(value);
	hashtab_free(c->entries);
	free(c->scratch);
	free(c);
}

void cpython_code_pass(struct cpython_code *c)
{
	c->pass++;
}

size_t cpython_code_count(const struct cpython_code *c)
{
	return hashtab_count(c->entries);
}

static void cpython_code__drop(struct cpython_code *c, const struct cpython_code_key *key)
{
	struct cpython_code_entry *e = hashtab_get(c->entries, key);

	if (!e)
		return;
	c->bytes -= e->bytes;
	cpython_code__entry_clear(e);
	hashtab_remove(c->entries, key);
}

typedef bool cpython_code_match_fn(const struct cpython_code_key *key,
				   const struct cpython_code_entry *e, const void *arg);

/* Drops the entries match() picks; returns how many. */
static size_t cpython_code__drop_matching(struct cpython_code *c, cpython_code_match_fn *match,
					  const void *arg)
{
	const void *key;
	void *value;
	size_t pos = 0, n = 0;

	while (hashtab_next(c->entries, &pos, &key, &value))
		if (match(key, value, arg))
			c->scratch[n++] = *(const struct cpython_code_key *)key;
	for (size_t i = 0; i < n; i++)
		cpython_code__drop(c, &c->scratch[i]);
	return n;
}

static bool cpython_code__of_tgid(const struct cpython_code_key *key,
				  const struct cpython_code_entry *e, const void *arg)
{
	(void)e;
	return key->tgid == *(const uint32_t *)arg;
}

static bool cpython_code__unused(const struct cpython_code_key *key,
				 const struct cpython_code_entry *e, const void *arg)
{
	(void)key;
	return e->used_pass != *(const uint64_t *)arg;
}

static bool cpython_code__any(const struct cpython_code_key *key,
			      const struct cpython_code_entry *e, const void *arg)
{
	(void)key, (void)e, (void)arg;
	return true;
}

void cpython_code_forget(struct cpython_code *c, uint32_t tgid)
{
	cpython_code__drop_matching(c, cpython_code__of_tgid, &tgid);
}

static bool cpython_code__full(const struct cpython_code *c, const struct cpython_code_entry *fresh)
{
	return cpython_code_count(c) >= CPYTHON_CODE_ENTRIES_MAX ||
	       c->bytes + fresh->bytes > CPYTHON_CODE_BYTES_MAX;
}

/* Caches fresh under key, making room first when a bound would be passed.
 * Returns the entry, or NULL on ENOMEM (fresh is then the caller's). */
static struct cpython_code_entry *cpython_code__insert(struct cpython_code *c,
						       const struct cpython_code_key *key,
						       const struct cpython_code_entry *fresh)
{
	struct cpython_code_entry *e;

	if (cpython_code__full(c, fresh)) {
		cpython_code__drop_matching(c, cpython_code__unused, &c->pass);
		if (cpython_code__full(c, fresh))
			cpython_code__drop_matching(c, cpython_code__any, NULL);
	}
	if (array_grow(&c->scratch, &c->scratch_cap, cpython_code_count(c) + 1, sizeof(*c->scratch),
		       64) < 0)
		return NULL;
	e = hashtab_put(c->entries, key, NULL);
	if (!e)
		return NULL;
	*e = *fresh;
	c->bytes += e->bytes;
	return e;
}

/* Reads len bytes at addr of process tgid: 0, -ESRCH (it cannot be read at
 * all), or -EFAULT (not all of it is readable memory). */
static int cpython_code__read(uint32_t tgid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_readv((pid_t)tgid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 && errno == ESRCH ? -ESRCH : -EFAULT;
}

/* As cpython_code__read, but unreadable memory is -EINVAL: a pointer read
 * from an object that does not lead to one. */
static int cpython_code__read_obj(uint32_t tgid, uint64_t addr, void *buf, size_t len)
{
	int r = cpython_code__read(tgid, addr, buf, len);

	return r == -EFAULT ? -EINVAL : r;
}

/* Whether type (an ob_type) is named want (its tp_name): 0, -EINVAL, -ESRCH. */
static int cpython_code__check_type(uint32_t tgid, uint64_t type, const char *want)
{
	unsigned char obj[PY_TYPE_NAME + 8];
	char name[PY_TYPE_NAME_MAX];
	size_t len = strlen(want) + 1;
	uint64_t tp_name;
	int r;

	r = cpython_code__read_obj(tgid, type, obj, sizeof(obj));
	if (r < 0)
		return r;
	memcpy(&tp_name, obj + PY_TYPE_NAME, sizeof(tp_name));
	/* exactly len bytes: the name may end just before unmapped memory */
	r = cpython_code__read_obj(tgid, tp_name, name, len);
	if (r < 0)
		return r;
	return memcmp(name, want, len) ? -EINVAL : 0;
}

/* Appends cp as UTF-8; what UTF-8 cannot carry (surrogates, past U+10FFFF)
 * and NUL (which would cut the name) become U+FFFD. */
static char *cpython_code__utf8_put(char *o, uint32_t cp)
{
	if (!cp || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/*
 * Reads the str at addr: its ob_type into *ret_type and, if ret, at most
 * max of its code points (the first, or the last if tail) as a malloc'd
 * UTF-8 string. Only compact strs (which code objects' are) are read.
 * Returns 0, -EINVAL (not such a str), -ESRCH or -ENOMEM.
 */
static int cpython_code__read_str(uint32_t tgid, const struct cpython_code_layout *l, uint64_t addr,
				  size_t max, bool tail, uint64_t *ret_type, char **ret)
{
	unsigned char obj[PY_STR_STATE + 4], *raw;
	size_t n, kind, data, first;
	uint32_t state;
	int64_t length;
	char *s, *o;
	int r;

	r = cpython_code__read_obj(tgid, addr, obj, sizeof(obj));
	if (r < 0)
		return r;
	memcpy(ret_type, obj + PY_OB_TYPE, sizeof(*ret_type));
	memcpy(&length, obj + PY_STR_LENGTH, sizeof(length));
	memcpy(&state, obj + PY_STR_STATE, sizeof(state));
	kind = PY_STR_KIND(state);
	if (!(state & PY_STR_COMPACT) || length < 0 || length > INT32_MAX)
		return -EINVAL;
	if (state & PY_STR_ASCII) {
		if (kind != 1)
			return -EINVAL;
		data = l->ascii_data;
	} else {
		if (kind != 1 && kind != 2 && kind != 4)
			return -EINVAL;
		data = l->compact_data;
	}
	if (!ret)
		return 0;
	n = (size_t)length < max ? (size_t)length : max;
	first = tail ? (size_t)length - n : 0;
	raw = malloc(n * kind + 1);
	s = malloc(n * 4 + 1);
	if (!raw || !s) {
		free(raw);
		free(s);
		return -ENOMEM;
	}
	r = cpython_code__read_obj(tgid, addr + data + first * kind, raw, n * kind);
	o = s;
	for (size_t i = 0; r == 0 && i < n; i++) {
		uint16_t u16;
		uint32_t u32;

		/* an "ascii" str with bytes past 0x7f is read as latin-1: valid UTF-8 */
		if (kind == 1) {
			o = cpython_code__utf8_put(o, raw[i]);
		} else if (kind == 2) {
			memcpy(&u16, raw + 2 * i, sizeof(u16));
			o = cpython_code__utf8_put(o, u16);
		} else {
			memcpy(&u32, raw + 4 * i, sizeof(u32));
			o = cpython_code__utf8_put(o, u32);
		}
	}
	*o = '\0';
	free(raw);
	if (r < 0) {
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* Reads the bytes object at addr (at most CPYTHON_CODE_LINETABLE_MAX of
 * them): its ob_type, a malloc'd copy of its data and its size. Returns 0,
 * -EINVAL, -ESRCH or -ENOMEM. */
static int cpython_code__read_bytes(uint32_t tgid, uint64_t addr, uint64_t *ret_type,
				    unsigned char **ret, size_t *ret_len)
{
	unsigned char obj[PY_BYTES_DATA], *data;
	int64_t size;
	int r;

	r = cpython_code__read_obj(tgid, addr, obj, sizeof(obj));
	if (r < 0)
		return r;
	memcpy(&size, obj + PY_OB_SIZE, sizeof(size));
	if (size < 0 || size > CPYTHON_CODE_LINETABLE_MAX)
		return -EINVAL;
	data = malloc(size ? (size_t)size : 1);
	if (!data)
		return -ENOMEM;
	r = cpython_code__read_obj(tgid, addr + PY_BYTES_DATA, data, (size_t)size);
	if (r < 0) {
		free(data);
		return r;
	}
	memcpy(ret_type, obj + PY_OB_TYPE, sizeof(*ret_type));
	*ret = data;
	*ret_len = (size_t)size;
	return 0;
}

/* Appends a range from byte offset start with line (<= 0 or too large: no
 * line), or lets the last range go on if it has the same line. */
static int cpython_code__range_add(struct cpython_code_entry *e, size_t *cap, uint32_t start,
				   int64_t line)
{
	int32_t l = line > 0 && line <= INT32_MAX ? (int32_t)line : -1;

	if (l > 0)
		e->last_line = l;
	if (e->n_ranges && e->ranges[e->n_ranges - 1].line == l)
		return 0;
	if (array_grow(&e->ranges, cap, e->n_ranges + 1, sizeof(*e->ranges), 16) < 0)
		return -ENOMEM;
	e->ranges[e->n_ranges++] = (struct cpython_code_range){ .start = start, .line = l };
	return 0;
}

/*
 * 3.10's co_linetable (Objects/lnotab_notes.txt): pairs of an unsigned byte
 * delta and a signed line delta, -128 for "no line"; a pair covering no
 * bytes only moves the line. Lines are int64: a forged table of 2^19 pairs
 * of deltas cannot overflow them.
 */
static int cpython_code__decode_310(struct cpython_code_entry *e, size_t *cap,
				    const unsigned char *t, size_t len)
{
	int64_t line = e->fields.firstlineno;
	uint32_t end = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		uint32_t start = end;
		int delta = t[i + 1] < 128 ? t[i + 1] : t[i + 1] - 256;

		end += t[i];
		if (delta != -128)
			line += delta;
		if (start != end &&
		    cpython_code__range_add(e, cap, start, delta == -128 ? -1 : line) < 0)
			return -ENOMEM;
	}
	e->end = end;
	return 0;
}

/* A varint of the location table at t[*i]: 6-bit chunks, low first, bit 6
 * set on all but the last. Stops at the next entry's first byte (bit 7). */
static uint32_t cpython_code__varint(const unsigned char *t, size_t len, size_t *i)
{
	uint32_t v = 0;

	for (unsigned shift = 0; *i < len && !(t[*i] & 0x80); shift += 6) {
		unsigned char b = t[(*i)++];

		if (shift < 32)
			v |= (uint32_t)(b & 0x3f) << shift;
		if (!(b & 0x40))
			break;
	}
	return v;
}

/*
 * 3.11+'s location table (InternalDocs/locations.md): entries of a first
 * byte (bit 7 set; bits 3-6 a code, bits 0-2 the code units covered - 1)
 * and bytes with bit 7 clear. The line: code 15 none; 13 and 14 a svarint
 * delta first; 10-12 the delta code - 10; 0-9 the same line. Columns are
 * not needed. A byte with bit 7 clear where an entry should start (only in
 * a forged table) is skipped.
 */
static int cpython_code__decode_locations(struct cpython_code_entry *e, size_t *cap,
					  const unsigned char *t, size_t len)
{
	int64_t line = e->fields.firstlineno;
	uint32_t end = 0;
	size_t i = 0;

	while (i < len) {
		unsigned char b = t[i++];
		unsigned code = (b >> 3) & 15;
		uint32_t start = end, v;

		if (!(b & 0x80))
			continue;
		if (code == 13 || code == 14) {
			v = cpython_code__varint(t, len, &i);
			line += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		} else if (code >= 10 && code <= 12) {
			line += code - 10;
		}
		end += ((b & 7) + 1) * 2;
		if (cpython_code__range_add(e, cap, start, code == 15 ? -1 : line) < 0)
			return -ENOMEM;
		while (i < len && !(t[i] & 0x80))
			i++; /* the rest of the entry: columns */
	}
	e->end = end;
	return 0;
}

/* The header fields an entry depends on, from the code object's header. */
static void cpython_code__fields(const struct cpython_code_layout *l, const unsigned char *hdr,
				 struct cpython_code_fields *f)
{
	memset(f, 0, sizeof(*f));
	memcpy(&f->type, hdr + PY_OB_TYPE, sizeof(f->type));
	memcpy(&f->filename, hdr + l->filename, sizeof(f->filename));
	memcpy(&f->name, hdr + l->name, sizeof(f->name));
	memcpy(&f->qualname, hdr + l->qualname, sizeof(f->qualname));
	memcpy(&f->linetable, hdr + l->linetable, sizeof(f->linetable));
	memcpy(&f->firstlineno, hdr + l->firstlineno, sizeof(f->firstlineno));
}

/*
 * Reads what an entry holds of the code object whose header fields are f
 * into *ret, checking that it is one: a code object's type, the same str
 * type for its names and file, a bytes line table of bounded size, a first
 * line >= 0. Returns 0, -EINVAL (not a code object), -ESRCH or -ENOMEM.
 */
static int cpython_code__load(uint32_t tgid, const struct cpython_code_layout *l,
			      const struct cpython_code_fields *f, unsigned minor,
			      struct cpython_code_entry *ret)
{
	struct cpython_code_entry e = { .fields = *f, .last_line = -1, .minor = minor };
	uint64_t name_type, qual_type, file_type, table_type;
	unsigned char *table = NULL;
	size_t table_len, cap = 0;
	char *path = NULL, *base;
	int r;

	if (f->firstlineno < 0)
		return -EINVAL;
	r = cpython_code__check_type(tgid, f->type, "code");
	if (r < 0)
		return r;
	r = cpython_code__read_str(tgid, l, f->name, 0, false, &name_type, NULL);
	if (r < 0)
		return r;
	r = cpython_code__read_str(tgid, l, f->qualname, CPYTHON_CODE_NAME_MAX, false, &qual_type,
				   &e.name);
	if (r < 0)
		goto out;
	r = cpython_code__read_str(tgid, l, f->filename, CPYTHON_CODE_FILE_MAX, true, &file_type,
				   &path);
	if (r < 0)
		goto out;
	r = -EINVAL;
	if (name_type != qual_type || name_type != file_type)
		goto out;
	r = cpython_code__check_type(tgid, name_type, "str");
	if (r < 0)
		goto out;
	r = cpython_code__read_bytes(tgid, f->linetable, &table_type, &table, &table_len);
	if (r < 0)
		goto out;
	r = cpython_code__check_type(tgid, table_type, "bytes");
	if (r < 0)
		goto out;
	base = strrchr(path, '/');
	e.file = strdup(base ? base + 1 : path);
	if (!e.file) {
		r = -ENOMEM;
		goto out;
	}
	if (l->locations)
		r = cpython_code__decode_locations(&e, &cap, table, table_len);
	else
		r = cpython_code__decode_310(&e, &cap, table, table_len);
	if (r < 0)
		goto out;
	e.bytes = sizeof(e) + strlen(e.name) + strlen(e.file) + 2 + cap * sizeof(*e.ranges);
	*ret = e;
	e = (struct cpython_code_entry){ 0 };
out:
	cpython_code__entry_clear(&e);
	free(path);
	free(table);
	return r;
}

/* The source line of the instruction units code units in. */
static unsigned cpython_code__line(const struct cpython_code_entry *e, uint32_t units)
{
	uint32_t offset = units * 2;
	size_t lo = 0, hi = e->n_ranges;

	/* saturated: somewhere at or past the limit, the best guess the last */
	if (units >= OFFCPU_FRAME_PYTHON_INSTR_MAX)
		return (unsigned)(e->last_line > 0 ? e->last_line : e->fields.firstlineno);
	if (offset >= e->end)
		return (unsigned)e->fields.firstlineno;
	/* ranges[0] starts at 0: the last range starting at or before offset */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->ranges[mid].start <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return (unsigned)(e->ranges[lo].line > 0 ? e->ranges[lo].line : e->fields.firstlineno);
}

static int cpython_code__format(struct cpython_code *c, struct cpython_code_entry *e,
				uint64_t frame, char *buf, size_t size)
{
	e->used_pass = c->pass;
	frame_format(buf, size, e->name, false, e->file,
		     cpython_code__line(e, OFFCPU_FRAME_PYTHON_INSTR(frame)));
	return 0;
}

static int cpython_code__why(enum cpython_code_reason why, char *buf, size_t size)
{
	snprintf(buf, size, "[python: %s]", cpython_code_reasons[why]);
	return why == CPYTHON_CODE_NOMEM ? -ENOMEM : -ENOENT;
}

int cpython_code_name(struct cpython_code *c, uint32_t tgid, unsigned minor, uint64_t frame,
		      char *buf, size_t size)
{
	static const enum cpython_code_reason walk_errors[] = {
		[OFFCPU_PYTHON_ERR_READ] = CPYTHON_CODE_FRAME,
		[OFFCPU_PYTHON_ERR_DEPTH] = CPYTHON_CODE_DEPTH,
		[OFFCPU_PYTHON_ERR_LOOP] = CPYTHON_CODE_LOOP,
	};
	uint64_t addr = OFFCPU_FRAME_PYTHON_CODE(frame);
	struct cpython_code_key key = { .tgid = tgid, .addr = addr };
	const struct cpython_code_layout *l;
	unsigned char hdr[CPYTHON_CODE_HEADER_MAX];
	struct cpython_code_entry *e, fresh;
	struct cpython_code_fields f;
	int r;

	if (!OFFCPU_FRAME_IS_PYTHON(frame))
		return cpython_code__why(CPYTHON_CODE_NOT_CODE, buf, size);
	if (addr < 4096) {
		size_t err = addr >> 4;

		if (err && err < sizeof(walk_errors) / sizeof(walk_errors[0]))
			return cpython_code__why(walk_errors[err], buf, size);
		return cpython_code__why(CPYTHON_CODE_NOT_CODE, buf, size);
	}
	e = hashtab_get(c->entries, &key);
	/* Gone (its version no longer known, or its memory unreadable): the
	 * names last read, as a process's mappings outlive it. */
	if (!minor)
		return e ? cpython_code__format(c, e, frame, buf, size)
			 : cpython_code__why(CPYTHON_CODE_EXITED, buf, size);
	if (minor < CPYTHON_CODE_MINOR_MIN || minor > CPYTHON_CODE_MINOR_MAX)
		return cpython_code__why(CPYTHON_CODE_VERSION, buf, size);
	l = &cpython_code_layouts[minor - CPYTHON_CODE_MINOR_MIN];

	if (e && e->minor == minor && e->checked_pass == c->pass)
		return cpython_code__format(c, e, frame, buf, size);
	r = cpython_code__read(tgid, addr, hdr, l->linetable + sizeof(uint64_t));
	if (r == -ESRCH)
		return e && e->minor == minor ? cpython_code__format(c, e, frame, buf, size)
					      : cpython_code__why(CPYTHON_CODE_EXITED, buf, size);
	if (r < 0) {
		cpython_code__drop(c, &key);
		return cpython_code__why(CPYTHON_CODE_UNREADABLE, buf, size);
	}
	cpython_code__fields(l, hdr, &f);
	if (e && e->minor == minor && !memcmp(&e->fields, &f, sizeof(f))) {
		e->checked_pass = c->pass;
		return cpython_code__format(c, e, frame, buf, size);
	}
	cpython_code__drop(c, &key);

	r = cpython_code__load(tgid, l, &f, minor, &fresh);
	if (r == -ESRCH)
		return cpython_code__why(CPYTHON_CODE_EXITED, buf, size);
	if (r == -ENOMEM)
		return cpython_code__why(CPYTHON_CODE_NOMEM, buf, size);
	if (r < 0)
		return cpython_code__why(CPYTHON_CODE_NOT_CODE, buf, size);
	fresh.checked_pass = c->pass;
	e = cpython_code__insert(c, &key, &fresh);
	if (e)
		return cpython_code__format(c, e, frame, buf, size);
	/* not cached (ENOMEM), yet read: name it all the same */
	cpython_code__format(c, &fresh, frame, buf, size);
	cpython_code__entry_clear(&fresh);
	return 0;
}
