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

#include "capture_command.h"
#include "options.h"
#include "output.h"
#include "thread_state.h"
#include "transact.h"

/* proto's limits, as the messages quote them. */
#define KIND_BIT(k)	  (UINT32_C(1) << PROTO_KIND_##k)
#define SECONDS_MAX	  PROTO_STR(PROTO_SECONDS_MAX)
#define SAMPLE_PERIOD_MAX PROTO_STR(PROTO_MAX_SAMPLE_PERIOD_US)
#define CHAIN_DEPTH_MAX	  PROTO_STR(PROTO_CHAIN_DEPTH_MAX)
#define MAX_REQUESTS	  PROTO_STR(PROTO_MAX_REQUESTS)
#define REQUEST_SPEC_MAX  PROTO_STR(PROTO_REQUEST_SPEC_MAX)

/* How much of the time has whole user stacks; only when some were truncated. */
static void user_stacks_summary(const struct proto_user_stacks *us)
{
	uint64_t all = us->complete_ns + us->truncated_ns + us->frame_pointer_ns;
	double pct = all ? 100.0 * us->truncated_ns / all : 0;
	char share[32];

	if (!us->truncated_ns)
		return;
	/* A share that rounds to 0.0 would read as none. */
	if (pct < 0.05)
		snprintf(share, sizeof(share), "under 0.1%%");
	else
		snprintf(share, sizeof(share), "%.1f%%", pct);
	fprintf(stderr,
		"offcpuctl: note: user stacks of %s of the time are incomplete "
		"(root frame [truncated]); %.1f%% reach the thread's first frame, %.1f%% are "
		"frame-pointer walks\n",
		share, 100.0 * us->complete_ns / all, 100.0 * us->frame_pointer_ns / all);
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
	print_notes(res->notes, res->n_notes);
	if (res->sampling.period_us)
		fprintf(stderr,
			"offcpuctl: note: sampled stacks (T = %" PRIu64 " us): %" PRIu64
			" of %" PRIu64 " blocks; per-thread totals are exact, a stack holding 1%%"
			" of the time is within +-%.1f%% (one standard error); %.2f%% of the"
			" time no sample stood for ([unsampled])\n",
			res->sampling.period_us, res->sampling.samples, res->sampling.blocks,
			res->sampling.error_pct, res->sampling.unsampled_pct);
	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "captured %" PRIu64 " stacks, %.3f s %s in %.1f s", res->n_samples,
		res->total_ns / 1e9, what, res->duration_ns / 1e9);
	/* Its id, for export --capture (and the JSON reply's "id"). */
	if (res->id)
		fprintf(stderr, "; stored as capture %" PRIu64 ": offcpuctl export --capture %" PRIu64,
			res->id, res->id);
	fprintf(stderr, "\n");
}

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
static const struct option capture_options[] = {
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
	WHO_OPTIONS,
	{ "group-by", required_argument, NULL, OPT_GROUP_BY },
	RESULT_OPTIONS,
	{ 0 },
};

/* What capture's options give besides the request's fields. */
struct capture_args {
	struct proto_capture_request *cap;
	struct filter_args filters;
	struct who_args who;
	struct result_opts ro;
	bool chain_depth; /* --chain-depth given */
	bool seconds;	  /* --seconds given: with -- CMD, a limit */
};

/* Takes one of capture_options[]: EXIT_OK or the usage error's code. */
static int capture_option(struct capture_args *a, int opt, const char *arg)
{
	uint64_t v;
	int r = EXIT_OK;

	if (filter_option(&a->filters, opt, arg) || who_option(&a->who, opt, arg))
		return EXIT_OK;
	switch (opt) {
	case 'p':
		r = parse_pids(arg, a->cap->pids, &a->cap->n_pids);
		break;
	case OPT_GROUP_BY:
		r = parse_group_by(arg, &a->cap->group_by);
		break;
	case 't':
		if (parse_ids(arg, a->cap->tids, &a->cap->n_tids) < 0)
			r = usage_error("bad --tid '%s': want positive tids, comma-separated", arg);
		break;
	case 'd':
		if (parse_u64(arg, PROTO_SECONDS_MAX, &v) < 0 || v == 0)
			r = usage_error("bad --seconds '%s': want 1 to " SECONDS_MAX, arg);
		a->cap->seconds = v;
		a->seconds = true;
		break;
	case OPT_STATE:
		r = parse_states(arg, &a->cap->state_mask);
		break;
	case OPT_MIN:
		if (parse_u64(arg, UINT64_MAX / 1000, &a->cap->min_block_us) < 0)
			r = usage_error("bad --min-block-us '%s'", arg);
		break;
	case OPT_MAX:
		if (parse_u64(arg, UINT64_MAX / 1000, &a->cap->max_block_us) < 0 ||
		    a->cap->max_block_us == 0)
			r = usage_error("bad --max-block-us '%s': want a positive number", arg);
		break;
	case 'U':
		a->cap->stacks = PROTO_STACKS_USER;
		break;
	case 'K':
		a->cap->stacks = PROTO_STACKS_KERNEL;
		break;
	case OPT_KIND:
		r = parse_profile_kind(arg, &a->cap->kind, &a->cap->oncpu);
		break;
	case OPT_METRIC:
		r = parse_metric(arg, &a->cap->metric);
		break;
	case OPT_SPLIT_RUNQ:
		a->cap->split_runq = 1;
		break;
	case OPT_WITH_FILENAME:
		a->cap->with_filename = 1;
		break;
	case OPT_SAMPLED:
		a->cap->sampled = 1;
		if (arg && (parse_u64(arg, PROTO_MAX_SAMPLE_PERIOD_US, &v) < 0 || !v))
			r = usage_error("--sampled: the period is 1 to " SAMPLE_PERIOD_MAX
					" microseconds, not '%s'",
					arg);
		else if (arg)
			a->cap->sample_period_us = (uint32_t)v;
		break;
	case OPT_LINES:
		a->cap->lines = 1;
		break;
	case OPT_CHAIN_DEPTH:
		if (parse_u64(arg, PROTO_CHAIN_DEPTH_MAX, &v) < 0 || v == 0)
			r = usage_error("bad --chain-depth '%s': want 1 to " CHAIN_DEPTH_MAX
					" waker levels",
					arg);
		else
			a->cap->chain_depth = v;
		a->chain_depth = true;
		break;
	case OPT_REQUEST:
		if (a->cap->n_requests == PROTO_MAX_REQUESTS)
			r = usage_error("more than " MAX_REQUESTS " --request symbols, at '%s'",
					arg);
		else if (!*arg || strlen(arg) > PROTO_REQUEST_SPEC_MAX)
			r = usage_error("bad --request '%s': want SYMBOL[@BINARY], at "
					"most " REQUEST_SPEC_MAX " bytes",
					arg);
		else
			strcpy(a->cap->requests[a->cap->n_requests++], arg);
		break;
	default:
		r = result_option(&a->ro, "capture", opt, arg);
	}
	return r;
}

/*
 * The options that apply to some kinds only, checked as the daemon checks
 * them (proto_request_table.c), before the capture starts.
 */
static int capture_kind_check(const struct proto_capture_request *cap, bool chain_depth)
{
	const struct {
		bool given;
		uint32_t kinds; /* bit per enum proto_kind it applies to */
		const char *message;
	} rules[] = {
		{ cap->metric == PROTO_METRIC_BYTES, KIND_BIT(BIO) | KIND_BIT(FILEIO),
		  "--metric bytes only applies to --kind bio or fileio, not %s" },
		{ cap->with_filename, KIND_BIT(FILEIO),
		  "--with-filename only applies to --kind fileio, not %s" },
		{ cap->sampled, KIND_BIT(OFFCPU) | KIND_BIT(RUNQ),
		  "--sampled only applies to --kind offcpu or runq, not %s" },
		{ cap->split_runq, KIND_BIT(OFFCPU),
		  "--split-runq only applies to --kind offcpu, not %s" },
		{ chain_depth, KIND_BIT(CHAIN),
		  "--chain-depth only applies to --kind chain, not %s" },
	};

	if (cap->max_block_us && cap->max_block_us < cap->min_block_us)
		return usage_error("%s", "--max-block-us is below --min-block-us");
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (rules[i].given && !(rules[i].kinds & (UINT32_C(1) << cap->kind)))
			return usage_error(rules[i].message, proto_kind_name(cap->kind));
	return EXIT_OK;
}

/*
 * Runs the capture req asks for and writes its result as ro says; of
 * command (NULL, or argv after "--"), until it exits. Returns the exit code:
 * with a command, the command's where the capture succeeded.
 */
static int capture_run(struct proto_request *req, const struct result_opts *ro,
		       char *const *command, bool limit)
{
	struct progress progress = { .start = time(NULL), .seconds = req->capture.seconds };
	enum proto_format format = req->capture.format;
	enum proto_kind kind = req->capture.kind;
	bool oncpu = req->capture.oncpu;
	struct command *cmd = NULL;
	struct proto_reply *reply;
	char *raw;
	int r, exit_code;

	if (command) {
		/* No progress line: the terminal is the command's. */
		r = capture_command_run(req, command, limit, &reply, &raw, &cmd);
		if (r == EXIT_OK)
			reply->capture.target_exited = false; /* the command's exit ends it */
	} else {
		signal(SIGINT, on_sigint);
		r = transact(req, isatty(STDERR_FILENO) ? progress_tick : NULL, &progress, &reply,
			     &raw);
	}
	if (progress.shown)
		fprintf(stderr, "\r\033[K");
	if (r != EXIT_OK)
		return r;
	if (!json_output)
		capture_summary(&reply->capture, kind, oncpu);
	if (ro->pprof)
		r = write_capture_pprof(ro->path, raw, &reply->capture, kind, oncpu);
	else
		r = write_result(ro->path, raw, format, reply->capture.folded,
				 reply->capture.output);
	proto_reply_free(reply);
	free(raw);
	if (cmd) {
		exit_code = command_wait(cmd);
		command_free(cmd);
		if (r == EXIT_OK)
			r = exit_code;
	}
	return r;
}

int cmd_capture(int argc, char **argv)
{
	struct capture_args a = { .ro = RESULT_OPTS_INIT };
	enum proto_format format;
	struct proto_request *req;
	struct proto_capture_request *cap;
	char **command = NULL;
	int opt, r = EXIT_OK;

	/* "-- CMD ARGS": the command to run, whatever its arguments look like;
	 * the options are before it. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			command = argv + i + 1;
			argc = i;
			break;
		}
	}
	if (command && !*command)
		return usage_error("%s", "no command after '--': want -- CMD [ARGS...]");

	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_CAPTURE;
	cap = a.cap = &req->capture;
	cap->seconds = PROTO_SECONDS_DEFAULT;
	cap->state_mask = THREAD_STATE_ALL;
	cap->chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while (r == EXIT_OK && (opt = getopt_long(argc, argv, "p:t:d:UK" RESULT_SHORT_OPTIONS,
						  capture_options, NULL)) != -1)
		r = capture_option(&a, opt, optarg);
	if (r == EXIT_OK && optind < argc)
		r = usage_error("unexpected argument '%s'", argv[optind]);
	if (r == EXIT_OK && command && (cap->n_pids || cap->n_tids))
		r = usage_error("%s", "--pid and --tid do not go with '-- CMD': the capture is of "
				      "the command and the processes it starts");
	if (r == EXIT_OK)
		r = capture_kind_check(cap, a.chain_depth);
	if (r == EXIT_OK)
		r = result_opts_format(&a.ro, &format);
	if (r == EXIT_OK)
		r = filter_args_copy(&a.filters, cap->comm, cap->grep, cap->exclude);
	if (r == EXIT_OK)
		r = who_args_copy(&a.who, &cap->who);
	if (r == EXIT_OK) {
		cap->format = format;
		cap->render = a.ro.render;
		r = capture_run(req, &a.ro, command, a.seconds);
	}
	free(req);
	return r;
}
