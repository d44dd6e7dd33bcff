/* server: see server.h. */
#include "server.h"

#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "proto.h"

struct server {
	uv_loop_t *loop;
	uv_pipe_t listener;
	struct server_ops ops;
	void *userdata;
	struct server_options opts;
	char *path; /* set when we created the socket file */
	bool activated;
	int group_error; /* errno of giving the socket to opts.group; 0: given */
	uint32_t n_clients;
	struct server_conn *conns; /* doubly linked */
	uv_timer_t sweep;	   /* enforces opts.timeout_ms */
};

struct server_conn {
	uv_pipe_t pipe;
	struct server *server;
	struct server_conn *prev, *next;
	char *buf;
	size_t len, cap;
	bool closing;
	unsigned refs; /* the open handle holds one */
	struct access_client client;
	void *data;
	uint64_t active_ms;	/* uv_now() of the last read, or of the last write done */
	uint64_t partial_ms;	/* when the unfinished request line began; 0: none */
	unsigned writes_queued; /* replies not yet written to the socket */
};

struct write_req {
	uv_write_t req;
	char *line;
};

void server_conn_ref(struct server_conn *c)
{
	c->refs++;
}

void server_conn_unref(struct server_conn *c)
{
	if (--c->refs)
		return;
	free(c->buf);
	free(c);
}

static void conn_close_cb(uv_handle_t *h)
{
	server_conn_unref(h->data);
}

static void conn_unlink(struct server_conn *c)
{
	struct server *s = c->server;

	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	s->n_clients--;
}

/* Closes now, dropping queued writes; tells the manager first. */
static void conn_destroy(struct server_conn *c)
{
	if (c->closing && !c->server)
		return;
	if (c->server) {
		c->server->ops.closed(c, c->server->userdata);
		conn_unlink(c);
		c->server = NULL;
	}
	c->closing = true;
	if (!uv_is_closing((uv_handle_t *)&c->pipe))
		uv_close((uv_handle_t *)&c->pipe, conn_close_cb);
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
	struct server_conn *c = req->handle->data;

	(void)status;
	free(req);
	conn_destroy(c);
}

void server_conn_close(struct server_conn *c)
{
	uv_shutdown_t *req;

	if (c->closing)
		return;
	c->closing = true;
	uv_read_stop((uv_stream_t *)&c->pipe);
	req = malloc(sizeof(*req));
	/* uv_shutdown waits for queued writes, then ends our side. */
	if (!req || uv_shutdown(req, (uv_stream_t *)&c->pipe, shutdown_cb) < 0) {
		free(req);
		c->closing = false;
		conn_destroy(c);
	}
}

static void write_cb(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct server_conn *c = req->handle->data;

	(void)status; /* a client that went away is noticed by its read side */
	c->writes_queued--;
	c->active_ms = uv_now(req->handle->loop);
	free(w->line);
	free(w);
}

int server_conn_send(struct server_conn *c, char *line)
{
	struct write_req *w;
	uv_buf_t buf;
	int r;

	if (!line)
		return -ENOMEM;
	if (c->closing || !c->server) {
		free(line);
		return -EPIPE;
	}
	if (strlen(line) > c->server->opts.max_reply_bytes) {
		char msg[256];

		snprintf(msg, sizeof(msg),
			 "the reply would be %zu bytes, over max_reply_bytes (%llu): narrow the "
			 "request (--pid, --grep, a shorter range)",
			 strlen(line), (unsigned long long)c->server->opts.max_reply_bytes);
		free(line);
		line = proto_reply_error(PROTO_ERR_TOO_LARGE, msg);
		if (!line)
			return -ENOMEM;
	}
	w = malloc(sizeof(*w));
	if (!w) {
		free(line);
		return -ENOMEM;
	}
	w->line = line;
	buf = uv_buf_init(line, strlen(line));
	r = uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, write_cb);
	if (r < 0) {
		free(line);
		free(w);
		return r; /* libuv errors are -errno */
	}
	/* "Replies not read" is timed from the first reply the client has not
	 * taken, not from its request: making the reply may take a while. */
	if (!c->writes_queued++)
		c->active_ms = uv_now(c->pipe.loop);
	return 0;
}

static void send_error_and_close(struct server_conn *c, const char *code, const char *msg)
{
	server_conn_send(c, proto_reply_error(code, msg));
	server_conn_close(c);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct server_conn *c = h->data;
	size_t want = c->len + (suggested < 65536 ? suggested : 65536);

	if (want > c->cap) {
		char *b = realloc(c->buf, want);

		if (!b) {
			*buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
			return;
		}
		c->buf = b;
		c->cap = want;
	}
	*buf = uv_buf_init(c->buf + c->len, c->cap - c->len);
}

static void read_cb(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf)
{
	struct server_conn *c = stream->data;
	uint32_t limit;
	size_t start = 0;

	(void)buf;
	if (n < 0) {
		conn_destroy(c); /* EOF or error: the client is gone */
		return;
	}
	if (!c->server || c->closing)
		return;
	limit = c->server->opts.max_request_bytes;
	c->active_ms = uv_now(stream->loop);
	if (!c->len && n > 0)
		c->partial_ms = c->active_ms;
	c->len += n;
	for (;;) {
		char *nl = memchr(c->buf + start, '\n', c->len - start);
		size_t line_len;

		if (!nl)
			break;
		line_len = nl - (c->buf + start);
		*nl = '\0';
		if (line_len > limit) {
			send_error_and_close(c, PROTO_ERR_TOO_LARGE, "request line too long");
			return;
		}
		c->server->ops.request(c, c->buf + start, line_len, c->server->userdata);
		if (!c->server || c->closing)
			return;
		start = nl + 1 - c->buf;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	if (start) /* what is left began with the last line's end */
		c->partial_ms = c->len ? c->active_ms : 0;
	if (c->len > limit) {
		char msg[96];

		snprintf(msg, sizeof(msg), "request exceeds the limit of %u bytes", limit);
		send_error_and_close(c, PROTO_ERR_TOO_LARGE, msg);
	}
}

static void connection_cb(uv_stream_t *listener, int status)
{
	struct server *s = listener->data;
	struct server_conn *c;
	char why[256];
	uv_os_fd_t fd;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->refs = 1;
	uv_pipe_init(s->loop, &c->pipe, 0);
	c->pipe.data = c;
	if (uv_accept(listener, (uv_stream_t *)&c->pipe) < 0) {
		c->closing = true;
		uv_close((uv_handle_t *)&c->pipe, conn_close_cb);
		return;
	}
	c->server = s;
	c->active_ms = uv_now(s->loop);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_clients++;
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0)
		access_client_from_socket(fd, &c->client);

	if (s->n_clients > s->opts.max_clients) {
		send_error_and_close(c, PROTO_ERR_BUSY, "too many clients connected");
		return;
	}
	if (!s->ops.accept(c, why, sizeof(why), s->userdata)) {
		send_error_and_close(c, PROTO_ERR_PERMISSION, why);
		return;
	}
	uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb);
}

/* A socket file left by a dead daemon is removed; a live one is an error. */
static int path_take_over(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r = 0;

	if (access(path, F_OK) < 0)
		return 0;
	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		r = -EADDRINUSE;
	else if (unlink(path) < 0 && errno != ENOENT)
		r = -errno;
	close(fd);
	return r;
}

static int listen_on_path(struct server *s)
{
	const struct server_options *o = &s->opts;
	char *dir, *slash;
	int r;

	dir = strdup(o->path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755); /* /run/offcpud; an existing one is fine */
	}
	free(dir);

	r = path_take_over(o->path);
	if (r < 0)
		return r;
	r = uv_pipe_bind(&s->listener, o->path);
	if (r < 0)
		return r;
	s->path = strdup(o->path);
	if (!s->path)
		return -ENOMEM;
	if (chmod(o->path, o->mode) < 0)
		return -errno;
	if (o->group && *o->group) {
		struct group *g = getgrnam(o->group);

		if (!g)
			return -ENOENT;
		/* Without CAP_CHOWN the socket stays root's: fail closed, and say so. */
		if (chown(o->path, (uid_t)-1, g->gr_gid) < 0)
			s->group_error = errno;
	}
	return 0;
}

/* Why conn has overstayed, or NULL. A conn with a capture or a job under
 * way (data set, or refs beyond its handle's) is waiting for the daemon,
 * not idle. */
static const char *overstayed(const struct server_conn *c, uint64_t now, uint64_t timeout)
{
	if (c->partial_ms && now - c->partial_ms >= timeout)
		return "request line not finished";
	if (c->writes_queued && now - c->active_ms >= timeout)
		return "replies not read";
	if (!c->len && !c->writes_queued && !c->data && c->refs == 1 &&
	    now - c->active_ms >= timeout)
		return "connection idle";
	return NULL;
}

static void sweep_cb(uv_timer_t *t)
{
	struct server *s = t->data;
	uint64_t now = uv_now(s->loop);
	struct server_conn *c, *next;
	char msg[128];

	for (c = s->conns; c; c = next) {
		const char *why = overstayed(c, now, s->opts.timeout_ms);

		next = c->next;
		if (!why || c->closing)
			continue;
		snprintf(msg, sizeof(msg), "%s for %llu s (client_timeout)", why,
			 (unsigned long long)(s->opts.timeout_ms / 1000));
		if (c->writes_queued)
			conn_destroy(
				c); /* it does not read: an error reply would not get through */
		else
			send_error_and_close(c, PROTO_ERR_TIMEOUT, msg);
	}
}

int server_new(uv_loop_t *loop, const struct server_options *opts, const struct server_ops *ops,
	       void *userdata, struct server **ret)
{
	struct server *s;
	int n, r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->ops = *ops;
	s->opts = *opts;
	s->userdata = userdata;
	uv_pipe_init(loop, &s->listener, 0);
	s->listener.data = s;
	uv_timer_init(loop, &s->sweep);
	s->sweep.data = s;

	n = sd_listen_fds(1);
	if (n > 1) {
		r = -EINVAL; /* offcpud.socket declares exactly one */
		goto fail;
	}
	if (n == 1) {
		s->activated = true;
		r = uv_pipe_open(&s->listener, SD_LISTEN_FDS_START);
	} else {
		r = listen_on_path(s);
	}
	if (r == 0)
		r = uv_listen((uv_stream_t *)&s->listener, 128, connection_cb);
	if (r < 0)
		goto fail;
	if (opts->timeout_ms) {
		uint64_t every = opts->timeout_ms / 4 ? opts->timeout_ms / 4 : 1;

		uv_timer_start(&s->sweep, sweep_cb, every > 1000 ? 1000 : every,
			       every > 1000 ? 1000 : every);
	}
	*ret = s;
	return 0;
fail:
	server_free(s);
	return r;
}

/* The listener and the sweep timer close in turn; then s goes. */
static void sweep_close_cb(uv_handle_t *h)
{
	free(h->data);
}

static void listener_close_cb(uv_handle_t *h)
{
	struct server *s = h->data;

	uv_close((uv_handle_t *)&s->sweep, sweep_close_cb);
}

void server_free(struct server *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_destroy(s->conns);
	if (s->path) {
		unlink(s->path);
		free(s->path);
		s->path = NULL;
	}
	uv_close((uv_handle_t *)&s->listener, listener_close_cb);
}

int server_activated(const struct server *s)
{
	return s->activated;
}

int server_group_error(const struct server *s)
{
	return s->group_error;
}

void server_conn_set_data(struct server_conn *c, void *data)
{
	c->data = data;
}

void *server_conn_get_data(const struct server_conn *c)
{
	return c->data;
}

const struct access_client *server_conn_client(const struct server_conn *c)
{
	return &c->client;
}
