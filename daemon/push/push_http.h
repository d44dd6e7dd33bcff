/*
 * push_http: one POST of a push body to a fleet store with libcurl, and
 * what came of it, sorted into what the pusher does next. Blocking: called
 * on a pusher thread only. Does not log; credentials never reach a message.
 */
#ifndef PUSH_HTTP_H
#define PUSH_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "push_target.h"

/* What the pusher does after a try. */
enum push_http_verdict {
	PUSH_HTTP_OK,	    /* 2xx: the server has it */
	PUSH_HTTP_RETRY,    /* connection error, timeout, 5xx, 408, and 401, 403, 404, 407
			       (the target's set-up, not the window): again after a back-off */
	PUSH_HTTP_THROTTLE, /* 429: try again after Retry-After (or a back-off) */
	PUSH_HTTP_REFUSED,  /* another 4xx (400, 413...): sending it again would not help */
	PUSH_HTTP_STOPPED,  /* the stop flag was raised during the transfer */
};

struct push_http_result {
	enum push_http_verdict verdict;
	long status;		/* HTTP status; 0: none (no response) */
	int64_t retry_after_ms; /* Retry-After, as a delay; -1: none */
	char message[512];	/* why, for status and logs: the server's words or curl's */
	uint64_t bytes_sent;	/* of the body */
};

struct push_http;

/* A connection to target t (kept alive between posts). 0 or -ENOMEM. The
 * target is copied. */
int push_http_new(const struct config_push_target *t, struct push_http **ret);
void push_http_free(struct push_http *h); /* NULL-safe */

/*
 * POSTs body[0, len) to the target's URL + path (path and query, starting
 * with '/'), with content_type (gzipped, with Content-Encoding, for an
 * OTLP target); the target's tenant, credentials (read from
 * their files now, so a rotated token is used at once), TLS files, timeout
 * and bandwidth limit. *stop is polled during the transfer. Returns 0 with
 * *res filled (whatever the verdict), or -errno when the request could not
 * be made (a credentials file unreadable: -errno with res->message set, and
 * the verdict RETRY: the file may come back).
 */
int push_http_post(struct push_http *h, const char *path, const char *content_type,
		   const void *body, size_t len, const volatile bool *stop,
		   struct push_http_result *res);

/* The target's URL without user information ("https://u:p@h/" -> "https://h/"),
 * into buf. */
void push_http_safe_url(const char *url, char *buf, size_t size);

#endif
