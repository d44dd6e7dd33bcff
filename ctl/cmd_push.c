/*
 * cmd_push: offcpuctl push: the continuous windows of a range sent again to
 * the push targets (a backfill by hand); offcpud queues them and status
 * shows their progress.
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

/* "2026-11-28 10:00:00 to 11:00:00": the end's date only where it is
 * another day's. */
static void push_span(int64_t from_ms, int64_t to_ms, char *buf, size_t size)
{
	char from[32], to[32];
	size_t date = strlen("2026-11-28 ");

	format_local(from_ms, from, sizeof(from));
	format_local(to_ms, to, sizeof(to));
	snprintf(buf, size, "%s to %s", from,
		 strlen(to) > date && !strncmp(from, to, date) ? to + date : to);
}

static void push_summary(const struct proto_push_result *r)
{
	char span[80];

	push_span(r->from_ms, r->to_ms, span, sizeof(span));
	printf("queued the windows of %s for ", span);
	for (size_t i = 0; i < r->n_targets; i++)
		printf("%s%s", i ? ", " : "", r->targets[i]);
	printf("%s; `offcpuctl status` shows their progress\n", r->n_targets ? "" : "no target");
}

/* --target NAME: a push.NAME of offcpud.conf, checked as the daemon would. */
static int push_target(const char *arg, char *target)
{
	size_t len = strlen(arg);

	if (!len || len > PROTO_PUSH_TARGET_MAX ||
	    arg[strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789_-")])
		return usage_error("bad --target '%s': want a push target's name (push.NAME in "
				   "offcpud.conf): a-z, 0-9, _ and -, at most " PROTO_STR(
					   PROTO_PUSH_TARGET_MAX) " bytes",
				   arg);
	memcpy(target, arg, len + 1);
	return EXIT_OK;
}

int cmd_push(int argc, char **argv)
{
	enum { OPT_TARGET = OPT_RANGE_END };
	static const struct option options[] = {
		TIME_RANGE_OPTIONS,
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	struct proto_request req = { .cmd = PROTO_CMD_PUSH };
	struct range_args range = { 0 };
	struct proto_reply *reply;
	const char *target = NULL;
	char *raw;
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "j", options, NULL)) != -1) {
		if (range_option(&range, opt, optarg))
			continue;
		switch (opt) {
		case OPT_TARGET:
			target = optarg;
			break;
		case 'j':
			json_output = true;
			break;
		default:
			return usage_error("%s", "bad push option");
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	r = parse_range("push", &range, &req.push.from_ms, &req.push.to_ms, NULL);
	if (r == EXIT_OK && target)
		r = push_target(target, req.push.target);
	if (r != EXIT_OK)
		return r;

	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (json_output)
		printf("%s\n", raw);
	else
		push_summary(&reply->push);
	proto_reply_free(reply);
	free(raw);
	return EXIT_OK;
}
