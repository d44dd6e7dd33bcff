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
#include "file_ids.h"
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
#include "cpython_code.h"
#include "unwinder.h"
#include "walk_return.h"
#include "manager_internal.h"

/* ---- drains ---- */

/* drain_run's lookups, answered by the symbolizer and the collector's maps. */
static void lookup_kernel_frame(void *arg, uint64_t addr, char *buf, size_t size)
{
	struct manager *m = arg;

	symbolizer_kernel(m->symbolizer, addr, buf, size);
}

static void lookup_user_frames(void *arg, uint32_t tgid, uint64_t addr, char *buf, size_t size)
{
	struct manager *m = arg;

	if (addr & OFFCPU_FRAME_FILE) /* a file's id and address: any process's */
		symbolizer_user_file(m->symbolizer, OFFCPU_FRAME_FILE_ID(addr),
				     addr & OFFCPU_FRAME_VADDR_MASK, buf, size);
	else
		symbolizer_user(m->symbolizer, tgid, addr, buf, size);
}

static void lookup_python_frame(void *arg, uint32_t tgid, uint64_t frame, char *buf, size_t size)
{
	struct manager *m = arg;

	/* minor 0 (its layout withdrawn: it exited): the names last read */
	cpython_code_name(m->cpython, tgid, collector_python_minor(m->collector, tgid), frame, buf,
			  size);
}

static int lookup_waker_stack(void *arg, uint64_t hash, struct offcpu_stack *ret)
{
	struct manager *m = arg;

	return collector_waker_stack(m->collector, hash, ret);
}

static int lookup_file_name(void *arg, uint64_t hash, struct offcpu_file_name *ret)
{
	struct manager *m = arg;

	return collector_file_name(m->collector, hash, ret);
}

static uint64_t lookup_names_epoch(void *arg)
{
	struct manager *m = arg;

	return m->file_ids ? file_ids_forgotten(m->file_ids) : 0;
}

/* Empties the kernel maps and names the rows. The maps of the captures'
 * targets are read first, so that a target that exits before its stacks are
 * drained is still named. */
static void drain_work_cb(uv_work_t *req)
{
	struct manager *m = req->data;
	struct drain_lookup lk = {
		.arg = m,
		.kernel_frame = lookup_kernel_frame,
		.user_frames = lookup_user_frames,
		.python_frame = lookup_python_frame,
		.waker_stack = lookup_waker_stack,
		.file_name = lookup_file_name,
		.names_epoch = lookup_names_epoch,
		.cgroup_path = manager_cgroup_path,
		.ns_pid = manager_ns_pid,
	};
	struct collector_batch b;
	int r;

	/* Open blocks first: the part of them the window or capture that ends
	 * holds. A capture's slot goes off after, so that every block of it
	 * is counted by its end or by the pass. */
	m->drain.pass_realtime_ms = clock_realtime_ms();
	m->drain.pass_error = collector_pass_in_progress(
		m->collector, m->drain.progress, m->drain.final_slots, &m->drain.pass_now_ns);
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		if ((m->drain.final_slots | m->drain.stop_slots) & (1u << i))
			collector_slot_deactivate(m->collector, i);
	r = collector_drain(m->collector, &b);
	/* Cgroups made since the last drain are named before its rows: one
	 * removed since keeps the name it was made with. */
	manager_cgroups_take_events(m);
	if (r == 0) {
		/* mappings may have changed since the last drain */
		symbolizer_refresh_processes(m->symbolizer);
		cpython_code_pass(m->cpython);
		for (size_t i = 0; i < m->drain.n_drain_tgids; i++)
			symbolizer_prime(m->symbolizer, m->drain.drain_tgids[i]);
	}
	/* A failed drain leaves b empty: the result is empty too, but for the
	 * counters. */
	m->drain.drain_error =
		drain_run(&b, &lk, &m->drain.carry, m->drain.kept_names, &m->drain.drain_result);
	if (r < 0)
		m->drain.drain_error = r;
	/* With the processes' mappings as fresh as the drain's. */
	manager_blocked_run(m, &lk);
	m->drain.banks_error = b.banks_error;
	collector_batch_release(&b);
}

/* What status reports about offcpud's own cost, sampled at each drain. */
static void self_accounting_sample(struct manager *m, const struct drain_result *r)
{
	struct rusage ru;

	memcpy(m->stats.programs_prev, m->stats.programs, sizeof(m->stats.programs));
	m->stats.n_programs = collector_programs(m->collector, m->stats.programs, COLLECTOR_MAX_PROGRAMS);
	m->stats.cpu_prev_ns = m->stats.cpu_ns;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		m->stats.cpu_ns =
			(uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
			(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
	m->stats.drained_rows = r->n_rows;
	m->stats.drained_stacks = r->n_stacks;
	m->stats.drained_chains = r->n_chains;
	m->stats.drained_hists = r->n_hists;
}

/* Where slot's rows go: its capture's profile (none while its probes go
 * in: blocks that ended then are not the capture's), the open window's for
 * a continuous slot, or nowhere. */
static struct profile *slot_profile(struct manager *m, unsigned slot)
{
	struct capture *c = m->cap.captures[slot];

	if (c)
		return c->phase == CAPTURE_ATTACHING ? NULL : c->profile;
	return (m->windows.continuous_slots & (1u << slot)) ? m->windows.window : NULL;
}

/* Where carried rows go at the end of their window or capture. */
struct carried_to {
	struct manager *m;
	struct profile *profile;
	struct sampling_summary *summary;
};

static void carried_row_add(void *arg, const struct collector_row *c)
{
	struct carried_to *to = arg;
	struct drain_row row = { .key = c->key, .value = c->value };
	char cgroup[4096];

	drain_unsampled_names(&row);
	if (c->key.cgroup &&
	    manager_cgroup_path(to->m, c->key.cgroup, c->key.tgid, cgroup, sizeof(cgroup)) == 0)
		row.cgroup = cgroup;
	to->summary->unsampled_ns += c->value.sum_ns;
	if (profile_add(to->profile, &row) < 0)
		log_warning("out of memory: a row was lost");
}

/* The carried time of the slots whose window or capture ends with this
 * drain becomes their unsampled rows; a slot whose rows go nowhere drops
 * its own. */
static void carry_settle(struct manager *m, uint64_t completed, bool window_ends)
{
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS && m->drain.carry.n; i++) {
		struct capture *c = m->cap.captures[i];
		struct carried_to to = {
			.m = m,
			.profile = slot_profile(m, i),
			.summary = c ? &c->sampling : &m->windows.window_sampling,
		};
		bool ends =
			c ? c->phase == CAPTURE_ENDING && c->final_drain <= completed : window_ends;

		if (!to.profile)
			sampling_carry_take(&m->drain.carry, 1u << i, NULL, NULL);
		else if (ends)
			sampling_carry_take(&m->drain.carry, 1u << i, carried_row_add, &to);
	}
}

/* sampled_walk = auto: task works or rseq_update for deferred walks, by
 * what each would have cost in the drain interval that just ended. */
static void walk_return_update(struct manager *m)
{
	struct manager_walk_return *w = &m->walk_return;
	double works = manager_counter_rate(m, OFFCPU_CNT_TASK_WORKS);
	struct walk_return_rates rates = {
		.switches_per_s = manager_counter_rate(m, OFFCPU_CNT_SWITCHES),
		.deferred_per_s = works + manager_counter_rate(m, OFFCPU_CNT_WALK_AT_RSEQ),
	};
	bool rseq;
	int r;

	if (!w->switchable)
		return;
	if (works > 0)
		w->task_work_ns = manager_task_work_mean_ns(m);
	rates.task_work_ns = w->task_work_ns;
	rseq = walk_return_rseq(w->rseq, &rates, w->why, sizeof(w->why));
	if (rseq == w->rseq)
		return;
	r = collector_walk_return_set(m->collector, rseq);
	if (r < 0) {
		/* Task works go on, for good: the attach would fail again. */
		w->switchable = false;
		snprintf(w->why, sizeof(w->why), "auto: attaching rseq_update failed: %s",
			 strerror(-r));
		log_warning("deferred walks stay with task works: %s", w->why);
		return;
	}
	w->rseq = rseq;
	log_info("deferred walks now %s (%s)", rseq ? "at rseq_update" : "by task work", w->why);
}

static void drain_after_cb(uv_work_t *req, int status)
{
	struct manager *m = req->data;
	struct drain_result *r = &m->drain.drain_result;
	uint64_t completed = m->drain.drains_started;
	bool rotate, last;

	m->drain.draining = false;
	if (status < 0 || m->drain.drain_error < 0)
		log_warning("draining the kernel maps failed: %s",
			    strerror(-(status < 0 ? status : m->drain.drain_error)));
	if (m->drain.pass_error < 0)
		log_warning("counting the blocks still open failed: %s (the window or capture that "
			    "ended holds only the blocks that ended in it)",
			    strerror(-m->drain.pass_error));
	if (m->drain.banks_error < 0)
		log_warning("moving the threads' exact totals into the maps failed: %s (a later "
			    "drain moves them, a window late)",
			    strerror(-m->drain.banks_error));

	memcpy(m->stats.counters_prev, m->stats.counters, sizeof(m->stats.counters));
	m->stats.counters_prev_ns = m->stats.counters_ns;
	memcpy(m->stats.counters, r->counters, sizeof(m->stats.counters));
	m->stats.counters_ns = clock_monotonic_ns();
	self_accounting_sample(m, r);
	walk_return_update(m);
	manager_cgroups_follow(m);

	for (size_t i = 0; i < r->n_rows; i++) {
		struct profile *p = slot_profile(m, r->rows[i].key.slot % OFFCPU_MAX_SLOTS);

		if (p && profile_add(p, &r->rows[i]) < 0)
			log_warning("out of memory: a row was lost");
	}
	for (size_t i = 0; i < r->n_hists; i++)
		manager_window_hist_add(m, &r->hists[i]);
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		if (m->windows.window && (m->windows.continuous_slots & (1u << i)))
			sampling_summary_add(&m->windows.window_sampling, &r->sampling[i]);
		else if (m->cap.captures[i])
			sampling_summary_add(&m->cap.captures[i]->sampling, &r->sampling[i]);
	}
	drain_result_release(r);
	manager_blocked_reply(m);
	rotate = m->windows.window && m->drain.rotate;
	last = m->stopping &&
	       !m->drain.drain_again; /* the final drain: the window is stored next */
	carry_settle(m, completed, rotate || last);
	if (rotate)
		manager_window_rotate(m, true, m->drain.pass_realtime_ms);

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct capture *c = m->cap.captures[i];

		if (c && c->phase == CAPTURE_ENDING && c->final_drain <= completed) {
			if (m->drain.final_slots & (1u << i))
				c->end_ns = m->drain.pass_now_ns; /* its slot went off then */
			manager_capture_finish(m, c);
		}
	}
	if (m->stopping) {
		if (m->drain.drain_again) { /* this drain began before the slot went off */
			m->drain.drain_again = false;
			manager_drain_start(m);
			return;
		}
		/* The final drain is in: store the open window, then stop. */
		manager_window_rotate(m, false, m->drain.pass_realtime_ms);
		manager_shutdown_continue(m);
		return;
	}
	manager_notify_status(m);
	if (m->drain.drain_again) {
		m->drain.drain_again = false;
		manager_drain_start(m);
	}
}

void manager_drain_start(struct manager *m)
{
	if (m->drain.draining) {
		m->drain.drain_again = true;
		return;
	}
	m->drain.draining = true;
	m->drain.drains_started++;
	m->drain.n_drain_tgids = 0;
	m->drain.rotate = manager_window_due(m, clock_realtime_ms());
	m->drain.progress = m->drain.rotate || m->stopping;
	m->drain.stop_slots = m->stopping ? m->windows.continuous_slots : 0;
	m->drain.final_slots = 0;
	manager_blocked_take(m);
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct capture *c = m->cap.captures[i];

		if (c && c->phase == CAPTURE_ENDING && c->final_drain == m->drain.drains_started)
			m->drain.final_slots |= 1u << i;
		if (!c || c->phase != CAPTURE_RUNNING)
			continue;
		memcpy(m->drain.drain_tgids + m->drain.n_drain_tgids, c->req.pids,
		       c->req.n_pids * sizeof(*c->req.pids));
		m->drain.n_drain_tgids += c->req.n_pids;
	}
	m->drain.drain_work.data = m;
	if (uv_queue_work(m->loop, &m->drain.drain_work, drain_work_cb, drain_after_cb) < 0) {
		m->drain.draining = false;
		log_error("cannot queue a drain");
	}
}

void manager_drain_timer_cb(uv_timer_t *t)
{
	struct manager *m = t->data;

	if (!m->drain.draining)
		manager_drain_start(m);
}
