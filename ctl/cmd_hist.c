/*
 * cmd_hist: offcpuctl hist.
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

#include "options.h"
#include "transact.h"

/* ---- hist ---- */

#define HIST_BAR_WIDTH 40

/* The bar of a bucket: count's share of max (> 0) in HIST_BAR_WIDTH stars,
 * rounded down, as bcc's tools draw it. */
static void print_bar(uint64_t count, uint64_t max)
{
	unsigned stars;

	if (count <= UINT64_MAX / HIST_BAR_WIDTH)
		stars = count * HIST_BAR_WIDTH / max;
	else
		stars = (double)count / max * HIST_BAR_WIDTH;
	if (stars > HIST_BAR_WIDTH)
		stars = HIST_BAR_WIDTH;
	printf("|%.*s%*s|\n", (int)stars, "****************************************",
	       (int)(HIST_BAR_WIDTH - stars), "");
}

/*
 * One process's histogram in the layout of bcc's runqlat and cpudist:
 * bucket b is [2^b, 2^(b+1)) microseconds, bucket 0 [0, 2); empty buckets
 * before the first and after the last count are left out. Returns false if
 * the process has no count (nothing printed).
 */
static bool print_hist_process(const struct proto_hist_process *p, const char *what, bool first)
{
	int lo = -1, hi = -1;
	uint64_t max = 0;

	for (int b = 0; b < PROTO_HIST_BUCKETS; b++) {
		if (!p->counts[b])
			continue;
		if (lo < 0)
			lo = b;
		hi = b;
		if (p->counts[b] > max)
			max = p->counts[b];
	}
	if (lo < 0)
		return false;
	if (!first)
		printf("\n");
	printf("pid = %" PRIu32 " comm = %s (%s)\n", p->tgid, p->comm, what);
	printf("     %-19s : count     distribution\n", "usecs");
	for (int b = lo; b <= hi; b++) {
		uint64_t low = b ? UINT64_C(1) << b : 0, high = (UINT64_C(1) << (b + 1)) - 1;

		printf("%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " ", low, high, p->counts[b]);
		print_bar(p->counts[b], max);
	}
	return true;
}

static int hist_process_cmp(const void *a, const void *b)
{
	const struct proto_hist_process *x = *(const struct proto_hist_process *const *)a;
	const struct proto_hist_process *y = *(const struct proto_hist_process *const *)b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

/* The histograms by process id; notes on standard error when there are none. */
static int print_hist(const struct proto_hist_result *h)
{
	const char *what = strcmp(h->kind, "runq") ? "off-CPU time" : "run-queue latency";
	const struct proto_hist_process **order;
	bool printed = false;

	if (!h->windows && h->capture_id) {
		fprintf(stderr, "offcpuctl: note: no window of capture %" PRIu64 " is stored\n",
			h->capture_id);
		return EXIT_OK;
	}
	if (!h->windows) {
		fprintf(stderr, "offcpuctl: note: no stored window starts in that range\n");
		return EXIT_OK;
	}
	order = calloc(h->n_processes + 1, sizeof(*order));
	if (!order)
		return fail(EXIT_ERROR, "internal", "out of memory");
	for (size_t i = 0; i < h->n_processes; i++)
		order[i] = &h->processes[i];
	if (h->n_processes)
		qsort(order, h->n_processes, sizeof(*order), hist_process_cmp);
	for (size_t i = 0; i < h->n_processes; i++)
		if (print_hist_process(order[i], what, !printed))
			printed = true;
	free(order);
	if (!printed)
		fprintf(stderr,
			"offcpuctl: note: no blocks recorded in the %" PRIu64
			" matching window%s\n",
			h->windows, h->windows == 1 ? "" : "s");
	if (fflush(stdout) != 0)
		return fail(EXIT_ERROR, "output_error", "cannot write standard output: %s",
			    strerror(errno));
	return EXIT_OK;
}

int cmd_hist(int argc, char **argv)
{
	enum { OPT_KIND = OPT_RANGE_END };
	static const struct option options[] = {
		RANGE_OPTIONS,
		{ "pid", required_argument, NULL, 'p' },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "json", no_argument, NULL, 'j' },
		WHO_OPTIONS,
		{ 0 },
	};
	struct who_args who = { 0 };
	const uint32_t kinds =
		(UINT32_C(1) << PROTO_KIND_OFFCPU) | (UINT32_C(1) << PROTO_KIND_RUNQ);
	struct range_args range = { 0 };
	struct proto_hist_request *h;
	struct proto_request *req;
	struct proto_reply *reply;
	char *raw;
	int opt, r;

	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_HIST;
	h = &req->hist;
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:j", options, NULL)) != -1) {
		r = EXIT_OK;
		if (range_option(&range, opt, optarg) || who_option(&who, opt, optarg))
			continue;
		switch (opt) {
		case 'p':
			r = parse_pids(optarg, h->pids, &h->n_pids);
			break;
		case OPT_KIND:
			r = parse_kind(optarg, kinds, "bad --kind '%s': want offcpu or runq",
				       &h->kind);
			break;
		case 'j':
			json_output = true;
			break;
		default:
			r = usage_error("%s", "bad hist option");
		}
		if (r != EXIT_OK)
			goto out;
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	r = parse_range("hist", &range, &h->from_ms, &h->to_ms, &h->capture_id);
	if (r == EXIT_OK)
		r = who_args_copy(&who, &h->who);
	if (r != EXIT_OK)
		goto out;

	r = transact(req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		goto out;
	if (json_output)
		printf("%s\n", raw);
	else
		r = print_hist(&reply->hist);
	proto_reply_free(reply);
	free(raw);
out:
	free(req);
	return r;
}
