/* Unit test of daemon/profile/reply_render.c: folded text passes through, svg and
 * speedscope are drawn with the kind's title and palette and the metric's
 * unit unless the request names its own, a differential graph gets its own
 * title, and an empty profile is a no_data error reply. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "reply_render.h"

/* reply_render() of text (copied) with o; the three results. */
static int render(const char *text, const struct reply_render_opts *o, char **folded, char **output,
		  char **error)
{
	*folded = *output = *error = NULL;
	return reply_render(strdup(text), o, folded, output, error);
}

static void check_title(const struct reply_render_opts *o, const char *want)
{
	char *t = reply_render_title(o);

	CHECK_STR(t, want);
	free(t);
}

/* Default titles: the kind, the targets, the range (2026-11-28 22:10:05 UTC
 * is 1795903805 s). */
static void test_titles(void)
{
	static const uint32_t pids[] = { 123, 124, 125, 126, 127 }, tids[] = { 7 };
	struct proto_cgroup_filter who = { .unit = "nginx.service" };
	struct reply_render_opts o = {
		.kind = PROTO_KIND_OFFCPU,
		.subject = { .pids = pids,
			     .n_pids = 1,
			     .from_ms = 1795903805000,
			     .to_ms = 1795903835999 },
	};

	check_title(&o, "Off-CPU Time \u2014 pid 123 \u2014 "
			"2026-11-28 22:10:05\u201322:10:35 UTC");
	o.subject.to_ms = 1795914000000; /* another day: its date too */
	check_title(&o, "Off-CPU Time \u2014 pid 123 \u2014 "
			"2026-11-28 22:10:05\u20132026-11-29 01:00:00 UTC");
	o.subject = (struct reply_subject){ .pids = pids,
					    .n_pids = 5,
					    .tids = tids,
					    .n_tids = 1,
					    .comm = "nginx",
					    .who = &who,
					    .capture_id = 7 };
	o.kind = PROTO_KIND_RUNQ;
	check_title(&o, "Run-Queue Wait \u2014 pids 123,124,125 and 2 more, tid 7, comm nginx, "
			"unit nginx.service \u2014 capture 7");
	o.subject = (struct reply_subject){ .capture_id = 9, .diff_capture = 8 };
	o.kind = PROTO_KIND_CHAIN;
	o.differential = true;
	check_title(&o, "Differential Chain \u2014 all processes \u2014 capture 9 vs capture 8");
	o.subject = (struct reply_subject){ .from_ms = 1795903805000,
					    .to_ms = 1795903835000,
					    .diff_from_ms = 1795900205000,
					    .diff_to_ms = 1795900235000 };
	o.kind = PROTO_KIND_OFFCPU;
	o.oncpu = true;
	check_title(&o, "Differential Hot/Cold \u2014 all processes \u2014 "
			"2026-11-28 22:10:05\u201322:10:35 UTC vs "
			"2026-11-28 21:10:05\u201321:10:35 UTC");
	o = (struct reply_render_opts){ .kind = PROTO_KIND_FILEIO };
	check_title(&o, "File I/O \u2014 all processes");
}

int main(void)
{
	struct proto_render opts = { 0 };
	struct reply_render_opts o = {
		.format = PROTO_FORMAT_FOLDED,
		.render = &opts,
		.kind = PROTO_KIND_OFFCPU,
		.metric = PROTO_METRIC_TIME,
	};
	char *folded, *output, *error;

	CHECK(render("a;b 5\n", &o, &folded, &output, &error) == 0);
	CHECK_STR(folded, "a;b 5\n");
	CHECK(!output && !error);
	free(folded);

	o.format = PROTO_FORMAT_SVG;
	CHECK(render("a;b 5\n", &o, &folded, &output, &error) == 0);
	CHECK(!folded && !error && output);
	CHECK(output && strstr(output, ">Off-CPU Time \u2014 all processes</text>"));
	CHECK(output && strstr(output, proto_metric_unit(PROTO_METRIC_TIME)));
	free(output);

	/* The request's own title and unit win. */
	snprintf(opts.title, sizeof(opts.title), "Mine");
	snprintf(opts.countname, sizeof(opts.countname), "widgets");
	CHECK(render("a;b 5\n", &o, &folded, &output, &error) == 0);
	CHECK(output && strstr(output, "Mine") && strstr(output, "widgets"));
	CHECK(output && !strstr(output, "Off-CPU Time"));
	free(output);
	memset(&opts, 0, sizeof(opts));

	o.differential = true;
	CHECK(render("a;b 5 9\n", &o, &folded, &output, &error) == 0);
	CHECK(output && strstr(output, ">Differential Off-CPU Time \u2014 all processes</text>"));
	free(output);
	o.differential = false;

	o.format = PROTO_FORMAT_SPEEDSCOPE;
	CHECK(render("a;b 5\n", &o, &folded, &output, &error) == 0);
	CHECK(output && strstr(output, "speedscope"));
	free(output);

	/* Nothing to draw: an error reply, not an empty picture. */
	o.format = PROTO_FORMAT_SVG;
	CHECK(render("", &o, &folded, &output, &error) == 0);
	CHECK(!folded && !output && error);
	CHECK(error && strstr(error, PROTO_ERR_NO_DATA));
	free(error);

	CHECK(reply_render(NULL, &o, &folded, &output, &error) == -ENOMEM);

	test_titles();
	return CHECK_DONE();
}
