/* reply_render: see reply_render.h. */
#define _GNU_SOURCE /* open_memstream */
#include "reply_render.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Ids listed in a title before "and N more": a title stays one line. */
#define TITLE_MAX_IDS 3

/* The kind's name: its flame graph's title less " Flame Graph" (or
 * " Graph"), which a graph need not say of itself. */
static void put_kind(FILE *f, const struct reply_render_opts *o)
{
	const char *t = proto_title_of_kind(o->kind, o->oncpu);
	size_t len = strlen(t);

	if (len > 12 && !strcmp(t + len - 12, " Flame Graph"))
		len -= 12;
	else if (len > 6 && !strcmp(t + len - 6, " Graph"))
		len -= 6;
	fprintf(f, "%s%.*s", o->differential ? "Differential " : "", (int)len, t);
}

static void put_ids(FILE *f, const char *what, const uint32_t *ids, size_t n, bool *first)
{
	if (!n)
		return;
	fprintf(f, "%s%s%s ", *first ? "" : ", ", what, n > 1 ? "s" : "");
	for (size_t i = 0; i < n && i < TITLE_MAX_IDS; i++)
		fprintf(f, "%s%u", i ? "," : "", ids[i]);
	if (n > TITLE_MAX_IDS)
		fprintf(f, " and %zu more", n - TITLE_MAX_IDS);
	*first = false;
}

static void put_name(FILE *f, const char *what, const char *name, bool *first)
{
	if (!name || !*name)
		return;
	fprintf(f, "%s%s %s", *first ? "" : ", ", what, name);
	*first = false;
}

/* The filters that chose the targets, or "all processes". */
static void put_targets(FILE *f, const struct reply_subject *s)
{
	bool first = true;

	put_ids(f, "pid", s->pids, s->n_pids, &first);
	put_ids(f, "tid", s->tids, s->n_tids, &first);
	put_name(f, "comm", s->comm, &first);
	if (s->who) {
		put_name(f, "cgroup", s->who->cgroup, &first);
		put_name(f, "unit", s->who->unit, &first);
		put_name(f, "container", s->who->container, &first);
	}
	if (first)
		fputs("all processes", f);
}

/* "2026-11-28 22:10:05–22:10:35 UTC" (the end's date only when it differs),
 * or "capture 7". */
static void put_range(FILE *f, int64_t from_ms, int64_t to_ms, uint64_t capture_id)
{
	time_t from = from_ms / 1000, to = to_ms / 1000;
	struct tm a, b;
	char from_s[32], to_s[32];

	if (capture_id) {
		fprintf(f, "capture %llu", (unsigned long long)capture_id);
		return;
	}
	if (!gmtime_r(&from, &a) || !gmtime_r(&to, &b))
		return;
	strftime(from_s, sizeof(from_s), "%Y-%m-%d %H:%M:%S", &a);
	strftime(to_s, sizeof(to_s),
		 a.tm_year == b.tm_year && a.tm_yday == b.tm_yday ? "%H:%M:%S"
								  : "%Y-%m-%d %H:%M:%S",
		 &b);
	fprintf(f, "%s\u2013%s UTC", from_s, to_s);
}

char *reply_render_title(const struct reply_render_opts *o)
{
	const struct reply_subject *s = &o->subject;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	put_kind(f, o);
	fputs(" \u2014 ", f);
	put_targets(f, s);
	if (s->capture_id || s->from_ms > 0) {
		fputs(" \u2014 ", f);
		put_range(f, s->from_ms, s->to_ms, s->capture_id);
		if (o->differential && (s->diff_capture || s->diff_from_ms > 0)) {
			fputs(" vs ", f);
			put_range(f, s->diff_from_ms, s->diff_to_ms, s->diff_capture);
		}
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int reply_render(char *folded, const struct reply_render_opts *o, char **ret_folded,
		 char **ret_output, char **ret_error)
{
	struct proto_render render = *o->render;
	char err[128], *title = NULL;
	int r;

	if (!folded)
		return -ENOMEM;
	if (o->format == PROTO_FORMAT_FOLDED) {
		*ret_folded = folded;
		return 0;
	}
	/* A differential graph keeps "auto": render_output() gives it red/blue. */
	if (render.palette == PROTO_PALETTE_AUTO && !o->differential)
		render.palette = proto_palette_of_kind(o->kind, o->oncpu);
	if (!render.countname[0])
		snprintf(render.countname, sizeof(render.countname), "%s",
			 proto_metric_unit(o->metric));
	if (!render.title[0] && !(title = reply_render_title(o))) {
		free(folded);
		return -ENOMEM;
	}
	r = render_output(folded, strlen(folded), o->format, &render, o->input, title, ret_output,
			  NULL, err, sizeof(err));
	free(title);
	free(folded);
	if (r == -ENODATA) {
		*ret_error = proto_reply_error(PROTO_ERR_NO_DATA, err);
		return *ret_error ? 0 : -ENOMEM;
	}
	return r;
}
