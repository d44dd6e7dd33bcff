/*
 * manager_window: a window's life. The always-on profile's window opens on
 * the clock's boundary, takes the drained rows and histograms of the
 * continuous slots, closes at the drain that passes its boundary (where the
 * in-progress pass counted the open blocks up to) and goes to the store as
 * a job (store_jobs_write()); its write's outcome is kept for status.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hashtab.h"
#include "log.h"
#include "store_jobs.h"
#include "manager_internal.h"
#include "pusher.h"

void manager_window_written(void *arg, const struct store_window *w, int r, const char *msg,
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
	if (!w->capture_id)
		pusher_notify(m->pusher, w->start_ms, w->end_ms);
}

void manager_window_hist_add(struct manager *m, const struct collector_hist *h)
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

int64_t manager_window_close_ms(int64_t now_ms, uint32_t window_seconds)
{
	int64_t len_ms = (int64_t)window_seconds * 1000;

	return (now_ms / len_ms + 1) * len_ms;
}

int manager_window_open(struct manager *m, int64_t now_ms)
{
	m->windows.window_start_ms = now_ms;
	m->windows.window_close_ms = manager_window_close_ms(now_ms, m->cfg.window_seconds);
	if (hashtab_new(sizeof(struct offcpu_hist_key), sizeof(uint64_t),
			&m->windows.window_hists) < 0)
		return -ENOMEM;
	return profile_new(&m->windows.window);
}

void manager_window_rotate(struct manager *m, bool reopen, int64_t now_ms)
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
	if (store_jobs_write(m->store_queue, m->windows.window, m->windows.window_hists, &w,
			     manager_window_written, m) < 0)
		log_warning("out of memory: a window was lost");
	m->windows.window = NULL;
	m->windows.window_hists = NULL;
	if (reopen && manager_window_open(m, w.end_ms) < 0)
		log_error("out of memory: continuous profiling paused");
}

bool manager_window_due(const struct manager *m, int64_t now_ms)
{
	return m->windows.window && now_ms >= m->windows.window_close_ms;
}

void manager_window_export_setup(const struct manager *m, struct store_jobs_export_setup *ret)
{
	uint32_t kinds = m->cfg.continuous_kinds;

	/* The offcpu slot keeps run-queue wait as rows of their own. */
	if ((kinds & (1u << PROTO_KIND_OFFCPU)) && m->cfg.continuous_split_runq)
		kinds |= 1u << PROTO_KIND_RUNQ;
	*ret = (struct store_jobs_export_setup){
		.continuous = m->cfg.continuous,
		.recorded_kinds = kinds,
		.config_path = m->cfg.path[0] ? m->cfg.path : OFFCPU_DEFAULT_CONFIG,
		.proc_root = PROC_ROOT,
	};
}

void manager_window_free(struct manager *m)
{
	profile_free(m->windows.window);
	hashtab_free(m->windows.window_hists);
	m->windows.window = NULL;
	m->windows.window_hists = NULL;
}
