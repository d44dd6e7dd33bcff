/*
 * symbolize_bench: what naming a window with many unique frames costs.
 * Takes ADDRS addresses spread evenly over the executable mapping of libc
 * in this very process (a window's worth of distinct user frames, and
 * more) and names each with the daemon's symbolizer, as a drain does:
 *   elf         ELF symbols only (debug_root without libc's debug file): what
 *               the symbolizer did before DWARF
 *   dwarf_cold  with libc's separate debug file (libc6-dbg): functions,
 *               inline chains and lines, the first drain that sees them
 *   dwarf_warm  the same addresses at the next drain: from the per-file cache
 * Prints one JSON line: ns per address for each, and how many addresses got
 * a source line or inline frames. Usage: symbolize_bench [ADDRS]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

/* The executable mapping of libc in this process. */
static int libc_text(uint64_t *start, uint64_t *end)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int r = -1;

	while (f && fgets(line, sizeof(line), f)) {
		char perms[5];

		if (!strstr(line, "/libc.so.6"))
			continue;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", start, end, perms) == 3 &&
		    perms[2] == 'x') {
			r = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return r;
}

struct pass {
	double ns_per_addr;
	unsigned with_lines, with_inlines;
};

static struct pass run(struct symbolizer *s, const uint64_t *addrs, size_t n)
{
	struct pass p = { 0 };
	char buf[4096];
	uint64_t t0;

	symbolizer_refresh_processes(s); /* as every drain does */
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		symbolizer_user(s, getpid(), addrs[i], buf, sizeof(buf));
		p.with_lines += strstr(buf, ".c:") || strstr(buf, ".h:") || strstr(buf, ".S:");
		p.with_inlines += strstr(buf, " [inlined]") != NULL;
	}
	p.ns_per_addr = (double)(now_ns() - t0) / n;
	return p;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
	uint64_t start, end, *addrs;
	struct symbolizer *elf_only, *dwarf;
	struct pass e, cold, warm;

	if (!n || libc_text(&start, &end) < 0) {
		fprintf(stderr, "symbolize_bench: no libc text mapping, or ADDRS 0\n");
		return 1;
	}
	addrs = calloc(n, sizeof(*addrs));
	if (!addrs)
		return 1;
	for (size_t i = 0; i < n; i++)
		addrs[i] = start + (end - start) * i / n;
	if (symbolizer_new("/proc", "/nonexistent", &elf_only) < 0 ||
	    symbolizer_new("/proc", "/usr/lib/debug", &dwarf) < 0)
		return 1;
	e = run(elf_only, addrs, n);
	cold = run(dwarf, addrs, n);
	warm = run(dwarf, addrs, n);
	printf("{\"addresses\":%zu,\"elf_ns_per_addr\":%.0f,\"dwarf_cold_ns_per_addr\":%.0f,"
	       "\"dwarf_warm_ns_per_addr\":%.0f,\"with_lines\":%u,\"with_inlines\":%u}\n",
	       n, e.ns_per_addr, cold.ns_per_addr, warm.ns_per_addr, cold.with_lines,
	       cold.with_inlines);
	symbolizer_free(elf_only);
	symbolizer_free(dwarf);
	free(addrs);
	return 0;
}
