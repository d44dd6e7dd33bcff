/*
 * serve_api: the HTTP API of `offcpuctl serve`, apart from HTTP itself.
 * Turns a GET of /api/status, /api/windows, /api/export, /api/hist,
 * /api/heatmap or /api/blocked with query parameters (the CLI's option
 * names) into one of the daemon's read-only requests, sends it over the
 * Unix socket as the user running offcpuctl, and shapes the reply. No other
 * request can be built here: the table of endpoints is the whole of what
 * the server may ask the daemon. Called by serve.c on its connection
 * threads (thread-safe: no shared state). Does not print.
 */
#ifndef SERVE_API_H
#define SERVE_API_H

#include <stddef.h>

struct serve_param {
	const char *name;
	const char *value; /* NULL: given without '=' */
};

struct serve_response {
	unsigned status;	  /* HTTP status */
	const char *content_type; /* static */
	char *body;		  /* malloc'd; NULL only on ENOMEM */
	size_t len;
};

/* True if path is one of the API's endpoints. */
int serve_api_known(const char *path);

/*
 * Answers a GET of path (an endpoint) with the query's parameters. Errors
 * are a protocol error reply ({"v":1,"ok":false,"error":{"code",
 * "message"}}) with the daemon's code, or bad_request for a bad or unknown
 * parameter, not_running when no daemon listens. Returns 0, or -ENOMEM
 * (ret->body NULL).
 */
int serve_api_get(const char *socket_path, const char *path, const struct serve_param *params,
		  size_t n_params, struct serve_response *ret);

/* An error response in the API's shape, for serve.c's own errors. */
int serve_api_error(struct serve_response *ret, unsigned status, const char *code,
		    const char *message);

#endif
