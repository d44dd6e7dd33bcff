/*
 * reply_render: the body of a capture's or an export's reply in a text
 * format, in one step: folded text as it is, or drawn as "svg" or
 * "speedscope" with the kind's palette and title and the metric's unit
 * where the request names none. Called on worker threads only: drawing a
 * large profile takes seconds, which the event loop must not wait. Does
 * not log.
 */
#ifndef REPLY_RENDER_H
#define REPLY_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "render_output.h"

/* What a request asks of its drawing. */
struct reply_render_opts {
	enum proto_format format; /* FOLDED, SVG or SPEEDSCOPE */
	const struct proto_render *render;
	const struct render_input *input; /* may be NULL */
	enum proto_kind kind;
	bool oncpu;
	enum proto_metric metric;
	bool differential; /* 3 columns: red/blue palette, its own title */
};

/*
 * Turns folded (malloc'd; ownership passes here) into the reply's text:
 * *ret_folded (format FOLDED) or *ret_output is set, malloc'd; or, when
 * there is nothing to draw, *ret_error is a no_data error reply line.
 * Returns 0, or -ENOMEM (folded NULL counts as out of memory).
 */
int reply_render(char *folded, const struct reply_render_opts *o, char **ret_folded,
		 char **ret_output, char **ret_error);

#endif
