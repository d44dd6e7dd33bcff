/*
 * cmd_windows: offcpuctl windows.
 */
#include "ctl.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "output.h"
#include "transact.h"

/* "512 B", "12.3 KiB", ... */
static void format_bytes(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = bytes;
	size_t i = 0;

	if (bytes < 1024) {
		snprintf(buf, size, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		i++;
	}
	snprintf(buf, size, "%.1f %s", v, units[i]);
}

/* A capture's kind; "-" for the continuous profile's windows (they hold
 * its continuous_kinds), "?" for a capture stored before kinds were. */
static const char *window_kind(const struct proto_window_info *w)
{
	if (!w->capture_id)
		return "-";
	return w->kind ? w->kind : "?";
}

/* A capture's targets: "all" where it named none. */
static const char *window_targets(const struct proto_window_info *w)
{
	if (!w->capture_id)
		return "all";
	if (!w->kind)
		return "?";
	return w->targets && *w->targets ? w->targets : "all";
}

static void print_windows(const struct proto_window_info *w, size_t n)
{
	char start[32], end[32], duration[32], capture[32], bytes[32];
	uint64_t total = 0;

	if (!n) {
		printf("no stored windows\n");
		return;
	}
	printf("%-19s  %-19s  %8s  %-10s  %-7s  %8s  %9s  %10s  %s\n", "START", "END", "DURATION",
	       "CAPTURE", "KIND", "STACKS", "SAMPLES", "BYTES", "TARGETS");
	for (size_t i = 0; i < n; i++) {
		format_local(w[i].start_ms, start, sizeof(start));
		format_local(w[i].end_ms, end, sizeof(end));
		format_duration(w[i].end_ms - w[i].start_ms, duration, sizeof(duration));
		if (w[i].capture_id)
			snprintf(capture, sizeof(capture), "%" PRIu64, w[i].capture_id);
		else
			snprintf(capture, sizeof(capture), "continuous");
		format_bytes(w[i].bytes, bytes, sizeof(bytes));
		printf("%-19s  %-19s  %8s  %-10s  %-7s  %8" PRIu64 "  %9" PRIu64 "  %10s  %s\n",
		       start, end, duration, capture, window_kind(&w[i]), w[i].stacks, w[i].samples,
		       bytes, window_targets(&w[i]));
		total += w[i].bytes;
	}
	format_bytes(total, bytes, sizeof(bytes));
	printf("%zu window%s, %s\n", n, n == 1 ? "" : "s", bytes);
}

int cmd_windows(int argc, char **argv)
{
	static const struct option options[] = {
		{ "since", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	struct proto_request req = { .cmd = PROTO_CMD_WINDOWS };
	struct proto_reply *reply;
	const char *since = NULL;
	char *raw;
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "j", options, NULL)) != -1) {
		switch (opt) {
		case 'S':
			since = optarg;
			break;
		case 'j':
			json_output = true;
			break;
		default:
			return usage_error("%s", "bad windows option");
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (since) {
		r = parse_time("--since", since, true, now_ms(), &req.windows.since_ms);
		if (r != EXIT_OK)
			return r;
	}

	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (json_output)
		printf("%s\n", raw);
	else
		print_windows(reply->windows, reply->n_windows);
	proto_reply_free(reply);
	free(raw);
	return EXIT_OK;
}
