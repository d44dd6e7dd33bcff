/*
 * store_heatmap: the ring's off-CPU time per window and row (process, thread
 * or thread state), summed in SQL, for the heatmap of `offcpuctl serve`:
 * thousands of windows answered without reading a single stack. Part of the
 * store (same connection, same single-thread rule, see store.h); it reads
 * an index of per-thread sums that store_window_add() writes with each
 * continuous window. Called by store_jobs.c on the store queue's worker. Does
 * not log.
 */
#ifndef STORE_HEATMAP_H
#define STORE_HEATMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

enum store_heatmap_key {
	STORE_HEATMAP_TGID,  /* a row per process */
	STORE_HEATMAP_PID,   /* a row per thread */
	STORE_HEATMAP_STATE, /* a row per thread state (enum offcpu_state) */
};

struct store_heatmap_query {
	int64_t from_ms; /* continuous windows with from_ms <= start_ms < to_ms */
	int64_t to_ms;
	const uint32_t *pids; /* tgids; n_pids == 0: all */
	size_t n_pids;	      /* at most STORE_QUERY_MAX_PIDS, else -EINVAL */
	const char *comm;     /* NULL or "": all; else exact match */
	uint32_t state_mask;  /* 1 << state; 0: all */
	uint32_t kind_mask;   /* 1 << kind; 0: all */
	enum store_heatmap_key key;
	size_t max_rows; /* >= 1: the rows with the largest totals; the rest in one */
};

struct store_heatmap_row {
	uint64_t key;	   /* tgid, pid or state; 0 for the "other" row */
	char *label;	   /* the comm (process: its main thread's if seen); "" for states */
	bool other;	   /* the rows past max_rows, summed */
	uint64_t total_ns; /* over all windows */
	uint64_t *cells;   /* n_windows sums, by window; saturating */
};

struct store_heatmap {
	size_t n_windows; /* the range's windows, by start_ms then id */
	int64_t *start_ms, *end_ms;
	size_t n_rows; /* largest total first (then smallest key); "other" last */
	struct store_heatmap_row *rows;
};

/* Fills *ret (free with store_heatmap_free()) for q: every window that q's
 * range selects is a column, even one without rows. 0 or -errno, with a
 * message in err for store errors; -EINVAL for bad arguments. */
int store_heatmap_query(struct store *s, const struct store_heatmap_query *q,
			struct store_heatmap *ret, char *err, size_t err_size);

void store_heatmap_free(struct store_heatmap *h); /* NULL-safe; frees the contents */

#endif
