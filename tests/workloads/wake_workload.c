/*
 * wake_workload: a ground-truth workload for offcpud's wakeup, chain and run-queue tests.
 *
 * Threads with known names wake each other in a known pattern (mode), time every blocking call
 * with CLOCK_MONOTONIC and, when done, print one JSON line with that ground truth per thread:
 *
 *   condvar   wk-waker spins ~2 ms of CPU, then signals a condition wk-sleeper waits on; N
 *             times. Who woke the sleeper is always wk-waker, from waker_do_work.
 *   chain     wk-c sleeps 5 ms (woken by the timer interrupt), signals wk-b; wk-b spins ~2 ms,
 *             signals wk-a; wk-a acknowledges to wk-c, which waits for that before its next
 *             sleep. So wk-a waits on wk-b, which waits on wk-c, which waits on a timer; and
 *             wk-c's acknowledgement wait closes a loop (wk-a <- wk-b <- wk-c).
 *   saturate  wk-busy threads spin, wk-napper sleeps 1 ms at a time; all pinned to one CPU, so
 *             every nap ends with a wait on the run queue.
 *
 * The "condition variable" is a futex word (see struct signal_box). Frame-pointer walks lose
 * the direct caller of a libc function (see offcpu_workload.c), so a profiler sees <x>_thread,
 * not wait_for_signal or <x>_sleep, above libc's syscall or clock_nanosleep; on the waker side
 * it sees the caller of the function that signals (waker_do_work above syscall). The start
 * barrier is one call deeper, as in offcpu_workload, so it never looks like those.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The names of these functions are what tests look for: keep them whole and unique. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define WORKLOAD_FRAME __attribute__((noipa))
#endif
#endif
#ifndef WORKLOAD_FRAME
#define WORKLOAD_FRAME __attribute__((noinline))
#endif

#define NS_PER_MS  1000000ULL
#define NS_PER_SEC 1000000000ULL

#define COUNT_MAX 1000000UL /* fits the 32-bit futex generation */
#define MS_MAX	  60000UL
#define BUSY_MAX  1024UL

enum mode {
	MODE_CONDVAR,
	MODE_CHAIN,
	MODE_SATURATE,
};

static const char *const mode_names[] = {
	[MODE_CONDVAR] = "condvar",
	[MODE_CHAIN] = "chain",
	[MODE_SATURATE] = "saturate",
};

struct config {
	enum mode mode;
	unsigned long signals;
	unsigned long work_ms;
	unsigned long rounds;
	unsigned long sleep_ms;
	unsigned long naps;
	unsigned long nap_ms;
	unsigned long busy; /* 0: twice the online CPUs */
	unsigned long cpu;
	bool wait_go;
};

static struct config cfg = {
	.mode = MODE_CONDVAR,
	.signals = 50,
	.work_ms = 2,
	.rounds = 50,
	.sleep_ms = 5,
	.naps = 300,
	.nap_ms = 1,
	.cpu = 0,
};

struct worker_spec {
	const char *name;
	const char *function; /* the function that makes the measured libc call */
	void *(*start)(void *);
};

struct worker {
	const struct worker_spec *spec;
	pthread_t thread;
	/* Written by the worker thread, read by main after pthread_join(). */
	pid_t tid;
	uint64_t blocked_ns; /* in the measured blocking calls */
	uint64_t blocks;     /* measured blocking calls */
	uint64_t wakes;	     /* signals sent to another worker */
	uint64_t wall_ns;
	uint64_t cpu_ns;
	int64_t run_delay_ns; /* waited on a run queue, as the scheduler counts it; -1: unknown */
	uint64_t start_ns;
	uint64_t start_cpu_ns;
	int64_t start_run_delay_ns;
	int schedstat_fd; /* /proc/thread-self/schedstat, opened before the start barrier */
};

/*
 * A condition variable made of a futex word: a generation number a waiter waits to move past
 * what it saw. Not pthread_cond_t, whose libc functions on Debian 12 use %rbp as a general
 * register (perf shows a walk ending at __futex_abstimed_wait_common and at
 * pthread_cond_signal): libc's syscall() leaves %rbp alone, so both sides keep their callers.
 * The kernel path is that of pthread_cond_wait/signal: futex_wait, futex_wake.
 */
struct signal_box {
	_Atomic uint32_t gen;
};

static struct signal_box sleeper_box; /* condvar: wk-sleeper waits, wk-waker signals */
static struct signal_box a_box;	      /* chain: wk-a waits, wk-b signals */
static struct signal_box b_box;	      /* chain: wk-b waits, wk-c signals */
static struct signal_box c_box;	      /* chain: wk-c waits, wk-a acknowledges */

static pthread_barrier_t ready_barrier; /* all workers named: main may say "ready" */
static pthread_barrier_t start_barrier; /* the timed phase begins */
static atomic_bool busy_stop;

static void die(const char *what, int err)
{
	fprintf(stderr, "wake_workload: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The calling thread's total wait on a run queue (schedstat's second field, CONFIG_SCHED_INFO):
 * the scheduler's own count of what a run-queue split reports. -1 where the kernel has none.
 * fd is the file worker_begin() opened before the start barrier. One pread() and no allocation:
 * a read at the start of the timed phase that allocated (a thread's first malloc makes its
 * arena, under the mm lock) waited there, inside a profiler's capture but before this count. */
static int64_t thread_run_delay_ns(int fd)
{
	unsigned long long on_cpu, run_delay;
	char buf[128];
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return sscanf(buf, "%llu %llu", &on_cpu, &run_delay) == 2 ? (int64_t)run_delay : -1;
}

static struct timespec ms_to_timespec(unsigned long ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * (long)NS_PER_MS,
	};

	return ts;
}

/* Inlined into its callers, so that stacks show their names, not this one's. */
static inline __attribute__((always_inline)) uint64_t burn_cpu(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns, spins = 0;

	/* The thread CPU clock is a system call: look at it every few microseconds only. */
	do {
		for (int i = 0; i < 4096; i++)
			__asm__ __volatile__("" : "+r"(spins));
		spins++;
	} while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end);
	return spins;
}

/* Returns the nanoseconds spent in nanosleep(), from the call to the return: that includes
 * the wait on the run queue after the timer fired. Inlined, as burn_cpu. */
static inline __attribute__((always_inline)) uint64_t timed_nanosleep(unsigned long ms)
{
	struct timespec req = ms_to_timespec(ms);
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	while (nanosleep(&req, &req) < 0) {
		if (errno != EINTR)
			die("nanosleep", errno);
	}
	return now_ns(CLOCK_MONOTONIC) - t0;
}

/*
 * Waits until box->gen differs from *seen, then stores it in *seen. Each FUTEX_WAIT that
 * slept is timed, from the call to the return, and counted in w.
 */
static WORKLOAD_FRAME void wait_for_signal(struct signal_box *box, uint32_t *seen, struct worker *w)
{
	for (;;) {
		uint32_t gen = atomic_load(&box->gen);
		uint64_t t0;
		long r;

		if (gen != *seen) {
			*seen = gen;
			return;
		}
		t0 = now_ns(CLOCK_MONOTONIC);
		r = syscall(SYS_futex, &box->gen, FUTEX_WAIT_PRIVATE, gen, NULL, NULL, 0);
		if (r == 0) {
			w->blocked_ns += now_ns(CLOCK_MONOTONIC) - t0;
			w->blocks++;
		} else if (errno != EAGAIN && errno != EINTR) {
			die("futex wait", errno); /* EAGAIN: signalled before it slept */
		}
	}
}

/* Inlined, so that the caller's name is the one lost from frame-pointer walks. */
static inline __attribute__((always_inline)) void signal_box_post(struct signal_box *box,
								  struct worker *w)
{
	atomic_fetch_add(&box->gen, 1);
	if (syscall(SYS_futex, &box->gen, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0)
		die("futex wake", errno);
	w->wakes++;
}

static WORKLOAD_FRAME void wait_on_barrier(pthread_barrier_t *b)
{
	pthread_barrier_wait(b);
}

/* The extra frame (wait_on_barrier) keeps this name, not <x>_thread, above libc. */
static WORKLOAD_FRAME void wait_for_start(void)
{
	wait_on_barrier(&ready_barrier);
	wait_on_barrier(&start_barrier);
}

static void worker_begin(struct worker *w)
{
	pthread_setname_np(pthread_self(), w->spec->name);
	w->tid = gettid();
	w->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	wait_for_start();
	w->start_ns = now_ns(CLOCK_MONOTONIC);
	w->start_cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
	w->start_run_delay_ns = thread_run_delay_ns(w->schedstat_fd);
}

static void worker_end(struct worker *w)
{
	int64_t end_run_delay_ns;

	w->wall_ns = now_ns(CLOCK_MONOTONIC) - w->start_ns;
	w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - w->start_cpu_ns;
	end_run_delay_ns = thread_run_delay_ns(w->schedstat_fd);
	w->run_delay_ns = w->start_run_delay_ns < 0 || end_run_delay_ns < 0
				  ? -1
				  : end_run_delay_ns - w->start_run_delay_ns;
	if (w->schedstat_fd >= 0)
		close(w->schedstat_fd);
}

/* ---- condvar ---- */

static WORKLOAD_FRAME uint64_t waker_compute(void)
{
	return burn_cpu(cfg.work_ms * NS_PER_MS);
}

static WORKLOAD_FRAME void waker_signal(struct worker *w)
{
	signal_box_post(&sleeper_box, w);
}

static WORKLOAD_FRAME void waker_do_work(struct worker *w)
{
	waker_compute();
	waker_signal(w);
}

static WORKLOAD_FRAME void *waker_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.signals; i++)
		waker_do_work(w);
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME void *sleeper_thread(void *arg)
{
	struct worker *w = arg;
	uint32_t seen = 0;

	worker_begin(w);
	while (seen < cfg.signals)
		wait_for_signal(&sleeper_box, &seen, w);
	worker_end(w);
	return NULL;
}

/* ---- chain ---- */

static WORKLOAD_FRAME void a_ack_c(struct worker *w)
{
	signal_box_post(&c_box, w);
}

static WORKLOAD_FRAME void *a_thread(void *arg)
{
	struct worker *w = arg;
	uint32_t seen = 0;

	worker_begin(w);
	while (seen < cfg.rounds) {
		wait_for_signal(&a_box, &seen, w);
		a_ack_c(w);
	}
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME uint64_t b_work(void)
{
	return burn_cpu(cfg.work_ms * NS_PER_MS);
}

static WORKLOAD_FRAME void b_wake_a(struct worker *w)
{
	signal_box_post(&a_box, w);
}

static WORKLOAD_FRAME void *b_thread(void *arg)
{
	struct worker *w = arg;
	uint32_t seen = 0;

	worker_begin(w);
	while (seen < cfg.rounds) {
		wait_for_signal(&b_box, &seen, w);
		b_work();
		b_wake_a(w);
	}
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME void c_sleep(struct worker *w)
{
	w->blocked_ns += timed_nanosleep(cfg.sleep_ms);
	w->blocks++;
}

static WORKLOAD_FRAME void c_wake_b(struct worker *w)
{
	signal_box_post(&b_box, w);
}

static WORKLOAD_FRAME void *c_thread(void *arg)
{
	struct worker *w = arg;
	uint32_t acked = 0;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.rounds; i++) {
		c_sleep(w);
		c_wake_b(w);
		/* The next round starts once wk-a has seen this one. */
		wait_for_signal(&c_box, &acked, w);
	}
	worker_end(w);
	return NULL;
}

/* ---- saturate ---- */

/* No system calls here: any off-CPU time of a busy thread is preemption. */
static WORKLOAD_FRAME uint64_t busy_spin(void)
{
	uint64_t spins = 0;

	while (!atomic_load_explicit(&busy_stop, memory_order_relaxed))
		spins++;
	return spins;
}

static WORKLOAD_FRAME void *busy_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	busy_spin();
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME void napper_sleep(struct worker *w)
{
	w->blocked_ns += timed_nanosleep(cfg.nap_ms);
	w->blocks++;
}

static WORKLOAD_FRAME void *napper_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.naps; i++)
		napper_sleep(w);
	worker_end(w);
	return NULL;
}

/* ---- main ---- */

static const struct worker_spec condvar_specs[] = {
	{ "wk-waker", "waker_signal", waker_thread },
	{ "wk-sleeper", "wait_for_signal", sleeper_thread },
};

static const struct worker_spec chain_specs[] = {
	{ "wk-a", "wait_for_signal", a_thread },
	{ "wk-b", "wait_for_signal", b_thread },
	{ "wk-c", "c_sleep", c_thread },
};

static const struct worker_spec napper_spec = { "wk-napper", "napper_sleep", napper_thread };
static const struct worker_spec busy_spec = { "wk-busy", "busy_spin", busy_thread };

/* Blocks until one line (or at least its start) arrives on stdin. */
static WORKLOAD_FRAME void wait_for_go(void)
{
	int c;

	while ((c = getchar()) != '\n') {
		if (c == EOF) {
			fprintf(stderr, "wake_workload: stdin closed before the go line\n");
			exit(1);
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wake_workload [--mode condvar|chain|saturate] [options]\n"
		"Threads wake each other in a known pattern; prints the measured ground truth\n"
		"as one JSON line on stdout.\n"
		"  --mode MODE     condvar (default): wk-waker computes, then signals wk-sleeper\n"
		"                  chain: wk-c sleeps, wakes wk-b, which computes, wakes wk-a,\n"
		"                  which acknowledges to wk-c\n"
		"                  saturate: wk-busy threads and wk-napper pinned to one CPU\n"
		"  --signals N     condvar: number of signals (default 50)\n"
		"  --work-ms MS    condvar, chain: CPU time spent before each signal (default 2)\n"
		"  --rounds N      chain: number of rounds (default 50)\n"
		"  --sleep-ms MS   chain: wk-c's sleep in each round (default 5)\n"
		"  --naps N        saturate: number of naps (default 300)\n"
		"  --nap-ms MS     saturate: length of each nap (default 1)\n"
		"  --busy K        saturate: number of busy threads (default 2 x online CPUs)\n"
		"  --cpu C         saturate: the CPU every thread is pinned to (default 0)\n"
		"  --wait-go       print \"ready <pid>\" and wait for a line on stdin to start\n"
		"  -h, --help      show this help\n");
}

/* Returns 0 and stores the value in *ret, or -EINVAL / -ERANGE leaving *ret unchanged. */
static int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

static void parse_args(int argc, char **argv)
{
	enum {
		OPT_MODE = 256,
		OPT_SIGNALS,
		OPT_WORK_MS,
		OPT_ROUNDS,
		OPT_SLEEP_MS,
		OPT_NAPS,
		OPT_NAP_MS,
		OPT_BUSY,
		OPT_CPU,
		OPT_WAIT_GO
	};
	static const struct option options[] = {
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "signals", required_argument, NULL, OPT_SIGNALS },
		{ "work-ms", required_argument, NULL, OPT_WORK_MS },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "sleep-ms", required_argument, NULL, OPT_SLEEP_MS },
		{ "naps", required_argument, NULL, OPT_NAPS },
		{ "nap-ms", required_argument, NULL, OPT_NAP_MS },
		{ "busy", required_argument, NULL, OPT_BUSY },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "wait-go", no_argument, NULL, OPT_WAIT_GO },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		unsigned long *value = NULL, min = 1, max = COUNT_MAX;
		const char *name = NULL;
		size_t i;

		switch (opt) {
		case OPT_MODE:
			for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
				if (!strcmp(optarg, mode_names[i]))
					break;
			}
			if (i == sizeof(mode_names) / sizeof(mode_names[0])) {
				fprintf(stderr,
					"wake_workload: unknown mode '%s' (condvar, chain, "
					"saturate)\n",
					optarg);
				exit(2);
			}
			cfg.mode = (enum mode)i;
			break;
		case OPT_SIGNALS:
			name = "signals";
			value = &cfg.signals;
			break;
		case OPT_WORK_MS:
			name = "work-ms";
			value = &cfg.work_ms;
			max = MS_MAX;
			break;
		case OPT_ROUNDS:
			name = "rounds";
			value = &cfg.rounds;
			break;
		case OPT_SLEEP_MS:
			name = "sleep-ms";
			value = &cfg.sleep_ms;
			max = MS_MAX;
			break;
		case OPT_NAPS:
			name = "naps";
			value = &cfg.naps;
			break;
		case OPT_NAP_MS:
			name = "nap-ms";
			value = &cfg.nap_ms;
			max = MS_MAX;
			break;
		case OPT_BUSY:
			name = "busy";
			value = &cfg.busy;
			max = BUSY_MAX;
			break;
		case OPT_CPU:
			name = "cpu";
			value = &cfg.cpu;
			min = 0;
			max = CPU_SETSIZE - 1;
			break;
		case OPT_WAIT_GO:
			cfg.wait_go = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'wake_workload --help'.\n");
			exit(2);
		}
		if (value && parse_ulong(optarg, min, max, value) < 0) {
			fprintf(stderr,
				"wake_workload: --%s wants an integer from %lu to %lu, got '%s'\n",
				name, min, max, optarg);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "wake_workload: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
	if (cfg.mode == MODE_SATURATE && !cfg.busy) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		cfg.busy = n > 0 ? 2 * (unsigned long)n : 2;
		if (cfg.busy > BUSY_MAX)
			cfg.busy = BUSY_MAX;
	}
}

/* Pins the calling thread, and so every thread it creates after, to cfg.cpu. */
static void pin_to_cpu(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cfg.cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "wake_workload: cannot pin to CPU %lu: %s\n", cfg.cpu,
			strerror(errno));
		exit(1);
	}
}

static void print_result(const struct worker *workers, size_t n)
{
	const char *sep = "";

	printf("{\"pid\":%d,\"mode\":\"%s\",\"threads\":[", (int)getpid(), mode_names[cfg.mode]);
	for (size_t i = 0; i < n; i++) {
		const struct worker *w = &workers[i];

		printf("%s{\"name\":\"%s\",\"tid\":%d,\"function\":\"%s\",\"blocked_ns\":%" PRIu64
		       ",\"blocks\":%" PRIu64 ",\"wakes\":%" PRIu64 ",\"wall_ns\":%" PRIu64
		       ",\"cpu_ns\":%" PRIu64 ",\"run_delay_ns\":%" PRId64 "}",
		       sep, w->spec->name, (int)w->tid, w->spec->function, w->blocked_ns, w->blocks,
		       w->wakes, w->wall_ns, w->cpu_ns, w->run_delay_ns);
		sep = ",";
	}
	printf("]}\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct worker *workers;
	size_t n = 0;
	int r;

	parse_args(argc, argv);

	switch (cfg.mode) {
	case MODE_CONDVAR:
		n = sizeof(condvar_specs) / sizeof(condvar_specs[0]);
		break;
	case MODE_CHAIN:
		n = sizeof(chain_specs) / sizeof(chain_specs[0]);
		break;
	case MODE_SATURATE:
		n = 1 + cfg.busy;
		pin_to_cpu();
		break;
	}
	workers = calloc(n, sizeof(*workers));
	if (!workers)
		die("calloc", ENOMEM);
	for (size_t i = 0; i < n; i++) {
		switch (cfg.mode) {
		case MODE_CONDVAR:
			workers[i].spec = &condvar_specs[i];
			break;
		case MODE_CHAIN:
			workers[i].spec = &chain_specs[i];
			break;
		case MODE_SATURATE:
			workers[i].spec = i ? &busy_spec : &napper_spec;
			break;
		}
	}

	/* main takes part in both barriers */
	r = pthread_barrier_init(&ready_barrier, NULL, n + 1);
	if (!r)
		r = pthread_barrier_init(&start_barrier, NULL, n + 1);
	if (r)
		die("pthread_barrier_init", r);
	for (size_t i = 0; i < n; i++) {
		r = pthread_create(&workers[i].thread, NULL, workers[i].spec->start, &workers[i]);
		if (r)
			die("pthread_create", r);
	}

	pthread_barrier_wait(&ready_barrier);
	if (cfg.wait_go) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		wait_for_go();
	}
	pthread_barrier_wait(&start_barrier);

	/* The busy threads spin until the others are done. */
	for (size_t i = 0; i < n; i++) {
		if (workers[i].spec != &busy_spec)
			pthread_join(workers[i].thread, NULL);
	}
	atomic_store(&busy_stop, true);
	for (size_t i = 0; i < n; i++) {
		if (workers[i].spec == &busy_spec)
			pthread_join(workers[i].thread, NULL);
	}

	print_result(workers, n);
	free(workers);
	return 0;
}
