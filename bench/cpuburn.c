/*
 * cpuburn: a fixed amount of CPU work, to measure what on-CPU sampling costs.
 *
 * One thread, pinned to one CPU, runs --iterations rounds of integer hashing
 * at the bottom of a --depth deep call chain (frame pointers kept), so each
 * sample walks a real stack. Prints one JSON line: {"elapsed_ns": ...}.
 * Compare the time with and without sampling, in the same run of the script.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) uint64_t burn(unsigned long iterations)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (unsigned long i = 0; i < iterations; i++)
		h = (h ^ i) * 0x100000001b3ULL;
	return h;
}

/* depth frames above burn(); noinline and a use of the result after the
 * call keep each frame on the stack. */
static __attribute__((noinline)) uint64_t descend(unsigned depth, unsigned long iterations)
{
	if (!depth)
		return burn(iterations);
	return descend(depth - 1, iterations) + depth;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "iterations", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 'd' },
		{ "cpu", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long iterations = 1000000000UL;
	unsigned depth = 20;
	int cpu = -1, opt;
	uint64_t start, h;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'n':
			iterations = strtoul(optarg, NULL, 10);
			break;
		case 'd':
			depth = (unsigned)strtoul(optarg, NULL, 10) % 100;
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: cpuburn [--iterations N] [--depth D] [--cpu C]\n");
			return 2;
		}
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			fprintf(stderr, "cpuburn: sched_setaffinity: %s\n", strerror(errno));
			return 1;
		}
	}
	start = now_ns();
	h = descend(depth, iterations);
	printf("{\"elapsed_ns\":%llu,\"hash\":%llu}\n", (unsigned long long)(now_ns() - start),
	       (unsigned long long)h);
	return 0;
}
