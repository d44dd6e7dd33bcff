/*
 * Unit test of render/pprof.c (and proto/proto_samples.c, which feeds it):
 * the exact bytes of an empty profile, computed by hand from profile.proto;
 * varint edges; then small profiles gunzipped and read back with a decoder
 * written here from the protobuf wire format (not pprof.c's encoder run
 * backwards): string table without duplicates, stacks leaf first per kind,
 * labels, the profile's own fields, and a failed write.
 */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "pprof.h"
#include "proto_samples.h"

/* ---- gzip and the wire format ---- */

/* The gunzipped bytes of gz; malloc'd, NULL if gz is not gzip. */
static uint8_t *gunzip(const uint8_t *gz, size_t len, size_t *ret_len)
{
	z_stream z = { 0 };
	size_t cap = 1024, n = 0;
	uint8_t *out = malloc(cap);
	int r;

	if (!out || inflateInit2(&z, 15 + 16) != Z_OK) /* gzip only, not zlib or raw */
		return NULL;
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	do {
		if (n == cap) {
			cap *= 2;
			out = realloc(out, cap);
			if (!out)
				return NULL;
		}
		z.next_out = out + n;
		z.avail_out = (uInt)(cap - n);
		r = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
	} while (r == Z_OK);
	inflateEnd(&z);
	if (r != Z_STREAM_END || z.avail_in) {
		free(out);
		return NULL;
	}
	*ret_len = n;
	return out;
}

/* One field of a message: a varint's value, or a length-delimited slice. */
struct field {
	unsigned number, wire;
	uint64_t v;
	const uint8_t *p;
	size_t len;
};

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -1;
}

/* The next field of [*p, end): 1, 0 at the end, -1 if malformed or of a
 * wire type that profile.proto does not use. */
static int next_field(const uint8_t **p, const uint8_t *end, struct field *f)
{
	uint64_t key;

	if (*p == end)
		return 0;
	if (read_varint(p, end, &key) < 0)
		return -1;
	f->number = (unsigned)(key >> 3);
	f->wire = key & 7;
	if (f->wire == 0)
		return read_varint(p, end, &f->v) < 0 ? -1 : 1;
	if (f->wire != 2 || read_varint(p, end, &f->v) < 0 || f->v > (uint64_t)(end - *p))
		return -1;
	f->p = *p;
	f->len = f->v;
	*p += f->len;
	return 1;
}

/* Packed varints (or a single unpacked one) appended to a[*n]. */
static void read_packed(const struct field *f, uint64_t *a, size_t max, size_t *n)
{
	const uint8_t *p = f->p, *end = f->p + f->len;
	uint64_t v;

	if (f->wire == 0) {
		if (*n < max)
			a[(*n)++] = f->v;
		return;
	}
	while (p < end && read_varint(&p, end, &v) == 0)
		if (*n < max)
			a[(*n)++] = v;
	CHECK(p == end);
}

/* ---- the profile, decoded ---- */

#define MAX_ITEMS 64

struct label {
	uint64_t key, str, num;
};

struct sample {
	uint64_t locs[MAX_ITEMS], values[MAX_ITEMS];
	size_t n_locs, n_values;
	struct label labels[8];
	size_t n_labels;
	const uint8_t *raw; /* the Sample message's bytes */
	size_t raw_len;
};

struct profile {
	uint8_t *data; /* gunzipped; strings and raw point into it */
	size_t len;
	uint64_t sample_types[4][2];
	size_t n_sample_types;
	struct sample samples[16];
	size_t n_samples;
	uint64_t loc_fn[MAX_ITEMS]; /* by location id: its line's function id */
	size_t n_locations;
	uint64_t fn_name[MAX_ITEMS], fn_system_name[MAX_ITEMS]; /* by function id */
	size_t n_functions;
	char *strings[MAX_ITEMS];
	size_t n_strings;
	uint64_t time_nanos, duration_nanos, period, default_sample_type;
	uint64_t period_type[2];
	uint64_t comments[4];
	size_t n_comments;
	int mappings;	      /* count */
	uint64_t loc_mapping; /* the mapping id of every location, or ~0 if they differ */
};

static void decode_value_type(const struct field *f, uint64_t *ret)
{
	const uint8_t *p = f->p;
	struct field g;

	while (next_field(&p, f->p + f->len, &g) == 1)
		if (g.number == 1 || g.number == 2)
			ret[g.number - 1] = g.v;
}

static void decode_sample(const struct field *f, struct sample *s)
{
	const uint8_t *p = f->p, *end = f->p + f->len;
	struct field g, h;

	s->raw = f->p;
	s->raw_len = f->len;
	while (next_field(&p, end, &g) == 1) {
		if (g.number == 1)
			read_packed(&g, s->locs, MAX_ITEMS, &s->n_locs);
		else if (g.number == 2)
			read_packed(&g, s->values, MAX_ITEMS, &s->n_values);
		else if (g.number == 3 && s->n_labels < 8) {
			struct label *l = &s->labels[s->n_labels++];
			const uint8_t *q = g.p;

			while (next_field(&q, g.p + g.len, &h) == 1) {
				if (h.number == 1)
					l->key = h.v;
				else if (h.number == 2)
					l->str = h.v;
				else if (h.number == 3)
					l->num = h.v;
			}
		}
	}
}

/* Location: id 1, line 4 {function_id 1}. Ids must be 1.. in order here. */
static void decode_location(struct profile *pr, const struct field *f)
{
	const uint8_t *p = f->p, *q;
	uint64_t id = 0, fn = 0, mapping = 0;
	struct field g, h;

	while (next_field(&p, f->p + f->len, &g) == 1) {
		if (g.number == 1)
			id = g.v;
		else if (g.number == 2)
			mapping = g.v;
		else if (g.number == 4)
			for (q = g.p; next_field(&q, g.p + g.len, &h) == 1;)
				if (h.number == 1)
					fn = h.v;
	}
	CHECK(id == pr->n_locations + 1);
	if (pr->n_locations && pr->loc_mapping != mapping)
		mapping = ~UINT64_C(0);
	pr->loc_mapping = mapping;
	if (pr->n_locations + 1 < MAX_ITEMS)
		pr->loc_fn[++pr->n_locations] = fn;
}

static void decode_function(struct profile *pr, const struct field *f)
{
	const uint8_t *p = f->p;
	uint64_t id = 0, name = 0, system_name = 0;
	struct field g;

	while (next_field(&p, f->p + f->len, &g) == 1) {
		if (g.number == 1)
			id = g.v;
		else if (g.number == 2)
			name = g.v;
		else if (g.number == 3)
			system_name = g.v;
	}
	CHECK(id == pr->n_functions + 1);
	if (pr->n_functions + 1 < MAX_ITEMS) {
		pr->n_functions++;
		pr->fn_name[pr->n_functions] = name;
		pr->fn_system_name[pr->n_functions] = system_name;
	}
}

static int decode(const uint8_t *gz, size_t gz_len, struct profile *pr)
{
	const uint8_t *p, *end;
	struct field f;
	int r;

	memset(pr, 0, sizeof(*pr));
	pr->data = gunzip(gz, gz_len, &pr->len);
	if (!pr->data)
		return -1;
	p = pr->data;
	end = p + pr->len;
	while ((r = next_field(&p, end, &f)) == 1) {
		switch (f.number) {
		case 1:
			if (pr->n_sample_types < 4)
				decode_value_type(&f, pr->sample_types[pr->n_sample_types++]);
			break;
		case 2:
			if (pr->n_samples < 16)
				decode_sample(&f, &pr->samples[pr->n_samples++]);
			break;
		case 3:
			pr->mappings++;
			break;
		case 4:
			decode_location(pr, &f);
			break;
		case 5:
			decode_function(pr, &f);
			break;
		case 6:
			if (pr->n_strings < MAX_ITEMS)
				pr->strings[pr->n_strings++] = strndup((const char *)f.p, f.len);
			break;
		case 9:
			pr->time_nanos = f.v;
			break;
		case 10:
			pr->duration_nanos = f.v;
			break;
		case 11:
			decode_value_type(&f, pr->period_type);
			break;
		case 12:
			pr->period = f.v;
			break;
		case 13:
			read_packed(&f, pr->comments, 4, &pr->n_comments);
			break;
		case 14:
			pr->default_sample_type = f.v;
			break;
		default:
			CHECK_MSG(0, "unexpected field %u", f.number);
		}
	}
	return r;
}

static void profile_free(struct profile *pr)
{
	for (size_t i = 0; i < pr->n_strings; i++)
		free(pr->strings[i]);
	free(pr->data);
}

static const char *str(const struct profile *pr, uint64_t i)
{
	return i < pr->n_strings ? pr->strings[i] : "(out of the string table)";
}

/* The sample's stack as "leaf;...;root" by function name. */
static void stack_of(const struct profile *pr, const struct sample *s, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n_locs && n < size; i++) {
		uint64_t id = s->locs[i];
		const char *name = id >= 1 && id <= pr->n_locations
					   ? str(pr, pr->fn_name[pr->loc_fn[id]])
					   : "(bad location)";

		n += snprintf(buf + n, size - n, "%s%s", i ? ";" : "", name);
	}
}

/* The sample's label key as "value" (string) or "#value" (number). */
static void label_of(const struct profile *pr, const struct sample *s, const char *key, char *buf,
		     size_t size)
{
	snprintf(buf, size, "(none)");
	for (size_t i = 0; i < s->n_labels; i++) {
		const struct label *l = &s->labels[i];

		if (strcmp(str(pr, l->key), key))
			continue;
		if (l->str)
			snprintf(buf, size, "%s", str(pr, l->str));
		else
			snprintf(buf, size, "#%llu", (unsigned long long)l->num);
	}
}

#define CHECK_LABEL(pr, s, key, want)                                                              \
	do {                                                                                       \
		char got_[128];                                                                    \
		label_of(pr, s, key, got_, sizeof(got_));                                          \
		CHECK_STR(got_, want);                                                             \
	} while (0)

/* Runs pprof_write() into memory; returns the gzip bytes (malloc'd). */
static uint8_t *write_mem(const struct proto_sample *rows, size_t n, const struct pprof_opts *opts,
			  size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	CHECK(pprof_write(rows, n, opts, f) == 0);
	fclose(f);
	*ret_len = len;
	return (uint8_t *)buf;
}

/* ---- tests ---- */

/* An empty offcpu profile, byte by byte from profile.proto's field numbers. */
static void test_empty_exact_bytes(void)
{
	/* clang-format off */
	static const uint8_t want[] = {
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, /* sample_type {blocks, count} */
		0x0a, 0x04, 0x08, 0x03, 0x10, 0x04, /* sample_type {off_cpu, nanoseconds} */
		0x1a, 0x04, 0x08, 0x01, 0x38, 0x01, /* mapping {id 1, has_functions} */
		0x5a, 0x04, 0x08, 0x03, 0x10, 0x04, /* period_type {off_cpu, nanoseconds} */
		0x60, 0x01,			    /* period 1 */
		0x70, 0x03,			    /* default_sample_type "off_cpu" */
		0x32, 0x00,			    /* string_table: "" */
		0x32, 0x06, 'b', 'l', 'o', 'c', 'k', 's',
		0x32, 0x05, 'c', 'o', 'u', 'n', 't',
		0x32, 0x07, 'o', 'f', 'f', '_', 'c', 'p', 'u',
		0x32, 0x0b, 'n', 'a', 'n', 'o', 's', 'e', 'c', 'o', 'n', 'd', 's',
		0x32, 0x04, 'c', 'o', 'm', 'm',
		0x32, 0x03, 'p', 'i', 'd',
		0x32, 0x03, 't', 'i', 'd',
		0x32, 0x05, 's', 't', 'a', 't', 'e',
		0x32, 0x04, 'k', 'i', 'n', 'd',
		0x32, 0x06, 'c', 'g', 'r', 'o', 'u', 'p',
		0x32, 0x04, 'u', 'n', 'i', 't',
		0x32, 0x09, 'c', 'o', 'n', 't', 'a', 'i', 'n', 'e', 'r',
		0x32, 0x03, 'p', 'o', 'd',
		0x32, 0x06, 'n', 's', '_', 'p', 'i', 'd',
	};
	/* clang-format on */
	struct pprof_opts opts = { .kind = PROTO_KIND_OFFCPU };
	size_t gz_len, len = 0;
	uint8_t *gz = write_mem(NULL, 0, &opts, &gz_len), *raw;

	CHECK(gz_len > 18 && gz[0] == 0x1f && gz[1] == 0x8b); /* gzip's magic */
	raw = gunzip(gz, gz_len, &len);
	CHECK(raw != NULL);
	CHECK_MSG(raw && len == sizeof(want) && !memcmp(raw, want, len), "got %zu bytes", len);
	free(raw);
	free(gz);
}

/* Values are packed varints: 0 is one byte, 127 one, 128 two, INT64_MAX
 * nine; above it, values are clamped (pprof's are int64). */
static void test_varints(void)
{
	static const uint8_t packed_a[] = { 0x12, 0x03, 0x7f, 0x80, 0x01 };
	static const uint8_t packed_b[] = { 0x12, 0x0a, 0x00, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
	struct proto_sample rows[] = {
		{ .comm = "a", .tgid = 1, .pid = 1, .state = "S", .count = 127, .value_ns = 128 },
		{ .comm = "a",
		  .tgid = 1,
		  .pid = 1,
		  .state = "S",
		  .count = 0,
		  .value_ns = UINT64_C(1) << 63 },
		{ .comm = "a",
		  .tgid = 1,
		  .pid = 1,
		  .state = "S",
		  .count = UINT64_MAX,
		  .value_ns = INT64_MAX },
	};
	struct pprof_opts opts = { .kind = PROTO_KIND_OFFCPU };
	struct profile pr;
	size_t gz_len;
	uint8_t *gz = write_mem(rows, 3, &opts, &gz_len);

	CHECK(decode(gz, gz_len, &pr) == 0);
	CHECK(pr.n_samples == 3);
	/* No frames: no location_id field; the values come first. */
	CHECK(pr.samples[0].raw_len >= sizeof(packed_a) &&
	      !memcmp(pr.samples[0].raw, packed_a, sizeof(packed_a)));
	CHECK(pr.samples[1].raw_len >= sizeof(packed_b) &&
	      !memcmp(pr.samples[1].raw, packed_b, sizeof(packed_b)));
	CHECK(pr.samples[0].n_values == 2 && pr.samples[0].values[0] == 127 &&
	      pr.samples[0].values[1] == 128);
	CHECK(pr.samples[1].values[0] == 0 && pr.samples[1].values[1] == INT64_MAX);
	CHECK(pr.samples[2].values[0] == INT64_MAX && pr.samples[2].values[1] == INT64_MAX);
	CHECK(pr.samples[2].n_locs == 0);
	profile_free(&pr);
	free(gz);
}

/* Every kind's frames, leaf first; labels; strings once each. */
static void test_kinds_and_strings(void)
{
	static const char *const user[] = { "main", "worker", "libc.so.6+0x891f4" };
	static const char *const kernel[] = { "entry_SYSCALL_64", "do_sys_poll", "schedule" };
	static const char *const waker[] = { "try_to_wake_up", "futex_wake", "-",
					     "main",	       "producer",   "--",
					     "pipe_write",     "-",	     "feeder" };
	struct proto_sample rows[] = {
		{ .comm = "main",
		  .tgid = 100,
		  .pid = 101,
		  .state = "S",
		  .kind = NULL,
		  .value_ns = 5000,
		  .count = 2,
		  .ustack = user,
		  .n_ustack = 3,
		  .kstack = kernel,
		  .n_kstack = 3 },
		{ .comm = "main",
		  .tgid = 100,
		  .pid = 102,
		  .state = "R",
		  .kind = "runq",
		  .value_ns = 700,
		  .count = 1,
		  .ustack = user,
		  .n_ustack = 2,
		  .kstack = kernel,
		  .n_kstack = 1 },
		{ .comm = "w",
		  .tgid = 100,
		  .pid = 103,
		  .state = "D",
		  .kind = "offwake",
		  .value_ns = 9,
		  .count = 1,
		  .kstack = kernel + 1,
		  .n_kstack = 2,
		  .chain = waker,
		  .n_chain = 9 },
		{ .comm = "w",
		  .tgid = 100,
		  .pid = 103,
		  .state = "S",
		  .kind = "wakeup",
		  .value_ns = 3,
		  .count = 1,
		  .ustack = user,
		  .n_ustack = 3,
		  .chain = waker,
		  .n_chain = 5 },
	};
	struct pprof_opts opts = { .kind = PROTO_KIND_OFFCPU,
				   .time_nanos = INT64_C(1795309200000000000),
				   .duration_nanos = 5000000000,
				   .comment = "offcpud capture 7" };
	char stack[1024];
	struct profile pr;
	size_t gz_len;
	uint8_t *gz = write_mem(rows, 4, &opts, &gz_len);

	CHECK(decode(gz, gz_len, &pr) == 0);
	CHECK(pr.n_samples == 4);
	stack_of(&pr, &pr.samples[0], stack, sizeof(stack));
	CHECK_STR(stack, "schedule;do_sys_poll;entry_SYSCALL_64;libc.so.6+0x891f4;worker;main");
	CHECK(pr.samples[0].values[0] == 2 && pr.samples[0].values[1] == 5000);
	CHECK_LABEL(&pr, &pr.samples[0], "comm", "main");
	CHECK_LABEL(&pr, &pr.samples[0], "pid", "#100");
	CHECK_LABEL(&pr, &pr.samples[0], "tid", "#101");
	CHECK_LABEL(&pr, &pr.samples[0], "state", "S");
	CHECK_LABEL(&pr, &pr.samples[0], "kind", "offcpu");
	CHECK(pr.samples[0].n_labels == 5);

	stack_of(&pr, &pr.samples[1], stack, sizeof(stack));
	CHECK_STR(stack, "[runqueue];entry_SYSCALL_64;worker;main");
	CHECK_LABEL(&pr, &pr.samples[1], "kind", "runq");
	CHECK_LABEL(&pr, &pr.samples[1], "state", "R");

	/* Waker part as in the folded line, without "-", above a "--" frame. */
	stack_of(&pr, &pr.samples[2], stack, sizeof(stack));
	CHECK_STR(stack, "feeder;pipe_write;--;producer;main;futex_wake;try_to_wake_up;--;"
			 "schedule;do_sys_poll");
	CHECK_LABEL(&pr, &pr.samples[2], "kind", "offwake");
	CHECK_LABEL(&pr, &pr.samples[2], "state", "D");

	/* A wakeup row is its waker part only, whatever its own stacks hold. */
	stack_of(&pr, &pr.samples[3], stack, sizeof(stack));
	CHECK_STR(stack, "producer;main;futex_wake;try_to_wake_up");

	/* Each string once; frame "main" and comm "main" share one. */
	CHECK(pr.n_strings > 0 && !strcmp(pr.strings[0], ""));
	for (size_t i = 0; i < pr.n_strings; i++)
		for (size_t j = i + 1; j < pr.n_strings; j++)
			CHECK_MSG(strcmp(pr.strings[i], pr.strings[j]), "\"%s\" twice",
				  pr.strings[i]);
	/* One location and function per distinct frame: 3 user, 3 kernel,
	 * [runqueue], --, and the waker's 5 others. */
	CHECK_MSG(pr.n_locations == 13, "%zu locations", pr.n_locations);
	CHECK(pr.n_functions == pr.n_locations);
	for (size_t id = 1; id <= pr.n_functions; id++)
		CHECK(pr.fn_system_name[id] == pr.fn_name[id]);
	CHECK(pr.mappings == 1 && pr.loc_mapping == 1);

	CHECK(pr.n_sample_types == 2);
	CHECK_STR(str(&pr, pr.sample_types[0][0]), "blocks");
	CHECK_STR(str(&pr, pr.sample_types[0][1]), "count");
	CHECK_STR(str(&pr, pr.sample_types[1][0]), "off_cpu");
	CHECK_STR(str(&pr, pr.sample_types[1][1]), "nanoseconds");
	CHECK_STR(str(&pr, pr.default_sample_type), "off_cpu");
	CHECK_STR(str(&pr, pr.period_type[0]), "off_cpu");
	CHECK(pr.period == 1);
	CHECK(pr.time_nanos == UINT64_C(1795309200000000000));
	CHECK(pr.duration_nanos == 5000000000);
	CHECK(pr.n_comments == 1);
	CHECK_STR(str(&pr, pr.comments[0]), "offcpud capture 7");
	profile_free(&pr);
	free(gz);
}

/* Kinds other than offcpu name the time after themselves. */
static void test_sample_type_names(void)
{
	static const struct {
		enum proto_kind kind;
		const char *type;
		bool oncpu; /* hot/cold */
	} cases[] = {
		{ PROTO_KIND_WAKEUP, "wakeup", false },	 { PROTO_KIND_OFFWAKE, "offwake", false },
		{ PROTO_KIND_CHAIN, "chain", false },	 { PROTO_KIND_RUNQ, "runq", false },
		{ PROTO_KIND_OFFCPU, "off_cpu", false }, { PROTO_KIND_ONCPU, "on_cpu", false },
		{ PROTO_KIND_OFFCPU, "wall", true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pprof_opts opts = { .kind = cases[i].kind, .oncpu = cases[i].oncpu };
		struct profile pr;
		size_t gz_len;
		uint8_t *gz = write_mem(NULL, 0, &opts, &gz_len);

		CHECK(decode(gz, gz_len, &pr) == 0);
		CHECK_STR(str(&pr, pr.sample_types[1][0]), cases[i].type);
		CHECK_STR(str(&pr, pr.default_sample_type), cases[i].type);
		CHECK(pr.time_nanos == 0 && pr.duration_nanos == 0 && pr.n_comments == 0);
		profile_free(&pr);
		free(gz);
	}
}

static void test_write_error(void)
{
	struct proto_sample row = { .comm = "a", .state = "S", .value_ns = 1, .count = 1 };
	struct pprof_opts opts = { .kind = PROTO_KIND_OFFCPU };
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		return; /* no /dev/full in this sandbox */
	CHECK(pprof_write(&row, 1, &opts, f) == -ENOSPC);
	fclose(f);
}

/* proto_samples: a reply's rows, as pprof_write() takes them. */
static void test_samples_parse(void)
{
	static const char reply[] =
		"{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"from_ms\":0,\"to_ms\":1,"
		"\"capture_id\":7,\"windows\":1,\"total_ns\":12,\"samples_count\":2,\"samples\":["
		"{\"comm\":\"app\",\"tgid\":4321,\"pid\":4322,\"state\":\"S\",\"value_ns\":10,"
		"\"count\":1,\"ustack\":[\"_start\",\"main\"],\"kstack\":[\"schedule\"]},"
		"{\"comm\":\"rx\",\"tgid\":4321,\"pid\":4326,\"state\":\"S\",\"kind\":\"offwake\","
		"\"value_ns\":2,\"count\":3,\"ustack\":[],\"kstack\":[\"schedule\"],"
		"\"chain\":[\"try_to_wake_up\",\"-\",\"[softirq]\"]}]}}\n";
	static const char no_rows[] = "{\"v\":1,\"ok\":true,\"cmd\":\"capture\",\"capture\":"
				      "{\"id\":1,\"folded\":\"a 1\\n\"}}";
	static const char *const bad[] = {
		"{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"samples\":[{\"comm\":\"a\"}]"
		"}}",
		"{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"samples\":[{\"comm\":\"a\","
		"\"tgid\":1,\"pid\":1,\"state\":\"S\",\"value_ns\":1.5,\"count\":1,\"ustack\":[],"
		"\"kstack\":[]}]}}",
		"{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"samples\":[{\"comm\":\"a\","
		"\"tgid\":1,\"pid\":1,\"state\":\"S\",\"value_ns\":1,\"count\":1,\"ustack\":[3],"
		"\"kstack\":[]}]}}",
		"{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"samples\":{}}}",
		"{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{}}",
		"not json",
	};
	struct proto_samples *s = NULL;

	CHECK(proto_samples_parse(reply, strlen(reply), &s) == 0);
	CHECK(s && s->n == 2);
	if (s && s->n == 2) {
		CHECK_STR(s->rows[0].comm, "app");
		CHECK(s->rows[0].tgid == 4321 && s->rows[0].pid == 4322);
		CHECK(s->rows[0].value_ns == 10 && s->rows[0].count == 1);
		CHECK(s->rows[0].kind == NULL); /* absent: offcpu */
		CHECK(s->rows[0].n_ustack == 2 && s->rows[0].n_kstack == 1);
		CHECK_STR(s->rows[0].ustack[1], "main");
		CHECK(s->rows[0].n_chain == 0 && s->rows[0].chain == NULL);
		CHECK_STR(s->rows[1].kind, "offwake");
		CHECK(s->rows[1].n_ustack == 0 && s->rows[1].n_chain == 3);
		CHECK_STR(s->rows[1].kstack[0], "schedule");
		CHECK_STR(s->rows[1].chain[2], "[softirq]");
	}
	proto_samples_free(s);

	s = NULL;
	CHECK(proto_samples_parse(no_rows, strlen(no_rows), &s) == 0);
	CHECK(s && s->n == 0);
	proto_samples_free(s);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = NULL;
		CHECK_MSG(proto_samples_parse(bad[i], strlen(bad[i]), &s) == -EINVAL, "bad[%zu]",
			  i);
		CHECK(s == NULL);
	}
	proto_samples_free(NULL);
}

int main(void)
{
	test_empty_exact_bytes();
	test_varints();
	test_kinds_and_strings();
	test_sample_type_names();
	test_write_error();
	test_samples_parse();
	return CHECK_DONE();
}
