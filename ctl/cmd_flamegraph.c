/*
 * cmd_flamegraph: offcpuctl flamegraph, offline (ctl/offline.c).
 */
#include "ctl.h"

#include <getopt.h>
#include <string.h>

#include "flame.h"
#include "flame_options.h"
#include "offline.h"
#include "options.h"
#include "render_output.h"
#include "stack_filter.h"

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option options[] = {
		RESULT_OPTIONS,
		{ "strip-hex", no_argument, NULL, OPT_STRIP_HEX },
		{ "negate", no_argument, NULL, OPT_NEGATE },
		{ "diff-reverse-view", no_argument, NULL, OPT_REVERSE_VIEW },
		OFFLINE_FILTER_OPTIONS,
		FLAME_PL_OPTIONS,
		{ 0 },
	};
	struct result_opts ro = RESULT_OPTS_INIT;
	/* counts beyond 2^53 would be drawn inexact: refused */
	struct render_input input = { .max_count = FLAME_COUNT_EXACT_MAX };
	struct offline_args filters = { 0 };
	struct flame_pl_args pl = { 0 };
	struct stack_filter *filter;
	const char *path = "-";
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		if (offline_option(&filters, opt, optarg))
			continue;
		if (opt == OPT_STRIP_HEX)
			input.strip_hex = true;
		else if (opt == OPT_NEGATE)
			input.negate = true;
		else if (opt == OPT_REVERSE_VIEW)
			input.widths_from_old = true;
		else if (offline_pl_option(&pl, opt, optarg, &r)) {
			if (r != EXIT_OK)
				return r;
		} else if ((r = result_option(&ro, "flamegraph", opt, optarg)) != EXIT_OK)
			return r;
	}
	offline_pl_default(&pl, &ro);
	if (argc - optind > 1)
		return usage_error("flamegraph takes one input file, got '%s' too",
				   argv[optind + 1]);
	if (optind < argc)
		path = argv[optind];
	r = offline_filter(&filters, &filter);
	if (r != EXIT_OK)
		return r;
	r = draw(path, filter, NULL, 0, strcmp(path, "-") ? path : "standard input", &ro, &input,
		 &pl, "Flame Graph");
	stack_filter_free(filter);
	flame_pl_args_free(&pl);
	return r;
}
