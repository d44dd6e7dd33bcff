/*
 * short_workload: a short-lived process built as distributions build code
 * (-O2 -fomit-frame-pointer), for the names-after-exit test
 * (test_short_lived.py, issue 16). Its threads nap --naps times for
 * --nap-us each, every nap in nap_once() called from nap_worker(), then
 * the process prints its ground truth and exits at once: whatever names
 * its stacks runs after it is gone.
 *
 * With --wait-go it prints "ready <pid>" and waits for a line on stdin
 * (in wait_for_go(), a block of its own, not a nap) before it starts.
 * Output, one JSON line: {"pid": P, "threads": [{"name", "tid", "naps",
 * "blocked_ns"}]}; blocked_ns is the naps' wall time.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS_MAX 16

static unsigned threads = 2, naps = 100, nap_us = 1000;
static volatile unsigned sink; /* keeps the calls from becoming tail calls */

struct worker {
	pthread_t thread;
	char name[32]; /* at most "sw-napper15": fits a thread name */
	pid_t tid;
	unsigned naps;
	unsigned long long blocked_ns;
};

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) static void nap_once(void)
{
	struct timespec ts = { .tv_sec = nap_us / 1000000, .tv_nsec = (nap_us % 1000000) * 1000L };

	nanosleep(&ts, NULL);
	sink++;
}

__attribute__((noinline)) static void *nap_worker(void *arg)
{
	struct worker *w = arg;
	unsigned long long start;

	w->tid = gettid();
	pthread_setname_np(pthread_self(), w->name);
	start = now_ns();
	for (unsigned i = 0; i < naps; i++) {
		nap_once();
		w->naps++;
	}
	w->blocked_ns = now_ns() - start;
	sink++;
	return NULL;
}

__attribute__((noinline)) static void wait_for_go(void)
{
	char line[16];

	if (!fgets(line, sizeof(line), stdin))
		exit(1);
	sink++;
}

static unsigned parse_uint(const char *opt, const char *s, unsigned max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v < 1 || v > max) {
		fprintf(stderr, "short_workload: --%s wants an integer from 1 to %u, got '%s'\n",
			opt, max, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "naps", required_argument, NULL, 'n' },
		{ "nap-us", required_argument, NULL, 'u' },
		{ "wait-go", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct worker workers[THREADS_MAX] = { 0 };
	int opt, wait_go = 0;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 't':
			threads = parse_uint("threads", optarg, THREADS_MAX);
			break;
		case 'n':
			naps = parse_uint("naps", optarg, 1000000);
			break;
		case 'u':
			nap_us = parse_uint("nap-us", optarg, 10000000);
			break;
		case 'w':
			wait_go = 1;
			break;
		case 'h':
			printf("usage: short_workload [--threads N] [--naps N] [--nap-us US] "
			       "[--wait-go]\n");
			return 0;
		default:
			return 2;
		}
	}
	if (wait_go) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		wait_for_go();
	}
	for (unsigned i = 0; i < threads; i++) {
		snprintf(workers[i].name, sizeof(workers[i].name), "sw-napper%u", i);
		if (pthread_create(&workers[i].thread, NULL, nap_worker, &workers[i])) {
			perror("pthread_create");
			return 1;
		}
	}
	for (unsigned i = 0; i < threads; i++)
		pthread_join(workers[i].thread, NULL);
	printf("{\"pid\": %d, \"threads\": [", getpid());
	for (unsigned i = 0; i < threads; i++)
		printf("%s{\"name\": \"%s\", \"tid\": %d, \"naps\": %u, \"blocked_ns\": %llu}",
		       i ? ", " : "", workers[i].name, workers[i].tid, workers[i].naps,
		       workers[i].blocked_ns);
	printf("]}\n");
	fflush(stdout);
	return 0;
}
