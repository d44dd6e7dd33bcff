/*
 * fuzz-folded: the folded-stack parser and the renderers behind offcpuctl
 * flamegraph and diff (render_flame_new(), flame_parse() fed in chunks cut
 * after a newline as offcpuctl's parse_file() does, render_flame_write() to
 * svg or speedscope) and offcpud's render_output(); with "D", the
 * differential text of flame_diff_folded() instead.
 *
 * Input: folded text, optionally led by one line "#fuzz:FLAGS[ TITLE]"
 * (without it: svg, default options). FLAGS are letters:
 *   s strip_hex   o widths_from_old   n negate (and normalize with D)
 *   r reverse     c flamechart        i inverted   j speedscope, not svg
 *   w/W width 200/100000   h/H frame_height 4/200   m/M minwidth 0.5%/2
 *   p0..p5 palette (auto, hot, io, wakeup, chain, diff)
 *   T TITLE is the title, subtitle and countname
 *   P flamegraph.pl's drawing (offcpuctl flamegraph --colors java --hash
 *     --self-right --minwidth 0)   X also pprof_write_folded()
 *   D the text is "OLD\n--\nNEW": render flame_diff_folded(OLD, NEW)
 *   L only the count limit of 1000 (offcpuctl's max_count), as
 *     flame_parse() and flame_check_counts() apply it: they must agree
 *
 * Property checked (abort() if not): the merged tree does not depend on the
 * order of the input lines (the parser reuses the previous line's path, so
 * the same lines reversed take other paths through its code). Inputs over
 * 64 KiB are skipped: rendering is linear, and small inputs find the bugs.
 * Build and run: scripts/fuzz.sh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "flame_palette.h"
#include "pprof.h"
#include "proto.h"
#include "render_output.h"

#define FUZZ_MAX_BYTES (64 * 1024)
#define FUZZ_CHUNK     61 /* bytes at least between two flame_parse() calls */

static void fuzz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz-folded: property violated: %s\n", what);
		abort();
	}
}

struct fuzz_opts {
	enum proto_format format;
	struct proto_render render;
	struct render_input input;
	bool normalize;
	bool diff;
	bool pl, pprof;
	bool limit; /* "L": the count limit alone (fuzz_limit_check()) */
};

/* Reads the "#fuzz:" line, if any; returns the length it takes. */
static size_t fuzz_opts_parse(const char *p, size_t len, struct fuzz_opts *o)
{
	const char *nl, *title = NULL;
	size_t n, title_len = 0;

	memset(o, 0, sizeof(*o));
	o->format = PROTO_FORMAT_SVG;
	if (len < 6 || memcmp(p, "#fuzz:", 6))
		return 0;
	nl = memchr(p, '\n', len);
	n = nl ? (size_t)(nl - p) : len;
	for (size_t i = 6; i < n; i++) {
		switch (p[i]) {
		case 's':
			o->input.strip_hex = true;
			break;
		case 'o':
			o->input.widths_from_old = true;
			break;
		case 'n':
			o->input.negate = true;
			o->normalize = true;
			break;
		case 'r':
			o->render.reverse = true;
			break;
		case 'c':
			o->render.flamechart = true;
			break;
		case 'i':
			o->render.inverted = true;
			break;
		case 'j':
			o->format = PROTO_FORMAT_SPEEDSCOPE;
			break;
		case 'w':
			o->render.width = PROTO_WIDTH_MIN;
			break;
		case 'W':
			o->render.width = PROTO_WIDTH_MAX;
			break;
		case 'h':
			o->render.frame_height = PROTO_FRAME_HEIGHT_MIN;
			break;
		case 'H':
			o->render.frame_height = PROTO_FRAME_HEIGHT_MAX;
			break;
		case 'm':
			strcpy(o->render.minwidth, "0.5%");
			break;
		case 'M':
			strcpy(o->render.minwidth, "2");
			break;
		case 'p':
			if (i + 1 < n && p[i + 1] >= '0' && p[i + 1] <= '5')
				o->render.palette = p[++i] - '0';
			break;
		case 'D':
			o->diff = true;
			break;
		case 'P':
			o->pl = true;
			break;
		case 'X':
			o->pprof = true;
			break;
		case 'L':
			o->limit = true;
			break;
		case 'T':
			break;
		case ' ':
			title = p + i + 1;
			title_len = n - i - 1;
			i = n;
			break;
		default:
			break;
		}
	}
	if (title && memchr(p + 6, 'T', (size_t)(title - 1 - (p + 6)))) {
		if (title_len > PROTO_COUNTNAME_MAX)
			title_len = PROTO_COUNTNAME_MAX;
		/* strnlen: a NUL in the line ends the title early */
		title_len = strnlen(title, title_len);
		memcpy(o->render.title, title, title_len);
		memcpy(o->render.subtitle, title, title_len);
		memcpy(o->render.countname, title, title_len);
	}
	return nl ? n + 1 : n;
}

/* Feeds text to f in chunks cut after a newline. */
static void fuzz_feed(struct flame *f, const char *text, size_t len)
{
	while (len) {
		const char *nl =
			len > FUZZ_CHUNK ? memchr(text + FUZZ_CHUNK, '\n', len - FUZZ_CHUNK) : NULL;
		size_t n = nl ? (size_t)(nl - text) + 1 : len;

		fuzz_check(flame_parse(f, text, n) == 0, "flame_parse() failed");
		text += n;
		len -= n;
	}
}

/* The lines of text[0..len) in reverse order, each ended by '\n'. */
static char *fuzz_reverse_lines(const char *text, size_t len)
{
	char *out = malloc(len + 2), *at = out;
	size_t end = len;

	fuzz_check(out != NULL, "out of memory");
	while (end > 0) {
		size_t start = end;

		while (start > 0 && text[start - 1] != '\n')
			start--;
		memcpy(at, text + start, end - start);
		at += end - start;
		*at++ = '\n';
		end = start ? start - 1 : 0;
	}
	*at = '\0';
	return out;
}

/* Equal but for rounding: sums of the same counts in another order differ
 * by at most a few ulps of the total each. */
static bool fuzz_close(double a, double b, double total)
{
	if (a == b || (isnan(a) && isnan(b)) || !isfinite(total))
		return true;
	return fabs(a - b) <= 1e-10 * total;
}

/* Both trees alike: names, widths, kernel flags, shape. Children are in
 * name order (strcmp), unique by name in a merged tree. Iterative: stacks
 * may be deep. */
static void fuzz_compare_trees(const struct flame_node *a, const struct flame_node *b)
{
	/* Widths and deltas are bounded by both columns' totals. */
	double total = fabs(a->value) + fabs(a->delta) + 1;
	const struct flame_node **stack;
	size_t depth = 0, cap = 64;

	stack = malloc(cap * 2 * sizeof(*stack));
	fuzz_check(stack != NULL, "out of memory");
	stack[depth * 2] = a;
	stack[depth * 2 + 1] = b;
	depth++;
	while (depth) {
		depth--;
		a = stack[depth * 2];
		b = stack[depth * 2 + 1];
		fuzz_check(!strcmp(a->name, b->name), "line order changed a frame's name");
		fuzz_check(a->kernel == b->kernel, "line order changed a kernel flag");
		fuzz_check(a->depth == b->depth, "line order changed a depth");
		fuzz_check(fuzz_close(a->value, b->value, total), "line order changed a width");
		fuzz_check(fuzz_close(a->delta, b->delta, total), "line order changed a delta");
		fuzz_check(a->n_children == b->n_children, "line order changed the children");
		for (size_t i = 0; i < a->n_children; i++) {
			if (depth == cap) {
				const struct flame_node **s;

				cap *= 2;
				s = realloc(stack, cap * 2 * sizeof(*stack));
				fuzz_check(s != NULL, "out of memory");
				stack = s;
			}
			stack[depth * 2] = &a->children[i];
			stack[depth * 2 + 1] = &b->children[i];
			depth++;
		}
	}
	free(stack);
}

/* The merged tree of text must not depend on the order of its lines. */
static void fuzz_order_check(const struct fuzz_opts *o, struct flame *f, const char *text,
			     size_t len)
{
	const struct flame_parse_stats *st = flame_stats(f);
	const struct flame_node *root, *root2;
	struct flame *f2;
	char *rev;

	/* Names with a NUL compare equal under strcmp, so their order is not
	 * defined; a flame chart keeps the input order on purpose. */
	if (o->render.flamechart || memchr(text, '\0', len))
		return;
	rev = fuzz_reverse_lines(text, len);
	fuzz_check(render_flame_new(o->format, &o->render, &o->input, &f2) == 0, "flame_new");
	fuzz_feed(f2, rev, strlen(rev));
	root = flame_root(f);
	root2 = flame_root(f2);
	/* Which lines are valid depends on the first valid line (2 or 3
	 * columns); compare only when both orders read the same lines. */
	if (root && root2 && st->differential == flame_stats(f2)->differential &&
	    st->invalid == flame_stats(f2)->invalid)
		fuzz_compare_trees(root, root2);
	flame_free(f2);
	free(rev);
}

/* The count limit (offcpuctl's): flame_parse() fed in chunks and
 * flame_check_counts() refuse the same line and count, or neither does. */
static void fuzz_limit_check(const char *text, size_t len)
{
	const double limit = 1000;
	struct flame_parse_opts po = { .max_count = limit };
	struct flame_parse_stats checked = { 0 };
	struct flame *f;
	int want, r = 0;

	want = flame_check_counts(text, len, limit, &checked);
	fuzz_check(want == 0 || want == -ERANGE, "flame_check_counts() failed");
	fuzz_check(flame_new(&po, &f) == 0, "flame_new");
	while (len && r == 0) {
		const char *nl =
			len > FUZZ_CHUNK ? memchr(text + FUZZ_CHUNK, '\n', len - FUZZ_CHUNK) : NULL;
		size_t n = nl ? (size_t)(nl - text) + 1 : len;

		r = flame_parse(f, text, n);
		text += n;
		len -= n;
	}
	fuzz_check(r == want, "flame_parse() and flame_check_counts() disagree");
	if (want)
		fuzz_check(
			flame_stats(f)->too_large_line == checked.too_large_line &&
				!strcmp(flame_stats(f)->too_large_count, checked.too_large_count),
			"flame_parse() and flame_check_counts() refuse different lines");
	else
		fuzz_check(flame_stats(f)->total <= limit * (1 + 1e-12),
			   "a total above the limit passed");
	flame_free(f);
}

/* What rendering may answer: done, or nothing to draw (an svg of counts
 * that add up to infinity is one too); speedscope refuses such counts with
 * ERANGE (JSON has no infinity). */
static bool fuzz_render_ok(const struct fuzz_opts *o, int r, const struct flame_parse_stats *st)
{
	if (r == -ERANGE)
		return o->format == PROTO_FORMAT_SPEEDSCOPE && !isfinite(st->total);
	return r == 0 || r == -ENODATA;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct flame_parse_stats st;
	struct fuzz_opts o;
	char err[128], *diff = NULL, *out = NULL;
	struct flame *f;
	size_t len = size, skip;
	FILE *null;
	int r;

	if (size > FUZZ_MAX_BYTES)
		return 0;
	skip = fuzz_opts_parse(text, len, &o);
	text += skip;
	len -= skip;
	if (o.limit) {
		fuzz_limit_check(text, len);
		return 0;
	}
	if (o.diff) {
		const char *sep = memmem(text, len, "\n--\n", 4);
		size_t old_len = sep ? (size_t)(sep - text) + 1 : len;
		struct flame_parse_stats st_old, st_new;

		diff = flame_diff_folded(text, old_len, text + old_len + (sep ? 3 : 0),
					 len - old_len - (sep ? 3 : 0), o.normalize,
					 o.input.strip_hex, &st_old, &st_new);
		fuzz_check(diff != NULL, "flame_diff_folded() failed");
		text = diff;
		len = strlen(diff);
		o.input.strip_hex = false; /* applied, as offcpuctl diff does */
	}

	/* offcpuctl: parsed in chunks, written to a file. */
	fuzz_check(render_flame_new(o.format, &o.render, &o.input, &f) == 0, "flame_new");
	fuzz_feed(f, text, len);
	fuzz_order_check(&o, f, text, len);
	null = fopen("/dev/null", "w");
	fuzz_check(null != NULL, "cannot open /dev/null");
	if (o.pl) {
		struct flame_svg_opts pl = {
			.pl_palette = FLAME_PL_JAVA,
			.colour_key = FLAME_KEY_HASH,
			.self_right = true,
		};

		strcpy(o.render.minwidth, "0");
		r = render_flame_write_pl(f, o.format, &o.render, &pl, "Flame Graph", null, err,
					  sizeof(err));
	} else {
		r = render_flame_write(f, o.format, &o.render, "Flame Graph", null, err,
				       sizeof(err));
	}
	fuzz_check(fuzz_render_ok(&o, r, flame_stats(f)), "render_flame_write() failed");
	if (o.pprof) {
		r = pprof_write_folded(f, NULL, null);
		fuzz_check(r == 0 || r == -ENODATA, "pprof_write_folded() failed");
	}
	fclose(null);
	flame_free(f);

	/* offcpud: the whole text at once, into memory. */
	r = render_output(text, len, o.format, &o.render, &o.input, "Flame Graph", &out, &st, err,
			  sizeof(err));
	fuzz_check(fuzz_render_ok(&o, r, &st), "render_output() failed");
	if (r == 0)
		free(out);
	free(diff);
	return 0;
}
