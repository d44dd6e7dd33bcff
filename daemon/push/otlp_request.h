/*
 * otlp_request: one closed window of the always-on profile as one OTLP
 * ExportProfilesServiceRequest (opentelemetry-proto v1.11.0, written out in
 * proto/push/otlp/), the body of POST /v1development/profiles with
 * Content-Type application/x-protobuf, for an OpenTelemetry Collector or
 * Pyroscope's OTLP receiver. The series are push_request.h's (push_series.h:
 * same split, options, checks and ids). Called by the pusher, on its own
 * thread; pure apart from allocating. Does not log.
 *
 * What goes where:
 * - One ProfilesDictionary, shared by every profile of the request. Entry 0
 *   of each table is its type's zero value and is there (string_table[0]
 *   "", link_table[0] with 16 and 8 zero bytes as the spec prefers, an
 *   empty stack_table[0] that frameless rows use); no entry is repeated or
 *   unused; a sample's attributes have distinct keys.
 * - One ResourceProfiles per service, by service: resource attributes
 *   service.name, host.name (the host), then the static labels under their
 *   own names. One ScopeProfiles in each: scope "offcpud", the version.
 * - One Profile per part of a (service, kind) series (at most max_samples
 *   rows):
 *   - sample_type (T, "nanoseconds"), T the time's type as pprof.h names
 *     it: off_cpu for offcpu, on_cpu for oncpu, else the kind's name. A
 *     Profile has one sample type: pprof's blocks/count is not sent.
 *   - period_type the same, period 1: every event is counted, none sampled
 *     (pprof.c says so too), which the spec's "the same as sample_type"
 *     allows. Pyroscope's receiver also names a profile by its period type
 *     where there is one (and an off_cpu one without), so each kind keeps
 *     its own name there.
 *   - time_unix_nano the window's start, duration_nano its length.
 *   - profile_id the 16 bytes of push_request_id() of the same part: a
 *     request built again (a retry) carries the same ids.
 *   - attribute offcpud.kind: push_request_profile_name() of the kind.
 * - One Sample per row, in the rows' order: values [value_ns] (above
 *   INT64_MAX as INT64_MAX), no timestamps. Attributes, by semantic
 *   conventions where one fits: thread.name (comm), process.pid (tgid),
 *   thread.id (pid), offcpud.state, and where the row has them
 *   process.vpid (ns_pid), container.id, k8s.pod.uid, offcpud.cgroup and
 *   offcpud.unit: pprof.c's labels. Values are strings or ints, never
 *   string_value_strindex, which Pyroscope's receiver does not read. A
 *   series holds rows of its kind only, so a row's kind is its profile's.
 * - Stacks: the frames pprof.c gives the row (pprof_row_frames(): user,
 *   kernel, "--", the waker, "[runqueue]"), leaf first as Stack wants them.
 *   One Function (name and system name: the frame's) and one Location (one
 *   Line, mapping_index 0: the frames come symbolized, no binary is known)
 *   per distinct frame name; one Stack per distinct frame list. A frame
 *   without a name is "[unknown]": a Function must name something.
 * - Text from the rows (frames, comm, cgroup...) is made valid UTF-8,
 *   invalid bytes as U+FFFD: protobuf's decoders refuse a request whose
 *   strings are not.
 */
#ifndef OTLP_REQUEST_H
#define OTLP_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "push_series.h"

/* The scope's name. */
#define OTLP_SCOPE_NAME "offcpud"

/*
 * The packed ExportProfilesServiceRequest of window w, into *ret (malloc'd;
 * the caller frees it) and *ret_len; a window without rows gives no
 * profiles, *ret NULL and *ret_len 0. Returns 0; -EINVAL (bad host, labels,
 * times, or a row of an unknown kind), -E2BIG (more static labels than
 * PUSH_LABELS_MAX leaves) or -ENOMEM, as push_request_build() does. *ret
 * and *ret_len are written only on success.
 */
int otlp_request_build(const struct push_window *w, const struct push_request_opts *opts,
		       uint8_t **ret, size_t *ret_len);

#endif
