/*
 * push_request: see push_request.h. The window's series (push_series.h)
 * become the request's; each part of a series is written by pprof_write()
 * into memory; protobuf-c packs the request around them.
 */
#define _GNU_SOURCE /* open_memstream */
#include "push_request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "pyroscope.pb-c.h"

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
	struct push_split split;
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
	for (size_t i = 0; b->samples && i < b->n_samples; i++)
		free(b->samples[i].raw_profile.data);
	push_series_split_free(&b->split);
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

/* Room for every series, profile and label of the split. */
static int build_alloc(struct build *b, size_t n_labels)
{
	size_t n_series = b->split.n_series, n_samples = b->split.n_parts;

	b->series = calloc(n_series, sizeof(*b->series));
	b->series_p = calloc(n_series, sizeof(*b->series_p));
	b->samples = calloc(n_samples, sizeof(*b->samples));
	b->samples_p = calloc(n_samples, sizeof(*b->samples_p));
	b->ids = calloc(n_samples, sizeof(*b->ids));
	b->pairs = calloc(n_series * n_labels, sizeof(*b->pairs));
	b->pairs_p = calloc(n_series * n_labels, sizeof(*b->pairs_p));
	b->labels = calloc(n_series * n_labels, sizeof(*b->labels));
	b->part = calloc(b->split.max_part, sizeof(*b->part));
	if (!b->series || !b->series_p || !b->samples || !b->samples_p || !b->ids || !b->pairs ||
	    !b->pairs_p || !b->labels || !b->part)
		return -ENOMEM;
	return 0;
}

/* Series ser of the split: its labels and its profiles. */
static int build_series(struct build *b, const struct push_series *ser, const struct push_window *w,
			const struct push_request_opts *o)
{
	size_t n_labels = PUSH_LABELS_OWN + o->n_labels, s = b->n_series;
	Push__V1__RawProfileSeries *series = &b->series[s];
	struct push_label *l = &b->labels[s * n_labels];
	const char *kind = push_request_profile_name(ser->kind);

	push__v1__raw_profile_series__init(series);
	l[0] = (struct push_label){ "__name__", kind };
	l[1] = (struct push_label){ "service_name", ser->service };
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
	for (size_t part = 0; part < ser->n_parts; part++) {
		Push__V1__RawSample *sample = &b->samples[b->n_samples];
		const size_t *rows;
		size_t n;
		int r;

		push_series_part(&b->split, ser, part, &rows, &n);
		for (size_t k = 0; k < n; k++)
			b->part[k] = w->rows[rows[k]];
		push__v1__raw_sample__init(sample);
		r = write_profile(b->part, n, ser->kind, w, &sample->raw_profile.data,
				  &sample->raw_profile.len);
		if (r < 0)
			return r;
		push_request_id(o->host, w->id, w->start_ms, ser->service, kind, part,
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
	struct build b = { 0 };
	int r = push_series_split(w, o, &b.split);

	if (!r && !b.split.n_series) {
		*ret = NULL;
		*ret_len = 0;
	} else if (!r) {
		r = build_alloc(&b, PUSH_LABELS_OWN + o->n_labels);
		for (size_t i = 0; !r && i < b.split.n_series; i++)
			r = build_series(&b, &b.split.series[i], w, o);
		req.n_series = b.n_series;
		req.series = b.series_p;
		if (!r)
			r = push_series_pack(&req.base, ret, ret_len);
	}
	build_free(&b);
	return r;
}
