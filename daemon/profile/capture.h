/*
 * capture: one client's capture request from start to reply. Holds the
 * request, the slot it occupies, its profile and its timer. The manager owns
 * the list of captures and decides when one ends; this module checks the
 * targets, turns the request into a collector filter, applies the request's
 * stack filters to the result, and formats the reply (on a worker thread).
 * Reads <proc>/PID to check targets (the proc root is a parameter for tests).
 * Does not log.
 */
#ifndef CAPTURE_H
#define CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "collector.h"
#include "profile.h"
#include "sampling.h"
#include "proto.h"

struct server_conn; /* the manager's: this module never talks to clients */

enum capture_phase {
	CAPTURE_LOADING,   /* no slot yet: the programs it needs are loading (on a worker) */
	CAPTURE_ATTACHING, /* its request probes are being attached (on a worker) */
	CAPTURE_RUNNING,
	CAPTURE_ENDING, /* slot deactivated, waiting for the drain that flushes it */
};

struct capture {
	uint64_t id;
	unsigned slot;
	enum capture_phase phase;
	bool stop_requested;	  /* a stop came while loading or attaching: end once running */
	struct server_conn *conn; /* NULL once the client has gone: no reply */
	struct proto_capture_request req;
	struct profile *profile;
	uv_timer_t timer;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	int64_t start_ms;	   /* CLOCK_REALTIME, for the stored window */
	uint64_t final_drain;	   /* the drain whose completion makes the result whole */
	uint64_t counters_start[OFFCPU_CNT_MAX];
	uint32_t groups_loaded; /* program groups this capture loaded (1 << enum collector_group) */
	uint64_t load_ns;	/* the time it waited for them */
	struct sampling_summary sampling; /* of its slot's drains, if sampled */
	/* The subtrees its cgroup, unit or container filter names (the kernel
	 * decides): resolved when it was asked for. */
	struct collector_cgroup cgroups[COLLECTOR_MAX_CGROUPS];
	size_t n_cgroups;
};

/* Checks that every requested pid and tid exists under proc_root, and that
 * each pid is a process's, not another thread's. Returns 0, or -ESRCH with a
 * message naming the first missing one (or the thread's process) in err. */
int capture_check_targets(const char *proc_root, const struct proto_capture_request *req, char *err,
			  size_t err_size);

/* What the request targets, for the stored window: "pid 12,13; tid 14;
 * comm x; unit nginx.service"; "" for every thread. buf always
 * NUL-terminated (cut short if it is too small). */
#define CAPTURE_TARGETS_MAX 511 /* bytes of a description, without the NUL */
void capture_targets_describe(const struct proto_capture_request *req, char *buf, size_t size);

/* True if a requested pid or tid no longer exists. */
bool capture_target_exited(const char *proc_root, const struct proto_capture_request *req);

/* The collector filter of a capture (pointing into c). */
void capture_filter(const struct capture *c, struct collector_filter *ret);

/*
 * The reply line for a finished capture; NULL on ENOMEM. counters_now are
 * the collector's totals when the capture ended. First narrows c->profile to
 * the rows the request's stack filters (comm, grep, exclude) keep, so that
 * the window stored from it afterwards holds what the client got; on ENOMEM
 * c->profile may be left whole. requests: a request-synchronous capture's
 * latency per request symbol. Runs on a worker thread: nothing else may
 * touch c meanwhile.
 */
char *capture_reply(struct capture *c, const uint64_t counters_now[OFFCPU_CNT_MAX],
		    bool target_exited, const struct proto_request_stats *requests,
		    size_t n_requests);

#endif
