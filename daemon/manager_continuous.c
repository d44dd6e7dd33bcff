/* manager_continuous: the always-on captures (a slot per kind) and the
 * windows their rows fill, handed to the store as each closes. */

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
#include "history.h"
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

/* ---- windows of the continuous profile ---- */

void window_written(void *arg, const struct store_window *w, int r, const char *msg,
		    const struct store_stats *stats)
{
	struct manager *m = arg;

	if (stats)
		m->windows.store_stats = *stats;
	m->windows.disk_full = r == -ENOSPC;
	if (r < 0) {
		/* Rate-limited by the window cadence itself. */
		m->windows.windows_failed++;
		snprintf(m->windows.store_error, sizeof(m->windows.store_error), "%s", msg);
		log_warning("window %lld..%lld not stored: %s%s", (long long)w->start_ms,
			    (long long)w->end_ms, msg,
			    m->windows.disk_full
				    ? " (disk full: stored windows are kept, new ones are "
				      "lost until there is space)"
				    : "");
		return;
	}
	if (m->windows.store_error[0])
		log_info("windows are stored again");
	m->windows.store_error[0] = '\0';
	m->windows.windows_written++;
}

void window_hist_add(struct manager *m, const struct collector_hist *h)
{
	struct offcpu_hist_key key = h->key;
	uint64_t *count;

	if (!m->windows.window_hists ||
	    !(m->windows.continuous_slots & (1u << (key.slot % OFFCPU_MAX_SLOTS))))
		return;
	key.slot = 0;
	count = hashtab_put(m->windows.window_hists, &key, NULL);
	if (count)
		*count += h->count;
}

/* Starts a window at now_ms, to close on the clock's window boundary. */
static int window_open(struct manager *m, int64_t now_ms)
{
	m->windows.window_start_ms = now_ms;
	m->windows.window_close_ms = continuous_window_close_ms(now_ms, m->cfg.window_seconds);
	if (hashtab_new(sizeof(struct offcpu_hist_key), sizeof(uint64_t),
			&m->windows.window_hists) < 0)
		return -ENOMEM;
	return profile_new(&m->windows.window);
}

/* Hands the current window to the store and opens the next one, which
 * starts where this one ends (now_ms: where the in-progress pass counted
 * open blocks up to): every drained row lands in exactly one. */
void window_rotate(struct manager *m, bool reopen, int64_t now_ms)
{
	struct store_window w = {
		.start_ms = m->windows.window_start_ms,
		.end_ms = now_ms > m->windows.window_start_ms ? now_ms
							      : m->windows.window_start_ms + 1,
	};

	if (!m->windows.window)
		return;
	m->windows.last_window_sampling = m->windows.window_sampling;
	memset(&m->windows.window_sampling, 0, sizeof(m->windows.window_sampling));
	if (history_write(m->store_queue, m->windows.window, m->windows.window_hists, &w,
			  window_written, m) < 0)
		log_warning("out of memory: a window was lost");
	m->windows.window = NULL;
	m->windows.window_hists = NULL;
	if (reopen && window_open(m, w.end_ms) < 0)
		log_error("out of memory: continuous profiling paused");
}

int continuous_start(struct manager *m)
{
	const char *specs[CONFIG_MAX_REQUESTS];
	char buf[sizeof(m->cfg.continuous_requests)], err[512];
	size_t n_specs = continuous_specs(&m->cfg, buf, sizeof(buf), specs);
	uint32_t progress = 0;
	unsigned slot;
	int r;

	r = window_open(m, clock_realtime_ms());
	if (r < 0)
		return log_error("out of memory"), r;
	for (unsigned kind = 0; kind < OFFCPU_KIND_COUNT; kind++) {
		struct collector_filter filter;
		uint32_t groups, loaded = 0;
		unsigned failed = 0;

		if (!(m->cfg.continuous_kinds & (1u << kind)))
			continue;
		continuous_filter(&m->cfg, kind, n_specs > 0, &filter);
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
		log_groups_loaded(m, loaded);
		if (r < 0 && failed == COLLECTOR_GROUP_REQUESTS) {
			log_error("continuous_requests: %s",
				  group_unavailable(m, failed, err, sizeof(err)));
			return r;
		}
		if (r < 0) {
			log_warning("continuous_kinds: %s left out: %s", proto_kind_name(kind),
				    group_unavailable(m, failed, err, sizeof(err)));
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
