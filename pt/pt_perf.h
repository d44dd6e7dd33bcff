/*
 * pt_perf: the sideband of a PT recording, from the records perf writes to
 * an event's ring buffer, into a pt_trace. The events are opened with
 * sample_id_all and sample_type PERF_SAMPLE_TID | PERF_SAMPLE_TIME, so every
 * record ends with (pid, tid, time); the records read are:
 *   MMAP2           an executable file mapping: a map of the trace
 *   SWITCH          the thread left or took a CPU: a switch of the trace
 *   FORK / EXIT     threads of the traced process come and go
 *   AUX             AUX data was written; its TRUNCATED flag marks data lost
 *   LOST            sideband records were dropped
 *   ITRACE_START    the thread's tracing started (nothing to keep)
 * Switch times stay in the perf clock's ns, as the kernel gave them (the
 * trace's time conversion maps TSC onto that clock). Bytes come from the kernel
 * through a shared mapping, so every length is checked. Does not log.
 */
#ifndef PT_PERF_H
#define PT_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "pt_trace.h"

struct pt_perf_counts {
	uint64_t records;     /* parsed */
	uint64_t malformed;   /* too short or of a wrong size: skipped */
	uint64_t lost;	      /* sideband records the kernel dropped (LOST) */
	uint64_t truncated;   /* AUX records with PERF_AUX_FLAG_TRUNCATED */
	uint64_t collisions;  /* AUX records with PERF_AUX_FLAG_COLLISION */
	uint64_t forks;	      /* threads the traced process created */
};

struct pt_perf_sink {
	struct pt_trace *trace; /* maps and switches are added here */
	uint32_t pid;		/* the traced process: others' records are ignored */
	/* A new thread of pid (from FORK); may be NULL. A negative return
	 * stops the parse with that value. */
	int (*new_thread)(void *ctx, uint32_t tid);
	void *ctx;
	struct pt_perf_counts counts;
};

/*
 * Parses whole records in buf[0..size) (the ring buffer's bytes between
 * data_tail and data_head, unwrapped). stream is the trace's stream of the
 * event's thread, or NULL: its truncated and lost fields are updated.
 * Returns the number of bytes consumed (a record cut at the end is left for
 * the next call), or a negative errno: -ENOMEM, or what new_thread returned.
 */
long pt_perf_parse(struct pt_perf_sink *sink, struct pt_trace_stream *stream, const uint8_t *buf,
		   size_t size);

#endif
