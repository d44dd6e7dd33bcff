/*
 * flame_options: flamegraph.pl's options for offcpuctl's offline
 * flamegraph and diff, so that a flamegraph.pl command line works with
 * them: each one supported with flamegraph.pl's meaning, or refused with a
 * message that names what to use instead. The options offcpuctl shares
 * with the daemon (--title, --width, --minwidth, ...) stay in options.c.
 */
#ifndef FLAME_OPTIONS_H
#define FLAME_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "flame.h"
#include "flame_palette.h"

enum {
	OPT_PL_COLORS = 1000, /* above the other option numbers (ctl.h) */
	OPT_PL_BGCOLORS,
	OPT_PL_HASH,
	OPT_PL_RANDOM,
	OPT_PL_CP,
	OPT_PL_PALETTE_MAP,
	OPT_PL_FONTTYPE,
	OPT_PL_FONTSIZE,
	OPT_PL_FONTWIDTH,
	OPT_PL_NAMETYPE,
	OPT_PL_ENCODING,
	OPT_PL_NOTES,
	OPT_PL_TOTAL,
	OPT_PL_FACTOR,
	OPT_PL_SELF_RIGHT,
	OPT_PL_NAMEATTR,
};

/* Their getopt_long() entries. */
/* clang-format off */
#define FLAME_PL_OPTIONS                                                                           \
	{ "colors", required_argument, NULL, OPT_PL_COLORS },                                      \
	{ "color", required_argument, NULL, OPT_PL_COLORS },                                       \
	{ "bgcolors", required_argument, NULL, OPT_PL_BGCOLORS },                                  \
	{ "hash", no_argument, NULL, OPT_PL_HASH },                                                \
	{ "random", no_argument, NULL, OPT_PL_RANDOM },                                            \
	{ "cp", no_argument, NULL, OPT_PL_CP },                                                    \
	{ "palette-map", required_argument, NULL, OPT_PL_PALETTE_MAP },                            \
	{ "fonttype", required_argument, NULL, OPT_PL_FONTTYPE },                                  \
	{ "fontsize", required_argument, NULL, OPT_PL_FONTSIZE },                                  \
	{ "fontwidth", required_argument, NULL, OPT_PL_FONTWIDTH },                                \
	{ "nametype", required_argument, NULL, OPT_PL_NAMETYPE },                                  \
	{ "encoding", required_argument, NULL, OPT_PL_ENCODING },                                  \
	{ "notes", required_argument, NULL, OPT_PL_NOTES },                                        \
	{ "total", required_argument, NULL, OPT_PL_TOTAL },                                        \
	{ "factor", required_argument, NULL, OPT_PL_FACTOR },                                      \
	{ "self-right", no_argument, NULL, OPT_PL_SELF_RIGHT },                                    \
	{ "nameattr", required_argument, NULL, OPT_PL_NAMEATTR }
/* clang-format on */

struct flame_pl_args {
	struct flame_svg_opts svg; /* the flamegraph.pl fields */
	const char *map_path;	   /* --cp: "palette.map"; --palette-map FILE */
	const char *svg_only;	   /* the first option given that only svg uses */
};

/*
 * Takes opt if it is one of FLAME_PL_OPTIONS: returns 1, or -EINVAL with
 * a message for the user in err. 0: not one of them.
 */
int flame_pl_option(struct flame_pl_args *a, int opt, const char *arg, char *err, size_t err_size);

/* --palette NAME where NAME is one of flamegraph.pl's palettes that
 * offcpud's --palette lacks (mem, java, js, perl, red, ...): true, taken. */
bool flame_pl_palette_option(struct flame_pl_args *a, const char *name);

/* Loads the palette map (--cp) into a->svg.palette_map: 0 or -errno. */
int flame_pl_map_load(struct flame_pl_args *a);
/* Writes it back, with the colours the graph added: 0 or -errno. */
int flame_pl_map_save(struct flame_pl_args *a);
void flame_pl_args_free(struct flame_pl_args *a);

#endif
