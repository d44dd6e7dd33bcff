/* flame_options: see flame_options.h. */
#include "flame_options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A positive number as flamegraph.pl's Getopt "=f" takes it. */
static bool parse_positive(const char *arg, double *ret)
{
	char *end;
	double v;

	if (!arg[0] || arg[0] == '-' || arg[0] == ' ')
		return false;
	errno = 0;
	v = strtod(arg, &end);
	if (*end || errno || !isfinite(v) || v <= 0)
		return false;
	*ret = v;
	return true;
}

int flame_pl_option(struct flame_pl_args *a, int opt, const char *arg, char *err, size_t err_size)
{
	struct flame_svg_opts *o = &a->svg;
	const char *top, *bottom, *name = NULL;
	int p;

	switch (opt) {
	case OPT_PL_COLORS:
		name = "--colors";
		p = flame_pl_palette_from_name(arg);
		if (p < 0) {
			snprintf(err, err_size,
				 "bad --colors '%s': want hot, mem, io, wakeup, chain, java, js, "
				 "perl, red, green, blue, aqua, yellow, purple or orange",
				 arg);
			return -EINVAL;
		}
		o->pl_palette = p;
		break;
	case OPT_PL_BGCOLORS:
		name = "--bgcolors";
		if (!flame_pl_background(FLAME_PL_HOT, arg, &top, &bottom)) {
			snprintf(err, err_size,
				 "bad --bgcolors '%s': want yellow, blue, green, grey or #rrggbb",
				 arg);
			return -EINVAL;
		}
		o->bgcolors = arg;
		break;
	case OPT_PL_HASH:
		name = "--hash";
		o->colour_key = FLAME_KEY_HASH;
		break;
	case OPT_PL_RANDOM:
		name = "--random";
		o->colour_key = FLAME_KEY_RANDOM;
		break;
	case OPT_PL_CP:
		name = "--cp";
		if (!a->map_path)
			a->map_path = "palette.map";
		break;
	case OPT_PL_PALETTE_MAP:
		name = "--palette-map";
		a->map_path = arg;
		break;
	case OPT_PL_FONTTYPE:
		name = "--fonttype";
		if (strpbrk(arg, "\"\\")) {
			snprintf(err, err_size,
				 "bad --fonttype '%s': a font name, without '\"' or '\\'", arg);
			return -EINVAL;
		}
		o->fonttype = arg;
		break;
	case OPT_PL_FONTSIZE:
	case OPT_PL_FONTWIDTH:
	case OPT_PL_TOTAL:
	case OPT_PL_FACTOR: {
		static const char *const names[] = { "--fontsize", "--fontwidth", "--total",
						     "--factor" };
		double v;

		name = names[opt == OPT_PL_FONTSIZE    ? 0
			     : opt == OPT_PL_FONTWIDTH ? 1
			     : opt == OPT_PL_TOTAL     ? 2
						       : 3];
		if (!parse_positive(arg, &v) || (opt == OPT_PL_FONTSIZE && v > 200) ||
		    (opt == OPT_PL_FONTWIDTH && v > 10)) {
			snprintf(err, err_size, "bad %s '%s': want a positive number%s", name, arg,
				 opt == OPT_PL_FONTSIZE	   ? " of px, up to 200"
				 : opt == OPT_PL_FONTWIDTH ? " up to 10 (a glyph's width per px of "
							     "font size)"
							   : "");
			return -EINVAL;
		}
		if (opt == OPT_PL_FONTSIZE)
			o->fontsize = v;
		else if (opt == OPT_PL_FONTWIDTH)
			o->fontwidth = v;
		else if (opt == OPT_PL_TOTAL)
			o->total = v;
		else
			o->factor = v;
		break;
	}
	case OPT_PL_NAMETYPE:
		name = "--nametype";
		o->nametype = arg;
		break;
	case OPT_PL_ENCODING:
		name = "--encoding";
		/* XML's EncName: [A-Za-z] ([A-Za-z0-9._] | '-')* */
		if (!((arg[0] | 0x20) >= 'a' && (arg[0] | 0x20) <= 'z') ||
		    strspn(arg,
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
			    strlen(arg)) {
			snprintf(err, err_size, "bad --encoding '%s': want an XML encoding name",
				 arg);
			return -EINVAL;
		}
		o->encoding = arg;
		break;
	case OPT_PL_NOTES:
		name = "--notes";
		/* flamegraph.pl refuses < and >; an XML comment cannot hold "--". */
		if (strpbrk(arg, "<>") || strstr(arg, "--") || arg[0] == '-' ||
		    (arg[0] && arg[strlen(arg) - 1] == '-')) {
			snprintf(err, err_size,
				 "bad --notes '%s': an XML comment, without '<', '>' or \"--\"",
				 arg);
			return -EINVAL;
		}
		o->notes = arg;
		break;
	case OPT_PL_SELF_RIGHT:
		name = "--self-right";
		o->self_right = true;
		break;
	case OPT_PL_NAMEATTR:
		snprintf(err, err_size,
			 "--nameattr is not supported: offcpuctl's graphs have no per-function "
			 "SVG attributes or links; use --grep/--exclude to pick frames, and the "
			 "graph's search (Ctrl-F) to find them");
		return -EINVAL;
	default:
		return 0;
	}
	if (!a->svg_only)
		a->svg_only = name;
	return 1;
}

bool flame_pl_palette_option(struct flame_pl_args *a, const char *name)
{
	static const char *const offcpud_names[] = { "hot", "io", "wakeup", "chain" };
	int p = flame_pl_palette_from_name(name);

	for (size_t i = 0; i < sizeof(offcpud_names) / sizeof(offcpud_names[0]); i++) {
		if (!strcmp(name, offcpud_names[i]))
			return false; /* offcpud's own, as the daemon draws it */
	}
	if (p < 0)
		return false;
	a->svg.pl_palette = p;
	return true;
}

int flame_pl_map_load(struct flame_pl_args *a)
{
	if (!a->map_path)
		return 0;
	return flame_palette_map_load(a->map_path, &a->svg.palette_map);
}

int flame_pl_map_save(struct flame_pl_args *a)
{
	if (!a->svg.palette_map)
		return 0;
	return flame_palette_map_save(a->svg.palette_map, a->map_path);
}

void flame_pl_args_free(struct flame_pl_args *a)
{
	flame_palette_map_free(a->svg.palette_map);
	a->svg.palette_map = NULL;
}
