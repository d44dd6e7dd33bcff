/*
 * flame: the flame graph library shared by offcpud and offcpuctl. Parses
 * folded stacks (flamegraph.pl's input: "frame;frame;frame VALUE", or the
 * differential "stack OLD NEW"), merges them into a tree of frames, and
 * renders the tree as an interactive SVG (flame_svg.c) or speedscope JSON
 * (flame_speedscope.c). Does not log; errors are -errno, problems with the
 * input are counted in struct flame_parse_stats.
 */
#ifndef FLAME_H
#define FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A frame in the merged tree. Children are sorted by name (flamegraph.pl's
 * order), or kept in input order for a flame chart. 40 bytes: the tree is
 * most of the memory a big graph takes (flame_node_self() is computed). */
struct flame_node {
	const char *name; /* "" for the root */
	double value;	  /* this frame and everything above it: the width */
	double delta;	  /* differential input: new - old of value (after normalize) */
	struct flame_node *children;
	uint32_t n_children;
	uint32_t depth : 30;  /* root 0 */
	uint32_t kernel : 1;  /* after the "-" delimiter of offcpud's folded format */
	uint32_t changed : 1; /* differential: on a 3-column line's path (mixed input) */
};

/* The value not in any child: the frame's own count. */
static inline double flame_node_self(const struct flame_node *n)
{
	double v = n->value;

	for (uint32_t i = 0; i < n->n_children; i++)
		v -= n->children[i].value;
	return v > 0 ? v : 0;
}

struct flame_parse_opts {
	bool strip_hex;	 /* rewrite 0x1234abcd addresses in names as 0x... */
	bool flamechart; /* keep input order, merging only adjacent equal frames */
	bool leaf_root;	 /* reverse each stack: the leaf becomes the root (--reverse) */
	/* Differential input (3 columns, "stack OLD NEW"): */
	bool normalize;	      /* scale OLD so its total equals NEW's */
	bool widths_from_old; /* the reverse view: a vanished path stays visible */
	bool negate;	      /* swap the meaning of red and blue (delta = old - new) */
	/* > 0: a count above it (an exponent's too: "1e+26", which is
	 * otherwise an invalid line), or a column's total above it, stops
	 * flame_parse() with -ERANGE. FLAME_COUNT_EXACT_MAX is where doubles
	 * stop counting exactly: 2^53 + 1 would be read as 2^53. */
	double max_count;
};

#define FLAME_COUNT_EXACT_MAX 9007199254740991.0 /* 2^53 - 1 */

struct flame_parse_stats {
	uint64_t lines;		/* non-empty lines read */
	uint64_t invalid;	/* lines without a usable count: skipped, not fatal */
	uint64_t first_invalid; /* line number of the first one, 0 if none */
	bool differential;	/* the input had 3 columns */
	double total;		/* the root's value */
	double total_other;	/* differential: the other column's total */
	/* max_count: the line of the first count, or the first line whose
	 * count took a total, above it (0: none), and that count as written
	 * (shortened as %g if longer); "" for a total. */
	uint64_t too_large_line;
	char too_large_count[32];
};

struct flame;

int flame_new(const struct flame_parse_opts *opts, struct flame **ret); /* 0 or -ENOMEM */
void flame_free(struct flame *f);					/* NULL-safe */

/*
 * Adds folded text (any number of lines, CRLF accepted; the count is the
 * last whitespace-separated number, integer or decimal; frame names may hold
 * spaces; duplicate stacks are summed). May be called several times.
 * All lines of all calls must agree on 2 or 3 columns; lines that do not are
 * counted invalid. The end of text ends a line (read in chunks cut after a
 * newline). Not after flame_root() (-EINVAL). Returns 0, -ENOMEM, or
 * -ERANGE: a count above opts' max_count (see struct flame_parse_stats).
 */
int flame_parse(struct flame *f, const char *text, size_t len);

/*
 * Checks the counts of folded text against max_count as flame_parse() with
 * that option does, without drawing anything: 0, or -ERANGE with
 * ret->too_large_line (a line of text) and ret->too_large_count set.
 * ret's other fields are not set.
 */
int flame_check_counts(const char *text, size_t len, double max_count,
		       struct flame_parse_stats *ret);

/* Merges the tree (after the last flame_parse) and returns it; NULL if
 * nothing valid was read, or on ENOMEM (then stats count valid lines). The
 * tree lives as long as f. */
const struct flame_node *flame_root(struct flame *f);
const struct flame_parse_stats *flame_stats(const struct flame *f);

enum flame_palette {
	FLAME_PALETTE_HOT,     /* on-CPU: warm reds and yellows */
	FLAME_PALETTE_IO,      /* off-CPU: blues */
	FLAME_PALETTE_WAKEUP,  /* wakeup graphs: purples */
	FLAME_PALETTE_CHAIN,   /* off-wake/chain: one family per "--" part, grey delimiters */
	FLAME_PALETTE_DIFF,    /* red grew, blue shrank, by delta; white unchanged */
	FLAME_PALETTE_HOTCOLD, /* hot/cold: frames mostly on-CPU ("[on-cpu]" leaves) warm, else blue
				*/
};

struct flame_svg_opts {
	const char *title;     /* default "Flame Graph" ("Icicle Graph" if inverted) */
	const char *subtitle;  /* NULL: none */
	const char *countname; /* unit of the values, default "samples" */
	unsigned width;	       /* px, default 1200 */
	unsigned frame_height; /* px per frame, default 16 */
	double minwidth_px;    /* frames narrower are left out, default 0.1 */
	double minwidth_pct;   /* if > 0, used instead of minwidth_px (% of total) */
	bool inverted;	       /* icicle: root at the top */
	enum flame_palette palette;
	/* As flamegraph.pl draws (its options in offcpuctl flamegraph): */
	bool self_right;   /* a frame's own time right of its callees; default left */
	bool minwidth_set; /* minwidth_px given: 0 keeps every frame */
	int pl_palette;	   /* enum flame_pl_palette (flame_palette.h): its colours */
	int colour_key;	   /* enum flame_colour_key, with pl_palette */
	struct flame_palette_map *palette_map; /* --cp: read and added to; NULL none */
	const char *bgcolors;		       /* --bgcolors; NULL: the palette's */
	double total;			       /* --total: the whole width, if above the input's */
	double factor;			       /* --factor: titles' counts scaled; 0: 1 */
	const char *fonttype;		       /* NULL: Verdana and fallbacks */
	double fontsize;		       /* px of labels; 0: 12 at most, by frame height */
	double fontwidth;		       /* average glyph width per px of size; 0: 0.59 */
	const char *nametype;		       /* details line prefix; NULL: "Function:" */
	const char *encoding;		       /* the XML declaration's; NULL: UTF-8 */
	const char *notes;		       /* an XML comment; NULL: none */
};

/* Writes the SVG (self-contained, with its JavaScript) to out. 0 or -errno. */
int flame_svg(struct flame *f, const struct flame_svg_opts *opts, FILE *out);

/* Writes a speedscope file (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile, weights in the input's unit. 0 or -errno. */
int flame_speedscope(struct flame *f, const char *name, const char *unit, FILE *out);

/*
 * Differential folded text from two 2-column inputs, as flamegraph.pl's
 * difffolded.pl writes it: "stack OLD NEW" lines, sorted. normalize scales
 * OLD to NEW's total; strip_hex as in flame_parse_opts. Returns malloc'd
 * text or NULL on ENOMEM; invalid lines of either input are counted.
 */
char *flame_diff_folded(const char *old_text, size_t old_len, const char *new_text, size_t new_len,
			bool normalize, bool strip_hex, struct flame_parse_stats *ret_old,
			struct flame_parse_stats *ret_new);

#endif
