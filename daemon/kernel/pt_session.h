/*
 * pt_session: records one process with Intel PT through perf_event_open,
 * the way `perf record --per-thread -e intel_pt//u` does: one event per
 * thread (a thread created during the session gets its own as soon as its
 * FORK record is read), each with its ring buffer of sideband records
 * (MMAP2, SWITCH, FORK, AUX, LOST: see pt/pt_perf.h) and its AUX area of
 * trace. The AUX area is either a flight recorder (snapshot: mapped
 * read-only, so the kernel overwrites the oldest trace; read once at the
 * stop) or drained while the session runs (full: what does not fit the
 * byte limit is lost and the stream marked truncated). An address filter
 * limits tracing to one function's bytes of one file.
 *
 * The result is a pt_trace with what a decoder on another host needs: the
 * CPU's identification and PT timing parameters, the TSC to ns conversion
 * of the perf clock, the executable mappings with build-ids and a copy of
 * the [vdso] (the one mapping that is not a file).
 *
 * The event is a parameter: the intel_pt PMU's type and config in offcpud;
 * a software event without AUX records the sideband alone, which is how the
 * tests exercise this module on hosts without Intel PT. Not thread-safe:
 * one thread drives a session. Does not log.
 */
#ifndef PT_SESSION_H
#define PT_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "pt_perf.h"
#include "pt_trace.h"

#define PT_SESSION_FILTER_MAX 4200

struct pt_session_opts {
	uint32_t pid;
	uint32_t event_type; /* perf_event_attr.type */
	uint64_t event_config;
	int aux;	     /* the event writes trace to an AUX area */
	int snapshot;	     /* AUX as a flight recorder, read at the stop */
	size_t aux_bytes;    /* AUX area per thread: a power of two of pages */
	size_t max_bytes;    /* full mode: trace kept per thread */
	uint32_t max_threads;
	/* PERF_EVENT_IOC_SET_FILTER's text, "" for none: e.g.
	 * "filter 0x1130/0x4b@/usr/bin/app" (a file offset and size) */
	char filter[PT_SESSION_FILTER_MAX];
	/* For the trace's metadata (pt_trace_meta): from the PMU's caps. */
	uint32_t mtc_freq, nom_freq;
};

struct pt_session_stats {
	uint32_t threads;      /* events opened */
	uint32_t threads_lost; /* threads that could not get one (gone, limit) */
	uint64_t aux_bytes;    /* trace read */
	struct pt_perf_counts sideband;
};

struct pt_session;

/* Opens and enables the events for every thread of o->pid. Returns 0, or a
 * negative errno with a one-line reason in err: -ESRCH (no such process),
 * -E2BIG (more threads than max_threads), -EINVAL (a filter the kernel
 * refuses), or what perf_event_open or mmap said (-EACCES, -ENOMEM...). */
int pt_session_start(const struct pt_session_opts *o, struct pt_session **ret, char *err,
		     size_t err_size);

/* Reads the sideband (and the trace, in full mode) that came since the last
 * call; opens events for new threads. Call it every 20 ms or so: a new
 * thread runs untraced until then, and the rings hold about a second of a
 * busy thread's switches. Returns 0 or -ENOMEM. */
int pt_session_poll(struct pt_session *s);

/* Disables the events, reads what is left and moves the recording into
 * *ret (which the caller clears with pt_trace_clear). The [vdso] copy goes
 * to *vdso (malloc'd, *vdso_size bytes; NULL if the process has none):
 * the caller stores it and points the "[vdso]" map's path at it. */
int pt_session_stop(struct pt_session *s, struct pt_trace *ret, uint8_t **vdso,
		    size_t *vdso_size);

/* What the session recorded, whole once pt_session_stop has run. */
const struct pt_session_stats *pt_session_stats(const struct pt_session *s);

/* Closes everything. NULL-safe. */
void pt_session_free(struct pt_session *s);

#endif
