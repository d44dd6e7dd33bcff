/* request: see request.h. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's own "not supported" (include/linux/errno.h), which uprobe
 * registration returns for an instruction it cannot probe (int3, for
 * one); libc's strerror does not know it. */
#define REQUEST_ENOTSUPP 524

#define SPEC_PART_MAX 1024

/* Finds spec's functions for one process (pid > 0) or binary (pid 0) and
 * probes them. Keeps the first resolution in s. */
static int attach_one(struct request_spec *s, unsigned index, struct collector *c, unsigned slot,
		      const char *sym, const char *bin, int pid, char *err, size_t err_size)
{
	struct elf_func *funcs;
	char *path;
	int n, r = 0;

	n = elf_funcs_resolve(pid, bin, sym, &path, &funcs, err, err_size);
	if (n < 0)
		return n;
	for (int i = 0; i < n && r == 0; i++) {
		r = collector_request_attach(c, slot, index, pid, path, funcs[i].offset);
		if (r == -E2BIG)
			snprintf(err, err_size, "more than %d request probes in one capture",
				 COLLECTOR_MAX_REQUEST_PROBES / 2);
		else if (r == -EOPNOTSUPP)
			snprintf(err, err_size,
				 "--request needs the tp_btf tracepoint (task storage); this "
				 "daemon runs on raw_tp");
		else if (r == -REQUEST_ENOTSUPP)
			snprintf(err, err_size,
				 "cannot attach a uprobe to %s in %s: the kernel cannot probe its "
				 "first instruction (ENOTSUPP)",
				 funcs[i].name, elf_funcs_display_path(pid, path));
		else if (r < 0)
			snprintf(err, err_size, "cannot attach a uprobe to %s in %s: %s",
				 funcs[i].name, elf_funcs_display_path(pid, path), strerror(-r));
	}
	if (!s->funcs) {
		s->binary = strdup(elf_funcs_display_path(pid, path));
		s->funcs = funcs;
		s->n_funcs = n;
		funcs = NULL;
		if (!s->binary && r == 0) {
			snprintf(err, err_size, "out of memory");
			r = -ENOMEM;
		}
	}
	elf_funcs_free(funcs, funcs ? n : 0);
	free(path);
	return r;
}

int request_probes_attach(struct request_probes *rp, struct collector *c, unsigned slot,
			  const char *const *specs, size_t n_specs, const uint32_t *pids,
			  size_t n_pids, char *err, size_t err_size)
{
	char sym[SPEC_PART_MAX], bin[SPEC_PART_MAX];
	int r;

	memset(rp, 0, sizeof(*rp));
	if (n_specs > OFFCPU_MAX_REQUESTS) {
		snprintf(err, err_size, "at most %d request symbols", OFFCPU_MAX_REQUESTS);
		return -E2BIG;
	}
	for (size_t i = 0; i < n_specs; i++) {
		struct request_spec *s = &rp->specs[i];

		s->spec = strdup(specs[i]);
		if (!s->spec) {
			snprintf(err, err_size, "out of memory");
			return -ENOMEM;
		}
		rp->n_specs++;
		if (elf_funcs_split_spec(specs[i], sym, sizeof(sym), bin, sizeof(bin)) < 0) {
			snprintf(err, err_size, "bad request '%s': expected SYMBOL[@BINARY]",
				 specs[i]);
			return -EINVAL;
		}
		if (n_pids == 0) {
			if (!*bin) {
				snprintf(err, err_size,
					 "request '%s': name the binary (SYMBOL@BINARY) or give "
					 "--pid",
					 specs[i]);
				return -EINVAL;
			}
			r = attach_one(s, i, c, slot, sym, bin, 0, err, err_size);
			if (r < 0)
				return r;
		}
		for (size_t p = 0; p < n_pids; p++) {
			r = attach_one(s, i, c, slot, sym, bin, (int)pids[p], err, err_size);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

void request_probes_free(struct request_probes *rp)
{
	for (size_t i = 0; i < rp->n_specs; i++) {
		free(rp->specs[i].spec);
		free(rp->specs[i].binary);
		elf_funcs_free(rp->specs[i].funcs, rp->specs[i].n_funcs);
	}
	memset(rp, 0, sizeof(*rp));
}

size_t request_probes_stats(const struct request_probes *rp, struct collector *c, unsigned slot,
			    struct proto_request_stats ret[OFFCPU_MAX_REQUESTS],
			    struct proto_request_function *funcs, size_t n_funcs_max)
{
	struct collector_request_stats stats[OFFCPU_MAX_REQUESTS];
	size_t used = 0;

	if (collector_request_stats(c, slot, stats) < 0)
		memset(stats, 0, sizeof(stats));
	for (size_t i = 0; i < rp->n_specs; i++) {
		const struct request_spec *s = &rp->specs[i];
		struct proto_request_stats *o = &ret[i];

		memset(o, 0, sizeof(*o));
		o->symbol = s->spec;
		o->functions = funcs + used;
		for (size_t f = 0; f < s->n_funcs && used < n_funcs_max; f++, used++) {
			funcs[used].name = s->funcs[f].name;
			funcs[used].binary = s->binary;
			o->n_functions++;
		}
		o->calls = stats[i].calls;
		/* Silence that looks like an idle service: say it. */
		if (!o->calls)
			o->warning = "its probes never fired: no call was seen while counting";
		for (unsigned b = 0; b < OFFCPU_HIST_BUCKETS; b++) {
			o->wall_hist[b] = stats[i].count[OFFCPU_REQUEST_WALL][b];
			o->offcpu_hist[b] = stats[i].count[OFFCPU_REQUEST_OFFCPU][b];
			o->count += stats[i].count[OFFCPU_REQUEST_WALL][b];
			o->wall_ns += stats[i].sum_ns[OFFCPU_REQUEST_WALL][b];
			o->offcpu_ns += stats[i].sum_ns[OFFCPU_REQUEST_OFFCPU][b];
		}
		if (o->calls && !o->count)
			o->warning = "no call returned while counting: its calls outlast the "
				     "capture, or its return probe never fired";
	}
	return rp->n_specs;
}
