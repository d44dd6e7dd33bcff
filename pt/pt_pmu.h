/*
 * pt_pmu: whether this CPU offers Intel PT to perf_event_open, and with
 * which capabilities (the intel_pt PMU's type and caps/ files in sysfs).
 * The sysfs root is a parameter so tests can use a fixture. Called by
 * offcpud before it starts a PT session. Does not log.
 */
#ifndef PT_PMU_H
#define PT_PMU_H

#include <stddef.h>
#include <stdint.h>

struct pt_pmu {
	uint32_t type;		     /* perf_event_attr.type */
	uint32_t mtc, cyc, psb_cyc;  /* caps/: timing packets supported */
	uint32_t ip_filtering;	     /* caps/ip_filtering */
	uint32_t num_address_ranges; /* caps/num_address_ranges */
	uint32_t mtc_periods;	     /* caps/mtc_periods: bit n set: period 2^n supported */
	uint32_t cyc_thresholds;     /* caps/cycle_thresholds */
	uint32_t nom_freq;	     /* max_nonturbo_ratio, libipt's nom_freq; 0 unknown */
	/* What offcpud records with, built from the format/ files: pt,
	 * branch, tsc, noretcomp (every return gets a TIP: a snapshot starts
	 * mid-call, where a compressed return cannot be decoded) and, where
	 * caps/mtc says so, mtc with mtc_period PT_PMU_MTC_PERIOD. */
	uint64_t config;
	uint32_t mtc_freq; /* the MTC period in config (libipt's mtc_freq), 0 without MTC */
};

/* MTC every 2^3 crystal clock ticks, as perf's default. */
#define PT_PMU_MTC_PERIOD 3

/* Reads <sysfs>/bus/event_source/devices/intel_pt ("/sys" normally).
 * Returns 0 with *ret filled, or -ENODEV with the user-facing "Intel PT is
 * not available on this CPU (...)" in err when the PMU is absent (AMD and
 * most virtual machines), or -EINVAL if its type file is unreadable. */
int pt_pmu_probe(const char *sysfs, struct pt_pmu *ret, char *err, size_t err_size);

#endif
