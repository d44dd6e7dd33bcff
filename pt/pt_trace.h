/*
 * pt_trace: an Intel PT recording as offcpud keeps it (history mode) and as
 * `offcpuctl latency --from-trace FILE` reads it: the raw trace of each
 * thread, the sideband that goes with it (context switches, lost data) and
 * what a decoder on another host needs (CPU identification, PT
 * configuration, TSC to ns conversion, the executable mappings with their
 * build-ids). The file is a fixed header followed by typed records, all
 * little-endian; see pt_trace.c for the layout. Does not log.
 */
#ifndef PT_TRACE_H
#define PT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define PT_TRACE_MAX_BYTES (1ULL << 32) /* a file larger than this is refused */

struct pt_trace_meta {
	uint32_t cpu_vendor; /* 1: Intel (libipt's pcv_intel), 0: unknown */
	uint32_t cpu_family, cpu_model, cpu_stepping;
	uint64_t perf_config; /* the intel_pt event's attr.config */
	uint32_t mtc_freq;    /* config's MTC period as the exponent, 0 if MTC is off */
	uint32_t nom_freq;    /* CPUID 0x16 nominal frequency ratio, 0 if unknown */
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx; /* TSC to crystal clock ratio */
	/* TSC to ns as in perf_event_mmap_page: ns = zero + (tsc * mult) >> shift. */
	uint32_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	uint32_t pid;
};

/* A /proc/PID/maps line of an executable mapping, with its file's build-id
 * (hex, "" if none) so a later reader can check it has the same file. */
struct pt_trace_map {
	uint64_t start, end, pgoff;
	char *path;
	char *build_id;
};

/* A context switch of one thread (PERF_RECORD_SWITCH), at the time perf
 * gave it: the perf clock in ns, to which time_zero/mult/shift convert
 * the trace's TSC. */
struct pt_trace_switch {
	uint64_t time_ns;
	uint32_t tid;
	uint32_t out; /* 1: switched out, 0: switched in */
};

/* The AUX data of one thread, and what perf said about it. */
struct pt_trace_stream {
	uint32_t tid;
	uint32_t truncated; /* PERF_AUX_FLAG_TRUNCATED seen: data before it was lost */
	uint64_t lost;	    /* PERF_RECORD_LOST records */
	uint8_t *data;
	size_t size;
};

struct pt_trace {
	struct pt_trace_meta meta;
	struct pt_trace_map *maps;
	size_t n_maps, cap_maps;
	struct pt_trace_switch *switches; /* sorted by (tid, time_ns) once read */
	size_t n_switches, cap_switches;
	struct pt_trace_stream *streams;
	size_t n_streams, cap_streams;
};

/* A build-id as pt_trace_map keeps it: n bytes of id as lower-case hex
 * into out, which holds 2 * n + 1 chars. */
void pt_trace_build_id_hex(const uint8_t *id, size_t n, char *out);

/* Building a trace: each returns 0 or -ENOMEM and copies its arguments. */
int pt_trace_add_map(struct pt_trace *t, uint64_t start, uint64_t end, uint64_t pgoff,
		     const char *path, const char *build_id);
int pt_trace_add_switch(struct pt_trace *t, uint64_t time_ns, uint32_t tid, int out);
int pt_trace_add_stream(struct pt_trace *t, uint32_t tid, const void *data, size_t size);

/* Writes t to path (replacing it atomically). Returns 0 or -errno. */
int pt_trace_write(const struct pt_trace *t, const char *path);

/* Reads a file written by pt_trace_write into *ret (released with
 * pt_trace_clear). Returns 0, or -errno: -EINVAL (with a one-line reason in
 * err) for a file that is not a trace, is of another version or is cut
 * short; -EFBIG over PT_TRACE_MAX_BYTES; open/read errors as they come. */
int pt_trace_read(const char *path, struct pt_trace *ret, char *err, size_t err_size);

/* Sorts the switches by (tid, time_ns): pt_trace_read does it; builders call it
 * once before analysing. */
void pt_trace_sort_switches(struct pt_trace *t);

/* Converts a TSC value to ns with the trace's time conversion. Inline:
 * the latency analysis converts every call and return. */
static inline uint64_t pt_trace_tsc_to_ns(const struct pt_trace_meta *m, uint64_t tsc)
{
	/* perf's split, so tsc * mult cannot overflow */
	uint64_t quot = tsc >> m->time_shift, rem = tsc & ((1ULL << m->time_shift) - 1);

	return m->time_zero + quot * m->time_mult + ((rem * m->time_mult) >> m->time_shift);
}

/* Frees what t holds and zeroes it. NULL-safe. */
void pt_trace_clear(struct pt_trace *t);

#endif
