/* pt_pmu: the intel_pt PMU's type and caps (see pt_pmu.h). */
#include "pt_pmu.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Reads a number from dir/name: hex (the caps files) or decimal. */
static int pt_pmu_read_u32(const char *dir, const char *name, bool hex, uint32_t *ret)
{
	char path[512];
	unsigned v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, hex ? "%x" : "%u", &v) == 1 ? 0 : -EINVAL;
	fclose(f);
	if (!n)
		*ret = v;
	return n;
}

/* Sets field name (format/NAME: "config:N" or "config:A-B") to value in
 * *config. A missing file or a value that does not fit leaves it unset. */
static void pt_pmu_set(const char *dir, const char *name, uint64_t value, uint64_t *config)
{
	char path[512];
	unsigned lo, hi;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/format/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fscanf(f, "config:%u-%u", &lo, &hi);
	fclose(f);
	if (n == 1)
		hi = lo;
	if (n < 1 || hi < lo || hi > 63 || (hi - lo < 63 && value >> (hi - lo + 1)))
		return;
	*config |= value << lo;
}

int pt_pmu_probe(const char *sysfs, struct pt_pmu *ret, char *err, size_t err_size)
{
	struct pt_pmu p = { 0 };
	char dir[256], caps[300];
	unsigned type;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/bus/event_source/devices/intel_pt", sysfs);
	if (access(dir, F_OK) < 0) {
		snprintf(err, err_size,
			 "Intel PT is not available on this CPU (no intel_pt PMU in "
			 "%s/bus/event_source/devices: not an Intel CPU with Processor Trace, "
			 "or a virtual machine that does not pass it through)",
			 sysfs);
		return -ENODEV;
	}
	snprintf(caps, sizeof(caps), "%s/type", dir);
	f = fopen(caps, "re");
	if (!f || fscanf(f, "%u", &type) != 1) {
		if (f)
			fclose(f);
		snprintf(err, err_size, "cannot read the intel_pt PMU's type from %s", caps);
		return -EINVAL;
	}
	fclose(f);
	p.type = type;
	/* Missing caps mean "not supported": older kernels lack some files. */
	snprintf(caps, sizeof(caps), "%s/caps", dir);
	pt_pmu_read_u32(caps, "mtc", true, &p.mtc);
	pt_pmu_read_u32(caps, "psb_cyc", true, &p.psb_cyc);
	pt_pmu_read_u32(caps, "ip_filtering", true, &p.ip_filtering);
	pt_pmu_read_u32(caps, "num_address_ranges", true, &p.num_address_ranges);
	pt_pmu_read_u32(caps, "mtc_periods", true, &p.mtc_periods);
	pt_pmu_read_u32(caps, "cycle_thresholds", true, &p.cyc_thresholds);
	p.cyc = p.psb_cyc;
	pt_pmu_read_u32(dir, "max_nonturbo_ratio", false, &p.nom_freq);
	pt_pmu_set(dir, "pt", 1, &p.config);
	pt_pmu_set(dir, "branch", 1, &p.config);
	pt_pmu_set(dir, "tsc", 1, &p.config);
	pt_pmu_set(dir, "noretcomp", 1, &p.config);
	if (p.mtc && (p.mtc_periods & (1u << PT_PMU_MTC_PERIOD))) {
		pt_pmu_set(dir, "mtc", 1, &p.config);
		pt_pmu_set(dir, "mtc_period", PT_PMU_MTC_PERIOD, &p.config);
		p.mtc_freq = PT_PMU_MTC_PERIOD;
	}
	*ret = p;
	return 0;
}
