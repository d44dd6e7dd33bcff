/*
 * store_replay: what the windows of a stored profile cost to write again.
 * Reads every continuous window of SRC with its samples and histograms (from
 * a copy: opening a store migrates it; captures' windows are left out). Then,
 * --runs times, adds them in order to a fresh store, --passes times over,
 * each pass with its processes and threads renumbered (new ones, as under
 * process churn, whose stacks the store knows from the pass before). The
 * passes after the first are timed: each add, a continuous window's heatmap
 * cells included. The database of a bench/churn.py run (--keep-db) gives
 * what process churn costs the store: a series per new thread, a histogram
 * per new process.
 * Prints one JSON line: the windows, their sample rows and histogram buckets,
 * and
 * the median (and least) over the runs of the mean milliseconds per window.
 * Usage: store_replay SRC.db [--runs N] [--passes P]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"

/* A window's rows, strings copied out of the query's buffers. */
struct window_rows {
	struct store_window w;
	struct store_sample *samples;
	size_t n_samples, cap_samples;
	struct store_hist *hists;
	size_t n_hists, cap_hists;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return s ? strcpy(xrealloc(NULL, strlen(s) + 1), s) : NULL;
}

static int on_sample(void *arg, const struct store_sample *in)
{
	struct window_rows *r = arg;
	struct store_sample *out;

	if (r->n_samples == r->cap_samples) {
		r->cap_samples = r->cap_samples ? 2 * r->cap_samples : 1024;
		r->samples = xrealloc(r->samples, r->cap_samples * sizeof(*r->samples));
	}
	out = &r->samples[r->n_samples++];
	*out = *in;
	out->comm = xstrdup(in->comm);
	out->ustack = xstrdup(in->ustack);
	out->kstack = xstrdup(in->kstack);
	out->chain = xstrdup(in->chain);
	out->cgroup = xstrdup(in->cgroup ? in->cgroup : "");
	return 0;
}

static int on_hist(void *arg, const struct store_hist *in)
{
	struct window_rows *r = arg;

	if (r->n_hists == r->cap_hists) {
		r->cap_hists = r->cap_hists ? 2 * r->cap_hists : 1024;
		r->hists = xrealloc(r->hists, r->cap_hists * sizeof(*r->hists));
	}
	r->hists[r->n_hists] = *in;
	r->hists[r->n_hists++].comm = xstrdup(in->comm);
	return 0;
}

/* Copies src to dst with SQLite's backup (its WAL included). */
static int copy_db(const char *src, const char *dst)
{
	sqlite3 *from = NULL, *to = NULL;
	sqlite3_backup *b;
	int rc;

	rc = sqlite3_open_v2(src, &from, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_open(dst, &to);
	if (rc == SQLITE_OK) {
		b = sqlite3_backup_init(to, "main", from, "main");
		rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(to);
		if (b)
			sqlite3_backup_finish(b);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	if (rc != SQLITE_OK)
		fprintf(stderr, "cannot copy '%s': %s\n", src, sqlite3_errstr(rc));
	sqlite3_close(from);
	sqlite3_close(to);
	return rc == SQLITE_OK ? 0 : -1;
}

/* The continuous windows of the store at path, with their rows. */
static struct window_rows *read_windows(const char *path, size_t *ret_n)
{
	struct store_window *list;
	struct window_rows *rows;
	struct store *s;
	char err[256];
	size_t n;

	*ret_n = 0;
	if (store_open(path, NULL, &s, err, sizeof(err)) < 0 ||
	    store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	rows = xrealloc(NULL, (n ? n : 1) * sizeof(*rows));
	memset(rows, 0, (n ? n : 1) * sizeof(*rows));
	for (size_t i = 0; i < n; i++) {
		struct store_query q = { .from_ms = list[i].start_ms, .to_ms = list[i].start_ms + 1 };

		if (list[i].capture_id)
			continue;
		rows[*ret_n].w = (struct store_window){ .start_ms = list[i].start_ms,
							.end_ms = list[i].end_ms };
		/* A range: a window starting in the same millisecond as the last
		 * came with it (and is stored empty). */
		if (*ret_n && rows[*ret_n - 1].w.start_ms == list[i].start_ms) {
			++*ret_n;
			continue;
		}
		if (store_query(s, &q, on_sample, &rows[*ret_n], NULL, err, sizeof(err)) < 0 ||
		    store_hist_query(s, &q, 0, on_hist, &rows[*ret_n], NULL, err, sizeof(err)) < 0 ||
		    store_hist_query(s, &q, 1, on_hist, &rows[*ret_n], NULL, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		++*ret_n;
	}
	free(list);
	store_close(s);
	return rows;
}

/* The database at path and its WAL and shared-memory files. */
static void remove_db(const char *path)
{
	char side[128];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Renumbers the processes and threads of rows by delta. */
static void renumber(struct window_rows *rows, size_t n, uint32_t delta)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < rows[i].n_samples; k++) {
			rows[i].samples[k].tgid += delta;
			rows[i].samples[k].pid += delta;
		}
		for (size_t k = 0; k < rows[i].n_hists; k++)
			rows[i].hists[k].tgid += delta;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/store-replay-XXXXXX", copy[64], path[64], err[256];
	size_t n, n_samples = 0, n_hists = 0;
	struct window_rows *rows;
	int runs = 3, passes = 3;
	double *ms;

	for (int i = 1; i < argc; i++) {
		if (i == 1 && argv[i][0] != '-')
			continue;
		if (!strcmp(argv[i], "--runs") && i + 1 < argc && (runs = atoi(argv[i + 1])) > 0)
			i++;
		else if (!strcmp(argv[i], "--passes") && i + 1 < argc &&
			 (passes = atoi(argv[i + 1])) > 1)
			i++;
		else
			argc = 0;
	}
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: store_replay SRC.db [--runs N >= 1] [--passes P >= 2]\n");
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(copy, sizeof(copy), "%s/src.db", dir);
	snprintf(path, sizeof(path), "%s/replay.db", dir);
	if (copy_db(argv[1], copy) < 0)
		return 1;
	rows = read_windows(copy, &n);
	for (size_t i = 0; i < n; i++) {
		n_samples += rows[i].n_samples;
		n_hists += rows[i].n_hists;
	}
	ms = xrealloc(NULL, runs * sizeof(*ms));
	for (int run = 0; run < runs; run++) {
		struct store *s;
		double total = 0;

		remove_db(path);
		if (store_open(path, NULL, &s, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		for (int pass = 0; pass < passes; pass++) {
			/* Above any pid (at most 2^22): new processes. */
			renumber(rows, n, pass ? 1u << 22 : 0);
			for (size_t i = 0; i < n; i++) {
				struct store_window w = rows[i].w;
				double t0 = now_ms();

				w.start_ms += (int64_t)pass * 86400000; /* windows in order */
				w.end_ms += (int64_t)pass * 86400000;
				if (store_window_add(s, &w, rows[i].samples, rows[i].n_samples,
						     rows[i].hists, rows[i].n_hists, err,
						     sizeof(err)) < 0) {
					fprintf(stderr, "window %zu: %s\n", i, err);
					return 1;
				}
				if (pass)
					total += now_ms() - t0;
			}
		}
		renumber(rows, n, -(uint32_t)(passes - 1) * (1u << 22));
		store_close(s);
		ms[run] = n ? total / ((double)n * (passes - 1)) : 0;
	}
	qsort(ms, runs, sizeof(*ms), cmp_double);
	printf("{\"windows\": %zu, \"sample_rows\": %zu, \"hist_buckets\": %zu, \"runs\": %d, "
	       "\"passes\": %d, \"add_ms_per_window\": %.2f, \"add_ms_per_window_min\": %.2f}\n",
	       n, n_samples, n_hists, runs, passes, ms[runs / 2], ms[0]);
	remove_db(path);
	remove_db(copy);
	rmdir(dir);
	return 0;
}
