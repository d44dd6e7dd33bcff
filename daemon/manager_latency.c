/* manager_latency: Intel PT sessions (the latency command). */

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

/* ---- Intel PT latency ----
 *
 * A PT session records for its seconds on a worker thread (the perf rings
 * are read every 20 ms there) and stores the trace; the reply names the
 * file, which offcpuctl analyses itself: decoding is the heavy part, and
 * it runs with the client's resources, not the daemon's. One session at a
 * time: each thread's AUX area is locked memory.
 */

/* The config's keys for PT recordings, as pt_capture takes them. */
void manager_pt_limits(const struct config *cfg, struct pt_capture_limits *ret)
{
	*ret = (struct pt_capture_limits){
		.dir = cfg->pt_dir,
		.keep = cfg->pt_keep,
		.buffer_bytes = cfg->pt_buffer_bytes,
		.max_bytes = cfg->pt_max_bytes,
		.max_threads = cfg->pt_max_threads,
		.sideband_only = cfg->pt_event == CONFIG_PT_EVENT_SIDEBAND,
		.share_group = cfg->socket_group,
	};
}

static void pt_work_cb(uv_work_t *req)
{
	struct pt_work *pw = req->data;
	struct pt_capture_limits limits;
	struct pt_capture_opts o = { .limits = &limits,
				     .req = &pw->req,
				     .stop = &pw->m->pt.pt_stop };

	manager_pt_limits(&pw->m->cfg, &limits);

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
		return manager_request_error_code(r); /* the function, the process */
	}
}

static void pt_after_cb(uv_work_t *req, int status)
{
	struct pt_work *pw = req->data;
	struct manager *m = pw->m;
	char *line;

	m->pt.pt_work = NULL;
	if (status < 0)
		manager_reply_error(pw->conn, PROTO_ERR_INTERNAL, "the PT session was cancelled");
	else if (pw->error < 0)
		manager_reply_error(pw->conn, pt_error_code(pw->error), pw->err);
	else if ((line = proto_reply_pt_trace(&pw->result)))
		server_conn_send(pw->conn, line);
	else
		manager_reply_error(pw->conn, PROTO_ERR_INTERNAL, "out of memory");
	server_conn_unref(pw->conn);
	free(pw);
	if (m->stopping)
		manager_shutdown_continue(m);
}

void manager_handle_latency(struct manager *m, struct server_conn *conn,
			    const struct proto_latency_request *req)
{
	/* recording a process is capturing it: the same rules */
	struct proto_capture_request as_capture = { .pids = { req->pid }, .n_pids = 1 };
	struct pt_work *pw;

	if (!manager_recording_allowed(m, conn, &as_capture, req->seconds))
		return;
	if (m->pt.pt_work) {
		manager_reply_error(
			conn, PROTO_ERR_BUSY,
			"a PT session is running (one at a time); try again when it ends");
		return;
	}
	pw = calloc(1, sizeof(*pw));
	if (!pw) {
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	*pw = (struct pt_work){ .m = m, .conn = conn, .req = *req };
	pw->work.data = pw;
	if (uv_queue_work(m->loop, &pw->work, pt_work_cb, pt_after_cb) < 0) {
		free(pw);
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "cannot start a worker");
		return;
	}
	server_conn_ref(conn);
	m->pt.pt_work = pw;
}
