/*
 * pt_bench: decode + latency analysis throughput of Intel PT, in MB/s of
 * trace on one core. The trace is synthesized with libipt's encoder for
 * pt_target (tests/unit/pt_synth.h): handle() calls with and without
 * lookup(), a PSB every 4 KiB as hardware emits them by default, TSC
 * timing. Usage: pt_bench PT_TARGET [MB]; prints one line of figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pt_decode.h"
#include "pt_latency.h"
#include "pt_synth.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 64, target, last_psb = 0;
	struct pt_trace t = { 0 };
	struct pt_synth s;
	struct pt_latency *a;
	uint64_t tsc = 1000, calls = 0;
	char err[256] = "";
	double t0, t1;

	if (argc < 2) {
		fprintf(stderr, "usage: pt_bench PT_TARGET [MB]\n");
		return 2;
	}
	target = mb << 20;
	if (pt_synth_open(&s, argv[1], target + (1 << 16)) < 0)
		return 1;
	pt_synth_psb(&s, tsc);
	while (pt_synth_size(&s) < target) {
		struct pt_synth_call c = { (int)(calls & 1), tsc, tsc + 40, tsc + 90, tsc + 130 };

		if (pt_synth_call(&s, &c) < 0)
			return 1;
		calls++;
		tsc += 200;
		if (pt_synth_size(&s) - last_psb >= 4096) {
			last_psb = pt_synth_size(&s);
			pt_synth_psb(&s, tsc);
		}
	}
	if (pt_synth_trace_meta(&s, &t, 1) < 0 ||
	    pt_trace_add_stream(&t, 1, s.buf, pt_synth_size(&s)) < 0 ||
	    pt_latency_new(&t, s.handle, 0, UINT64_MAX, &a) < 0)
		return 1;
	t0 = now_s();
	if (pt_decode_trace(&t, a, err, sizeof(err)) < 0) {
		fprintf(stderr, "pt_bench: %s\n", err);
		return 1;
	}
	t1 = now_s();
	if (pt_latency_summary(a)->calls != calls) {
		fprintf(stderr, "pt_bench: decoded %llu calls of %llu\n",
			(unsigned long long)pt_latency_summary(a)->calls,
			(unsigned long long)calls);
		return 1;
	}
	printf("pt decode+analysis: %.1f MB of trace, %llu calls in %.3f s: %.1f MB/s, %.0f "
	       "ns/call\n",
	       pt_synth_size(&s) / 1e6, (unsigned long long)calls, t1 - t0,
	       pt_synth_size(&s) / 1e6 / (t1 - t0), (t1 - t0) * 1e9 / calls);
	pt_latency_free(a);
	pt_trace_clear(&t);
	pt_synth_close(&s);
	return 0;
}
