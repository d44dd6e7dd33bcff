/* serve: see serve.h. */
#define _GNU_SOURCE
#include "serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "serve_api.h"
#include "web_assets.h"

#define SERVE_DEFAULT_ADDR    "127.0.0.1"
#define SERVE_DEFAULT_PORT    9274 /* documented in offcpuctl(8) */
#define SERVE_MAX_CONNECTIONS 64
#define SERVE_TIMEOUT_S	      120 /* an export of a day can take a while */
#define SERVE_MAX_PARAMS      32

struct serve {
	const char *socket_path;
	bool loopback; /* only Host names of this machine are served (see host_ok) */
};

/* The query's parameters, collected by MHD_get_connection_values(). */
struct params {
	struct serve_param p[SERVE_MAX_PARAMS];
	size_t n;
	bool too_many;
};

static enum MHD_Result param_cb(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct params *ps = cls;

	(void)kind;
	if (ps->n == SERVE_MAX_PARAMS) {
		ps->too_many = true;
		return MHD_NO;
	}
	ps->p[ps->n++] = (struct serve_param){ key, value };
	return MHD_YES;
}

/* On loopback, a page of another site could reach us through DNS
 * rebinding (its name resolved to 127.0.0.1): only Host names that mean
 * this machine are served. */
static bool host_ok(const struct serve *s, struct MHD_Connection *conn)
{
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
	static const char *const names[] = { "localhost", "127.", "[::1]" };

	if (!s->loopback)
		return true;
	if (!host)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(host, names[i], strlen(names[i])))
			return true;
	return false;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, struct serve_response *res)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!res->body)
		return MHD_NO; /* out of memory: drop the connection */
	r = MHD_create_response_from_buffer(res->len, res->body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(res->body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(conn, res->status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *code,
				  const char *message)
{
	struct serve_response res;

	serve_api_error(&res, status, code, message);
	return send_response(conn, &res);
}

static enum MHD_Result send_asset(struct MHD_Connection *conn, const struct web_asset *a)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handler_cb(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct serve *s = cls;
	struct serve_response res;
	struct params ps = { 0 };
	const struct web_asset *asset;

	(void)version;
	(void)upload_data;
	/* Answer once the headers are in; a GET has no body to wait for. */
	if (!*con_cls) {
		*con_cls = (void *)1;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a body is refused below: not read */
		return MHD_YES;
	}
	if (!host_ok(s, conn))
		return send_error(conn, MHD_HTTP_FORBIDDEN, "permission_denied",
				  "this server answers only Host names of the loopback address");
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "bad_request",
				  "offcpuctl serve is read-only: GET only");
	if (!strncmp(url, "/api/", 5)) {
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, param_cb, &ps);
		if (ps.too_many)
			return send_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
					  "too many query parameters");
		if (serve_api_get(s->socket_path, url, ps.p, ps.n, &res) < 0)
			return MHD_NO;
		return send_response(conn, &res);
	}
	asset = web_asset_find(!strcmp(url, "/") ? "/index.html" : url);
	if (!asset)
		return send_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "no such page");
	return send_asset(conn, asset);
}

static bool addr_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* "ADDR:PORT", "[ADDR6]:PORT" or ":PORT" / "PORT" (loopback). 0 or -EINVAL. */
static int parse_listen(const char *s, struct sockaddr_storage *ss)
{
	char host[64] = SERVE_DEFAULT_ADDR, *end;
	const char *colon = strrchr(s, ':'), *port_s = s;
	unsigned long port;

	memset(ss, 0, sizeof(*ss));
	if (colon) {
		size_t n = colon - s;

		if (s[0] == '[' && n >= 2 && s[n - 1] == ']') {
			s++;
			n -= 2;
		}
		if (n >= sizeof(host))
			return -EINVAL;
		if (n) {
			memcpy(host, s, n);
			host[n] = '\0';
		}
		port_s = colon + 1;
	}
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (!*port_s || *end || errno || port > 65535)
		return -EINVAL;
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
		return 0;
	}
	return -EINVAL;
}

int serve_run(const char *socket_path, int argc, char **argv)
{
	static const struct option options[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "allow-remote", no_argument, NULL, 'r' },
		{ 0 },
	};
	char listen_s[80], addr_s[INET6_ADDRSTRLEN] = "";
	struct serve s = { .socket_path = socket_path };
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	bool allow_remote = false;
	unsigned port;
	sigset_t set;
	int opt, sig;

	snprintf(listen_s, sizeof(listen_s), "%s:%d", SERVE_DEFAULT_ADDR, SERVE_DEFAULT_PORT);
	const char *listen_arg = listen_s;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'l':
			listen_arg = optarg;
			break;
		case 'r':
			allow_remote = true;
			break;
		default:
			fprintf(stderr, "offcpuctl: bad serve option\nTry 'offcpuctl help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "offcpuctl: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (parse_listen(listen_arg, &ss) < 0) {
		fprintf(stderr,
			"offcpuctl: bad --listen '%s': want ADDR:PORT, e.g. 127.0.0.1:%d or "
			"[::1]:%d\n",
			listen_arg, SERVE_DEFAULT_PORT, SERVE_DEFAULT_PORT);
		return 2;
	}
	s.loopback = addr_loopback(&ss);
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr_s, sizeof(addr_s));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr_s,
			  sizeof(addr_s));
	if (!s.loopback && !allow_remote) {
		fprintf(stderr,
			"offcpuctl: refusing to listen on %s, which is not a loopback address: "
			"anyone who reaches it reads your profiles as you. Add --allow-remote "
			"to do it anyway.\n",
			addr_s);
		return 2;
	}
	if (!s.loopback)
		fprintf(stderr,
			"offcpuctl: warning: serving on %s: anyone who can reach this address "
			"reads offcpud's stored profiles with your rights on its socket, "
			"without authentication or encryption\n",
			addr_s);

	/* The server's threads inherit the mask; this thread waits for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			MHD_USE_ERROR_LOG | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, handler_cb, &s, MHD_OPTION_SOCK_ADDR, &ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_MAX_CONNECTIONS,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_TIMEOUT_S, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "offcpuctl: cannot listen on %s: %s\n", listen_arg,
			errno ? strerror(errno) : "libmicrohttpd failed to start");
		return 1;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	port = info ? info->port : 0;
	fprintf(stderr, "offcpuctl: serving http://%s%s%s:%u/ (offcpud at %s); Ctrl-C stops\n",
		ss.ss_family == AF_INET6 ? "[" : "", addr_s, ss.ss_family == AF_INET6 ? "]" : "",
		port, socket_path);
	fflush(stderr);
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	return 0;
}
