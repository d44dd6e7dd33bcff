/*
 * fuzz-pt_trace: what offcpuctl latency --from-trace reads. Input byte 0
 * selects the part:
 *   odd:  the rest is a trace file (pt_trace_read through a memfd), then
 *         decoded and analysed if it reads;
 *   even: the rest is the raw PT stream of one thread, decoded by libipt
 *         against this program's own executable mappings (so random
 *         packets walk real instructions) and analysed for this function.
 * Properties checked (abort() if not): a summary never has min > max or a
 * total below its max, and every call of the timeline is within the range.
 * Build and run: scripts/fuzz.sh 30 pt_trace.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pt_decode.h"
#include "pt_latency.h"
#include "pt_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct pt_latency *a)
{
	const struct pt_latency_summary *s = pt_latency_summary(a);
	const struct pt_latency_call *c;
	size_t n;

	if (s->calls && (s->min_ns > s->max_ns || s->total_ns < s->max_ns))
		abort();
	c = pt_latency_calls(a, &n);
	if (n != s->calls)
		abort();
	for (size_t i = 0; i < n; i++)
		if (c[i].latency_ns < s->min_ns || c[i].latency_ns > s->max_ns)
			abort();
}

static void analyse(const struct pt_trace *t, uint64_t target)
{
	struct pt_latency *a;
	char err[256];

	if (pt_latency_new(t, target, 0, UINT64_MAX, &a) < 0)
		return;
	if (pt_decode_trace(t, a, err, sizeof(err)) == 0)
		check(a);
	pt_latency_free(a);
}

/* This program's executable mappings, as a trace's maps. */
static void self_maps(struct pt_trace *t)
{
	char line[4096], path[4096];
	uint64_t start, end, pgoff;
	char perms[8];
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s", &start,
			   &end, perms, &pgoff, path) == 5 &&
		    perms[2] == 'x' && path[0] == '/')
			pt_trace_add_map(t, start, end, pgoff, path, "");
	if (f)
		fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pt_trace self;
	struct pt_trace t = { 0 };
	char path[64], err[256];
	int fd;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		fd = memfd_create("fuzz-pt", 0);
		if (fd < 0 || write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
			if (fd >= 0)
				close(fd);
			return 0;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (pt_trace_read(path, &t, err, sizeof(err)) == 0) {
			analyse(&t, t.n_maps ? t.maps[0].start : 0);
			pt_trace_clear(&t);
		}
		close(fd);
		return 0;
	}
	if (!self.n_maps) {
		self_maps(&self);
		self.meta = (struct pt_trace_meta){ .time_shift = 0, .time_mult = 1 };
	}
	/* the stream is borrowed: only this call reads it */
	self.streams = &(
		struct pt_trace_stream){ .tid = 1, .data = (uint8_t *)data + 1, .size = size - 1 };
	self.n_streams = 1;
	analyse(&self, (uint64_t)(uintptr_t)LLVMFuzzerTestOneInput);
	self.streams = NULL;
	self.n_streams = 0;
	return 0;
}
