/* Unit test of render/flame_svg.c: the SVG's geometry, filtering, escaping,
 * colours and text for folded inputs whose trees are known by heart. The
 * SVG is read back with plain string searches: flame_svg writes one frame
 * per line as <g class="f" data-x data-w><title/><rect/>[<text/>]</g>, all
 * in <g id="frames">. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flame.h"
#include "xml_read.h"

extern const char flame_js[];

/* 100 samples: all(100) = idle(18) [beta(8)] + main(82) [alpha(45) [beta(30),
 * gamma(10) [beta(10)]], delta(25) [epsilon(25)], zeta(12) [BETA(12)]]. */
static const char tree_folded[] = "main;alpha;beta 30\n"
				  "main;alpha;gamma;beta 10\n"
				  "main;alpha 5\n"
				  "main;delta;epsilon 25\n"
				  "main;zeta;BETA 12\n"
				  "idle;beta 8\n"
				  "idle 10\n";

/* The same tree in document order (parents first, children by name), a
 * frame's own time left of its callees as in flamegraph.pl. */
static const struct {
	const char *name;
	unsigned depth;
	double start, value;
} tree[] = {
	{ "all", 0, 0, 100 },	  { "idle", 1, 0, 18 },	  { "beta", 2, 10, 8 },
	{ "main", 1, 18, 82 },	  { "alpha", 2, 18, 45 }, { "beta", 3, 23, 30 },
	{ "gamma", 3, 53, 10 },	  { "beta", 4, 53, 10 },  { "delta", 2, 63, 25 },
	{ "epsilon", 3, 63, 25 }, { "zeta", 2, 88, 12 },  { "BETA", 3, 88, 12 },
};
#define TREE_N (sizeof(tree) / sizeof(tree[0]))

#define FRAMES_MAX 64

struct frame {
	char name[512];	 /* unescaped, from the title */
	char title[512]; /* unescaped */
	double data_x, data_w;
	double x, y, width, height;
	char fill[16];
	bool has_label;
	char label[256]; /* unescaped */
	double label_x;
};

struct svg_doc {
	char *text;
	int r; /* flame_svg's return */
	size_t n;
	struct frame f[FRAMES_MAX];
};

/* The value of attribute name="..." in [p, end), NAN if absent. */
static double attr_num(const char *p, const char *end, const char *name)
{
	char key[32];
	const char *a;

	snprintf(key, sizeof(key), " %s=\"", name);
	a = strstr(p, key);
	if (!a || a >= end)
		return NAN;
	return strtod(a + strlen(key), NULL);
}

static void attr_str(char *dst, size_t cap, const char *p, const char *end, const char *name)
{
	char key[32];
	const char *a, *q;

	dst[0] = '\0';
	snprintf(key, sizeof(key), " %s=\"", name);
	a = strstr(p, key);
	if (!a || a >= end)
		return;
	a += strlen(key);
	q = strchr(a, '"');
	snprintf(dst, cap, "%.*s", (int)(q - a), a);
}

/* Text between open (which ends with '>') and the next "</", in [p, end). */
static bool element_text(char *dst, size_t cap, const char *p, const char *end, const char *open)
{
	const char *a = strstr(p, open), *q;

	if (!a || a >= end)
		return false;
	a = strchr(a, '>') + 1;
	q = strstr(a, "</");
	CHECK(xml_unescape(dst, cap, a, q - a));
	return true;
}

static void parse_frames(struct svg_doc *d)
{
	const char *p = strstr(d->text, "<g id=\"frames\">");

	d->n = 0;
	while (p && (p = strstr(p, "<g class=\"f\"")) && d->n < FRAMES_MAX) {
		const char *end = strstr(p, "</g>");
		struct frame *f = &d->f[d->n++];
		char *paren;

		f->data_x = attr_num(p, end, "data-x");
		f->data_w = attr_num(p, end, "data-w");
		element_text(f->title, sizeof(f->title), p, end, "<title>");
		memcpy(f->name, f->title, sizeof(f->name));
		paren = strrchr(f->name, '(');
		if (paren && paren > f->name)
			paren[-1] = '\0';
		{
			const char *rect = strstr(p, "<rect");

			f->x = attr_num(rect, end, "x");
			f->y = attr_num(rect, end, "y");
			f->width = attr_num(rect, end, "width");
			f->height = attr_num(rect, end, "height");
			attr_str(f->fill, sizeof(f->fill), rect, end, "fill");
		}
		f->has_label = element_text(f->label, sizeof(f->label), p, end, "<text");
		f->label_x = f->has_label ? attr_num(strstr(p, "<text"), end, "x") : NAN;
		p = end;
	}
}

static void render(struct svg_doc *d, const char *folded, size_t len,
		   const struct flame_parse_opts *po, const struct flame_svg_opts *so)
{
	static const struct flame_parse_opts no_opts;
	struct flame *fl;
	size_t size;
	FILE *out = open_memstream(&d->text, &size);

	CHECK(out);
	CHECK(flame_new(po ? po : &no_opts, &fl) == 0);
	CHECK(flame_parse(fl, folded, len) == 0);
	d->r = flame_svg(fl, so, out);
	fclose(out);
	flame_free(fl);
	parse_frames(d);
}

static void render_str(struct svg_doc *d, const char *folded, const struct flame_svg_opts *so)
{
	render(d, folded, strlen(folded), NULL, so);
}

static const struct frame *find(const struct svg_doc *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->f[i].name, name))
			return &d->f[i];
	return NULL;
}

/* The frame called name, or a blank one that fails every check. */
static const struct frame *get(const struct svg_doc *d, const char *name)
{
	static const struct frame missing = { .name = "(missing)",
					      .title = "(missing)",
					      .fill = "(missing)",
					      .x = NAN,
					      .data_x = NAN,
					      .data_w = NAN };
	const struct frame *f = find(d, name);

	return f ? f : &missing;
}

static double svg_attr(const struct svg_doc *d, const char *name)
{
	return attr_num(d->text, strchr(strstr(d->text, "<svg"), '>'), name);
}

/* Width, start and level of every frame of the fixed tree. */
static void check_tree(const char *file, int line, const struct svg_doc *d, unsigned width,
		       unsigned fh, bool inverted)
{
	double dw = width - 20.0, y0 = d->f[0].y;

	CHECK_AT(file, line, d->r == 0, "flame_svg returned %d", d->r);
	CHECK_AT(file, line, d->n == TREE_N, "%zu frames", d->n);
	CHECK_AT(file, line, svg_attr(d, "width") == width, "svg width");
	for (size_t i = 0; i < d->n && i < TREE_N; i++) {
		const struct frame *f = &d->f[i];
		double y = inverted ? y0 + tree[i].depth * (double)fh
				    : y0 - tree[i].depth * (double)fh;

		CHECK_AT(file, line, !strcmp(f->name, tree[i].name), "frame %zu is %s, want %s", i,
			 f->name, tree[i].name);
		CHECK_AT(file, line, fabs(f->width - tree[i].value / 100 * dw) <= 0.01,
			 "%s: width %g", f->name, f->width);
		CHECK_AT(file, line, fabs(f->x - (10 + tree[i].start / 100 * dw)) <= 0.01,
			 "%s: x %g", f->name, f->x);
		CHECK_AT(file, line, f->y == y, "%s at depth %u: y %g, want %g", f->name,
			 tree[i].depth, f->y, y);
		CHECK_AT(file, line, f->height == fh - 1, "%s: height %g", f->name, f->height);
		CHECK_AT(file, line, f->data_x == tree[i].start && f->data_w == tree[i].value,
			 "%s: data-x %g data-w %g", f->name, f->data_x, f->data_w);
		CHECK_AT(file, line, f->y >= 0 && f->y + fh <= svg_attr(d, "height"),
			 "%s: y %g outside the image", f->name, f->y);
	}
}

static void test_geometry(void)
{
	struct svg_doc d;
	struct flame_svg_opts o = { 0 };

	/* Defaults: 1200 px, 16 px levels, root at the bottom. */
	render_str(&d, tree_folded, NULL);
	check_tree(__FILE__, __LINE__, &d, 1200, 16, false);
	CHECK(strstr(d.text, "<text id=\"title\" x=\"600\" y=\"24\">Flame Graph</text>"));
	CHECK_STR(get(&d, "alpha")->title, "alpha (45 samples, 45.00%)");
	CHECK_STR(d.f[0].title, "all (100 samples, 100.00%)");
	for (size_t i = 1; i < d.n; i++)
		CHECK(d.f[i].y < d.f[0].y); /* the root is lowest */
	free(d.text);

	o.inverted = true;
	o.width = 800;
	o.frame_height = 20;
	render_str(&d, tree_folded, &o);
	check_tree(__FILE__, __LINE__, &d, 800, 20, true);
	CHECK(strstr(d.text, ">Icicle Graph</text>"));
	for (size_t i = 1; i < d.n; i++)
		CHECK(d.f[i].y > d.f[0].y); /* the root is on top */
	free(d.text);
}

static void test_minwidth(void)
{
	struct svg_doc d;
	struct flame_svg_opts o = { 0 };

	/* 11.8 px per sample: under 100 px goes idle;beta (8 samples). */
	o.minwidth_px = 100;
	render_str(&d, tree_folded, &o);
	CHECK(d.r == 0);
	CHECK(d.n == TREE_N - 1);
	CHECK(find(&d, "idle") && find(&d, "gamma"));
	CHECK(get(&d, "beta")->data_x == 23); /* the first beta left is main;alpha;beta */
	free(d.text);

	/* 130 px: gamma (10) goes, and its child with it; zeta (12) stays. */
	o.minwidth_px = 130;
	render_str(&d, tree_folded, &o);
	CHECK(d.n == TREE_N - 3);
	CHECK(!find(&d, "gamma"));
	CHECK(find(&d, "zeta") && find(&d, "BETA"));
	for (size_t i = 0; i < d.n; i++)
		CHECK(d.f[i].width >= 130);
	free(d.text);

	/* A percentage of the total wins over px: under 11 % goes. */
	o.minwidth_px = 500;
	o.minwidth_pct = 11;
	render_str(&d, tree_folded, &o);
	CHECK(d.n == TREE_N - 3);
	CHECK(!find(&d, "gamma") && find(&d, "zeta") && find(&d, "BETA"));
	CHECK(get(&d, "beta")->data_w == 30);
	free(d.text);

	/* The default leaves out frames under 0.1 px. */
	render_str(&d, "a 99990\na;narrow 5\na;wide 9\n", NULL);
	CHECK(d.n == 3);
	CHECK(!find(&d, "narrow") && find(&d, "wide"));
	free(d.text);
}

static void test_labels(void)
{
	struct svg_doc d;
	const struct frame *f;

	/* 118 px hold 16 characters of 7.08 px: 14 and "..". */
	render_str(&d,
		   "main;a_very_long_function_name_that_does_not_fit 10\nmain;x 1\n"
		   "main;fits_in_118px 10\nmain 79\n",
		   NULL);
	f = get(&d, "a_very_long_function_name_that_does_not_fit");
	CHECK(f->has_label);
	CHECK_STR(f->label, "a_very_long_fu..");
	CHECK(fabs(f->label_x - (f->x + 3)) <= 0.01);
	f = get(&d, "fits_in_118px");
	CHECK(f->has_label);
	CHECK_STR(f->label, "fits_in_118px");
	f = find(&d, "x"); /* 11.8 px: not even 3 characters */
	CHECK(f && !f->has_label);
	free(d.text);

	/* Frames too low for text have no labels at all. */
	render_str(&d, tree_folded, &(struct flame_svg_opts){ .frame_height = 6 });
	CHECK(d.n == TREE_N);
	for (size_t i = 0; i < d.n; i++)
		CHECK(!d.f[i].has_label);
	free(d.text);
}

static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : 4;

		if (*p >= 0x80 && (*p < 0xc2 || *p > 0xf4))
			return false;
		for (size_t i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += n;
	}
	return true;
}

static void test_escaping(void)
{
	static const char folded[] = "main;a<b>&\"c'd 10\n"
				     "main;x\x01y 10\n"
				     "main;bad\xff\xfe 10\n"
				     "main;ok\xc3\xa9\xe2\x82\xac 10\n"
				     "main;sur\xed\xa0\x80 10\n"
				     "main;over\xc0\x80 10\n"
				     "main;nonchar\xef\xbf\xbe 10\n"
				     "main;del\x7f 10\n";
	struct svg_doc d;
	struct flame_svg_opts o = { .title = "<T&>", .subtitle = "sub\"'", .countname = "u<s" };

	render_str(&d, folded, &o);
	CHECK(d.r == 0);
	CHECK(find(&d, "a<b>&\"c'd"));
	CHECK(strstr(d.text, "<title>a&lt;b&gt;&amp;&quot;c&apos;d (10 u&lt;s, 12.50%)</title>"));
	CHECK(strstr(d.text, ">a&lt;b&gt;&amp;&quot;c&apos;d</text>"));
	CHECK(find(&d, "x\xef\xbf\xbdy"));
	CHECK(find(&d, "bad\xef\xbf\xbd\xef\xbf\xbd"));
	CHECK(find(&d, "ok\xc3\xa9\xe2\x82\xac"));
	CHECK(find(&d, "sur\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
	CHECK(find(&d, "over\xef\xbf\xbd\xef\xbf\xbd"));
	CHECK(find(&d, "nonchar\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
	CHECK(find(&d, "del\xef\xbf\xbd"));
	CHECK(strstr(d.text, ">&lt;T&amp;&gt;</text>"));
	CHECK(strstr(d.text, ">sub&quot;&apos;</text>"));
	CHECK(valid_utf8(d.text));
	for (const char *p = d.text; *p; p++)
		CHECK_MSG((unsigned char)*p >= 0x20 || *p == '\n' || *p == '\t',
			  "control byte 0x%02x at %td", (unsigned char)*p, p - d.text);
	CHECK(!strstr(d.text, "<b>") && !strstr(d.text, "<T&"));
	/* The only CDATA is the script's, and nothing inside ends it early. */
	CHECK(strstr(d.text, "<![CDATA[") && !strstr(strstr(d.text, "<![CDATA[") + 1, "<![CDATA["));
	CHECK(strstr(strstr(d.text, "]]>") + 1, "]]>") == NULL);
	free(d.text);
}

/* Hue in degrees of "#rrggbb"; -1 for a grey. */
static double hue_of(const char *hex)
{
	unsigned r, g, b;
	double max, min, h;

	if (sscanf(hex, "#%2x%2x%2x", &r, &g, &b) != 3)
		return -2;
	max = fmax(r, fmax(g, b));
	min = fmin(r, fmin(g, b));
	if (max == min)
		return -1;
	if (max == r)
		h = fmod((g - (double)b) / (max - min), 6);
	else if (max == g)
		h = (b - (double)r) / (max - min) + 2;
	else
		h = (r - (double)g) / (max - min) + 4;
	h *= 60;
	return h < 0 ? h + 360 : h;
}

static void check_hue(const char *file, int line, const struct svg_doc *d, const char *name,
		      double lo, double hi)
{
	const char *fill = get(d, name)->fill;
	double h = hue_of(fill);

	CHECK_AT(file, line, h >= lo - 1 && h <= hi + 1, "%s: %s, hue %g not in %g..%g", name, fill,
		 h, lo, hi);
}
#define CHECK_HUE(d, name, lo, hi) check_hue(__FILE__, __LINE__, d, name, lo, hi)

static void test_palettes(void)
{
	static const char user_kernel[] = "app;main;read;-;vfs_read;schedule 10\n"
					  "app;main;write;-;vfs_write;schedule 10\n";
	struct svg_doc d;
	struct flame_svg_opts o = { 0 };
	const char *beta_fill;

	/* A name keeps its colour wherever it is. */
	render_str(&d, tree_folded, NULL);
	beta_fill = get(&d, "beta")->fill;
	for (size_t i = 0; i < d.n; i++)
		if (!strcmp(d.f[i].name, "beta"))
			CHECK_STR(d.f[i].fill, beta_fill);
	free(d.text);

	/* hot: user red to orange, kernel amber to yellow, "-" grey. */
	render_str(&d, user_kernel, &o);
	CHECK_HUE(&d, "main", 0, 32);
	CHECK_HUE(&d, "read", 0, 32);
	CHECK_HUE(&d, "vfs_read", 42, 58);
	CHECK_HUE(&d, "schedule", 42, 58);
	CHECK_STR(get(&d, "-")->fill, "#a0a0a0");
	CHECK(strstr(d.text, ">kernel</text>") && strstr(d.text, ">user</text>"));
	free(d.text);

	o.palette = FLAME_PALETTE_IO; /* blues, kernel sea green */
	render_str(&d, user_kernel, &o);
	CHECK_HUE(&d, "main", 200, 225);
	CHECK_HUE(&d, "vfs_write", 130, 155);
	free(d.text);

	o.palette = FLAME_PALETTE_WAKEUP; /* purples, kernel aqua */
	render_str(&d, user_kernel, &o);
	CHECK_HUE(&d, "main", 265, 295);
	CHECK_HUE(&d, "vfs_write", 178, 192);
	free(d.text);

	/* chain: the off-CPU stack in the io families, the waker's after
	 * "--" in the wakeup ones; both delimiters grey. */
	o.palette = FLAME_PALETTE_CHAIN;
	render_str(&d, "target;app;-;schedule;--;waker_kernel_fn;waker 10\n", &o);
	CHECK_HUE(&d, "app", 200, 225);
	CHECK_HUE(&d, "schedule", 130, 155);
	CHECK_HUE(&d, "waker_kernel_fn", 178, 192);
	CHECK_STR(get(&d, "-")->fill, "#a0a0a0");
	CHECK_STR(get(&d, "--")->fill, "#a0a0a0");
	CHECK(strstr(d.text, ">waker kernel</text>") && strstr(d.text, ">off-CPU user</text>"));
	free(d.text);
	render_str(&d, "target;app;--;waker_user_fn 10\n", &o);
	CHECK_HUE(&d, "app", 200, 225);
	CHECK_HUE(&d, "waker_user_fn", 265, 295);
	CHECK_STR(get(&d, "--")->fill, "#a0a0a0");
	free(d.text);

	/* hotcold: a frame is as warm as most of its time is on CPU ("[on-cpu]"
	 * leaves); the rest in the io families. main: 30 on, 10 off. */
	o.palette = FLAME_PALETTE_HOTCOLD;
	render_str(&d,
		   "app;main;spin;-;[on-cpu] 30\n"
		   "app;main;nap;-;do_nanosleep;schedule 10\n",
		   &o);
	CHECK_HUE(&d, "main", 0, 32);
	CHECK_HUE(&d, "spin", 0, 32);
	CHECK_HUE(&d, "[on-cpu]", 42, 58);
	CHECK_HUE(&d, "nap", 200, 225);
	CHECK_HUE(&d, "schedule", 130, 155);
	CHECK(strstr(d.text, ">on-CPU user</text>") && strstr(d.text, ">off-CPU kernel</text>"));
	free(d.text);
	render_str(&d,
		   "app;main;spin;-;[on-cpu] 10\n"
		   "app;main;nap;-;do_nanosleep;schedule 30\n",
		   &o);
	CHECK_HUE(&d, "main", 200, 225);
	CHECK_HUE(&d, "spin", 0, 32);
	free(d.text);
}

static void test_diff(void)
{
	/* Both totals 85; the largest change of a frame's own value is 20. */
	static const char folded[] = "main;grow 10 30\n"
				     "main;shrink 30 10\n"
				     "main;same 20 20\n"
				     "main;bit 10 15\n"
				     "main;less 15 10\n";
	struct svg_doc d;
	struct flame_svg_opts o = { .palette = FLAME_PALETTE_DIFF };

	render_str(&d, folded, &o);
	CHECK(d.r == 0);
	CHECK_STR(get(&d, "grow")->fill, "#ff0000");
	CHECK_STR(get(&d, "shrink")->fill, "#0000ff");
	CHECK_STR(get(&d, "same")->fill, "#ffffff");
	CHECK_STR(get(&d, "main")->fill, "#ffffff");
	CHECK_STR(get(&d, "bit")->fill,
		  "#ff9d9d"); /* a quarter: int(210 * 3/4), as flamegraph.pl */
	CHECK_STR(get(&d, "less")->fill, "#9d9dff");
	CHECK_STR(get(&d, "grow")->title, "grow (30 samples, 35.29%; +23.53%)");
	CHECK_STR(get(&d, "shrink")->title, "shrink (10 samples, 11.76%; -23.53%)");
	CHECK_STR(get(&d, "main")->title, "main (85 samples, 100.00%; self 0.00%, total 0.00%)");
	CHECK(strstr(d.text, ">grew</text>") && strstr(d.text, ">shrank</text>"));
	free(d.text);

	/* A frame is coloured by its own change, not its callees'. */
	render_str(&d, "a;b 10 20\na 5 5\n", &o);
	CHECK_STR(get(&d, "a")->fill, "#ffffff");
	CHECK_STR(get(&d, "b")->fill, "#ff0000");
	CHECK_STR(get(&d, "a")->title, "a (25 samples, 100.00%; self 0.00%, total +40.00%)");
	free(d.text);

	/* Another palette still shows the change in the titles. */
	o.palette = FLAME_PALETTE_HOT;
	render_str(&d, folded, &o);
	CHECK_STR(get(&d, "grow")->title, "grow (30 samples, 35.29%; +23.53%)");
	CHECK(strcmp(get(&d, "same")->fill, "#ffffff"));
	free(d.text);

	/* The diff palette without two columns has nothing to show: hot. */
	o.palette = FLAME_PALETTE_DIFF;
	render_str(&d, tree_folded, &o);
	CHECK_HUE(&d, "alpha", 0, 32);
	CHECK_STR(get(&d, "alpha")->title, "alpha (45 samples, 45.00%)");
	free(d.text);
}

static void test_text(void)
{
	struct svg_doc d;
	struct flame_svg_opts o = { .title = "Off-CPU Time",
				    .subtitle = "pid 42",
				    .countname = "us" };
	const char *s;

	render_str(&d, "a;b 1234567\na 0.5\n", &o);
	CHECK(d.r == 0);
	CHECK(strstr(d.text, "<text id=\"title\" x=\"600\" y=\"24\">Off-CPU Time</text>"));
	CHECK(strstr(d.text, ">pid 42</text>"));
	CHECK_STR(get(&d, "b")->title, "b (1,234,567 us, 100.00%)");
	CHECK_STR(d.f[0].title, "all (1,234,567.50 us, 100.00%)");
	/* The controls and the one script: layout constants, then flame.js. */
	CHECK(strstr(d.text, ">Reset Zoom</text>") && strstr(d.text, ">Search</text>"));
	CHECK(strstr(d.text, "id=\"ic\"") && strstr(d.text, "id=\"matched\""));
	CHECK(strstr(d.text, "id=\"details\""));
	s = strstr(d.text, "<script");
	CHECK(s && !strstr(s + 1, "<script"));
	CHECK(strstr(d.text, "var FG = { xpad: 10, dw: 1180, total: 1234567.5, inverted: false"));
	CHECK(strstr(d.text, flame_js));
	CHECK(strlen(d.text) > 6 && !strcmp(d.text + strlen(d.text) - 7, "</svg>\n"));
	free(d.text);
}

static void test_deep_and_errors(void)
{
	enum { DEPTH = 20000 };
	struct svg_doc d;
	char *deep = malloc(DEPTH * 2 + 8), *p = deep;
	FILE *full;
	struct flame *fl;

	/* A stack deeper than a recursive walk could take. */
	for (int i = 0; i < DEPTH; i++)
		p += sprintf(p, i ? ";f" : "f");
	strcpy(p, " 1\n");
	render(&d, deep, strlen(deep), NULL, NULL);
	CHECK(d.r == 0);
	CHECK(svg_attr(&d, "height") >= DEPTH * 16.0);
	free(d.text);
	free(deep);

	/* No valid line: an SVG that says so, and -ENODATA. */
	render_str(&d, "garbage\n", NULL);
	CHECK(d.r == -ENODATA);
	CHECK(d.n == 0 && strstr(d.text, "</svg>"));
	free(d.text);

	CHECK(flame_new(&(struct flame_parse_opts){ 0 }, &fl) == 0);
	CHECK(flame_parse(fl, tree_folded, strlen(tree_folded)) == 0);
	CHECK(flame_svg(fl, &(struct flame_svg_opts){ .width = 15 }, stdout) == -EINVAL);
	full = fopen("/dev/full", "w");
	if (full) {
		CHECK(flame_svg(fl, NULL, full) < 0);
		fclose(full);
	}
	flame_free(fl);
}

int main(void)
{
	test_geometry();
	test_minwidth();
	test_labels();
	test_escaping();
	test_palettes();
	test_diff();
	test_text();
	test_deep_and_errors();
	return CHECK_DONE();
}
