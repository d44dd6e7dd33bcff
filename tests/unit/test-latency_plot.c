/* Unit test of render/latency_plot.c: plots of known calls are parsed back
 * with xml_read (which fails on XML that is not well-formed) and checked:
 * one point per call with its tooltip, hollow when off-CPU, x in proportion
 * to the start, y in proportion to log10(latency), one legend entry and one
 * colour per tid, the y labels, and the subsampling rule. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "latency_plot.h"
#include "xml_read.h"

/* A point as drawn: position, marker, tooltip, its thread group. */
struct point {
	double cx, cy;
	bool hollow;
	const char *title;
	const char *tid; /* the group's data-tid */
	const char *fill;
};

struct plot {
	char *text;
	int r;
	size_t bad_at; /* xml_parse's answer */
	struct xml_doc doc;
	struct point *points;
	size_t n_points;
	const char *title;
};

static void plot_free(struct plot *p)
{
	xml_free(&p->doc);
	free(p->points);
	free(p->text);
}

static void plot(struct plot *p, const struct latency_plot_call *calls, size_t n,
		 const struct latency_plot_opts *o)
{
	struct xml_doc *d = &p->doc;
	size_t size;
	FILE *out;
	int title, points;

	memset(p, 0, sizeof(*p));
	out = open_memstream(&p->text, &size);
	p->r = latency_plot_svg(calls, n, o, out);
	fclose(out);
	p->bad_at = xml_parse(d, p->text);
	if (p->bad_at) {
		fprintf(stderr, "not well-formed at %zu: %.60s\n", p->bad_at - 1,
			p->text + p->bad_at - 1);
		return;
	}
	title = xml_find(d, "text", "id", "title");
	p->title = title >= 0 ? d->els[title].text : NULL;
	points = xml_find(d, "g", "id", "points");
	p->points = calloc(n + 1, sizeof(*p->points));
	for (size_t i = 0; points >= 0 && i < d->n; i++) {
		const struct xml_el *e = &d->els[i], *g;

		if (strcmp(e->name, "circle"))
			continue;
		g = &d->els[e->parent];
		if (g->parent != points || !xml_class_is(g, "thread") || p->n_points == n)
			continue;
		p->points[p->n_points++] = (struct point){
			.cx = xml_num(e, "cx"),
			.cy = xml_num(e, "cy"),
			.hollow = xml_class_is(e, "off"),
			.title = xml_child_text(d, i, "title"),
			.tid = xml_attr(g, "data-tid"),
			.fill = xml_attr(g, "fill"),
		};
	}
}

static const struct point *point_titled(const struct plot *p, const char *title)
{
	for (size_t i = 0; i < p->n_points; i++)
		if (!strcmp(p->points[i].title, title))
			return &p->points[i];
	return NULL;
}

/* Four calls of two threads, out of tid and time order; one of 0 ns. */
static const struct latency_plot_call calls4[] = {
	{ 20, 1001000, 350, 0 },
	{ 10, 1005000, 1100, 500 },
	{ 20, 1003000, 100000, 0 },
	{ 10, 1002000, 0, 0 },
};
static const char *const titles4[] = {
	"tid 20, start 0 ns, latency 350 ns, off-CPU 0 ns",
	"tid 10, start 4000 ns, latency 1100 ns, off-CPU 500 ns",
	"tid 20, start 2000 ns, latency 100000 ns, off-CPU 0 ns",
	"tid 10, start 1000 ns, latency 0 ns, off-CPU 0 ns",
};

static void test_points(void)
{
	const struct latency_plot_opts o = { .func = "handle" };
	const struct point *pt[4];
	struct plot p;

	plot(&p, calls4, 4, &o);
	CHECK(p.r == 0);
	CHECK(!p.bad_at);
	CHECK_STR(p.title, "handle: 4 calls");
	CHECK(p.n_points == 4);
	for (size_t i = 0; i < 4; i++) {
		pt[i] = point_titled(&p, titles4[i]);
		CHECK_MSG(pt[i], "no point titled \"%s\"", titles4[i]);
		if (!pt[i])
			goto out;
		CHECK(pt[i]->hollow == (calls4[i].off_cpu_ns > 0));
		CHECK(!strcmp(pt[i]->tid, i % 2 ? "10" : "20"));
	}
	/* Threads in tid order, each in its input order. */
	CHECK(pt[1] == &p.points[0] && pt[3] == &p.points[1] && pt[0] == &p.points[2]);
	/* x: linear in the start, from the left edge (the first call). */
	CHECK(fabs((pt[1]->cx - pt[0]->cx) - 2 * (pt[2]->cx - pt[0]->cx)) < 0.02);
	CHECK(fabs((pt[3]->cx - pt[0]->cx) - (pt[2]->cx - pt[3]->cx)) < 0.02);
	/* y: longer is higher, in proportion to log10; 0 ns is drawn at 1 ns. */
	CHECK(pt[2]->cy < pt[1]->cy && pt[1]->cy < pt[0]->cy && pt[0]->cy < pt[3]->cy);
	CHECK(fabs((pt[0]->cy - pt[2]->cy) / (pt[3]->cy - pt[0]->cy) -
		   log10(100000 / 350.0) / log10(350.0)) < 0.01);
	/* One colour per thread, the legend's. */
	CHECK(strcmp(pt[0]->fill, pt[1]->fill) != 0);
	{
		const struct xml_doc *d = &p.doc;
		int l10 = -1, l20 = -1;

		for (size_t i = 0; i < d->n; i++) {
			if (!xml_class_is(&d->els[i], "tid"))
				continue;
			if (!strcmp(xml_attr(&d->els[i], "data-tid"), "10"))
				l10 = (int)i;
			else
				l20 = (int)i;
		}
		CHECK(l10 >= 0 && l20 > l10);
		if (l10 < 0 || l20 < 0)
			goto out;
		CHECK_STR(xml_child_text(d, l10, "text"), "tid 10: 2 calls");
		CHECK_STR(xml_child_text(d, l20, "text"), "tid 20: 2 calls");
		CHECK_STR(xml_attr(&d->els[l10 + 1], "fill"), pt[1]->fill);
		CHECK_STR(xml_attr(&d->els[l20 + 1], "fill"), pt[0]->fill);
	}
	CHECK(!strstr(p.text, "nan") && !strstr(p.text, "inf"));
out:
	plot_free(&p);
}

/* y labels: decades from 1 ns (0 ns) to 100 µs, bottom to top; x labels in
 * ns (a 4 µs span). */
static void test_axes(void)
{
	static const char *const want_y[] = { "1 ns",	     "10 ns",	     "100 ns",
					      "1 \xc2\xb5s", "10 \xc2\xb5s", "100 \xc2\xb5s" };
	const struct latency_plot_opts o = { .func = "handle" };
	const struct xml_doc *d;
	struct plot p;
	size_t ny = 0;
	double last_y = INFINITY;

	plot(&p, calls4, 4, &o);
	d = &p.doc;
	for (size_t i = 0; i < d->n && !p.bad_at; i++) {
		if (!xml_class_is(&d->els[i], "ylabel"))
			continue;
		CHECK(ny < 6);
		if (ny < 6)
			CHECK_STR(d->els[i].text, want_y[ny]);
		CHECK(xml_num(&d->els[i], "y") < last_y);
		last_y = xml_num(&d->els[i], "y");
		ny++;
	}
	CHECK(ny == 6);
	CHECK(strstr(p.text, ">call start, ns since the first call</text>"));
	CHECK(strstr(p.text, "class=\"xlabel\" x=\"80\" y=\"462\">0</text>"));
	CHECK(strstr(p.text, ">4000</text>"));
	plot_free(&p);

	/* Within two decades, 2x and 5x are labelled too; a long span in ms. */
	{
		const struct latency_plot_call c[] = { { 1, 0, 150, 0 }, { 1, 30000000, 4000, 0 } };
		static const char *const want[] = { "100 ns",	   "200 ns",	  "500 ns",
						    "1 \xc2\xb5s", "2 \xc2\xb5s", "5 \xc2\xb5s",
						    "10 \xc2\xb5s" };

		plot(&p, c, 2, &o);
		d = &p.doc;
		ny = 0;
		for (size_t i = 0; i < d->n && !p.bad_at; i++)
			if (xml_class_is(&d->els[i], "ylabel")) {
				CHECK(ny < 7);
				if (ny < 7)
					CHECK_STR(d->els[i].text, want[ny]);
				ny++;
			}
		CHECK(ny == 7);
		CHECK(strstr(p.text, ">call start, ms since the first call</text>"));
		CHECK(point_titled(&p, "tid 1, start 30.000000 ms, latency 4000 ns, off-CPU 0 ns"));
		plot_free(&p);
	}
}

/* Names from C++ hold < > &; --title and --subtitle text too. */
static void test_escaping(void)
{
	const char *func = "std::less<int>::operator()(int const&, int const&) \"x\" 'y'";
	struct latency_plot_opts o = { .func = func };
	struct plot p;

	plot(&p, calls4, 1, &o);
	CHECK(!p.bad_at);
	CHECK(p.title && !strncmp(p.title, func, strlen(func)));
	CHECK_STR(p.title + strlen(func), ": 1 call");
	plot_free(&p);
	o.title = "a<b & c>d";
	o.subtitle = "</text><script>alert(1)</script>";
	plot(&p, calls4, 1, &o);
	CHECK(!p.bad_at);
	CHECK_STR(p.title, "a<b & c>d: 1 call");
	CHECK(!strstr(p.text, "<script"));
	{
		int sub = xml_find(&p.doc, "text", "id", "subtitle");

		CHECK(sub >= 0);
		if (sub >= 0)
			CHECK_STR(p.doc.els[sub].text, o.subtitle);
	}
	plot_free(&p);
}

/* n calls of 7 threads, call i of tid 100 + i % 7, i us after the first. */
static struct latency_plot_call *many_calls(size_t n)
{
	struct latency_plot_call *c = calloc(n, sizeof(*c));

	for (size_t i = 0; i < n; i++)
		c[i] = (struct latency_plot_call){ 100 + i % 7, 5000000 + i * 1000,
						   100 + (i * 7919) % 1000000, i % 5 ? 0 : 50 };
	return c;
}

/* Up to LATENCY_PLOT_POINTS_MAX calls all drawn; above, every Nth in input
 * order, N = ceil(calls / max), said in the title. */
static void test_subsample(void)
{
	static const struct {
		size_t n, stride;
		const char *title;
	} cases[] = {
		{ LATENCY_PLOT_POINTS_MAX, 1, "f: 20,000 calls" },
		{ LATENCY_PLOT_POINTS_MAX + 1, 2, "f: every 2nd call of 20,001" },
		{ 45000, 3, "f: every 3rd call of 45,000" },
		{ 210001, 11, "f: every 11th call of 210,001" },
	};
	const struct latency_plot_opts o = { .func = "f" };

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		size_t n = cases[k].n, stride = cases[k].stride, want = (n + stride - 1) / stride;
		struct latency_plot_call *c = many_calls(n);
		bool *seen = calloc(n, sizeof(*seen));
		size_t bad = 0;
		struct plot p;

		plot(&p, c, n, &o);
		CHECK(p.r == 0 && !p.bad_at);
		CHECK_STR(p.title, cases[k].title);
		CHECK_MSG(p.n_points == want, "%zu calls: %zu points, want %zu", n, p.n_points,
			  want);
		/* Each point is a call i with i % stride == 0, each once; the
		 * start is in the x labels' unit, exact to the ns. */
		for (size_t j = 0; j < p.n_points; j++) {
			const char *t = p.points[j].title, *s = strstr(t, ", start ");
			char *end, tail[96];
			double v = s ? strtod(s + 8, &end) : 0;
			double scale = !s			  ? 0
				       : !strncmp(end, " ns,", 4) ? 1
				       : !strncmp(end, " ms,", 4) ? 1e6
								  : 0;
			size_t i = (size_t)llround(v * scale / 1000);

			if (!scale || i >= n || i % stride || seen[i]) {
				bad++;
				continue;
			}
			seen[i] = true;
			snprintf(tail, sizeof(tail),
				 ", latency %" PRIu64 " ns, off-CPU %" PRIu64 " ns",
				 c[i].latency_ns, c[i].off_cpu_ns);
			bad += strtoul(t + 4, NULL, 10) != c[i].tid || strcmp(end + 3, tail) ||
			       p.points[j].hollow != (c[i].off_cpu_ns > 0);
		}
		CHECK_MSG(!bad, "%zu calls: %zu points are not calls i %% %zu == 0", n, bad,
			  stride);
		/* The file stays bounded: about 150 bytes a point. */
		CHECK(strlen(p.text) < 200 * want + 20000);
		plot_free(&p);
		free(seen);
		free(c);
	}
}

/* 40 threads: 32 named, the rest counted; every thread has its own colour. */
static void test_legend(void)
{
	struct latency_plot_call c[40];
	const struct latency_plot_opts o = { .func = "f" };
	struct plot p;
	size_t named = 0;

	for (size_t i = 0; i < 40; i++)
		c[i] = (struct latency_plot_call){ 1000 - i, i * 10, 100 + i, 0 };
	plot(&p, c, 40, &o);
	CHECK(!p.bad_at && p.n_points == 40);
	for (size_t i = 0; i < p.doc.n; i++)
		named += xml_class_is(&p.doc.els[i], "tid");
	CHECK(named == LATENCY_PLOT_LEGEND_MAX);
	CHECK(strstr(p.text, ">and 8 more threads</text>"));
	for (size_t i = 0; i < p.n_points; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(p.points[i].tid, p.points[j].tid))
				CHECK(strcmp(p.points[i].fill, p.points[j].fill) != 0);
	plot_free(&p);
}

/* The reader the checks rest on tells well-formed XML from the rest. */
static void test_xml_read(void)
{
	static const char *const bad[] = {
		"",
		"<svg>",
		"<svg></g>",
		"<svg><g></svg></g>",
		"<svg/><svg/>",
		"text<svg/>",
		"<svg>a & b</svg>",
		"<svg>a &nbsp; b</svg>",
		"<svg x=1/>",
		"<svg x=\"1\" x=\"2\"/>",
		"<svg x=\"<\"/>",
		"<svg><!-- c --></svg>",
	};
	struct xml_doc d;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_MSG(xml_parse(&d, bad[i]) != 0, "read as well-formed: %s", bad[i]);
		xml_free(&d);
	}
	CHECK(xml_parse(&d, "<?xml version=\"1.0\"?>\n<svg a=\"&lt;&amp;\"><t>x &gt; "
			    "y</t><g/></svg>\n") == 0);
	CHECK(d.n == 3 && d.els[1].parent == 0 && d.els[2].parent == 0);
	if (d.n == 3) {
		CHECK_STR(xml_attr(&d.els[0], "a"), "<&");
		CHECK_STR(d.els[1].text, "x > y");
	}
	xml_free(&d);
}

static void test_errors(void)
{
	struct latency_plot_opts o = { .func = "f" };
	char *text = NULL;
	size_t size;
	FILE *out;
	struct plot p;

	plot(&p, NULL, 0, &o);
	CHECK(p.r == -ENODATA && !p.bad_at);
	CHECK_STR(p.title, "f: 0 calls");
	CHECK(strstr(p.text, "No calls to plot."));
	plot_free(&p);
	o.width = LATENCY_PLOT_WIDTH_MIN - 1;
	out = open_memstream(&text, &size);
	CHECK(latency_plot_svg(calls4, 4, &o, out) == -EINVAL);
	fclose(out);
	CHECK(size == 0);
	free(text);
	o.width = LATENCY_PLOT_WIDTH_MIN;
	plot(&p, calls4, 4, &o);
	CHECK(p.r == 0 && !p.bad_at && p.n_points == 4);
	CHECK(strstr(p.text, "width=\"400\""));
	plot_free(&p);
}

int main(void)
{
	test_points();
	test_axes();
	test_escaping();
	test_subsample();
	test_legend();
	test_errors();
	test_xml_read();
	return CHECK_DONE();
}
