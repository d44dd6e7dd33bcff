/*
 * pt_latency: function latency analysis of decoded Intel PT (pt_perf's
 * model). The decoder (pt_decode) feeds it calls and returns of one thread
 * at a time with TSC times; it follows a shadow call stack and, for each
 * completed call of the target function, records the latency, the time in
 * each callee path (a call tree rooted at the target) and the part of both
 * spent off-CPU according to the trace's SWITCH sideband. Calls cut by an
 * overflow, a decode error or the end of the trace are counted as
 * incomplete, never guessed. Pure logic: no I/O, does not log.
 */
#ifndef PT_LATENCY_H
#define PT_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "pt_trace.h"

#define PT_LATENCY_HIST_BUCKETS 64 /* bucket i: [2^i, 2^(i+1)) ns; 0 also holds 0 */
#define PT_LATENCY_DEPTH_MAX	1024

struct pt_latency;

struct pt_latency_summary {
	uint64_t calls;		    /* complete calls within the latency range */
	uint64_t out_of_range;	    /* complete calls outside it */
	uint64_t incomplete;	    /* entered, but the trace lost their end */
	uint64_t unmatched_returns; /* returns from frames the trace never showed entering */
	uint64_t overflows;	    /* OVF packets */
	uint64_t decode_errors;	    /* errors the decoder resynchronised after */
	uint64_t total_ns, min_ns, max_ns, off_cpu_ns;
	uint64_t hist[PT_LATENCY_HIST_BUCKETS];
};

/* One completed call of the target, for the timeline. */
struct pt_latency_call {
	uint32_t tid;
	uint64_t start_ns, latency_ns, off_cpu_ns;
};

/* A direct callee of the target, aggregated over the calls in range. */
struct pt_latency_child {
	uint64_t ip; /* its entry address */
	uint64_t count, total_ns, off_cpu_ns;
};

/* Names a code address for output ("parse"); returns a string that stays
 * valid until the next call. */
typedef const char *(*pt_latency_name_fn)(void *ctx, uint64_t ip);

/* Analyses calls of the function entered at target_ip in trace t (which
 * must outlive it), counting only calls with min_ns <= latency <= max_ns.
 * Returns 0 or -ENOMEM. */
int pt_latency_new(const struct pt_trace *t, uint64_t target_ip, uint64_t min_ns, uint64_t max_ns,
		   struct pt_latency **ret);
void pt_latency_free(struct pt_latency *a); /* NULL-safe */

/* Decoder events. A stream begins with an empty stack; its end, an
 * overflow or an error drop the open frames (incomplete if the target was
 * among them). All return 0 or -ENOMEM. */
void pt_latency_begin_thread(struct pt_latency *a, uint32_t tid);
int pt_latency_enter(struct pt_latency *a, uint64_t ip, uint64_t tsc);
int pt_latency_leave(struct pt_latency *a, uint64_t tsc);
int pt_latency_lost(struct pt_latency *a, int overflow);
int pt_latency_end_thread(struct pt_latency *a);

const struct pt_latency_summary *pt_latency_summary(const struct pt_latency *a);
/* Completed calls in range, in decode order (per thread, by time). */
const struct pt_latency_call *pt_latency_calls(const struct pt_latency *a, size_t *ret_n);
/* Direct callees sorted by total time, largest first; *ret freed with free(). */
int pt_latency_children(const struct pt_latency *a, struct pt_latency_child **ret, size_t *ret_n);
/* The latency flame graph as folded text: "target;child;grandchild NS" per
 * path with its self time, plus "...;[off-cpu] NS" for off-CPU time, in ns.
 * *ret is malloc'd. Returns 0 or -ENOMEM. */
int pt_latency_folded(const struct pt_latency *a, pt_latency_name_fn name, void *ctx, char **ret);

#endif
