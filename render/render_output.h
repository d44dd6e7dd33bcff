/*
 * render_output: folded text to "svg" or "speedscope" with a protocol
 * request's render options. One path for offcpud (capture replies, exports)
 * and offcpuctl (offline flamegraph and diff), so they draw alike. Input of
 * 3 columns is differential and gets the red/blue palette unless another is
 * asked for. Does not log.
 */
#ifndef RENDER_OUTPUT_H
#define RENDER_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "flame.h"
#include "proto.h"

/* How to read the input (see struct flame_parse_opts). */
struct render_input {
	bool strip_hex;	      /* addresses in names -> 0x... */
	bool widths_from_old; /* differential: the reverse view */
	bool negate;	      /* differential: red and blue swapped */
	double max_count;     /* > 0: larger counts refused (flame_parse_opts) */
};

/*
 * Renders len bytes of folded text as format (PROTO_FORMAT_SVG or
 * _SPEEDSCOPE). input may be NULL. default_title is used when opts has none;
 * speedscope takes only the title from opts. ret_stats (may be NULL) gets
 * the parse statistics (invalid lines). Returns 0 with *ret malloc'd,
 * -ENODATA with a message in err (nothing to draw), or -ENOMEM.
 */
int render_output(const char *folded, size_t len, enum proto_format format,
		  const struct proto_render *opts, const struct render_input *input,
		  const char *default_title, char **ret, struct flame_parse_stats *ret_stats,
		  char *err, size_t err_size);

/* The two halves of render_output(), for input and output too large to hold
 * whole: a flame to feed with flame_parse(), and the writing of it to out. */
int render_flame_new(enum proto_format format, const struct proto_render *opts,
		     const struct render_input *input, struct flame **ret);
int render_flame_write(struct flame *f, enum proto_format format, const struct proto_render *opts,
		       const char *default_title, FILE *out, char *err, size_t err_size);

/* render_flame_write() with flamegraph.pl's options of offcpuctl's offline
 * flamegraph and diff: pl's fields from self_right on, and its countname
 * and title where opts has none. pl NULL: render_flame_write(). */
int render_flame_write_pl(struct flame *f, enum proto_format format,
			  const struct proto_render *opts, const struct flame_svg_opts *pl,
			  const char *default_title, FILE *out, char *err, size_t err_size);

#endif
