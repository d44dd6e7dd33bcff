/*
 * reply_render: the body of a capture's or an export's reply in a text
 * format, in one step: folded text as it is, or drawn as "svg" or
 * "speedscope" with the kind's palette, a title saying what it shows (kind,
 * targets, time range) and the metric's unit where the request names none.
 * Called on worker threads only: drawing a large profile takes seconds,
 * which the event loop must not wait. Does not log.
 */
#ifndef REPLY_RENDER_H
#define REPLY_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "render_output.h"

/* What a graph shows, for its default title (a request's --title wins). */
struct reply_subject {
	const uint32_t *pids, *tids; /* empty: every process, every thread */
	size_t n_pids, n_tids;
	const char *comm;		       /* NULL or "": any */
	const struct proto_cgroup_filter *who; /* NULL: any */
	int64_t from_ms, to_ms;		       /* CLOCK_REALTIME; 0: unknown */
	uint64_t capture_id;		       /* nonzero: said instead of a range */
	int64_t diff_from_ms, diff_to_ms;      /* differential: the baseline's range */
	uint64_t diff_capture;		       /* or its capture */
};

/* What a request asks of its drawing. */
struct reply_render_opts {
	enum proto_format format; /* FOLDED, SVG or SPEEDSCOPE */
	const struct proto_render *render;
	const struct render_input *input; /* may be NULL */
	enum proto_kind kind;
	bool oncpu;
	enum proto_metric metric;
	bool differential; /* 3 columns: red/blue palette, its own title */
	struct reply_subject subject;
};

/*
 * The default title of o's graph: the kind, the targets, the time range,
 * e.g. "Off-CPU Time — pid 123 — 2026-11-28 22:10:05–22:10:35 UTC", or
 * "Differential Off-CPU Time — all processes — capture 9 vs capture 8".
 * Returns it malloc'd, or NULL (out of memory).
 */
char *reply_render_title(const struct reply_render_opts *o);

/*
 * Turns folded (malloc'd; ownership passes here) into the reply's text:
 * *ret_folded (format FOLDED) or *ret_output is set, malloc'd; or, when
 * there is nothing to draw, *ret_error is a no_data error reply line.
 * Returns 0, or -ENOMEM (folded NULL counts as out of memory).
 */
int reply_render(char *folded, const struct reply_render_opts *o, char **ret_folded,
		 char **ret_output, char **ret_error);

#endif
