/*
 * push_request: one closed window of the always-on profile as one Grafana
 * Pyroscope PushRequest (proto/push/pyroscope.proto), the body of
 * POST /push.v1.PusherService/Push. The window's rows are split into series
 * by (service, kind); each series carries one gzipped pprof profile of its
 * rows (render/pprof.h, with the window's time range) per at most
 * max_samples rows, each with a stable id. Called by the pusher, on its own
 * thread; pure apart from allocating. Does not log.
 *
 * Labels of a series, sorted by name as Pyroscope keeps them:
 * - __name__, the profile type: the kind's name. "offcpu" is what Alloy's
 *   eBPF profiler names off-CPU time (pyroscope.ebpf: __name__ "offcpu",
 *   discovery.MetricValueOffCPU), so offcpud's series sit beside Alloy's.
 *   Neither Pyroscope nor Alloy names the other kinds; they keep the names
 *   --kind takes (wakeup, offwake, chain, runq, oncpu, bio, fileio), which
 *   are valid metric names. oncpu is not Alloy's "process_cpu": its samples
 *   are another sample type (on_cpu, not cpu), and a host running both would
 *   show two CPU profiles of one service under one name. The pprof inside
 *   names its sample types as pprof.h says (blocks/count and, for offcpu,
 *   off_cpu/nanoseconds), so Pyroscope's profile type is
 *   offcpu:off_cpu:nanoseconds:off_cpu:nanoseconds.
 * - service_name: see enum push_service_by.
 * - host: the host name the caller gives.
 * - kind: the kind's name again, for queries that select by label.
 * - then the static labels (NAME=VALUE from the configuration).
 * Values derived from the rows (a process name is whatever a program wrote
 * in its comm) are made valid UTF-8, invalid bytes as U+FFFD: Pyroscope
 * refuses a whole request over one invalid label.
 *
 * Ids: a version 5 UUID (uuid5.h) of host, window id, window start, service,
 * kind and part (the profile's index in its series), in a namespace of
 * offcpud's own (push_request.c): the same window built again, after a
 * retry or a restart, gives the same ids, and a database made anew (window
 * ids from 1 again) does not repeat old ones, its windows starting later.
 */
#ifndef PUSH_REQUEST_H
#define PUSH_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "uuid5.h"

/* Pyroscope's default limits (validation.*): labels per series, a label
 * name's and value's bytes, samples per profile. */
#define PUSH_LABELS_MAX		 30
#define PUSH_LABEL_NAME_MAX	 1024
#define PUSH_LABEL_VALUE_MAX	 2048
#define PUSH_PROFILE_SAMPLES_MAX 16000

/* The labels every series has; static labels may have at most the rest. */
#define PUSH_LABELS_OWN 4

/* How a row's service_name is chosen. */
enum push_service_by {
	/* The default: the container ("docker:0123456789ab", as --group-by
	 * container names it), else the systemd unit ("nginx.service"), else
	 * the process name. The container comes first because a container's
	 * cgroup is a unit too (docker-ID.scope, cri-containerd-ID.scope). */
	PUSH_SERVICE_BY_WHO,
	PUSH_SERVICE_BY_PROCESS, /* the process name only */
};

/* The process name of a row is its main thread's name (the row whose pid
 * is its tgid) where the window has one, else the least of its threads'
 * names: the same whatever order the rows come in. */

struct push_label {
	const char *name;
	const char *value;
};

struct push_window {
	uint64_t id;		  /* the store's window id */
	int64_t start_ms, end_ms; /* unix milliseconds; 0 <= start_ms <= end_ms */
	/* Its rows, as profile_samples() gives them (kind, unit, container and
	 * runtime read; the rest as pprof_write() reads them). */
	const struct proto_sample *rows;
	size_t n_rows;
};

struct push_request_opts {
	const char *host;		 /* valid UTF-8, 1..PUSH_LABEL_VALUE_MAX bytes */
	const struct push_label *labels; /* static labels; push_request_labels_check() */
	size_t n_labels;
	enum push_service_by service_by;
	size_t max_samples; /* rows per profile; 0: PUSH_PROFILE_SAMPLES_MAX */
};

/*
 * The packed PushRequest of window w, into *ret (malloc'd; the caller frees
 * it) and *ret_len; a window without rows gives no series, *ret NULL and
 * *ret_len 0. Returns 0; -EINVAL (bad host, labels, times, or a row of an
 * unknown kind), -E2BIG (more static labels than PUSH_LABELS_MAX leaves),
 * -ENOMEM, or the -errno of writing a profile. *ret and *ret_len are
 * written only on success.
 */
int push_request_build(const struct push_window *w, const struct push_request_opts *opts,
		       uint8_t **ret, size_t *ret_len);

/*
 * Whether labels[0, n) may be a series' static labels: names as Prometheus
 * has them ([a-zA-Z_][a-zA-Z0-9_]*), not starting with "__" (reserved) and
 * none of service_name, host or kind, each once; values non-empty, valid
 * UTF-8; within Pyroscope's lengths. 0, -EINVAL, or -E2BIG (more than
 * PUSH_LABELS_MAX - PUSH_LABELS_OWN). For the configuration to check at load.
 */
int push_request_labels_check(const struct push_label *labels, size_t n);

/* The profile type (__name__) of kind (enum proto_kind); NULL out of range. */
const char *push_request_profile_name(unsigned kind);

/* The id of part `part` of the series (service, kind name) of window
 * (window_id, start_ms) from host, as the request carries it. */
void push_request_id(const char *host, uint64_t window_id, int64_t start_ms, const char *service,
		     const char *kind, size_t part, char ret[UUID5_STR_SIZE]);

#endif
