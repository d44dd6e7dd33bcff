/*
 * transact: what every subcommand that talks to offcpud shares: errors reported in
 * the output mode (text or --json), one request and its reply, the
 * progress line and Ctrl-C of a running capture.
 */
#include "transact.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client.h"
#include "ctl.h"

int fail(int code, const char *json_code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_output) {
		char *line = proto_reply_error(json_code, msg);

		fputs(line ? line : "{\"ok\":false}\n", stdout);
		free(line);
	} else {
		fprintf(stderr, "offcpuctl: %s\n", msg);
	}
	return code;
}

int usage_error(const char *fmt, const char *arg)
{
	char msg[2048]; /* room for a quoted regex */

	snprintf(msg, sizeof(msg), fmt, arg);
	if (!json_output)
		fprintf(stderr, "offcpuctl: %s\nTry 'offcpuctl help'.\n", msg);
	else
		fail(EXIT_USAGE, "bad_arguments", "%s", msg);
	return EXIT_USAGE;
}

/* How to start offcpud here: with systemctl only where systemd is the
 * init system (sd_booted()'s test). */
static const char *start_advice(void)
{
	struct stat st;

	return lstat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode)
		       ? "start it with 'systemctl start offcpud'"
		       : "start it with 'offcpud' as root (this host does not run systemd)";
}

static int connect_error(int r)
{
	struct stat st;

	/* A path that is there but no socket: a wrong --socket, not a stopped
	 * daemon. */
	if ((r == -ECONNREFUSED || r == -ENOTSOCK) && stat(socket_path, &st) == 0 &&
	    !S_ISSOCK(st.st_mode))
		return fail(EXIT_USAGE, "not_a_socket",
			    "%s is not a socket but a %s: --socket (or OFFCPUD_SOCKET) names "
			    "offcpud's socket, %s by default",
			    socket_path, S_ISDIR(st.st_mode) ? "directory" : S_ISREG(st.st_mode) ? "regular file" : "file",
			    DEFAULT_SOCKET);
	if (r == -ENOENT || r == -ECONNREFUSED)
		return fail(EXIT_NOT_RUNNING, "not_running",
			    "offcpud is not running (nothing listens on %s); %s", socket_path,
			    start_advice());
	if (r == -EACCES || r == -EPERM)
		return fail(EXIT_PERMISSION, PROTO_ERR_PERMISSION,
			    "permission denied on %s (run as root or as a member of the "
			    "socket's group)",
			    socket_path);
	return fail(EXIT_ERROR, "connect_failed", "cannot connect to %s: %s", socket_path,
		    strerror(-r));
}

/* Maps a daemon error reply to an exit code and reports it. */
static int reply_error(const struct proto_reply *reply, const char *raw)
{
	static const struct {
		const char *code;
		int exit_code;
	} codes[] = {
		{ PROTO_ERR_BAD_REQUEST, EXIT_USAGE },	     { PROTO_ERR_TOO_LARGE, EXIT_USAGE },
		{ PROTO_ERR_NO_SUCH_PID, EXIT_NO_SUCH_PID }, { PROTO_ERR_NO_SUCH_CGROUP, EXIT_NO_SUCH_PID },
		{ PROTO_ERR_NO_SUCH_TARGET, EXIT_NO_SUCH_PID },
		{ PROTO_ERR_BUSY, EXIT_BUSY },
		{ PROTO_ERR_PERMISSION, EXIT_PERMISSION },
	};
	int code = EXIT_ERROR;

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strcmp(reply->error_code, codes[i].code))
			code = codes[i].exit_code;
	if (json_output)
		printf("%s\n", raw);
	else
		fprintf(stderr, "offcpuctl: %s\n", reply->error_message);
	return code;
}

int transact(const struct proto_request *req, void (*tick)(void *), void *arg,
	     struct proto_reply **ret_reply, char **ret_raw)
{
	static const char stop_line[] = "{\"v\":1,\"cmd\":\"stop\"}\n";
	struct proto_reply *reply = NULL;
	struct client *c = NULL;
	char *line = NULL, *raw = NULL;
	size_t len;
	int r;

	line = proto_request_format(req);
	if (!line)
		return fail(EXIT_ERROR, "internal", "out of memory");
	r = client_connect(socket_path, &c);
	if (r < 0) {
		free(line);
		return connect_error(r);
	}
	r = client_send(c, line);
	free(line);
	/* A daemon that refuses a client (busy, permission) says why and closes
	 * at once: that reply can still be read after the send failed. */
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = client_read_line(c, &raw, &len, tick, arg, &stop_requested, stop_line);
	client_free(c);
	if (r == -ECONNRESET)
		return fail(EXIT_ERROR, "connection_closed",
			    "offcpud closed the connection without replying");
	if (r < 0)
		return fail(EXIT_ERROR, "io_error", "talking to offcpud: %s", strerror(-r));
	r = transact_reply(raw, len, req->cmd, &reply);
	if (r != EXIT_OK) {
		free(raw);
		return r;
	}
	*ret_reply = reply;
	*ret_raw = raw;
	return EXIT_OK;
}

int transact_connect(struct client **ret)
{
	int r = client_connect(socket_path, ret);

	return r < 0 ? connect_error(r) : EXIT_OK;
}

int transact_reply(const char *raw, size_t len, enum proto_cmd cmd, struct proto_reply **ret_reply)
{
	struct proto_reply *reply;
	int r;

	if (proto_reply_parse(raw, len, &reply) < 0) {
		bool json = len && raw[0] == '{';

		/* Not JSON at all: whatever listens there is not offcpud. */
		return json ? fail(EXIT_ERROR, "bad_reply",
				   "offcpud sent a reply this offcpuctl cannot read")
			    : fail(EXIT_ERROR, "not_offcpud",
				   "what listens on %s is not offcpud (its reply is not offcpud's "
				   "protocol)",
				   socket_path);
	}
	if (!reply->ok) {
		r = reply_error(reply, raw);
		proto_reply_free(reply);
		return r;
	}
	if (reply->cmd != cmd) {
		proto_reply_free(reply);
		return fail(EXIT_ERROR, "bad_reply", "offcpud answered another command");
	}
	*ret_reply = reply;
	return EXIT_OK;
}

void progress_tick(void *arg)
{
	struct progress *p = arg;
	long elapsed = time(NULL) - p->start;
	long left = (long)p->seconds - elapsed;

	fprintf(stderr, "\r\033[Kcapturing: %ld s elapsed, %ld s remaining%s", elapsed,
		left > 0 ? left : 0, stop_requested ? " (stopping)" : " (Ctrl-C ends early)");
	p->shown = true;
}

void on_sigint(int sig)
{
	stop_requested = 1;
	signal(sig, SIG_DFL); /* a second Ctrl-C quits at once */
}
