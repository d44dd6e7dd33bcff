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

void progress_tick(void *arg);

void on_sigint(int sig);

#endif
