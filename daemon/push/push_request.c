/*
 * push_request: see push_request.h. Rows are sorted by (service, kind,
 * input order) into series; each part of a series is written by
 * pprof_write() into memory; protobuf-c packs the request around them.
 */
#define _GNU_SOURCE /* open_memstream */
#include "push_request.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "pyroscope.pb-c.h"
#include "utf8.h"

/* The namespace of push ids: a random UUID, fixed for good (changing it
 * changes every id, and retried pushes would no longer match).
 * e9d913a1-2873-4608-aaa6-36163407f341 */
static const uint8_t push_id_ns[16] = { 0xe9, 0xd9, 0x13, 0xa1, 0x28, 0x73, 0x46, 0x08,
					0xaa, 0xa6, 0x36, 0x16, 0x34, 0x07, 0xf3, 0x41 };

/* By enum proto_kind; written out rather than taken from proto_kind_name()
 * so that renaming a kind cannot silently start new series in Pyroscope. */
static const char *const profile_names[] = {
	[PROTO_KIND_OFFCPU] = "offcpu",	  [PROTO_KIND_WAKEUP] = "wakeup",
	[PROTO_KIND_OFFWAKE] = "offwake", [PROTO_KIND_CHAIN] = "chain",
	[PROTO_KIND_RUNQ] = "runq",	  [PROTO_KIND_ONCPU] = "oncpu",
	[PROTO_KIND_BIO] = "bio",	  [PROTO_KIND_FILEIO] = "fileio",
};
_Static_assert(sizeof(profile_names) / sizeof(profile_names[0]) == PROTO_KIND_FILEIO + 1,
	       "a profile name for every kind");

#define NO_SERVICE "unknown_service" /* OpenTelemetry's service.name when none is known */

const char *push_request_profile_name(unsigned kind)
{
	return kind < sizeof(profile_names) / sizeof(profile_names[0]) ? profile_names[kind] : NULL;
}

/* A field of an id's name and the NUL after it: no field holds a NUL, so no
 * two tuples give the same name. */
static void id_field(struct uuid5 *u, const char *s)
{
	uuid5_add(u, s, strlen(s) + 1);
}

void push_request_id(const char *host, uint64_t window_id, int64_t start_ms, const char *service,
		     const char *kind, size_t part, char ret[UUID5_STR_SIZE])
{
	struct uuid5 u;
	char num[24];

	uuid5_init(&u, push_id_ns);
	id_field(&u, host);
	snprintf(num, sizeof(num), "%" PRIu64, window_id);
	id_field(&u, num);
	snprintf(num, sizeof(num), "%" PRId64, start_ms);
	id_field(&u, num);
	id_field(&u, service);
	id_field(&u, kind);
	snprintf(num, sizeof(num), "%zu", part);
	uuid5_add(&u, num, strlen(num)); /* the last, without a NUL */
	uuid5_end(&u, ret);
}

/* ---- labels ---- */

static bool label_name_valid(const char *name)
{
	if (!(*name == '_' || (*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z')))
		return false;
	for (const char *c = name + 1; *c; c++) {
		if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	}
	return true;
}

int push_request_labels_check(const struct push_label *labels, size_t n)
{
	static const char *const own[] = { "service_name", "host", "kind" };

	if (n > PUSH_LABELS_MAX - PUSH_LABELS_OWN)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		const char *name = labels[i].name, *value = labels[i].value;

		if (!name || !value || !label_name_valid(name) || !strncmp(name, "__", 2) ||
		    strlen(name) > PUSH_LABEL_NAME_MAX || !*value ||
		    strlen(value) > PUSH_LABEL_VALUE_MAX || !utf8_valid(value))
			return -EINVAL;
		for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++) {
			if (!strcmp(name, own[k]))
				return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(name, labels[j].name))
				return -EINVAL;
		}
	}
	return 0;
}

/* ---- rows into series ---- */

/* A row, with what it is filed under. */
struct item {
	size_t row;
	unsigned kind;	     /* enum proto_kind */
	const char *service; /* owned by the build */
};

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = strcmp(x->service, y->service);

	if (c)
		return c;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->row > y->row) - (x->row < y->row);
}

static const char *comm_of(const struct proto_sample *r)
{
	return r->comm && *r->comm ? r->comm : NO_SERVICE;
}

static int tgid_cmp(const void *a, const void *b, void *arg)
{
	const struct proto_sample *rows = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	if (rows[i].tgid != rows[j].tgid)
		return rows[i].tgid < rows[j].tgid ? -1 : 1;
	return (i > j) - (i < j);
}

/* ret[i]: the process name of row i (push_request.h), pointing into the
 * rows. 0 or -ENOMEM. */
static int process_names(const struct proto_sample *rows, size_t n, const char **ret)
{
	size_t *idx = malloc(n * sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), tgid_cmp, (void *)rows);
	for (size_t i = 0, j; i < n; i = j) {
		const char *main_thread = NULL, *least = NULL;

		for (j = i; j < n && rows[idx[j]].tgid == rows[idx[i]].tgid; j++) {
			const struct proto_sample *r = &rows[idx[j]];

			if (r->pid == r->tgid &&
			    (!main_thread || strcmp(comm_of(r), main_thread) < 0))
				main_thread = comm_of(r);
			if (!least || strcmp(comm_of(r), least) < 0)
				least = comm_of(r);
		}
		for (size_t k = i; k < j; k++)
			ret[idx[k]] = main_thread ? main_thread : least;
	}
	free(idx);
	return 0;
}

/* The service of row r whose process name is proc, valid UTF-8 and within
 * Pyroscope's length (cut at a character); malloc'd, NULL on ENOMEM. */
static char *row_service(const struct proto_sample *r, const char *proc, enum push_service_by by)
{
	char buf[64]; /* "runtime:" and 12 hex digits */
	const char *name = proc;
	char *s;
	size_t len;

	if (by == PUSH_SERVICE_BY_WHO) {
		if (r->container && *r->container) {
			if (r->runtime && *r->runtime)
				snprintf(buf, sizeof(buf), "%.40s:%.12s", r->runtime, r->container);
			else
				snprintf(buf, sizeof(buf), "%.12s", r->container);
			name = buf;
		} else if (r->unit && *r->unit) {
			name = r->unit;
		}
	}
	s = utf8_fix(name);
	if (s && (len = strlen(s)) > PUSH_LABEL_VALUE_MAX) {
		len = PUSH_LABEL_VALUE_MAX;
		while ((s[len] & 0xc0) == 0x80) /* not inside a character */
			len--;
		s[len] = '\0';
	}
	return s;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct push_label *)a)->name, ((const struct push_label *)b)->name);
}

/* One profile's gzipped pprof, into *ret (malloc'd) and *ret_len. */
static int write_profile(const struct proto_sample *rows, size_t n, unsigned kind,
			 const struct push_window *w, uint8_t **ret, size_t *ret_len)
{
	struct pprof_opts po = {
		.kind = kind,
		.time_nanos = w->start_ms * 1000000,
		.duration_nanos = (w->end_ms - w->start_ms) * 1000000,
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -errno;
	r = pprof_write(rows, n, &po, f);
	if (fclose(f) != 0 && !r)
		r = -errno;
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = (uint8_t *)buf;
	*ret_len = len;
	return 0;
}

/* What a request holds, all of it freed by build_free(). */
struct build {
	struct item *items;
	const char **proc; /* by row: its process name */
	char **services;   /* by row */
	size_t n_rows;
	Push__V1__RawProfileSeries *series, **series_p;
	Push__V1__RawSample *samples, **samples_p;
	size_t n_series, n_samples; /* filled so far */
	Types__V1__LabelPair *pairs, **pairs_p;
	struct push_label *labels; /* by series: its labels, sorted */
	char (*ids)[UUID5_STR_SIZE];
	struct proto_sample *part; /* the rows of one profile */
};

static void build_free(struct build *b)
{
	for (size_t i = 0; b->services && i < b->n_rows; i++)
		free(b->services[i]);
	for (size_t i = 0; b->samples && i < b->n_samples; i++)
		free(b->samples[i].raw_profile.data);
	free(b->items);
	free(b->proc);
	free(b->services);
	free(b->series);
	free(b->series_p);
	free(b->samples);
	free(b->samples_p);
	free(b->pairs);
	free(b->pairs_p);
	free(b->labels);
	free(b->ids);
	free(b->part);
}

/* Files every row under its (service, kind), sorted. */
static int build_items(struct build *b, const struct push_window *w,
		       const struct push_request_opts *o)
{
	size_t n = w->n_rows;
	int r;

	b->n_rows = n;
	b->items = calloc(n, sizeof(*b->items));
	b->proc = calloc(n, sizeof(*b->proc));
	b->services = calloc(n, sizeof(*b->services));
	if (!b->items || !b->proc || !b->services)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *kind = w->rows[i].kind ? w->rows[i].kind : "offcpu";
		int k = proto_kind_from_name(kind);

		if (k < 0 || !push_request_profile_name((unsigned)k))
			return -EINVAL;
		b->items[i].row = i;
		b->items[i].kind = (unsigned)k;
	}
	r = process_names(w->rows, n, b->proc);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		b->services[i] = row_service(&w->rows[i], b->proc[i], o->service_by);
		if (!b->services[i])
			return -ENOMEM;
		b->items[i].service = b->services[i];
	}
	qsort(b->items, n, sizeof(*b->items), item_cmp);
	return 0;
}

static bool same_series(const struct item *a, const struct item *b)
{
	return a->kind == b->kind && !strcmp(a->service, b->service);
}

/* Room for every series, profile and label of the sorted items. */
static int build_alloc(struct build *b, size_t max, size_t n_labels)
{
	size_t n_series = 0, n_samples = 0, biggest = 0;

	for (size_t i = 0, j; i < b->n_rows; i = j) {
		for (j = i + 1; j < b->n_rows && same_series(&b->items[i], &b->items[j]);)
			j++;
		n_series++;
		n_samples += (j - i + max - 1) / max;
		if (j - i > biggest)
			biggest = j - i;
	}
	b->series = calloc(n_series, sizeof(*b->series));
	b->series_p = calloc(n_series, sizeof(*b->series_p));
	b->samples = calloc(n_samples, sizeof(*b->samples));
	b->samples_p = calloc(n_samples, sizeof(*b->samples_p));
	b->ids = calloc(n_samples, sizeof(*b->ids));
	b->pairs = calloc(n_series * n_labels, sizeof(*b->pairs));
	b->pairs_p = calloc(n_series * n_labels, sizeof(*b->pairs_p));
	b->labels = calloc(n_series * n_labels, sizeof(*b->labels));
	b->part = calloc(biggest < max ? biggest : max, sizeof(*b->part));
	if (!b->series || !b->series_p || !b->samples || !b->samples_p || !b->ids || !b->pairs ||
	    !b->pairs_p || !b->labels || !b->part)
		return -ENOMEM;
	return 0;
}

/* The series of items[i, j): its labels and its profiles. */
static int build_series(struct build *b, size_t i, size_t j, size_t max,
			const struct push_window *w, const struct push_request_opts *o)
{
	size_t n_labels = PUSH_LABELS_OWN + o->n_labels, s = b->n_series;
	Push__V1__RawProfileSeries *series = &b->series[s];
	struct push_label *l = &b->labels[s * n_labels];
	const struct item *first = &b->items[i];
	const char *kind = push_request_profile_name(first->kind);
	size_t part = 0;

	push__v1__raw_profile_series__init(series);
	l[0] = (struct push_label){ "__name__", kind };
	l[1] = (struct push_label){ "service_name", first->service };
	l[2] = (struct push_label){ "host", o->host };
	l[3] = (struct push_label){ "kind", kind };
	if (o->n_labels) /* labels may be NULL then */
		memcpy(l + PUSH_LABELS_OWN, o->labels, o->n_labels * sizeof(*l));
	qsort(l, n_labels, sizeof(*l), label_cmp);
	for (size_t k = 0; k < n_labels; k++) {
		Types__V1__LabelPair *p = &b->pairs[s * n_labels + k];

		types__v1__label_pair__init(p);
		p->name = (char *)l[k].name;
		p->value = (char *)l[k].value;
		b->pairs_p[s * n_labels + k] = p;
	}
	series->n_labels = n_labels;
	series->labels = &b->pairs_p[s * n_labels];
	series->samples = &b->samples_p[b->n_samples];
	for (size_t at = i; at < j; at += max, part++) {
		size_t n = j - at < max ? j - at : max;
		Push__V1__RawSample *sample = &b->samples[b->n_samples];
		int r;

		for (size_t k = 0; k < n; k++)
			b->part[k] = w->rows[b->items[at + k].row];
		push__v1__raw_sample__init(sample);
		r = write_profile(b->part, n, first->kind, w, &sample->raw_profile.data,
				  &sample->raw_profile.len);
		if (r < 0)
			return r;
		push_request_id(o->host, w->id, w->start_ms, first->service, kind, part,
				b->ids[b->n_samples]);
		sample->id = b->ids[b->n_samples];
		b->samples_p[b->n_samples++] = sample;
		series->n_samples++;
	}
	b->series_p[b->n_series++] = series;
	return 0;
}

int push_request_build(const struct push_window *w, const struct push_request_opts *o,
		       uint8_t **ret, size_t *ret_len)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	size_t max = o->max_samples ? o->max_samples : PUSH_PROFILE_SAMPLES_MAX;
	struct build b = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	if (!o->host || !*o->host || strlen(o->host) > PUSH_LABEL_VALUE_MAX || !utf8_valid(o->host))
		return -EINVAL;
	if (o->service_by != PUSH_SERVICE_BY_WHO && o->service_by != PUSH_SERVICE_BY_PROCESS)
		return -EINVAL;
	r = push_request_labels_check(o->labels, o->n_labels);
	if (r < 0)
		return r;
	/* pprof's times are int64 nanoseconds. */
	if (w->start_ms < 0 || w->end_ms < w->start_ms || w->end_ms > INT64_MAX / 1000000)
		return -EINVAL;
	if (!w->n_rows) {
		*ret = NULL;
		*ret_len = 0;
		return 0;
	}
	r = build_items(&b, w, o);
	if (!r)
		r = build_alloc(&b, max, PUSH_LABELS_OWN + o->n_labels);
	for (size_t i = 0, j; !r && i < w->n_rows; i = j) {
		for (j = i + 1; j < w->n_rows && same_series(&b.items[i], &b.items[j]);)
			j++;
		r = build_series(&b, i, j, max, w, o);
	}
	if (!r) {
		req.n_series = b.n_series;
		req.series = b.series_p;
		len = push__v1__push_request__get_packed_size(&req);
		buf = malloc(len ? len : 1);
		if (!buf)
			r = -ENOMEM;
		else if (push__v1__push_request__pack(&req, buf) != len)
			r = -EIO; /* protobuf-c disagreeing with itself */
	}
	build_free(&b);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}
