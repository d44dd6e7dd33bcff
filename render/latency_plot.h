/*
 * latency_plot: the per-call latency timeline (`offcpuctl latency
 * --timeline --svg`) as a standalone SVG scatter plot. x is a call's start
 * since the earliest call, y its latency on a log scale (latencies span
 * decades); one colour per thread, named in a legend by tid; calls that
 * spent time off-CPU are hollow; each point has a <title> tooltip. The
 * file stays bounded: above LATENCY_PLOT_POINTS_MAX calls only every Nth
 * call is drawn, and the title says so. Pure rendering, independent of the
 * trace code; does not log.
 */
#ifndef LATENCY_PLOT_H
#define LATENCY_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LATENCY_PLOT_POINTS_MAX 20000 /* more calls: every Nth, N = ceil(calls / this) */
#define LATENCY_PLOT_LEGEND_MAX 32    /* threads named in the legend; the rest are counted */
#define LATENCY_PLOT_WIDTH_MIN	400   /* px: the axis labels, plot and legend side by side */

struct latency_plot_call {
	uint32_t tid;
	uint64_t start_ns; /* any epoch: the plot's time starts at the earliest call */
	uint64_t latency_ns, off_cpu_ns;
};

struct latency_plot_opts {
	const char *func;     /* the function: the title, unless title is given */
	const char *title;    /* NULL: func; the call count follows either */
	const char *subtitle; /* NULL: none */
	unsigned width;	      /* px; 0: 1200 */
};

/*
 * Writes the plot of calls[0..n) (in any order; "every Nth" counts in this
 * order) to out. Returns 0; -ENODATA if n is 0 (the SVG written then says
 * there is nothing to plot); -EINVAL if o->width is below
 * LATENCY_PLOT_WIDTH_MIN or o->func is NULL, -ENOMEM, with nothing written;
 * or the -errno of a failed write.
 */
int latency_plot_svg(const struct latency_plot_call *calls, size_t n,
		     const struct latency_plot_opts *o, FILE *out);

#endif
