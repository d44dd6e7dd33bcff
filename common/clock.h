/*
 * clock: the daemon's two time scales, in one place. CLOCK_MONOTONIC in
 * nanoseconds is the clock of bpf_ktime_get_ns(), used for block times and
 * durations; CLOCK_REALTIME in milliseconds names windows in the store.
 */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline int64_t clock_realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
