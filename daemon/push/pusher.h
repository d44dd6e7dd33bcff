/*
 * pusher: sends every closed window of the always-on profile to the
 * configured fleet stores (push targets: Grafana Pyroscope, its legacy
 * /ingest, OTLP), each from its own thread, so that a slow or dead server
 * never delays drains, windows or clients. The ring is the outbox
 * (store_push.h): a target sends the continuous windows after its cursor,
 * oldest first, on its own connection to the database; a window is sent
 * until the server has it (2xx), with capped exponential back-off and
 * jitter after connection errors, timeouts and 5xx, after Retry-After on
 * 429; another 4xx sets it aside. Requests held at once are bounded in
 * bytes across targets. Started and stopped by the manager, on the loop
 * thread; reports what it should say through a log callback, from its
 * threads.
 */
#ifndef PUSHER_H
#define PUSHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "push_target.h"

struct pusher;

struct pusher_opts {
	const char *database;	      /* opened by the store already (store_open_another) */
	const char *host;	      /* the host label; valid UTF-8 */
	uint64_t max_bytes_in_flight; /* request bodies held at once, all targets */
	uint32_t profile_kinds;	      /* 1 << enum proto_kind the always-on profile records */
	const struct config_push_target *targets;
	size_t n_targets;
	/* Called from a pusher thread: warning or information; may be NULL. */
	void (*log)(void *arg, bool warning, const char *msg);
	void *log_arg;
};

/* A target, for status (struct proto_push_status says what each field is). */
struct pusher_status {
	char name[CONFIG_PUSH_NAME_MAX];
	const char *api;
	char url[1024];
	const char *state;
	int64_t last_success_ms;
	uint64_t lag_windows;
	uint64_t lag_ms;
	uint64_t sent, set_aside, lost;
	uint64_t retries;
	uint64_t bytes_sent;
	int64_t next_try_ms;
	uint64_t backfill_windows;
	char last_error[512];
};

/* Starts a thread per target. 0; -EINVAL with a message in err (a target's
 * labels or the host cannot be sent); -ENOMEM or another -errno. */
int pusher_start(const struct pusher_opts *o, struct pusher **ret, char *err, size_t err_size);

/* Stops the threads (a transfer under way is cut off: its window is sent
 * again, with the same ids, at the next start) and frees. NULL-safe. */
void pusher_stop(struct pusher *p);

/* A continuous window [start_ms, end_ms) was stored: targets waiting for
 * one look again, and their lag counts it at once. NULL-safe. */
void pusher_notify(struct pusher *p, int64_t start_ms, int64_t end_ms);

/* Sends the continuous windows that start in [from_ms, to_ms) to target
 * name (NULL or "": every target) again, after what it is sending, without
 * moving its cursor. ret_names (may be NULL) gets the targets' names (valid
 * until pusher_stop), *ret_n their number. 0, or -ENOENT: no such target. */
int pusher_backfill(struct pusher *p, const char *name, int64_t from_ms, int64_t to_ms,
		    const char **ret_names, size_t *ret_n);

/* The targets' states, at most max of them into ret; returns how many
 * there are. */
size_t pusher_status(struct pusher *p, struct pusher_status *ret, size_t max);

/* Pure, for tests: the back-off before try number `failures` (1: after the
 * first failure), with jitter r in [0, 1): from 1 s doubling to 5 min, then
 * a random part of up to half of it taken off. */
int64_t pusher_backoff_ms(unsigned failures, double r);

#endif
