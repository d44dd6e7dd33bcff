/*
 * fuzz-proto_reply: proto_reply_parse() and proto_reply_free() on any bytes,
 * as offcpuctl reads the daemon's replies. A reply that parses is formatted
 * again with the daemon's proto_reply_*() (its strings may hold any bytes,
 * as comm names do), and that line must parse back to the same kind of
 * reply with as many elements (abort() if not). Every string of a parsed
 * reply is read whole, so a dangling pointer shows under ASan.
 * Build and run: scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static void fuzz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz-proto_reply: property violated: %s\n", what);
		abort();
	}
}

static size_t fuzz_touch(const char *s)
{
	return s ? strlen(s) : 0;
}

static size_t fuzz_touch_requests(const struct proto_request_stats *r, size_t n)
{
	size_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += fuzz_touch(r[i].symbol) + r[i].n_functions;
	return sum;
}

/* Reads every string the reply points to. */
static size_t fuzz_touch_reply(const struct proto_reply *r)
{
	size_t sum = 0;

	if (!r->ok)
		return fuzz_touch(r->error_code) + fuzz_touch(r->error_message);
	switch (r->cmd) {
	case PROTO_CMD_STATUS:
		sum += fuzz_touch(r->status.version) + fuzz_touch(r->status.tracepoint);
		for (size_t i = 0; i < r->status.n_programs; i++)
			sum += fuzz_touch(r->status.programs[i].name);
		for (size_t i = 0; i < r->status.n_counters; i++)
			sum += fuzz_touch(r->status.counters[i].name);
		sum += fuzz_touch_requests(r->status.requests, r->status.n_requests);
		for (size_t i = 0; i < r->status.n_push; i++)
			sum += fuzz_touch(r->status.push[i].name) + fuzz_touch(r->status.push[i].url) +
			       fuzz_touch(r->status.push[i].state) +
			       fuzz_touch(r->status.push[i].last_error);
		break;
	case PROTO_CMD_CAPTURE:
		sum += fuzz_touch(r->capture.folded) + fuzz_touch(r->capture.output);
		for (size_t i = 0; i < r->capture.n_drops; i++)
			sum += fuzz_touch(r->capture.drops[i].name);
		sum += fuzz_touch_requests(r->capture.requests, r->capture.n_requests);
		break;
	case PROTO_CMD_WINDOWS:
		for (size_t i = 0; i < r->n_windows; i++)
			sum += r->windows[i].id != 0;
		break;
	case PROTO_CMD_EXPORT:
		sum += fuzz_touch(r->export.folded) + fuzz_touch(r->export.output);
		break;
	case PROTO_CMD_HEATMAP: /* only checked to be an object: serve passes it on */
		break;
	case PROTO_CMD_HIST:
		sum += fuzz_touch(r->hist.kind);
		for (size_t i = 0; i < r->hist.n_processes; i++)
			sum += fuzz_touch(r->hist.processes[i].comm);
		break;
	case PROTO_CMD_BLOCKED:
		for (size_t i = 0; i < r->blocked.n_threads; i++) {
			const struct proto_blocked_thread *t = &r->blocked.threads[i];

			sum += fuzz_touch(t->comm) + fuzz_touch(t->state) +
			       fuzz_touch(t->waker_comm);
			for (size_t f = 0; f < t->n_ustack; f++)
				sum += fuzz_touch(t->ustack[f]);
			for (size_t f = 0; f < t->n_kstack; f++)
				sum += fuzz_touch(t->kstack[f]);
		}
		break;
	case PROTO_CMD_PUSH:
		for (size_t i = 0; i < r->push.n_targets; i++)
			sum += fuzz_touch(r->push.targets[i]);
		break;
	default:
		fuzz_check(0, "parsed reply has an unknown cmd");
	}
	return sum;
}

/* The daemon's formatting of what offcpuctl parsed. */
static char *fuzz_format(const struct proto_reply *r)
{
	if (!r->ok)
		return proto_reply_error(r->error_code, r->error_message);
	switch (r->cmd) {
	case PROTO_CMD_STATUS:
		return proto_reply_status(&r->status);
	case PROTO_CMD_CAPTURE:
		return proto_reply_capture(&r->capture, 0);
	case PROTO_CMD_WINDOWS:
		return proto_reply_windows(r->windows, r->n_windows);
	case PROTO_CMD_EXPORT:
		return proto_reply_export(&r->export, 0);
	case PROTO_CMD_HIST:
		return proto_reply_hist(&r->hist);
	case PROTO_CMD_BLOCKED:
		return proto_reply_blocked(&r->blocked);
	case PROTO_CMD_PUSH:
		return proto_reply_push(&r->push);
	default:
		return NULL;
	}
}

static void fuzz_compare(const struct proto_reply *a, const struct proto_reply *b)
{
	fuzz_check(a->ok == b->ok, "ok changed");
	if (!a->ok)
		return;
	fuzz_check(a->cmd == b->cmd, "cmd changed");
	switch (a->cmd) {
	case PROTO_CMD_STATUS:
		fuzz_check(a->status.n_programs == b->status.n_programs &&
				   a->status.n_counters == b->status.n_counters &&
				   a->status.n_requests == b->status.n_requests &&
				   a->status.pid == b->status.pid &&
				   a->status.n_push == b->status.n_push &&
				   a->status.push_configured == b->status.push_configured,
			   "status changed");
		break;
	case PROTO_CMD_CAPTURE:
		fuzz_check(a->capture.n_drops == b->capture.n_drops &&
				   a->capture.n_requests == b->capture.n_requests &&
				   a->capture.target_exited == b->capture.target_exited &&
				   !a->capture.folded == !b->capture.folded &&
				   !a->capture.output == !b->capture.output,
			   "capture changed");
		break;
	case PROTO_CMD_WINDOWS:
		fuzz_check(a->n_windows == b->n_windows, "windows changed");
		break;
	case PROTO_CMD_EXPORT:
		fuzz_check(a->export.differential == b->export.differential &&
				   !a->export.folded == !b->export.folded &&
				   !a->export.output == !b->export.output,
			   "export changed");
		break;
	case PROTO_CMD_HIST:
		fuzz_check(a->hist.n_processes == b->hist.n_processes, "hist changed");
		break;
	case PROTO_CMD_PUSH:
		fuzz_check(a->push.n_targets == b->push.n_targets &&
				   a->push.from_ms == b->push.from_ms && a->push.to_ms == b->push.to_ms,
			   "push changed");
		break;
	case PROTO_CMD_BLOCKED:
		fuzz_check(a->blocked.n_threads == b->blocked.n_threads &&
				   a->blocked.n_more == b->blocked.n_more,
			   "blocked changed");
		for (size_t i = 0; i < a->blocked.n_threads; i++)
			fuzz_check(a->blocked.threads[i].n_ustack ==
						   b->blocked.threads[i].n_ustack &&
					   a->blocked.threads[i].n_kstack ==
						   b->blocked.threads[i].n_kstack &&
					   !a->blocked.threads[i].waker_comm ==
						   !b->blocked.threads[i].waker_comm,
				   "blocked thread changed");
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_reply *reply, *again;
	volatile size_t sink;
	char *line;
	size_t len;

	if (proto_reply_parse((const char *)data, size, &reply) < 0)
		return 0;
	sink = fuzz_touch_reply(reply);
	(void)sink;
	if (reply->ok && reply->cmd == PROTO_CMD_HEATMAP) { /* no parsed body to format again */
		proto_reply_free(reply);
		return 0;
	}

	line = fuzz_format(reply);
	fuzz_check(line != NULL, "a parsed reply does not format");
	len = strlen(line);
	fuzz_check(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', len - 1),
		   "formatted reply is not one line");
	if (proto_reply_parse(line, len, &again) < 0) {
		fprintf(stderr, "formatted: %s", line);
		fuzz_check(0, "a formatted reply does not parse");
	}
	fuzz_compare(reply, again);
	proto_reply_free(again);
	free(line);
	proto_reply_free(reply);
	return 0;
}
