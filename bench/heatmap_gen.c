/*
 * heatmap_gen: a synthetic ring for bench/serve_heatmap.py: 24 hours of
 * 10 s continuous windows (8,640) ending now, each of ROWS rows spread over
 * PROCESSES processes of THREADS threads. As in a live system's windows,
 * most rows recur (a thread blocks where it blocked before): they come from
 * a pool of SERIES (thread, stack, state, kind) rows, four fifths of each
 * window from the first CORE of them; stacks of 10-30 frames from a pool of
 * STACKS, states S, D and R, kinds offcpu and runq. Stored through the
 * daemon's own store, without the heatmap's index (as a ring written before
 * it). Deterministic (fixed seed).
 * Usage: heatmap_gen DB [ROWS]. Prints one JSON line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "store.h"

#define WINDOWS	  8640
#define WINDOW_MS 10000
#define PROCESSES 20
#define THREADS	  4
#define STACKS	  2000
#define FRAMES	  300
#define SERIES	  6000
#define CORE	  400

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dULL) >> 32) % n;
}

static char *stacks[STACKS];
static struct store_sample series[SERIES];
static char comms[PROCESSES][16];

static void gen(void)
{
	for (int i = 0; i < STACKS; i++) {
		int depth = 10 + rnd(21);
		char *s = calloc(depth, 16);
		size_t n = 0;

		for (int d = 0; d < depth; d++)
			n += sprintf(s + n, "%sfunc_%u", d ? ";" : "", rnd(FRAMES));
		stacks[i] = s;
	}
	for (int p = 0; p < PROCESSES; p++)
		snprintf(comms[p], sizeof(comms[p]), "proc%d", p);
	for (int i = 0; i < SERIES; i++) {
		uint32_t p = rnd(PROCESSES), t = rnd(THREADS);

		series[i] = (struct store_sample){
			.tgid = 1000 + p * 10,
			.pid = 1000 + p * 10 + t,
			.comm = comms[p],
			.kind = rnd(4) ? 0 : 4, /* offcpu, runq */
			.state = (uint32_t[]){ 1, 1, 2, 0 }[rnd(4)],
			.ustack = stacks[rnd(STACKS)],
			.kstack = "schedule;__schedule",
			.chain = "",
		};
	}
}

int main(int argc, char **argv)
{
	size_t rows = argc > 2 ? strtoul(argv[2], NULL, 10) : 500;
	struct store_sample *samples = calloc(rows, sizeof(*samples));
	struct store_limits limits = { 0 };
	struct timespec ts, t0, t1;
	struct store *s;
	char err[256];
	int64_t now;

	if (argc < 2 || !samples) {
		fprintf(stderr, "usage: heatmap_gen DB [ROWS]\n");
		return 2;
	}
	if (store_open(argv[1], &limits, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "heatmap_gen: %s\n", err);
		return 1;
	}
	/* A bench's file: no need to survive a power cut while it is written. */
	sqlite3_exec(store__db(s), "PRAGMA synchronous = OFF", NULL, NULL, NULL);
	gen();
	clock_gettime(CLOCK_REALTIME, &ts);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	now = (int64_t)ts.tv_sec * 1000 / WINDOW_MS * WINDOW_MS;
	for (int w = 0; w < WINDOWS; w++) {
		struct store_window win = {
			.start_ms = now - (int64_t)(WINDOWS - w) * WINDOW_MS,
			.end_ms = now - (int64_t)(WINDOWS - w - 1) * WINDOW_MS,
		};

		/* Distinct rows: a window holds each series once. */
		for (size_t i = 0; i < rows; i++) {
			uint32_t k = i < rows * 4 / 5 ? (w * 7 + i) % CORE
						      : CORE + (w * 131 + i * 17) % (SERIES - CORE);

			samples[i] = series[k];
			samples[i].sum_ns = 1000 + rnd(100000000);
			samples[i].count = 1 + rnd(100);
		}
		if (store_window_add(s, &win, samples, rows, NULL, 0, err, sizeof(err)) < 0) {
			fprintf(stderr, "heatmap_gen: window %d: %s\n", w, err);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("{\"windows\":%d,\"rows_per_window\":%zu,\"processes\":%d,\"threads\":%d,"
	       "\"gen_s\":%.1f}\n",
	       WINDOWS, rows, PROCESSES, PROCESSES * THREADS,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	store_close(s);
	free(samples);
	return 0;
}
