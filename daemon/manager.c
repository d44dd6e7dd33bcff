/* manager: see manager.h. */
#include "manager.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>

#include "capture.h"
#include "collector.h"
#include "drain.h"
#include "log.h"
#include "proto.h"
#include "server.h"
#include "symbolizer.h"

#define PROC_ROOT "/proc"

struct manager {
	uv_loop_t *loop;
	struct config cfg;
	struct collector *collector;
	struct symbolizer *symbolizer;
	struct server *server;
	uv_timer_t drain_timer;
	uv_work_t drain_work;
	struct drain_result drain_result;
	uint32_t drain_tgids[OFFCPU_MAX_SLOTS * PROTO_MAX_IDS]; /* targets to prime */
	size_t n_drain_tgids;
	int drain_error;
	bool draining;
	bool stopping;	  /* free once the drain under way is done */
	bool drain_again; /* a capture ended during a drain: run another at once */
	uint64_t drains_started;
	uint64_t next_capture_id;
	struct capture *captures[OFFCPU_MAX_SLOTS]; /* by slot */
	uint64_t started_ns;
	uint64_t counters[OFFCPU_CNT_MAX]; /* as of the last drain */
	uint64_t counters_prev[OFFCPU_CNT_MAX];
	uint64_t counters_ns, counters_prev_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void notify_status(struct manager *m)
{
	unsigned running = 0;

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		running += m->captures[i] != NULL;
	sd_notifyf(0, "STATUS=attached (%s); %u capture%s running",
		   collector_tracepoint(m->collector), running, running == 1 ? "" : "s");
}

static void reply_error(struct server_conn *conn, const char *code, const char *message)
{
	server_conn_send(conn, proto_reply_error(code, message));
}

/* ---- drains ---- */

static void drain_start(struct manager *m);
static void manager_free(struct manager *m);

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

/* The capture's last rows are in: reply (if its client is still there). */
static void capture_finish(struct manager *m, struct capture *c)
{
	if (c->conn) {
		bool exited = capture_target_exited(PROC_ROOT, &c->req);
		char *line = capture_reply(c, m->counters, exited);

		if (line)
			server_conn_send(c->conn, line);
		else
			reply_error(c->conn, PROTO_ERR_INTERNAL,
				    "out of memory formatting the reply");
		server_conn_set_data(c->conn, NULL);
	}
	m->captures[c->slot] = NULL;
	collector_slot_release(m->collector, c->slot);
	uv_close((uv_handle_t *)&c->timer, capture_free_cb);
}

static void drain_after_cb(uv_work_t *req, int status)
{
	struct manager *m = req->data;
	struct drain_result *r = &m->drain_result;
	uint64_t completed = m->drains_started;

	m->draining = false;
	if (m->stopping) {
		drain_result_release(r);
		manager_free(m);
		return;
	}
	if (status < 0 || m->drain_error < 0)
		log_warning("draining the kernel maps failed: %s",
			    strerror(-(status < 0 ? status : m->drain_error)));

	memcpy(m->counters_prev, m->counters, sizeof(m->counters));
	m->counters_prev_ns = m->counters_ns;
	memcpy(m->counters, r->counters, sizeof(m->counters));
	m->counters_ns = now_ns();

	for (size_t i = 0; i < r->n_rows; i++) {
		struct capture *c = m->captures[r->rows[i].key.slot % OFFCPU_MAX_SLOTS];

		if (c && profile_add(c->profile, &r->rows[i]) < 0)
			log_warning("capture %llu: out of memory, a row was lost",
				    (unsigned long long)c->id);
	}
	drain_result_release(r);

	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		struct capture *c = m->captures[i];

		if (c && c->phase == CAPTURE_ENDING && c->final_drain <= completed)
			capture_finish(m, c);
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
	if (c->phase != CAPTURE_RUNNING)
		return;
	uv_timer_stop(&c->timer);
	collector_slot_deactivate(m->collector, c->slot);
	c->end_ns = now_ns();
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

static void handle_capture(struct manager *m, struct server_conn *conn,
			   const struct proto_capture_request *req)
{
	struct collector_filter filter;
	struct capture *c;
	char err[128];
	int r;

	if (server_conn_get_data(conn)) {
		reply_error(conn, PROTO_ERR_BUSY,
			    "a capture is already running on this connection");
		return;
	}
	if (req->seconds > m->cfg.max_capture_seconds) {
		snprintf(err, sizeof(err), "seconds must be at most %u (max_capture_seconds)",
			 m->cfg.max_capture_seconds);
		reply_error(conn, PROTO_ERR_BAD_REQUEST, err);
		return;
	}
	if (capture_check_targets(PROC_ROOT, req, err, sizeof(err)) < 0) {
		reply_error(conn, PROTO_ERR_NO_SUCH_PID, err);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || profile_new(&c->profile) < 0) {
		free(c);
		reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	c->req = *req;
	capture_filter(&c->req, &filter);
	collector_counters(m->collector, c->counters_start);
	r = collector_slot_add(m->collector, &filter, &c->slot);
	if (r < 0) {
		profile_free(c->profile);
		free(c);
		if (r == -EBUSY)
			reply_error(conn, PROTO_ERR_BUSY, "all capture slots are in use");
		else if (r == -ENOSPC)
			reply_error(conn, PROTO_ERR_BUSY, "the pid/tid filter maps are full");
		else
			reply_error(conn, PROTO_ERR_INTERNAL, strerror(-r));
		return;
	}
	c->id = ++m->next_capture_id;
	c->conn = conn;
	c->start_ns = now_ns();
	c->phase = CAPTURE_RUNNING;
	uv_timer_init(m->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, capture_timer_cb, (uint64_t)req->seconds * 1000, 0);
	m->captures[c->slot] = c;
	server_conn_set_data(conn, c);
	notify_status(m);
	drain_start(m); /* reads the targets' maps while they surely exist */
}

/* ---- status ---- */

static const struct {
	unsigned idx;
	const char *name;
} counter_names[OFFCPU_CNT_MAX] = {
	{ OFFCPU_CNT_SWITCHES, "switches" },
	{ OFFCPU_CNT_RECORDED, "recorded" },
	{ OFFCPU_CNT_DROP_START_ALLOC, "drop_start_alloc" },
	{ OFFCPU_CNT_DROP_NEGATIVE_DELTA, "drop_negative_delta" },
	{ OFFCPU_CNT_DROP_AGG_FULL, "drop_agg_map_full" },
	{ OFFCPU_CNT_DROP_STACK_FULL, "drop_stack_map_full" },
	{ OFFCPU_CNT_DROP_KSTACK_ERROR, "drop_kernel_stack_error" },
	{ OFFCPU_CNT_DROP_USTACK_ERROR, "drop_user_stack_error" },
	{ OFFCPU_CNT_BUFFER_MISSING, "buffer_missing" },
};

static double rate(const struct manager *m, unsigned idx)
{
	double secs = (m->counters_ns - m->counters_prev_ns) / 1e9;

	if (!m->counters_prev_ns || secs <= 0)
		return 0;
	return (m->counters[idx] - m->counters_prev[idx]) / secs;
}

static void handle_status(struct manager *m, struct server_conn *conn)
{
	struct proto_program prog = { collector_program_name(m->collector), true };
	struct proto_counter counters[OFFCPU_CNT_MAX];
	uint64_t now[OFFCPU_CNT_MAX];
	unsigned running = 0;
	struct proto_status st;

	collector_counters(m->collector, now);
	for (unsigned i = 0; i < OFFCPU_CNT_MAX; i++) {
		counters[i].name = counter_names[i].name;
		counters[i].value = now[counter_names[i].idx];
	}
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		running += m->captures[i] != NULL;
	st = (struct proto_status){
		.version = OFFCPU_VERSION,
		.uptime_s = (now_ns() - m->started_ns) / 1000000000ULL,
		.pid = getpid(),
		.tracepoint = collector_tracepoint(m->collector),
		.programs = &prog,
		.n_programs = 1,
		.slots_active = collector_slots_active(m->collector),
		.slots_max = OFFCPU_MAX_SLOTS,
		.captures_running = running,
		.switches_per_s = rate(m, OFFCPU_CNT_SWITCHES),
		.recorded_per_s = rate(m, OFFCPU_CNT_RECORDED),
		.counters = counters,
		.n_counters = OFFCPU_CNT_MAX,
	};
	server_conn_send(conn, proto_reply_status(&st));
}

/* ---- requests ---- */

static void request_cb(struct server_conn *conn, const char *line, size_t len, void *userdata)
{
	struct manager *m = userdata;
	struct proto_request *req;
	struct capture *c;
	char err[256];

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

int manager_new(uv_loop_t *loop, const struct config *cfg, struct manager **ret)
{
	struct collector_options copts = {
		.agg_map_entries = cfg->agg_map_entries,
		.stack_map_entries = cfg->stack_map_entries,
		.trace_self = cfg->trace_self,
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
	};
	struct server_ops ops = { .request = request_cb, .closed = closed_cb };
	struct manager *m;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return log_error("out of memory"), -ENOMEM;
	m->loop = loop;
	m->cfg = *cfg;
	m->started_ns = now_ns();
	loop->data = m;

	libbpf_set_print(libbpf_print_cb);
	r = collector_new(&copts, &m->collector);
	if (r < 0) {
		log_error("cannot load the BPF programs: %s%s", strerror(-r),
			  r == -EPERM ? " (offcpud needs root, or CAP_BPF and CAP_PERFMON)" : "");
		goto fail;
	}
	log_info("sched_switch program attached (%s)", collector_tracepoint(m->collector));
	r = symbolizer_new(PROC_ROOT, &m->symbolizer);
	if (r < 0) {
		log_error("cannot set up the symbolizer: %s", strerror(-r));
		goto fail;
	}
	r = server_new(loop, &sopts, &ops, m, &m->server);
	if (r < 0) {
		if (r == -EADDRINUSE)
			log_error("another offcpud is already listening on %s", cfg->socket_path);
		else if (r == -ENOENT && cfg->socket_group[0])
			log_error("socket_group '%s' does not exist", cfg->socket_group);
		else
			log_error("cannot listen on %s: %s", cfg->socket_path, strerror(-r));
		goto fail;
	}
	log_info("listening on %s",
		 server_activated(m->server) ? "the socket passed by systemd" : cfg->socket_path);

	uv_timer_init(loop, &m->drain_timer);
	m->drain_timer.data = m;
	uv_timer_start(&m->drain_timer, drain_timer_cb, cfg->drain_interval_ms,
		       cfg->drain_interval_ms);
	*ret = m;
	return 0;
fail:
	manager_free(m);
	return r;
}

static void manager_free_cb(uv_handle_t *h)
{
	free(h->data);
}

/* Precondition: no drain is running (it uses the collector). */
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
	collector_free(m->collector);
	symbolizer_free(m->symbolizer);
	if (m->drain_timer.data) {
		uv_close((uv_handle_t *)&m->drain_timer, manager_free_cb);
	} else {
		free(m);
	}
}

void manager_shutdown(struct manager *m)
{
	if (!m || m->stopping)
		return;
	m->stopping = true;
	if (m->drain_timer.data)
		uv_timer_stop(&m->drain_timer);
	if (!m->draining)
		manager_free(m);
}
