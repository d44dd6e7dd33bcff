/*
 * pingpong: a context-switch-heavy benchmark, to measure what offcpud costs per switch.
 *
 * Two threads, both pinned to one CPU, pass one byte back and forth over two pipes. Each
 * round trip is two blocking reads, so about two context switches; compare ns_per_round_trip
 * with and without the profiler attached. Prints one JSON line on stdout, with the
 * workload's own context switches (getrusage).
 *
 * With --processes the peer is a forked child instead of a thread (same pipes, same CPU):
 * every switch then changes the address space, as between a client and a server.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUND_TRIPS_MAX 1000000000UL

struct pingpong {
	int to_peer[2];	  /* main writes, peer reads */
	int from_peer[2]; /* peer writes, main reads */
	unsigned long round_trips;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "pingpong: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void read_byte(int fd)
{
	char c;
	ssize_t n;

	do {
		n = read(fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		die("read", errno);
	if (n == 0)
		die("read", EPIPE);
}

static void write_byte(int fd)
{
	ssize_t n;

	do {
		n = write(fd, "x", 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1)
		die("write", errno);
}

/* One round trip, seen from the peer: a "request" for overhead.py's request
 * mode (offcpuctl capture --request pingpong_serve@...). */
__attribute__((noinline)) void pingpong_serve(const struct pingpong *pp)
{
	read_byte(pp->to_peer[0]);
	write_byte(pp->from_peer[1]);
}

static void *peer_thread(void *arg)
{
	const struct pingpong *pp = arg;

	for (unsigned long i = 0; i < pp->round_trips; i++)
		pingpong_serve(pp);
	return NULL;
}

/* Context switches of both ends (all threads of this process, and the peer
 * process once reaped): the workload's own, whatever else the host runs. */
static unsigned long long own_switches(void)
{
	struct rusage self, children;

	if (getrusage(RUSAGE_SELF, &self) < 0 || getrusage(RUSAGE_CHILDREN, &children) < 0)
		die("getrusage", errno);
	return (unsigned long long)(self.ru_nvcsw + self.ru_nivcsw + children.ru_nvcsw +
				    children.ru_nivcsw);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pingpong [--round-trips N] [--cpu C] [--processes]\n"
		   "Two threads pinned to CPU C (default 0) pass one byte over two pipes\n"
		   "N times (default 200000); prints the time per round trip as JSON.\n"
		   "--processes: two processes (the peer is forked) instead of two threads.\n");
}

/* --processes: the peer is a child process, pinned like its parent (the mask is
 * inherited across fork). Returns its pid. */
static pid_t peer_process_start(const struct pingpong *pp, unsigned long cpu)
{
	cpu_set_t set;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		for (unsigned long i = 0; i < pp->round_trips; i++)
			pingpong_serve(pp);
		_exit(0);
	}
	if (sched_getaffinity(pid, sizeof(set), &set) < 0)
		die("sched_getaffinity", errno);
	if (CPU_COUNT(&set) != 1 || !CPU_ISSET(cpu, &set)) {
		fprintf(stderr, "pingpong: peer process is not pinned to CPU %lu\n", cpu);
		kill(pid, SIGKILL);
		exit(1);
	}
	return pid;
}

static void peer_process_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid", errno);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "pingpong: peer process failed (status 0x%x)\n", status);
		exit(1);
	}
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

int main(int argc, char **argv)
{
	enum { OPT_ROUND_TRIPS = 256, OPT_CPU, OPT_PROCESSES };
	static const struct option options[] = {
		{ "round-trips", required_argument, NULL, OPT_ROUND_TRIPS },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "processes", no_argument, NULL, OPT_PROCESSES },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct pingpong pp = { .round_trips = 200000 };
	unsigned long cpu = 0;
	bool processes = false;
	pid_t peer_pid = 0;
	pthread_t peer;
	cpu_set_t set;
	uint64_t t0, elapsed_ns;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case OPT_ROUND_TRIPS:
			if (parse_ulong(optarg, 1, ROUND_TRIPS_MAX, &pp.round_trips) < 0) {
				fprintf(stderr,
					"pingpong: --round-trips wants an integer from 1 to %lu, "
					"got '%s'\n",
					ROUND_TRIPS_MAX, optarg);
				exit(2);
			}
			break;
		case OPT_CPU:
			if (parse_ulong(optarg, 0, CPU_SETSIZE - 1, &cpu) < 0) {
				fprintf(stderr,
					"pingpong: --cpu wants an integer from 0 to %d, got '%s'\n",
					CPU_SETSIZE - 1, optarg);
				exit(2);
			}
			break;
		case OPT_PROCESSES:
			processes = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'pingpong --help'.\n");
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pingpong: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}

	/* Pin main before creating the peer: the peer inherits the mask. */
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (r) {
		fprintf(stderr, "pingpong: cannot pin to CPU %lu: %s%s\n", cpu, strerror(r),
			r == EINVAL ? " (offline, or not in this process's allowed CPUs)" : "");
		exit(1);
	}

	if (pipe(pp.to_peer) < 0 || pipe(pp.from_peer) < 0)
		die("pipe", errno);
	if (processes) {
		peer_pid = peer_process_start(&pp, cpu);
	} else {
		r = pthread_create(&peer, NULL, peer_thread, &pp);
		if (r)
			die("pthread_create", r);
		r = pthread_getaffinity_np(peer, sizeof(set), &set);
		if (r)
			die("pthread_getaffinity_np", r);
		if (CPU_COUNT(&set) != 1 || !CPU_ISSET(cpu, &set)) {
			fprintf(stderr, "pingpong: peer thread is not pinned to CPU %lu\n", cpu);
			exit(1);
		}
	}

	t0 = now_ns();
	for (unsigned long i = 0; i < pp.round_trips; i++) {
		write_byte(pp.to_peer[1]);
		read_byte(pp.from_peer[0]);
	}
	elapsed_ns = now_ns() - t0;
	if (processes)
		peer_process_wait(peer_pid);
	else
		pthread_join(peer, NULL);

	printf("{\"round_trips\":%lu,\"peer\":\"%s\",\"elapsed_ns\":%llu,"
	       "\"ns_per_round_trip\":%llu,\"switches\":%llu}\n",
	       pp.round_trips, processes ? "process" : "thread", (unsigned long long)elapsed_ns,
	       (unsigned long long)(elapsed_ns / pp.round_trips),
	       (unsigned long long)own_switches());
	return 0;
}
