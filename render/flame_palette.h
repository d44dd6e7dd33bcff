/*
 * flame_palette: flamegraph.pl's colours, for drawings meant to look like
 * its own: the palettes of its --colors (hot, mem, io, wakeup, chain, java,
 * js, perl, red, green, blue, aqua, yellow, purple, orange) with its
 * formulas, its annotation hints (_[k] kernel, _[j] jit, _[i] inlined,
 * _[w] waker), the way it keys a colour to a name (by default one value
 * per name from Perl's srand/rand seeded with the name's checksum; --hash
 * its namehash; --random rand), and its consistent palette file (--cp,
 * "NAME->rgb(R,G,B)" lines). Does not log.
 */
#ifndef FLAME_PALETTE_H
#define FLAME_PALETTE_H

#include <stdbool.h>
#include <stddef.h>

enum flame_pl_palette {
	FLAME_PL_NONE, /* not one of flamegraph.pl's: offcpud's own palettes */
	FLAME_PL_HOT,
	FLAME_PL_MEM,
	FLAME_PL_IO,
	FLAME_PL_WAKEUP,
	FLAME_PL_CHAIN,
	FLAME_PL_JAVA,
	FLAME_PL_JS,
	FLAME_PL_PERL,
	FLAME_PL_RED,
	FLAME_PL_GREEN,
	FLAME_PL_BLUE,
	FLAME_PL_AQUA,
	FLAME_PL_YELLOW,
	FLAME_PL_PURPLE,
	FLAME_PL_ORANGE,
};

#define FLAME_COLOUR_MAX 24 /* "rgb(255,255,255)" and room */

enum flame_colour_key {
	FLAME_KEY_NAME,	  /* flamegraph.pl's default: srand(checksum of the name); rand */
	FLAME_KEY_HASH,	  /* --hash: its namehash of the name and of the name reversed */
	FLAME_KEY_RANDOM, /* --random: a new colour every time */
};

/* FLAME_PL_* of a --colors name, or -1. */
int flame_pl_palette_from_name(const char *name);

/* The background gradient flamegraph.pl gives a palette, or the one of
 * --bgcolors name (yellow, blue, green, grey or "#rrggbb"): false if name
 * is none of them. name NULL: the palette's default. */
bool flame_pl_background(enum flame_pl_palette p, const char *name, const char **ret_top,
			 const char **ret_bottom);

/* The length of name without an annotation suffix (_[k], _[j], _[i], _[w]). */
size_t flame_annotation_strip(const char *name, size_t len);

/* "rgb(R,G,B)" of frame name (annotations included) in palette p, into buf
 * (FLAME_COLOUR_MAX bytes). waker: a chain graph's frame after a "--" (flamegraph.pl
 * annotates those _[w]). */
void flame_pl_colour(char *buf, enum flame_pl_palette p, enum flame_colour_key key,
		     const char *name, bool waker);

/* flamegraph.pl's differential colour: red grew, blue shrank, by the share of
 * max; white unchanged. */
void flame_pl_diff_colour(char *buf, double delta, double max);

/* The other two channels of a changed frame: 210 unchanged, 0 at the
 * largest change, max (taken as at least 1, as flamegraph.pl's maxdelta);
 * 0 too where delta or max is inf or NaN. */
unsigned flame_diff_shade(double delta, double max);

/* A consistent palette: names to colours, kept in a file across graphs. */
struct flame_palette_map;

/* Reads path; a missing file is an empty map. 0, -ENOMEM or -errno. */
int flame_palette_map_load(const char *path, struct flame_palette_map **ret);
/* The colour of name, or NULL. */
const char *flame_palette_map_get(const struct flame_palette_map *m, const char *name);
/* Adds name -> colour (copied). 0 or -ENOMEM. */
int flame_palette_map_put(struct flame_palette_map *m, const char *name, const char *colour);
/* Writes the map to path, names in byte order. 0 or -errno. */
int flame_palette_map_save(const struct flame_palette_map *m, const char *path);
void flame_palette_map_free(struct flame_palette_map *m); /* NULL-safe */

#endif
