/*
 * pprof: rows of a capture or export (struct proto_sample, as the daemon's
 * JSON replies carry them) as a gzipped pprof profile, the format of
 * github.com/google/pprof/proto/profile.proto, for `go tool pprof`,
 * Pyroscope, Perfetto and the like. offcpuctl calls it for --format pprof;
 * the daemon is not involved. Does not log.
 *
 * What goes where (offcpuctl(8) documents it for users):
 * - Values: [blocks/count, T/nanoseconds], T "off_cpu" for kind offcpu,
 *   "on_cpu" for oncpu (count: samples), "wall" for hot/cold (offcpu with
 *   oncpu rows: a thread's on- plus off-CPU time), else the kind's name
 *   ("wakeup", "runq", ...); T is the default.
 * - Stacks: the frames of the row's folded line, leaf first as pprof wants,
 *   without the comm and the "-" delimiters; "--" (between the blocked
 *   thread and its waker), "[runqueue]" and "[on-cpu]" stay, so flame graphs look like
 *   offcpud's own. One Function and one Location per distinct frame name,
 *   in one Mapping with no file that says so (has_functions): the frames
 *   are symbolized already.
 * - Labels: comm, state and kind (the row's: "runq" marks the run-queue
 *   part of a split offcpu profile, whose values are off_cpu time too), and
 *   numeric pid (the process) and tid.
 */
#ifndef PPROF_H
#define PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto.h"

struct pprof_opts {
	enum proto_kind kind;	/* the profile's kind: names the time's sample type */
	bool oncpu;		/* kind offcpu with on-CPU rows beside (hot/cold) */
	int64_t time_nanos;	/* when the profile began, unix ns; 0: unknown */
	int64_t duration_nanos; /* how long it covers; 0: unknown */
	const char *comment;	/* a line of free text, NULL: none */
};

/*
 * Writes the profile of rows[0..n) (n may be 0: a valid empty profile) to
 * out as gzip. Values above INT64_MAX (pprof's are signed) are written as
 * INT64_MAX. Returns 0, -ENOMEM, or the -errno of a failed write (out may
 * then hold part of the file).
 */
int pprof_write(const struct proto_sample *rows, size_t n, const struct pprof_opts *opts,
		FILE *out);

/* Called with each frame of a row, in order. */
typedef void pprof_frame_cb(void *arg, const char *frame);

/*
 * The frames of row r as its sample has them above (the row's folded line,
 * PROTOCOL.md's kinds, after the comm, without the "-" delimiters), root
 * first: cb(arg, frame) for each. frame points into r or is a constant.
 * For other encoders of rows (daemon/push/otlp_request.c), so that every
 * format draws the same stacks.
 */
void pprof_row_frames(const struct proto_sample *r, pprof_frame_cb *cb, void *arg);

/* The name of the time's sample type (above) for a profile of kind, with
 * on-CPU rows beside (hot/cold) or not. */
const char *pprof_sample_type_name(enum proto_kind kind, bool oncpu);

/*
 * Writes the merged folded stacks of f (flame.h) as a gzipped profile: one
 * sample per frame with a count of its own, the path to it leaf first
 * (annotations such as _[k] dropped, as drawn), values rounded to integers.
 * One sample type, countname (NULL: "samples") in pprof's unit for it
 * (us: microseconds, ns, ms, s, bytes; else count); a differential input
 * has two, "before" and "after" (the default). 0, -ENODATA (nothing valid
 * read), -ENOMEM or -errno of a write.
 */
struct flame;
int pprof_write_folded(struct flame *f, const char *countname, FILE *out);

#endif
