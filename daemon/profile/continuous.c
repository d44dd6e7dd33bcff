/* continuous: see continuous.h. */
#include "continuous.h"

#include <stdio.h>
#include <string.h>

size_t continuous_specs(const struct continuous_settings *set, char *buf, size_t size,
			const char *specs[OFFCPU_MAX_REQUESTS])
{
	size_t n = 0;

	snprintf(buf, size, "%s", set->requests);
	for (char *save, *w = strtok_r(buf, " \t", &save); w && n < OFFCPU_MAX_REQUESTS;
	     w = strtok_r(NULL, " \t", &save))
		specs[n++] = w;
	return n;
}

/* The continuous slot of kind samples its stacks (bpf/sampling.h) if so
 * configured and it is a kind whose rows are blocks by the blocked thread's
 * stacks. */
static uint64_t continuous_sample_period_ns(const struct continuous_settings *set, unsigned kind)
{
	if (!set->sampled || (kind != OFFCPU_KIND_OFFCPU && kind != OFFCPU_KIND_RUNQ))
		return 0;
	return (uint64_t)set->sample_period_us * 1000;
}

void continuous_filter(const struct continuous_settings *set, unsigned kind, bool requests,
		       struct collector_filter *ret)
{
	bool io = kind == OFFCPU_KIND_BIO || kind == OFFCPU_KIND_FILEIO;

	*ret = (struct collector_filter){
		.state_mask = set->states,
		.min_block_ns = (uint64_t)set->min_block_us * 1000,
		.user_stacks = kind != OFFCPU_KIND_WAKEUP,
		.kernel_stacks = kind != OFFCPU_KIND_WAKEUP,
		.kind = kind,
		.chain_depth = 3,
		.split_runq = kind == OFFCPU_KIND_OFFCPU && set->split_runq,
		.sample_period_ns = continuous_sample_period_ns(set, kind),
		.hist = kind == OFFCPU_KIND_OFFCPU,
		/* On-CPU samples are not request-synchronous: all of them; and
		 * requests gate off-CPU blocks, not I/O. */
		.requests = requests && kind != OFFCPU_KIND_ONCPU && !io,
	};
}
