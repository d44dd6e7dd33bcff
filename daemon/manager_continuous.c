/* manager_continuous: the always-on captures, a slot per kind, whose rows
 * fill the windows (manager_window.c). */

#include <errno.h>
#include <grp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>

#include "access.h"
#include "capture.h"
#include "clock.h"
#include "collector.h"
#include "drain.h"
#include "hashtab.h"
#include "kind_status.h"
#include "store_jobs.h"
#include "log.h"
#include "proto.h"
#include "request.h"
#include "server.h"
#include "pt_capture.h"
#include "store.h"
#include "state_lock.h"
#include "store_queue.h"
#include "tracefs.h"
#include "symbolizer.h"
#include "unwinder.h"
#include "continuous.h"
#include "manager_internal.h"

/* The config's keys that decide what the always-on profile records. */
static struct continuous_settings continuous_settings_of(const struct config *cfg)
{
	return (struct continuous_settings){
		.states = cfg->continuous_states,
		.min_block_us = cfg->continuous_min_block_us,
		.split_runq = cfg->continuous_split_runq,
		.sampled = cfg->continuous_stacks == CONFIG_STACKS_SAMPLED,
		.sample_period_us = cfg->sample_period_us,
		.requests = cfg->continuous_requests,
	};
}

int manager_continuous_start(struct manager *m)
{
	struct continuous_settings set = continuous_settings_of(&m->cfg);
	const char *specs[OFFCPU_MAX_REQUESTS];
	char buf[sizeof(m->cfg.continuous_requests)], err[512];
	size_t n_specs = continuous_specs(&set, buf, sizeof(buf), specs);
	uint32_t progress = 0;
	unsigned slot;
	int r;

	r = manager_window_open(m, clock_realtime_ms());
	if (r < 0)
		return log_error("out of memory"), r;
	for (unsigned kind = 0; kind < OFFCPU_KIND_COUNT; kind++) {
		struct collector_filter filter;
		uint32_t groups, loaded = 0;
		unsigned failed = 0;

		if (!(m->cfg.continuous_kinds & (1u << kind)))
			continue;
		continuous_filter(&set, kind, n_specs > 0, &filter);
		/* Configured, so needed now: loaded before serving. */
		groups = collector_filter_groups(&filter);
		r = 0;
		for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT && r == 0; g++) {
			uint64_t ns = 0;

			if (!(groups & (1u << g)))
				continue;
			r = collector_group_load(m->collector, g, &ns);
			failed = g;
			loaded |= ns ? 1u << g : 0;
		}
		manager_log_groups_loaded(m, loaded);
		if (r < 0 && failed == COLLECTOR_GROUP_REQUESTS) {
			log_error("continuous_requests: %s",
				  manager_group_unavailable(m, failed, err, sizeof(err)));
			return r;
		}
		if (r < 0) {
			log_warning("continuous_kinds: %s left out: %s", proto_kind_name(kind),
				    manager_group_unavailable(m, failed, err, sizeof(err)));
			continue;
		}
		r = collector_slot_add(m->collector, &filter, &slot);
		if (r < 0) {
			log_error("cannot start continuous profiling: %s", strerror(-r));
			return r;
		}
		m->windows.continuous_slots |= 1u << slot;
		/* Their open blocks go into the windows they span, in parts
		 * (collector_pass_in_progress()): the kinds whose time has a
		 * value before the block ends. */
		if (kind == OFFCPU_KIND_OFFCPU || kind == OFFCPU_KIND_RUNQ)
			progress |= 1u << slot;
		if (!filter.requests)
			continue;
		r = request_probes_attach(&m->cap.requests[slot], m->collector, slot, specs,
					  n_specs, NULL, 0, err, sizeof(err));
		if (r < 0) {
			log_error("continuous_requests: %s", err);
			return r;
		}
	}
	collector_progress_slots_set(m->collector, progress);
	if (n_specs)
		log_info("continuous profile counts only inside requests: %s",
			 m->cfg.continuous_requests);
	m->windows.continuous = true;
	log_info("continuous profiling on: %u s windows into %s", m->cfg.window_seconds,
		 m->cfg.database);
	return 0;
}
