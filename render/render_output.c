/* render_output: see render_output.h. */
#define _GNU_SOURCE /* open_memstream */
#include "render_output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

static const enum flame_palette palettes[] = {
	[PROTO_PALETTE_AUTO] = FLAME_PALETTE_IO, /* replaced once the input is known */
	[PROTO_PALETTE_HOT] = FLAME_PALETTE_HOT,
	[PROTO_PALETTE_IO] = FLAME_PALETTE_IO,
	[PROTO_PALETTE_WAKEUP] = FLAME_PALETTE_WAKEUP,
	[PROTO_PALETTE_CHAIN] = FLAME_PALETTE_CHAIN,
	[PROTO_PALETTE_DIFF] = FLAME_PALETTE_DIFF,
	[PROTO_PALETTE_HOTCOLD] = FLAME_PALETTE_HOTCOLD,
};

int render_flame_new(enum proto_format format, const struct proto_render *opts,
		     const struct render_input *input, struct flame **ret)
{
	bool svg = format == PROTO_FORMAT_SVG;
	struct flame_parse_opts popts = {
		.leaf_root = svg && opts->reverse,
		.flamechart = svg && opts->flamechart,
		.strip_hex = input && input->strip_hex,
		.widths_from_old = input && input->widths_from_old,
		.negate = input && input->negate,
		.max_count = input ? input->max_count : 0,
	};

	return flame_new(&popts, ret);
}

int render_flame_write(struct flame *f, enum proto_format format, const struct proto_render *opts,
		       const char *default_title, FILE *out, char *err, size_t err_size)
{
	return render_flame_write_pl(f, format, opts, NULL, default_title, out, err, err_size);
}

int render_flame_write_pl(struct flame *f, enum proto_format format,
			  const struct proto_render *opts, const struct flame_svg_opts *pl,
			  const char *default_title, FILE *out, char *err, size_t err_size)
{
	const struct flame_parse_stats *st;
	struct flame_svg_opts sopts = {
		.title = opts->title[0] ? opts->title : default_title,
		.subtitle = opts->subtitle[0] ? opts->subtitle : NULL,
		.countname = opts->countname[0] ? opts->countname : "us",
		.width = opts->width,
		.frame_height = opts->frame_height,
		.inverted = opts->inverted,
		.palette = palettes[opts->palette],
	};
	bool percent;
	double minwidth;

	if (!flame_root(f)) {
		st = flame_stats(f);
		if (st->lines > st->invalid)
			return -ENOMEM; /* valid stacks, but no tree */
		snprintf(err, err_size, "nothing to draw: the selection has no stacks");
		return -ENODATA;
	}
	st = flame_stats(f);
	if (opts->palette == PROTO_PALETTE_AUTO)
		sopts.palette = st->differential ? FLAME_PALETTE_DIFF : FLAME_PALETTE_IO;
	if (opts->minwidth[0] && proto_minwidth_parse(opts->minwidth, &minwidth, &percent) == 0) {
		if (percent)
			sopts.minwidth_pct = minwidth;
		else
			sopts.minwidth_px = minwidth;
		sopts.minwidth_set = true; /* 0 keeps every frame */
	}
	if (pl) { /* flamegraph.pl's options, offline */
		sopts.self_right = pl->self_right;
		sopts.pl_palette = pl->pl_palette;
		sopts.colour_key = pl->colour_key;
		sopts.palette_map = pl->palette_map;
		sopts.bgcolors = pl->bgcolors;
		sopts.total = pl->total;
		sopts.factor = pl->factor;
		sopts.fonttype = pl->fonttype;
		sopts.fontsize = pl->fontsize;
		sopts.fontwidth = pl->fontwidth;
		sopts.nametype = pl->nametype;
		sopts.encoding = pl->encoding;
		sopts.notes = pl->notes;
		if (!opts->countname[0] && pl->countname)
			sopts.countname = pl->countname;
		if (!opts->title[0] && pl->title)
			sopts.title = pl->title;
	}
	/* Values are microseconds, whatever the graph calls them. */
	if (format == PROTO_FORMAT_SVG)
		return flame_svg(f, &sopts, out);
	return flame_speedscope(f, sopts.title, "microseconds", out);
}

int render_output(const char *folded, size_t len, enum proto_format format,
		  const struct proto_render *opts, const struct render_input *input,
		  const char *default_title, char **ret, struct flame_parse_stats *ret_stats,
		  char *err, size_t err_size)
{
	struct flame *f = NULL;
	char *text = NULL;
	size_t size = 0;
	FILE *out;
	int r;

	r = render_flame_new(format, opts, input, &f);
	if (r < 0)
		return r;
	r = flame_parse(f, folded, len);
	if (r < 0)
		goto out;
	out = open_memstream(&text, &size);
	if (!out) {
		r = -ENOMEM;
		goto out;
	}
	r = render_flame_write(f, format, opts, default_title, out, err, err_size);
	if (fclose(out) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0)
		free(text);
	else
		*ret = text;
out:
	if (ret_stats)
		*ret_stats = *flame_stats(f);
	flame_free(f);
	return r;
}
