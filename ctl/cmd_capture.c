/*
 * cmd_capture: offcpuctl capture.
 */
#include "ctl.h"

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "thread_state.h"

/* proto's limits, as the messages quote them. */
#define SECONDS_MAX	  PROTO_STR(PROTO_SECONDS_MAX)
#define SAMPLE_PERIOD_MAX PROTO_STR(PROTO_MAX_SAMPLE_PERIOD_US)
#define CHAIN_DEPTH_MAX	  PROTO_STR(PROTO_CHAIN_DEPTH_MAX)
#define MAX_REQUESTS	  PROTO_STR(PROTO_MAX_REQUESTS)
#define REQUEST_SPEC_MAX  PROTO_STR(PROTO_REQUEST_SPEC_MAX)

/* How much of the time has whole user stacks; only when some were truncated. */
static void user_stacks_summary(const struct proto_user_stacks *us)
{
	uint64_t all = us->complete_ns + us->truncated_ns + us->frame_pointer_ns;

	if (!us->truncated_ns)
		return;
	fprintf(stderr,
		"offcpuctl: note: user stacks of %.1f%% of the time are incomplete "
		"(root frame [truncated]); %.1f%% reach the thread's first frame, %.1f%% are "
		"frame-pointer walks\n",
		100.0 * us->truncated_ns / all, 100.0 * us->complete_ns / all,
		100.0 * us->frame_pointer_ns / all);
}

static void capture_summary(const struct proto_capture_result *res, enum proto_kind kind,
			    bool oncpu)
{
	const char *what = oncpu		      ? "on- and off-CPU"
			   : kind == PROTO_KIND_ONCPU ? "on-CPU"
						      : "off-CPU";

	uint64_t dropped = 0;

	for (size_t i = 0; i < res->n_drops; i++)
		dropped += res->drops[i].value;
	if (dropped) {
		fprintf(stderr,
			"offcpuctl: warning: %" PRIu64 " events not fully recorded:", dropped);
		for (size_t i = 0; i < res->n_drops; i++)
			if (res->drops[i].value)
				fprintf(stderr, " %s=%" PRIu64, res->drops[i].name,
					res->drops[i].value);
		fprintf(stderr, "\n");
	}
	if (res->target_exited)
		fprintf(stderr, "offcpuctl: note: a target exited during the capture\n");
	if (res->loaded && *res->loaded)
		fprintf(stderr, "offcpuctl: note: loaded the %s programs in %.1f s (first use)\n",
			res->loaded, res->load_ms / 1e3);
	requests_summary(stderr, "", res->requests, res->n_requests);
	user_stacks_summary(&res->user_stacks);
	if (res->sampling.period_us)
		fprintf(stderr,
			"offcpuctl: note: sampled stacks (T = %" PRIu64 " us): %" PRIu64
			" of %" PRIu64 " blocks; per-thread totals are exact, a stack holding 1%%"
			" of the time is within +-%.1f%% (one standard error)\n",
			res->sampling.period_us, res->sampling.samples, res->sampling.blocks,
			res->sampling.error_pct);
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "captured %" PRIu64 " stacks, %.3f s %s in %.1f s\n",
			res->n_samples, res->total_ns / 1e9, what, res->duration_ns / 1e9);
}

int cmd_capture(int argc, char **argv)
{
	enum {
		OPT_STATE = 256,
		OPT_MIN,
		OPT_MAX,
		OPT_KIND,
		OPT_SPLIT_RUNQ,
		OPT_LINES,
		OPT_CHAIN_DEPTH,
		OPT_REQUEST,
		OPT_METRIC,
		OPT_WITH_FILENAME,
		OPT_SAMPLED,
	};
	static const struct option options[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "min-block-us", required_argument, NULL, OPT_MIN },
		{ "min-us", required_argument, NULL, OPT_MIN },
		{ "max-block-us", required_argument, NULL, OPT_MAX },
		{ "user-only", no_argument, NULL, 'U' },
		{ "kernel-only", no_argument, NULL, 'K' },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "split-runq", no_argument, NULL, OPT_SPLIT_RUNQ },
		{ "with-filename", no_argument, NULL, OPT_WITH_FILENAME },
		{ "sampled", optional_argument, NULL, OPT_SAMPLED },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "metric", required_argument, NULL, OPT_METRIC },
		{ "chain-depth", required_argument, NULL, OPT_CHAIN_DEPTH },
		{ "request", required_argument, NULL, OPT_REQUEST },
		FILTER_OPTIONS,
		RESULT_OPTIONS,
		{ 0 },
	};
	bool chain_depth = false;
	struct filter_args filters = { 0 };
	struct result_opts ro = RESULT_OPTS_INIT;
	enum proto_format format;
	struct proto_request *req;
	struct proto_capture_request *cap;
	enum proto_kind kind;
	bool oncpu;
	struct progress progress = { .start = time(NULL) };
	struct proto_reply *reply;
	uint64_t v;
	char *raw;
	int opt, r;

	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_CAPTURE;
	cap = &req->capture;
	cap->seconds = 10;
	cap->state_mask = THREAD_STATE_ALL;
	cap->chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:t:d:UK" RESULT_SHORT_OPTIONS, options, NULL)) !=
	       -1) {
		r = 0;
		if (filter_option(&filters, opt, optarg))
			continue;
		switch (opt) {
		case 'p':
			if (parse_ids(optarg, cap->pids, &cap->n_pids) < 0)
				r = usage_error(
					"bad --pid '%s': want positive pids, comma-separated",
					optarg);
			break;
		case 't':
			if (parse_ids(optarg, cap->tids, &cap->n_tids) < 0)
				r = usage_error(
					"bad --tid '%s': want positive tids, comma-separated",
					optarg);
			break;
		case 'd':
			if (parse_u64(optarg, PROTO_SECONDS_MAX, &v) < 0 || v == 0)
				r = usage_error("bad --seconds '%s': want 1 to " SECONDS_MAX,
						optarg);
			cap->seconds = v;
			break;
		case OPT_STATE:
			if (thread_state_mask_parse(optarg, &cap->state_mask) < 0)
				r = usage_error("bad --state '%s': want a list of R, S, D, O "
						"(running, sleeping, disk, other)",
						optarg);
			break;
		case OPT_MIN:
			if (parse_u64(optarg, UINT64_MAX / 1000, &cap->min_block_us) < 0)
				r = usage_error("bad --min-block-us '%s'", optarg);
			break;
		case OPT_MAX:
			if (parse_u64(optarg, UINT64_MAX / 1000, &cap->max_block_us) < 0 ||
			    cap->max_block_us == 0)
				r = usage_error("bad --max-block-us '%s': want a positive number",
						optarg);
			break;
		case 'U':
			cap->stacks = PROTO_STACKS_USER;
			break;
		case 'K':
			cap->stacks = PROTO_STACKS_KERNEL;
			break;
		case OPT_KIND:
			r = parse_profile_kind(optarg, &cap->kind, &cap->oncpu);
			break;
		case OPT_METRIC:
			r = parse_metric(optarg, &cap->metric);
			break;
		case OPT_SPLIT_RUNQ:
			cap->split_runq = 1;
			break;
		case OPT_WITH_FILENAME:
			cap->with_filename = 1;
			break;
		case OPT_SAMPLED:
			cap->sampled = 1;
			if (optarg && (parse_u64(optarg, PROTO_MAX_SAMPLE_PERIOD_US, &v) < 0 || !v))
				r = usage_error("--sampled: the period is 1 to " SAMPLE_PERIOD_MAX
						" microseconds, not '%s'",
						optarg);
			else if (optarg)
				cap->sample_period_us = (uint32_t)v;
			break;
		case OPT_LINES:
			cap->lines = 1;
			break;
		case OPT_CHAIN_DEPTH:
			if (parse_u64(optarg, PROTO_CHAIN_DEPTH_MAX, &v) < 0 || v == 0)
				r = usage_error("bad --chain-depth '%s': want 1 to " CHAIN_DEPTH_MAX
						" waker levels",
						optarg);
			else
				cap->chain_depth = v;
			chain_depth = true;
			break;
		case OPT_REQUEST:
			if (cap->n_requests == PROTO_MAX_REQUESTS)
				r = usage_error("more than " MAX_REQUESTS
						" --request symbols, at '%s'",
						optarg);
			else if (!*optarg || strlen(optarg) > PROTO_REQUEST_SPEC_MAX)
				r = usage_error("bad --request '%s': want SYMBOL[@BINARY], at "
						"most " REQUEST_SPEC_MAX " bytes",
						optarg);
			else
				strcpy(cap->requests[cap->n_requests++], optarg);
			break;
		default:
			r = result_option(&ro, "capture", opt, optarg);
		}
		if (r) {
			free(req);
			return r;
		}
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		free(req);
		return r;
	}
	if (cap->max_block_us && cap->max_block_us < cap->min_block_us) {
		free(req);
		return usage_error("%s", "--max-block-us is below --min-block-us");
	}
	if (cap->metric == PROTO_METRIC_BYTES && cap->kind != PROTO_KIND_BIO &&
	    cap->kind != PROTO_KIND_FILEIO) {
		r = usage_error("--metric bytes only applies to --kind bio or fileio, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (cap->with_filename && cap->kind != PROTO_KIND_FILEIO) {
		r = usage_error("--with-filename only applies to --kind fileio, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (cap->sampled && cap->kind != PROTO_KIND_OFFCPU && cap->kind != PROTO_KIND_RUNQ) {
		r = usage_error("--sampled only applies to --kind offcpu or runq, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (cap->split_runq && cap->kind != PROTO_KIND_OFFCPU) {
		r = usage_error("--split-runq only applies to --kind offcpu, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (chain_depth && cap->kind != PROTO_KIND_CHAIN) {
		r = usage_error("--chain-depth only applies to --kind chain, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	r = result_opts_format(&ro, &format);
	if (r == EXIT_OK)
		r = filter_args_copy(&filters, cap->comm, cap->grep, cap->exclude);
	if (r != EXIT_OK) {
		free(req);
		return r;
	}
	cap->format = format;
	cap->render = ro.render;
	progress.seconds = cap->seconds;
	kind = cap->kind;
	oncpu = cap->oncpu;

	signal(SIGINT, on_sigint);
	r = transact(req, isatty(STDERR_FILENO) ? progress_tick : NULL, &progress, &reply, &raw);
	free(req);
	if (progress.shown)
		fprintf(stderr, "\r\033[K");
	if (r != EXIT_OK)
		return r;
	if (!json_output)
		capture_summary(&reply->capture, kind, oncpu);
	if (ro.pprof)
		r = write_capture_pprof(ro.path, raw, &reply->capture, kind, oncpu);
	else
		r = write_result(ro.path, raw, format, reply->capture.folded,
				 reply->capture.output);
	proto_reply_free(reply);
	free(raw);
	return r;
}
