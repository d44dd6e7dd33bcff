/* manager_drain: drains of the kernel maps, one at a time on a worker
 * thread, every drain interval and whenever a capture ends; their rows routed
 * to the captures and the continuous window. */

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
#include "manager_internal.h"

/* ---- drains ---- */

static void drain_work_cb(uv_work_t *req)
{
	struct manager *m = req->data;

	m->drain_error = drain_run(m->collector, m->symbolizer, m->drain_tgids, m->n_drain_tgids,
				   &m->drain_result);
}

/* What status reports about offcpud's own cost, sampled at each drain. */
static void self_accounting_sample(struct manager *m, const struct drain_result *r)
{
	struct rusage ru;

	memcpy(m->programs_prev, m->programs, sizeof(m->programs));
	m->n_programs = collector_programs(m->collector, m->programs, MAX_PROGRAMS);
	m->cpu_prev_ns = m->cpu_ns;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		m->cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
			    (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
	m->drained_rows = r->n_rows;
	m->drained_stacks = r->n_stacks;
	m->drained_chains = r->n_chains;
	m->drained_hists = r->n_hists;
}

static void drain_after_cb(uv_work_t *req, int status)
{
	struct manager *m = req->data;
	struct drain_result *r = &m->drain_result;
	uint64_t completed = m->drains_started;

	m->draining = false;
	if (status < 0 || m->drain_error < 0)
		log_warning("draining the kernel maps failed: %s",
			    strerror(-(status < 0 ? status : m->drain_error)));

	memcpy(m->counters_prev, m->counters, sizeof(m->counters));
	m->counters_prev_ns = m->counters_ns;
	memcpy(m->counters, r->counters, sizeof(m->counters));
	m->counters_ns = clock_monotonic_ns();
	self_accounting_sample(m, r);

	for (size_t i = 0; i < r->n_rows; i++) {
		unsigned slot = r->rows[i].key.slot % OFFCPU_MAX_SLOTS;
		struct capture *c = m->captures[slot];
		/* Blocks that ended while the probes went in are not the capture's. */
		struct profile *p = c ? (c->phase == CAPTURE_ATTACHING ? NULL : c->profile)
				    : (m->continuous_slots & (1u << slot)) ? m->window
									   : NULL;

		if (p && profile_add(p, &r->rows[i]) < 0)
			log_warning("out of memory: a row was lost");
	}
	for (size_t i = 0; i < r->n_hists; i++)
		window_hist_add(m, &r->hists[i]);
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		if (m->window && (m->continuous_slots & (1u << i)))
			sampling_summary_add(&m->window_sampling, &r->sampling[i]);
		else if (m->captures[i])
			sampling_summary_add(&m->captures[i]->sampling, &r->sampling[i]);
	}
	drain_result_release(r);
	if (m->window && clock_realtime_ms() >= m->window_close_ms)
		window_rotate(m, true);

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct capture *c = m->captures[i];

		if (c && c->phase == CAPTURE_ENDING && c->final_drain <= completed)
			capture_finish(m, c);
	}
	if (m->stopping) {
		if (m->drain_again) { /* this drain began before the slot went off */
			m->drain_again = false;
			drain_start(m);
			return;
		}
		/* The final drain is in: store the open window, then stop. */
		window_rotate(m, false);
		shutdown_continue(m);
		return;
	}
	notify_status(m);
	if (m->drain_again) {
		m->drain_again = false;
		drain_start(m);
	}
}

void drain_start(struct manager *m)
{
	if (m->draining) {
		m->drain_again = true;
		return;
	}
	m->draining = true;
	m->drains_started++;
	m->n_drain_tgids = 0;
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct capture *c = m->captures[i];

		if (!c || c->phase != CAPTURE_RUNNING)
			continue;
		memcpy(m->drain_tgids + m->n_drain_tgids, c->req.pids,
		       c->req.n_pids * sizeof(*c->req.pids));
		m->n_drain_tgids += c->req.n_pids;
	}
	m->drain_work.data = m;
	if (uv_queue_work(m->loop, &m->drain_work, drain_work_cb, drain_after_cb) < 0) {
		m->draining = false;
		log_error("cannot queue a drain");
	}
}

void drain_timer_cb(uv_timer_t *t)
{
	struct manager *m = t->data;

	if (!m->draining)
		drain_start(m);
}
