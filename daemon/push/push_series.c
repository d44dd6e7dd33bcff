/*
 * push_series: see push_series.h. Rows are sorted by (service, kind, input
 * order); each run of one (service, kind) is a series.
 */
#define _GNU_SOURCE /* qsort_r */
#include "push_series.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

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

/* ---- checks ---- */

int push_request_labels_check(const struct push_label *labels, size_t n)
{
	if (n > PUSH_LABELS_MAX - PUSH_LABELS_OWN)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		const char *name = labels[i].name, *value = labels[i].value;

		if (!name || !value || !push_label_name_ok(name, strlen(name)) ||
		    strlen(name) > PUSH_LABEL_NAME_MAX || !*value ||
		    strlen(value) > PUSH_LABEL_VALUE_MAX || !utf8_valid(value))
			return -EINVAL;
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(name, labels[j].name))
				return -EINVAL;
		}
	}
	return 0;
}

/* Whether w and o may be encoded, apart from the rows' kinds. */
static int series_check(const struct push_window *w, const struct push_request_opts *o)
{
	int r;

	if (!o->host || !*o->host || strlen(o->host) > PUSH_LABEL_VALUE_MAX || !utf8_valid(o->host))
		return -EINVAL;
	if (o->service_by != PUSH_SERVICE_BY_WHO && o->service_by != PUSH_SERVICE_BY_PROCESS)
		return -EINVAL;
	r = push_request_labels_check(o->labels, o->n_labels);
	if (r < 0)
		return r;
	if (w->start_ms < 0 || w->end_ms < w->start_ms || w->end_ms > INT64_MAX / 1000000)
		return -EINVAL;
	return 0;
}

/* ---- rows into series ---- */

/* A row, with what it is filed under. */
struct item {
	size_t row;
	unsigned kind;	     /* enum proto_kind */
	const char *service; /* the split's */
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

/* ret[i]: the process name of row i (push_series.h), pointing into the
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

/* Files every row under its (service, kind), sorted, into items. */
static int split_items(struct push_split *sp, const struct push_window *w,
		       const struct push_request_opts *o, struct item *items)
{
	size_t n = w->n_rows;
	const char **proc;
	int r;

	for (size_t i = 0; i < n; i++) {
		const char *kind = w->rows[i].kind ? w->rows[i].kind : "offcpu";
		int k = proto_kind_from_name(kind);

		if (k < 0 || !push_request_profile_name((unsigned)k))
			return -EINVAL;
		items[i].row = i;
		items[i].kind = (unsigned)k;
	}
	proc = calloc(n, sizeof(*proc));
	if (!proc)
		return -ENOMEM;
	r = process_names(w->rows, n, proc);
	for (size_t i = 0; !r && i < n; i++) {
		sp->services[i] = row_service(&w->rows[i], proc[i], o->service_by);
		if (!sp->services[i])
			r = -ENOMEM;
		items[i].service = sp->services[i];
	}
	free(proc);
	if (!r)
		qsort(items, n, sizeof(*items), item_cmp);
	return r;
}

static bool same_series(const struct item *a, const struct item *b)
{
	return a->kind == b->kind && !strcmp(a->service, b->service);
}

int push_series_split(const struct push_window *w, const struct push_request_opts *o,
		      struct push_split *ret)
{
	size_t n = w->n_rows, max = o->max_samples ? o->max_samples : PUSH_PROFILE_SAMPLES_MAX;
	struct item *items;
	int r;

	*ret = (struct push_split){ .max_samples = max };
	r = series_check(w, o);
	if (r < 0 || !n)
		return r;
	ret->n_rows = n;
	ret->rows = calloc(n, sizeof(*ret->rows));
	ret->services = calloc(n, sizeof(*ret->services));
	items = calloc(n, sizeof(*items));
	if (!ret->rows || !ret->services || !items) {
		free(items);
		return -ENOMEM;
	}
	r = split_items(ret, w, o, items);
	for (size_t i = 0; !r && i < n; i++) {
		ret->rows[i] = items[i].row;
		if (!i || !same_series(&items[i - 1], &items[i]))
			ret->n_series++;
	}
	if (!r) {
		ret->series = calloc(ret->n_series, sizeof(*ret->series));
		if (!ret->series)
			r = -ENOMEM;
	}
	for (size_t i = 0, j, k = 0; !r && i < n; i = j, k++) {
		struct push_series *s = &ret->series[k];

		for (j = i + 1; j < n && same_series(&items[i], &items[j]);)
			j++;
		*s = (struct push_series){ .service = items[i].service,
					   .kind = items[i].kind,
					   .rows = &ret->rows[i],
					   .n_rows = j - i,
					   .n_parts = (j - i + max - 1) / max };
		ret->n_parts += s->n_parts;
		if (s->n_rows > ret->max_part)
			ret->max_part = s->n_rows < max ? s->n_rows : max;
	}
	free(items);
	return r;
}

void push_series_split_free(struct push_split *s)
{
	for (size_t i = 0; s->services && i < s->n_rows; i++)
		free(s->services[i]);
	free(s->services);
	free(s->rows);
	free(s->series);
	*s = (struct push_split){ 0 };
}

void push_series_part(const struct push_split *sp, const struct push_series *s, size_t part,
		      const size_t **ret_rows, size_t *ret_n)
{
	size_t at = part * sp->max_samples;

	assert(part < s->n_parts);
	*ret_rows = s->rows + at;
	*ret_n = s->n_rows - at < sp->max_samples ? s->n_rows - at : sp->max_samples;
}

int push_series_pack(const struct ProtobufCMessage *msg, uint8_t **ret, size_t *ret_len)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		return -ENOMEM;
	if (protobuf_c_message_pack(msg, buf) != len) {
		free(buf);
		return -EIO; /* protobuf-c disagreeing with itself */
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}
