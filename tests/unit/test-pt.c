/*
 * Unit test of pt/ (trace file, libipt decoding, latency analysis) with
 * traces synthesized by libipt's encoder for runs of pt_target whose
 * times are known (tests/unit/pt_synth.h). Every figure is exact: the
 * trace's clock is 1 TSC tick = 1 ns.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "pt_decode.h"
#include "pt_latency.h"
#include "pt_pmu.h"
#include "pt_synth.h"
#include "pt_trace.h"

static struct pt_synth synth;

/* Decodes stream bytes data[0..size) of thread tid into a new analysis. */
static struct pt_latency *analyse(struct pt_trace *t, uint64_t min_ns, uint64_t max_ns)
{
	struct pt_latency *a;
	char err[256] = "";

	pt_trace_sort_switches(t);
	CHECK(pt_latency_new(t, synth.handle, min_ns, max_ns, &a) == 0);
	if (pt_decode_trace(t, a, err, sizeof(err)) < 0)
		fprintf(stderr, "decode: %s\n", err);
	return a;
}

static void trace_with(struct pt_trace *t, uint32_t tid)
{
	CHECK(pt_synth_trace_meta(&synth, t, 100) == 0);
	CHECK(pt_trace_add_stream(t, tid, synth.buf, pt_synth_size(&synth)) == 0);
}

static const char *name_of(void *ctx, uint64_t ip)
{
	(void)ctx;
	return ip == synth.handle   ? "handle"
	       : ip == synth.parse  ? "parse"
	       : ip == synth.lookup ? "lookup"
	       : ip == synth.reply  ? "reply"
				    : "?";
}

static void reset_synth(void)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s", synth.path);
	pt_synth_close(&synth);
	CHECK(pt_synth_open(&synth, path, 1 << 20) == 0);
}

#define U(x) ((unsigned long long)(x))

static char *folded_of(struct pt_latency *a)
{
	char *folded = NULL;

	CHECK(pt_latency_folded(a, name_of, NULL, &folded) == 0);
	return folded;
}

static void check_child(struct pt_latency *a, size_t i, uint64_t ip, uint64_t count,
			uint64_t total_ns, uint64_t off_ns)
{
	struct pt_latency_child *ch;
	size_t n;

	CHECK(pt_latency_children(a, &ch, &n) == 0);
	CHECK_AT(__FILE__, __LINE__,
		 i < n && ch[i].ip == ip && ch[i].count == count && ch[i].total_ns == total_ns &&
			 ch[i].off_cpu_ns == off_ns,
		 "child %zu of %zu: %s count %llu total %llu off %llu", i, n,
		 i < n ? name_of(NULL, ch[i].ip) : "-", i < n ? U(ch[i].count) : 0,
		 i < n ? U(ch[i].total_ns) : 0, i < n ? U(ch[i].off_cpu_ns) : 0);
	free(ch);
}

/* handle() without lookup (350 ns) and with it (1100 ns). */
static const struct pt_synth_call call1 = { 0, 1000, 1100, 0, 1350 };
static const struct pt_synth_call call2 = { 1, 5000, 5200, 5900, 6100 };

static void write_two_calls(void)
{
	CHECK(pt_synth_psb(&synth, 900) == 0);
	CHECK(pt_synth_call(&synth, &call1) == 0);
	CHECK(pt_synth_call(&synth, &call2) == 0);
}

/* Counts, latencies, histogram, children, timeline and the flame graph. */
static void test_calls(void)
{
	const struct pt_latency_summary *s;
	const struct pt_latency_call *calls;
	struct pt_trace t = { 0 };
	struct pt_latency *a;
	char *folded;
	size_t n;

	write_two_calls();
	trace_with(&t, 7);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK(s->calls == 2 && s->total_ns == 1450 && s->min_ns == 350 && s->max_ns == 1100);
	CHECK(s->incomplete == 0 && s->unmatched_returns == 0 && s->decode_errors == 0);
	CHECK(s->hist[8] == 1 && s->hist[10] == 1); /* 350 in [256, 512), 1100 in [1024, 2048) */
	CHECK(s->off_cpu_ns == 0);
	/* lookup 700 (once); reply 250 + 200; parse 100 + 200 */
	check_child(a, 0, synth.lookup, 1, 700, 0);
	check_child(a, 1, synth.reply, 2, 450, 0);
	check_child(a, 2, synth.parse, 2, 300, 0);
	calls = pt_latency_calls(a, &n);
	CHECK(n == 2 && calls[0].tid == 7 && calls[0].start_ns == 1000 &&
	      calls[0].latency_ns == 350 && calls[1].start_ns == 5000 &&
	      calls[1].latency_ns == 1100);
	/* handle's self time: 350 - 100 - 250 = 0 and 1100 - 200 - 700 - 200 = 0 */
	folded = folded_of(a);
	CHECK(folded && !strcmp(folded, "handle;parse 300\nhandle;reply 450\nhandle;lookup 700\n"));
	free(folded);
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* The thread is off-CPU 5300..5800, inside lookup() of the second call. */
static void test_off_cpu(void)
{
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;
	char *folded;

	write_two_calls();
	trace_with(&t, 7);
	CHECK(pt_trace_add_switch(&t, 5800, 7, 0) == 0);
	CHECK(pt_trace_add_switch(&t, 5300, 7, 1) == 0);
	CHECK(pt_trace_add_switch(&t, 5400, 8, 1) == 0); /* another thread's */
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK(s->calls == 2 && s->total_ns == 1450 && s->off_cpu_ns == 500);
	check_child(a, 0, synth.lookup, 1, 700, 500);
	check_child(a, 1, synth.reply, 2, 450, 0);
	folded = folded_of(a);
	CHECK(folded && strstr(folded, "handle;lookup 200\nhandle;lookup;[off-cpu] 500\n"));
	free(folded);
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* --latency-range 300,400 keeps only the first call, children included. */
static void test_range(void)
{
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;
	struct pt_latency_child *ch;
	size_t n;

	write_two_calls();
	trace_with(&t, 7);
	a = analyse(&t, 300, 400);
	s = pt_latency_summary(a);
	CHECK(s->calls == 1 && s->out_of_range == 1 && s->total_ns == 350);
	CHECK(pt_latency_children(a, &ch, &n) == 0);
	CHECK(n == 2); /* lookup ran only in the excluded call */
	free(ch);
	check_child(a, 0, synth.reply, 1, 250, 0);
	check_child(a, 1, synth.parse, 1, 100, 0);
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* An overflow in the middle of a call: that call is incomplete, not
 * invented; the next one is counted. */
static void test_overflow(void)
{
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;

	CHECK(pt_synth_psb(&synth, 900) == 0);
	CHECK(pt_synth_enter(&synth, 1000, 1100) == 0);
	CHECK(pt_synth_ovf(&synth) == 0);
	CHECK(pt_synth_psb(&synth, 4000) == 0);
	CHECK(pt_synth_call(&synth, &call2) == 0);
	trace_with(&t, 7);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK_AT(__FILE__, __LINE__,
		 s->calls == 1 && s->incomplete == 1 && s->overflows == 1 && s->total_ns == 1100,
		 "calls %llu incomplete %llu overflows %llu total %llu", U(s->calls),
		 U(s->incomplete), U(s->overflows), U(s->total_ns));
	check_child(a, 0, synth.lookup, 1, 700, 0);
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* Trace that does not fit the code: the call it cut is incomplete and
 * the decoder resumes at the next PSB. */
static void test_decode_error(void)
{
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;

	CHECK(pt_synth_psb(&synth, 900) == 0);
	CHECK(pt_synth_enter(&synth, 1000, 1100) == 0);
	CHECK(pt_synth_bad(&synth) == 0);
	CHECK(pt_synth_psb(&synth, 4000) == 0);
	CHECK(pt_synth_call(&synth, &call2) == 0);
	trace_with(&t, 7);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK_AT(__FILE__, __LINE__,
		 s->calls == 1 && s->incomplete == 1 && s->decode_errors == 1 && !s->overflows &&
			 s->total_ns == 1100,
		 "calls %llu incomplete %llu errors %llu total %llu", U(s->calls), U(s->incomplete),
		 U(s->decode_errors), U(s->total_ns));
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* Trace that enables tracing at an endless direct jump: the decoder could
 * walk it forever without reading a packet. It gives up on the stretch
 * and resumes at the next PSB; a stream stuck again and again is given up
 * whole, so a hostile or mismatched trace costs bounded time. */
static void test_stuck(void)
{
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;

	CHECK(pt_synth_psb(&synth, 900) == 0);
	CHECK(pt_synth_spin(&synth, 950) == 0);
	CHECK(pt_synth_psb(&synth, 4000) == 0);
	CHECK(pt_synth_call(&synth, &call2) == 0);
	trace_with(&t, 7);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK_AT(__FILE__, __LINE__, s->calls == 1 && s->decode_errors == 1 && s->total_ns == 1100,
		 "calls %llu errors %llu total %llu", U(s->calls), U(s->decode_errors),
		 U(s->total_ns));
	pt_latency_free(a);
	pt_trace_clear(&t);

	reset_synth();
	for (int i = 0; i < 10; i++) {
		CHECK(pt_synth_psb(&synth, 900 + 100 * i) == 0);
		CHECK(pt_synth_spin(&synth, 950 + 100 * i) == 0);
	}
	CHECK(pt_synth_psb(&synth, 4000) == 0);
	CHECK(pt_synth_call(&synth, &call2) == 0);
	trace_with(&t, 7);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK_AT(__FILE__, __LINE__, s->calls == 0 && s->decode_errors == 4,
		 "given up after 4 stuck stretches: calls %llu errors %llu", U(s->calls),
		 U(s->decode_errors));
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* A flight-recorder snapshot starts wherever the ring wrapped: here in
 * the middle of a packet, then at a PSB inside a call whose entry was
 * overwritten. The partial call is not counted (its return is unmatched);
 * the next complete call is. */
static void test_torn_start(void)
{
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;
	size_t cut;

	CHECK(pt_synth_psb(&synth, 100) == 0);
	CHECK(pt_synth_call(&synth, &call1) == 0);
	cut = pt_synth_size(&synth) - 5; /* inside call1's last packets */
	/* handle+0x10: parse()'s return address (objdump of pt_target; a layout
	 * change shows as a decode error below) */
	CHECK(pt_synth_psb_at(&synth, 2000, synth.handle + 0x10) == 0);
	CHECK(pt_synth_tail(&synth, 2300) == 0);
	CHECK(pt_synth_call(&synth, &call2) == 0);
	CHECK(pt_synth_trace_meta(&synth, &t, 100) == 0);
	CHECK(pt_trace_add_stream(&t, 7, synth.buf + cut, pt_synth_size(&synth) - cut) == 0);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK_AT(__FILE__, __LINE__,
		 s->calls == 1 && s->total_ns == 1100 && s->unmatched_returns == 1 &&
			 s->incomplete == 0 && !s->decode_errors,
		 "calls %llu total %llu unmatched %llu incomplete %llu errors %llu", U(s->calls),
		 U(s->total_ns), U(s->unmatched_returns), U(s->incomplete), U(s->decode_errors));
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* The stored format: what is written is read back and decodes the same;
 * damaged files are refused with a reason. */
static void test_file(void)
{
	char path[] = "/tmp/test-pt-XXXXXX", err[256] = "";
	struct pt_trace t = { 0 }, back = { 0 };
	struct pt_latency *a;
	FILE *f;
	int fd;

	write_two_calls();
	trace_with(&t, 7);
	t.meta.cpu_vendor = 1;
	t.meta.cpu_family = 6;
	t.meta.cpu_model = 0x55;
	t.meta.perf_config = 0x2001;
	CHECK(pt_trace_add_switch(&t, 5300, 7, 1) == 0 && pt_trace_add_switch(&t, 5800, 7, 0) == 0);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(pt_trace_write(&t, path) == 0);
	CHECK(pt_trace_read(path, &back, err, sizeof(err)) == 0);
	CHECK(back.meta.cpu_model == 0x55 && back.meta.perf_config == 0x2001 &&
	      back.meta.time_mult == 1024 && back.n_maps == 1 && back.n_switches == 2 &&
	      back.n_streams == 1 && back.streams[0].tid == 7 &&
	      back.streams[0].size == t.streams[0].size &&
	      !memcmp(back.streams[0].data, t.streams[0].data, t.streams[0].size) &&
	      !strcmp(back.maps[0].path, synth.path));
	back.meta.cpu_vendor = 0; /* errata of a made-up model: decode as the synthesizer wrote */
	a = analyse(&back, 0, UINT64_MAX);
	CHECK(pt_latency_summary(a)->calls == 2 && pt_latency_summary(a)->off_cpu_ns == 500);
	pt_latency_free(a);
	pt_trace_clear(&back);

	CHECK(truncate(path, 100) == 0);
	CHECK(pt_trace_read(path, &back, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "cut short") != NULL);
	f = fopen(path, "w");
	fputs("hello", f);
	fclose(f);
	CHECK(pt_trace_read(path, &back, err, sizeof(err)) == -EINVAL);
	CHECK(!strcmp(err, "not an offcpud PT trace file"));
	unlink(path);
	pt_trace_clear(&t);
}

/* Timing from MTC packets (crystal clock) instead of TSC: the decoder's
 * time configuration (mtc_freq, CPUID 0x15 ratio) comes from the trace's
 * metadata. One MTC = 16 TSC ticks here. */
static void test_mtc_timing(void)
{
	const struct pt_synth_call c = { 1, 1024 + 16 * 4, 1024 + 16 * 9, 1024 + 16 * 29,
					 1024 + 16 * 32 };
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;

	synth.mtc_freq = 3;
	CHECK(pt_synth_psb(&synth, 1024) == 0);
	CHECK(pt_synth_call(&synth, &c) == 0);
	trace_with(&t, 7);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK_AT(__FILE__, __LINE__, s->calls == 1 && s->total_ns == 448 && !s->decode_errors,
		 "calls %llu total %llu errors %llu", U(s->calls), U(s->total_ns),
		 U(s->decode_errors));
	check_child(a, 0, synth.lookup, 1, 320, 0);
	check_child(a, 1, synth.parse, 1, 80, 0);
	check_child(a, 2, synth.reply, 1, 48, 0);
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* Callees outside the address filter: a call leaves it (TIP.PGD) and the
 * return re-enters it (TIP.PGE at the return address); the callee's time
 * is the time between the two. Two threads, each in its own stream, one
 * with an off-CPU interval inside lookup(). */
static void test_outside_filter(void)
{
	const struct pt_synth_call c = { 1, 2000, 2100, 2600, 2900 };
	const struct pt_latency_summary *s;
	struct pt_trace t = { 0 };
	struct pt_latency *a;
	size_t first;

	CHECK(pt_synth_psb(&synth, 1900) == 0);
	CHECK(pt_synth_call_handle_only(&synth, &c) == 0);
	first = pt_synth_size(&synth);
	CHECK(pt_synth_psb(&synth, 1900) == 0);
	CHECK(pt_synth_call_handle_only(&synth, &c) == 0);
	CHECK(pt_synth_trace_meta(&synth, &t, 100) == 0);
	CHECK(pt_trace_add_stream(&t, 7, synth.buf, first) == 0);
	CHECK(pt_trace_add_stream(&t, 8, synth.buf + first, pt_synth_size(&synth) - first) == 0);
	CHECK(pt_trace_add_switch(&t, 2200, 8, 1) == 0 && pt_trace_add_switch(&t, 2500, 8, 0) == 0);
	a = analyse(&t, 0, UINT64_MAX);
	s = pt_latency_summary(a);
	CHECK_AT(__FILE__, __LINE__,
		 s->calls == 2 && s->total_ns == 2 * 910 && !s->decode_errors && !s->incomplete &&
			 !s->unmatched_returns && s->off_cpu_ns == 300,
		 "calls %llu total %llu errors %llu incomplete %llu unmatched %llu off %llu",
		 U(s->calls), U(s->total_ns), U(s->decode_errors), U(s->incomplete),
		 U(s->unmatched_returns), U(s->off_cpu_ns));
	check_child(a, 0, synth.lookup, 2, 1000, 300);
	check_child(a, 1, synth.reply, 2, 600, 0);
	check_child(a, 2, synth.parse, 2, 200, 0);
	pt_latency_free(a);
	pt_trace_clear(&t);
}

/* The PMU probe on sysfs fixtures: absent (this AMD host's case) and a
 * PT CPU's type and caps. */
static void test_pmu(void)
{
	char root[] = "/tmp/test-pt-sysfs-XXXXXX", cmd[512], err[512] = "";
	struct pt_pmu pmu;

	CHECK(mkdtemp(root) != NULL);
	CHECK(pt_pmu_probe(root, &pmu, err, sizeof(err)) == -ENODEV);
	CHECK(strstr(err, "Intel PT is not available on this CPU (no intel_pt PMU") == err);
	snprintf(cmd, sizeof(cmd),
		 "d=%s/bus/event_source/devices/intel_pt; mkdir -p $d/caps && echo 9 > $d/type && "
		 "echo 1 > $d/caps/mtc && echo 1 > $d/caps/psb_cyc && echo 249 > "
		 "$d/caps/mtc_periods && echo 2 > $d/caps/num_address_ranges && "
		 "echo 24 > $d/max_nonturbo_ratio && mkdir $d/format && cd $d/format && "
		 "echo config:0 > pt && echo config:1 > cyc && echo config:9 > mtc && "
		 "echo config:10 > tsc && echo config:11 > noretcomp && echo config:13 > branch "
		 "&& echo config:14-17 > mtc_period",
		 root);
	CHECK(system(cmd) == 0);
	CHECK(pt_pmu_probe(root, &pmu, err, sizeof(err)) == 0);
	CHECK(pmu.type == 9 && pmu.mtc == 1 && pmu.cyc == 1 && pmu.mtc_periods == 0x249 &&
	      pmu.num_address_ranges == 2 && pmu.ip_filtering == 0 && pmu.nom_freq == 24);
	/* pt, mtc, tsc, noretcomp, branch and mtc_period 3; no cyc */
	CHECK_AT(__FILE__, __LINE__, pmu.config == (1 | 1 << 9 | 1 << 10 | 1 << 11 | 1 << 13 | 3 << 14) &&
		 pmu.mtc_freq == 3, "config %#llx mtc_freq %u", (unsigned long long)pmu.config,
		 pmu.mtc_freq);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK(system(cmd) == 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (pt_synth_open(&synth, PT_TARGET_PATH, 1 << 20) < 0)
		return 1;
	test_calls();
	reset_synth();
	test_off_cpu();
	reset_synth();
	test_range();
	reset_synth();
	test_overflow();
	reset_synth();
	test_decode_error();
	reset_synth();
	test_stuck();
	reset_synth();
	test_torn_start();
	reset_synth();
	test_file();
	reset_synth();
	test_mtc_timing();
	reset_synth();
	test_outside_filter();
	test_pmu();
	pt_synth_close(&synth);
	return check_failures ? 1 : 0;
}
