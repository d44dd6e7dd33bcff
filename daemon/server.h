/*
 * server: the daemon's Unix stream socket on the libuv loop. Accepts clients
 * (on its own socket, or one handed over by systemd socket activation), splits
 * their input into '\n'-terminated lines, enforces the request-size and
 * client-count limits and the client timeout, and queues replies. What a line means is the
 * manager's business (server_ops). Does not log.
 */
#ifndef SERVER_H
#define SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "access.h"

struct server;
struct server_conn;

struct server_options {
	const char *path; /* ignored when systemd passes a listening socket */
	mode_t mode;
	const char *group; /* "" or NULL: keep the daemon's group */
	uint32_t max_clients;
	uint32_t max_request_bytes;
	uint64_t max_reply_bytes; /* a longer reply is replaced by a too_large error */
	/* A client is disconnected when it has not finished sending a request
	 * line, or not read its replies, or has done nothing at all with no
	 * request under way, for this long. */
	uint64_t timeout_ms;
};

struct server_ops {
	/* A new client: false refuses it (permission_denied, with why). */
	bool (*accept)(struct server_conn *conn, char *why, size_t why_size, void *userdata);
	/* One complete request line (without '\n', NUL-terminated at len). */
	void (*request)(struct server_conn *conn, const char *line, size_t len, void *userdata);
	/* The client is gone; conn is freed after this returns. */
	void (*closed)(struct server_conn *conn, void *userdata);
};

/* Returns 0, or -errno: -EADDRINUSE if another daemon answers on path. */
int server_new(uv_loop_t *loop, const struct server_options *opts, const struct server_ops *ops,
	       void *userdata, struct server **ret);

/* Closes every connection and the listener; removes the socket file if this
 * server created it. Handles finish closing in the next loop iterations. */
void server_free(struct server *s);

/* True if the listening socket came from systemd. */
int server_activated(const struct server *s);

/* 0, or the errno that kept the socket file from being given to
 * opts.group (it then stays the daemon's group: only root connects). */
int server_group_error(const struct server *s);

/* Queues line (malloc'd, '\n'-terminated; ownership passes here). Returns 0
 * or -errno (line freed either way). */
int server_conn_send(struct server_conn *conn, char *line);

/* Closes after queued replies are written. */
void server_conn_close(struct server_conn *conn);

/* Keeps conn's memory alive past its closing, for work that finishes later
 * (a reply to a closed connection is dropped). Every ref needs an unref. */
void server_conn_ref(struct server_conn *conn);
void server_conn_unref(struct server_conn *conn);

void server_conn_set_data(struct server_conn *conn, void *data);
void *server_conn_get_data(const struct server_conn *conn);
/* Who the client is, from the socket's credentials. */
const struct access_client *server_conn_client(const struct server_conn *conn);

#endif
