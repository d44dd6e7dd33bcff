/*
 * client: offcpuctl's side of the socket. Connects, sends one request line,
 * and reads one reply line, optionally calling back once a second while it
 * waits (for progress) and letting a signal trigger a "stop" request.
 * Does not print.
 */
#ifndef CLIENT_H
#define CLIENT_H

#include <stddef.h>

struct client;

/* Returns 0, or -errno from connect(): -ENOENT / -ECONNREFUSED mean no daemon
 * listens there, -EACCES that the socket's permissions refuse us. */
int client_connect(const char *path, struct client **ret);
void client_free(struct client *c); /* NULL-safe */

/* Writes the whole line. Returns 0 or -errno. */
int client_send(struct client *c, const char *line);

/*
 * Reads one '\n'-terminated line (returned malloc'd, without the '\n').
 * While waiting, calls tick(arg) about once a second, and if *stop_flag has
 * become nonzero sends stop_line once. Returns 0, -ECONNRESET if the daemon
 * closed the connection first, or -errno.
 */
int client_read_line(struct client *c, char **ret_line, size_t *ret_len, void (*tick)(void *),
		     void *arg, volatile int *stop_flag, const char *stop_line);

#endif
