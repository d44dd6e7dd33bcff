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
	CHECK(output && strstr(output, proto_title_of_kind(PROTO_KIND_OFFCPU, false)));
	CHECK(output && strstr(output, proto_metric_unit(PROTO_METRIC_TIME)));
	free(output);

	/* The request's own title and unit win. */
	snprintf(opts.title, sizeof(opts.title), "Mine");
	snprintf(opts.countname, sizeof(opts.countname), "widgets");
	CHECK(render("a;b 5\n", &o, &folded, &output, &error) == 0);
	CHECK(output && strstr(output, "Mine") && strstr(output, "widgets"));
	CHECK(output && !strstr(output, proto_title_of_kind(PROTO_KIND_OFFCPU, false)));
	free(output);
	memset(&opts, 0, sizeof(opts));

	o.differential = true;
	CHECK(render("a;b 5 9\n", &o, &folded, &output, &error) == 0);
	CHECK(output && strstr(output, "Differential Off-CPU Flame Graph"));
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
	return CHECK_DONE();
}
