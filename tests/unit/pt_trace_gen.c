/*
 * pt_trace_gen: writes a stored PT trace file (pt_trace format) of two
 * known handle() calls of pt_target, for the integration tests of
 * `offcpuctl latency --from-trace` (tests/integration/test_latency.py).
 * The calls are test-pt.c's call1 (350 ns) and call2 (1100 ns, lookup
 * 700 ns of which 500 ns off-CPU). Usage: pt_trace_gen PT_TARGET OUT.
 */
#include <stdio.h>

#include "pt_synth.h"
#include "pt_trace.h"

int main(int argc, char **argv)
{
	static const struct pt_synth_call call1 = { 0, 1000, 1100, 0, 1350 };
	static const struct pt_synth_call call2 = { 1, 5000, 5200, 5900, 6100 };
	struct pt_trace t = { 0 };
	struct pt_synth s;
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: pt_trace_gen PT_TARGET OUT\n");
		return 2;
	}
	if (pt_synth_open(&s, argv[1], 1 << 16) < 0 || pt_synth_psb(&s, 900) ||
	    pt_synth_call(&s, &call1) || pt_synth_call(&s, &call2))
		return 1;
	r = pt_synth_trace_meta(&s, &t, 4242);
	if (!r)
		r = pt_trace_add_stream(&t, 4243, s.buf, pt_synth_size(&s));
	if (!r)
		r = pt_trace_add_switch(&t, 5300, 4243, 1) ||
		    pt_trace_add_switch(&t, 5800, 4243, 0);
	if (!r)
		r = pt_trace_write(&t, argv[2]);
	pt_trace_clear(&t);
	pt_synth_close(&s);
	if (r) {
		fprintf(stderr, "pt_trace_gen: cannot write %s\n", argv[2]);
		return 1;
	}
	return 0;
}
