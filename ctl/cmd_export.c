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

static void export_summary(const struct proto_export_result *res)
{
	if (!res->windows && res->capture_id)
		fprintf(stderr, "offcpuctl: note: no window of capture %" PRIu64 " is stored\n",
			res->capture_id);
	else if (!res->windows)
		fprintf(stderr, "offcpuctl: note: no stored window starts in that range\n");
	if (res->differential && !res->diff_windows)
		fprintf(stderr, "offcpuctl: note: no stored window matches the baseline "
				"(--diff-against); everything shows as new\n");
	if (!res->windows || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "%" PRIu64 " window%s, %.1f s off-CPU", res->windows,
		res->windows == 1 ? "" : "s", res->total_ns / 1e9);
	if (res->differential)
		fprintf(stderr, ", against %" PRIu64 " baseline window%s", res->diff_windows,
			res->diff_windows == 1 ? "" : "s");
	fprintf(stderr, "\n");
}

int cmd_export(int argc, char **argv)
{
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
	static const struct option options[] = {
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
		RESULT_OPTIONS,
		{ 0 },
	};
	struct range_args range = { 0 };
	struct filter_args filters = { 0 };
	const char *baseline = NULL;
	const char *diff_flag = NULL, *diff_svg_flag = NULL; /* the first given */
	struct result_opts ro = RESULT_OPTS_INIT;
	enum proto_format format;
	struct proto_export_request *ex;
	struct proto_request *req;
	struct proto_reply *reply;
	char *raw;
	int opt, r;

	/* Two 1 KiB patterns and the capture's id arrays: keep it off the stack. */
	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_EXPORT;
	ex = &req->export;
	ex->state_mask = THREAD_STATE_ALL;
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		r = 0;
		if (range_option(&range, opt, optarg) || filter_option(&filters, opt, optarg))
			continue;
		switch (opt) {
		case OPT_KIND:
			r = parse_profile_kind(optarg, &ex->kind, &ex->oncpu);
			break;
		case OPT_METRIC:
			r = parse_metric(optarg, &ex->metric);
			break;
		case 'p':
			if (parse_ids(optarg, ex->pids, &ex->n_pids) < 0)
				r = usage_error(
					"bad --pid '%s': want positive pids, comma-separated",
					optarg);
			break;
		case OPT_STATE:
			if (thread_state_mask_parse(optarg, &ex->state_mask) < 0)
				r = usage_error("bad --state '%s': want a list of R, S, D, O "
						"(running, sleeping, disk, other)",
						optarg);
			break;
		case OPT_DIFF_AGAINST:
			baseline = optarg;
			break;
		case OPT_NORMALIZE:
			ex->normalize = 1;
			diff_flag = diff_flag ? diff_flag : "--normalize";
			break;
		case OPT_EXPORT_LINES:
			ex->lines = 1;
			break;
		case OPT_STRIP_HEX:
			ex->strip_hex = 1;
			diff_flag = diff_flag ? diff_flag : "--strip-hex";
			break;
		case OPT_DIFF_REVERSE_VIEW:
			ex->diff_widths_from_old = 1;
			diff_flag = diff_flag ? diff_flag : "--diff-reverse-view";
			diff_svg_flag = diff_svg_flag ? diff_svg_flag : "--diff-reverse-view";
			break;
		case OPT_NEGATE:
			ex->negate = 1;
			diff_flag = diff_flag ? diff_flag : "--negate";
			diff_svg_flag = diff_svg_flag ? diff_svg_flag : "--negate";
			break;
		default:
			r = result_option(&ro, "export", opt, optarg);
		}
		if (r)
			goto out;
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	r = parse_range("export", &range, &ex->from_ms, &ex->to_ms, &ex->capture_id);
	if (r == EXIT_OK && baseline)
		r = export_baseline(ex, baseline);
	if (r == EXIT_OK)
		r = result_opts_format(&ro, &format);
	if (r == EXIT_OK && baseline && ro.pprof)
		r = usage_error("%s", "--diff-against gives folded or svg output, not pprof");
	if (r == EXIT_OK)
		r = export_diff_check(baseline, diff_flag, diff_svg_flag, format);
	if (r == EXIT_OK)
		r = filter_args_copy(&filters, ex->comm, ex->grep, ex->exclude);
	if (r != EXIT_OK)
		goto out;
	ex->format = format;
	ex->render = ro.render;

	r = transact(req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		goto out;
	if (!json_output)
		export_summary(&reply->export);
	if (ro.pprof)
		r = write_export_pprof(ro.path, raw, &reply->export, ex->kind, ex->oncpu);
	else
		r = write_result(ro.path, raw, format, reply->export.folded, reply->export.output);
	proto_reply_free(reply);
	free(raw);
out:
	free(req);
	return r;
}
