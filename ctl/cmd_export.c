/*
 * cmd_export: offcpuctl export.
 */
#include "ctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "output.h"
#include "thread_state.h"
#include "timearg.h"
#include "transact.h"

/*
 * --diff-against SPEC: "capture:ID", "lastNx" (up to the daemon's now, as
 * for --window) or "T1..T2" (two times as for --from and --to). Fills the
 * request's baseline.
 */
static int export_baseline(struct proto_export_request *ex, const char *spec)
{
	static const char want[] = "bad --diff-against '%s': want capture:ID, lastNx (e.g. "
				   "last1h) or T1..T2 (e.g. 2h-ago..1h-ago)";
	int64_t now = now_ms(), from, to;
	const char *dots;
	char *start;
	uint64_t id;
	int r;

	if (!strncmp(spec, "capture:", 8)) {
		if (parse_u64(spec + 8, UINT64_C(1) << 53, &id) < 0 || id == 0)
			return usage_error("bad --diff-against '%s': want capture:ID with a "
					   "capture id (a positive number)",
					   spec);
		ex->diff_capture = id;
		return EXIT_OK;
	}
	if (!strncmp(spec, "last", 4)) {
		r = timearg_window(spec, now, &ex->diff_from_ms, &to);
		if (r == -ERANGE)
			return usage_error("bad --diff-against '%s': reaches back before 1970",
					   spec);
		return r < 0 ? usage_error(want, spec) : EXIT_OK;
	}
	dots = strstr(spec, "..");
	if (!dots)
		return usage_error(want, spec);
	start = strndup(spec, dots - spec);
	if (!start)
		return fail(EXIT_ERROR, "internal", "out of memory");
	r = parse_time("--diff-against start", start, false, now, &from);
	free(start);
	if (r != EXIT_OK)
		return r;
	r = parse_time("--diff-against end", dots + 2, false, now, &to);
	if (r != EXIT_OK)
		return r;
	if (from == 0)
		return usage_error("bad --diff-against '%s': must start after "
				   "1970-01-01T00:00:00Z",
				   spec);
	if (to <= from)
		return usage_error("bad --diff-against '%s': the end must be later than the "
				   "start",
				   spec);
	ex->diff_from_ms = from;
	ex->diff_to_ms = to;
	return EXIT_OK;
}

/* The differential options against the format: what the daemon would refuse,
 * said in offcpuctl's terms. flag: the first of --normalize ... --negate. */
static int export_diff_check(const char *baseline, const char *flag, const char *svg_flag,
			     enum proto_format format)
{
	if (!baseline && flag)
		return usage_error("%s needs --diff-against", flag);
	if (!baseline)
		return EXIT_OK;
	if (format == PROTO_FORMAT_JSON)
		return usage_error("%s",
				   "--diff-against gives folded or svg output, not JSON rows; "
				   "with --json, add --format folded or --svg to get the "
				   "raw reply");
	if (format == PROTO_FORMAT_SPEEDSCOPE)
		return usage_error("%s", "--diff-against gives folded or svg output, not "
					 "speedscope");
	if (svg_flag && format != PROTO_FORMAT_SVG)
		return usage_error("%s only applies to svg output (--svg or --format svg)",
				   svg_flag);
	return EXIT_OK;
}

/* The daemon's notes say why a result is empty (no window, a baseline
 * that matched none, filters, a kind not recorded): one source for the CLI,
 * --json and the web UI. */
static void export_summary(const struct proto_export_result *res)
{
	print_notes(res->notes, res->n_notes);
	if (!res->windows || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "%" PRIu64 " window%s, %.1f s off-CPU", res->windows,
		res->windows == 1 ? "" : "s", res->total_ns / 1e9);
	if (res->differential)
		fprintf(stderr, ", against %" PRIu64 " baseline window%s", res->diff_windows,
			res->diff_windows == 1 ? "" : "s");
	fprintf(stderr, "\n");
}

enum {
	OPT_KIND = OPT_RANGE_END,
	OPT_STATE,
	OPT_DIFF_AGAINST,
	OPT_NORMALIZE,
	OPT_STRIP_HEX,
	OPT_EXPORT_LINES,
	OPT_DIFF_REVERSE_VIEW,
	OPT_NEGATE,
	OPT_METRIC,
};

static const struct option export_options[] = {
	RANGE_OPTIONS,
	{ "kind", required_argument, NULL, OPT_KIND },
	{ "metric", required_argument, NULL, OPT_METRIC },
	{ "pid", required_argument, NULL, 'p' },
	{ "state", required_argument, NULL, OPT_STATE },
	FILTER_OPTIONS,
	{ "diff-against", required_argument, NULL, OPT_DIFF_AGAINST },
	{ "normalize", no_argument, NULL, OPT_NORMALIZE },
	{ "strip-hex", no_argument, NULL, OPT_STRIP_HEX },
	{ "lines", no_argument, NULL, OPT_EXPORT_LINES },
	{ "diff-reverse-view", no_argument, NULL, OPT_DIFF_REVERSE_VIEW },
	{ "negate", no_argument, NULL, OPT_NEGATE },
	WHO_OPTIONS,
	{ "group-by", required_argument, NULL, OPT_GROUP_BY },
	RESULT_OPTIONS,
	{ 0 },
};

/* What the command line gives besides the request's own fields. */
struct export_args {
	struct range_args range;
	struct filter_args filters;
	struct who_args who;
	const char *baseline;
	const char *diff_flag, *diff_svg_flag; /* the first given */
	struct result_opts ro;
};

/* Notes flag if it is the first differential option given (and the first
 * that only svg uses, if svg_only), for export_diff_check(). */
static void export_diff_flag(struct export_args *a, const char *flag, bool svg_only)
{
	if (!a->diff_flag)
		a->diff_flag = flag;
	if (svg_only && !a->diff_svg_flag)
		a->diff_svg_flag = flag;
}

/* One option of export's own into ex or a. Returns an exit code. */
static int export_option(struct proto_export_request *ex, struct export_args *a, int opt, char *arg)
{
	switch (opt) {
	case OPT_KIND:
		ex->kind_given = 1; /* else an export of a capture takes its kind */
		return parse_profile_kind(arg, &ex->kind, &ex->oncpu);
	case OPT_METRIC:
		return parse_metric(arg, &ex->metric);
	case 'p':
		return parse_pids(arg, ex->pids, &ex->n_pids);
	case OPT_STATE:
		return parse_states(arg, &ex->state_mask);
	case OPT_GROUP_BY:
		return parse_group_by(arg, &ex->group_by);
	case OPT_DIFF_AGAINST:
		a->baseline = arg;
		return EXIT_OK;
	case OPT_NORMALIZE:
		ex->normalize = 1;
		export_diff_flag(a, "--normalize", false);
		return EXIT_OK;
	case OPT_EXPORT_LINES:
		ex->lines = 1;
		return EXIT_OK;
	case OPT_STRIP_HEX:
		ex->strip_hex = 1;
		export_diff_flag(a, "--strip-hex", false);
		return EXIT_OK;
	case OPT_DIFF_REVERSE_VIEW:
		ex->diff_widths_from_old = 1;
		export_diff_flag(a, "--diff-reverse-view", true);
		return EXIT_OK;
	case OPT_NEGATE:
		ex->negate = 1;
		export_diff_flag(a, "--negate", true);
		return EXIT_OK;
	default:
		return result_option(&a->ro, "export", opt, arg);
	}
}

/* Parses the command line into ex and a. Returns an exit code. */
static int export_parse(int argc, char **argv, struct proto_export_request *ex,
			struct export_args *a)
{
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:" RESULT_SHORT_OPTIONS, export_options, NULL)) !=
	       -1) {
		if (range_option(&a->range, opt, optarg) || filter_option(&a->filters, opt, optarg) ||
		    who_option(&a->who, opt, optarg))
			continue;
		r = export_option(ex, a, opt, optarg);
		if (r)
			return r;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return EXIT_OK;
}

/* Fills the rest of ex from a, with the checks that need all the options
 * at once. Returns an exit code. */
static int export_complete(struct proto_export_request *ex, struct export_args *a)
{
	enum proto_format format;
	int r;

	r = parse_range("export", &a->range, &ex->from_ms, &ex->to_ms, &ex->capture_id);
	if (r == EXIT_OK && a->baseline)
		r = export_baseline(ex, a->baseline);
	if (r == EXIT_OK)
		r = result_opts_format(&a->ro, &format);
	if (r == EXIT_OK && a->baseline && a->ro.pprof)
		r = usage_error("%s", "--diff-against gives folded or svg output, not pprof");
	if (r == EXIT_OK)
		r = export_diff_check(a->baseline, a->diff_flag, a->diff_svg_flag, format);
	if (r == EXIT_OK)
		r = filter_args_copy(&a->filters, ex->comm, ex->grep, ex->exclude);
	if (r == EXIT_OK)
		r = who_args_copy(&a->who, &ex->who);
	if (r != EXIT_OK)
		return r;
	ex->format = format;
	ex->render = a->ro.render;
	return EXIT_OK;
}

/* The kind the reply's rows are: a capture's own where none was asked for
 * (older daemons do not say: the request's). */
static enum proto_kind export_kind(const struct proto_export_result *res, enum proto_kind asked)
{
	int k = res->kind ? proto_kind_from_name(res->kind) : -1;

	return k < 0 ? asked : (enum proto_kind)k;
}

/* Sends req and writes its result where a asks. Returns an exit code. */
static int export_run(struct proto_request *req, const struct export_args *a)
{
	const struct proto_export_request *ex = &req->export;
	struct proto_reply *reply;
	char *raw;
	int r;

	r = transact(req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (!json_output)
		export_summary(&reply->export);
	if (a->ro.pprof)
		r = write_export_pprof(a->ro.path, raw, &reply->export,
				       export_kind(&reply->export, ex->kind), ex->oncpu);
	else
		r = write_result(a->ro.path, raw, ex->format, reply->export.folded,
				 reply->export.output);
	proto_reply_free(reply);
	free(raw);
	return r;
}

int cmd_export(int argc, char **argv)
{
	struct export_args a = { .ro = RESULT_OPTS_INIT };
	struct proto_request *req;
	int r;

	/* Two 1 KiB patterns and the capture's id arrays: keep it off the stack. */
	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_EXPORT;
	req->export.state_mask = THREAD_STATE_ALL;
	r = export_parse(argc, argv, &req->export, &a);
	if (r == EXIT_OK)
		r = export_complete(&req->export, &a);
	if (r == EXIT_OK)
		r = export_run(req, &a);
	free(req);
	return r;
}
