/*
 * latency: `offcpuctl latency --from-trace FILE`: analyses a stored Intel
 * PT trace (pt/) on this host: resolves the target function in the trace's
 * mapped files (elf_funcs), decodes (pt_decode), names callees with the
 * symbolizer, and formats the report, the timeline (text, or an SVG plot:
 * render/latency_plot.h) or the latency flame graph (folded, ns). Called
 * by offcpuctl latency (cmd_latency.c); does not log or exit.
 */
#ifndef LATENCY_H
#define LATENCY_H

#include <stddef.h>
#include <stdint.h>

enum latency_output {
	LATENCY_REPORT,	      /* summary, log2 histogram, children table */
	LATENCY_TIMELINE,     /* one line per call: tid, start, latency, off-CPU */
	LATENCY_TIMELINE_SVG, /* the timeline as a plot: latency (log) over time */
	LATENCY_FOLDED,	      /* the latency flame graph, values in ns */
	LATENCY_JSON,	      /* report and timeline as the protocol's latency object */
};

struct latency_opts {
	const char *trace_path;
	const char *func; /* SYMBOL, as `capture --request` takes it */
	uint64_t min_ns, max_ns;
	enum latency_output output;
	/* LATENCY_TIMELINE_SVG: */
	const char *title;    /* NULL: func; the call count follows either */
	const char *subtitle; /* NULL: none */
	unsigned width;	      /* px; 0: the plot's default */
};

/* Runs the analysis and writes the chosen output into *ret (malloc'd).
 * Returns 0, or a negative errno with a one-line message in err: -ESRCH
 * for a function the trace's files do not have, -ENODATA for a plot of no
 * calls. */
int latency_from_trace(const struct latency_opts *o, char **ret, char *err, size_t err_size);

/* Parses --latency-range "MIN,MAX" (ns; either side may be empty). Returns
 * 0 or -EINVAL. */
int latency_parse_range(const char *s, uint64_t *ret_min, uint64_t *ret_max);

#endif
