/*
 * pt_capture: one `offcpuctl latency --pid P --func F` recording from start
 * to stored file. Picks the event (the intel_pt PMU, or the sideband-only
 * software event of pt_event = sideband), narrows tracing to the function's
 * bytes with an address filter where the PMU has one, runs a pt_session for
 * the asked seconds, and writes the trace (plus its [vdso] copy, as
 * NAME.vdso beside it) into pt_dir, keeping the newest pt_keep traces.
 * Blocking: offcpud runs it on a worker thread. Does not log.
 */
#ifndef PT_CAPTURE_H
#define PT_CAPTURE_H

#include <stdatomic.h>
#include <stddef.h>

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

/* What the config says of PT recordings (its pt_* keys, socket_group). */
struct pt_capture_limits {
	const char *dir;	 /* recorded traces */
	uint32_t keep;		 /* traces kept there; the oldest go first */
	uint64_t buffer_bytes;	 /* AUX area per thread */
	uint64_t max_bytes;	 /* trace kept per thread */
	uint32_t max_threads;	 /* threads of one traced process */
	bool sideband_only;	 /* pt_event = sideband */
	const char *share_group; /* traces readable by this group; "" none */
};

struct pt_capture_opts {
	const struct pt_capture_limits *limits;
	const struct proto_latency_request *req;
	const atomic_bool *stop; /* set: end early (daemon shutting down) */
};

/*
 * Records and stores. On success returns 0 and fills *ret, whose path
 * points into path_buf. Else a negative errno with a one-line reason in
 * err: -ENODEV (no Intel PT on this CPU), -ESRCH (no such process), what
 * elf_funcs_resolve says about func (-ENOENT, -ESRCH, -E2BIG...), or what
 * perf, mmap or writing the file said.
 */
int pt_capture_run(const struct pt_capture_opts *o, struct proto_pt_trace_result *ret,
		   char *path_buf, size_t path_size, char *err, size_t err_size);

/* Whether a recording can run on this host, for status: fills ret but
 * recording_pid; ret->reason points into reason_buf. */
void pt_capture_status(const struct pt_capture_limits *limits, struct proto_pt_status *ret,
		       char *reason_buf, size_t reason_size);

#endif
