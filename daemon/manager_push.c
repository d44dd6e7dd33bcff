/*
 * manager_push: the pusher (daemon/push/pusher.h) in the daemon: started
 * after the store with the configuration's targets, told of each window
 * stored, asked for windows by hand ("push"), read for status, stopped
 * before the store closes.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "manager_internal.h"
#include "push_http.h"
#include "pusher.h"
#include "server.h"

/* From a pusher thread: the log is one write to stderr per line. */
static void push_log(void *arg, bool warning, const char *msg)
{
	(void)arg;
	if (warning)
		log_warning("%s", msg);
	else
		log_info("%s", msg);
}

int manager_push_start(struct manager *m)
{
	const struct config *cfg = &m->cfg;
	char host[256] = "", err[512] = "";
	struct pusher_opts o = {
		.database = cfg->database,
		.host = host,
		.max_bytes_in_flight = cfg->push_max_bytes_in_flight,
		.profile_kinds = cfg->continuous_kinds,
		.targets = cfg->push,
		.n_targets = cfg->n_push,
		.log = push_log,
	};
	int r;

	if (!cfg->n_push)
		return 0;
	if (cfg->push_host[0])
		snprintf(host, sizeof(host), "%s", cfg->push_host);
	else if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
		snprintf(host, sizeof(host), "localhost");
	if (!cfg->continuous)
		log_warning("push targets are configured but continuous = false: no new window "
			    "is made to push (offcpuctl push still sends stored ones)");
	r = pusher_start(&o, &m->pusher, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err[0] ? err : strerror(-r));
		return r;
	}
	for (uint32_t i = 0; i < cfg->n_push; i++) {
		char url[1024];

		push_http_safe_url(cfg->push[i].url, url, sizeof(url));
		log_info("pushing windows to %s (%s, push target %s)", url,
			 cfg->push[i].api == CONFIG_PUSH_OTLP ? "OTLP" : "Pyroscope",
			 cfg->push[i].name);
	}
	return 0;
}

void manager_push_stop(struct manager *m)
{
	pusher_stop(m->pusher);
	m->pusher = NULL;
}

void manager_handle_push(struct manager *m, struct server_conn *conn,
			 const struct proto_push_request *req)
{
	struct proto_capture_request everything = { 0 };
	const char *names[CONFIG_MAX_PUSH_TARGETS];
	struct proto_push_result res = {
		.from_ms = req->from_ms,
		.to_ms = req->to_ms,
		.targets = names,
	};
	char err[512];
	int r;

	/* It sends every process's stacks off the host, as a system-wide
	 * capture shows them: the same right. */
	if (access_check_capture(&m->access, server_conn_client(conn), &everything, "/proc", err,
				 sizeof(err)) < 0) {
		manager_reply_error(conn, PROTO_ERR_PERMISSION, err);
		return;
	}
	if (!m->pusher) {
		manager_reply_error(conn, PROTO_ERR_NO_SUCH_TARGET,
				    "no push target is configured (push.NAME.url in offcpud.conf)");
		return;
	}
	if (!res.to_ms) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		res.to_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1;
	}
	r = pusher_backfill(m->pusher, req->target, res.from_ms, res.to_ms, names, &res.n_targets);
	if (r == -ENOENT) {
		snprintf(err, sizeof(err), "no push target is named '%s'", req->target);
		manager_reply_error(conn, PROTO_ERR_NO_SUCH_TARGET, err);
		return;
	}
	if (r < 0) {
		manager_reply_error(conn, PROTO_ERR_INTERNAL, "out of memory");
		return;
	}
	server_conn_send(conn, proto_reply_push(&res));
}

size_t manager_push_status(struct manager *m, struct pusher_status *st,
			   struct proto_push_status *ret, size_t max)
{
	size_t n = pusher_status(m->pusher, st, max);

	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		ret[i] = (struct proto_push_status){
			.name = st[i].name,
			.api = st[i].api,
			.url = st[i].url,
			.state = st[i].state,
			.last_success_ms = st[i].last_success_ms,
			.lag_windows = st[i].lag_windows,
			.lag_ms = st[i].lag_ms,
			.sent = st[i].sent,
			.set_aside = st[i].set_aside,
			.lost = st[i].lost,
			.retries = st[i].retries,
			.bytes_sent = st[i].bytes_sent,
			.next_try_ms = st[i].next_try_ms,
			.backfill_windows = st[i].backfill_windows,
			.last_error = st[i].last_error,
		};
	return n;
}
