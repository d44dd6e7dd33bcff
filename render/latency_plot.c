/*
 * latency_plot: see latency_plot.h.
 *
 * Layout: the title (and subtitle) on top; under it the plot area with the
 * y labels on its left, the x labels and the axis title below it and the
 * legend on its right. The points of a thread are one <g class="thread"
 * data-tid> that gives them its colour: threads in tid order, each one's
 * calls in input order. Axes cover every call, drawn or not, so a
 * subsampled plot keeps the scales of the whole.
 */
#include "latency_plot.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "svg_out.h"

#define PLOT_WIDTH	 1200 /* px, by default */
#define PLOT_LEFT	 72   /* px left of the area: the y labels */
#define PLOT_LEGEND_W	 200  /* px right of the area: the legend */
#define PLOT_AREA_H	 400  /* px */
#define PLOT_BOTTOM	 48   /* px under the area: x labels and the axis title */
#define PLOT_ROW	 16   /* px per legend line */
#define PLOT_RADIUS	 3    /* px of a point, 2 above PLOT_CROWD points */
#define PLOT_CROWD	 2000
#define PLOT_PAD	 8   /* px between the area's frame and the axes' ends */
#define PLOT_X_LABEL_PX	 100 /* px between x labels, about */
#define PLOT_FONT	 11.0
#define PLOT_TITLE_FONT	 17.0
#define PLOT_MARKER_GREY "#707070"

struct plot_thread {
	uint32_t tid;
	uint64_t calls;
	char colour[8];
};

struct plot_point {
	size_t thread; /* index in threads */
	size_t call;   /* index in calls */
};

/* A power of ten of ns and its name; decimals: digits of ns below it. */
struct plot_unit {
	uint64_t ns;
	const char *name;
	int decimals;
};

static const struct plot_unit plot_units[] = {
	{ 1, "ns", 0 },
	{ 1000, "\xc2\xb5s", 3 },
	{ 1000000, "ms", 6 },
	{ 1000000000, "s", 9 },
};
#define PLOT_UNITS (sizeof(plot_units) / sizeof(plot_units[0]))

struct plot {
	FILE *out;
	const struct latency_plot_call *calls;
	size_t n, stride; /* every stride-th call is drawn */
	struct plot_thread *threads;
	size_t n_threads;
	struct plot_point *points;
	size_t n_points;
	unsigned width, height;
	int radius;			 /* px of a point */
	double left, right, top, bottom; /* the plot area, px */
	uint64_t t0, span;		 /* earliest start; latest - earliest */
	uint64_t x_step;		 /* ns between x labels */
	double x_max;			 /* ns at the area's right edge */
	const struct plot_unit *x_unit;
	int lo, hi; /* the y axis spans 10^lo .. 10^hi ns */
};

/* d3's category10, then hues spread by the golden angle. */
static void plot_colour(char buf[8], size_t i)
{
	static const char *const palette[] = {
		"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
		"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
	};
	size_t n = sizeof(palette) / sizeof(palette[0]);

	if (i < n)
		memcpy(buf, palette[i], 8);
	else
		svg_out_hsl(buf, fmod(i * 137.508, 360), 0.65, 0.35 + 0.1 * (i % 3));
}

static int plot_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int plot_thread_cmp(const void *key, const void *elem)
{
	return plot_u32_cmp(key, &((const struct plot_thread *)elem)->tid);
}

static int plot_point_cmp(const void *a, const void *b)
{
	const struct plot_point *x = a, *y = b;

	if (x->thread != y->thread)
		return (x->thread > y->thread) - (x->thread < y->thread);
	return (x->call > y->call) - (x->call < y->call);
}

/* The threads, by tid, with their number of calls; then the points drawn,
 * by thread. 0 or -ENOMEM. */
static int plot_collect(struct plot *p)
{
	uint32_t *tids = malloc(p->n * sizeof(*tids));
	size_t k = 0;

	if (!tids)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++)
		tids[i] = p->calls[i].tid;
	qsort(tids, p->n, sizeof(*tids), plot_u32_cmp);
	for (size_t i = 0; i < p->n; i++)
		k += !i || tids[i] != tids[i - 1];
	p->threads = calloc(k, sizeof(*p->threads));
	p->n_points = (p->n + p->stride - 1) / p->stride;
	p->points = calloc(p->n_points, sizeof(*p->points));
	if (!p->threads || !p->points) {
		free(tids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++) {
		if (!i || tids[i] != tids[i - 1]) {
			struct plot_thread *t = &p->threads[p->n_threads];

			t->tid = tids[i];
			plot_colour(t->colour, p->n_threads++);
		}
		p->threads[p->n_threads - 1].calls++;
	}
	free(tids);
	for (size_t j = 0; j < p->n_points; j++) {
		size_t call = j * p->stride;
		struct plot_thread *t = bsearch(&p->calls[call].tid, p->threads, p->n_threads,
						sizeof(*p->threads), plot_thread_cmp);

		p->points[j] = (struct plot_point){ (size_t)(t - p->threads), call };
	}
	qsort(p->points, p->n_points, sizeof(*p->points), plot_point_cmp);
	return 0;
}

/* The smallest 1, 2 or 5 times a power of ten that is at least v (> 0). */
static uint64_t plot_nice(uint64_t v)
{
	static const uint64_t mult[] = { 1, 2, 5, 10 };
	uint64_t p = 1;

	while (p <= v / 10)
		p *= 10;
	for (size_t i = 0; i < sizeof(mult) / sizeof(mult[0]); i++)
		if (p <= UINT64_MAX / mult[i] && p * mult[i] >= v)
			return p * mult[i];
	return p; /* v near 2^64: labels closer than asked */
}

/* Time and latency ranges, the x labels' step and unit, the y decades. */
static void plot_scale(struct plot *p)
{
	uint64_t t_max = 0, lat_min = UINT64_MAX, lat_max = 0, pw = 1;
	double labels = fmax(2, floor((p->right - p->left) / PLOT_X_LABEL_PX));

	p->t0 = UINT64_MAX;
	for (size_t i = 0; i < p->n; i++) {
		const struct latency_plot_call *c = &p->calls[i];

		p->t0 = c->start_ns < p->t0 ? c->start_ns : p->t0;
		t_max = c->start_ns > t_max ? c->start_ns : t_max;
		lat_min = c->latency_ns < lat_min ? c->latency_ns : lat_min;
		lat_max = c->latency_ns > lat_max ? c->latency_ns : lat_max;
	}
	p->span = t_max - p->t0;
	p->x_step = plot_nice(p->span ? (uint64_t)ceil(p->span / labels) : 1);
	p->x_max = p->x_step * fmax(1, ceil((double)p->span / p->x_step));
	p->x_unit = &plot_units[0];
	for (size_t i = 1; i < PLOT_UNITS; i++)
		if (plot_units[i].ns <= p->x_step)
			p->x_unit = &plot_units[i];
	/* 10^lo <= the shortest (0 is drawn as 1 ns); 10^hi >= the longest. */
	for (p->lo = 0, pw = 1; pw <= lat_min / 10; pw *= 10)
		p->lo++;
	for (p->hi = 0, pw = 1; pw < lat_max; pw *= 10) {
		p->hi++;
		if (pw > UINT64_MAX / 10)
			break;
	}
	if (p->hi <= p->lo)
		p->hi = p->lo + 1;
}

/* The x of ns after the earliest start. */
static double plot_x(const struct plot *p, double ns)
{
	return p->left + PLOT_PAD + (p->right - p->left - 2 * PLOT_PAD) * ns / p->x_max;
}

/* The y of 10^log10_ns ns. */
static double plot_y(const struct plot *p, double log10_ns)
{
	return p->top + PLOT_PAD +
	       (p->bottom - p->top - 2 * PLOT_PAD) * (p->hi - log10_ns) / (p->hi - p->lo);
}

/* ns exactly, in unit u: "4.000250 ms". */
static void plot_put_time(FILE *out, uint64_t ns, const struct plot_unit *u)
{
	fprintf(out, "%" PRIu64, ns / u->ns);
	if (u->decimals)
		fprintf(out, ".%0*" PRIu64, u->decimals, ns % u->ns);
	fprintf(out, " %s", u->name);
}

/* The y label of m * 10^k ns: "200 ns", "1 µs", "50 ms", "1000 s". */
static void plot_put_decade(FILE *out, unsigned m, int k)
{
	size_t u = (size_t)k / 3 < PLOT_UNITS ? (size_t)k / 3 : PLOT_UNITS - 1;
	uint64_t v = m;

	for (int i = 3 * (int)u; i < k; i++)
		v *= 10;
	fprintf(out, "%" PRIu64 " %s", v, plot_units[u].name);
}

static const char *plot_ordinal(size_t n)
{
	if (n % 100 >= 11 && n % 100 <= 13)
		return "th";
	switch (n % 10) {
	case 1:
		return "st";
	case 2:
		return "nd";
	case 3:
		return "rd";
	default:
		return "th";
	}
}

static void plot_put_head(const struct plot *p, const struct latency_plot_opts *o)
{
	FILE *out = p->out;

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style type=\"text/css\">\n"
		"text{font-family:Verdana,\"DejaVu Sans\",sans-serif;font-size:%gpx;fill:#000}\n"
		"#title{text-anchor:middle;font-size:%gpx}\n"
		"#subtitle{text-anchor:middle;fill:#505050}\n"
		".grid{stroke:#d0d0d0;stroke-width:1}\n"
		".grid.minor{stroke:#ececec}\n"
		".ylabel{text-anchor:end}\n"
		".xlabel,.axis{text-anchor:middle;fill:#505050}\n"
		"circle{stroke-width:1.2}\n"
		"#points circle{fill-opacity:0.8}\n"
		"circle.off,#points circle.off{fill-opacity:0}\n"
		"#points circle:hover{stroke:#000;stroke-width:2}\n"
		"</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
		p->width, p->height, p->width, p->height, PLOT_FONT, PLOT_TITLE_FONT);
	fprintf(out, "<text id=\"title\" x=\"%g\" y=\"24\">", p->width / 2.0);
	svg_out_text(out, o->title ? o->title : o->func, SIZE_MAX);
	fputs(": ", out);
	if (p->stride > 1) {
		fprintf(out, "every %zu%s call of ", p->stride, plot_ordinal(p->stride));
		svg_out_count(out, (double)p->n);
	} else {
		svg_out_count(out, (double)p->n);
		fputs(p->n == 1 ? " call" : " calls", out);
	}
	fputs("</text>\n", out);
	if (o->subtitle) {
		fprintf(out, "<text id=\"subtitle\" x=\"%g\" y=\"44\">", p->width / 2.0);
		svg_out_text(out, o->subtitle, SIZE_MAX);
		fputs("</text>\n", out);
	}
}

static void plot_put_line(FILE *out, const char *class, double x1, double y1, double x2, double y2)
{
	fprintf(out, "<line class=\"%s\" x1=\"", class);
	svg_out_px(out, x1);
	fputs("\" y1=\"", out);
	svg_out_px(out, y1);
	fputs("\" x2=\"", out);
	svg_out_px(out, x2);
	fputs("\" y2=\"", out);
	svg_out_px(out, y2);
	fputs("\"/>\n", out);
}

/* Opens a <text class> at x, y; the caller writes the text and closes it. */
static void plot_open_text(FILE *out, const char *class, double x, double y)
{
	fprintf(out, "<text class=\"%s\" x=\"", class);
	svg_out_px(out, x);
	fputs("\" y=\"", out);
	svg_out_px(out, y);
	fputs("\">", out);
}

/* Grid lines with labels: x every x_step; y at each decade and, fainter, at
 * 2 and 5 times it, labelled too when there are at most two decades. */
static void plot_put_axes(const struct plot *p)
{
	static const unsigned mult[] = { 1, 2, 5 };
	FILE *out = p->out;
	double mid = (p->top + p->bottom) / 2;

	fputs("<g id=\"axes\">\n", out);
	for (uint64_t k = 0; k * (double)p->x_step <= p->x_max * (1 + 1e-12); k++) {
		double x = plot_x(p, k * (double)p->x_step);

		plot_put_line(out, "grid", x, p->top, x, p->bottom);
		plot_open_text(out, "xlabel", x, p->bottom + 16);
		fprintf(out, "%" PRIu64 "</text>\n", k * (p->x_step / p->x_unit->ns));
	}
	for (int k = p->lo; k <= p->hi; k++)
		for (size_t i = 0; i < sizeof(mult) / sizeof(mult[0]) && (k < p->hi || !i); i++) {
			double y = plot_y(p, k + log10(mult[i]));

			plot_put_line(out, i ? "grid minor" : "grid", p->left, y, p->right, y);
			if (i && p->hi - p->lo > 2)
				continue;
			plot_open_text(out, "ylabel", p->left - 6, y + PLOT_FONT / 3);
			plot_put_decade(out, mult[i], k);
			fputs("</text>\n", out);
		}
	plot_open_text(out, "axis", (p->left + p->right) / 2, p->bottom + 36);
	fprintf(out, "call start, %s since the first call</text>\n", p->x_unit->name);
	fprintf(out,
		"<text class=\"axis\" transform=\"rotate(-90 14 %g)\" x=\"14\" y=\"%g\">"
		"latency (log scale)</text>\n",
		mid, mid);
	fputs("<rect x=\"", out);
	svg_out_px(out, p->left);
	fputs("\" y=\"", out);
	svg_out_px(out, p->top);
	fputs("\" width=\"", out);
	svg_out_px(out, p->right - p->left);
	fputs("\" height=\"", out);
	svg_out_px(out, p->bottom - p->top);
	fputs("\" fill=\"none\" stroke=\"#808080\"/>\n</g>\n", out);
}

/* A point, with the class "off" (hollow) when the call spent time off-CPU. */
static void plot_put_circle(FILE *out, double x, double y, int radius, bool off, const char *colour)
{
	fprintf(out, "<circle%s cx=\"", off ? " class=\"off\"" : "");
	svg_out_px(out, x);
	fputs("\" cy=\"", out);
	svg_out_px(out, y);
	fprintf(out, "\" r=\"%d\"", radius);
	if (colour)
		fprintf(out, " fill=\"%s\" stroke=\"%s\"", colour, colour);
}

static void plot_put_points(const struct plot *p)
{
	FILE *out = p->out;

	fputs("<g id=\"points\">\n", out);
	for (size_t j = 0; j < p->n_points; j++) {
		const struct plot_thread *t = &p->threads[p->points[j].thread];
		const struct latency_plot_call *c = &p->calls[p->points[j].call];

		if (!j || p->points[j - 1].thread != p->points[j].thread)
			fprintf(out,
				"<g class=\"thread\" data-tid=\"%" PRIu32
				"\" fill=\"%s\" stroke=\"%s\">\n",
				t->tid, t->colour, t->colour);
		/* 0 ns is drawn as 1 ns */
		plot_put_circle(out, plot_x(p, (double)(c->start_ns - p->t0)),
				plot_y(p, log10(c->latency_ns ? (double)c->latency_ns : 1.0)),
				p->radius, c->off_cpu_ns > 0, NULL);
		fprintf(out, "><title>tid %" PRIu32 ", start ", c->tid);
		plot_put_time(out, c->start_ns - p->t0, p->x_unit);
		fprintf(out, ", latency %" PRIu64 " ns, off-CPU %" PRIu64 " ns</title></circle>\n",
			c->latency_ns, c->off_cpu_ns);
		if (j + 1 == p->n_points || p->points[j + 1].thread != p->points[j].thread)
			fputs("</g>\n", out);
	}
	fputs("</g>\n", out);
}

/* The legend's lines: two marker keys, a gap, the threads named, and one
 * for the threads that are not. */
static size_t plot_legend_rows(size_t n_threads)
{
	return 3 + (n_threads > LATENCY_PLOT_LEGEND_MAX ? LATENCY_PLOT_LEGEND_MAX : n_threads) +
	       (n_threads > LATENCY_PLOT_LEGEND_MAX);
}

static void plot_put_legend(const struct plot *p)
{
	static const char *const keys[] = { "on-CPU only", "with off-CPU time" };
	FILE *out = p->out;
	double x = p->right + 16, y = p->top + PLOT_ROW / 2.0;

	fputs("<g id=\"legend\">\n", out);
	for (size_t i = 0; i < 2; i++, y += PLOT_ROW) {
		fputs("<g class=\"key\">", out);
		plot_put_circle(out, x, y, PLOT_RADIUS, i == 1, PLOT_MARKER_GREY);
		fputs("/>", out);
		plot_open_text(out, "label", x + 10, y + PLOT_FONT / 3);
		fprintf(out, "%s</text></g>\n", keys[i]);
	}
	y += PLOT_ROW;
	for (size_t i = 0; i < p->n_threads && i < LATENCY_PLOT_LEGEND_MAX; i++, y += PLOT_ROW) {
		const struct plot_thread *t = &p->threads[i];

		fprintf(out, "<g class=\"tid\" data-tid=\"%" PRIu32 "\">", t->tid);
		plot_put_circle(out, x, y, PLOT_RADIUS, false, t->colour);
		fputs("/>", out);
		plot_open_text(out, "label", x + 10, y + PLOT_FONT / 3);
		fprintf(out, "tid %" PRIu32 ": ", t->tid);
		svg_out_count(out, (double)t->calls);
		fputs(t->calls == 1 ? " call</text></g>\n" : " calls</text></g>\n", out);
	}
	if (p->n_threads > LATENCY_PLOT_LEGEND_MAX) {
		plot_open_text(out, "more", x - PLOT_RADIUS, y + PLOT_FONT / 3);
		fprintf(out, "and %zu more threads</text>\n",
			p->n_threads - LATENCY_PLOT_LEGEND_MAX);
	}
	fputs("</g>\n", out);
}

int latency_plot_svg(const struct latency_plot_call *calls, size_t n,
		     const struct latency_plot_opts *o, FILE *out)
{
	struct plot p = {
		.out = out,
		.calls = calls,
		.n = n,
		.stride = n > LATENCY_PLOT_POINTS_MAX
				  ? (n + LATENCY_PLOT_POINTS_MAX - 1) / LATENCY_PLOT_POINTS_MAX
				  : 1,
		.width = o->width ? o->width : PLOT_WIDTH,
		.top = o->subtitle ? 66 : 46,
	};
	double legend_bottom;
	int r = 0;

	if (p.width < LATENCY_PLOT_WIDTH_MIN || !o->func)
		return -EINVAL;
	if (n && (r = plot_collect(&p)) < 0)
		goto out;
	p.radius = p.n_points > PLOT_CROWD ? PLOT_RADIUS - 1 : PLOT_RADIUS;
	p.left = PLOT_LEFT;
	p.right = p.width - PLOT_LEGEND_W;
	p.bottom = p.top + PLOT_AREA_H;
	legend_bottom = p.top + plot_legend_rows(p.n_threads) * PLOT_ROW + 10;
	p.height = (unsigned)fmax(p.bottom + PLOT_BOTTOM, legend_bottom);
	errno = 0; /* a failed write leaves its reason here */
	flockfile(out);
	plot_put_head(&p, o);
	if (n) {
		plot_scale(&p);
		plot_put_axes(&p);
		plot_put_points(&p);
		plot_put_legend(&p);
	} else {
		plot_open_text(out, "axis", p.width / 2.0, p.top + PLOT_AREA_H / 2.0);
		fputs("No calls to plot.</text>\n", out);
		r = -ENODATA;
	}
	fputs("</svg>\n", out);
	funlockfile(out);
	if (fflush(out) || ferror(out))
		r = errno ? -errno : -EIO;
out:
	free(p.threads);
	free(p.points);
	return r;
}
