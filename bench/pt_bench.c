/*
 * pt_bench: decode + latency analysis throughput of Intel PT, in MB/s of
 * trace on one core. The traces are synthesized with libipt's encoder for
 * pt_target (tests/unit/pt_synth.h): handle() calls with and without
 * lookup(), traced with the filter [parse, end of handle] (TIP.PGE and
 * TIP.PGD around each call), a PSB every 4 KiB as hardware emits them by
 * default, in two timing shapes:
 *   tsc: a TSC packet at each call, return and filter entry/exit (the
 *        first shape this bench had; 8-byte packets make it byte-heavy);
 *   mtc: MTC packets (mtc_period 3) with TSC only in PSB+, the timing of
 *        perf's default intel_pt config; the same calls in fewer bytes.
 * For each shape it prints decode+analysis (pt_decode_trace into
 * pt_latency) and libipt alone: pt_blk_next/pt_blk_event over the same
 * trace with pt_decode's configuration and a consumer that does nothing,
 * the floor for any consumer of libipt's block decoder.
 * Usage: pt_bench PT_TARGET [MB [SHAPE]] (default 64 MB of each shape);
 * prints one line per figure.
 */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pt_decode.h"
#include "pt_latency.h"
#include "pt_synth.h"

struct bench_shape {
	const char *name;
	uint32_t mtc_freq; /* 0: TSC packets */
	/* TSC ticks from a call's entry to parse's return, lookup's return,
	 * handle's return, and to the next call: multiples of one MTC period
	 * (2 << mtc_freq ticks) in the mtc shape */
	uint64_t parse_ret, lookup_ret, leave, step;
};

static const struct bench_shape bench_shapes[] = {
	{ "tsc", 0, 40, 90, 130, 200 },
	{ "mtc", 3, 48, 96, 144, 208 },
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Synthesizes about size bytes of trace of shape sh into t (one stream). */
static int bench_trace(const char *target, const struct bench_shape *sh, size_t size,
		       struct pt_trace *t, uint64_t *ret_handle, uint64_t *ret_calls)
{
	size_t last_psb = 0;
	uint64_t tsc = 1024, calls = 0;
	struct pt_synth s;
	int r = -1;

	if (pt_synth_open(&s, target, size + (1 << 16)) < 0)
		return -1;
	s.mtc_freq = sh->mtc_freq;
	if (pt_synth_psb(&s, tsc) < 0)
		goto out;
	while (pt_synth_size(&s) < size) {
		struct pt_synth_call c = { (int)(calls & 1), tsc, tsc + sh->parse_ret,
					   tsc + sh->lookup_ret, tsc + sh->leave };

		if (pt_synth_call(&s, &c) < 0)
			goto out;
		calls++;
		tsc += sh->step;
		if (pt_synth_size(&s) - last_psb >= 4096) {
			last_psb = pt_synth_size(&s);
			if (pt_synth_psb(&s, tsc) < 0)
				goto out;
		}
	}
	if (pt_synth_trace_meta(&s, t, 1) < 0 ||
	    pt_trace_add_stream(t, 1, s.buf, pt_synth_size(&s)) < 0)
		goto out;
	*ret_handle = s.handle;
	*ret_calls = calls;
	r = 0;
out:
	pt_synth_close(&s);
	return r;
}

/* libipt's block decoder over t's stream with pt_decode's configuration
 * (pt_decode.c: pt_config_from_meta) and no consumer. Returns the blocks
 * decoded, or -1. Not inlined: a function of its own in profiles. */
static __attribute__((noinline)) long long bench_floor(const struct pt_trace *t)
{
	const struct pt_trace_stream *st = &t->streams[0];
	struct pt_image_section_cache *iscache = pt_iscache_alloc(NULL);
	struct pt_image *image = pt_image_alloc(NULL);
	struct pt_block_decoder *dec = NULL;
	struct pt_config c;
	long long blocks = -1;
	int isid, status;

	pt_config_init(&c);
	c.mtc_freq = t->meta.mtc_freq;
	c.cpuid_0x15_eax = t->meta.cpuid_0x15_eax;
	c.cpuid_0x15_ebx = t->meta.cpuid_0x15_ebx;
	c.flags.variant.block.end_on_call = 1;
	c.flags.variant.block.end_on_jump = 1;
	c.begin = st->data;
	c.end = st->data + st->size;
	if (!iscache || !image)
		goto out;
	isid = pt_iscache_add_file(iscache, t->maps[0].path, t->maps[0].pgoff,
				   t->maps[0].end - t->maps[0].start, t->maps[0].start);
	if (isid < 0 || pt_image_add_cached(image, iscache, isid, NULL) < 0)
		goto out;
	dec = pt_blk_alloc_decoder(&c);
	if (!dec || pt_blk_set_image(dec, image) < 0)
		goto out;
	blocks = 0;
	while ((status = pt_blk_sync_forward(dec)) >= 0) {
		for (;;) {
			struct pt_block b;
			struct pt_event ev;

			while (status >= 0 && (status & pts_event_pending))
				status = pt_blk_event(dec, &ev, sizeof(ev));
			if (status < 0 || (status & pts_eos))
				break;
			status = pt_blk_next(dec, &b, sizeof(b));
			if (status < 0)
				break;
			blocks++;
		}
		if (status >= 0 || status == -pte_eos)
			break;
	}
out:
	pt_blk_free_decoder(dec);
	pt_image_free(image);
	pt_iscache_free(iscache);
	return blocks;
}

static void bench_print(const char *what, const struct bench_shape *sh, const struct pt_trace *t,
			uint64_t calls, double s)
{
	double mb = t->streams[0].size / 1e6;

	printf("%-22s %s: %.1f MB of trace, %llu calls in %.3f s: %.1f MB/s, %.0f ns/call\n", what,
	       sh->name, mb, (unsigned long long)calls, s, mb / s, s * 1e9 / calls);
}

static int bench_shape_run(const char *target, const struct bench_shape *sh, size_t size)
{
	struct pt_trace t = { 0 };
	struct pt_latency *a = NULL;
	uint64_t handle, calls;
	char err[256] = "";
	double t0, t1;
	long long blocks;
	int r = 1;

	if (bench_trace(target, sh, size, &t, &handle, &calls) < 0 ||
	    pt_latency_new(&t, handle, 0, UINT64_MAX, &a) < 0)
		goto out;
	t0 = now_s();
	if (pt_decode_trace(&t, a, err, sizeof(err)) < 0) {
		fprintf(stderr, "pt_bench: %s\n", err);
		goto out;
	}
	t1 = now_s();
	if (pt_latency_summary(a)->calls != calls) {
		fprintf(stderr, "pt_bench: %s: decoded %llu calls of %llu\n", sh->name,
			(unsigned long long)pt_latency_summary(a)->calls,
			(unsigned long long)calls);
		goto out;
	}
	bench_print("pt decode+analysis", sh, &t, calls, t1 - t0);
	t0 = now_s();
	blocks = bench_floor(&t);
	t1 = now_s();
	if (blocks < 0) {
		fprintf(stderr, "pt_bench: %s: libipt alone failed\n", sh->name);
		goto out;
	}
	bench_print("libipt alone (no-op)", sh, &t, calls, t1 - t0);
	r = 0;
out:
	pt_latency_free(a);
	pt_trace_clear(&t);
	return r;
}

int main(int argc, char **argv)
{
	size_t mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 64, ran = 0;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: pt_bench PT_TARGET [MB [tsc|mtc]]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(bench_shapes) / sizeof(bench_shapes[0]); i++) {
		if (argc > 3 && strcmp(argv[3], bench_shapes[i].name))
			continue;
		if (bench_shape_run(argv[1], &bench_shapes[i], mb << 20))
			return 1;
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "pt_bench: no trace shape '%s' (tsc, mtc)\n", argv[3]);
		return 2;
	}
	return 0;
}
