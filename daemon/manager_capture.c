/* manager_capture: a capture from its request to its reply: the program
 * groups it needs loaded, a slot, its request probes and unwind tables
 * prepared, its end and its last drain. */

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
#include "manager_internal.h"

/* Captures that count (or have counted and are ending); not those still
 * attaching their probes, so a client may start its workload once it sees
 * its capture running. */
unsigned manager_captures_running(const struct manager *m)
{
	unsigned running = 0;

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		running += m->cap.captures[i] && m->cap.captures[i]->phase != CAPTURE_ATTACHING;
	return running;
}

/* Captures holding a slot, whatever their phase. */
static unsigned captures_held(const struct manager *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		n += m->cap.captures[i] != NULL;
	/* and those waiting for their programs, or for their reply */
	return n + m->cap.load_works + m->cap.reply_works;
}

void manager_capture_free_cb(uv_handle_t *h)
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
	pw->error = request_probes_attach(&pw->m->cap.requests[pw->slot], pw->m->collector,
					  pw->slot, specs, r->n_requests, r->pids, r->n_pids,
					  pw->err, sizeof(pw->err));
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
	m->cap.probe_works++;
	return 0;
}

/* Frees a slot a capture has finished with, once its probes are gone. */
static void slot_release(struct manager *m, unsigned slot)
{
	collector_slot_deactivate(m->collector, slot);
	if (m->cap.requests[slot].n_specs && !m->stopping && probe_work_start(m, NULL, slot) == 0)
		return; /* probe_after_cb releases it */
	collector_slot_release(m->collector, slot);
	request_probes_free(&m->cap.requests[slot]);
}

/* ---- the reply ----
 *
 * Filtered, formatted and drawn on a worker thread: a large capture's flame
 * graph takes seconds to draw, which the event loop must not wait. The slot
 * stays taken until the reply is sent: its request statistics point into
 * the slot's probes.
 */

struct reply_work {
	uv_work_t work;
	struct manager *m;
	struct capture *c;
	struct server_conn *conn; /* referenced */
	uint64_t counters[OFFCPU_CNT_MAX];
	bool exited;
	struct proto_request_stats requests[OFFCPU_MAX_REQUESTS];
	struct proto_request_function funcs[ELF_FUNCS_MAX];
	size_t n_requests;
	char *line;
};

static void reply_work_cb(uv_work_t *req)
{
	struct reply_work *rw = req->data;

	rw->line = capture_reply(rw->c, rw->counters, rw->exited, rw->requests, rw->n_requests);
}

/* Sends the reply, stores the capture's window (as the reply showed it) and
 * frees the capture and its slot. */
static void reply_after_cb(uv_work_t *req, int status)
{
	struct reply_work *rw = req->data;
	struct manager *m = rw->m;
	struct capture *c = rw->c;
	struct store_window w = {
		.start_ms = c->start_ms,
		.end_ms = c->start_ms + (int64_t)((c->end_ns - c->start_ns) / 1000000) + 1,
		.capture_id = c->id,
		.kind = (int32_t)c->req.kind,
	};

	(void)status; /* never cancelled: the loop runs until the work is done */
	_Static_assert(sizeof(w.targets) > CAPTURE_TARGETS_MAX, "a capture's targets fit");
	capture_targets_describe(&c->req, w.targets, sizeof(w.targets));
	m->cap.reply_works--;
	if (rw->line)
		server_conn_send(rw->conn, rw->line);
	else
		manager_reply_error(rw->conn, PROTO_ERR_INTERNAL,
				    "out of memory formatting the reply");
	server_conn_unref(rw->conn);
	/* Kept for "export --capture ID"; a cancelled capture is not. */
	if (store_jobs_write(m->store_queue, c->profile, NULL, &w, manager_window_written, m) < 0)
		log_warning("out of memory: capture %llu not stored", (unsigned long long)c->id);
	c->profile = NULL;
	slot_release(m, c->slot);
	uv_close((uv_handle_t *)&c->timer, manager_capture_free_cb);
	free(rw);
	if (m->stopping)
		manager_shutdown_continue(m);
}

/* Queues c's reply on a worker. 0 or -errno (nothing queued). */
static int reply_work_start(struct manager *m, struct capture *c)
{
	struct reply_work *rw = calloc(1, sizeof(*rw));
	int r;

	if (!rw)
		return -ENOMEM;
	rw->m = m;
	rw->c = c;
	rw->conn = c->conn;
	memcpy(rw->counters, m->stats.counters, sizeof(rw->counters));
	rw->exited = capture_target_exited(PROC_ROOT, &c->req);
	rw->n_requests = request_probes_stats(&m->cap.requests[c->slot], m->collector, c->slot,
					      rw->requests, rw->funcs, ELF_FUNCS_MAX);
	rw->work.data = rw;
	r = uv_queue_work(m->loop, &rw->work, reply_work_cb, reply_after_cb);
	if (r < 0) {
		free(rw);
		return r;
	}
	server_conn_ref(rw->conn);
	m->cap.reply_works++;
	return 0;
}

/* The last rows are in: reply (if its client is still there). */
void manager_capture_finish(struct manager *m, struct capture *c)
{
	m->cap.captures[c->slot] = NULL;
	if (c->conn) {
		server_conn_set_data(c->conn, NULL);
		if (reply_work_start(m, c) == 0)
			return; /* reply_after_cb releases the slot */
		manager_reply_error(c->conn, PROTO_ERR_INTERNAL,
				    "out of memory formatting the reply");
	}
	slot_release(m, c->slot);
	uv_close((uv_handle_t *)&c->timer, manager_capture_free_cb);
}

/* ---- captures ---- */

/* Stops counting at the next drain, which counts the capture's blocks still
 * open and turns its slot off (drain_work_cb()); the reply follows it. */
void manager_capture_end(struct manager *m, struct capture *c)
{
	if (c->phase == CAPTURE_LOADING || c->phase == CAPTURE_ATTACHING)
		c->stop_requested = true;
	if (c->phase != CAPTURE_RUNNING)
		return;
	uv_timer_stop(&c->timer);
	c->end_ns = clock_monotonic_ns(); /* until that drain sets it */
	c->phase = CAPTURE_ENDING;
	/* The next drain to start: one already running began before this. */
	c->final_drain = m->drain.drains_started + 1;
	manager_drain_start(m);
}

static void capture_timer_cb(uv_timer_t *t)
{
	struct capture *c = t->data;
	struct manager *m = t->loop->data;

	manager_capture_end(m, c);
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
const char *manager_group_unavailable(struct manager *m, unsigned group, char *buf, size_t size)
{
	struct collector_group_status st;

	collector_group_status(m->collector, group, &st);
	snprintf(buf, size, "%s unavailable: %s", group_what(group), st.reason);
	return buf;
}

/* What went wrong when a request's probes were set up. */
const char *manager_request_error_code(int r)
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
static void run_capture(struct manager *m, struct capture *c)
{
	struct proto_capture_started started = { .id = c->id, .seconds = c->req.seconds };
	char *line;

	/* From the slot's start: where the in-progress pass counts the blocks
	 * begun before from. */
	c->start_ns = collector_slot_activate(m->collector, c->slot);
	c->start_ms = clock_realtime_ms();
	c->phase = CAPTURE_RUNNING;
	uv_update_time(m->loop); /* attaching took a while: time the capture from now */
	uv_timer_start(&c->timer, capture_timer_cb, (uint64_t)c->req.seconds * 1000, 0);
	/* The client may now start what it wants recorded (offcpuctl capture
	 * -- CMD lets its command exec). */
	if (c->req.notify_started) {
		line = proto_reply_capture_started(&started);
		if (line)
			server_conn_send(c->conn, line);
		else
			log_warning("out of memory: capture %llu not announced",
				    (unsigned long long)c->id);
	}
	manager_notify_status(m);
	manager_drain_start(m); /* reads the targets' maps while they surely exist */
	if (c->stop_requested)
		manager_capture_end(m, c);
}

/* The preparing of c (tables, request probes) ended with error (0 or -errno; err
 * says why): run the capture, or answer the error and free it. */
static void attached_capture(struct manager *m, struct capture *c, int error, const char *err)
{
	if (m->stopping)
		return; /* manager_free() answers the client and frees c */
	if (error == 0 && c->conn) {
		run_capture(m, c);
		return;
	}
	if (c->conn) {
		manager_reply_error(c->conn, manager_request_error_code(error), err);
		server_conn_set_data(c->conn, NULL);
	}
	m->cap.captures[c->slot] = NULL;
	slot_release(m, c->slot);
	uv_close((uv_handle_t *)&c->timer, manager_capture_free_cb);
}

static void probe_after_cb(uv_work_t *req, int status)
{
	struct probe_work *pw = req->data;
	struct manager *m = pw->m;

	m->cap.probe_works--;
	if (pw->c) {
		attached_capture(m, pw->c, status < 0 ? status : pw->error,
				 status < 0 ? "attaching the request probes was cancelled"
					    : pw->err);
	} else {
		collector_slot_release(m->collector, pw->slot);
		request_probes_free(&m->cap.requests[pw->slot]);
	}
	free(pw);
	if (m->stopping)
		manager_shutdown_continue(m);
}

/* What every recording of processes must pass, capture or PT: its length,
 * its targets' existence, the client's right to them. Replies and returns
 * false if one fails. */
bool manager_recording_allowed(struct manager *m, struct server_conn *conn,
			       const struct proto_capture_request *req, uint32_t seconds)
{
	char err[512];

	if (seconds > m->cfg.max_capture_seconds) {
		snprintf(err, sizeof(err), "seconds must be at most %u (max_capture_seconds)",
			 m->cfg.max_capture_seconds);
		manager_reply_error(conn, PROTO_ERR_BAD_REQUEST, err);
		return false;
	}
	if (capture_check_targets(PROC_ROOT, req, err, sizeof(err)) < 0) {
		manager_reply_error(conn, PROTO_ERR_NO_SUCH_PID, err);
		return false;
	}
	if (access_check_capture(&m->access, server_conn_client(conn), req, PROC_ROOT, err,
				 sizeof(err)) < 0) {
		manager_reply_error(conn, PROTO_ERR_PERMISSION, err);
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
void manager_log_groups_loaded(struct manager *m, uint32_t groups)
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
static void discard_capture(struct capture *c)
{
	if (c->conn)
		server_conn_set_data(c->conn, NULL);
	profile_free(c->profile);
	free(c);
}

/* Takes a slot for c, whose program groups are loaded, and runs it (after
 * preparing it on a worker, if it has request probes or unwind tables to
 * set up); replies and frees c if that fails. */
static void start_capture(struct manager *m, struct capture *c)
{
	struct collector_filter filter;
	char err[512];
	unsigned group;
	int r;

	capture_filter(c, &filter);
	collector_counters(m->collector, c->counters_start);
	r = collector_slot_add(m->collector, &filter, &c->slot);
	if (r < 0) {
		if (r == -EBUSY)
			manager_reply_error(c->conn, PROTO_ERR_BUSY,
					    "all capture slots are in use");
		else if (r == -EOPNOTSUPP &&
			 (group = group_first_unavailable(m, collector_filter_groups(&filter))) <
				 COLLECTOR_GROUP_COUNT)
			manager_reply_error(c->conn, PROTO_ERR_UNSUPPORTED,
					    manager_group_unavailable(m, group, err, sizeof(err)));
		else if (r == -ENOSPC)
			manager_reply_error(c->conn, PROTO_ERR_BUSY,
					    "the pid/tid/cgroup filter maps are full");
		else
			manager_reply_error(c->conn, PROTO_ERR_INTERNAL, strerror(-r));
		discard_capture(c);
		return;
	}
	c->id = ++m->cap.next_capture_id;
	uv_timer_init(m->loop, &c->timer);
	c->timer.data = c;
	m->cap.captures[c->slot] = c;
	if (!c->req.n_requests && !(m->unwinder && c->req.n_pids)) {
		run_capture(m, c);
		return;
	}
	/* Nothing counts while its probes go in (seconds, in a busy process):
	 * its requests and its blocks both start when it runs. */
	collector_slot_deactivate(m->collector, c->slot);
	c->phase = CAPTURE_ATTACHING;
	r = probe_work_start(m, c, c->slot);
	if (r < 0)
		attached_capture(m, c, r, "cannot start preparing the capture");
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

	m->cap.load_works--;
	manager_log_groups_loaded(m, c->groups_loaded);
	if (status == 0 && lw->error < 0)
		log_warning("%s", manager_group_unavailable(m, lw->failed, err, sizeof(err)));
	if (m->stopping) {
		if (c->conn)
			manager_reply_error(c->conn, PROTO_ERR_INTERNAL,
					    "offcpud is shutting down");
		discard_capture(c);
		free(lw);
		manager_shutdown_continue(m);
		return;
	}
	if (!c->conn) {
		discard_capture(c); /* the client has gone */
	} else if (status < 0) {
		manager_reply_error(c->conn, PROTO_ERR_INTERNAL,
				    "loading the programs was cancelled");
		discard_capture(c);
	} else if (lw->error < 0) {
		manager_reply_error(c->conn, PROTO_ERR_UNSUPPORTED, err);
		discard_capture(c);
	} else {
		start_capture(m, c);
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
	m->cap.load_works++;
	return 0;
}

void manager_handle_capture(struct manager *m, struct server_conn *conn,
			    const struct proto_capture_request *req)
{
	struct collector_filter filter;
	struct collector_group_status st;
	uint32_t groups, missing = 0;
	const char *code = NULL, *why;
	struct capture *c;
	char err[1024];

	if (server_conn_get_data(conn)) {
		manager_reply_error(conn, PROTO_ERR_BUSY,
				    "a capture is already running on this connection");
		return;
	}
	if (captures_held(m) >= m->cfg.max_captures) {
		snprintf(err, sizeof(err), "%u captures are running, the limit (max_captures)",
			 m->cfg.max_captures);
		manager_reply_error(conn, PROTO_ERR_BUSY, err);
		return;
	}
	if (!manager_recording_allowed(m, conn, req, req->seconds))
		return;
	if (req->follow_children && !collector_follow_available(m->collector, &why)) {
		snprintf(err, sizeof(err), "follow_children unavailable: %s", why);
		manager_reply_error(conn, PROTO_ERR_UNSUPPORTED, err);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || profile_new(&c->profile) < 0) {
		free(c);
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	c->req = *req;
	if (!c->req.seconds) /* until stop */
		c->req.seconds = m->cfg.max_capture_seconds;
	if (!manager_cgroups_ready(m, conn, &c->req.who) ||
	    manager_cgroups_resolve(m, &c->req.who, c->cgroups, COLLECTOR_MAX_CGROUPS,
				    &c->n_cgroups, &code, err, sizeof(err)) < 0) {
		if (code) /* else ready() replied */
			manager_reply_error(conn, code, err);
		profile_free(c->profile);
		free(c);
		return;
	}
	if (c->req.sampled && !c->req.sample_period_us)
		c->req.sample_period_us = m->cfg.sample_period_us;
	c->conn = conn;
	server_conn_set_data(conn, c);
	capture_filter(c, &filter);
	if (req->kind == PROTO_KIND_FILEIO && *m->tracefs_why) {
		snprintf(err, sizeof(err), "kind fileio unavailable: %s", m->tracefs_why);
		manager_reply_error(conn, PROTO_ERR_UNSUPPORTED, err);
		discard_capture(c);
		return;
	}
	groups = collector_filter_groups(&filter);
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		if (!(groups & (1u << g)))
			continue;
		collector_group_status(m->collector, g, &st);
		if (st.state == COLLECTOR_GROUP_UNAVAILABLE) {
			manager_reply_error(conn, PROTO_ERR_UNSUPPORTED,
					    manager_group_unavailable(m, g, err, sizeof(err)));
			discard_capture(c);
			return;
		}
		if (st.state == COLLECTOR_GROUP_ON_DEMAND)
			missing |= 1u << g;
	}
	if (!missing) {
		start_capture(m, c);
		return;
	}
	c->phase = CAPTURE_LOADING;
	if (load_work_start(m, c, missing) < 0) {
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "cannot start loading the programs");
		discard_capture(c);
	}
}
