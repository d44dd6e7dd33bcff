/*
 * cmd_diff: offcpuctl diff, offline (ctl/offline.c).
 */
#include "ctl.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flame_options.h"
#include "offline.h"
#include "options.h"
#include "output.h"
#include "render_output.h"
#include "stack_filter.h"

int cmd_diff(int argc, char **argv)
{
	static const struct option options[] = {
		RESULT_OPTIONS,
		{ "normalize", no_argument, NULL, OPT_NORMALIZE },
		{ "strip-hex", no_argument, NULL, OPT_STRIP_HEX },
		{ "negate", no_argument, NULL, OPT_NEGATE },
		{ "diff-reverse-view", no_argument, NULL, OPT_REVERSE_VIEW },
		OFFLINE_FILTER_OPTIONS,
		FLAME_PL_OPTIONS,
		{ 0 },
	};
	struct result_opts ro = RESULT_OPTS_INIT;
	struct render_input input = { 0 };
	struct flame_pl_args pl = { 0 };
	struct flame_parse_stats st_a = { 0 }, st_b = { 0 };
	struct offline_args filters = { 0 };
	struct stack_filter *filter = NULL;
	bool normalize = false;
	char *a = NULL, *b = NULL, *diff = NULL;
	size_t len_a, len_b;
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	/* -n and -s: difffolded.pl's --normalize and --strip-hex */
	while ((opt = getopt_long(argc, argv, "nsp:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		if (offline_option(&filters, opt, optarg))
			continue;
		if (opt == OPT_NORMALIZE || opt == 'n')
			normalize = true;
		else if (opt == OPT_STRIP_HEX || opt == 's')
			input.strip_hex = true;
		else if (opt == OPT_NEGATE)
			input.negate = true;
		else if (opt == OPT_REVERSE_VIEW)
			input.widths_from_old = true;
		else if (offline_pl_option(&pl, opt, optarg, &r)) {
			if (r != EXIT_OK)
				return r;
		} else if ((r = result_option(&ro, "diff", opt, optarg)) != EXIT_OK)
			return r;
	}
	offline_pl_default(&pl, &ro);
	if (argc - optind != 2)
		return usage_error("%s", "diff takes two folded files: BEFORE AFTER");
	if ((input.negate || input.widths_from_old) && ro.format != PROTO_FORMAT_SVG)
		return usage_error("%s", "--negate and --diff-reverse-view apply to --svg output");
	r = offline_filter(&filters, &filter);
	if (r != EXIT_OK)
		return r;
	r = read_all(argv[optind], &a, &len_a);
	if (r == 0)
		r = read_all(argv[optind + 1], &b, &len_b);
	if (r < 0) {
		free(a);
		stack_filter_free(filter);
		return fail(EXIT_ERROR, "input_error", "cannot read %s: %s",
			    a ? argv[optind + 1] : argv[optind], strerror(-r));
	}
	if (filter) { /* both sides alike */
		len_a = stack_filter_folded(filter, a, len_a);
		len_b = stack_filter_folded(filter, b, len_b);
		stack_filter_free(filter);
	}
	/* as flamegraph: counts beyond 2^53 would not be exact */
	if (flame_check_counts(a, len_a, FLAME_COUNT_EXACT_MAX, &st_a) < 0 ||
	    flame_check_counts(b, len_b, FLAME_COUNT_EXACT_MAX, &st_b) < 0) {
		r = fail_too_large(st_a.too_large_line ? argv[optind] : argv[optind + 1],
				   st_a.too_large_line ? &st_a : &st_b);
		goto out;
	}
	diff = flame_diff_folded(a, len_a, b, len_b, normalize, input.strip_hex, &st_a, &st_b);
	if (!diff) {
		r = fail(EXIT_ERROR, "internal", "out of memory");
	} else if (ro.format < 0 || ro.format == PROTO_FORMAT_FOLDED) {
		if (ro.svg_only || pl.svg_only)
			r = usage_error("%s only applies to svg output",
					ro.svg_only ? ro.svg_only : pl.svg_only);
		else {
			warn_invalid(argv[optind], &st_a);
			warn_invalid(argv[optind + 1], &st_b);
			r = write_output(ro.path, diff);
		}
	} else {
		input.strip_hex = false; /* already applied to the differential text */
		r = draw(NULL, NULL, diff, strlen(diff), "the differential", &ro, &input, &pl,
			 "Differential Flame Graph");
	}
out:
	flame_pl_args_free(&pl);
	free(a);
	free(b);
	free(diff);
	return r;
}
