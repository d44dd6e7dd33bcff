/*
 * transact: one request to offcpud and its reply, errors reported in the
 * output mode (ctl.h), and the progress line and Ctrl-C of a capture.
 */
#ifndef TRANSACT_H
#define TRANSACT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "proto.h"

struct progress {
	time_t start;
	uint32_t seconds;
	bool shown;
};

/* Sends one request and reads its reply. On success *ret_reply is an ok
 * reply (the raw line in *ret_raw); otherwise the error is reported and its
 * exit code returned. */
int transact(const struct proto_request *req, void (*tick)(void *), void *arg,
	     struct proto_reply **ret_reply, char **ret_raw);

struct client;

/* transact()'s parts, for a conversation of more than one line (capture
 * -- CMD): the connection, and one reply line (raw, len bytes) to a cmd
 * request read into *ret_reply. Each returns EXIT_OK, or reports the error
 * as transact() does and returns its exit code. */
int transact_connect(struct client **ret);
int transact_reply(const char *raw, size_t len, enum proto_cmd cmd, struct proto_reply **ret_reply);

void progress_tick(void *arg);

void on_sigint(int sig);

#endif
