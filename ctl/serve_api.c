/* serve_api: see serve_api.h. */
#define _GNU_SOURCE /* open_memstream, strndup */
#include "serve_api.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "pprof.h"
#include "proto.h"
#include "proto_heatmap.h"
#include "proto_samples.h"
#include "thread_state.h"
#include "timearg.h"

#define JSON_TYPE "application/json"

/* A request's parameters and where an error goes. */
struct api_call {
	const char *socket_path;
	const struct serve_param *params;
	size_t n_params;
	struct serve_response *res;
	int64_t now_ms;
};

static const char *http_code_name(const char *code, unsigned *status)
{
	static const struct {
		const char *code;
		unsigned status;
	} map[] = {
		{ PROTO_ERR_BAD_REQUEST, 400 },
		{ PROTO_ERR_TOO_LARGE, 400 },
		{ PROTO_ERR_PERMISSION, 403 },
		{ PROTO_ERR_NO_DATA, 404 },
		{ "not_found", 404 },
		{ PROTO_ERR_NO_SUCH_PID, 404 },
		{ PROTO_ERR_NO_SUCH_CGROUP, 404 },
		{ PROTO_ERR_BUSY, 503 },
		{ "not_running", 503 },
		{ PROTO_ERR_UNSUPPORTED, 501 },
	};

	*status = 500;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(code, map[i].code))
			*status = map[i].status;
	return code;
}

int serve_api_error(struct serve_response *ret, unsigned status, const char *code,
		    const char *message)
{
	ret->status = status;
	ret->content_type = JSON_TYPE;
	ret->body = proto_reply_error(code, message);
	ret->len = ret->body ? strlen(ret->body) : 0;
	return ret->body ? 0 : -ENOMEM;
}

/* A bad_request (400) with a formatted message; returns -EINVAL, or
 * -ENOMEM if even that fails. */
static int api_bad(struct api_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int api_bad(struct api_call *c, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return serve_api_error(c->res, 400, PROTO_ERR_BAD_REQUEST, msg) < 0 ? -ENOMEM : -EINVAL;
}

/* The body (consumed) as the response. */
static int api_body(struct api_call *c, const char *type, char *body, size_t len)
{
	c->res->status = 200;
	c->res->content_type = type;
	c->res->body = body;
	c->res->len = len;
	return 0;
}

static int api_copy(struct api_call *c, const char *type, const char *text)
{
	char *body = strdup(text ? text : "");

	return body ? api_body(c, type, body, strlen(body)) : -ENOMEM;
}

static const char *param(const struct api_call *c, const char *name)
{
	for (size_t i = 0; i < c->n_params; i++)
		if (!strcmp(c->params[i].name, name))
			return c->params[i].value ? c->params[i].value : "";
	return NULL;
}

/* Refuses a parameter the endpoint does not take, or one given twice. */
static int check_params(struct api_call *c, const char *path, const char *const *allowed)
{
	for (size_t i = 0; i < c->n_params; i++) {
		bool ok = false;

		for (size_t j = 0; allowed[j] && !ok; j++)
			ok = !strcmp(allowed[j], c->params[i].name);
		if (!ok)
			return api_bad(c, "%s takes no parameter '%s'", path, c->params[i].name);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->params[j].name, c->params[i].name))
				return api_bad(c, "parameter '%s' given twice", c->params[i].name);
	}
	return 0;
}

/* ---- the CLI's options as parameters ---- */

static int parse_point(struct api_call *c, const char *name, const char *s, int64_t *ret)
{
	int r = timearg_point(s, c->now_ms, ret);

	if (r == -ERANGE)
		return api_bad(c, "bad %s '%s': out of range (1970 to 9999)", name, s);
	if (r < 0)
		return api_bad(c,
			       "bad %s '%s': want unix seconds, RFC 3339 like "
			       "2026-11-22T01:00:00Z, or Nx-ago (x: s, m, h, d)",
			       name, s);
	return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	char *end;
	uint64_t v;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* from, to, window, capture: as offcpuctl's --from, --to, --window and
 * --capture; with_capture false for the heatmap, which reads ranges only. */
static int parse_range(struct api_call *c, const char *path, bool with_capture, int64_t *from_ms,
		       int64_t *to_ms, uint64_t *capture_id)
{
	const char *window = param(c, "window"), *from = param(c, "from"), *to = param(c, "to");
	const char *capture = with_capture ? param(c, "capture") : NULL;
	int64_t window_to;
	uint64_t id;
	int r;

	if (capture && (window || from || to))
		return api_bad(c, "capture cannot be combined with window, from or to");
	if (window && (from || to))
		return api_bad(c, "window cannot be combined with from or to");
	if (to && !from)
		return api_bad(c, "to needs from");
	if (!window && !from && !capture)
		return api_bad(c, "%s needs %s", path,
			       with_capture ? "window, from or capture" : "window or from");
	if (capture) {
		if (parse_u64(capture, UINT64_C(1) << 53, &id) < 0 || !id)
			return api_bad(c, "bad capture '%s': want a capture id", capture);
		*capture_id = id;
		return 0;
	}
	if (window) {
		r = timearg_window(window, c->now_ms, from_ms, &window_to);
		if (r < 0)
			return api_bad(c, "bad window '%s': want lastN followed by s, m, h or d",
				       window);
		return 0; /* to_ms 0: up to the daemon's now */
	}
	r = parse_point(c, "from", from, from_ms);
	if (r == 0 && *from_ms == 0)
		return api_bad(c, "bad from '%s': must be after 1970-01-01T00:00:00Z", from);
	if (r == 0 && to) {
		r = parse_point(c, "to", to, to_ms);
		if (r == 0 && *to_ms <= *from_ms)
			return api_bad(c, "bad to '%s': must be later than from", to);
	}
	return r;
}

/* pid or tid: "1,2,3", as offcpuctl's --pid and --tid. */
static int parse_ids(struct api_call *c, const char *name, uint32_t *ids, size_t *n)
{
	const char *s = param(c, name);
	uint64_t v;
	char *copy, *tok, *save = NULL;
	int r = 0;

	*n = 0;
	if (!s)
		return 0;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && r == 0; tok = strtok_r(NULL, ",", &save)) {
		if (*n == PROTO_MAX_IDS)
			r = api_bad(c, "bad %s: at most %d %ss", name, PROTO_MAX_IDS, name);
		else if (parse_u64(tok, PROTO_PID_MAX, &v) < 0 || !v)
			r = api_bad(c, "bad %s '%s': want positive %ss, comma-separated", name, s,
				    name);
		else
			ids[(*n)++] = v;
	}
	if (r == 0 && !*n)
		r = api_bad(c, "bad %s '%s': want positive %ss, comma-separated", name, s, name);
	free(copy);
	return r;
}

/* kind: a kind's name, or hotcold (offcpu with on-CPU samples beside). */
static int parse_kind(struct api_call *c, enum proto_kind *kind, uint32_t *oncpu)
{
	const char *s = param(c, "kind");
	int k;

	if (!s)
		return 0;
	if (!strcmp(s, "hotcold")) {
		*kind = PROTO_KIND_OFFCPU;
		if (oncpu)
			*oncpu = 1;
		return 0;
	}
	k = proto_kind_from_name(s);
	if (k < 0)
		return api_bad(c,
			       "bad kind '%s': want offcpu, wakeup, offwake, chain, runq, oncpu, "
			       "hotcold, bio or fileio",
			       s);
	*kind = k;
	return 0;
}

static int parse_states(struct api_call *c, uint32_t *mask)
{
	const char *s = param(c, "state");

	if (s && thread_state_mask_parse(s, mask) < 0)
		return api_bad(c, "bad state '%s': want a list of R, S, D, O", s);
	return 0;
}

/* A string parameter into dst (size bytes, NUL included). */
static int parse_string(struct api_call *c, const char *name, char *dst, size_t size)
{
	const char *s = param(c, name);

	if (!s)
		return 0;
	if (strlen(s) >= size)
		return api_bad(c, "%s is too long: at most %zu bytes", name, size - 1);
	strcpy(dst, s);
	return 0;
}

static int parse_bool(struct api_call *c, const char *name, uint32_t *dst)
{
	const char *s = param(c, name);

	if (!s)
		return 0;
	if (!strcmp(s, "") || !strcmp(s, "1") || !strcmp(s, "true"))
		*dst = 1;
	else if (!strcmp(s, "0") || !strcmp(s, "false"))
		*dst = 0;
	else
		return api_bad(c, "bad %s '%s': want 1 or 0", name, s);
	return 0;
}

/* cgroup, unit, container: who the request is about, as offcpuctl's --cgroup,
 * --unit and --container; at most one. The daemon resolves them. */
static int parse_who(struct api_call *c, struct proto_cgroup_filter *who)
{
	const char *cgroup = param(c, "cgroup"), *unit = param(c, "unit");
	const char *container = param(c, "container");

	if (!!cgroup + !!unit + !!container > 1)
		return api_bad(c, "cgroup, unit and container exclude each other: give one");
	if (cgroup && (cgroup[0] != '/' || strlen(cgroup) > PROTO_CGROUP_MAX))
		return api_bad(c,
			       "bad cgroup '%.256s': want an absolute cgroup v2 path of at most %d "
			       "bytes, e.g. /system.slice/nginx.service",
			       cgroup, PROTO_CGROUP_MAX);
	if (unit && (!*unit || strchr(unit, '/') || strlen(unit) > PROTO_UNIT_MAX))
		return api_bad(c, "bad unit '%.256s': want a systemd unit name, e.g. nginx.service",
			       unit);
	if (container && (!*container || strlen(container) > PROTO_CONTAINER_MAX ||
			  container[strspn(container, "0123456789abcdefABCDEF")]))
		return api_bad(c,
			       "bad container '%.256s': want up to %d hex digits of a container id "
			       "(a unique prefix)",
			       container, PROTO_CONTAINER_MAX);
	if (cgroup)
		strcpy(who->cgroup, cgroup);
	if (unit)
		strcpy(who->unit, unit);
	if (container)
		strcpy(who->container, container);
	return 0;
}

/* group_by: the root frame of the stacks, as offcpuctl's --group-by. */
static int parse_group_by(struct api_call *c, enum proto_group_by *ret)
{
	const char *s = param(c, "group_by");
	int by;

	if (!s)
		return 0;
	by = proto_group_by_from_name(s);
	if (by < 0)
		return api_bad(c,
			       "bad group_by '%.256s': want comm, process, unit, container or cgroup",
			       s);
	*ret = by;
	return 0;
}

/* diff_against: "capture:ID", "lastNx" or "T1..T2", as --diff-against. */
static int parse_baseline(struct api_call *c, struct proto_export_request *ex)
{
	const char *spec = param(c, "diff_against"), *dots;
	int64_t from, to;
	uint64_t id;
	char *start;
	int r;

	if (!spec)
		return 0;
	if (!strncmp(spec, "capture:", 8)) {
		if (parse_u64(spec + 8, UINT64_C(1) << 53, &id) < 0 || !id)
			return api_bad(c, "bad diff_against '%s': want capture:ID", spec);
		ex->diff_capture = id;
		return 0;
	}
	if (!strncmp(spec, "last", 4)) {
		if (timearg_window(spec, c->now_ms, &ex->diff_from_ms, &to) < 0)
			return api_bad(c, "bad diff_against '%s'", spec);
		return 0;
	}
	dots = strstr(spec, "..");
	if (!dots)
		return api_bad(c,
			       "bad diff_against '%s': want capture:ID, lastNx (e.g. last1h) or "
			       "T1..T2 (e.g. 2h-ago..1h-ago)",
			       spec);
	start = strndup(spec, dots - spec);
	if (!start)
		return -ENOMEM;
	r = parse_point(c, "diff_against start", start, &from);
	free(start);
	if (r == 0)
		r = parse_point(c, "diff_against end", dots + 2, &to);
	if (r < 0)
		return r;
	if (!from || to <= from)
		return api_bad(c, "bad diff_against '%s': the end must be later than the start",
			       spec);
	ex->diff_from_ms = from;
	ex->diff_to_ms = to;
	return 0;
}

/* ---- the daemon ---- */

/* Sends req and reads the reply. 0 with an ok reply (*ret_raw its line;
 * *ret_reply NULL for a heatmap, which is not parsed), else the error is
 * the response and -EIO (or -ENOMEM) is returned. */
static int daemon_call(struct api_call *c, const struct proto_request *req,
		       struct proto_reply **ret_reply, char **ret_raw)
{
	struct proto_reply *reply = NULL;
	struct client *cl = NULL;
	char *line, *raw = NULL, msg[512];
	unsigned status;
	size_t len;
	int r;

	line = proto_request_format(req);
	if (!line)
		return -ENOMEM;
	r = client_connect(c->socket_path, &cl);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		free(line);
		snprintf(msg, sizeof(msg), "offcpud is not running (nothing listens on %s)",
			 c->socket_path);
		return serve_api_error(c->res, 503, "not_running", msg) < 0 ? -ENOMEM : -EIO;
	}
	if (r < 0) {
		free(line);
		snprintf(msg, sizeof(msg), "cannot connect to %s: %s", c->socket_path,
			 strerror(-r));
		http_code_name(r == -EACCES || r == -EPERM ? PROTO_ERR_PERMISSION
							   : "connect_failed",
			       &status);
		return serve_api_error(c->res, status,
				       r == -EACCES || r == -EPERM ? PROTO_ERR_PERMISSION
								   : "connect_failed",
				       msg) < 0
			       ? -ENOMEM
			       : -EIO;
	}
	r = client_send(cl, line);
	free(line);
	/* A daemon that refuses a client says why and closes at once. */
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = client_read_line(cl, &raw, &len, NULL, NULL, NULL, NULL);
	client_free(cl);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "talking to offcpud: %s", strerror(-r));
		return serve_api_error(c->res, 502, "io_error", msg) < 0 ? -ENOMEM : -EIO;
	}
	/* A day's heatmap is megabytes, for the page: passed on unparsed. */
	if (req->cmd == PROTO_CMD_HEATMAP && proto_heatmap_reply_ok(raw, len)) {
		*ret_reply = NULL;
		*ret_raw = raw;
		return 0;
	}
	if (proto_reply_parse(raw, len, &reply) < 0) {
		free(raw);
		return serve_api_error(c->res, 502, "bad_reply",
				       "offcpud sent a reply offcpuctl cannot read") < 0
			       ? -ENOMEM
			       : -EIO;
	}
	if (!reply->ok) {
		/* The daemon's own error line, code and message as it sent them. */
		http_code_name(reply->error_code, &status);
		proto_reply_free(reply);
		c->res->status = status;
		c->res->content_type = JSON_TYPE;
		c->res->body = raw;
		c->res->len = len;
		return -EIO;
	}
	if (reply->cmd != req->cmd) {
		proto_reply_free(reply);
		free(raw);
		return serve_api_error(c->res, 502, "bad_reply",
				       "offcpud answered another command") < 0
			       ? -ENOMEM
			       : -EIO;
	}
	*ret_reply = reply;
	*ret_raw = raw;
	return 0;
}

/* The raw reply line as the response: the JSON the daemon sent. */
static int daemon_json(struct api_call *c, const struct proto_request *req)
{
	struct proto_reply *reply;
	char *raw;
	int r;

	r = daemon_call(c, req, &reply, &raw);
	if (r < 0)
		return r;
	proto_reply_free(reply); /* NULL-safe */
	return api_body(c, JSON_TYPE, raw, strlen(raw));
}

/* ---- endpoints ---- */

static int api_status(struct api_call *c, struct proto_request *req)
{
	req->cmd = PROTO_CMD_STATUS;
	return daemon_json(c, req);
}

static int api_windows(struct api_call *c, struct proto_request *req)
{
	const char *since = param(c, "since");
	int64_t to;

	req->cmd = PROTO_CMD_WINDOWS;
	if (since && timearg_window(since, c->now_ms, &req->windows.since_ms, &to) < 0 &&
	    parse_point(c, "since", since, &req->windows.since_ms) < 0)
		return -EINVAL;
	return daemon_json(c, req);
}

static int api_hist(struct api_call *c, struct proto_request *req)
{
	struct proto_hist_request *h = &req->hist;
	const char *format = param(c, "format");
	int r;

	req->cmd = PROTO_CMD_HIST;
	if (format && strcmp(format, "json"))
		return api_bad(c, "/api/hist gives json only, not '%s'", format);
	r = parse_range(c, "/api/hist", true, &h->from_ms, &h->to_ms, &h->capture_id);
	if (r == 0)
		r = parse_ids(c, "pid", h->pids, &h->n_pids);
	if (r == 0)
		r = parse_who(c, &h->who);
	if (r == 0)
		r = parse_kind(c, &h->kind, NULL);
	return r < 0 ? r : daemon_json(c, req);
}

static int api_heatmap(struct api_call *c, struct proto_request *req)
{
	struct proto_heatmap_request *h = &req->heatmap;
	const char *rows = param(c, "rows"), *max_rows = param(c, "max_rows");
	uint64_t v;
	int r;

	req->cmd = PROTO_CMD_HEATMAP;
	h->state_mask = THREAD_STATE_ALL;
	h->max_rows = PROTO_HEATMAP_ROWS_DEFAULT;
	r = parse_range(c, "/api/heatmap", false, &h->from_ms, &h->to_ms, NULL);
	if (r == 0)
		r = parse_ids(c, "pid", h->pids, &h->n_pids);
	if (r == 0)
		r = parse_kind(c, &h->kind, &h->oncpu);
	if (r == 0)
		r = parse_states(c, &h->state_mask);
	if (r == 0)
		r = parse_string(c, "comm", h->comm, sizeof(h->comm));
	if (r == 0 && rows) {
		if (!strcmp(rows, "process"))
			h->rows = PROTO_HEATMAP_ROWS_PROCESS;
		else if (!strcmp(rows, "thread"))
			h->rows = PROTO_HEATMAP_ROWS_THREAD;
		else if (!strcmp(rows, "state"))
			h->rows = PROTO_HEATMAP_ROWS_STATE;
		else
			r = api_bad(c, "bad rows '%s': want process, thread or state", rows);
	}
	if (r == 0 && max_rows) {
		if (parse_u64(max_rows, PROTO_HEATMAP_MAX_ROWS, &v) < 0 || !v)
			r = api_bad(c, "bad max_rows '%s': want 1 to %d", max_rows,
				    PROTO_HEATMAP_MAX_ROWS);
		else
			h->max_rows = v;
	}
	return r < 0 ? r : daemon_json(c, req);
}

/* The threads off the CPU now, as offcpuctl blocked --json prints them. */
static int api_blocked(struct api_call *c, struct proto_request *req)
{
	struct proto_blocked_request *b = &req->blocked;
	const char *min_ms = param(c, "min_ms"), *limit = param(c, "limit");
	uint64_t v;
	int r;

	req->cmd = PROTO_CMD_BLOCKED;
	b->state_mask = PROTO_BLOCKED_STATES_DEFAULT;
	b->limit = PROTO_BLOCKED_LIMIT_DEFAULT;
	r = parse_ids(c, "pid", b->pids, &b->n_pids);
	if (r == 0)
		r = parse_ids(c, "tid", b->tids, &b->n_tids);
	if (r == 0)
		r = parse_states(c, &b->state_mask);
	if (r == 0 && min_ms) {
		if (parse_u64(min_ms, PROTO_BLOCKED_MIN_MS_MAX, &v) < 0)
			r = api_bad(c, "bad min_ms '%s': want 0 to %" PRIu64 " milliseconds",
				    min_ms, (uint64_t)PROTO_BLOCKED_MIN_MS_MAX);
		else
			b->min_ns = v * 1000000;
	}
	if (r == 0 && limit) {
		if (parse_u64(limit, PROTO_BLOCKED_LIMIT_MAX, &v) < 0)
			r = api_bad(c, "bad limit '%s': want 0 (all) to %d", limit,
				    PROTO_BLOCKED_LIMIT_MAX);
		else
			b->limit = v;
	}
	if (r < 0)
		return r;
	r = daemon_json(c, req);
	/* The page asks for the process its view shows, which may have exited
	 * since: none of its threads is off the CPU, no error. */
	if (r == -EIO && c->res->status == 404 && c->res->body &&
	    strstr(c->res->body, "\"" PROTO_ERR_NO_SUCH_PID "\"")) {
		char *line =
			proto_reply_blocked(&(struct proto_blocked_result){ .now_ms = c->now_ms });

		free(c->res->body);
		c->res->body = NULL;
		return line ? api_body(c, JSON_TYPE, line, strlen(line)) : -ENOMEM;
	}
	return r;
}

/* format=pprof: the JSON rows as a gzipped profile, as offcpuctl's. */
static int export_pprof(struct api_call *c, const struct proto_export_request *ex,
			const struct proto_export_result *res, const char *raw)
{
	int kind = res->kind ? proto_kind_from_name(res->kind) : -1; /* a capture's own */
	struct pprof_opts opts = { .kind = kind < 0 ? ex->kind : (enum proto_kind)kind,
				   .oncpu = ex->oncpu };
	struct proto_samples *s;
	char *body = NULL;
	size_t len = 0;
	FILE *out;
	int r;

	if (!res->capture_id && res->from_ms > 0 && res->to_ms > res->from_ms &&
	    res->to_ms <= INT64_MAX / 1000000) {
		opts.time_nanos = res->from_ms * 1000000;
		opts.duration_nanos = (res->to_ms - res->from_ms) * 1000000;
	}
	opts.comment = "offcpud export";
	r = proto_samples_parse(raw, strlen(raw), &s);
	if (r < 0)
		return r == -ENOMEM
			       ? r
			       : serve_api_error(c->res, 502, "bad_reply",
						 "offcpud's reply has rows offcpuctl cannot read");
	out = open_memstream(&body, &len);
	if (!out) {
		proto_samples_free(s);
		return -ENOMEM;
	}
	r = pprof_write(s->rows, s->n, &opts, out);
	proto_samples_free(s);
	if (fclose(out) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(body);
		return r;
	}
	return api_body(c, "application/octet-stream", body, len);
}

static int api_export(struct api_call *c, struct proto_request *req)
{
	struct proto_export_request *ex = &req->export;
	const char *format = param(c, "format"), *metric = param(c, "metric");
	const char *palette = param(c, "palette"), *width = param(c, "width");
	struct proto_reply *reply;
	bool pprof = false, notes = false;
	uint64_t v;
	char *raw, *body;
	int r = 0, f;

	req->cmd = PROTO_CMD_EXPORT;
	ex->state_mask = THREAD_STATE_ALL;
	if (format && !strcmp(format, "pprof")) {
		pprof = true;
		ex->format = PROTO_FORMAT_JSON;
	} else if (format && !strcmp(format, "notes")) {
		/* The daemon's notes on the export the graph shows (why it is
		 * empty, a baseline that matched nothing), for the page to say. */
		notes = true;
		ex->format = PROTO_FORMAT_FOLDED;
	} else if (format) {
		f = proto_format_from_name(format);
		if (f < 0)
			return api_bad(c,
				       "bad format '%s': want folded, json, svg, speedscope, "
				       "pprof or notes",
				       format);
		ex->format = f;
	}
	r = parse_range(c, "/api/export", true, &ex->from_ms, &ex->to_ms, &ex->capture_id);
	if (r == 0)
		r = parse_baseline(c, ex);
	if (r == 0 && pprof && (ex->diff_from_ms || ex->diff_capture))
		r = api_bad(c, "diff_against gives folded or svg output, not pprof");
	if (r == 0)
		r = parse_ids(c, "pid", ex->pids, &ex->n_pids);
	if (r == 0)
		r = parse_who(c, &ex->who);
	if (r == 0)
		r = parse_group_by(c, &ex->group_by);
	if (r == 0)
		r = parse_kind(c, &ex->kind, &ex->oncpu);
	/* As offcpuctl's --kind: an export of a capture takes its kind unless named. */
	ex->kind_given = param(c, "kind") != NULL;
	if (r == 0)
		r = parse_states(c, &ex->state_mask);
	if (r == 0)
		r = parse_string(c, "comm", ex->comm, sizeof(ex->comm));
	if (r == 0)
		r = parse_string(c, "grep", ex->grep, sizeof(ex->grep));
	if (r == 0)
		r = parse_string(c, "exclude", ex->exclude, sizeof(ex->exclude));
	if (r == 0)
		r = parse_string(c, "title", ex->render.title, sizeof(ex->render.title));
	if (r == 0)
		r = parse_string(c, "minwidth", ex->render.minwidth, sizeof(ex->render.minwidth));
	if (r == 0)
		r = parse_bool(c, "normalize", &ex->normalize);
	if (r == 0)
		r = parse_bool(c, "strip_hex", &ex->strip_hex);
	if (r == 0)
		r = parse_bool(c, "negate", &ex->negate);
	if (r == 0)
		r = parse_bool(c, "lines", &ex->lines);
	if (r == 0)
		r = parse_bool(c, "inverted", &ex->render.inverted);
	if (r == 0)
		r = parse_bool(c, "reverse", &ex->render.reverse);
	if (r == 0 && metric) {
		f = proto_metric_from_name(metric);
		if (f < 0)
			r = api_bad(c, "bad metric '%s': want time, count or bytes", metric);
		else
			ex->metric = f;
	}
	if (r == 0 && palette) {
		f = proto_palette_from_name(palette);
		if (f < 0)
			r = api_bad(c, "bad palette '%s'", palette);
		else
			ex->render.palette = f;
	}
	if (r == 0 && width) {
		if (parse_u64(width, PROTO_WIDTH_MAX, &v) < 0 || v < PROTO_WIDTH_MIN)
			r = api_bad(c, "bad width '%s': want 200 to 100000 pixels", width);
		else
			ex->render.width = v;
	}
	if (r < 0)
		return r;

	/* The daemon checks the rest (a differential json, a bad regex, ...). */
	r = daemon_call(c, req, &reply, &raw);
	if (r < 0)
		return r;
	if (notes) {
		body = proto_notes_json(reply->export.notes, reply->export.n_notes);
		r = body ? api_body(c, JSON_TYPE, body, strlen(body)) : -ENOMEM;
	} else if (pprof)
		r = export_pprof(c, ex, &reply->export, raw);
	else if (ex->format == PROTO_FORMAT_JSON)
		r = api_copy(c, JSON_TYPE, raw);
	else if (ex->format == PROTO_FORMAT_FOLDED)
		r = api_copy(c, "text/plain; charset=utf-8", reply->export.folded);
	else if (ex->format == PROTO_FORMAT_SVG)
		r = api_copy(c, "image/svg+xml", reply->export.output);
	else
		r = api_copy(c, JSON_TYPE, reply->export.output);
	proto_reply_free(reply);
	free(raw);
	return r;
}

/* clang-format off */
#define RANGE "from", "to", "window"
#define FILTERS "pid", "comm", "state", "grep", "exclude"
#define WHO "cgroup", "unit", "container"

/* Off: clang-format lays the export's long list out as a table. */
static const struct {
	const char *path;
	int (*fn)(struct api_call *c, struct proto_request *req);
	const char *params[32]; /* NULL-terminated */
} endpoints[] = {
	{ "/api/status", api_status, { NULL } },
	{ "/api/windows", api_windows, { "since", NULL } },
	{ "/api/export",
	  api_export,
	  { RANGE, "capture", FILTERS, WHO, "group_by", "kind", "format", "diff_against",
	    "normalize", "strip_hex", "negate", "lines", "metric", "title", "width", "minwidth",
	    "palette", "inverted", "reverse", NULL } },
	{ "/api/hist", api_hist, { RANGE, "capture", "pid", WHO, "kind", "format", NULL } },
	{ "/api/heatmap",
	  api_heatmap,
	  { RANGE, "pid", "comm", "state", "kind", "rows", "max_rows", NULL } },
	{ "/api/blocked", api_blocked, { "pid", "tid", "state", "min_ms", "limit", NULL } },
};
/* clang-format on */

int serve_api_known(const char *path)
{
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++)
		if (!strcmp(path, endpoints[i].path))
			return 1;
	return 0;
}

int serve_api_get(const char *socket_path, const char *path, const struct serve_param *params,
		  size_t n_params, struct serve_response *ret)
{
	struct api_call c = { socket_path, params, n_params, ret, 0 };
	struct proto_request *req;
	struct timespec ts;
	int r;

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
		if (strcmp(path, endpoints[i].path))
			continue;
		r = check_params(&c, path, endpoints[i].params);
		if (r < 0)
			return r == -ENOMEM ? r : 0;
		/* Two 1 KiB patterns and id arrays: off the stack. */
		req = calloc(1, sizeof(*req));
		if (!req)
			return -ENOMEM;
		clock_gettime(CLOCK_REALTIME, &ts);
		c.now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		r = endpoints[i].fn(&c, req);
		free(req);
		if (r == -ENOMEM) {
			free(ret->body);
			ret->body = NULL;
			return r;
		}
		return 0;
	}
	return serve_api_error(ret, 404, "not_found", "no such API endpoint");
}
