/*
 * mixed_workload: a mix of ways to be off-CPU, for bench/sampling_accuracy.py.
 *
 * For --seconds N (default 10) these processes run, each with its own comm:
 *   mx-ping, mx-pong    a pipe ping-pong between two processes (short blocks,
 *                       microseconds: the hardest case for sampled stacks)
 *   mx-sleep            threads mx-sleep-100u, mx-sleep-1m and mx-sleep-10m
 *                       sleeping 100 us, 1 ms and 10 ms in a loop, and
 *                       mx-sleep-mix: in turn 10 nanosleeps of 20 us, a 1 ms
 *                       poll and 5 selects of 200 us (three leaf functions
 *                       of short and long blocks in one thread)
 *   mx-lock             threads mx-lock-0..3 contending for one pthread
 *                       mutex, each holding it spinning ~200 us
 *   mx-hog              a CPU hog: off-CPU only when preempted
 * and the parent (mx-main) waits for them. Prints one JSON line at the end:
 * {"seconds":N,"processes":[{"role":"ping","pid":P},...]}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SECONDS_MAX 3600
#define LOCKERS	    4

static uint64_t deadline_ns;

static void die(const char *what, int err)
{
	fprintf(stderr, "mixed_workload: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool running(void)
{
	return now_ns() < deadline_ns;
}

static void set_comm(const char *name)
{
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

/* ---- pipe ping-pong between two processes ------------------------------- */

static int pipe_read(int fd)
{
	char c;
	ssize_t n;

	do {
		n = read(fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

static int pipe_write(int fd)
{
	ssize_t n;

	do {
		n = write(fd, "x", 1);
	} while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

/* Returns when the deadline passes; closing its ends then ends the pong. */
__attribute__((noinline)) static void ping_loop(int out, int in)
{
	while (running())
		if (pipe_write(out) < 0 || pipe_read(in) < 0)
			die("ping", errno ? errno : EPIPE);
}

/* Until the ping closes its end. */
__attribute__((noinline)) static void pong_loop(int in, int out)
{
	while (pipe_read(in) == 0)
		if (pipe_write(out) < 0)
			break;
}

/* ---- sleepers ------------------------------------------------------------- */

struct sleeper {
	const char *comm;
	long ns;
};

static void *sleeper_thread(void *arg)
{
	const struct sleeper *s = arg;
	struct timespec ts = { .tv_sec = s->ns / 1000000000L, .tv_nsec = s->ns % 1000000000L };

	set_comm(s->comm);
	while (running())
		nanosleep(&ts, NULL);
	return NULL;
}

static void *mixed_sleeper_thread(void *arg)
{
	struct timespec ts = { .tv_nsec = 20000 };
	struct timeval tv;

	(void)arg;
	set_comm("mx-sleep-mix");
	while (running()) {
		for (int i = 0; i < 10; i++)
			nanosleep(&ts, NULL);
		poll(NULL, 0, 1);
		for (int i = 0; i < 5; i++) {
			tv = (struct timeval){ .tv_usec = 200 };
			select(0, NULL, NULL, NULL, &tv);
		}
	}
	return NULL;
}

static void sleepers_run(void)
{
	static const struct sleeper sleepers[] = {
		{ "mx-sleep-100u", 100000 },
		{ "mx-sleep-1m", 1000000 },
		{ "mx-sleep-10m", 10000000 },
	};
	pthread_t t[4];
	int r;

	for (int i = 0; i < 4; i++) {
		r = i < 3 ? pthread_create(&t[i], NULL, sleeper_thread, (void *)&sleepers[i])
			  : pthread_create(&t[i], NULL, mixed_sleeper_thread, NULL);
		if (r)
			die("pthread_create", r);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* ---- lock waiters ----------------------------------------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *locker_thread(void *arg)
{
	char comm[16];
	struct timespec pause = { .tv_nsec = 100000 };

	snprintf(comm, sizeof(comm), "mx-lock-%d", (int)(intptr_t)arg);
	set_comm(comm);
	while (running()) {
		pthread_mutex_lock(&lock);
		spin_ns(200000);
		pthread_mutex_unlock(&lock);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

static void lockers_run(void)
{
	pthread_t t[LOCKERS];
	int r;

	for (int i = 0; i < LOCKERS; i++) {
		r = pthread_create(&t[i], NULL, locker_thread, (void *)(intptr_t)i);
		if (r)
			die("pthread_create", r);
	}
	for (int i = 0; i < LOCKERS; i++)
		pthread_join(t[i], NULL);
}

/* ---- CPU hog ---------------------------------------------------------------- */

__attribute__((noinline)) static void hog_loop(void)
{
	volatile uint64_t x = 0;

	while (running())
		for (int i = 0; i < 100000; i++)
			x += i;
}

/* ---- main ------------------------------------------------------------------- */

enum role { PING, PONG, SLEEP, LOCK, HOG, ROLES };
static const char *const role_names[ROLES] = { "ping", "pong", "sleep", "lock", "hog" };
static const char *const role_comms[ROLES] = { "mx-ping", "mx-pong", "mx-sleep", "mx-lock",
					       "mx-hog" };

static void child_run(enum role role, pid_t parent, int to_pong[2], int to_ping[2])
{
	/* Killed with the parent (a bench interrupted), not left to the deadline. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		exit(1);
	set_comm(role_comms[role]);
	switch (role) {
	case PING:
		close(to_pong[0]);
		close(to_ping[1]);
		ping_loop(to_pong[1], to_ping[0]);
		break;
	case PONG:
		close(to_pong[1]);
		close(to_ping[0]);
		pong_loop(to_pong[0], to_ping[1]);
		break;
	case SLEEP:
		sleepers_run();
		break;
	case LOCK:
		lockers_run();
		break;
	case HOG:
		hog_loop();
		break;
	default:
		break;
	}
	exit(0);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "seconds", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int to_pong[2], to_ping[2], opt, status, failed = 0;
	long seconds = 10;
	pid_t pids[ROLES], parent = getpid();
	char *end;

	while ((opt = getopt_long(argc, argv, "d:h", options, NULL)) != -1) {
		switch (opt) {
		case 'd':
			errno = 0;
			seconds = strtol(optarg, &end, 10);
			if (errno || *end || !*optarg || seconds < 1 || seconds > SECONDS_MAX) {
				fprintf(stderr,
					"mixed_workload: --seconds wants 1 to %d, got '%s'\n",
					SECONDS_MAX, optarg);
				exit(2);
			}
			break;
		case 'h':
			printf("usage: mixed_workload [--seconds N]\n"
			       "Pipe ping-pong, sleepers, mutex waiters and a CPU hog, as\n"
			       "processes, for N seconds (default 10); prints their pids as "
			       "JSON.\n");
			exit(0);
		default:
			fprintf(stderr, "Try 'mixed_workload --help'.\n");
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mixed_workload: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}

	set_comm("mx-main");
	deadline_ns = now_ns() + (uint64_t)seconds * 1000000000ULL;
	if (pipe(to_pong) < 0 || pipe(to_ping) < 0)
		die("pipe", errno);
	for (int r = 0; r < ROLES; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			die("fork", errno);
		if (pids[r] == 0)
			child_run(r, parent, to_pong, to_ping);
	}
	close(to_pong[0]);
	close(to_pong[1]);
	close(to_ping[0]);
	close(to_ping[1]);
	for (int r = 0; r < ROLES; r++) {
		while (waitpid(pids[r], &status, 0) < 0)
			if (errno != EINTR)
				die("waitpid", errno);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "mixed_workload: %s failed (status 0x%x)\n", role_names[r],
				status);
			failed = 1;
		}
	}

	printf("{\"seconds\":%ld,\"main_pid\":%d,\"processes\":[", seconds, (int)getpid());
	for (int r = 0; r < ROLES; r++)
		printf("%s{\"role\":\"%s\",\"pid\":%d}", r ? "," : "", role_names[r], (int)pids[r]);
	printf("]}\n");
	return failed;
}
