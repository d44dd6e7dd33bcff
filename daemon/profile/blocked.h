/*
 * blocked: the answer of offcpuctl blocked, from the records of the
 * collector's snapshot (collector_blocked()): the threads the request's
 * filters keep, longest first, their stacks named through the drain's
 * lookups (struct drain_lookup). Pure: unit-tested on tables. Does not log.
 */
#ifndef BLOCKED_H
#define BLOCKED_H

#include <stddef.h>
#include <stdint.h>

#include "drain.h"
#include "proto.h"

struct blocked_answer;

/* When the snapshot was read, both clocks, and since when the programs saw
 * every switch: a thread asleep with no record (since_ns 0) has slept at
 * least since then. */
struct blocked_clock {
	uint64_t now_ns;    /* CLOCK_MONOTONIC */
	int64_t now_ms;	    /* CLOCK_REALTIME */
	uint64_t loaded_ns; /* CLOCK_MONOTONIC */
};

/* Builds the answer to req from n records. Returns 0 or -ENOMEM; *ret is
 * written only on success. */
int blocked_answer_new(const struct offcpu_blocked *recs, size_t n,
		       const struct proto_blocked_request *req, const struct blocked_clock *clock,
		       const struct drain_lookup *lk, struct blocked_answer **ret);
/* The reply's content; valid until blocked_answer_free(). */
const struct proto_blocked_result *blocked_answer_result(const struct blocked_answer *a);
void blocked_answer_free(struct blocked_answer *a); /* NULL-safe */

#endif
