/*
 * offline: what flamegraph and diff share: reading folded files, their
 * filters and flamegraph.pl's options, and drawing.
 */
#include "offline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "flame_options.h"
#include "options.h"
#include "pprof.h"
#include "render_output.h"
#include "stack_filter.h"
#include "thread_state.h"

/* ---- offline rendering: flamegraph, diff ---- */

int read_all(const char *path, char **ret, size_t *ret_len)
{
	FILE *in = strcmp(path, "-") ? fopen(path, "re") : stdin;
	size_t len = 0, cap = 0;
	char *buf = NULL;

	if (!in)
		return -errno;
	for (;;) {
		size_t n;

		if (cap - len < 65536) {
			char *b = realloc(buf, cap ? cap * 2 : 1 << 20);

			if (!b) {
				free(buf);
				if (in != stdin)
					fclose(in);
				return -ENOMEM;
			}
			buf = b;
			cap = cap ? cap * 2 : 1 << 20;
		}
		n = fread(buf + len, 1, cap - len - 1, in);
		len += n;
		if (n == 0)
			break;
	}
	buf[len] = '\0';
	if (ferror(in)) {
		free(buf);
		if (in != stdin)
			fclose(in);
		return -EIO;
	}
	if (in != stdin)
		fclose(in);
	*ret = buf;
	*ret_len = len;
	return 0;
}

void warn_invalid(const char *what, const struct flame_parse_stats *st)
{
	if (st->invalid)
		fprintf(stderr,
			"offcpuctl: warning: %s: %" PRIu64 " invalid line%s skipped (first: line "
			"%" PRIu64 ")\n",
			what, st->invalid, st->invalid == 1 ? "" : "s", st->first_invalid);
}

int fail_too_large(const char *name, const struct flame_parse_stats *st)
{
	if (st->too_large_count[0])
		return fail(EXIT_ERROR, "input_error",
			    "%s:%" PRIu64 ": count %s is too large (at most %.0f)", name,
			    st->too_large_line, st->too_large_count, FLAME_COUNT_EXACT_MAX);
	return fail(EXIT_ERROR, "input_error",
		    "%s:%" PRIu64 ": the counts add up to more than %.0f", name, st->too_large_line,
		    FLAME_COUNT_EXACT_MAX);
}

bool offline_option(struct offline_args *a, int opt, const char *arg)
{
	if (opt == 'p')
		a->pid = arg;
	else if (opt == OPT_OFFLINE_STATE)
		a->state = arg;
	else
		return filter_option(&a->f, opt, arg);
	return true;
}

int offline_filter(const struct offline_args *a, struct stack_filter **ret)
{
	char comm[PROTO_COMM_MAX + 1], grep[PROTO_REGEX_MAX + 1], exclude[PROTO_REGEX_MAX + 1];
	struct stack_filter_spec spec = {
		.comm = a->f.comm,
		.state_mask = THREAD_STATE_ALL,
		.grep = a->f.grep,
		.exclude = a->f.exclude,
		.folded = true,
	};
	uint32_t pids[PROTO_MAX_IDS];
	char err[256], msg[384];
	int r;

	*ret = NULL;
	if (!a->f.comm && !a->f.grep && !a->f.exclude && !a->pid && !a->state)
		return EXIT_OK;
	r = filter_args_copy(&a->f, comm, grep, exclude);
	if (r != EXIT_OK)
		return r;
	r = a->pid ? parse_pids(a->pid, pids, &spec.n_pids) : EXIT_OK;
	if (r == EXIT_OK && a->state)
		r = parse_states(a->state, &spec.state_mask);
	if (r != EXIT_OK)
		return r;
	spec.pids = pids;
	r = stack_filter_new(&spec, ret, err, sizeof(err));
	if (r == -EINVAL) {
		snprintf(msg, sizeof(msg),
			 "%s%s%s: %s; use them with 'offcpuctl export' or 'capture'",
			 a->pid ? "--pid" : "", a->pid && a->state ? " and " : "",
			 a->state ? "--state" : "", err);
		return usage_error("%s", msg);
	}
	if (r < 0)
		return fail(EXIT_ERROR, "internal", "out of memory");
	return EXIT_OK;
}

bool offline_pl_option(struct flame_pl_args *pl, int opt, const char *arg, int *r)
{
	char err[512];
	int t;

	if (opt == OPT_PALETTE && flame_pl_palette_option(pl, arg)) {
		if (!pl->svg_only)
			pl->svg_only = "--palette";
		*r = EXIT_OK;
		return true;
	}
	t = flame_pl_option(pl, opt, arg, err, sizeof(err));
	if (!t)
		return false;
	*r = t < 0 ? usage_error("%s", err) : EXIT_OK;
	return true;
}

void offline_pl_default(struct flame_pl_args *pl, const struct result_opts *ro)
{
	if (!pl->svg.pl_palette && ro->render.palette == PROTO_PALETTE_AUTO &&
	    (pl->svg.colour_key != FLAME_KEY_NAME || pl->map_path))
		pl->svg.pl_palette = FLAME_PL_HOT;
}

/* Feeds path ("-": stdin) to f in chunks cut after a newline, so a large
 * input is never held whole; with a filter, only the lines it keeps.
 * Returns 0 or -errno. */
static int parse_file(struct flame *f, const char *path, const struct stack_filter *filter)
{
	FILE *in = strcmp(path, "-") ? fopen(path, "re") : stdin;
	size_t cap = 4 << 20, len = 0;
	char *buf;
	int r = 0;

	if (!in)
		return -errno;
	buf = malloc(cap);
	if (!buf)
		r = -ENOMEM;
	while (r == 0) {
		size_t n = fread(buf + len, 1, cap - len, in), cut;

		len += n;
		if (n == 0) { /* end of input: the rest is the last line */
			if (filter)
				len = stack_filter_folded(filter, buf, len);
			r = len ? flame_parse(f, buf, len) : 0;
			break;
		}
		for (cut = len; cut > 0 && buf[cut - 1] != '\n'; cut--)
			;
		if (cut == 0 && len == cap) { /* one line longer than the buffer */
			char *b = realloc(buf, cap * 2);

			if (!b) {
				r = -ENOMEM;
				break;
			}
			buf = b;
			cap *= 2;
			continue;
		}
		r = flame_parse(f, buf, filter ? stack_filter_folded(filter, buf, cut) : cut);
		memmove(buf, buf + cut, len - cut);
		len -= cut;
	}
	if (ferror(in) && r == 0)
		r = -EIO;
	free(buf);
	if (in != stdin)
		fclose(in);
	return r;
}

int draw(const char *path, const struct stack_filter *filter, const char *text, size_t len,
	 const char *name, const struct result_opts *o, const struct render_input *input,
	 struct flame_pl_args *pl, const char *default_title)
{
	enum proto_format format = o->format >= 0 ? o->format : PROTO_FORMAT_SVG;
	const char *svg_only = o->svg_only ? o->svg_only : pl->svg_only;
	struct flame *f = NULL;
	FILE *out = stdout;
	char err[128];
	int r, e;

	if (!o->pprof && format != PROTO_FORMAT_SVG && format != PROTO_FORMAT_SPEEDSCOPE)
		return usage_error("%s", "this command draws: --format svg, speedscope or pprof");
	if (svg_only && (o->pprof || format != PROTO_FORMAT_SVG))
		return usage_error("%s only applies to svg output", svg_only);
	if (o->pprof && !o->path && isatty(STDOUT_FILENO))
		return usage_error("%s",
				   "--format pprof writes a binary (gzipped) profile, not "
				   "for a terminal: give -o FILE or redirect standard output");
	if (o->pprof)
		format = PROTO_FORMAT_SPEEDSCOPE; /* parsed as for speedscope: no layout options */
	r = flame_pl_map_load(pl);
	if (r < 0)
		return fail(EXIT_ERROR, "input_error", "cannot read the palette map %s: %s",
			    pl->map_path, strerror(-r));
	if (render_flame_new(format, &o->render, input, &f) < 0)
		return fail(EXIT_ERROR, "internal", "out of memory");
	r = path ? parse_file(f, path, filter) : flame_parse(f, text, len);
	if (r == -ERANGE) {
		r = fail_too_large(name, flame_stats(f));
		flame_free(f);
		return r;
	}
	if (r < 0) {
		flame_free(f);
		return fail(EXIT_ERROR, "input_error", "cannot read %s: %s", name, strerror(-r));
	}
	warn_invalid(name, flame_stats(f));
	/* As flamegraph.pl: a --total below the input's is ignored, with a word
	 * unless it is about the same. */
	if (pl->svg.total > 0 && pl->svg.total < flame_stats(f)->total &&
	    pl->svg.total / flame_stats(f)->total > 0.02)
		fprintf(stderr,
			"offcpuctl: warning: --total %g is less than the input's total %g: "
			"ignored\n",
			pl->svg.total, flame_stats(f)->total);
	if (o->path && !(out = fopen(o->path, "we"))) {
		flame_free(f);
		return fail(EXIT_ERROR, "output_error", "cannot open %s: %s", o->path,
			    strerror(errno));
	}
	if (o->pprof) {
		r = pprof_write_folded(f, NULL, out);
		snprintf(err, sizeof(err), "nothing to draw: the input has no stacks");
	} else {
		r = render_flame_write_pl(f, format, &o->render, &pl->svg, default_title, out, err,
					  sizeof(err));
	}
	flame_free(f);
	if (r == 0 && (e = flame_pl_map_save(pl)) < 0)
		fprintf(stderr, "offcpuctl: warning: cannot write the palette map %s: %s\n",
			pl->map_path, strerror(-e));
	if ((o->path ? fclose(out) : fflush(out)) != 0 && r == 0)
		r = -errno;
	if (r == -ENODATA)
		return fail(EXIT_ERROR, PROTO_ERR_NO_DATA, "%s: %s", name, err);
	if (r < 0)
		return fail(EXIT_ERROR, "output_error", "cannot write %s: %s",
			    o->path ? o->path : "standard output", strerror(-r));
	return EXIT_OK;
}
