/*
 * capture_command: offcpuctl capture -- CMD, the conversation with offcpud
 * around the command (command.h): a capture of the held command and the
 * processes it will start (follow_children), the command let go once
 * offcpud says the capture counts (notify_started), and a stop when it
 * exits. Reports its errors as transact() does; cmd_capture.c prints the
 * result.
 */
#ifndef CAPTURE_COMMAND_H
#define CAPTURE_COMMAND_H

#include <stdbool.h>

#include "command.h"
#include "proto.h"

/*
 * Runs argv (argv[0] looked up in PATH) under the capture req describes,
 * whose pids this fills in; with limit, req's seconds bound it, else it
 * lasts until the command exits (offcpud's max_capture_seconds at most).
 * Returns EXIT_OK with the capture's reply in *ret_reply (its line in
 * *ret_raw) and the command in *ret_cmd, ended or (the capture reached its
 * limit first) still running, for command_wait() and command_free().
 * Otherwise reports the error and returns its exit code: 127 or 126 when
 * the command could not be run, the command's own exit code if it ended
 * before it was let go; no capture is kept then, and the command has
 * ended.
 */
int capture_command_run(struct proto_request *req, char *const argv[], bool limit,
			struct proto_reply **ret_reply, char **ret_raw, struct command **ret_cmd);

#endif
