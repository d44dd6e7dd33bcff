/*
 * fuzz-pt_perf: the sideband records a PT session reads from the kernel's
 * perf rings (pt/pt_perf.c), as bytes the daemon must survive whatever
 * they hold. Properties checked (abort() if not): the bytes consumed are
 * within the input, and every map has start < end and a NUL-terminated
 * path. Build and run: scripts/fuzz.sh 30 pt_perf.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pt_perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int new_thread(void *ctx, uint32_t tid)
{
	(void)tid;
	++*(unsigned *)ctx;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_trace t = { 0 };
	struct pt_trace_stream stream = { .tid = 1000 };
	unsigned threads = 0;
	struct pt_perf_sink sink = {
		.trace = &t, .pid = 1000, .new_thread = new_thread, .ctx = &threads
	};
	long n = pt_perf_parse(&sink, &stream, data, size);

	if (n > (long)size || (n < 0 && n != -12 /* ENOMEM */))
		abort();
	for (size_t i = 0; i < t.n_maps; i++)
		if (t.maps[i].start >= t.maps[i].end || !t.maps[i].path ||
		    strlen(t.maps[i].path) > size)
			abort();
	if (threads != sink.counts.forks)
		abort();
	pt_trace_clear(&t);
	return 0;
}
