/*
 * inline_workload: blocks inside functions inlined into one another, for
 * the symbolizer's inline frames and source lines. Built with -O2 -g (and
 * frame pointers, which the user stack walk needs). One thread calls
 * sleep_outer() (not inlined), which calls sleep_middle() (always inlined),
 * which calls sleep_inner() (always inlined), which makes the nanosleep
 * system call itself, so the thread's user PC at switch-out lies in that
 * chain. Lines marked "LINE:name" are where each frame stands; the test
 * finds them in this file.
 *
 * Usage: inline_workload [--sleeps N] [--sleep-ms MS]
 * Prints "ready PID", waits for a line on stdin, sleeps, prints
 * {"blocked_ns":...,"blocks":N}, and exits when stdin closes.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long errors;

static inline __attribute__((always_inline)) long sleep_inner(const struct timespec *ts)
{
	long ret;

	/* The nop keeps the return address (the instruction after syscall,
	 * the PC the kernel saw) on this line, inside this function. */
	__asm__ volatile("syscall\n\tnop" /* LINE:sleep_inner */
			 : "=a"(ret)
			 : "0"((long)SYS_nanosleep), "D"(ts), "S"(0L)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline __attribute__((always_inline)) void sleep_middle(const struct timespec *ts)
{
	if (sleep_inner(ts) < 0) /* LINE:sleep_middle */
		errors++;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

__attribute__((noinline)) static uint64_t sleep_outer(int sleeps, long sleep_ms)
{
	struct timespec ts = { .tv_sec = sleep_ms / 1000, .tv_nsec = sleep_ms % 1000 * 1000000 };
	uint64_t blocked = 0;

	for (int i = 0; i < sleeps; i++) {
		uint64_t t0 = now_ns();

		sleep_middle(&ts); /* LINE:sleep_outer */
		blocked += now_ns() - t0;
	}
	return blocked;
}

int main(int argc, char **argv)
{
	int sleeps = 40;
	long sleep_ms = 20;
	char line[16];
	uint64_t blocked;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sleeps"))
			sleeps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--sleep-ms"))
			sleep_ms = atol(argv[i + 1]);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	blocked = sleep_outer(sleeps, sleep_ms);
	printf("{\"blocked_ns\":%llu,\"blocks\":%d,\"errors\":%ld}\n", (unsigned long long)blocked,
	       sleeps, errors);
	fflush(stdout);
	/* Alive until stdin closes, as a profiled service is: its stacks are
	 * named at the next drain, while it exists. */
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
