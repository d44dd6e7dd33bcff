/*
 * store_bench: what an hour of the continuous profile costs in the store.
 * Stores 360 windows of 500 (ustack, kstack) rows from a deterministic
 * generator (200 frame names, user stacks 10-30 frames deep, 80 % of the
 * stacks in every window, most of the rest recurring now and then, 10 new
 * per window; kernel stacks 10-20 frames, 8 processes of 4 threads; one row
 * in 10 an off-wake row with a waker chain of 5-15 kernel frames from a pool
 * of 40, the others without a chain) and histograms of 20 processes x 2
 * types x 6-10 log2 buckets, then times queries over the last 5 minutes and
 * the whole hour (samples and histograms), then adds 60 more windows under a
 * size limit that forces eviction.
 * Prints one JSON line. Usage: store_bench [--dir DIR] (DIR keeps the file).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define WINDOWS		  360
#define WINDOW_MS	  10000
#define ROWS		  500
#define CORE_STACKS	  400 /* in every window */
#define OCCASIONAL_ROWS	  90  /* per window, from a pool of OCCASIONAL_STACKS */
#define OCCASIONAL_STACKS 2000
#define NEW_ROWS	  10 /* stacks never seen before, per window */
#define USER_FRAMES	  140
#define KERNEL_FRAMES	  60
#define KERNEL_STACKS	  60
#define PROCESSES	  8
#define CHAINS		  40 /* distinct waker chains */
#define CHAIN_PERCENT	  10 /* of the stacks, off-wake rows with a chain */
#define HIST_PROCESSES	  20
#define HIST_MAX_ROWS	  (HIST_PROCESSES * 2 * 10)
#define EXTRA_WINDOWS	  60
#define RUNS		  5

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* xorshift64*: the same numbers on every run. */
static uint32_t rnd(uint32_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dULL) >> 32) % n;
}

static char *frame_names[USER_FRAMES + KERNEL_FRAMES];
static char *kernel_stacks[KERNEL_STACKS];
static char *chains[CHAINS];

struct stack {
	char *ustack;
	uint32_t kstack; /* index into kernel_stacks */
	uint32_t thread; /* which thread blocks there */
	uint32_t state;
	int32_t chain; /* index into chains; -1: none (an off-CPU row) */
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

static char *join_frames(uint32_t first, uint32_t n_names, uint32_t depth)
{
	char *s = xmalloc(depth * 96 + 1);
	size_t len = 0;

	s[0] = '\0';
	for (uint32_t i = 0; i < depth; i++)
		len += (size_t)sprintf(s + len, "%s%s", i ? ";" : "",
				       frame_names[first + rnd(n_names)]);
	return s;
}

static void gen_names(void)
{
	static const char *const user_fmt[] = {
		"libc.so.6+0x%x",
		"app::Server::handle_request_%u",
		"std::vector<Item>::push_%u",
		"pq_query_stage_%u",
		"[libjvm.so]+0x%x",
		"worker_loop_%u",
	};
	static const char *const kernel_fmt[] = {
		"schedule_%u",	    "do_syscall_%u", "ext4_file_op_%u",
		"tcp_recv_path_%u", "futex_wait_%u",
	};
	char buf[96];

	for (uint32_t i = 0; i < USER_FRAMES; i++) {
		snprintf(buf, sizeof(buf), user_fmt[i % 6],
			 i % 6 == 0 || i % 6 == 4 ? 0x10000 + i * 0x1f3 : i);
		frame_names[i] = strdup(buf);
	}
	for (uint32_t i = 0; i < KERNEL_FRAMES; i++) {
		snprintf(buf, sizeof(buf), kernel_fmt[i % 5], i);
		frame_names[USER_FRAMES + i] = strdup(buf);
	}
	for (uint32_t i = 0; i < KERNEL_STACKS; i++)
		kernel_stacks[i] = join_frames(USER_FRAMES, KERNEL_FRAMES, 10 + rnd(11));
	for (uint32_t i = 0; i < CHAINS; i++)
		chains[i] = join_frames(USER_FRAMES, KERNEL_FRAMES, 5 + rnd(11));
}

static void gen_stack(struct stack *st)
{
	st->ustack = join_frames(0, USER_FRAMES, 10 + rnd(21));
	st->kstack = rnd(KERNEL_STACKS);
	st->thread = rnd(PROCESSES * 4);
	st->state = rnd(10) < 7 ? 1 : rnd(4); /* mostly sleeping */
	st->chain = rnd(100) < CHAIN_PERCENT ? (int32_t)rnd(CHAINS) : -1;
}

static void sample_of(const struct stack *st, struct store_sample *out)
{
	static const char *const comms[PROCESSES] = {
		"nginx",	 "postgres", "java",  "redis-server",
		"kworker/u16:2", "sshd",     "envoy", "node",
	};
	uint32_t process = st->thread / 4;

	*out = (struct store_sample){
		.tgid = 1000 + process * 100,
		.pid = 1000 + process * 100 + st->thread % 4,
		.comm = comms[process],
		.kind = st->chain < 0 ? 0 : 2, /* off-CPU, off-wake */
		.state = st->state,
		.sum_ns = 1000 + rnd(50000000),
		.count = 1 + rnd(200),
		.ustack = st->ustack,
		.kstack = kernel_stacks[st->kstack],
		.chain = st->chain < 0 ? "" : chains[st->chain],
	};
}

/* A window's histograms: per process and type, 6-10 buckets in a row. */
static size_t hists_of(struct store_hist *out)
{
	static const char *const comms[HIST_PROCESSES] = {
		"nginx",      "postgres", "java",	"redis-server", "kworker/u16:2",
		"sshd",	      "envoy",	  "node",	"systemd",	"journald",
		"containerd", "kubelet",  "dockerd",	"chronyd",	"rsyslogd",
		"cron",	      "dbus",	  "prometheus", "grafana",	"haproxy",
	};
	size_t n = 0;

	for (uint32_t p = 0; p < HIST_PROCESSES; p++) {
		for (uint32_t type = 0; type < 2; type++) {
			uint32_t first = rnd(STORE_HIST_BUCKETS - 10), len = 6 + rnd(5);

			for (uint32_t b = first; b < first + len; b++)
				out[n++] = (struct store_hist){
					.tgid = 1000 + p * 100,
					.comm = comms[p],
					.type = type,
					.bucket = b,
					.count = 1 + rnd(5000),
				};
		}
	}
	return n;
}

static double now_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct totals {
	uint64_t rows;
	uint64_t sum_ns;
	uint64_t bytes; /* of the strings, so they are read */
};

static int sum_row(void *arg, const struct store_sample *s)
{
	struct totals *t = arg;

	t->rows++;
	t->sum_ns += s->sum_ns;
	t->bytes += strlen(s->ustack) + strlen(s->kstack) + strlen(s->chain) + strlen(s->comm);
	return 0;
}

static int sum_hist(void *arg, const struct store_hist *h)
{
	struct totals *t = arg;

	t->rows++;
	t->sum_ns += h->count;
	t->bytes += strlen(h->comm);
	return 0;
}

static uint64_t file_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Stores windows first..first+n-1; durations in ms go to add_ms. */
static int add_windows(struct store *s, int64_t base_ms, int first, int n, struct stack *core,
		       struct stack *occasional, double *add_ms)
{
	struct store_sample rows[ROWS];
	struct store_hist hists[HIST_MAX_ROWS];
	struct stack fresh[NEW_ROWS];
	char err[256];

	for (int w = first; w < first + n; w++) {
		struct store_window win = { .start_ms = base_ms + (int64_t)w * WINDOW_MS,
					    .end_ms = base_ms + (int64_t)(w + 1) * WINDOW_MS };
		size_t k = 0, n_hists = hists_of(hists);
		double t0;
		int r;

		for (int i = 0; i < CORE_STACKS; i++)
			sample_of(&core[i], &rows[k++]);
		/* Distinct picks, so the window has ROWS unique stacks. */
		for (int i = 0, start = (int)rnd(OCCASIONAL_STACKS); i < OCCASIONAL_ROWS; i++)
			sample_of(&occasional[(start + i * 7) % OCCASIONAL_STACKS], &rows[k++]);
		for (int i = 0; i < NEW_ROWS; i++) {
			gen_stack(&fresh[i]);
			sample_of(&fresh[i], &rows[k++]);
		}
		t0 = now_s(CLOCK_MONOTONIC);
		r = store_window_add(s, &win, rows, k, hists, n_hists, err, sizeof(err));
		add_ms[w - first] = (now_s(CLOCK_MONOTONIC) - t0) * 1000;
		for (int i = 0; i < NEW_ROWS; i++)
			free(fresh[i].ustack);
		if (r < 0) {
			fprintf(stderr, "store_window_add: %s (%s)\n", err, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Median ms of store_query, or of store_hist_query of type when hist. */
static double time_query(struct store *s, int64_t from_ms, int64_t to_ms, bool hist, uint32_t type,
			 struct totals *t, uint64_t *windows)
{
	struct store_query q = { .from_ms = from_ms, .to_ms = to_ms };
	double runs[RUNS];
	char err[256];

	for (int i = 0; i < RUNS; i++) {
		double t0 = now_s(CLOCK_MONOTONIC);
		int r;

		memset(t, 0, sizeof(*t));
		if (hist)
			r = store_hist_query(s, &q, type, sum_hist, t, windows, err, sizeof(err));
		else
			r = store_query(s, &q, sum_row, t, windows, err, sizeof(err));
		runs[i] = (now_s(CLOCK_MONOTONIC) - t0) * 1000;
		if (r < 0) {
			fprintf(stderr, "store_query: %s (%s)\n", err, strerror(-r));
			exit(1);
		}
	}
	return median(runs, RUNS);
}

/* What the store says of its windows, on average. */
static int window_averages(struct store *s, uint64_t *ret_stacks, uint64_t *ret_bytes)
{
	struct store_window *list = NULL;
	uint64_t stacks = 0, bytes = 0;
	size_t n = 0;
	char err[256];

	if (store_windows_list(s, INT64_MIN, &list, &n, err, sizeof(err)) < 0 || !n) {
		fprintf(stderr, "store_windows_list: %s\n", n ? err : "no windows");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		stacks += list[i].n_stacks;
		bytes += list[i].bytes;
	}
	free(list);
	*ret_stacks = stacks / n;
	*ret_bytes = bytes / n;
	return 0;
}

int main(int argc, char **argv)
{
	static struct stack core[CORE_STACKS], occasional[OCCASIONAL_STACKS];
	static double add_ms[WINDOWS], extra_ms[EXTRA_WINDOWS];
	char tmp[] = "/tmp/store-bench-XXXXXX", path[512], wal[520], err[256];
	const char *dir = NULL;
	struct store_limits limits = { 0 };
	struct store_stats stats;
	struct totals t5, t60, th5, th60;
	uint64_t w5, w60, wh, hour_db_bytes, file_after_close, stacks_per_window, estimated_bytes;
	double q5, q60, qh5, qh60, add_median, add_max = 0, extra_median, extra_max = 0;
	int64_t base_ms;
	struct store *s;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			dir = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--dir DIR]\n", argv[0]);
			return 2;
		}
	}
	if (!dir && !(dir = mkdtemp(tmp))) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/store-bench.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(path);
	unlink(wal);

	gen_names();
	for (int i = 0; i < CORE_STACKS; i++)
		gen_stack(&core[i]);
	for (int i = 0; i < OCCASIONAL_STACKS; i++)
		gen_stack(&occasional[i]);
	/* The hour that just ended. */
	base_ms = (int64_t)(now_s(CLOCK_REALTIME) * 1000) / WINDOW_MS * WINDOW_MS -
		  (int64_t)WINDOWS * WINDOW_MS;

	r = store_open(path, &limits, &s, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	if (add_windows(s, base_ms, 0, WINDOWS, core, occasional, add_ms) < 0)
		return 1;
	for (int i = 0; i < WINDOWS; i++)
		add_max = add_ms[i] > add_max ? add_ms[i] : add_max;
	add_median = median(add_ms, WINDOWS);
	if (window_averages(s, &stacks_per_window, &estimated_bytes) < 0)
		return 1;

	q5 = time_query(s, base_ms + (int64_t)(WINDOWS - 30) * WINDOW_MS,
			base_ms + (int64_t)WINDOWS * WINDOW_MS, false, 0, &t5, &w5);
	q60 = time_query(s, base_ms, base_ms + (int64_t)WINDOWS * WINDOW_MS, false, 0, &t60, &w60);
	qh5 = time_query(s, base_ms + (int64_t)(WINDOWS - 30) * WINDOW_MS,
			 base_ms + (int64_t)WINDOWS * WINDOW_MS, true, 0, &th5, &wh);
	qh60 = time_query(s, base_ms, base_ms + (int64_t)WINDOWS * WINDOW_MS, true, 0, &th60, &wh);
	if (store_stats(s, &stats) < 0)
		return 1;
	hour_db_bytes = stats.db_bytes;
	store_close(s);
	file_after_close = file_bytes(path); /* checkpointed, no WAL */

	/* Steady state: a size limit at the hour's size, so adds evict. */
	limits.max_db_bytes = file_after_close;
	r = store_open(path, &limits, &s, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	if (add_windows(s, base_ms, WINDOWS, EXTRA_WINDOWS, core, occasional, extra_ms) < 0)
		return 1;
	for (int i = 0; i < EXTRA_WINDOWS; i++)
		extra_max = extra_ms[i] > extra_max ? extra_ms[i] : extra_max;
	extra_median = median(extra_ms, EXTRA_WINDOWS);
	if (store_stats(s, &stats) < 0)
		return 1;
	store_close(s);

	printf("{\"windows\":%d,\"stacks_per_window\":%llu,\"db_bytes_with_wal\":%llu,"
	       "\"db_file_bytes\":%llu,\"bytes_per_window\":%llu,\"estimated_bytes_per_window\":%"
	       "llu,"
	       "\"add_window_median_ms\":%.3f,\"add_window_max_ms\":%.3f,"
	       "\"query_last5m_median_ms\":%.2f,\"query_last5m_windows\":%llu,"
	       "\"query_last5m_rows\":%llu,\"query_last1h_median_ms\":%.2f,"
	       "\"query_last1h_windows\":%llu,\"query_last1h_rows\":%llu,"
	       "\"hist_query_last5m_median_ms\":%.2f,\"hist_query_last5m_rows\":%llu,"
	       "\"hist_query_last1h_median_ms\":%.2f,\"hist_query_last1h_rows\":%llu,"
	       "\"evicting_limit_bytes\":%llu,\"evicting_add_median_ms\":%.3f,"
	       "\"evicting_add_max_ms\":%.3f,\"evicting_windows_left\":%llu,"
	       "\"evicting_db_bytes\":%llu}\n",
	       WINDOWS, (unsigned long long)stacks_per_window, (unsigned long long)hour_db_bytes,
	       (unsigned long long)file_after_close,
	       (unsigned long long)(file_after_close / WINDOWS),
	       (unsigned long long)estimated_bytes, add_median, add_max, q5, (unsigned long long)w5,
	       (unsigned long long)t5.rows, q60, (unsigned long long)w60,
	       (unsigned long long)t60.rows, qh5, (unsigned long long)th5.rows, qh60,
	       (unsigned long long)th60.rows, (unsigned long long)limits.max_db_bytes, extra_median,
	       extra_max, (unsigned long long)stats.windows, (unsigned long long)stats.db_bytes);

	if (dir == tmp) {
		unlink(path);
		unlink(wal);
		snprintf(wal, sizeof(wal), "%s-shm", path);
		unlink(wal);
		rmdir(tmp);
	}
	return 0;
}
