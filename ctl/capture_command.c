/* capture_command: see capture_command.h. */
#include "capture_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "ctl.h"
#include "transact.h"

static const char stop_line[] = "{\"v\":1,\"cmd\":\"stop\"}\n";

/* Reads the next line into a reply to a capture: EXIT_OK, or the error
 * reported and its exit code. Sends stop once the command has ended. */
static int read_reply(struct client *cl, struct command *cmd, struct proto_reply **ret_reply,
		      char **ret_raw)
{
	char *raw;
	size_t len;
	int r;

	r = client_read_line(cl, &raw, &len, NULL, NULL, command_exit_flag(cmd), stop_line);
	if (r == -ECONNRESET)
		return fail(EXIT_ERROR, "connection_closed",
			    "offcpud closed the connection without replying");
	if (r < 0)
		return fail(EXIT_ERROR, "io_error", "talking to offcpud: %s", strerror(-r));
	r = transact_reply(raw, len, PROTO_CMD_CAPTURE, ret_reply);
	if (r != EXIT_OK) {
		free(raw);
		return r;
	}
	*ret_raw = raw;
	return EXIT_OK;
}

/* Why the capture ended with the command still running. */
static void limit_note(bool limit, uint32_t seconds)
{
	if (limit)
		fprintf(stderr,
			"offcpuctl: note: the capture ended at --seconds %u before the command "
			"exited; offcpuctl waits for it\n",
			seconds);
	else
		fprintf(stderr,
			"offcpuctl: note: the capture ended at offcpud's max_capture_seconds "
			"(%u s) before the command exited; offcpuctl waits for it\n",
			seconds);
}

int capture_command_run(struct proto_request *req, char *const argv[], bool limit,
			struct proto_reply **ret_reply, char **ret_raw, struct command **ret_cmd)
{
	struct proto_reply *reply = NULL;
	struct command *cmd = NULL;
	struct client *cl = NULL;
	char *line, *raw = NULL;
	uint32_t seconds;
	int r;

	/* offcpud first: the command must not run unprofiled. */
	r = transact_connect(&cl);
	if (r != EXIT_OK)
		return r;
	r = command_spawn(argv, &cmd);
	if (r < 0) {
		client_free(cl);
		return fail(EXIT_ERROR, "spawn_failed", "cannot start '%s': %s", argv[0],
			    r == -ESRCH ? "SUDO_UID and SUDO_GID name no usable user"
					: strerror(-r));
	}
	req->capture.pids[0] = (uint32_t)command_pid(cmd);
	req->capture.n_pids = 1;
	req->capture.follow_children = 1;
	req->capture.notify_started = 1;
	if (!limit)
		req->capture.seconds = 0; /* until stop */
	line = proto_request_format(req);
	r = line ? client_send(cl, line) : -ENOMEM;
	free(line);
	if (r < 0) {
		r = fail(EXIT_ERROR, "io_error", "talking to offcpud: %s", strerror(-r));
		goto fail;
	}

	/* Refused (no such kind here, busy...), or counting. */
	r = read_reply(cl, cmd, &reply, &raw);
	if (r != EXIT_OK)
		goto fail;
	if (!reply->has_started) {
		r = fail(EXIT_ERROR, "bad_reply",
			 "offcpud did not say when the capture started (an older offcpud?)");
		goto fail;
	}
	seconds = reply->started.seconds;
	proto_reply_free(reply);
	free(raw);
	reply = NULL;
	raw = NULL;

	r = command_release(cmd);
	if (r == -ECHILD) {
		/* Killed while held (Ctrl-C during a long program load). */
		r = command_wait(cmd);
		fprintf(stderr, "offcpuctl: the command ended before it ran (exit code %d)\n", r);
		goto fail;
	}
	if (r < 0) {
		/* Closing the connection cancels the capture: nothing is kept. */
		r = fail(command_exec_exit_code(r), "exec_failed", "cannot run '%s': %s", argv[0],
			 strerror(-r));
		goto fail;
	}

	r = read_reply(cl, cmd, &reply, &raw);
	if (r == EXIT_OK && reply->has_started) {
		proto_reply_free(reply);
		free(raw);
		r = fail(EXIT_ERROR, "bad_reply", "offcpud said twice that the capture started");
	}
	client_free(cl);
	if (r != EXIT_OK) {
		command_free(cmd); /* waits for it */
		return r;
	}
	if (!*command_exit_flag(cmd))
		limit_note(limit, seconds);
	*ret_reply = reply;
	*ret_raw = raw;
	*ret_cmd = cmd;
	return EXIT_OK;
fail:
	proto_reply_free(reply);
	free(raw);
	client_free(cl);
	command_free(cmd); /* a held command exits unrun */
	return r;
}
