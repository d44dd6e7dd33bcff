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

/* ---- Intel PT latency ----
 *
 * A PT session records for its seconds on a worker thread (the perf rings
 * are read every 20 ms there) and stores the trace; the reply names the
 * file, which offcpuctl analyses itself: decoding is the heavy part, and
 * it runs with the client's resources, not the daemon's. One session at a
 * time: each thread's AUX area is locked memory.
 */

static void pt_work_cb(uv_work_t *req)
{
	struct pt_work *pw = req->data;
	struct pt_capture_opts o = { .cfg = &pw->m->cfg,
				     .req = &pw->req,
				     .stop = &pw->m->pt.pt_stop };

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

	m->pt.pt_work = NULL;
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

void handle_latency(struct manager *m, struct server_conn *conn,
		    const struct proto_latency_request *req)
{
	/* recording a process is capturing it: the same rules */
	struct proto_capture_request as_capture = { .pids = { req->pid }, .n_pids = 1 };
	struct pt_work *pw;

	if (!recording_allowed(m, conn, &as_capture, req->seconds))
		return;
	if (m->pt.pt_work) {
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
	m->pt.pt_work = pw;
}
