/*
 * cmd_latency: offcpuctl latency.
 */
#include "ctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_funcs.h"
#include "flame_options.h"
#include "latency.h"
#include "latency_plot.h"
#include "offline.h"
#include "options.h"
#include "output.h"
#include "transact.h"

/* latency: Intel PT function latency, from the daemon (--pid) or from a
 * stored trace (--from-trace, analysed here: ctl/latency.c). */
enum { OPT_FUNC = 700, OPT_FROM_TRACE, OPT_LATENCY_RANGE, OPT_TIMELINE, OPT_SNAPSHOT };

/* Has offcpud record the process; the trace file it stored goes to
 * trace_path (analysed here like --from-trace). */
static int latency_record(uint32_t pid, const char *func, uint32_t seconds, bool snapshot,
			  char *trace_path, size_t path_size)
{
	struct proto_request req = { .cmd = PROTO_CMD_LATENCY };
	const struct proto_pt_trace_result *t;
	struct proto_reply *reply = NULL;
	char *raw = NULL;
	int r;

	if (strlen(func) > PROTO_REQUEST_SPEC_MAX)
		return usage_error("--func is too long: at most %s bytes",
				   PROTO_STR(PROTO_REQUEST_SPEC_MAX));
	req.latency.pid = pid;
	req.latency.seconds = seconds;
	req.latency.snapshot = snapshot;
	strcpy(req.latency.func, func);
	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (!reply->has_trace) {
		proto_reply_free(reply);
		free(raw);
		return fail(EXIT_ERROR, "bad_reply", "offcpud answered latency without a trace");
	}
	t = &reply->trace;
	fprintf(stderr,
		"offcpuctl: recorded %s: %" PRIu64 " bytes of %s trace from %" PRIu64
		" threads%s%s, %" PRIu64 " context switches",
		t->path, t->bytes, t->event, t->threads, t->snapshot ? " (snapshot)" : "",
		t->filtered ? ", filtered to the function" : "", t->switches);
	if (t->threads_lost || t->truncated || t->lost)
		fprintf(stderr,
			"; lost: %" PRIu64 " threads, %" PRIu64 " streams truncated, %" PRIu64
			" sideband records",
			t->threads_lost, t->truncated, t->lost);
	fputc('\n', stderr);
	snprintf(trace_path, path_size, "%s", t->path);
	proto_reply_free(reply);
	free(raw);
	return EXIT_OK;
}

/* The svg options the --timeline plot takes: --title, --subtitle, --width. */
static int latency_plot_options(const struct result_opts *ro, struct latency_opts *lo)
{
	const struct proto_render *r = &ro->render;

	if (r->countname[0] || r->frame_height || r->minwidth[0] || r->inverted || r->reverse ||
	    r->flamechart || r->palette != PROTO_PALETTE_AUTO)
		return usage_error("%s", "the --timeline plot takes --title, --subtitle and "
					 "--width; the other svg options are the flame graph's");
	_Static_assert(LATENCY_PLOT_WIDTH_MIN == 400, "the message below");
	if (r->width && r->width < LATENCY_PLOT_WIDTH_MIN)
		return usage_error("--width of the --timeline plot: at least %s pixels", "400");
	lo->title = r->title[0] ? r->title : NULL;
	lo->subtitle = r->subtitle[0] ? r->subtitle : NULL;
	lo->width = r->width;
	return EXIT_OK;
}

int cmd_latency(int argc, char **argv)
{
	static const struct option options[] = {
		RESULT_OPTIONS,
		{ "pid", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "func", required_argument, NULL, OPT_FUNC },
		{ "from-trace", required_argument, NULL, OPT_FROM_TRACE },
		{ "latency-range", required_argument, NULL, OPT_LATENCY_RANGE },
		{ "timeline", no_argument, NULL, OPT_TIMELINE },
		{ "snapshot", no_argument, NULL, OPT_SNAPSHOT },
		{ 0 },
	};
	struct latency_opts lo = { .max_ns = UINT64_MAX, .output = LATENCY_REPORT };
	struct result_opts ro = RESULT_OPTS_INIT;
	uint64_t pid = 0, seconds = 10;
	char err[512], *text = NULL, recorded[4200], sym[PROTO_REQUEST_SPEC_MAX + 1], bin[512];
	bool timeline = false, snapshot = false;
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:d:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		if (opt == 'p') {
			if (parse_u64(optarg, PROTO_PID_MAX, &pid) < 0 || !pid)
				return usage_error("--pid takes a process id, not '%s'", optarg);
		} else if (opt == 'd') {
			if (parse_u64(optarg, PROTO_SECONDS_MAX, &seconds) < 0 || !seconds)
				return usage_error("--seconds takes 1.." PROTO_STR(
							   PROTO_SECONDS_MAX) ", not '%s'",
						   optarg);
		} else if (opt == OPT_FUNC) {
			lo.func = optarg;
		} else if (opt == OPT_FROM_TRACE) {
			lo.trace_path = optarg;
		} else if (opt == OPT_LATENCY_RANGE) {
			if (latency_parse_range(optarg, &lo.min_ns, &lo.max_ns) < 0)
				return usage_error("--latency-range takes MIN,MAX in ns, not '%s'",
						   optarg);
		} else if (opt == OPT_TIMELINE) {
			timeline = true;
		} else if (opt == OPT_SNAPSHOT) {
			snapshot = true;
		} else if ((r = result_option(&ro, "latency", opt, optarg)) != EXIT_OK) {
			return r;
		}
	}
	if (optind < argc)
		return usage_error("latency takes no arguments, got '%s'", argv[optind]);
	if (!lo.func)
		return usage_error("%s", "latency needs --func SYMBOL");
	if (!!pid == !!lo.trace_path)
		return usage_error("%s", "latency needs one of --pid P or --from-trace FILE");
	if (snapshot && !pid)
		return usage_error("%s", "--snapshot is for recording (--pid)");
	if (timeline && ro.format == PROTO_FORMAT_SVG) {
		lo.output = LATENCY_TIMELINE_SVG;
		r = latency_plot_options(&ro, &lo);
		if (r != EXIT_OK)
			return r;
	} else if (timeline) {
		if (ro.format >= 0 || ro.pprof || json_output)
			return usage_error("%s",
					   "--timeline is text, or a plot with --svg (--json "
					   "has the timeline too): leave out --json and --format");
		lo.output = LATENCY_TIMELINE;
	} else if (ro.format == PROTO_FORMAT_SVG || ro.format == PROTO_FORMAT_SPEEDSCOPE ||
		   ro.format == PROTO_FORMAT_FOLDED) {
		lo.output = LATENCY_FOLDED;
	} else if (json_output) {
		lo.output = LATENCY_JSON; /* --json or --format json: report and timeline */
	} else if (ro.format >= 0 || ro.pprof) {
		return usage_error("%s", "latency writes a report, --timeline, --json, --format "
					 "folded, svg or speedscope");
	}
	if (pid) {
		r = latency_record((uint32_t)pid, lo.func, (uint32_t)seconds, snapshot, recorded,
				   sizeof(recorded));
		if (r != EXIT_OK)
			return r;
		/* the trace's files are searched for the symbol: no @BINARY */
		if (elf_funcs_split_spec(lo.func, sym, sizeof(sym), bin, sizeof(bin)) == 0)
			lo.func = sym;
		lo.trace_path = recorded;
	}
	r = latency_from_trace(&lo, &text, err, sizeof(err));
	if (r < 0)
		return fail(EXIT_ERROR,
			    r == -ESRCH	    ? "no_such_function"
			    : r == -ENODATA ? PROTO_ERR_NO_DATA
					    : "input_error",
			    "%s", err);
	if (lo.output == LATENCY_FOLDED &&
	    (ro.format == PROTO_FORMAT_SVG || ro.format == PROTO_FORMAT_SPEEDSCOPE)) {
		if (!ro.render.countname[0])
			strcpy(ro.render.countname, "ns");
		struct flame_pl_args pl = { 0 };

		r = draw(NULL, NULL, text, strlen(text), lo.trace_path, &ro, NULL, &pl,
			 "Latency Flame Graph");
	} else {
		r = write_output(ro.path, text);
	}
	free(text);
	return r;
}
