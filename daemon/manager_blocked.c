/* manager_blocked: offcpuctl blocked, the threads off the CPU now. A request
 * waits for the next drain, whose thread reads the snapshot (the collector's
 * in-progress pass runs there too) and names it with the drain's symbolizer;
 * the reply goes out when the drain is in. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocked.h"
#include "clock.h"
#include "collector.h"
#include "log.h"
#include "proto.h"
#include "server.h"
#include "manager_internal.h"

struct blocked_work {
	struct blocked_work *next;
	struct server_conn *conn;
	struct proto_blocked_request req;
	struct blocked_answer *answer; /* the drain's thread's, until the reply */
	int error;
};

void manager_handle_blocked(struct manager *m, struct server_conn *conn,
			    const struct proto_blocked_request *req)
{
	struct proto_capture_request *targets;
	struct blocked_work *w;
	const char *why;
	bool allowed;

	if (!collector_in_progress(m->collector, &why)) {
		char err[512];

		snprintf(err, sizeof(err), "blocked threads cannot be read here: %s", why);
		manager_reply_error(conn, PROTO_ERR_UNSUPPORTED, err);
		return;
	}
	/* Other threads' stacks: the policy of a capture of the same targets. */
	targets = calloc(1, sizeof(*targets));
	w = calloc(1, sizeof(*w));
	if (!targets || !w) {
		free(targets);
		free(w);
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	memcpy(targets->pids, req->pids, req->n_pids * sizeof(*req->pids));
	targets->n_pids = req->n_pids;
	memcpy(targets->tids, req->tids, req->n_tids * sizeof(*req->tids));
	targets->n_tids = req->n_tids;
	allowed = manager_recording_allowed(m, conn, targets, 0);
	free(targets);
	if (!allowed) {
		free(w);
		return;
	}
	w->req = *req;
	w->conn = conn;
	server_conn_ref(conn);
	w->next = m->blocked.pending;
	m->blocked.pending = w;
	manager_drain_start(m);
}

void manager_blocked_take(struct manager *m)
{
	m->blocked.running = m->blocked.pending;
	m->blocked.pending = NULL;
}

void manager_blocked_run(struct manager *m, const struct drain_lookup *lk)
{
	for (struct blocked_work *w = m->blocked.running; w; w = w->next) {
		struct blocked_clock clock = { .loaded_ns = m->blocked.loaded_ns };
		struct offcpu_blocked *recs;
		size_t n;

		/* The kernel filters by process where there is one. */
		w->error = collector_blocked(m->collector, w->req.n_pids == 1 ? w->req.pids[0] : 0,
					     w->req.min_ns, &recs, &n, &clock.now_ns);
		clock.now_ms = clock_realtime_ms();
		if (w->error == 0)
			w->error = blocked_answer_new(recs, n, &w->req, &clock, lk, &w->answer);
		free(recs);
	}
}

void manager_blocked_reply(struct manager *m)
{
	struct blocked_work *w = m->blocked.running, *next;
	char too_many[128];

	snprintf(too_many, sizeof(too_many),
		 "more than %d threads are off the CPU: name the processes (pids)",
		 COLLECTOR_BLOCKED_MAX);
	m->blocked.running = NULL;
	for (; w; w = next) {
		char *line = NULL;

		next = w->next;
		if (w->error == 0)
			line = proto_reply_blocked(blocked_answer_result(w->answer));
		if (line)
			server_conn_send(w->conn, line);
		else if (w->error == -E2BIG)
			manager_reply_error(w->conn, PROTO_ERR_TOO_LARGE, too_many);
		else if (w->error < 0 && w->error != -ENOMEM)
			manager_reply_error(w->conn, PROTO_ERR_INTERNAL, strerror(-w->error));
		else
			manager_reply_error(w->conn, PROTO_ERR_INTERNAL, "out of memory");
		blocked_answer_free(w->answer);
		server_conn_unref(w->conn);
		free(w);
	}
}

void manager_blocked_drop(struct manager *m)
{
	struct blocked_work *lists[] = { m->blocked.pending, m->blocked.running }, *w, *next;

	m->blocked.pending = m->blocked.running = NULL;
	for (size_t i = 0; i < 2; i++)
		for (w = lists[i]; w; w = next) {
			next = w->next;
			manager_reply_error(w->conn, PROTO_ERR_BUSY, "offcpud is stopping");
			blocked_answer_free(w->answer);
			server_conn_unref(w->conn);
			free(w);
		}
}
