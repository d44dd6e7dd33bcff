/*
 * offcpu_workload: a ground-truth workload for offcpud's integration tests.
 *
 * Threads with known names block through ordinary libc calls (nanosleep, read on a pipe,
 * pthread_mutex_lock) for known durations. Each blocking call sits in a noinline
 * block_in_<what>() function called from a noinline <role>_thread() function. Around each
 * blocking call the workload reads CLOCK_MONOTONIC and sums the time; when done it prints one
 * JSON line with that ground truth per thread, for a test to compare with what offcpud saw.
 *
 * What a frame-pointer profiler can see: Debian's libc is built without frame pointers, so
 * libc functions do not set up %rbp. When a thread blocks in nanosleep, read or
 * pthread_mutex_lock, %rbp still holds the frame of libc's direct caller (block_in_<what>),
 * and the first return address a frame-pointer walk reads is that frame's return address
 * into <role>_thread. The return address into block_in_<what> lies where only libc's
 * unwind tables know it, so the walk loses it: the profiler sees <role>_thread directly above the
 * libc frame (checked with perf --call-graph fp on Debian 12: clock_nanosleep <- sleeper_thread).
 * Waits that are not ground truth (start barrier, handshake with the holder) must not look
 * like that. On Debian 12 they do not: sem_wait and pthread_barrier_wait use %rbp as a
 * general register, so the walk ends at the libc frame. They are also made one call deeper,
 * so that with a libc that leaves %rbp alone the walk shows wait_for_* above libc instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#define COUNT_MAX 1000000UL
#define MS_MAX	  60000UL

enum role {
	ROLE_SLEEPER = 1 << 0,
	ROLE_READER = 1 << 1,
	ROLE_LOCKER = 1 << 2,
	ROLE_SPINNER = 1 << 3,
};

static const struct {
	const char *name;
	unsigned int role;
} role_names[] = {
	{ "sleeper", ROLE_SLEEPER },
	{ "reader", ROLE_READER },
	{ "locker", ROLE_LOCKER },
	{ "spinner", ROLE_SPINNER },
};

struct config {
	unsigned long sleeps;
	unsigned long sleep_ms;
	unsigned long reads;
	unsigned long period_ms;
	unsigned long locks;
	unsigned long hold_ms;
	unsigned int roles;
	bool wait_go;
};

static struct config cfg = {
	.sleeps = 50,
	.sleep_ms = 20,
	.reads = 100,
	.period_ms = 10,
	.locks = 50,
	.hold_ms = 10,
};

struct worker_spec {
	const char *name;
	const char *function; /* the function that makes the measured libc call */
	void *(*start)(void *);
	unsigned int role;
};

static void *sleeper_thread(void *arg);
static void *reader_thread(void *arg);
static void *writer_thread(void *arg);
static void *locker_thread(void *arg);
static void *holder_thread(void *arg);
static void *spinner_thread(void *arg);

static const struct worker_spec worker_specs[] = {
	{ "ow-sleeper", "block_in_sleep", sleeper_thread, ROLE_SLEEPER },
	{ "ow-reader", "block_in_pipe_read", reader_thread, ROLE_READER },
	{ "ow-writer", "block_in_sleep", writer_thread, ROLE_READER },
	{ "ow-locker", "block_in_mutex_lock", locker_thread, ROLE_LOCKER },
	{ "ow-holder", "block_in_sleep", holder_thread, ROLE_LOCKER },
	{ "ow-spinner", "spin_on_cpu", spinner_thread, ROLE_SPINNER },
};

#define N_WORKERS (sizeof(worker_specs) / sizeof(worker_specs[0]))

struct worker {
	const struct worker_spec *spec;
	bool active;
	pthread_t thread;
	/* Written by the worker thread, read by main after pthread_join(). */
	pid_t tid;
	uint64_t blocked_ns;
	uint64_t blocks;
	uint64_t wall_ns;
	uint64_t cpu_ns;
	uint64_t start_ns;
	uint64_t start_cpu_ns;
	uint64_t run_delay_ns; /* the kernel's own count of run-queue waits */
	uint64_t start_run_delay_ns;
	int schedstat_fd;
};

static struct worker workers[N_WORKERS];

static pthread_barrier_t ready_barrier; /* all workers named: main may say "ready" */
static pthread_barrier_t start_barrier; /* the timed phase begins */
static int pipe_fds[2];
static pthread_mutex_t held_mutex = PTHREAD_MUTEX_INITIALIZER;
static sem_t held_sem; /* posted by the holder once it holds held_mutex */
static atomic_bool spin_stop;

static void die(const char *what, int err)
{
	fprintf(stderr, "offcpu_workload: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct timespec ms_to_timespec(unsigned long ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * (long)NS_PER_MS,
	};

	return ts;
}

/* Returns the nanoseconds spent in nanosleep(). */
static WORKLOAD_FRAME uint64_t block_in_sleep(unsigned long ms)
{
	struct timespec req = ms_to_timespec(ms);
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	while (nanosleep(&req, &req) < 0) {
		if (errno != EINTR)
			die("nanosleep", errno);
	}
	return now_ns(CLOCK_MONOTONIC) - t0;
}

/* Reads one byte; returns the nanoseconds spent in read(). */
static WORKLOAD_FRAME uint64_t block_in_pipe_read(int fd)
{
	char c;
	ssize_t n;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	do {
		n = read(fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		die("read from pipe", errno);
	if (n == 0)
		die("read from pipe", EPIPE);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

/* Returns the nanoseconds spent in pthread_mutex_lock(); the caller then holds m. */
static WORKLOAD_FRAME uint64_t block_in_mutex_lock(pthread_mutex_t *m)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	int r = pthread_mutex_lock(m);

	if (r)
		die("pthread_mutex_lock", r);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

static WORKLOAD_FRAME void wait_on_barrier(pthread_barrier_t *b)
{
	pthread_barrier_wait(b);
}

/* The extra frame (wait_on_barrier) keeps this name, not <role>_thread, above libc. */
static WORKLOAD_FRAME void wait_for_start(void)
{
	wait_on_barrier(&ready_barrier);
	wait_on_barrier(&start_barrier);
}

static WORKLOAD_FRAME void wait_on_sem(sem_t *s)
{
	while (sem_wait(s) < 0) {
		if (errno != EINTR)
			die("sem_wait", errno);
	}
}

/* Not ground truth: a walk shows wait_for_holder above libc, not locker_thread. */
static WORKLOAD_FRAME void wait_for_holder(void)
{
	wait_on_sem(&held_sem);
}

/* The time this thread waited on a run queue, as the scheduler counts it
 * (sched_info's run_delay, the second field of schedstat), read from fd, the
 * thread's own /proc/thread-self/schedstat; 0 if the kernel does not say.
 * pread on an fd opened earlier: no allocation, no path lookup, so a worker
 * that must never block (the spinner) does not block here. */
static uint64_t run_delay_ns(int fd)
{
	char buf[128], *end;
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	strtoull(buf, &end, 10); /* CPU time */
	return strtoull(end, NULL, 10);
}

static void worker_begin(struct worker *w)
{
	pthread_setname_np(pthread_self(), w->spec->name);
	w->tid = gettid();
	w->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	wait_for_start();
	w->start_ns = now_ns(CLOCK_MONOTONIC);
	w->start_cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
	w->start_run_delay_ns = run_delay_ns(w->schedstat_fd);
}

static void worker_end(struct worker *w)
{
	w->wall_ns = now_ns(CLOCK_MONOTONIC) - w->start_ns;
	w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - w->start_cpu_ns;
	w->run_delay_ns = run_delay_ns(w->schedstat_fd) - w->start_run_delay_ns;
	if (w->schedstat_fd >= 0)
		close(w->schedstat_fd);
}

static WORKLOAD_FRAME void *sleeper_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.sleeps; i++) {
		w->blocked_ns += block_in_sleep(cfg.sleep_ms);
		w->blocks++;
	}
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME void *reader_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.reads; i++) {
		w->blocked_ns += block_in_pipe_read(pipe_fds[0]);
		w->blocks++;
	}
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME void *writer_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.reads; i++) {
		w->blocked_ns += block_in_sleep(cfg.period_ms);
		w->blocks++;
		if (write(pipe_fds[1], "x", 1) != 1)
			die("write to pipe", errno);
	}
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME void *locker_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.locks; i++) {
		/* Lock only once the holder has it, so that every lock call blocks. */
		wait_for_holder();
		w->blocked_ns += block_in_mutex_lock(&held_mutex);
		w->blocks++;
		pthread_mutex_unlock(&held_mutex);
	}
	worker_end(w);
	return NULL;
}

static WORKLOAD_FRAME void *holder_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (unsigned long i = 0; i < cfg.locks; i++) {
		pthread_mutex_lock(&held_mutex);
		sem_post(&held_sem);
		w->blocked_ns += block_in_sleep(cfg.hold_ms);
		pthread_mutex_unlock(&held_mutex);
		/* Gives the woken locker time to take and drop the mutex. */
		w->blocked_ns += block_in_sleep(1);
		w->blocks += 2;
	}
	worker_end(w);
	return NULL;
}

/* No syscalls here: any off-CPU time of the spinner is preemption. */
static WORKLOAD_FRAME uint64_t spin_on_cpu(void)
{
	uint64_t spins = 0;

	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		spins++;
	return spins;
}

static WORKLOAD_FRAME void *spinner_thread(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	spin_on_cpu();
	worker_end(w);
	return NULL;
}

/* Blocks until one line (or at least its start) arrives on stdin. */
static WORKLOAD_FRAME void wait_for_go(void)
{
	int c;

	while ((c = getchar()) != '\n') {
		if (c == EOF) {
			fprintf(stderr, "offcpu_workload: stdin closed before the go line\n");
			exit(1);
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: offcpu_workload [options]\n"
		"Threads block in libc for known durations; prints the measured ground truth\n"
		"as one JSON line on stdout.\n"
		"  --sleeps N      ow-sleeper: number of nanosleep calls (default 50)\n"
		"  --sleep-ms MS   ow-sleeper: length of each sleep (default 20)\n"
		"  --reads N       ow-reader: number of 1-byte pipe reads (default 100)\n"
		"  --period-ms MS  ow-writer: sleep before each 1-byte write (default 10)\n"
		"  --locks N       ow-locker: number of contended lock calls (default 50)\n"
		"  --hold-ms MS    ow-holder: how long it holds the mutex each time (default 10)\n"
		"  --only ROLE     run only ROLE: sleeper, reader (with writer), locker (with\n"
		"                  holder) or spinner; repeatable (default: all)\n"
		"  --wait-go       print \"ready <pid>\" and wait for a line on stdin to start\n"
		"  -h, --help      show this help\n"
		"The spinner spins until the other threads finish; alone, it spins for\n"
		"sleeps x sleep-ms.\n");
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
		OPT_SLEEPS = 256,
		OPT_SLEEP_MS,
		OPT_READS,
		OPT_PERIOD_MS,
		OPT_LOCKS,
		OPT_HOLD_MS,
		OPT_ONLY,
		OPT_WAIT_GO
	};
	static const struct option options[] = {
		{ "sleeps", required_argument, NULL, OPT_SLEEPS },
		{ "sleep-ms", required_argument, NULL, OPT_SLEEP_MS },
		{ "reads", required_argument, NULL, OPT_READS },
		{ "period-ms", required_argument, NULL, OPT_PERIOD_MS },
		{ "locks", required_argument, NULL, OPT_LOCKS },
		{ "hold-ms", required_argument, NULL, OPT_HOLD_MS },
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "wait-go", no_argument, NULL, OPT_WAIT_GO },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		unsigned long *value = NULL, max = COUNT_MAX;
		const char *name = NULL;
		size_t i;

		switch (opt) {
		case OPT_SLEEPS:
			name = "sleeps";
			value = &cfg.sleeps;
			break;
		case OPT_SLEEP_MS:
			name = "sleep-ms";
			value = &cfg.sleep_ms;
			max = MS_MAX;
			break;
		case OPT_READS:
			name = "reads";
			value = &cfg.reads;
			break;
		case OPT_PERIOD_MS:
			name = "period-ms";
			value = &cfg.period_ms;
			max = MS_MAX;
			break;
		case OPT_LOCKS:
			name = "locks";
			value = &cfg.locks;
			break;
		case OPT_HOLD_MS:
			name = "hold-ms";
			value = &cfg.hold_ms;
			max = MS_MAX;
			break;
		case OPT_ONLY:
			for (i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++) {
				if (!strcmp(optarg, role_names[i].name))
					break;
			}
			if (i == sizeof(role_names) / sizeof(role_names[0])) {
				fprintf(stderr,
					"offcpu_workload: unknown role '%s' for --only "
					"(sleeper, reader, locker, spinner)\n",
					optarg);
				exit(2);
			}
			cfg.roles |= role_names[i].role;
			break;
		case OPT_WAIT_GO:
			cfg.wait_go = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'offcpu_workload --help'.\n");
			exit(2);
		}
		if (value && parse_ulong(optarg, 1, max, value) < 0) {
			fprintf(stderr,
				"offcpu_workload: --%s wants an integer from 1 to %lu, got '%s'\n",
				name, max, optarg);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "offcpu_workload: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
	if (!cfg.roles)
		cfg.roles = ROLE_SLEEPER | ROLE_READER | ROLE_LOCKER | ROLE_SPINNER;
}

static void print_result(void)
{
	const char *sep = "";

	printf("{\"pid\":%d,\"threads\":[", (int)getpid());
	for (size_t i = 0; i < N_WORKERS; i++) {
		const struct worker *w = &workers[i];

		if (!w->active)
			continue;
		printf("%s{\"name\":\"%s\",\"tid\":%d,\"function\":\"%s\",\"blocked_ns\":%" PRIu64
		       ",\"blocks\":%" PRIu64 ",\"wall_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
		       ",\"run_delay_ns\":%" PRIu64 "}",
		       sep, w->spec->name, (int)w->tid, w->spec->function, w->blocked_ns, w->blocks,
		       w->wall_ns, w->cpu_ns, w->run_delay_ns);
		sep = ",";
	}
	printf("]}\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned int n_active = 0;
	bool others = false;
	int r;

	parse_args(argc, argv);

	if (pipe(pipe_fds) < 0)
		die("pipe", errno);
	if (sem_init(&held_sem, 0, 0) < 0)
		die("sem_init", errno);
	for (size_t i = 0; i < N_WORKERS; i++) {
		workers[i].spec = &worker_specs[i];
		workers[i].active = cfg.roles & worker_specs[i].role;
		n_active += workers[i].active;
		if (workers[i].active && worker_specs[i].role != ROLE_SPINNER)
			others = true;
	}
	/* main takes part in both barriers */
	r = pthread_barrier_init(&ready_barrier, NULL, n_active + 1);
	if (!r)
		r = pthread_barrier_init(&start_barrier, NULL, n_active + 1);
	if (r)
		die("pthread_barrier_init", r);

	for (size_t i = 0; i < N_WORKERS; i++) {
		if (!workers[i].active)
			continue;
		r = pthread_create(&workers[i].thread, NULL, worker_specs[i].start, &workers[i]);
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

	/* The spinner stops when the blocking threads are done; alone, after a sleeper's time. */
	for (size_t i = 0; i < N_WORKERS; i++) {
		if (workers[i].active && worker_specs[i].role != ROLE_SPINNER)
			pthread_join(workers[i].thread, NULL);
	}
	if (!others) {
		struct timespec ts = ms_to_timespec(cfg.sleeps * cfg.sleep_ms);

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	atomic_store(&spin_stop, true);
	for (size_t i = 0; i < N_WORKERS; i++) {
		if (workers[i].active && worker_specs[i].role == ROLE_SPINNER)
			pthread_join(workers[i].thread, NULL);
	}

	print_result();
	return 0;
}
