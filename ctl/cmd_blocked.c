/*
 * cmd_blocked: offcpuctl blocked, the threads off the CPU now, longest
 * first, each with where it waits and its stacks. Reads the daemon's state;
 * stops and signals nothing.
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
#include "output.h"
#include "thread_state.h"
#include "transact.h"

#define LIMIT_MAX  PROTO_STR(PROTO_BLOCKED_LIMIT_MAX)
#define MIN_MS_MAX PROTO_STR(PROTO_BLOCKED_MIN_MS_MAX)

#define INDENT "        " /* of a thread's details, under its line */

/*
 * The scheduler's own frames, which every sleeping stack ends in and which
 * say nothing of what the thread waits for: __schedule, schedule,
 * schedule_timeout, schedule_hrtimeout_range, io_schedule, ... Marker
 * frames ("[in progress]", "[unknown]") are skipped too.
 */
static bool blocked_sched_frame(const char *frame)
{
	static const char *const prefixes[] = { "__schedule",	  "schedule",
						"io_schedule",	  "preempt_schedule",
						"__cond_resched", "_cond_resched" };

	if (frame[0] == '[')
		return true;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(frame, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* The innermost kernel frame that names the wait (do_nanosleep,
 * rwsem_down_write_slowpath, pipe_read, ...); "-" if there is none. */
static const char *blocked_waiting_in(const struct proto_blocked_thread *t)
{
	for (size_t i = t->n_kstack; i > 0; i--)
		if (!blocked_sched_frame(t->kstack[i - 1]))
			return t->kstack[i - 1];
	return "-";
}

/* A time off the CPU; under a millisecond, "<1 ms" rather than "0 ms". */
static void blocked_duration(uint64_t ns, char *buf, size_t size)
{
	if (ns < 1000000)
		snprintf(buf, size, "<1 ms");
	else
		format_duration(ns / 1000000 > INT64_MAX ? INT64_MAX : (int64_t)(ns / 1000000), buf,
				size);
}

/* A stack, leaf first: "kernel  leaf", then one frame a line under it. */
static void blocked_print_stack(const char *what, const char *const *frames, size_t n)
{
	for (size_t i = n; i > 0; i--)
		printf(INDENT "%-8s%s\n", i == n ? what : "", frames[i - 1]);
}

static void blocked_print_thread(const struct proto_blocked_thread *t)
{
	char blocked[48], dur[32];

	blocked_duration(t->blocked_ns, dur, sizeof(dur));
	/* Its switch-out came before offcpud saw switches: at least this long. */
	snprintf(blocked, sizeof(blocked), "%s%s", t->since_ms ? "" : "at least ", dur);
	printf("%-7" PRIu32 " %-7" PRIu32 " %-16s %-5s %-15s %s\n", t->tgid, t->pid, t->comm,
	       t->state, blocked, blocked_waiting_in(t));
	if (!t->since_ms)
		printf(INDENT "since before offcpud started\n");
	if (t->cgroup && *t->cgroup && strcmp(t->cgroup, "/"))
		printf(INDENT "cgroup %s\n", t->cgroup);
	blocked_duration(t->runq_ns, dur, sizeof(dur));
	if (t->waker_comm && t->waker_pid)
		printf(INDENT "woken by %s (pid %" PRIu32 " tid %" PRIu32 ")", t->waker_comm,
		       t->waker_tgid, t->waker_pid);
	else if (t->waker_comm) /* no thread: [hardirq], [softirq], ... */
		printf(INDENT "woken by %s", t->waker_comm);
	else if (t->runq_ns)
		printf(INDENT "woken");
	if (t->runq_ns)
		printf("; waiting to run for %s", dur);
	if (t->waker_comm || t->runq_ns)
		printf("\n");
	blocked_print_stack("kernel", t->kstack, t->n_kstack);
	blocked_print_stack("user", t->ustack, t->n_ustack);
}

/* That nothing matched, and what the filters asked for: the note must say
 * why an empty list is not an error. */
static void blocked_print_none(const struct proto_blocked_request *req)
{
	unsigned n = 0, seen = 0;

	fprintf(stderr, "offcpuctl: note: no thread matched: none");
	for (size_t i = 0; i < req->n_pids; i++)
		fprintf(stderr, "%s%" PRIu32, i ? "," : " of pid ", req->pids[i]);
	for (size_t i = 0; i < req->n_tids; i++)
		fprintf(stderr, "%s%" PRIu32, i ? "," : " with tid ", req->tids[i]);
	fprintf(stderr, " is off the CPU now in state ");
	for (unsigned s = 0; s < THREAD_STATE_COUNT; s++)
		n += !!(req->state_mask & (1u << s));
	for (unsigned s = 0; s < THREAD_STATE_COUNT; s++) {
		if (!(req->state_mask & (1u << s)))
			continue;
		seen++;
		fprintf(stderr, "%s%s",
			seen == 1   ? ""
			: seen == n ? " or "
				    : ", ",
			thread_state_name(s));
	}
	if (req->min_ns)
		fprintf(stderr, " for %" PRIu64 " ms or more", req->min_ns / 1000000);
	if (req->state_mask != THREAD_STATE_ALL)
		fprintf(stderr, " (--state R,S,D,O takes every state)");
	fprintf(stderr, "\n");
}

static int blocked_print(const struct proto_blocked_result *b,
			 const struct proto_blocked_request *req)
{
	if (!b->n_threads) {
		blocked_print_none(req);
		return EXIT_OK;
	}
	printf("%-7s %-7s %-16s %-5s %-15s %s\n", "PID", "TID", "COMM", "STATE", "BLOCKED-FOR",
	       "WAITING-IN");
	for (size_t i = 0; i < b->n_threads; i++) {
		if (i)
			printf("\n");
		blocked_print_thread(&b->threads[i]);
	}
	if (b->n_more)
		printf("\n%zu more thread%s (--limit 0 shows all)\n", b->n_more,
		       b->n_more == 1 ? "" : "s");
	if (fflush(stdout) != 0)
		return fail(EXIT_ERROR, "output_error", "cannot write standard output: %s",
			    strerror(errno));
	return EXIT_OK;
}

int cmd_blocked(int argc, char **argv)
{
	enum { OPT_STATE = 256, OPT_MIN_MS, OPT_LIMIT };
	static const struct option options[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "min-ms", required_argument, NULL, OPT_MIN_MS },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	struct proto_blocked_request *b;
	struct proto_request *req;
	struct proto_reply *reply;
	uint64_t v;
	char *raw;
	int opt, r;

	/* Two id arrays: off the stack, as the other commands'. */
	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_BLOCKED;
	b = &req->blocked;
	b->state_mask = PROTO_BLOCKED_STATES_DEFAULT;
	b->limit = PROTO_BLOCKED_LIMIT_DEFAULT;
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:t:j", options, NULL)) != -1) {
		r = EXIT_OK;
		switch (opt) {
		case 'p':
			r = parse_pids(optarg, b->pids, &b->n_pids);
			break;
		case 't':
			if (parse_ids(optarg, b->tids, &b->n_tids) < 0)
				r = usage_error(
					"bad --tid '%s': want positive tids, comma-separated",
					optarg);
			break;
		case OPT_STATE:
			r = parse_states(optarg, &b->state_mask);
			break;
		case OPT_MIN_MS:
			if (parse_u64(optarg, PROTO_BLOCKED_MIN_MS_MAX, &v) < 0)
				r = usage_error("bad --min-ms '%s': want 0 to " MIN_MS_MAX
						" milliseconds",
						optarg);
			else
				b->min_ns = v * 1000000;
			break;
		case OPT_LIMIT:
			if (parse_u64(optarg, PROTO_BLOCKED_LIMIT_MAX, &v) < 0)
				r = usage_error("bad --limit '%s': want 0 (all) to " LIMIT_MAX,
						optarg);
			else
				b->limit = v;
			break;
		case 'j':
			json_output = true;
			break;
		default:
			r = usage_error("%s", "bad blocked option");
		}
		if (r != EXIT_OK)
			goto out;
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}

	r = transact(req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		goto out;
	if (json_output)
		printf("%s\n", raw);
	else
		r = blocked_print(&reply->blocked, b);
	proto_reply_free(reply);
	free(raw);
out:
	free(req);
	return r;
}
