/* manager: see manager.h. */
#include "manager.h"

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

#define PROC_ROOT    "/proc"
#define MAX_PROGRAMS 48 /* BPF programs loaded or loadable; status lists them */

_Static_assert(CONFIG_MAX_CAPTURES == OFFCPU_MAX_SLOTS - 1, "a slot for each capture");

struct manager {
	uv_loop_t *loop;
	struct config cfg;
	struct access_policy access;
	struct collector *collector;
	struct symbolizer *symbolizer;
	struct unwinder *unwinder; /* NULL: user stacks by frame pointers only */
	struct server *server;
	uv_timer_t drain_timer;
	uv_timer_t watchdog_timer;
	struct store *store;
	int state_lock_fd; /* held for life: one daemon per database (state_lock.h) */
	char tracefs_why[256]; /* "" or why tracefs is missing (fileio's status) */
	struct store_queue *store_queue;
	/* The always-on captures: a slot per kind, whose rows fill the window. */
	bool continuous;
	uint32_t continuous_slots; /* mask of slots */
	struct profile *window;
	struct hashtab *window_hists;		  /* struct offcpu_hist_key (slot 0) -> count */
	struct sampling_summary window_sampling;  /* the open window's, continuous slots' */
	struct sampling_summary last_window_sampling; /* the last closed window's */
	int64_t window_start_ms, window_close_ms; /* CLOCK_REALTIME */
	uint64_t windows_written, windows_failed;
	struct store_stats store_stats; /* as of the last window write */
	bool disk_full;			/* the last write found no space */
	char store_error[256];		/* of the last write; "" if it worked */
	uv_work_t drain_work;
	struct drain_result drain_result;
	uint32_t drain_tgids[OFFCPU_MAX_SLOTS * PROTO_MAX_IDS]; /* targets to prime */
	size_t n_drain_tgids;
	int drain_error;
	bool draining;
	bool stopping;	       /* free once the drain under way and the store jobs are done */
	unsigned handles_open; /* timers still closing at the end */
	bool drain_again;      /* a capture ended during a drain: run another at once */
	uint64_t drains_started;
	uint64_t next_capture_id;
	struct capture *captures[OFFCPU_MAX_SLOTS];	  /* by slot */
	struct request_probes requests[OFFCPU_MAX_SLOTS]; /* of request-synchronous slots */
	unsigned probe_works;				  /* attaching or detaching: see below */
	unsigned load_works;				  /* captures loading program groups */
	struct pt_work *pt_work;			  /* the PT session running, if any */
	atomic_bool pt_stop;				  /* ends it early: shutting down */
	uint64_t started_ns;
	uint64_t counters[OFFCPU_CNT_MAX]; /* as of the last drain */
	uint64_t counters_prev[OFFCPU_CNT_MAX];
	uint64_t counters_ns, counters_prev_ns;
	/* Self-accounting, also sampled at each drain (times as counters_ns). */
	struct collector_program programs[MAX_PROGRAMS], programs_prev[MAX_PROGRAMS];
	size_t n_programs;
	uint64_t cpu_ns, cpu_prev_ns; /* the daemon's user + system time */
	size_t drained_rows, drained_stacks, drained_chains, drained_hists;
};

/* Captures that count (or have counted and are ending); not those still
 * attaching their probes, so a client may start its workload once it sees
 * its capture running. */
static unsigned captures_running(const struct manager *m)
{
	unsigned running = 0;

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		running += m->captures[i] && m->captures[i]->phase != CAPTURE_ATTACHING;
	return running;
}

/* Captures holding a slot, whatever their phase. */
static unsigned captures_held(const struct manager *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		n += m->captures[i] != NULL;
	return n + m->load_works; /* and those waiting for their programs */
}

static void notify_status(struct manager *m)
{
	unsigned running = captures_running(m);

	sd_notifyf(0, "STATUS=attached (%s); %u capture%s running",
		   collector_tracepoint(m->collector), running, running == 1 ? "" : "s");
}

static void reply_error(struct server_conn *conn, const char *code, const char *message)
{
	server_conn_send(conn, proto_reply_error(code, message));
}

/* ---- windows of the continuous profile ---- */

static void window_written(void *arg, const struct store_window *w, int r, const char *msg,
			   const struct store_stats *stats)
{
	struct manager *m = arg;

	if (stats)
		m->store_stats = *stats;
	m->disk_full = r == -ENOSPC;
	if (r < 0) {
		/* Rate-limited by the window cadence itself. */
		m->windows_failed++;
		snprintf(m->store_error, sizeof(m->store_error), "%s", msg);
		log_warning("window %lld..%lld not stored: %s%s", (long long)w->start_ms,
			    (long long)w->end_ms, msg,
			    m->disk_full ? " (disk full: stored windows are kept, new ones are "
					   "lost until there is space)"
					 : "");
		return;
	}
	if (m->store_error[0])
		log_info("windows are stored again");
	m->store_error[0] = '\0';
	m->windows_written++;
}

static void window_hist_add(struct manager *m, const struct collector_hist *h)
{
	struct offcpu_hist_key key = h->key;
	uint64_t *count;

	if (!m->window_hists || !(m->continuous_slots & (1u << (key.slot % OFFCPU_MAX_SLOTS))))
		return;
	key.slot = 0;
	count = hashtab_put(m->window_hists, &key, NULL);
	if (count)
		*count += h->count;
}

/* Starts a window at now_ms; it closes at the next multiple of the window
 * length, so windows line up with the clock (…:00, …:10, …:20). */
static int window_open(struct manager *m, int64_t now_ms)
{
	int64_t len_ms = (int64_t)m->cfg.window_seconds * 1000;

	m->window_start_ms = now_ms;
	m->window_close_ms = (now_ms / len_ms + 1) * len_ms;
	if (hashtab_new(sizeof(struct offcpu_hist_key), sizeof(uint64_t), &m->window_hists) < 0)
		return -ENOMEM;
	return profile_new(&m->window);
}

/* Hands the current window to the store and opens the next one, which
 * starts where this one ends: every drained row lands in exactly one. */
static void window_rotate(struct manager *m, bool reopen)
{
	int64_t now_ms = clock_realtime_ms();
	struct store_window w = {
		.start_ms = m->window_start_ms,
		.end_ms = now_ms > m->window_start_ms ? now_ms : m->window_start_ms + 1,
	};

	if (!m->window)
		return;
	m->last_window_sampling = m->window_sampling;
	memset(&m->window_sampling, 0, sizeof(m->window_sampling));
	if (history_write(m->store_queue, m->window, m->window_hists, &w, window_written, m) < 0)
		log_warning("out of memory: a window was lost");
	m->window = NULL;
	m->window_hists = NULL;
	if (reopen && window_open(m, w.end_ms) < 0)
		log_error("out of memory: continuous profiling paused");
}

/* ---- drains ---- */

static void drain_start(struct manager *m);
static void shutdown_continue(struct manager *m);

static void drain_work_cb(uv_work_t *req)
{
	struct manager *m = req->data;

	m->drain_error = drain_run(m->collector, m->symbolizer, m->drain_tgids, m->n_drain_tgids,
				   &m->drain_result);
}

static void capture_free_cb(uv_handle_t *h)
{
	struct capture *c = h->data;

	profile_free(c->profile);
	free(c);
}

/* ---- request probes and unwind tables ----
 *
 * Attached and removed on a worker thread: registering or unregistering a
 * uretprobe in a busy process can take the kernel seconds (measured: 5 s in
 * a MariaDB under sysbench), which must not stall the event loop. A slot
 * stays taken until its probes are gone. The target processes' unwind
 * tables are loaded there too, before the capture runs.
 */

struct probe_work {
	uv_work_t work;
	struct manager *m;
	struct capture *c; /* attaching for this capture; NULL: detaching */
	unsigned slot;
	int error;
	char err[512];
};

static void probe_attach_cb(uv_work_t *req)
{
	struct probe_work *pw = req->data;
	const struct proto_capture_request *r = &pw->c->req;
	const char *specs[PROTO_MAX_REQUESTS];

	/* The targets' unwind tables first: the capture walks its first
	 * blocks with them. A failure leaves frame pointers, not an error. */
	for (size_t i = 0; pw->m->unwinder && i < r->n_pids; i++)
		unwinder_prepare(pw->m->unwinder, r->pids[i]);
	if (!r->n_requests)
		return;
	for (size_t i = 0; i < r->n_requests; i++)
		specs[i] = r->requests[i];
	pw->error =
		request_probes_attach(&pw->m->requests[pw->slot], pw->m->collector, pw->slot, specs,
				      r->n_requests, r->pids, r->n_pids, pw->err, sizeof(pw->err));
}

static void probe_detach_cb(uv_work_t *req)
{
	struct probe_work *pw = req->data;

	collector_request_detach(pw->m->collector, pw->slot);
}

static void probe_after_cb(uv_work_t *req, int status);

static int probe_work_start(struct manager *m, struct capture *c, unsigned slot)
{
	struct probe_work *pw = calloc(1, sizeof(*pw));
	int r;

	if (!pw)
		return -ENOMEM;
	pw->m = m;
	pw->c = c;
	pw->slot = slot;
	pw->work.data = pw;
	r = uv_queue_work(m->loop, &pw->work, c ? probe_attach_cb : probe_detach_cb,
			  probe_after_cb);
	if (r < 0) {
		free(pw);
		return r;
	}
	m->probe_works++;
	return 0;
}

/* Frees a slot a capture has finished with, once its probes are gone. */
static void slot_release(struct manager *m, unsigned slot)
{
	collector_slot_deactivate(m->collector, slot);
	if (m->requests[slot].n_specs && !m->stopping && probe_work_start(m, NULL, slot) == 0)
		return; /* probe_after_cb releases it */
	collector_slot_release(m->collector, slot);
	request_probes_free(&m->requests[slot]);
}

/* The last rows are in: reply (if its client is still there). */
static void capture_finish(struct manager *m, struct capture *c)
{
	struct store_window w = {
		.start_ms = c->start_ms,
		.end_ms = c->start_ms + (int64_t)((c->end_ns - c->start_ns) / 1000000) + 1,
		.capture_id = c->id,
	};

	if (c->conn) {
		struct proto_request_stats requests[OFFCPU_MAX_REQUESTS];
		struct proto_request_function funcs[ELF_FUNCS_MAX];
		size_t n_requests = request_probes_stats(&m->requests[c->slot], m->collector,
							 c->slot, requests, funcs, ELF_FUNCS_MAX);
		bool exited = capture_target_exited(PROC_ROOT, &c->req);
		char *line = capture_reply(c, m->counters, exited, requests, n_requests);

		if (line)
			server_conn_send(c->conn, line);
		else
			reply_error(c->conn, PROTO_ERR_INTERNAL,
				    "out of memory formatting the reply");
		server_conn_set_data(c->conn, NULL);
		/* Kept for "export --capture ID"; a cancelled capture is not. */
		if (history_write(m->store_queue, c->profile, NULL, &w, window_written, m) < 0)
			log_warning("out of memory: capture %llu not stored",
				    (unsigned long long)c->id);
		c->profile = NULL;
	}
	m->captures[c->slot] = NULL;
	slot_release(m, c->slot);
	uv_close((uv_handle_t *)&c->timer, capture_free_cb);
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

static void drain_start(struct manager *m)
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

static void drain_timer_cb(uv_timer_t *t)
{
	struct manager *m = t->data;

	if (!m->draining)
		drain_start(m);
}

/* ---- captures ---- */

/* Stops counting; the reply follows the next drain. */
static void capture_end(struct manager *m, struct capture *c)
{
	if (c->phase == CAPTURE_LOADING || c->phase == CAPTURE_ATTACHING)
		c->stop_requested = true;
	if (c->phase != CAPTURE_RUNNING)
		return;
	uv_timer_stop(&c->timer);
	collector_slot_deactivate(m->collector, c->slot);
	c->end_ns = clock_monotonic_ns();
	c->phase = CAPTURE_ENDING;
	/* A drain already running may have flipped before the deactivation. */
	c->final_drain = m->drains_started + 1;
	drain_start(m);
}

static void capture_timer_cb(uv_timer_t *t)
{
	struct capture *c = t->data;
	struct manager *m = t->loop->data;

	capture_end(m, c);
}

/* What a group of programs is needed for, in error messages. */
static const char *group_what(unsigned group)
{
	switch (group) {
	case COLLECTOR_GROUP_ONCPU:
		return "on-CPU sampling (kinds oncpu, hotcold)";
	case COLLECTOR_GROUP_REQUESTS:
		return "--request";
	case COLLECTOR_GROUP_BIO:
		return "kind bio";
	default:
		return "kind fileio";
	}
}

/* Why group is unavailable, for an 'unsupported' reply or the log. */
static const char *group_unavailable(struct manager *m, unsigned group, char *buf, size_t size)
{
	struct collector_group_status st;

	collector_group_status(m->collector, group, &st);
	snprintf(buf, size, "%s unavailable: %s", group_what(group), st.reason);
	return buf;
}

/* What went wrong when a request's probes were set up. */
static const char *request_error_code(int r)
{
	switch (r) {
	case -ESRCH: /* no such symbol */
	case -ENOENT:
	case -ENOEXEC:
	case -EINVAL:
	case -E2BIG:
	case -ENAMETOOLONG:
		return PROTO_ERR_BAD_REQUEST;
	case -EOPNOTSUPP:
		return PROTO_ERR_UNSUPPORTED;
	default:
		return PROTO_ERR_ATTACH;
	}
}

/* Starts counting time: the capture's probes, if any, are in. */
static void capture_run(struct manager *m, struct capture *c)
{
	collector_slot_activate(m->collector, c->slot);
	c->start_ns = clock_monotonic_ns();
	c->start_ms = clock_realtime_ms();
	c->phase = CAPTURE_RUNNING;
	uv_update_time(m->loop); /* attaching took a while: time the capture from now */
	uv_timer_start(&c->timer, capture_timer_cb, (uint64_t)c->req.seconds * 1000, 0);
	notify_status(m);
	drain_start(m); /* reads the targets' maps while they surely exist */
	if (c->stop_requested)
		capture_end(m, c);
}

/* The preparing of c (tables, request probes) ended with error (0 or -errno; err
 * says why): run the capture, or answer the error and free it. */
static void capture_attached(struct manager *m, struct capture *c, int error, const char *err)
{
	if (m->stopping)
		return; /* manager_free() answers the client and frees c */
	if (error == 0 && c->conn) {
		capture_run(m, c);
		return;
	}
	if (c->conn) {
		reply_error(c->conn, request_error_code(error), err);
		server_conn_set_data(c->conn, NULL);
	}
	m->captures[c->slot] = NULL;
	slot_release(m, c->slot);
	uv_close((uv_handle_t *)&c->timer, capture_free_cb);
}

static void probe_after_cb(uv_work_t *req, int status)
{
	struct probe_work *pw = req->data;
	struct manager *m = pw->m;

	m->probe_works--;
	if (pw->c) {
		capture_attached(m, pw->c, status < 0 ? status : pw->error,
				 status < 0 ? "attaching the request probes was cancelled"
					    : pw->err);
	} else {
		collector_slot_release(m->collector, pw->slot);
		request_probes_free(&m->requests[pw->slot]);
	}
	free(pw);
	if (m->stopping)
		shutdown_continue(m);
}

/* What every recording of processes must pass, capture or PT: its length,
 * its targets' existence, the client's right to them. Replies and returns
 * false if one fails. */
static bool recording_allowed(struct manager *m, struct server_conn *conn,
			      const struct proto_capture_request *req, uint32_t seconds)
{
	char err[512];

	if (seconds > m->cfg.max_capture_seconds) {
		snprintf(err, sizeof(err), "seconds must be at most %u (max_capture_seconds)",
			 m->cfg.max_capture_seconds);
		reply_error(conn, PROTO_ERR_BAD_REQUEST, err);
		return false;
	}
	if (capture_check_targets(PROC_ROOT, req, err, sizeof(err)) < 0) {
		reply_error(conn, PROTO_ERR_NO_SUCH_PID, err);
		return false;
	}
	if (access_check_capture(&m->access, server_conn_client(conn), req, PROC_ROOT, err,
				 sizeof(err)) < 0) {
		reply_error(conn, PROTO_ERR_PERMISSION, err);
		return false;
	}
	return true;
}

/* The first of groups (a mask) that is unavailable, or COLLECTOR_GROUP_COUNT. */
static unsigned group_first_unavailable(struct manager *m, uint32_t groups)
{
	struct collector_group_status st;
	unsigned g;

	for (g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		if (!(groups & (1u << g)))
			continue;
		collector_group_status(m->collector, g, &st);
		if (st.state == COLLECTOR_GROUP_UNAVAILABLE)
			break;
	}
	return g;
}

/* Logs how long each of groups (a mask) took to load. */
static void log_groups_loaded(struct manager *m, uint32_t groups)
{
	struct collector_group_status st;

	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		if (!(groups & (1u << g)))
			continue;
		collector_group_status(m->collector, g, &st);
		log_info("loaded the %s programs in %.1f s", collector_group_name(g),
			 st.load_ns / 1e9);
	}
}

/* Frees a capture that never got a slot (loading, or refused). */
static void capture_discard(struct capture *c)
{
	if (c->conn)
		server_conn_set_data(c->conn, NULL);
	profile_free(c->profile);
	free(c);
}

/* Takes a slot for c, whose program groups are loaded, and runs it (after
 * preparing it on a worker, if it has request probes or unwind tables to
 * set up); replies and frees c if that fails. */
static void capture_start(struct manager *m, struct capture *c)
{
	struct collector_filter filter;
	char err[512];
	unsigned group;
	int r;

	capture_filter(&c->req, &filter);
	collector_counters(m->collector, c->counters_start);
	r = collector_slot_add(m->collector, &filter, &c->slot);
	if (r < 0) {
		if (r == -EBUSY)
			reply_error(c->conn, PROTO_ERR_BUSY, "all capture slots are in use");
		else if (r == -EOPNOTSUPP &&
			 (group = group_first_unavailable(m, collector_filter_groups(&filter))) <
				 COLLECTOR_GROUP_COUNT)
			reply_error(c->conn, PROTO_ERR_UNSUPPORTED,
				    group_unavailable(m, group, err, sizeof(err)));
		else if (r == -ENOSPC)
			reply_error(c->conn, PROTO_ERR_BUSY, "the pid/tid filter maps are full");
		else
			reply_error(c->conn, PROTO_ERR_INTERNAL, strerror(-r));
		capture_discard(c);
		return;
	}
	c->id = ++m->next_capture_id;
	uv_timer_init(m->loop, &c->timer);
	c->timer.data = c;
	m->captures[c->slot] = c;
	if (!c->req.n_requests && !(m->unwinder && c->req.n_pids)) {
		capture_run(m, c);
		return;
	}
	/* Nothing counts while its probes go in (seconds, in a busy process):
	 * its requests and its blocks both start when it runs. */
	collector_slot_deactivate(m->collector, c->slot);
	c->phase = CAPTURE_ATTACHING;
	r = probe_work_start(m, c, c->slot);
	if (r < 0)
		capture_attached(m, c, r, "cannot start preparing the capture");
}

/* ---- program groups loaded on first use ----
 *
 * A capture whose kind needs programs not loaded yet waits for them without
 * a slot: the verifier takes seconds, on a worker thread, so the event
 * loop keeps serving. Loads run one at a time (collector_group_load).
 */

struct load_work {
	uv_work_t work;
	struct manager *m;
	struct capture *c;
	uint32_t groups;
	int error;
	unsigned failed; /* the group that failed to load */
};

static void load_work_cb(uv_work_t *req)
{
	struct load_work *lw = req->data;
	struct capture *c = lw->c;

	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		uint64_t ns;

		if (!(lw->groups & (1u << g)))
			continue;
		lw->error = collector_group_load(lw->m->collector, g, &ns);
		if (lw->error < 0) {
			lw->failed = g;
			return;
		}
		if (ns)
			c->groups_loaded |= 1u << g;
		c->load_ns += ns;
	}
}

static void load_after_cb(uv_work_t *req, int status)
{
	struct load_work *lw = req->data;
	struct manager *m = lw->m;
	struct capture *c = lw->c;
	char err[512];

	m->load_works--;
	log_groups_loaded(m, c->groups_loaded);
	if (status == 0 && lw->error < 0)
		log_warning("%s", group_unavailable(m, lw->failed, err, sizeof(err)));
	if (m->stopping) {
		if (c->conn)
			reply_error(c->conn, PROTO_ERR_INTERNAL, "offcpud is shutting down");
		capture_discard(c);
		free(lw);
		shutdown_continue(m);
		return;
	}
	if (!c->conn) {
		capture_discard(c); /* the client has gone */
	} else if (status < 0) {
		reply_error(c->conn, PROTO_ERR_INTERNAL, "loading the programs was cancelled");
		capture_discard(c);
	} else if (lw->error < 0) {
		reply_error(c->conn, PROTO_ERR_UNSUPPORTED, err);
		capture_discard(c);
	} else {
		capture_start(m, c);
	}
	free(lw);
}

static int load_work_start(struct manager *m, struct capture *c, uint32_t groups)
{
	struct load_work *lw = calloc(1, sizeof(*lw));
	int r;

	if (!lw)
		return -ENOMEM;
	*lw = (struct load_work){ .m = m, .c = c, .groups = groups };
	lw->work.data = lw;
	r = uv_queue_work(m->loop, &lw->work, load_work_cb, load_after_cb);
	if (r < 0) {
		free(lw);
		return r;
	}
	m->load_works++;
	return 0;
}

static void handle_capture(struct manager *m, struct server_conn *conn,
			   const struct proto_capture_request *req)
{
	struct collector_filter filter;
	struct collector_group_status st;
	uint32_t groups, missing = 0;
	struct capture *c;
	char err[512];

	if (server_conn_get_data(conn)) {
		reply_error(conn, PROTO_ERR_BUSY,
			    "a capture is already running on this connection");
		return;
	}
	if (captures_held(m) >= m->cfg.max_captures) {
		snprintf(err, sizeof(err), "%u captures are running, the limit (max_captures)",
			 m->cfg.max_captures);
		reply_error(conn, PROTO_ERR_BUSY, err);
		return;
	}
	if (!recording_allowed(m, conn, req, req->seconds))
		return;
	c = calloc(1, sizeof(*c));
	if (!c || profile_new(&c->profile) < 0) {
		free(c);
		reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	c->req = *req;
	if (c->req.sampled && !c->req.sample_period_us)
		c->req.sample_period_us = m->cfg.sample_period_us;
	c->conn = conn;
	server_conn_set_data(conn, c);
	capture_filter(&c->req, &filter);
	if (req->kind == PROTO_KIND_FILEIO && *m->tracefs_why) {
		snprintf(err, sizeof(err), "kind fileio unavailable: %s", m->tracefs_why);
		reply_error(conn, PROTO_ERR_UNSUPPORTED, err);
		capture_discard(c);
		return;
	}
	groups = collector_filter_groups(&filter);
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		if (!(groups & (1u << g)))
			continue;
		collector_group_status(m->collector, g, &st);
		if (st.state == COLLECTOR_GROUP_UNAVAILABLE) {
			reply_error(conn, PROTO_ERR_UNSUPPORTED,
				    group_unavailable(m, g, err, sizeof(err)));
			capture_discard(c);
			return;
		}
		if (st.state == COLLECTOR_GROUP_ON_DEMAND)
			missing |= 1u << g;
	}
	if (!missing) {
		capture_start(m, c);
		return;
	}
	c->phase = CAPTURE_LOADING;
	if (load_work_start(m, c, missing) < 0) {
		reply_error(conn, PROTO_ERR_INTERNAL, "cannot start loading the programs");
		capture_discard(c);
	}
}

/* ---- status ---- */

static double rate(const struct manager *m, unsigned idx);

static void sampling_status(const struct manager *m, struct proto_sampling_status *ret)
{
	const struct sampling_summary *w = &m->last_window_sampling;
	bool sampled = m->cfg.continuous_stacks == CONFIG_STACKS_SAMPLED;
	const char *why, *walk = collector_walk_mode(m->collector, &why);

	*ret = (struct proto_sampling_status){
		.stacks = sampled ? "sampled" : "exact",
		.period_us = sampled ? m->cfg.sample_period_us : 0,
		.walk = walk,
		.walk_reason = why,
		.blocks_per_s = rate(m, OFFCPU_CNT_SAMPLED_BLOCKS),
		.samples_per_s = rate(m, OFFCPU_CNT_SAMPLES),
		.user_walks_per_s = rate(m, OFFCPU_CNT_USER_STACK_WALKS),
		.kernel_walks_per_s = rate(m, OFFCPU_CNT_KERNEL_STACK_WALKS),
		.samples_lost = m->counters[OFFCPU_CNT_DEFER_LOST],
		.window_blocks = w->blocks,
		.window_samples = w->samples,
		.window_error_pct = 100 * sampling_relative_error((uint64_t)m->cfg.sample_period_us *
									  1000,
								  w->short_ns, 0.01),
	};
	if (!sampled)
		ret->window_error_pct = 0;
}

static const char *io_path_or_empty(const struct manager *m, unsigned kind)
{
	const char *path = collector_io_path(m->collector, kind);

	return path ? path : "";
}

static const char *const counter_names[OFFCPU_CNT_MAX] = {
#define COUNTER_NAME(name, status, drop) [OFFCPU_CNT_##name] = status,
	OFFCPU_COUNTERS(COUNTER_NAME)
#undef COUNTER_NAME
};

/* Per second, over the last drain interval. */
static double per_second(const struct manager *m, uint64_t now, uint64_t before)
{
	double secs = (m->counters_ns - m->counters_prev_ns) / 1e9;

	if (!m->counters_prev_ns || secs <= 0 || now < before)
		return 0;
	return (now - before) / secs;
}

static double rate(const struct manager *m, unsigned idx)
{
	return per_second(m, m->counters[idx], m->counters_prev[idx]);
}

static uint64_t rss_bytes(void)
{
	unsigned long size, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void map_fill(struct proto_map_fill *f, const char *name, size_t entries, uint32_t max)
{
	*f = (struct proto_map_fill){
		.name = name,
		.entries = entries,
		.max_entries = max,
		.fill_pct = max ? 100.0 * entries / max : 0,
	};
}

/* ---- Intel PT latency ----
 *
 * A PT session records for its seconds on a worker thread (the perf rings
 * are read every 20 ms there) and stores the trace; the reply names the
 * file, which offcpuctl analyses itself: decoding is the heavy part, and
 * it runs with the client's resources, not the daemon's. One session at a
 * time: each thread's AUX area is locked memory.
 */

struct pt_work {
	uv_work_t work;
	struct manager *m;
	struct server_conn *conn;
	struct proto_latency_request req;
	struct proto_pt_trace_result result;
	int error;
	char err[512];
	char path[4200];
};

static void pt_work_cb(uv_work_t *req)
{
	struct pt_work *pw = req->data;
	struct pt_capture_opts o = { .cfg = &pw->m->cfg, .req = &pw->req, .stop = &pw->m->pt_stop };

	pw->error = pt_capture_run(&o, &pw->result, pw->path, sizeof(pw->path), pw->err,
				   sizeof(pw->err));
}

static const char *pt_error_code(int r)
{
	switch (r) {
	case -ENODEV:
		return PROTO_ERR_UNSUPPORTED;
	case -EACCES:
	case -EPERM:
		return PROTO_ERR_PERMISSION;
	case -ENOMEM:
	case -ENOSPC:
	case -EIO:
		return PROTO_ERR_INTERNAL;
	default:
		return request_error_code(r); /* the function, the process */
	}
}

static void pt_after_cb(uv_work_t *req, int status)
{
	struct pt_work *pw = req->data;
	struct manager *m = pw->m;
	char *line;

	m->pt_work = NULL;
	if (status < 0)
		reply_error(pw->conn, PROTO_ERR_INTERNAL, "the PT session was cancelled");
	else if (pw->error < 0)
		reply_error(pw->conn, pt_error_code(pw->error), pw->err);
	else if ((line = proto_reply_pt_trace(&pw->result)))
		server_conn_send(pw->conn, line);
	else
		reply_error(pw->conn, PROTO_ERR_INTERNAL, "out of memory");
	server_conn_unref(pw->conn);
	free(pw);
	if (m->stopping)
		shutdown_continue(m);
}

static void handle_latency(struct manager *m, struct server_conn *conn,
			   const struct proto_latency_request *req)
{
	/* recording a process is capturing it: the same rules */
	struct proto_capture_request as_capture = { .pids = { req->pid }, .n_pids = 1 };
	struct pt_work *pw;

	if (!recording_allowed(m, conn, &as_capture, req->seconds))
		return;
	if (m->pt_work) {
		reply_error(conn, PROTO_ERR_BUSY,
			    "a PT session is running (one at a time); try again when it ends");
		return;
	}
	pw = calloc(1, sizeof(*pw));
	if (!pw) {
		reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	*pw = (struct pt_work){ .m = m, .conn = conn, .req = *req };
	pw->work.data = pw;
	if (uv_queue_work(m->loop, &pw->work, pt_work_cb, pt_after_cb) < 0) {
		free(pw);
		reply_error(conn, PROTO_ERR_INTERNAL, "cannot start a worker");
		return;
	}
	server_conn_ref(conn);
	m->pt_work = pw;
}

/*
 * Each kind's state for status: the one place that decides whether a kind
 * is ready, in use or unavailable (and why), from what the collector, the
 * configuration and the running captures say.
 */
static void kinds_status(struct manager *m, const struct proto_pt_status *pt,
			 struct kind_status ret[KIND_STATUS_COUNT],
			 struct collector_group_status groups[COLLECTOR_GROUP_COUNT])
{
	/* The kinds whose programs are a group of their own (loaded on first use). */
	static const struct {
		unsigned kind, group;
	} grouped[] = {
		{ OFFCPU_KIND_ONCPU, COLLECTOR_GROUP_ONCPU },
		{ KIND_STATUS_HOTCOLD, COLLECTOR_GROUP_ONCPU },
		{ OFFCPU_KIND_BIO, COLLECTOR_GROUP_BIO },
		{ OFFCPU_KIND_FILEIO, COLLECTOR_GROUP_FILEIO },
		{ KIND_STATUS_REQUEST, COLLECTOR_GROUP_REQUESTS },
	};
	struct kind_status_input in = { 0 };

	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++)
		collector_group_status(m->collector, g, &groups[g]);
	for (size_t i = 0; i < sizeof(grouped) / sizeof(grouped[0]); i++) {
		const struct collector_group_status *st = &groups[grouped[i].group];

		if (st->state == COLLECTOR_GROUP_UNAVAILABLE)
			in.unavailable[grouped[i].kind] =
				grouped[i].kind == OFFCPU_KIND_FILEIO && *m->tracefs_why
					? m->tracefs_why
					: st->reason;
		in.on_demand[grouped[i].kind] = st->state == COLLECTOR_GROUP_ON_DEMAND;
	}
	if (*m->tracefs_why) /* the syscall tracepoints cannot even be named */
		in.unavailable[OFFCPU_KIND_FILEIO] = m->tracefs_why;
	if (!pt->available)
		in.unavailable[KIND_STATUS_LATENCY] = pt->reason;
	in.traced_with[OFFCPU_KIND_BIO] = collector_io_path(m->collector, OFFCPU_KIND_BIO);
	in.traced_with[OFFCPU_KIND_FILEIO] = collector_io_path(m->collector, OFFCPU_KIND_FILEIO);
	for (unsigned kind = 0; kind < OFFCPU_KIND_COUNT; kind++)
		in.continuous[kind] = m->continuous && (m->cfg.continuous_kinds & (1u << kind)) &&
				      !in.unavailable[kind]; /* continuous_start skipped those */
	in.continuous[KIND_STATUS_REQUEST] = m->continuous && *m->cfg.continuous_requests;
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		const struct capture *c = m->captures[i];

		if (!c)
			continue;
		in.captures[c->req.oncpu ? KIND_STATUS_HOTCOLD : c->req.kind]++;
		in.captures[KIND_STATUS_REQUEST] += c->req.n_requests > 0;
	}
	in.captures[KIND_STATUS_LATENCY] = m->pt_work != NULL;
	kind_status_fill(&in, ret);
}

static void handle_status(struct manager *m, struct server_conn *conn)
{
	struct proto_program programs[MAX_PROGRAMS];
	struct collector_group_status groups[COLLECTOR_GROUP_COUNT];
	struct proto_map_fill maps[4];
	struct collector_map_sizes sizes;
	struct proto_counter counters[OFFCPU_CNT_MAX];
	struct proto_request_stats requests[OFFCPU_MAX_REQUESTS];
	struct proto_request_function funcs[ELF_FUNCS_MAX];
	uint64_t now[OFFCPU_CNT_MAX];
	unsigned first_continuous;
	struct unwinder_stats ustats;
	char pt_reason[512];
	struct kind_status kinds[KIND_STATUS_COUNT];
	struct proto_kind_status pkinds[KIND_STATUS_COUNT];
	struct proto_status st;

	collector_counters(m->collector, now);
	for (unsigned i = 0; i < OFFCPU_CNT_MAX; i++) {
		counters[i].name = counter_names[i];
		counters[i].value = now[i];
	}
	st = (struct proto_status){
		.version = OFFCPU_VERSION,
		.uptime_s = (clock_monotonic_ns() - m->started_ns) / 1000000000ULL,
		.pid = getpid(),
		.tracepoint = collector_tracepoint(m->collector),
		.bio_tracepoints = io_path_or_empty(m, OFFCPU_KIND_BIO),
		.fileio_tracepoints = io_path_or_empty(m, OFFCPU_KIND_FILEIO),
		.programs = programs,
		.n_programs = m->n_programs,
		.slots_active = collector_slots_active(m->collector),
		.slots_max = OFFCPU_MAX_SLOTS,
		.captures_running = captures_running(m),
		.switches_per_s = rate(m, OFFCPU_CNT_SWITCHES),
		.recorded_per_s = rate(m, OFFCPU_CNT_RECORDED),
		.counters = counters,
		.n_counters = OFFCPU_CNT_MAX,
		.requests = requests,
		.maps = maps,
		.n_maps = 4,
		.store = {
			.path = m->cfg.database,
			.bytes = m->store_stats.db_bytes,
			.windows = m->store_stats.windows,
			.windows_written = m->windows_written,
			.windows_failed = m->windows_failed,
			.disk_full = m->disk_full,
			.last_error = m->store_error,
		},
		.cpu_pct = per_second(m, m->cpu_ns, m->cpu_prev_ns) / 1e7,
		.rss_bytes = rss_bytes(),
		.unwind.mode = "fp", /* set whole below when tables are used */
	};
	pt_capture_status(&m->cfg, &st.pt, pt_reason, sizeof(pt_reason));
	sampling_status(m, &st.sampling);
	if (m->pt_work)
		st.pt.recording_pid = m->pt_work->req.pid;
	kinds_status(m, &st.pt, kinds, groups);
	for (unsigned i = 0; i < KIND_STATUS_COUNT; i++)
		pkinds[i] = (struct proto_kind_status){ .name = kinds[i].name,
							.state = kind_state_name(kinds[i].state),
							.detail = kinds[i].detail };
	st.kinds = pkinds;
	st.n_kinds = KIND_STATUS_COUNT;
	if (m->unwinder) {
		unwinder_stats(m->unwinder, &ustats);
		st.unwind = (struct proto_unwind_status){
			.mode = "dwarf",
			.tables = ustats.tables,
			.processes = ustats.processes,
			.rows_used = ustats.rows_used,
			.rows_max = ustats.rows_max,
			.table_bytes = ustats.table_bytes,
			.builds = ustats.builds,
			.build_ns_total = ustats.build_ns_total,
			.build_ns_max = ustats.build_ns_max,
			.build_max_path = ustats.build_max_path,
			.evictions = ustats.evictions,
			.no_room = ustats.no_room,
			.failed = ustats.failed,
			.requests = ustats.requests,
		};
	}
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT && g < PROTO_MAX_GROUPS; g++) {
		static const char *const states[] = {
			[COLLECTOR_GROUP_ON_DEMAND] = "on_demand",
			[COLLECTOR_GROUP_LOADED] = "loaded",
			[COLLECTOR_GROUP_UNAVAILABLE] = "unavailable",
		};

		collector_group_status(m->collector, g, &groups[g]);
		st.groups[st.n_groups++] = (struct proto_program_group){
			.name = collector_group_name(g),
			.state = states[groups[g].state],
			.reason = groups[g].state == COLLECTOR_GROUP_UNAVAILABLE ? groups[g].reason
										 : "",
			.load_ms = groups[g].load_ns / 1000000,
		};
	}
	for (size_t i = 0; i < m->n_programs; i++)
		programs[i] = (struct proto_program){
			.name = m->programs[i].name,
			.loaded = m->programs[i].loaded,
			.attached = m->programs[i].attached,
			.run_cnt = m->programs[i].run_cnt,
			.run_time_ns = m->programs[i].run_time_ns,
			.events_per_s =
				per_second(m, m->programs[i].run_cnt, m->programs_prev[i].run_cnt),
		};
	collector_map_sizes(m->collector, &sizes);
	map_fill(&maps[0], "aggregation", m->drained_rows, sizes.agg);
	map_fill(&maps[1], "stacks", m->drained_stacks, sizes.stacks);
	map_fill(&maps[2], "chains", m->drained_chains, sizes.chains);
	map_fill(&maps[3], "histograms", m->drained_hists, sizes.hists);
	/* Each continuous slot has the same requests: the first one's say it all. */
	if (m->continuous_slots) {
		first_continuous = __builtin_ctz(m->continuous_slots);
		st.n_requests =
			request_probes_stats(&m->requests[first_continuous], m->collector,
					     first_continuous, requests, funcs, ELF_FUNCS_MAX);
	}
	server_conn_send(conn, proto_reply_status(&st));
}

/* ---- requests ---- */

static bool accept_cb(struct server_conn *conn, char *why, size_t why_size, void *userdata)
{
	struct manager *m = userdata;

	return access_may_connect(&m->access, server_conn_client(conn), why, why_size);
}

static void request_cb(struct server_conn *conn, const char *line, size_t len, void *userdata)
{
	struct manager *m = userdata;
	struct proto_request *req;
	struct capture *c;
	char err[256];
	int r;

	/* struct proto_request holds two id arrays: too big for the stack. */
	req = malloc(sizeof(*req));
	if (!req) {
		reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	if (proto_request_parse(line, len, req, err, sizeof(err)) < 0) {
		reply_error(conn, PROTO_ERR_BAD_REQUEST, err);
		free(req);
		return;
	}
	switch (req->cmd) {
	case PROTO_CMD_STATUS:
		handle_status(m, conn);
		break;
	case PROTO_CMD_CAPTURE:
		handle_capture(m, conn, &req->capture);
		break;
	case PROTO_CMD_WINDOWS:
		if (history_windows(m->store_queue, conn, &req->windows) < 0)
			reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		break;
	case PROTO_CMD_EXPORT:
		r = history_export(m->store_queue, conn, &req->export, err, sizeof(err));
		if (r == -EINVAL)
			reply_error(conn, PROTO_ERR_BAD_REQUEST, err);
		else if (r < 0)
			reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		break;
	case PROTO_CMD_HIST:
		if (history_hist(m->store_queue, conn, &req->hist) < 0)
			reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		break;
	case PROTO_CMD_LATENCY:
		handle_latency(m, conn, &req->latency);
		break;
	case PROTO_CMD_HEATMAP:
		if (history_heatmap(m->store_queue, conn, &req->heatmap) < 0)
			reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		break;
	case PROTO_CMD_STOP:
		c = server_conn_get_data(conn);
		if (c)
			capture_end(m, c);
		else
			reply_error(conn, PROTO_ERR_BAD_REQUEST,
				    "no capture is running on this connection");
		break;
	}
	free(req);
}

static void closed_cb(struct server_conn *conn, void *userdata)
{
	struct manager *m = userdata;
	struct capture *c = server_conn_get_data(conn);

	if (!c)
		return;
	c->conn = NULL; /* cancelled: finish quietly, nobody to answer */
	capture_end(m, c);
}

/* ---- life cycle ---- */

static int libbpf_print_cb(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void watchdog_cb(uv_timer_t *t)
{
	(void)t;
	sd_notify(0, "WATCHDOG=1"); /* from the loop: a stuck loop stops the pings */
}

/* Capture ids stay unique across restarts: stored captures keep theirs. */
static uint64_t last_stored_capture_id(struct store *store)
{
	struct store_window *w = NULL;
	uint64_t max = 0;
	char msg[256];
	size_t n = 0;

	if (store_windows_list(store, 0, &w, &n, msg, sizeof(msg)) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (w[i].capture_id > max)
			max = w[i].capture_id;
	free(w);
	return max;
}

static int store_start(struct manager *m)
{
	struct store_limits limits = {
		.max_db_bytes = m->cfg.max_db_bytes,
		.max_age_ms = m->cfg.max_age_s * 1000,
	};
	char msg[512], *dir, *slash;
	pid_t holder = 0;
	int r;

	dir = strdup(m->cfg.database);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0750); /* StateDirectory= makes it under systemd */
	}
	free(dir);
	r = state_lock_acquire(m->cfg.database, &holder);
	if (r < 0) {
		state_lock_path(m->cfg.database, msg, sizeof(msg));
		if (r == -EBUSY && holder)
			log_error("another offcpud (pid %ld) is using the database %s (it holds %s): "
				  "one daemon per database; give this one another 'database'",
				  (long)holder, m->cfg.database, msg);
		else if (r == -EBUSY)
			log_error("another process holds %s: the database %s is in use by another "
				  "offcpud; give this one another 'database'",
				  msg, m->cfg.database);
		else
			log_error("cannot lock %s for the database %s: %s", msg, m->cfg.database,
				  strerror(-r));
		return r;
	}
	m->state_lock_fd = r;
	r = store_open(m->cfg.database, &limits, &m->store, msg, sizeof(msg));
	if (r < 0) {
		log_error("cannot open the profile store %s: %s", m->cfg.database, msg);
		return r;
	}
	m->next_capture_id = last_stored_capture_id(m->store);
	store_stats(m->store, &m->store_stats);
	r = store_queue_new(m->loop, m->store, &m->store_queue);
	if (r < 0)
		log_error("out of memory");
	return r;
}

/* Splits continuous_requests (checked by config) into its words, in buf. */
static size_t continuous_specs(const struct manager *m, char *buf, size_t size,
			       const char *specs[CONFIG_MAX_REQUESTS])
{
	size_t n = 0;

	snprintf(buf, size, "%s", m->cfg.continuous_requests);
	for (char *save, *w = strtok_r(buf, " \t", &save); w && n < CONFIG_MAX_REQUESTS;
	     w = strtok_r(NULL, " \t", &save))
		specs[n++] = w;
	return n;
}

/* The continuous slot of kind samples its stacks (bpf/sampling.h) if so
 * configured and it is a kind whose rows are blocks by the blocked thread's
 * stacks. */
static uint64_t continuous_sample_period_ns(const struct manager *m, unsigned kind)
{
	if (m->cfg.continuous_stacks != CONFIG_STACKS_SAMPLED ||
	    (kind != OFFCPU_KIND_OFFCPU && kind != OFFCPU_KIND_RUNQ))
		return 0;
	return (uint64_t)m->cfg.sample_period_us * 1000;
}

static int continuous_start(struct manager *m)
{
	const char *specs[CONFIG_MAX_REQUESTS];
	char buf[sizeof(m->cfg.continuous_requests)], err[512];
	size_t n_specs = continuous_specs(m, buf, sizeof(buf), specs);
	unsigned slot;
	int r;

	r = window_open(m, clock_realtime_ms());
	if (r < 0)
		return log_error("out of memory"), r;
	for (unsigned kind = 0; kind < OFFCPU_KIND_COUNT; kind++) {
		struct collector_filter filter = {
			.state_mask = m->cfg.continuous_states,
			.min_block_ns = (uint64_t)m->cfg.continuous_min_block_us * 1000,
			.user_stacks = kind != OFFCPU_KIND_WAKEUP,
			.kernel_stacks = kind != OFFCPU_KIND_WAKEUP,
			.kind = kind,
			.chain_depth = 3,
			.split_runq = kind == OFFCPU_KIND_OFFCPU && m->cfg.continuous_split_runq,
			.sample_period_ns = continuous_sample_period_ns(m, kind),
			.hist = kind == OFFCPU_KIND_OFFCPU,
			/* On-CPU samples are not request-synchronous: all of them. */
			.requests = n_specs > 0 && kind != OFFCPU_KIND_ONCPU,
		};

		bool io = kind == OFFCPU_KIND_BIO || kind == OFFCPU_KIND_FILEIO;
		uint32_t groups, loaded = 0;
		unsigned failed = 0;

		if (!(m->cfg.continuous_kinds & (1u << kind)))
			continue;
		filter.requests = filter.requests && !io; /* requests gate off-CPU blocks */
		filter.hist = filter.hist && !io;
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
		m->continuous_slots |= 1u << slot;
		if (!filter.requests)
			continue;
		r = request_probes_attach(&m->requests[slot], m->collector, slot, specs, n_specs,
					  NULL, 0, err, sizeof(err));
		if (r < 0) {
			log_error("continuous_requests: %s", err);
			return r;
		}
	}
	if (n_specs)
		log_info("continuous profile counts only inside requests: %s",
			 m->cfg.continuous_requests);
	m->continuous = true;
	log_info("continuous profiling on: %u s windows into %s", m->cfg.window_seconds,
		 m->cfg.database);
	return 0;
}

int manager_new(uv_loop_t *loop, const struct config *cfg, struct manager **ret)
{
	struct collector_options copts = {
		.agg_map_entries = cfg->agg_map_entries,
		.stack_map_entries = cfg->stack_map_entries,
		.trace_self = cfg->trace_self,
		.unwind_dwarf = cfg->unwind == CONFIG_UNWIND_DWARF,
		.unwind_max_depth = cfg->unwind_max_depth,
		.defer_walks = cfg->sampled_walk == CONFIG_SAMPLED_WALK_AUTO,
		.unwind_rows = cfg->unwind_rows,
		.unwind_processes = cfg->unwind_processes,
		.oncpu_frequency = cfg->oncpu_frequency,
		.attach = cfg->tracepoint == CONFIG_TRACEPOINT_TP_BTF	? COLLECTOR_ATTACH_TP_BTF
			  : cfg->tracepoint == CONFIG_TRACEPOINT_RAW_TP ? COLLECTOR_ATTACH_RAW_TP
									: COLLECTOR_ATTACH_AUTO,
	};
	struct server_options sopts = {
		.path = cfg->socket_path,
		.mode = cfg->socket_mode,
		.group = cfg->socket_group,
		.max_clients = cfg->max_clients,
		.max_request_bytes = cfg->max_request_bytes,
		.max_reply_bytes = cfg->max_reply_bytes,
		.timeout_ms = cfg->client_timeout_s * 1000,
	};
	struct server_ops ops = { .accept = accept_cb, .request = request_cb, .closed = closed_cb };
	uint64_t watchdog_us = 0;
	struct unwinder_maps umaps;
	char warn[512];
	struct manager *m;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return log_error("out of memory"), -ENOMEM;
	m->loop = loop;
	m->cfg = *cfg;
	m->state_lock_fd = -1;
	m->started_ns = clock_monotonic_ns();
	loop->data = m;
	uv_timer_init(loop, &m->drain_timer);
	m->drain_timer.data = m;
	uv_timer_init(loop, &m->watchdog_timer);
	m->watchdog_timer.data = m;

	r = store_start(m);
	if (r < 0)
		goto fail;
	libbpf_set_print(libbpf_print_cb);
	/* Before the programs load: fileio attaches through tracefs. */
	r = tracefs_ensure(TRACEFS_DIR, m->tracefs_why, sizeof(m->tracefs_why));
	if (r == 1)
		log_info("mounted tracefs on %s (it was not mounted)", TRACEFS_DIR);
	else if (r < 0)
		log_warning("%s: file I/O (--kind fileio) is unavailable", m->tracefs_why);
	r = collector_new(&copts, &m->collector);
	if (r < 0) {
		log_error("cannot load the BPF programs: %s%s", strerror(-r),
			  r == -EPERM ? " (offcpud needs root, or CAP_BPF and CAP_PERFMON)" : "");
		goto fail;
	}
	log_info("sched_switch program attached (%s)", collector_tracepoint(m->collector));
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		struct collector_group_status st;

		collector_group_status(m->collector, g, &st);
		if (st.state == COLLECTOR_GROUP_UNAVAILABLE)
			log_info("%s (captures that need it are refused)",
				 group_unavailable(m, g, warn, sizeof(warn)));
	}
	log_info("the programs of other kinds load when a capture first needs them "
		 "(on-CPU sampling at %u Hz per CPU)",
		 cfg->oncpu_frequency);
	m->n_programs = collector_programs(m->collector, m->programs, MAX_PROGRAMS);
	if (!collector_bpf_stats(m->collector))
		log_info(
			"the kernel refused BPF run-time stats: status shows no program run times");
	if (collector_unwind_maps(m->collector, &umaps)) {
		r = unwinder_new(&umaps, PROC_ROOT, &m->unwinder);
		if (r < 0) {
			log_error("cannot start the unwinder: %s", strerror(-r));
			goto fail;
		}
		log_info("user stacks: unwind tables (up to %u rows), frame pointers elsewhere",
			 umaps.rows_max);
	} else {
		log_info("user stacks: frame pointers%s",
			 cfg->unwind == CONFIG_UNWIND_DWARF ? " (unwind tables need tp_btf)" : "");
	}
	r = symbolizer_new(PROC_ROOT, cfg->debug_root, &m->symbolizer);
	if (r < 0) {
		log_error("cannot set up the symbolizer: %s", strerror(-r));
		goto fail;
	}
	if (cfg->continuous) {
		r = continuous_start(m);
		if (r < 0)
			goto fail;
	}
	access_policy_init(&m->access, cfg, warn, sizeof(warn));
	if (*warn)
		log_warning("%s", warn);
	if (*cfg->socket_group && !getgrnam(cfg->socket_group)) {
		log_warning("socket_group '%s' does not exist: only root can connect (create it "
			    "with: groupadd --system %s)",
			    cfg->socket_group, cfg->socket_group);
		sopts.group = NULL;
	}
	r = server_new(loop, &sopts, &ops, m, &m->server);
	if (r < 0) {
		if (r == -EADDRINUSE)
			log_error("another offcpud is already listening on %s", cfg->socket_path);
		else
			log_error("cannot listen on %s: %s", cfg->socket_path, strerror(-r));
		goto fail;
	}
	log_info("listening on %s",
		 server_activated(m->server) ? "the socket passed by systemd" : cfg->socket_path);
	if (server_group_error(m->server))
		log_warning("cannot give the socket to group '%s' (%s): only root can connect",
			    cfg->socket_group, strerror(server_group_error(m->server)));

	uv_timer_start(&m->drain_timer, drain_timer_cb, cfg->drain_interval_ms,
		       cfg->drain_interval_ms);
	if (sd_watchdog_enabled(0, &watchdog_us) > 0 && watchdog_us >= 2000)
		uv_timer_start(&m->watchdog_timer, watchdog_cb, watchdog_us / 2000,
			       watchdog_us / 2000);
	*ret = m;
	return 0;
fail:
	m->stopping = true;
	shutdown_continue(m);
	return r;
}

static void manager_free_cb(uv_handle_t *h)
{
	struct manager *m = h->data;

	if (--m->handles_open == 0)
		free(m);
}

/*
 * The last step of stopping, once no drain and no store job is running:
 * captures still running get an error reply, the programs are detached, the
 * socket goes, the store is closed.
 */
static void manager_free(struct manager *m)
{
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct capture *c = m->captures[i];

		if (!c)
			continue;
		if (c->conn) {
			reply_error(c->conn, PROTO_ERR_INTERNAL, "offcpud is shutting down");
			server_conn_set_data(c->conn, NULL);
		}
		m->captures[i] = NULL;
		uv_close((uv_handle_t *)&c->timer, capture_free_cb);
	}
	server_free(m->server);
	unwinder_free(m->unwinder); /* before the maps it writes go */
	collector_free(m->collector);
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		request_probes_free(&m->requests[i]);
	symbolizer_free(m->symbolizer);
	profile_free(m->window);
	hashtab_free(m->window_hists);
	store_queue_free(m->store_queue);
	store_close(m->store);
	state_lock_release(m->state_lock_fd);
	m->handles_open = 2;
	uv_close((uv_handle_t *)&m->drain_timer, manager_free_cb);
	uv_close((uv_handle_t *)&m->watchdog_timer, manager_free_cb);
}

static void store_idle_cb(void *arg)
{
	shutdown_continue(arg);
}

/* Stopping goes on when the drain under way and the store jobs are done. */
static void shutdown_continue(struct manager *m)
{
	if (m->draining || m->probe_works || m->pt_work || m->load_works)
		return; /* drain_after_cb, probe_after_cb, pt_after_cb or load_after_cb calls again
			 */
	if (m->store_queue && !store_queue_idle(m->store_queue)) {
		store_queue_on_idle(m->store_queue, store_idle_cb, m);
		return;
	}
	manager_free(m);
}

void manager_shutdown(struct manager *m)
{
	if (!m || m->stopping)
		return;
	m->stopping = true;
	atomic_store(&m->pt_stop, true);
	uv_timer_stop(&m->drain_timer);
	uv_timer_stop(&m->watchdog_timer);
	if (m->continuous) {
		/* One last drain so the open window is stored whole. */
		for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
			if (m->continuous_slots & (1u << i))
				collector_slot_deactivate(m->collector, i);
		drain_start(m);
		return;
	}
	shutdown_continue(m);
}
