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
 * offcpud's own (push_series.c): the same window built again, after a
 * retry or a restart, gives the same ids, and a database made anew (window
 * ids from 1 again) does not repeat old ones, its windows starting later.
 */
#ifndef PUSH_REQUEST_H
#define PUSH_REQUEST_H

#include <stddef.h>
#include <stdint.h>

/* The window, the options and the checks of them, the profile names and
 * the ids: shared with the OTLP encoder (otlp_request.h). */
#include "push_series.h"

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

#endif
