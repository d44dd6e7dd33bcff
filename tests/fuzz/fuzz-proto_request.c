/*
 * fuzz-proto_request: proto_request_parse() on any bytes, as the daemon
 * parses every client line with it. Properties checked (abort() if not):
 *   - a parsed request formats (proto_request_format()) into one line that
 *     parses again to the same request, and formats again to the same line;
 *   - a refused one has a NUL-terminated reason, and the error reply the
 *     daemon would send with it is a line offcpuctl parses back.
 * Build and run: scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static void fuzz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz-proto_request: property violated: %s\n", what);
		abort();
	}
}

/* The error reply the daemon sends for a refused line must be one line
 * that offcpuctl reads back with the same code. */
static void fuzz_error_reply(const char *err)
{
	struct proto_reply *reply;
	char *line = proto_reply_error(PROTO_ERR_BAD_REQUEST, err);
	size_t len;

	fuzz_check(line != NULL, "proto_reply_error() failed");
	len = strlen(line);
	fuzz_check(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', len - 1),
		   "error reply is not one line");
	fuzz_check(proto_reply_parse(line, len, &reply) == 0, "error reply does not parse");
	fuzz_check(!reply->ok && !strcmp(reply->error_code, PROTO_ERR_BAD_REQUEST),
		   "error reply lost its code");
	proto_reply_free(reply);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Large (pids, tids, patterns, request symbols): not on the stack. */
	static struct proto_request req, again;
	char err[256], *line, *line2;
	size_t len;

	memset(err, 'x', sizeof(err));
	if (proto_request_parse((const char *)data, size, &req, err, sizeof(err)) < 0) {
		fuzz_check(memchr(err, '\0', sizeof(err)) != NULL, "reason not terminated");
		fuzz_check(err[0] != '\0', "refused without a reason");
		fuzz_error_reply(err);
		return 0;
	}

	line = proto_request_format(&req);
	fuzz_check(line != NULL, "proto_request_format() failed");
	len = strlen(line);
	fuzz_check(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', len - 1),
		   "formatted request is not one line");
	if (proto_request_parse(line, len, &again, err, sizeof(err)) < 0) {
		fprintf(stderr, "formatted: %s reparse: %s\n", line, err);
		fuzz_check(0, "a formatted request does not parse");
	}
	/* Both structs were zeroed whole by the parser, padding included. */
	fuzz_check(!memcmp(&req, &again, sizeof(req)), "round trip changed the request");
	line2 = proto_request_format(&again);
	fuzz_check(line2 != NULL && !strcmp(line, line2), "round trip changed the line");
	free(line2);
	free(line);
	return 0;
}
