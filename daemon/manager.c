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
#include "file_ids.h"
#include "proc_files.h"
#include "symbolizer.h"
#include "cpython_code.h"
#include "unwinder.h"
#include "walk_return.h"
#include "manager_internal.h"

_Static_assert(CONFIG_MAX_CAPTURES == OFFCPU_MAX_SLOTS - 1, "a slot for each capture");

void manager_reply_error(struct server_conn *conn, const char *code, const char *message)
{
	server_conn_send(conn, proto_reply_error(code, message));
}

/* ---- requests ---- */

/* A reply that a store job worked out on a worker, to conn (referenced until
 * then: a reply to a client gone meanwhile is dropped). */
static void store_reply_cb(void *arg, char *line)
{
	struct server_conn *conn = arg;

	if (line)
		server_conn_send(conn, line);
	else
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "out of memory in the reply");
	server_conn_unref(conn);
}

static bool accept_cb(struct server_conn *conn, char *why, size_t why_size, void *userdata)
{
	struct manager *m = userdata;

	return access_may_connect(&m->access, server_conn_client(conn), why, why_size);
}

static void request_cb(struct server_conn *conn, const char *line, size_t len, void *userdata)
{
	struct manager *m = userdata;
	struct store_jobs_export_setup setup;
	struct proto_request *req;
	struct capture *c;
	char err[256];
	int r = 0;

	/* struct proto_request holds two id arrays: too big for the stack. */
	req = malloc(sizeof(*req));
	if (!req) {
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	if (proto_request_parse(line, len, req, err, sizeof(err)) < 0) {
		manager_reply_error(conn, PROTO_ERR_BAD_REQUEST, err);
		free(req);
		return;
	}
	switch (req->cmd) {
	case PROTO_CMD_STATUS:
		manager_handle_status(m, conn);
		break;
	case PROTO_CMD_CAPTURE:
		manager_handle_capture(m, conn, &req->capture);
		break;
	case PROTO_CMD_WINDOWS:
		server_conn_ref(conn);
		r = store_jobs_windows(m->store_queue, &req->windows, store_reply_cb, conn);
		break;
	case PROTO_CMD_EXPORT:
		if (!manager_cgroups_ready(m, conn, &req->export.who))
			break;
		manager_window_export_setup(m, &setup);
		server_conn_ref(conn);
		r = store_jobs_export_noted(m->store_queue, &req->export, &setup, store_reply_cb,
					    conn, err, sizeof(err));
		break;
	case PROTO_CMD_HIST:
		if (!manager_cgroups_ready(m, conn, &req->hist.who))
			break;
		server_conn_ref(conn);
		r = store_jobs_hist(m->store_queue, &req->hist, store_reply_cb, conn);
		break;
	case PROTO_CMD_LATENCY:
		manager_handle_latency(m, conn, &req->latency);
		break;
	case PROTO_CMD_HEATMAP:
		server_conn_ref(conn);
		r = store_jobs_heatmap(m->store_queue, &req->heatmap, store_reply_cb, conn);
		break;
	case PROTO_CMD_BLOCKED:
		manager_handle_blocked(m, conn, &req->blocked);
		break;
	case PROTO_CMD_PUSH:
		manager_handle_push(m, conn, &req->push);
		break;
	case PROTO_CMD_STOP:
		c = server_conn_get_data(conn);
		if (c)
			manager_capture_end(m, c);
		else
			manager_reply_error(conn, PROTO_ERR_BAD_REQUEST,
					    "no capture is running on this connection");
		break;
	}
	if (r < 0) { /* a store job not queued: store_reply_cb won't come */
		if (r == -EINVAL)
			manager_reply_error(conn, PROTO_ERR_BAD_REQUEST, err);
		else
			manager_reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		server_conn_unref(conn);
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
	manager_capture_end(m, c);
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

static int start_store(struct manager *m)
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
			log_error(
				"another offcpud (pid %ld) is using the database %s (it holds %s): "
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
	m->cap.next_capture_id = last_stored_capture_id(m->store);
	store_stats(m->store, &m->windows.store_stats);
	r = store_queue_new(m->loop, m->store, &m->store_queue);
	if (r < 0)
		log_error("out of memory");
	return r;
}

/* Loads the scheduler core of the BPF programs (tracefs first: fileio
 * attaches through it) and the unwinder that fills their tables. */
static int start_collector(struct manager *m)
{
	const struct config *cfg = &m->cfg;
	const char *why;
	struct collector_options copts = {
		.agg_map_entries = cfg->agg_map_entries,
		.stack_map_entries = cfg->stack_map_entries,
		.trace_self = cfg->trace_self,
		.unwind_dwarf = cfg->unwind == CONFIG_UNWIND_DWARF,
		.unwind_max_depth = cfg->unwind_max_depth,
		.python_frames = cfg->python_frames,
		.defer_walks = cfg->sampled_walk != CONFIG_SAMPLED_WALK_SWITCH_OUT,
		.walk_return = cfg->sampled_walk == CONFIG_SAMPLED_WALK_RSEQ ? COLLECTOR_RETURN_RSEQ
			       : cfg->sampled_walk == CONFIG_SAMPLED_WALK_AUTO
				       ? COLLECTOR_RETURN_SWITCHABLE
				       : COLLECTOR_RETURN_TASK_WORK,
		.stack_cache = cfg->stack_cache,
		.stack_cache_audit = cfg->stack_cache_audit,
		.unwind_rows = cfg->unwind_rows,
		.unwind_processes = cfg->unwind_processes,
		.oncpu_frequency = cfg->oncpu_frequency,
		.bpf_stats = cfg->bpf_stats,
		.attach = cfg->tracepoint == CONFIG_TRACEPOINT_TP_BTF	? COLLECTOR_ATTACH_TP_BTF
			  : cfg->tracepoint == CONFIG_TRACEPOINT_RAW_TP ? COLLECTOR_ATTACH_RAW_TP
									: COLLECTOR_ATTACH_AUTO,
	};
	struct unwinder_maps umaps;
	char warn[512];
	int r;

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
		return r;
	}
	m->blocked.loaded_ns = clock_monotonic_ns();
	log_info("sched_switch program attached (%s)", collector_tracepoint(m->collector));
	m->walk_return.switchable = collector_walk_return_switchable(m->collector) &&
				    cfg->sampled_walk == CONFIG_SAMPLED_WALK_AUTO;
	if (m->walk_return.switchable)
		walk_return_rseq(false, &(struct walk_return_rates){ 0 }, m->walk_return.why,
				 sizeof(m->walk_return.why));
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		struct collector_group_status st;

		collector_group_status(m->collector, g, &st);
		if (st.state == COLLECTOR_GROUP_UNAVAILABLE)
			log_info("%s (captures that need it are refused)",
				 manager_group_unavailable(m, g, warn, sizeof(warn)));
	}
	log_info("the programs of other kinds load when a capture first needs them "
		 "(on-CPU sampling at %u Hz per CPU)",
		 cfg->oncpu_frequency);
	m->stats.n_programs = collector_programs(m->collector, m->stats.programs, COLLECTOR_MAX_PROGRAMS);
	if (cfg->bpf_stats && !collector_bpf_stats(m->collector))
		log_info(
			"the kernel refused BPF run-time stats: status shows no program run times");
	r = proc_files_new(PROC_ROOT, &m->proc_files);
	if (r >= 0)
		r = file_ids_new(OFFCPU_FRAME_FILE_IDS - 1, FILE_IDS_KEEP_S, &m->file_ids);
	if (r >= 0)
		r = drain_names_new(&m->drain.kept_names);
	if (r < 0) {
		log_error("out of memory");
		return r;
	}
	if (collector_unwind_maps(m->collector, &umaps)) {
		r = unwinder_new(&umaps, PROC_ROOT, m->proc_files, m->file_ids, &m->unwinder);
		if (r < 0) {
			log_error("cannot start the unwinder: %s", strerror(-r));
			return r;
		}
		log_info("user stacks: unwind tables (up to %u rows), frame pointers elsewhere",
			 umaps.rows_max);
	} else {
		log_info("user stacks: frame pointers%s",
			 cfg->unwind == CONFIG_UNWIND_DWARF ? " (unwind tables need tp_btf)" : "");
	}
	if (!collector_in_progress(m->collector, &why))
		log_warning("blocks are counted only when they end: %s (a window or capture holds "
			    "no time of blocks still open at its end)",
			    why);
	if (!collector_sched_frames(m->collector, &why))
		log_info("kernel stacks read off the CPU lack the __sched frames (schedule, "
			 "mutex_lock, do_nanosleep...): %s",
			 why);
	return 0;
}

/* Sets the access policy and listens. */
static int start_server(struct manager *m)
{
	const struct config *cfg = &m->cfg;
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
	char warn[512];
	int r;

	access_policy_init(&m->access, cfg, warn, sizeof(warn));
	if (*warn)
		log_warning("%s", warn);
	if (*cfg->socket_group && !getgrnam(cfg->socket_group)) {
		log_warning("socket_group '%s' does not exist: only root can connect (create it "
			    "with: groupadd --system %s)",
			    cfg->socket_group, cfg->socket_group);
		sopts.group = NULL;
	}
	r = server_new(m->loop, &sopts, &ops, m, &m->server);
	if (r < 0) {
		if (r == -EADDRINUSE)
			log_error("another offcpud is already listening on %s", cfg->socket_path);
		else
			log_error("cannot listen on %s: %s", cfg->socket_path, strerror(-r));
		return r;
	}
	log_info("listening on %s",
		 server_activated(m->server) ? "the socket passed by systemd" : cfg->socket_path);
	if (server_group_error(m->server))
		log_warning("cannot give the socket to group '%s' (%s): only root can connect",
			    cfg->socket_group, strerror(server_group_error(m->server)));
	return 0;
}

int manager_new(uv_loop_t *loop, const struct config *cfg, struct manager **ret)
{
	uint64_t watchdog_us = 0;
	struct manager *m;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return log_error("out of memory"), -ENOMEM;
	m->loop = loop;
	m->cfg = *cfg;
	m->state_lock_fd = -1;
	m->stats.started_ns = clock_monotonic_ns();
	loop->data = m;
	uv_timer_init(loop, &m->drain.drain_timer);
	m->drain.drain_timer.data = m;
	uv_timer_init(loop, &m->watchdog_timer);
	m->watchdog_timer.data = m;

	r = start_store(m);
	if (r >= 0)
		r = start_collector(m);
	if (r >= 0)
		r = manager_cgroups_start(m);
	if (r < 0)
		goto fail;
	r = symbolizer_new(PROC_ROOT, cfg->debug_root, &m->symbolizer);
	if (r < 0) {
		log_error("cannot set up the symbolizer: %s", strerror(-r));
		goto fail;
	}
	r = cpython_code_new(&m->cpython);
	if (r < 0) {
		log_error("cannot set up the symbolizer: %s", strerror(-r));
		goto fail;
	}
	symbolizer_use_proc_files(m->symbolizer, m->proc_files);
	symbolizer_use_file_ids(m->symbolizer, m->file_ids);
	if (cfg->continuous) {
		r = manager_continuous_start(m);
		if (r < 0)
			goto fail;
	}
	r = start_server(m);
	if (r >= 0)
		r = manager_push_start(m);
	if (r < 0)
		goto fail;

	uv_timer_start(&m->drain.drain_timer, manager_drain_timer_cb, cfg->drain_interval_ms,
		       cfg->drain_interval_ms);
	if (sd_watchdog_enabled(0, &watchdog_us) > 0 && watchdog_us >= 2000)
		uv_timer_start(&m->watchdog_timer, watchdog_cb, watchdog_us / 2000,
			       watchdog_us / 2000);
	*ret = m;
	return 0;
fail:
	m->stopping = true;
	manager_shutdown_continue(m);
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
		struct capture *c = m->cap.captures[i];

		if (!c)
			continue;
		if (c->conn) {
			manager_reply_error(c->conn, PROTO_ERR_INTERNAL,
					    "offcpud is shutting down");
			server_conn_set_data(c->conn, NULL);
		}
		m->cap.captures[i] = NULL;
		uv_close((uv_handle_t *)&c->timer, manager_capture_free_cb);
	}
	server_free(m->server);
	unwinder_free(m->unwinder); /* before the maps it writes go */
	collector_free(m->collector);
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++)
		request_probes_free(&m->cap.requests[i]);
	symbolizer_free(m->symbolizer);
	cpython_code_free(m->cpython);
	manager_cgroups_free(m);
	proc_files_free(m->proc_files); /* after the unwinder and symbolizer that use it */
	file_ids_free(m->file_ids);	/* likewise */
	manager_window_free(m);
	sampling_carry_release(&m->drain.carry);
	drain_names_free(m->drain.kept_names);
	manager_push_stop(m); /* its threads' connections first */
	store_queue_free(m->store_queue);
	store_close(m->store);
	state_lock_release(m->state_lock_fd);
	m->handles_open = 2;
	uv_close((uv_handle_t *)&m->drain.drain_timer, manager_free_cb);
	uv_close((uv_handle_t *)&m->watchdog_timer, manager_free_cb);
}

static void store_idle_cb(void *arg)
{
	manager_shutdown_continue(arg);
}

/* Stopping goes on when the drain under way and the store jobs are done. */
void manager_shutdown_continue(struct manager *m)
{
	if (m->drain.draining || m->cap.probe_works || m->pt.pt_work || m->cap.load_works ||
	    m->cap.reply_works)
		return; /* drain_after_cb, probe_after_cb, pt_after_cb, load_after_cb or
			 * reply_after_cb calls again */
	if (m->store_queue && !store_queue_idle(m->store_queue)) {
		store_queue_on_idle(m->store_queue, store_idle_cb, m);
		return;
	}
	manager_blocked_drop(m); /* asked after the last drain began */
	manager_free(m);
}

void manager_shutdown(struct manager *m)
{
	if (!m || m->stopping)
		return;
	m->stopping = true;
	atomic_store(&m->pt.pt_stop, true);
	uv_timer_stop(&m->drain.drain_timer);
	uv_timer_stop(&m->watchdog_timer);
	if (m->windows.continuous) {
		/* One last drain so the open window is stored whole, with the
		 * blocks still open (its thread turns the slots off after the
		 * in-progress pass). */
		manager_drain_start(m);
		return;
	}
	manager_shutdown_continue(m);
}
