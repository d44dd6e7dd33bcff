/*
 * test-proto: unit test of proto/ (requests, replies) and thread_state.
 * Links only proto/'s request and reply files, common/ and cJSON. Exit status 0 on success;
 * every failed check is printed as FILE:LINE.
 */
#include "proto.h"
#include "thread_state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"

/* For messages about strings that may be NULL. */
#define STR(s) ((s) ? (s) : "(null)")

static bool starts_with(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

/* ---- request helpers --------------------------------------------------- */

static int parse_at(const char *file, int line, const char *buf, size_t len,
		    struct proto_request *req)
{
	char err[256];
	int r;

	memset(err, 'x', sizeof(err));
	r = proto_request_parse(buf, len, req, err, sizeof(err));
	CHECK_AT(file, line, r == 0, "(parse '%.*s': r=%d err='%s')", (int)len, buf, r,
		 r ? err : "");
	return r;
}

#define PARSE_OK(buf, req) parse_at(__FILE__, __LINE__, buf, strlen(buf), req)

/* Expects buf to be rejected with a message containing want. */
static void bad_at(const char *file, int line, const char *buf, size_t len, const char *want)
{
	struct proto_request req;
	char err[256];
	int r;

	memset(err, 'x', sizeof(err));
	r = proto_request_parse(buf, len, &req, err, sizeof(err));
	CHECK_AT(file, line, r == -EINVAL, "(parse '%.*s' returned %d)", (int)len, buf, r);
	CHECK_AT(file, line, memchr(err, '\0', sizeof(err)) != NULL, "(err not terminated)");
	if (r == -EINVAL && memchr(err, '\0', sizeof(err)))
		CHECK_AT(file, line, strstr(err, want) != NULL, "(err '%s' lacks '%s')", err, want);
}

#define BAD(buf, want) bad_at(__FILE__, __LINE__, buf, strlen(buf), want)

/* A capture request line with extra members appended after "cmd". */
static char *capture_line(const char *extra)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf), "{\"v\":1,\"cmd\":\"capture\"%s%s}", *extra ? "," : "", extra);
	return buf;
}

#define CAPTURE_OK(extra, req)	 PARSE_OK(capture_line(extra), req)
#define CAPTURE_BAD(extra, want) BAD(capture_line(extra), want)

/* Request lines of other commands, built like capture_line(). */
static char *cmd_line(const char *cmd, const char *extra)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf), "{\"v\":1,\"cmd\":\"%s\"%s%s}", cmd, *extra ? "," : "", extra);
	return buf;
}

#define WINDOWS_OK(extra, req)	 PARSE_OK(cmd_line("windows", extra), req)
#define WINDOWS_BAD(extra, want) BAD(cmd_line("windows", extra), want)
#define EXPORT_OK(extra, req)	 PARSE_OK(cmd_line("export", extra), req)
#define EXPORT_BAD(extra, want)	 BAD(cmd_line("export", extra), want)
#define HIST_OK(extra, req)	 PARSE_OK(cmd_line("hist", extra), req)
#define HIST_BAD(extra, want)	 BAD(cmd_line("hist", extra), want)

/* Strict UTF-8 check, to prove replies stay valid JSON text. */
static int utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned n, cp;

		if (p[0] < 0x80) {
			p++;
			continue;
		}
		if ((p[0] & 0xe0) == 0xc0) {
			n = 1;
			cp = p[0] & 0x1f;
		} else if ((p[0] & 0xf0) == 0xe0) {
			n = 2;
			cp = p[0] & 0x0f;
		} else if ((p[0] & 0xf8) == 0xf0) {
			n = 3;
			cp = p[0] & 0x07;
		} else {
			return 0;
		}
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		p += n + 1;
	}
	return 1;
}

/* One '\n', at the end, and valid UTF-8 before it. */
static void line_at(const char *file, int line, const char *s)
{
	size_t len;

	CHECK_AT(file, line, s != NULL, "(no line)");
	if (!s)
		return;
	len = strlen(s);
	CHECK_AT(file, line, len > 1 && s[len - 1] == '\n', "('%s')", STR(s));
	CHECK_AT(file, line, strchr(s, '\n') == s + len - 1, "('%s')", STR(s));
	CHECK_AT(file, line, utf8_valid(s), "('%s')", STR(s));
}

#define CHECK_LINE(s) line_at(__FILE__, __LINE__, s)

/* ---- requests ---------------------------------------------------------- */

static void test_defaults(void)
{
	struct proto_request req;

	memset(&req, 0xa5, sizeof(req));
	if (CAPTURE_OK("", &req) == 0) {
		CHECK(req.cmd == PROTO_CMD_CAPTURE);
		CHECK(req.capture.n_pids == 0);
		CHECK(req.capture.n_tids == 0);
		CHECK(req.capture.seconds == 10);
		CHECK(req.capture.state_mask == THREAD_STATE_ALL);
		CHECK(!req.capture.comm[0] && !req.capture.grep[0] && !req.capture.exclude[0]);
		CHECK(req.capture.min_block_us == 0);
		CHECK(req.capture.max_block_us == 0);
		CHECK(req.capture.stacks == PROTO_STACKS_BOTH);
		CHECK(req.capture.format == PROTO_FORMAT_FOLDED);
		CHECK(req.capture.kind == PROTO_KIND_OFFCPU);
		CHECK(req.capture.split_runq == 0);
		CHECK(req.capture.chain_depth == PROTO_CHAIN_DEPTH_DEFAULT);
		CHECK(req.capture.lines == 0);
	}
	if (PARSE_OK("{\"v\":1,\"cmd\":\"status\"}", &req) == 0)
		CHECK(req.cmd == PROTO_CMD_STATUS);
	if (PARSE_OK("{\"cmd\":\"stop\",\"v\":1}\n", &req) == 0)
		CHECK(req.cmd == PROTO_CMD_STOP);
	if (PARSE_OK("  {\t\"v\" : 1 , \"cmd\" : \"status\" }\r\n", &req) == 0)
		CHECK(req.cmd == PROTO_CMD_STATUS);
	/* len is authoritative: bytes past it are not looked at. */
	if (parse_at(__FILE__, __LINE__, "{\"v\":1,\"cmd\":\"status\"}garbage", 22, &req) == 0)
		CHECK(req.cmd == PROTO_CMD_STATUS);
}

static void test_fields_valid(void)
{
	struct proto_request req;

	if (CAPTURE_OK("\"pids\":[1,4194304,77],\"tids\":[42]", &req) == 0) {
		CHECK(req.capture.n_pids == 3);
		CHECK(req.capture.pids[0] == 1 && req.capture.pids[1] == 4194304 &&
		      req.capture.pids[2] == 77);
		CHECK(req.capture.n_tids == 1 && req.capture.tids[0] == 42);
	}
	if (CAPTURE_OK("\"pids\":[],\"tids\":[]", &req) == 0)
		CHECK(req.capture.n_pids == 0 && req.capture.n_tids == 0);
	if (CAPTURE_OK("\"seconds\":1", &req) == 0)
		CHECK(req.capture.seconds == 1);
	if (CAPTURE_OK("\"seconds\":86400", &req) == 0)
		CHECK(req.capture.seconds == 86400);
	if (CAPTURE_OK("\"seconds\":3e1", &req) == 0) /* integral, whatever the spelling */
		CHECK(req.capture.seconds == 30);
	if (CAPTURE_OK("\"seconds\":5.0", &req) == 0)
		CHECK(req.capture.seconds == 5);
	if (CAPTURE_OK("\"states\":[\"S\",\"disk\"]", &req) == 0)
		CHECK(req.capture.state_mask == ((1u << 1) | (1u << 2)));
	if (CAPTURE_OK("\"states\":[\"running\",\"R\",\"o\"]", &req) == 0)
		CHECK(req.capture.state_mask == ((1u << 0) | (1u << 3)));
	if (CAPTURE_OK("\"min_block_us\":1000,\"max_block_us\":2000", &req) == 0)
		CHECK(req.capture.min_block_us == 1000 && req.capture.max_block_us == 2000);
	if (CAPTURE_OK("\"min_block_us\":1000,\"max_block_us\":1000", &req) == 0)
		CHECK(req.capture.max_block_us == 1000);
	if (CAPTURE_OK("\"min_block_us\":1000,\"max_block_us\":0", &req) == 0)
		CHECK(req.capture.max_block_us == 0 && req.capture.min_block_us == 1000);
	if (CAPTURE_OK("\"min_block_us\":9007199254740992", &req) == 0)
		CHECK(req.capture.min_block_us == UINT64_C(9007199254740992));
	if (CAPTURE_OK("\"max_block_us\":-0", &req) == 0)
		CHECK(req.capture.max_block_us == 0);
	if (CAPTURE_OK("\"stacks\":\"user\",\"format\":\"json\"", &req) == 0)
		CHECK(req.capture.stacks == PROTO_STACKS_USER &&
		      req.capture.format == PROTO_FORMAT_JSON);
	if (CAPTURE_OK("\"stacks\":\"kernel\",\"format\":\"folded\"", &req) == 0)
		CHECK(req.capture.stacks == PROTO_STACKS_KERNEL &&
		      req.capture.format == PROTO_FORMAT_FOLDED);
	if (CAPTURE_OK("\"stacks\":\"both\"", &req) == 0)
		CHECK(req.capture.stacks == PROTO_STACKS_BOTH);
}

static void test_ids_limit(void)
{
	char extra[4096], *p;
	struct proto_request req;

	p = extra + sprintf(extra, "\"pids\":[");
	for (int i = 0; i < PROTO_MAX_IDS; i++)
		p += sprintf(p, "%s%d", i ? "," : "", i + 1);
	strcpy(p, "]");
	if (CAPTURE_OK(extra, &req) == 0) {
		CHECK(req.capture.n_pids == PROTO_MAX_IDS);
		CHECK(req.capture.pids[PROTO_MAX_IDS - 1] == PROTO_MAX_IDS);
	}
	sprintf(p, ",%d]", PROTO_MAX_IDS + 1);
	CAPTURE_BAD(extra, "at most 256");

	p = extra + sprintf(extra, "\"tids\":[");
	for (int i = 0; i <= PROTO_MAX_IDS; i++)
		p += sprintf(p, "%s%d", i ? "," : "", i + 1);
	strcpy(p, "]");
	CAPTURE_BAD(extra, "field 'tids' has 257 entries");
}

static void test_fields_invalid(void)
{
	/* pids / tids */
	CAPTURE_BAD("\"pids\":1", "field 'pids' must be an array of integers");
	CAPTURE_BAD("\"pids\":{}", "field 'pids' must be an array");
	CAPTURE_BAD("\"pids\":null", "field 'pids' must be an array");
	CAPTURE_BAD("\"pids\":[0]", "field 'pids'[0] must be between 1 and 4194304");
	CAPTURE_BAD("\"pids\":[1,4194305]", "field 'pids'[1] must be between 1 and 4194304");
	CAPTURE_BAD("\"pids\":[-5]", "between 1 and 4194304");
	CAPTURE_BAD("\"pids\":[1.5]", "field 'pids'[0] must be an integer");
	CAPTURE_BAD("\"pids\":[\"1\"]", "must be an integer");
	CAPTURE_BAD("\"pids\":[[1]]", "must be an integer");
	CAPTURE_BAD("\"tids\":\"7\"", "field 'tids' must be an array");
	CAPTURE_BAD("\"tids\":[0]", "field 'tids'[0] must be between");
	CAPTURE_BAD("\"tids\":[true]", "field 'tids'[0] must be an integer");

	/* seconds */
	CAPTURE_BAD("\"seconds\":0", "field 'seconds' must be between 1 and 86400");
	CAPTURE_BAD("\"seconds\":86401", "field 'seconds' must be between 1 and 86400");
	CAPTURE_BAD("\"seconds\":-1", "field 'seconds' must be between 1 and 86400");
	CAPTURE_BAD("\"seconds\":1.5", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":0.5", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":\"10\"", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":true", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":null", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":[10]", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":1e300", "field 'seconds' must be between 1 and 86400");
	CAPTURE_BAD("\"seconds\":1e999", "field 'seconds' must be between 1 and 86400");
	CAPTURE_BAD("\"seconds\":-1e999", "field 'seconds' must be between 1 and 86400");
	CAPTURE_BAD("\"seconds\":9007199254740993", "field 'seconds' must be between");

	/* min_block_us / max_block_us */
	CAPTURE_BAD("\"min_block_us\":-1", "field 'min_block_us' must be between 0 and");
	CAPTURE_BAD("\"min_block_us\":0.25", "field 'min_block_us' must be an integer");
	CAPTURE_BAD("\"min_block_us\":9007199254740994", "field 'min_block_us' must be between");
	CAPTURE_BAD("\"min_block_us\":18446744073709551616", "field 'min_block_us' must be");
	CAPTURE_BAD("\"min_block_us\":\"5\"", "field 'min_block_us' must be an integer");
	CAPTURE_BAD("\"max_block_us\":-3", "field 'max_block_us' must be between 0 and");
	CAPTURE_BAD("\"max_block_us\":2.5", "field 'max_block_us' must be an integer");
	CAPTURE_BAD("\"min_block_us\":100,\"max_block_us\":50",
		    "field 'max_block_us' (50) must be >= 'min_block_us' (100)");
	CAPTURE_BAD("\"max_block_us\":50,\"min_block_us\":100", "field 'max_block_us'");

	/* states */
	CAPTURE_BAD("\"states\":[]", "field 'states' must not be empty");
	CAPTURE_BAD("\"states\":\"S\"", "field 'states' must be an array of strings");
	CAPTURE_BAD("\"states\":[1]", "field 'states' must be an array of strings");
	CAPTURE_BAD("\"states\":[\"S\",null]", "field 'states' must be an array of strings");
	CAPTURE_BAD("\"states\":[\"x\"]", "unknown thread state 'x'");
	CAPTURE_BAD("\"states\":[\"S,D\"]", "unknown thread state 'S,D'");
	CAPTURE_BAD("\"states\":[\"\"]", "unknown thread state ''");

	/* stacks / format */
	CAPTURE_BAD("\"stacks\":\"none\"", "field 'stacks' must be one of: both, user, kernel");
	CAPTURE_BAD("\"stacks\":\"Both\"", "field 'stacks' must be one of");
	CAPTURE_BAD("\"stacks\":0", "field 'stacks' must be one of");
	CAPTURE_BAD("\"format\":\"xml\"",
		    "field 'format' must be one of: folded, json, svg, speedscope");
	CAPTURE_BAD("\"format\":\"SVG\"", "field 'format' must be one of");
	CAPTURE_BAD("\"format\":null", "field 'format' must be one of");

	/* names */
	CAPTURE_BAD("\"foo\":1", "unknown field 'foo'");
	CAPTURE_BAD("\"Seconds\":5", "unknown field 'Seconds'");
	CAPTURE_BAD("\"seconds\":5,\"seconds\":6", "duplicate field 'seconds'");
	CAPTURE_BAD("\"v\":1", "duplicate field 'v'");
	CAPTURE_BAD("\"cmd\":\"capture\"", "duplicate field 'cmd'");
	BAD("{\"v\":1,\"cmd\":\"status\",\"seconds\":5}", "unknown field 'seconds'");
	BAD("{\"v\":1,\"cmd\":\"stop\",\"x\":null}", "unknown field 'x'");
}

static void test_envelope(void)
{
	char buf[64];

	BAD("", "empty request");
	BAD("\n", "malformed JSON at byte");
	BAD("{", "malformed JSON at byte");
	BAD("{\"v\":1,", "malformed JSON at byte");
	BAD("not json", "malformed JSON at byte 0");
	BAD("{\"v\":1} x", "malformed JSON at byte 8");
	BAD("{\"v\":1}{\"v\":1}", "malformed JSON at byte 7");
	BAD("{\"v\":1,\"cmd\":\"status\",}", "malformed JSON at byte");
	BAD("{'v':1}", "malformed JSON at byte");

	BAD("[1]", "request must be a JSON object");
	BAD("1", "request must be a JSON object");
	BAD("\"status\"", "request must be a JSON object");
	BAD("null", "request must be a JSON object");
	BAD("[{\"v\":1,\"cmd\":\"status\"}]", "request must be a JSON object");

	BAD("{\"cmd\":\"status\"}", "missing field 'v'");
	BAD("{}", "missing field 'v'");
	BAD("{\"v\":2,\"cmd\":\"status\"}", "unsupported protocol version 2; this daemon speaks 1");
	BAD("{\"v\":0,\"cmd\":\"status\"}", "unsupported protocol version 0");
	BAD("{\"v\":\"1\",\"cmd\":\"status\"}", "field 'v' must be an integer");
	BAD("{\"v\":1.5,\"cmd\":\"status\"}", "unsupported protocol version 1.5;");
	BAD("{\"v\":-1,\"cmd\":\"status\"}", "unsupported protocol version -1;");
	BAD("{\"v\":null,\"cmd\":\"status\"}", "field 'v' must be an integer");
	BAD("{\"v\":1e999,\"cmd\":\"status\"}", "unsupported protocol version inf;");
	BAD("{\"V\":1,\"cmd\":\"status\"}", "missing field 'v'");
	/* The version is checked before anything else. */
	BAD("{\"v\":7,\"cmd\":\"frobnicate\",\"x\":1}", "unsupported protocol version 7");

	BAD("{\"v\":1}", "missing field 'cmd'");
	BAD("{\"v\":1,\"cmd\":5}", "field 'cmd' must be a string");
	BAD("{\"v\":1,\"cmd\":null}", "field 'cmd' must be a string");
	BAD("{\"v\":1,\"cmd\":\"frobnicate\"}", "unknown command 'frobnicate'");
	BAD("{\"v\":1,\"cmd\":\"STATUS\"}", "unknown command 'STATUS'");

	/* Embedded NULs: len counts, and a NUL is never valid. */
	memcpy(buf, "{\"v\":1,\"cmd\":\"sta\0tus\"}", 24);
	bad_at(__FILE__, __LINE__, buf, 24, "malformed JSON at byte 17");
	memcpy(buf, "{\"v\":1,\"cmd\":\"status\"}\0", 23);
	bad_at(__FILE__, __LINE__, buf, 23, "malformed JSON at byte 22");
	memcpy(buf, "\0{\"v\":1,\"cmd\":\"status\"}", 23);
	bad_at(__FILE__, __LINE__, buf, 23, "malformed JSON at byte 0");
	memcpy(buf, "{\"v\":1,\"cmd\":\"status\\\0\"}", 24);
	bad_at(__FILE__, __LINE__, buf, 24, "malformed JSON at byte 21");
	/* Escaped NULs would cut strings short inside cJSON. */
	BAD("{\"v\":1,\"cmd\":\"status\\u0000x\"}", "malformed JSON at byte 20");
	BAD("{\"v\":1,\"cmd\":\"status\",\"seconds\\u0000\":1}", "malformed JSON at byte 30");
	/* ...but an escaped backslash followed by "u0000" is just text. */
	CAPTURE_BAD("\"states\":[\"\\\\u0000\"]", "unknown thread state '\\u0000'");
	CAPTURE_BAD("\"states\":[\"\\u0041\"]", "unknown thread state 'A'");
}

static void test_err_buffer(void)
{
	struct proto_request req;
	char err[16];

	/* A long message is cut, and still NUL-terminated. */
	memset(err, 'x', sizeof(err));
	CHECK(proto_request_parse("{\"v\":9,\"cmd\":\"status\"}", 22, &req, err, 8) == -EINVAL);
	CHECK(strlen(err) == 7);
	CHECK(err[8] == 'x' && err[15] == 'x');
	/* No buffer at all is fine too. */
	CHECK(proto_request_parse("{", 1, &req, NULL, 0) == -EINVAL);
	CHECK(proto_request_parse(NULL, 0, &req, err, sizeof(err)) == -EINVAL);
	/* Success leaves err empty. */
	CHECK(proto_request_parse("{\"v\":1,\"cmd\":\"stop\"}", 20, &req, err, sizeof(err)) == 0);
	CHECK(err[0] == '\0');
}

static void check_render_at(const char *file, int line, const struct proto_render *a,
			    const struct proto_render *b, const char *s)
{
	CHECK_AT(file, line, !strcmp(a->title, b->title), "(%s)", s);
	CHECK_AT(file, line, !strcmp(a->subtitle, b->subtitle), "(%s)", s);
	CHECK_AT(file, line, !strcmp(a->countname, b->countname), "(%s)", s);
	CHECK_AT(file, line, a->width == b->width, "(%s)", s);
	CHECK_AT(file, line, a->frame_height == b->frame_height, "(%s)", s);
	CHECK_AT(file, line, !strcmp(a->minwidth, b->minwidth), "(%s)", s);
	CHECK_AT(file, line, a->inverted == b->inverted, "(%s)", s);
	CHECK_AT(file, line, a->reverse == b->reverse, "(%s)", s);
	CHECK_AT(file, line, a->flamechart == b->flamechart, "(%s)", s);
	CHECK_AT(file, line, a->palette == b->palette, "(%s)", s);
}

static void check_roundtrip_at(const char *file, int line, const struct proto_request *in)
{
	struct proto_request out;
	char *s = proto_request_format(in);

	line_at(file, line, s);
	if (!s)
		return;
	memset(&out, 0x5a, sizeof(out));
	if (parse_at(file, line, s, strlen(s), &out) == 0) {
		CHECK_AT(file, line, out.cmd == in->cmd, "(%s)", s);
		if (in->cmd == PROTO_CMD_CAPTURE) {
			const struct proto_capture_request *a = &in->capture, *b = &out.capture;

			CHECK_AT(file, line, a->n_pids == b->n_pids, "(%s)", s);
			CHECK_AT(file, line,
				 !memcmp(a->pids, b->pids, a->n_pids * sizeof(a->pids[0])), "(%s)",
				 s);
			CHECK_AT(file, line, a->n_tids == b->n_tids, "(%s)", s);
			CHECK_AT(file, line,
				 !memcmp(a->tids, b->tids, a->n_tids * sizeof(a->tids[0])), "(%s)",
				 s);
			CHECK_AT(file, line, a->seconds == b->seconds, "(%s)", s);
			CHECK_AT(file, line, a->state_mask == b->state_mask, "(%s)", s);
			CHECK_AT(file, line, !strcmp(a->comm, b->comm), "(%s)", s);
			CHECK_AT(file, line, !strcmp(a->grep, b->grep), "(%s)", s);
			CHECK_AT(file, line, !strcmp(a->exclude, b->exclude), "(%s)", s);
			CHECK_AT(file, line, a->min_block_us == b->min_block_us, "(%s)", s);
			CHECK_AT(file, line, a->max_block_us == b->max_block_us, "(%s)", s);
			CHECK_AT(file, line, a->stacks == b->stacks, "(%s)", s);
			CHECK_AT(file, line, a->format == b->format, "(%s)", s);
			check_render_at(file, line, &a->render, &b->render, s);
			CHECK_AT(file, line, a->kind == b->kind, "(%s)", s);
			CHECK_AT(file, line, a->split_runq == b->split_runq, "(%s)", s);
			CHECK_AT(file, line, a->with_filename == b->with_filename, "(%s)", s);
			CHECK_AT(file, line, a->oncpu == b->oncpu, "(%s)", s);
			CHECK_AT(file, line, a->chain_depth == b->chain_depth, "(%s)", s);
			CHECK_AT(file, line, a->lines == b->lines, "(%s)", s);
		}
		if (in->cmd == PROTO_CMD_WINDOWS)
			CHECK_AT(file, line, in->windows.since_ms == out.windows.since_ms, "(%s)",
				 s);
		if (in->cmd == PROTO_CMD_EXPORT) {
			const struct proto_export_request *a = &in->export, *b = &out.export;

			CHECK_AT(file, line, a->from_ms == b->from_ms, "(%s)", s);
			CHECK_AT(file, line, a->to_ms == b->to_ms, "(%s)", s);
			CHECK_AT(file, line, a->capture_id == b->capture_id, "(%s)", s);
			CHECK_AT(file, line, a->n_pids == b->n_pids, "(%s)", s);
			CHECK_AT(file, line,
				 !memcmp(a->pids, b->pids, a->n_pids * sizeof(a->pids[0])), "(%s)",
				 s);
			CHECK_AT(file, line, !strcmp(a->comm, b->comm), "(%s)", s);
			CHECK_AT(file, line, a->state_mask == b->state_mask, "(%s)", s);
			CHECK_AT(file, line, !strcmp(a->grep, b->grep), "(%s)", s);
			CHECK_AT(file, line, !strcmp(a->exclude, b->exclude), "(%s)", s);
			CHECK_AT(file, line, a->format == b->format, "(%s)", s);
			check_render_at(file, line, &a->render, &b->render, s);
			CHECK_AT(file, line, a->diff_from_ms == b->diff_from_ms, "(%s)", s);
			CHECK_AT(file, line, a->diff_to_ms == b->diff_to_ms, "(%s)", s);
			CHECK_AT(file, line, a->diff_capture == b->diff_capture, "(%s)", s);
			CHECK_AT(file, line, a->normalize == b->normalize, "(%s)", s);
			CHECK_AT(file, line, a->strip_hex == b->strip_hex, "(%s)", s);
			CHECK_AT(file, line, a->diff_widths_from_old == b->diff_widths_from_old,
				 "(%s)", s);
			CHECK_AT(file, line, a->negate == b->negate, "(%s)", s);
			CHECK_AT(file, line, a->kind == b->kind, "(%s)", s);
			CHECK_AT(file, line, a->lines == b->lines, "(%s)", s);
		}
		if (in->cmd == PROTO_CMD_HIST) {
			const struct proto_hist_request *a = &in->hist, *b = &out.hist;

			CHECK_AT(file, line, a->from_ms == b->from_ms, "(%s)", s);
			CHECK_AT(file, line, a->to_ms == b->to_ms, "(%s)", s);
			CHECK_AT(file, line, a->capture_id == b->capture_id, "(%s)", s);
			CHECK_AT(file, line, a->n_pids == b->n_pids, "(%s)", s);
			CHECK_AT(file, line,
				 !memcmp(a->pids, b->pids, a->n_pids * sizeof(a->pids[0])), "(%s)",
				 s);
			CHECK_AT(file, line, a->kind == b->kind, "(%s)", s);
		}
	}
	free(s);
}

#define CHECK_ROUNDTRIP(req) check_roundtrip_at(__FILE__, __LINE__, req)

static void test_request_format(void)
{
	struct proto_request req;
	char *s;

	memset(&req, 0, sizeof(req));
	req.cmd = PROTO_CMD_STATUS;
	CHECK_ROUNDTRIP(&req);
	s = proto_request_format(&req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"status\"}\n"), "('%s')", STR(s));
	free(s);
	req.cmd = PROTO_CMD_STOP;
	CHECK_ROUNDTRIP(&req);

	/* Defaults only. */
	CHECK(CAPTURE_OK("", &req) == 0);
	CHECK_ROUNDTRIP(&req);

	/* Everything set to something else. */
	req.cmd = PROTO_CMD_CAPTURE;
	req.capture.n_pids = PROTO_MAX_IDS;
	for (size_t i = 0; i < PROTO_MAX_IDS; i++)
		req.capture.pids[i] = 4194304 - i;
	req.capture.n_tids = 2;
	req.capture.tids[0] = 1;
	req.capture.tids[1] = 99;
	req.capture.seconds = 86400;
	req.capture.state_mask = (1u << 0) | (1u << 2);
	req.capture.min_block_us = 5;
	req.capture.max_block_us = UINT64_C(9007199254740992);
	req.capture.stacks = PROTO_STACKS_KERNEL;
	req.capture.format = PROTO_FORMAT_JSON;
	req.capture.kind = PROTO_KIND_OFFCPU;
	req.capture.split_runq = 1;
	req.capture.lines = 1;
	CHECK_ROUNDTRIP(&req);
	req.capture.oncpu = 1;
	CHECK_ROUNDTRIP(&req);
	req.capture.oncpu = 0;
	req.capture.split_runq = 0;
	req.capture.kind = PROTO_KIND_FILEIO;
	req.capture.with_filename = 1;
	CHECK_ROUNDTRIP(&req);
	req.capture.with_filename = 0;
	req.capture.kind = PROTO_KIND_ONCPU;
	CHECK_ROUNDTRIP(&req);
	req.capture.lines = 0;
	req.capture.kind = PROTO_KIND_CHAIN;
	req.capture.chain_depth = PROTO_CHAIN_DEPTH_MAX;
	CHECK_ROUNDTRIP(&req);
	req.capture.chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	req.capture.kind = PROTO_KIND_RUNQ;
	CHECK_ROUNDTRIP(&req);

	req.capture.n_pids = 0;
	req.capture.state_mask = 1u << 3;
	req.capture.seconds = 1;
	req.capture.stacks = PROTO_STACKS_USER;
	CHECK_ROUNDTRIP(&req);
}

/* ---- windows and export requests --------------------------------------- */

static void test_windows_request(void)
{
	struct proto_request req;

	memset(&req, 0xa5, sizeof(req));
	if (WINDOWS_OK("", &req) == 0) {
		CHECK(req.cmd == PROTO_CMD_WINDOWS);
		CHECK(req.windows.since_ms == 0);
	}
	if (WINDOWS_OK("\"since_ms\":1795309200000", &req) == 0)
		CHECK(req.windows.since_ms == INT64_C(1795309200000));
	if (WINDOWS_OK("\"since_ms\":0", &req) == 0)
		CHECK(req.windows.since_ms == 0);
	if (WINDOWS_OK("\"since_ms\":9007199254740992", &req) == 0)
		CHECK(req.windows.since_ms == INT64_C(9007199254740992));
	if (WINDOWS_OK("\"since_ms\":1.7953092e12", &req) == 0)
		CHECK(req.windows.since_ms == INT64_C(1795309200000));

	WINDOWS_BAD("\"since_ms\":-1", "field 'since_ms' must be between 0 and 9007199254740992");
	WINDOWS_BAD("\"since_ms\":9007199254740994", "field 'since_ms' must be between");
	WINDOWS_BAD("\"since_ms\":1e300", "field 'since_ms' must be between");
	WINDOWS_BAD("\"since_ms\":1.5", "field 'since_ms' must be an integer");
	WINDOWS_BAD("\"since_ms\":\"1\"", "field 'since_ms' must be an integer");
	WINDOWS_BAD("\"since_ms\":null", "field 'since_ms' must be an integer");
	WINDOWS_BAD("\"since_ms\":1,\"since_ms\":2", "duplicate field 'since_ms'");
	WINDOWS_BAD("\"since\":1", "unknown field 'since' for command 'windows'");
	WINDOWS_BAD("\"from_ms\":1", "unknown field 'from_ms' for command 'windows'");
	WINDOWS_BAD("\"seconds\":1", "unknown field 'seconds' for command 'windows'");
}

static void test_export_valid(void)
{
	struct proto_request req;

	/* Defaults, given the one required choice. */
	memset(&req, 0xa5, sizeof(req));
	if (EXPORT_OK("\"from_ms\":1795305600000", &req) == 0) {
		const struct proto_export_request *e = &req.export;

		CHECK(req.cmd == PROTO_CMD_EXPORT);
		CHECK(e->from_ms == INT64_C(1795305600000) && e->to_ms == 0);
		CHECK(e->capture_id == 0);
		CHECK(e->n_pids == 0);
		CHECK(e->comm[0] == '\0' && e->grep[0] == '\0' && e->exclude[0] == '\0');
		CHECK(e->state_mask == THREAD_STATE_ALL);
		CHECK(e->format == PROTO_FORMAT_FOLDED);
	}
	memset(&req, 0xa5, sizeof(req));
	if (EXPORT_OK("\"capture\":7", &req) == 0) {
		CHECK(req.export.capture_id == 7);
		CHECK(req.export.from_ms == 0 && req.export.to_ms == 0);
		CHECK(req.export.n_pids == 0 && req.export.comm[0] == '\0');
	}
	/* 0 means absent, for either side of the choice. */
	if (EXPORT_OK("\"capture\":7,\"from_ms\":0,\"to_ms\":0", &req) == 0)
		CHECK(req.export.capture_id == 7);
	if (EXPORT_OK("\"capture\":0,\"from_ms\":1", &req) == 0)
		CHECK(req.export.from_ms == 1 && req.export.capture_id == 0);
	if (EXPORT_OK("\"capture\":9007199254740992", &req) == 0)
		CHECK(req.export.capture_id == UINT64_C(9007199254740992));

	if (EXPORT_OK("\"from_ms\":1000,\"to_ms\":1001", &req) == 0)
		CHECK(req.export.from_ms == 1000 && req.export.to_ms == 1001);
	if (EXPORT_OK("\"from_ms\":1,\"to_ms\":9007199254740992", &req) == 0)
		CHECK(req.export.to_ms == INT64_C(9007199254740992));
	if (EXPORT_OK("\"from_ms\":9007199254740992", &req) == 0)
		CHECK(req.export.from_ms == INT64_C(9007199254740992));

	if (EXPORT_OK("\"from_ms\":5,\"pids\":[1,4194304],\"comm\":\"ow-reader\","
		      "\"states\":[\"D\",\"running\"],\"grep\":\"^do_sys_(poll|select)$\","
		      "\"exclude\":\"\\\\[unknown\\\\]\",\"format\":\"json\"",
		      &req) == 0) {
		const struct proto_export_request *e = &req.export;

		CHECK(e->n_pids == 2 && e->pids[0] == 1 && e->pids[1] == 4194304);
		CHECK_STR(e->comm, "ow-reader");
		CHECK(e->state_mask == ((1u << 2) | (1u << 0)));
		CHECK_STR(e->grep, "^do_sys_(poll|select)$");
		CHECK_STR(e->exclude, "\\[unknown\\]");
		CHECK(e->format == PROTO_FORMAT_JSON);
	}
	/* Empty strings are the defaults. */
	if (EXPORT_OK("\"from_ms\":5,\"comm\":\"\",\"grep\":\"\",\"exclude\":\"\"", &req) == 0)
		CHECK(!req.export.comm[0] && !req.export.grep[0] && !req.export.exclude[0]);
	/* Escapes are decoded, and UTF-8 passes through. */
	if (EXPORT_OK("\"from_ms\":5,\"comm\":\"a\\tb\\u00e9\\\"\",\"grep\":\"\xe2\x82\xac\"",
		      &req) == 0) {
		CHECK_STR(req.export.comm, "a\tb\xc3\xa9\"");
		CHECK_STR(req.export.grep, "\xe2\x82\xac");
	}
	/* Field order does not matter, nor does the rule's. */
	if (EXPORT_OK("\"to_ms\":20,\"format\":\"folded\",\"from_ms\":10", &req) == 0)
		CHECK(req.export.from_ms == 10 && req.export.to_ms == 20);
}

/* A string of n copies of c, as the value of an export field. */
static char *export_string(const char *field, size_t n, const char *c)
{
	static char buf[8192];
	char *p = buf;

	p += sprintf(p, "\"from_ms\":5,\"%s\":\"", field);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s", c);
	strcpy(p, "\"");
	return buf;
}

static void test_export_strings(void)
{
	struct proto_request req;

	/* Limits are in bytes, after escapes are decoded. */
	if (EXPORT_OK(export_string("comm", PROTO_COMM_MAX, "c"), &req) == 0)
		CHECK(strlen(req.export.comm) == PROTO_COMM_MAX);
	EXPORT_BAD(export_string("comm", PROTO_COMM_MAX + 1, "c"),
		   "field 'comm' is 64 bytes long; at most 63 allowed");
	if (EXPORT_OK(export_string("comm", 31, "\\u00e9"), &req) == 0)
		CHECK(strlen(req.export.comm) == 62);
	EXPORT_BAD(export_string("comm", 32, "\\u00e9"), "field 'comm' is 64 bytes long");
	EXPORT_BAD(export_string("comm", 32, "\xc3\xa9"), "field 'comm' is 64 bytes long");
	if (EXPORT_OK(export_string("comm", 63, "\\n"), &req) == 0)
		CHECK(strlen(req.export.comm) == 63 && req.export.comm[62] == '\n');

	if (EXPORT_OK(export_string("grep", PROTO_REGEX_MAX, "g"), &req) == 0)
		CHECK(strlen(req.export.grep) == PROTO_REGEX_MAX);
	EXPORT_BAD(export_string("grep", PROTO_REGEX_MAX + 1, "g"),
		   "field 'grep' is 1024 bytes long; at most 1023 allowed");
	if (EXPORT_OK(export_string("exclude", PROTO_REGEX_MAX, "x"), &req) == 0)
		CHECK(strlen(req.export.exclude) == PROTO_REGEX_MAX);
	EXPORT_BAD(export_string("exclude", 2000, "x"),
		   "field 'exclude' is 2000 bytes long; at most 1023 allowed");
	/* A 4-byte character that would straddle the limit. */
	EXPORT_BAD(export_string("exclude", 256, "\\ud83d\\ude00"), "is 1024 bytes long");
	if (EXPORT_OK(export_string("exclude", 255, "\\ud83d\\ude00"), &req) == 0)
		CHECK(!strncmp(req.export.exclude, "\xf0\x9f\x98\x80", 4));

	/* NULs, raw or escaped, never reach a string. */
	EXPORT_BAD("\"from_ms\":5,\"comm\":\"a\\u0000b\"", "malformed JSON at byte 43");
	EXPORT_BAD("\"from_ms\":5,\"grep\":\"\\u0000\"", "malformed JSON at byte");
	{
		char buf[64] = "{\"v\":1,\"cmd\":\"export\",\"from_ms\":5,\"comm\":\"ab\"}";

		buf[44] = '\0'; /* the 'b' */
		bad_at(__FILE__, __LINE__, buf, strlen(buf + 45) + 45, "malformed JSON at byte 44");
	}

	/* Bytes that are not UTF-8. */
	EXPORT_BAD("\"from_ms\":5,\"comm\":\"\xff\"", "field 'comm' must be valid UTF-8");
	EXPORT_BAD("\"from_ms\":5,\"grep\":\"a\xc3\"", "field 'grep' must be valid UTF-8");
	EXPORT_BAD("\"from_ms\":5,\"exclude\":\"\xed\xa0\x80\"", "field 'exclude' must be valid");
	/* cJSON itself refuses an escaped lone surrogate. */
	EXPORT_BAD("\"from_ms\":5,\"comm\":\"\\ud800\"", "malformed JSON at byte");

	/* Types. */
	EXPORT_BAD("\"from_ms\":5,\"comm\":5", "field 'comm' must be a string");
	EXPORT_BAD("\"from_ms\":5,\"comm\":null", "field 'comm' must be a string");
	EXPORT_BAD("\"from_ms\":5,\"grep\":[\"a\"]", "field 'grep' must be a string");
	EXPORT_BAD("\"from_ms\":5,\"exclude\":true", "field 'exclude' must be a string");
	EXPORT_BAD("\"from_ms\":5,\"exclude\":{}", "field 'exclude' must be a string");
}

/* A string of n copies of c, as the value of a capture field. */
static char *capture_string(const char *field, size_t n, const char *c)
{
	static char buf[8192];
	char *p = buf;

	p += sprintf(p, "{\"v\":1,\"cmd\":\"capture\",\"%s\":\"", field);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s", c);
	strcpy(p, "\"}");
	return buf;
}

/* capture's stack filters: comm, grep, exclude, as export's. */
static void test_capture_requests(void)
{
	struct proto_request req, out;
	char buf[2048], *s;

	memset(&req, 0xa5, sizeof(req));
	if (CAPTURE_OK("\"pids\":[9],\"requests\":[\"do_command\",\"app::*@/opt/app\"]", &req) ==
	    0) {
		CHECK(req.capture.n_requests == 2);
		CHECK_STR(req.capture.requests[0], "do_command");
		CHECK_STR(req.capture.requests[1], "app::*@/opt/app");
	}
	if (CAPTURE_OK("\"requests\":[]", &req) == 0)
		CHECK(req.capture.n_requests == 0);
	if (CAPTURE_OK("", &req) == 0)
		CHECK(req.capture.n_requests == 0);
	CAPTURE_BAD("\"requests\":\"do_command\"", "field 'requests' must be an array of strings");
	CAPTURE_BAD("\"requests\":[\"\"]",
		    "field 'requests' must be an array of non-empty strings");
	CAPTURE_BAD("\"requests\":[1]", "field 'requests' must be an array of non-empty strings");
	CAPTURE_BAD("\"requests\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]",
		    "field 'requests' has 9 entries; at most 8 allowed");
	snprintf(buf, sizeof(buf), "\"requests\":[\"%0*d\"]", PROTO_REQUEST_SPEC_MAX + 1, 0);
	CAPTURE_BAD(buf, "field 'requests'[0] is 512 bytes long; at most 511 allowed");
	snprintf(buf, sizeof(buf), "\"requests\":[\"%0*d\"]", PROTO_REQUEST_SPEC_MAX, 0);
	if (CAPTURE_OK(buf, &req) == 0)
		CHECK(strlen(req.capture.requests[0]) == PROTO_REQUEST_SPEC_MAX);

	/* What offcpuctl sends is what the daemon reads. */
	memset(&req, 0, sizeof(req));
	req.cmd = PROTO_CMD_CAPTURE;
	req.capture.seconds = 10;
	req.capture.state_mask = THREAD_STATE_ALL;
	req.capture.chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	strcpy(req.capture.requests[0], "_Z10do_commandP3THDb@/usr/sbin/mariadbd");
	strcpy(req.capture.requests[1], "\xc3\xa9t\xc3\xa9");
	req.capture.n_requests = 2;
	s = proto_request_format(&req);
	CHECK_LINE(s);
	if (s && PARSE_OK(s, &out) == 0) {
		CHECK(out.capture.n_requests == 2);
		CHECK_STR(out.capture.requests[0], "_Z10do_commandP3THDb@/usr/sbin/mariadbd");
		CHECK_STR(out.capture.requests[1], "\xc3\xa9t\xc3\xa9");
	}
	free(s);
}

static void test_capture_request_stats_reply(void)
{
	struct proto_request_function funcs[] = { { "_Z10do_commandP3THDb",
						    "/usr/sbin/mariadbd" } };
	struct proto_request_stats rs = {
		.symbol = "do_command",
		.functions = funcs,
		.n_functions = 1,
		.count = 3,
		.calls = 4,
		.wall_ns = 30000000,
		.offcpu_ns = 20000000,
	};
	struct proto_capture_result res = {
		.id = 1, .folded = "", .requests = &rs, .n_requests = 1
	};
	struct proto_reply *reply = NULL;
	char *s;

	rs.wall_hist[13] = 3;
	rs.offcpu_hist[12] = 2;
	rs.offcpu_hist[31] = 1;
	s = proto_reply_capture(&res, 0);
	CHECK_LINE(s);
	CHECK_MSG(s && strstr(s, "\"functions\":[{\"name\":\"_Z10do_commandP3THDb\","
				 "\"binary\":\"/usr/sbin/mariadbd\"}]"),
		  "('%s')", STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_capture_result *c = &reply->capture;

		CHECK(c->n_requests == 1);
		if (c->n_requests == 1) {
			CHECK_STR(c->requests[0].symbol, "do_command");
			CHECK(c->requests[0].count == 3 && c->requests[0].wall_ns == 30000000 &&
			      c->requests[0].offcpu_ns == 20000000);
			CHECK(!memcmp(c->requests[0].wall_hist, rs.wall_hist,
				      sizeof(rs.wall_hist)));
			CHECK(!memcmp(c->requests[0].offcpu_hist, rs.offcpu_hist,
				      sizeof(rs.offcpu_hist)));
			CHECK(c->requests[0].calls == 4 && !c->requests[0].warning);
		}
	}
	proto_reply_free(reply);
	free(s);

	/* Probes that never fired: the warning goes out and comes back. */
	rs.count = rs.calls = 0;
	rs.warning = "its probes never fired";
	s = proto_reply_capture(&res, 0);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	CHECK(reply && reply->capture.n_requests == 1 && reply->capture.requests[0].calls == 0 &&
	      reply->capture.requests[0].warning &&
	      !strcmp(reply->capture.requests[0].warning, "its probes never fired"));
	proto_reply_free(reply);
	free(s);
	rs.warning = NULL;

	/* None: no "requests" key at all. */
	res.n_requests = 0;
	s = proto_reply_capture(&res, 0);
	CHECK_MSG(s && !strstr(s, "requests"), "('%s')", STR(s));
	reply = NULL;
	CHECK(s && proto_reply_parse(s, strlen(s), &reply) == 0);
	CHECK(reply && reply->capture.n_requests == 0);
	proto_reply_free(reply);
	free(s);
}

static void test_capture_filters(void)
{
	struct proto_request req, *big;
	char *s;

	memset(&req, 0xa5, sizeof(req));
	if (CAPTURE_OK("\"comm\":\"ow-reader\",\"grep\":\"^do_(sys_)?poll$\","
		       "\"exclude\":\"\\\\[unknown\\\\]\"",
		       &req) == 0) {
		CHECK_STR(req.capture.comm, "ow-reader");
		CHECK_STR(req.capture.grep, "^do_(sys_)?poll$");
		CHECK_STR(req.capture.exclude, "\\[unknown\\]");
		CHECK(req.capture.state_mask == THREAD_STATE_ALL);
	}
	if (CAPTURE_OK("\"comm\":\"\",\"grep\":\"\",\"exclude\":\"\"", &req) == 0)
		CHECK(!req.capture.comm[0] && !req.capture.grep[0] && !req.capture.exclude[0]);
	if (CAPTURE_OK("\"pids\":[7],\"states\":[\"D\"],\"grep\":\"^ext4_\"", &req) == 0) {
		CHECK(req.capture.n_pids == 1 && req.capture.state_mask == 1u << 2);
		CHECK_STR(req.capture.grep, "^ext4_");
	}

	/* The export's limits, in bytes. */
	if (PARSE_OK(capture_string("comm", PROTO_COMM_MAX, "c"), &req) == 0)
		CHECK(strlen(req.capture.comm) == PROTO_COMM_MAX);
	BAD(capture_string("comm", PROTO_COMM_MAX + 1, "c"),
	    "field 'comm' is 64 bytes long; at most 63 allowed");
	BAD(capture_string("comm", 32, "\\u00e9"), "field 'comm' is 64 bytes long");
	if (PARSE_OK(capture_string("grep", PROTO_REGEX_MAX, "g"), &req) == 0)
		CHECK(strlen(req.capture.grep) == PROTO_REGEX_MAX);
	BAD(capture_string("grep", PROTO_REGEX_MAX + 1, "g"),
	    "field 'grep' is 1024 bytes long; at most 1023 allowed");
	if (PARSE_OK(capture_string("exclude", PROTO_REGEX_MAX, "x"), &req) == 0)
		CHECK(strlen(req.capture.exclude) == PROTO_REGEX_MAX);
	BAD(capture_string("exclude", 2000, "x"),
	    "field 'exclude' is 2000 bytes long; at most 1023 allowed");

	/* Types and bytes. */
	CAPTURE_BAD("\"comm\":5", "field 'comm' must be a string");
	CAPTURE_BAD("\"comm\":[\"a\"]", "field 'comm' must be a string");
	CAPTURE_BAD("\"grep\":null", "field 'grep' must be a string");
	CAPTURE_BAD("\"grep\":true", "field 'grep' must be a string");
	CAPTURE_BAD("\"exclude\":{}", "field 'exclude' must be a string");
	CAPTURE_BAD("\"exclude\":1", "field 'exclude' must be a string");
	CAPTURE_BAD("\"comm\":\"\xff\"", "field 'comm' must be valid UTF-8");
	CAPTURE_BAD("\"grep\":\"a\\u0000\"", "malformed JSON at byte");
	CAPTURE_BAD("\"grep\":\"a\",\"grep\":\"b\"", "duplicate field 'grep'");

	/* Patterns must compile, in capture and export alike: regcomp's reason. */
	CAPTURE_BAD("\"grep\":\"(unclosed\"", "field 'grep' is not a POSIX extended regex: ");
	CAPTURE_BAD("\"exclude\":\"[z-a]\"", "field 'exclude' is not a POSIX extended regex");
	CAPTURE_BAD("\"exclude\":\"a\\\\\"", "field 'exclude' is not a POSIX extended regex");
	EXPORT_BAD("\"from_ms\":5,\"grep\":\"(unclosed\"",
		   "field 'grep' is not a POSIX extended regex: ");
	EXPORT_BAD("\"from_ms\":5,\"exclude\":\"*\\\\\"", "field 'exclude' is not a POSIX");
	/* A comm is a name, not a pattern. */
	if (CAPTURE_OK("\"comm\":\"(unclosed\"", &req) == 0)
		CHECK_STR(req.capture.comm, "(unclosed");

	/* Formatted only when set; round trips. */
	big = calloc(1, sizeof(*big));
	if (!big)
		return;
	big->cmd = PROTO_CMD_CAPTURE;
	big->capture.seconds = 10;
	big->capture.state_mask = THREAD_STATE_ALL;
	big->capture.chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	strcpy(big->capture.grep, "block_in_sleep");
	s = proto_request_format(big);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"capture\",\"grep\":\"block_in_sleep\"}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(big);
	memset(big->capture.comm, '"', PROTO_COMM_MAX);
	big->capture.comm[1] = '\\';
	memset(big->capture.grep, '\\', PROTO_REGEX_MAX - 1);
	big->capture.grep[PROTO_REGEX_MAX - 1] = '$';
	memcpy(big->capture.exclude, "\xc3\xa9(a|b)*$\t", 10);
	CHECK_ROUNDTRIP(big);
	free(big);
}

static void test_export_invalid(void)
{
	/* Which windows: exactly one of a range and a capture. */
	EXPORT_BAD("", "export needs from_ms or capture");
	EXPORT_BAD("\"to_ms\":1795309200000", "export needs from_ms or capture");
	EXPORT_BAD("\"from_ms\":0", "export needs from_ms or capture");
	EXPORT_BAD("\"capture\":0", "export needs from_ms or capture");
	EXPORT_BAD("\"pids\":[1],\"format\":\"json\"", "export needs from_ms or capture");
	EXPORT_BAD("\"capture\":7,\"from_ms\":1", "field 'capture' excludes 'from_ms' and 'to_ms'");
	EXPORT_BAD("\"capture\":7,\"to_ms\":1", "field 'capture' excludes 'from_ms' and 'to_ms'");
	EXPORT_BAD("\"from_ms\":1,\"to_ms\":2,\"capture\":3", "field 'capture' excludes");
	EXPORT_BAD("\"from_ms\":1000,\"to_ms\":1000",
		   "field 'to_ms' (1000) must be > 'from_ms' (1000), or 0 for now");
	EXPORT_BAD("\"from_ms\":1000,\"to_ms\":999", "field 'to_ms' (999) must be > 'from_ms'");

	/* Integer fields. */
	EXPORT_BAD("\"from_ms\":-1", "field 'from_ms' must be between 0 and 9007199254740992");
	EXPORT_BAD("\"from_ms\":9007199254740994", "field 'from_ms' must be between");
	EXPORT_BAD("\"from_ms\":1.5", "field 'from_ms' must be an integer");
	EXPORT_BAD("\"from_ms\":\"1\"", "field 'from_ms' must be an integer");
	EXPORT_BAD("\"from_ms\":1,\"to_ms\":-5", "field 'to_ms' must be between 0 and");
	EXPORT_BAD("\"from_ms\":1,\"to_ms\":1e999", "field 'to_ms' must be between");
	EXPORT_BAD("\"from_ms\":1,\"to_ms\":true", "field 'to_ms' must be an integer");
	EXPORT_BAD("\"capture\":-7", "field 'capture' must be between 0 and");
	EXPORT_BAD("\"capture\":7.5", "field 'capture' must be an integer");
	EXPORT_BAD("\"capture\":\"7\"", "field 'capture' must be an integer");
	EXPORT_BAD("\"capture\":18446744073709551616", "field 'capture' must be between");

	/* Fields shared with capture behave as there. */
	EXPORT_BAD("\"from_ms\":1,\"pids\":[0]", "field 'pids'[0] must be between 1 and 4194304");
	EXPORT_BAD("\"from_ms\":1,\"pids\":7", "field 'pids' must be an array of integers");
	EXPORT_BAD("\"from_ms\":1,\"states\":[]", "field 'states' must not be empty");
	EXPORT_BAD("\"from_ms\":1,\"states\":[\"Z\"]", "unknown thread state 'Z'");
	EXPORT_BAD("\"from_ms\":1,\"format\":\"xml\"",
		   "field 'format' must be one of: folded, json, svg, speedscope");

	/* Field names. */
	EXPORT_BAD("\"from_ms\":1,\"tids\":[1]", "unknown field 'tids' for command 'export'");
	EXPORT_BAD("\"from_ms\":1,\"stacks\":\"user\"", "unknown field 'stacks'");
	EXPORT_BAD("\"from_ms\":1,\"capture_id\":1", "unknown field 'capture_id'");
	EXPORT_BAD("\"from_ms\":1,\"since_ms\":1", "unknown field 'since_ms'");
	EXPORT_BAD("\"from_ms\":1,\"svg\":true", "unknown field 'svg'");
	EXPORT_BAD("\"from_ms\":1,\"from_ms\":2", "duplicate field 'from_ms'");
	EXPORT_BAD("\"from_ms\":1,\"grep\":\"a\",\"grep\":\"b\"", "duplicate field 'grep'");
	/* Field errors come before the rule that spans fields. */
	EXPORT_BAD("\"comm\":5", "field 'comm' must be a string");
	EXPORT_BAD("\"capture\":1,\"from_ms\":2,\"bogus\":1", "unknown field 'bogus'");
	/* The new commands' fields stay theirs. */
	CAPTURE_BAD("\"from_ms\":1", "unknown field 'from_ms' for command 'capture'");
	CAPTURE_BAD("\"diff_capture\":1", "unknown field 'diff_capture' for command 'capture'");
	BAD("{\"v\":1,\"cmd\":\"status\",\"since_ms\":1}", "unknown field 'since_ms'");
}

static void test_request_format_new(void)
{
	struct proto_request *req = calloc(1, sizeof(*req));
	char *s;

	if (!req)
		return;
	req->cmd = PROTO_CMD_WINDOWS;
	CHECK_ROUNDTRIP(req);
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"windows\"}\n"), "('%s')", STR(s));
	free(s);
	req->windows.since_ms = INT64_C(9007199254740992);
	CHECK_ROUNDTRIP(req);
	req->windows.since_ms = INT64_C(1795309200123);
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"windows\",\"since_ms\":1795309200123}\n"),
		  "('%s')", STR(s));
	free(s);

	/* A minimal range: defaults are left out. */
	memset(req, 0, sizeof(*req));
	req->cmd = PROTO_CMD_EXPORT;
	req->export.from_ms = 1;
	req->export.state_mask = THREAD_STATE_ALL;
	CHECK_ROUNDTRIP(req);
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"export\",\"from_ms\":1}\n"), "('%s')",
		  STR(s));
	free(s);

	/* A capture. */
	req->export.from_ms = 0;
	req->export.capture_id = UINT64_C(9007199254740992);
	req->export.format = PROTO_FORMAT_JSON;
	CHECK_ROUNDTRIP(req);
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"export\",\"capture\":9007199254740992,"
				  "\"format\":\"json\"}\n"),
		  "('%s')", STR(s));
	free(s);

	/* Everything set, strings at their limits and full of characters
	 * that need escapes. */
	req->export.capture_id = 0;
	req->export.from_ms = INT64_C(1795305600000);
	req->export.to_ms = INT64_C(9007199254740992);
	req->export.n_pids = PROTO_MAX_IDS;
	for (size_t i = 0; i < PROTO_MAX_IDS; i++)
		req->export.pids[i] = i + 1;
	memset(req->export.comm, '"', PROTO_COMM_MAX);
	req->export.comm[1] = '\\';
	req->export.comm[2] = '\n';
	req->export.state_mask = 1u << 2;
	memset(req->export.grep, '\\', PROTO_REGEX_MAX - 1); /* escaped backslashes */
	req->export.grep[PROTO_REGEX_MAX - 1] = 'x';
	memcpy(req->export.exclude, "\xc3\xa9(a|b)*$\t\x01", 11);
	CHECK_ROUNDTRIP(req);
	req->export.format = PROTO_FORMAT_FOLDED;
	CHECK_ROUNDTRIP(req);
	free(req);
}

/* ---- render options and differential exports --------------------------- */

/* A capture or export request line (the export given its one required
 * choice, a range) with extra members; "render" fields go to either. */
static char *render_line(const char *cmd, const char *extra)
{
	static char buf[8192];
	bool export = !strcmp(cmd, "export");

	snprintf(buf, sizeof(buf), "{\"v\":1,\"cmd\":\"%s\"%s%s%s}", cmd,
		 export ? ",\"from_ms\":5" : "", *extra ? "," : "", extra);
	return buf;
}

#define RENDER_OK(cmd, extra, req)   PARSE_OK(render_line(cmd, extra), req)
#define RENDER_BAD(cmd, extra, want) BAD(render_line(cmd, extra), want)

static const char *const render_cmds[] = { "capture", "export" };

/* The parsed request's render options, whichever command it is. */
static const struct proto_render *request_render(const struct proto_request *req)
{
	return req->cmd == PROTO_CMD_CAPTURE ? &req->capture.render : &req->export.render;
}

static void render_default_at(const char *file, int line, const struct proto_render *r)
{
	CHECK_AT(file, line, !r->title[0] && !r->subtitle[0] && !r->countname[0], "(strings)");
	CHECK_AT(file, line, r->width == 0 && r->frame_height == 0, "(sizes)");
	CHECK_AT(file, line, !r->minwidth[0], "(minwidth)");
	CHECK_AT(file, line, r->inverted == 0 && r->reverse == 0 && r->flamechart == 0, "(bools)");
	CHECK_AT(file, line, r->palette == PROTO_PALETTE_AUTO, "(palette)");
}

#define CHECK_RENDER_DEFAULT(r) render_default_at(__FILE__, __LINE__, r)

static void test_render_defaults(void)
{
	struct proto_request req;

	memset(&req, 0xa5, sizeof(req));
	if (CAPTURE_OK("", &req) == 0)
		CHECK_RENDER_DEFAULT(&req.capture.render);
	memset(&req, 0xa5, sizeof(req));
	if (EXPORT_OK("\"capture\":1", &req) == 0) {
		const struct proto_export_request *e = &req.export;

		CHECK_RENDER_DEFAULT(&e->render);
		CHECK(e->diff_from_ms == 0 && e->diff_to_ms == 0 && e->diff_capture == 0);
		CHECK(e->normalize == 0 && e->strip_hex == 0 && e->diff_widths_from_old == 0 &&
		      e->negate == 0);
	}
	/* Defaults spelled out are the defaults. */
	memset(&req, 0xa5, sizeof(req));
	if (CAPTURE_OK("\"title\":\"\",\"subtitle\":\"\",\"countname\":\"\",\"width\":0,"
		       "\"frame_height\":0,\"minwidth\":\"\",\"inverted\":false,"
		       "\"reverse\":false,\"flamechart\":false,\"palette\":\"auto\"",
		       &req) == 0)
		CHECK_RENDER_DEFAULT(&req.capture.render);
}

static void test_render_valid(void)
{
	static const struct {
		const char *name;
		enum proto_palette value;
	} palettes[] = {
		{ "auto", PROTO_PALETTE_AUTO },	  { "hot", PROTO_PALETTE_HOT },
		{ "io", PROTO_PALETTE_IO },	  { "wakeup", PROTO_PALETTE_WAKEUP },
		{ "chain", PROTO_PALETTE_CHAIN }, { "diff", PROTO_PALETTE_DIFF },
	};
	struct proto_request req;
	char extra[256];

	for (size_t c = 0; c < 2; c++) {
		const char *cmd = render_cmds[c];
		const struct proto_render *r;

		memset(&req, 0xa5, sizeof(req));
		if (RENDER_OK(cmd,
			      "\"format\":\"svg\",\"title\":\"t\\u00e9 \\\"x\\\"\","
			      "\"subtitle\":\"sub\",\"countname\":\"ms\",\"width\":1600,"
			      "\"frame_height\":24,\"minwidth\":\"0.5%\",\"inverted\":true,"
			      "\"reverse\":true,\"flamechart\":true,\"palette\":\"chain\"",
			      &req) == 0) {
			r = request_render(&req);
			CHECK_STR(r->title, "t\xc3\xa9 \"x\"");
			CHECK_STR(r->subtitle, "sub");
			CHECK_STR(r->countname, "ms");
			CHECK(r->width == 1600 && r->frame_height == 24);
			CHECK_STR(r->minwidth, "0.5%");
			CHECK(r->inverted == 1 && r->reverse == 1 && r->flamechart == 1);
			CHECK(r->palette == PROTO_PALETTE_CHAIN);
			CHECK(req.cmd == PROTO_CMD_CAPTURE ? req.capture.format == PROTO_FORMAT_SVG
							   : req.export.format == PROTO_FORMAT_SVG);
		}
		if (RENDER_OK(cmd, "\"format\":\"speedscope\",\"title\":\"p\"", &req) == 0) {
			CHECK(req.cmd == PROTO_CMD_CAPTURE
				      ? req.capture.format == PROTO_FORMAT_SPEEDSCOPE
				      : req.export.format == PROTO_FORMAT_SPEEDSCOPE);
			CHECK_STR(request_render(&req)->title, "p");
		}
		/* Ignored by folded and json, but accepted (and checked). */
		if (RENDER_OK(cmd, "\"format\":\"json\",\"inverted\":true,\"palette\":\"hot\"",
			      &req) == 0)
			CHECK(request_render(&req)->inverted == 1);
		if (RENDER_OK(cmd, "\"minwidth\":\"3\",\"width\":100000", &req) == 0)
			CHECK(request_render(&req)->width == 100000);

		/* Sizes: 0 is the default, else the range. */
		if (RENDER_OK(cmd, "\"width\":200,\"frame_height\":4", &req) == 0)
			CHECK(request_render(&req)->width == 200 &&
			      request_render(&req)->frame_height == 4);
		if (RENDER_OK(cmd, "\"width\":0,\"frame_height\":200", &req) == 0)
			CHECK(request_render(&req)->width == 0 &&
			      request_render(&req)->frame_height == 200);
		if (RENDER_OK(cmd, "\"width\":-0,\"frame_height\":0.0", &req) == 0)
			CHECK(request_render(&req)->width == 0 &&
			      request_render(&req)->frame_height == 0);
		if (RENDER_OK(cmd, "\"width\":1.2e3", &req) == 0)
			CHECK(request_render(&req)->width == 1200);

		/* Each palette, by name. */
		for (size_t i = 0; i < sizeof(palettes) / sizeof(palettes[0]); i++) {
			snprintf(extra, sizeof(extra), "\"palette\":\"%s\"", palettes[i].name);
			if (RENDER_OK(cmd, extra, &req) == 0)
				CHECK_MSG(request_render(&req)->palette == palettes[i].value,
					  "(%s)", palettes[i].name);
		}

		/* Bools both ways. */
		if (RENDER_OK(cmd, "\"inverted\":false,\"reverse\":true,\"flamechart\":false",
			      &req) == 0)
			CHECK(request_render(&req)->inverted == 0 &&
			      request_render(&req)->reverse == 1 &&
			      request_render(&req)->flamechart == 0);
	}
}

/* A string of n copies of c as the value of a render field of cmd. */
static char *render_string(const char *field, size_t n, const char *c)
{
	static char buf[4096];
	char *p = buf;

	p += sprintf(p, "\"%s\":\"", field);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s", c);
	strcpy(p, "\"");
	return buf;
}

static void test_render_invalid(void)
{
	static const char *const bools[] = { "inverted", "reverse", "flamechart" };
	static const char *const not_bools[] = { "1",	 "0",  "\"true\"", "\"false\"",
						 "null", "[]", "{}",	   "1.0" };
	struct proto_request req;
	char extra[128], want[128];

	for (size_t c = 0; c < 2; c++) {
		const char *cmd = render_cmds[c];

		/* The bool kind takes true and false, nothing else. */
		for (size_t b = 0; b < sizeof(bools) / sizeof(bools[0]); b++) {
			for (size_t v = 0; v < sizeof(not_bools) / sizeof(not_bools[0]); v++) {
				snprintf(extra, sizeof(extra), "\"%s\":%s", bools[b], not_bools[v]);
				snprintf(want, sizeof(want), "field '%s' must be true or false",
					 bools[b]);
				RENDER_BAD(cmd, extra, want);
			}
		}

		/* Sizes. */
		RENDER_BAD(cmd, "\"width\":199",
			   "field 'width' must be 0 or between 200 and 100000");
		RENDER_BAD(cmd, "\"width\":1", "field 'width' must be 0 or between 200 and 100000");
		RENDER_BAD(cmd, "\"width\":100001", "field 'width' must be 0 or between 200 and");
		RENDER_BAD(cmd, "\"width\":-1", "field 'width' must be 0 or between 200 and");
		RENDER_BAD(cmd, "\"width\":4294967496", "field 'width' must be 0 or between");
		RENDER_BAD(cmd, "\"width\":1e999", "field 'width' must be 0 or between");
		RENDER_BAD(cmd, "\"width\":800.5", "field 'width' must be an integer");
		RENDER_BAD(cmd, "\"width\":\"800\"", "field 'width' must be an integer");
		RENDER_BAD(cmd, "\"width\":true", "field 'width' must be an integer");
		RENDER_BAD(cmd, "\"width\":null", "field 'width' must be an integer");
		RENDER_BAD(cmd, "\"frame_height\":3",
			   "field 'frame_height' must be 0 or between 4 and 200");
		RENDER_BAD(cmd, "\"frame_height\":201",
			   "field 'frame_height' must be 0 or between 4 and 200");
		RENDER_BAD(cmd, "\"frame_height\":0.5", "field 'frame_height' must be an integer");

		/* Palette names are exact. */
		RENDER_BAD(cmd, "\"palette\":\"Hot\"",
			   "field 'palette' must be one of: auto, hot, io, wakeup, chain, diff");
		RENDER_BAD(cmd, "\"palette\":\"\"", "field 'palette' must be one of");
		RENDER_BAD(cmd, "\"palette\":\"red\"", "field 'palette' must be one of");
		RENDER_BAD(cmd, "\"palette\":1", "field 'palette' must be one of");
		RENDER_BAD(cmd, "\"palette\":null", "field 'palette' must be one of");

		/* Strings: bytes after escapes, UTF-8, type. */
		if (RENDER_OK(cmd, render_string("title", PROTO_TITLE_MAX, "t"), &req) == 0)
			CHECK(strlen(request_render(&req)->title) == PROTO_TITLE_MAX);
		RENDER_BAD(cmd, render_string("title", PROTO_TITLE_MAX + 1, "t"),
			   "field 'title' is 128 bytes long; at most 127 allowed");
		RENDER_BAD(cmd, render_string("title", 64, "\\u00e9"),
			   "field 'title' is 128 bytes long");
		if (RENDER_OK(cmd, render_string("subtitle", PROTO_TITLE_MAX, "\\n"), &req) == 0)
			CHECK(strlen(request_render(&req)->subtitle) == PROTO_TITLE_MAX);
		RENDER_BAD(cmd, render_string("subtitle", PROTO_TITLE_MAX + 1, "s"),
			   "field 'subtitle' is 128 bytes long; at most 127 allowed");
		if (RENDER_OK(cmd, render_string("countname", PROTO_COUNTNAME_MAX, "c"), &req) == 0)
			CHECK(strlen(request_render(&req)->countname) == PROTO_COUNTNAME_MAX);
		RENDER_BAD(cmd, render_string("countname", PROTO_COUNTNAME_MAX + 1, "c"),
			   "field 'countname' is 32 bytes long; at most 31 allowed");
		RENDER_BAD(cmd, "\"title\":\"\xff\"", "field 'title' must be valid UTF-8");
		RENDER_BAD(cmd, "\"countname\":\"a\xc3\"", "field 'countname' must be valid UTF-8");
		RENDER_BAD(cmd, "\"title\":5", "field 'title' must be a string");
		RENDER_BAD(cmd, "\"subtitle\":null", "field 'subtitle' must be a string");
		RENDER_BAD(cmd, "\"countname\":[]", "field 'countname' must be a string");

		/* minwidth: the syntax, then as a string. */
		RENDER_BAD(cmd, "\"minwidth\":\"-1\"",
			   "field 'minwidth' must be a non-negative decimal (pixels) or a "
			   "percentage up to 100, e.g. 0.1 or 0.5%, not '-1'");
		RENDER_BAD(cmd, "\"minwidth\":\"101%\"", "field 'minwidth' must be a non-negative");
		RENDER_BAD(cmd, "\"minwidth\":\"1e3\"", "not '1e3'");
		RENDER_BAD(cmd, "\"minwidth\":\" 1\"", "not ' 1'");
		RENDER_BAD(cmd, "\"minwidth\":\"0.5 %\"", "not '0.5 %'");
		RENDER_BAD(cmd, "\"minwidth\":0.1", "field 'minwidth' must be a string");
		RENDER_BAD(cmd, render_string("minwidth", PROTO_MINWIDTH_MAX + 1, "1"),
			   "field 'minwidth' is 32 bytes long; at most 31 allowed");
		if (RENDER_OK(cmd, render_string("minwidth", PROTO_MINWIDTH_MAX, "1"), &req) == 0)
			CHECK(strlen(request_render(&req)->minwidth) == PROTO_MINWIDTH_MAX);
		RENDER_BAD(cmd, "\"minwidth\":\"\xff\"", "field 'minwidth' must be valid UTF-8");

		/* Names: no aliases, no duplicates. */
		RENDER_BAD(cmd, "\"height\":16", "unknown field 'height'");
		RENDER_BAD(cmd, "\"svg\":true", "unknown field 'svg'");
		RENDER_BAD(cmd, "\"render\":{}", "unknown field 'render'");
		RENDER_BAD(cmd, "\"title\":\"a\",\"title\":\"b\"", "duplicate field 'title'");
		RENDER_BAD(cmd, "\"palette\":\"io\",\"palette\":\"io\"",
			   "duplicate field 'palette'");
		RENDER_BAD(cmd, "\"inverted\":true,\"inverted\":false",
			   "duplicate field 'inverted'");
	}
	/* The differential fields are export's alone. */
	CAPTURE_BAD("\"diff_from_ms\":1", "unknown field 'diff_from_ms' for command 'capture'");
	CAPTURE_BAD("\"diff_capture\":1", "unknown field 'diff_capture' for command 'capture'");
	CAPTURE_BAD("\"normalize\":true", "unknown field 'normalize' for command 'capture'");
	CAPTURE_BAD("\"negate\":true", "unknown field 'negate' for command 'capture'");
	BAD("{\"v\":1,\"cmd\":\"windows\",\"title\":\"x\"}", "unknown field 'title'");
	BAD("{\"v\":1,\"cmd\":\"status\",\"format\":\"svg\"}", "unknown field 'format'");
}

static void test_minwidth_parse(void)
{
	static const struct {
		const char *s;
		double value;
		bool percent;
	} good[] = {
		{ "0", 0, false },
		{ "0.1", 0.1, false },
		{ "10", 10, false },
		{ "007.50", 7.5, false },
		{ "0.5%", 0.5, true },
		{ "0%", 0, true },
		{ "100%", 100, true },
		{ "100.000%", 100, true },
		{ "12.25", 12.25, false },
		{ "1234567890123456789012345678901", 1234567890123456789012345678901.0, false },
	};
	static const char *const bad[] = {
		"",
		"-1",
		"+1",
		".5",
		"1.",
		"1e3",
		"abc",
		"%",
		"1%%",
		" 1",
		"1 ",
		"0x1",
		"101%",
		"100.01%",
		"inf",
		"nan",
		"1,5",
		"1.5.5",
		"5px",
		"%5",
		"1.%",
		"\xef\xbc\x91", /* a fullwidth digit one */
		"12345678901234567890123456789012",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		double v = -1;
		bool percent = !good[i].percent;
		int r = proto_minwidth_parse(good[i].s, &v, &percent);

		CHECK_MSG(r == 0, "('%s': %d)", good[i].s, r);
		double d = v - good[i].value;

		CHECK_MSG((d < 0 ? -d : d) <= 1e-12 * (1 + good[i].value), "('%s' read as %g)",
			  good[i].s, v);
		CHECK_MSG(percent == good[i].percent, "('%s')", good[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double v = -1;
		bool percent = true;

		CHECK_MSG(proto_minwidth_parse(bad[i], &v, &percent) == -EINVAL, "('%s')", bad[i]);
		CHECK_MSG(v == -1 && percent, "('%s': outputs written on failure)", bad[i]);
	}
	{
		double v = -1;
		bool percent = false;

		CHECK(proto_minwidth_parse(NULL, &v, &percent) == -EINVAL);
	}
}

static void test_names(void)
{
	CHECK(proto_format_from_name("folded") == PROTO_FORMAT_FOLDED);
	CHECK(proto_format_from_name("json") == PROTO_FORMAT_JSON);
	CHECK(proto_format_from_name("svg") == PROTO_FORMAT_SVG);
	CHECK(proto_format_from_name("speedscope") == PROTO_FORMAT_SPEEDSCOPE);
	CHECK(proto_format_from_name("SVG") == -EINVAL);
	CHECK(proto_format_from_name("") == -EINVAL);
	CHECK(proto_format_from_name(NULL) == -EINVAL);
	CHECK(proto_palette_from_name("auto") == PROTO_PALETTE_AUTO);
	CHECK(proto_palette_from_name("hot") == PROTO_PALETTE_HOT);
	CHECK(proto_palette_from_name("io") == PROTO_PALETTE_IO);
	CHECK(proto_palette_from_name("wakeup") == PROTO_PALETTE_WAKEUP);
	CHECK(proto_palette_from_name("chain") == PROTO_PALETTE_CHAIN);
	CHECK(proto_palette_from_name("diff") == PROTO_PALETTE_DIFF);
	CHECK(proto_palette_from_name("mem") == -EINVAL);
	CHECK(proto_palette_from_name(NULL) == -EINVAL);
}

static void test_diff_valid(void)
{
	struct proto_request req;

	memset(&req, 0xa5, sizeof(req));
	if (EXPORT_OK("\"from_ms\":5000,\"diff_from_ms\":1000", &req) == 0) {
		const struct proto_export_request *e = &req.export;

		CHECK(e->from_ms == 5000 && e->diff_from_ms == 1000 && e->diff_to_ms == 0);
		CHECK(e->diff_capture == 0 && e->format == PROTO_FORMAT_FOLDED);
		CHECK(!e->normalize && !e->strip_hex && !e->diff_widths_from_old && !e->negate);
	}
	if (EXPORT_OK("\"from_ms\":5000,\"diff_from_ms\":1000,\"diff_to_ms\":1001", &req) == 0)
		CHECK(req.export.diff_from_ms == 1000 && req.export.diff_to_ms == 1001);
	if (EXPORT_OK("\"from_ms\":1,\"diff_from_ms\":9007199254740991,"
		      "\"diff_to_ms\":9007199254740992",
		      &req) == 0)
		CHECK(req.export.diff_to_ms == INT64_C(9007199254740992));
	if (EXPORT_OK("\"capture\":7,\"diff_capture\":5,\"format\":\"svg\"", &req) == 0)
		CHECK(req.export.capture_id == 7 && req.export.diff_capture == 5 &&
		      req.export.format == PROTO_FORMAT_SVG);
	if (EXPORT_OK("\"capture\":7,\"diff_capture\":9007199254740992", &req) == 0)
		CHECK(req.export.diff_capture == UINT64_C(9007199254740992));
	/* The two selections mix freely, and may even be the same. */
	if (EXPORT_OK("\"capture\":7,\"diff_from_ms\":1000", &req) == 0)
		CHECK(req.export.capture_id == 7 && req.export.diff_from_ms == 1000);
	if (EXPORT_OK("\"from_ms\":1000,\"diff_capture\":7", &req) == 0)
		CHECK(req.export.from_ms == 1000 && req.export.diff_capture == 7);
	if (EXPORT_OK("\"capture\":7,\"diff_capture\":7", &req) == 0)
		CHECK(req.export.diff_capture == 7);
	/* Every flag, with a baseline. */
	if (EXPORT_OK("\"from_ms\":5,\"diff_capture\":3,\"format\":\"svg\",\"normalize\":true,"
		      "\"strip_hex\":true,\"diff_widths_from_old\":true,\"negate\":true,"
		      "\"palette\":\"diff\"",
		      &req) == 0) {
		const struct proto_export_request *e = &req.export;

		CHECK(e->normalize == 1 && e->strip_hex == 1 && e->diff_widths_from_old == 1 &&
		      e->negate == 1);
		CHECK(e->render.palette == PROTO_PALETTE_DIFF);
	}
	if (EXPORT_OK("\"from_ms\":5,\"diff_from_ms\":1,\"format\":\"folded\",\"normalize\":true",
		      &req) == 0)
		CHECK(req.export.normalize == 1 && req.export.format == PROTO_FORMAT_FOLDED);
	/* Zeros and falses are absent: no baseline, so json is fine. */
	if (EXPORT_OK("\"from_ms\":5,\"diff_from_ms\":0,\"diff_to_ms\":0,\"diff_capture\":0,"
		      "\"normalize\":false,\"strip_hex\":false,\"diff_widths_from_old\":false,"
		      "\"negate\":false,\"format\":\"json\"",
		      &req) == 0)
		CHECK(req.export.format == PROTO_FORMAT_JSON && !req.export.diff_capture);
	if (EXPORT_OK("\"from_ms\":5,\"format\":\"speedscope\"", &req) == 0)
		CHECK(req.export.format == PROTO_FORMAT_SPEEDSCOPE);
}

static void test_diff_invalid(void)
{
	static const char *const flags[] = { "normalize", "strip_hex", "diff_widths_from_old",
					     "negate" };
	char extra[128], want[128];

	/* One baseline at most, and a range that makes sense. */
	EXPORT_BAD("\"from_ms\":5,\"diff_capture\":3,\"diff_from_ms\":1",
		   "field 'diff_capture' excludes 'diff_from_ms' and 'diff_to_ms': the baseline "
		   "is a capture or a time range, not both");
	EXPORT_BAD("\"from_ms\":5,\"diff_capture\":3,\"diff_to_ms\":9",
		   "field 'diff_capture' excludes 'diff_from_ms' and 'diff_to_ms'");
	EXPORT_BAD("\"from_ms\":5,\"diff_to_ms\":9", "field 'diff_to_ms' needs 'diff_from_ms'");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":0,\"diff_to_ms\":9",
		   "field 'diff_to_ms' needs 'diff_from_ms'");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":1000,\"diff_to_ms\":1000",
		   "field 'diff_to_ms' (1000) must be > 'diff_from_ms' (1000), or 0 for now");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":1000,\"diff_to_ms\":999",
		   "field 'diff_to_ms' (999) must be > 'diff_from_ms' (1000)");

	/* The main selection is checked first. */
	EXPORT_BAD("\"diff_capture\":3", "export needs from_ms or capture");
	EXPORT_BAD("\"diff_from_ms\":3,\"to_ms\":9", "export needs from_ms or capture");
	EXPORT_BAD("\"capture\":7,\"to_ms\":1,\"diff_capture\":3", "field 'capture' excludes");

	/* The flags need a baseline. */
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		snprintf(extra, sizeof(extra), "\"capture\":7,\"format\":\"svg\",\"%s\":true",
			 flags[i]);
		snprintf(want, sizeof(want),
			 "field '%s' needs a baseline: 'diff_from_ms' or 'diff_capture'", flags[i]);
		EXPORT_BAD(extra, want);
		/* ...and are bools. */
		snprintf(extra, sizeof(extra), "\"capture\":7,\"diff_capture\":3,\"%s\":1",
			 flags[i]);
		snprintf(want, sizeof(want), "field '%s' must be true or false", flags[i]);
		EXPORT_BAD(extra, want);
		snprintf(extra, sizeof(extra), "\"capture\":7,\"diff_capture\":3,\"%s\":\"true\"",
			 flags[i]);
		EXPORT_BAD(extra, want);
		snprintf(extra, sizeof(extra), "\"capture\":7,\"diff_capture\":3,\"%s\":null",
			 flags[i]);
		EXPORT_BAD(extra, want);
	}
	/* A baseline whose diff_to_ms is 0 still counts; one of 0 does not. */
	EXPORT_BAD("\"capture\":7,\"diff_from_ms\":0,\"normalize\":true",
		   "field 'normalize' needs a baseline");

	/* Formats a differential export cannot be. */
	EXPORT_BAD("\"capture\":7,\"diff_capture\":3,\"format\":\"json\"",
		   "a differential export is folded or svg, not json");
	EXPORT_BAD("\"from_ms\":7,\"diff_from_ms\":3,\"format\":\"speedscope\"",
		   "a differential export is folded or svg, not speedscope");

	/* Integer fields. */
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":-1",
		   "field 'diff_from_ms' must be between 0 and 9007199254740992");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":1.5", "field 'diff_from_ms' must be an integer");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":\"1\"",
		   "field 'diff_from_ms' must be an integer");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":9007199254740994",
		   "field 'diff_from_ms' must be between");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":1,\"diff_to_ms\":-5",
		   "field 'diff_to_ms' must be between 0 and");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":1,\"diff_to_ms\":true",
		   "field 'diff_to_ms' must be an integer");
	EXPORT_BAD("\"from_ms\":5,\"diff_capture\":-7",
		   "field 'diff_capture' must be between 0 and");
	EXPORT_BAD("\"from_ms\":5,\"diff_capture\":7.5", "field 'diff_capture' must be an integer");
	EXPORT_BAD("\"from_ms\":5,\"diff_capture\":1e300", "field 'diff_capture' must be between");

	/* Names. */
	EXPORT_BAD("\"from_ms\":5,\"diff_capture_id\":3", "unknown field 'diff_capture_id'");
	EXPORT_BAD("\"from_ms\":5,\"diff\":{}", "unknown field 'diff'");
	EXPORT_BAD("\"from_ms\":5,\"negate\":false,\"negate\":false", "duplicate field 'negate'");
	EXPORT_BAD("\"from_ms\":5,\"diff_from_ms\":1,\"diff_from_ms\":1",
		   "duplicate field 'diff_from_ms'");
}

static void test_request_format_render(void)
{
	struct proto_request *req = calloc(1, sizeof(*req));
	struct proto_render *r;
	char *s;

	if (!req)
		return;
	/* A few options: only those that are not defaults go out; bools as bools. */
	req->cmd = PROTO_CMD_CAPTURE;
	req->capture.seconds = 10;
	req->capture.state_mask = THREAD_STATE_ALL;
	req->capture.chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	req->capture.format = PROTO_FORMAT_SVG;
	req->capture.render.width = 1600;
	req->capture.render.inverted = 1;
	req->capture.render.palette = PROTO_PALETTE_HOT;
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"capture\",\"format\":\"svg\",\"width\":1600,"
				  "\"inverted\":true,\"palette\":\"hot\"}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);

	/* Everything set, strings at their limits and needing escapes. */
	r = &req->capture.render;
	memset(r->title, '"', PROTO_TITLE_MAX);
	memset(r->subtitle, '\\', PROTO_TITLE_MAX);
	memcpy(r->subtitle, "\xc3\xa9\n\t\x01", 5);
	memset(r->countname, 'c', PROTO_COUNTNAME_MAX);
	memset(r->minwidth, '9', PROTO_MINWIDTH_MAX);
	r->width = PROTO_WIDTH_MAX;
	r->frame_height = PROTO_FRAME_HEIGHT_MAX;
	r->reverse = 1;
	r->flamechart = 1;
	r->palette = PROTO_PALETTE_DIFF;
	req->capture.format = PROTO_FORMAT_SPEEDSCOPE;
	CHECK_ROUNDTRIP(req);
	r->width = PROTO_WIDTH_MIN;
	r->frame_height = PROTO_FRAME_HEIGHT_MIN;
	strcpy(r->minwidth, "100%");
	r->inverted = 0;
	CHECK_ROUNDTRIP(req);

	/* A differential export: the exact line. */
	memset(req, 0, sizeof(*req));
	req->cmd = PROTO_CMD_EXPORT;
	req->export.state_mask = THREAD_STATE_ALL;
	req->export.capture_id = 7;
	req->export.diff_capture = 5;
	req->export.format = PROTO_FORMAT_SVG;
	req->export.normalize = 1;
	req->export.negate = 1;
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"export\",\"capture\":7,\"format\":\"svg\","
				  "\"diff_capture\":5,\"normalize\":true,\"negate\":true}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);

	/* Everything an export has, set. */
	req->export.capture_id = 0;
	req->export.diff_capture = 0;
	req->export.from_ms = INT64_C(1795309200000);
	req->export.to_ms = INT64_C(1795309500000);
	req->export.diff_from_ms = INT64_C(1795305600000);
	req->export.diff_to_ms = INT64_C(1795309200000);
	req->export.n_pids = 1;
	req->export.pids[0] = 4321;
	strcpy(req->export.comm, "app");
	strcpy(req->export.grep, "^do_");
	strcpy(req->export.exclude, "^x$");
	req->export.state_mask = 1u << 1;
	req->export.strip_hex = 1;
	req->export.diff_widths_from_old = 1;
	r = &req->export.render;
	strcpy(r->title, "before \xe2\x86\x92 after");
	strcpy(r->subtitle, "sub");
	strcpy(r->countname, "us");
	strcpy(r->minwidth, "0.25");
	r->width = 2000;
	r->frame_height = 20;
	r->inverted = 1;
	r->reverse = 1;
	r->flamechart = 1;
	r->palette = PROTO_PALETTE_IO;
	CHECK_ROUNDTRIP(req);
	req->export.format = PROTO_FORMAT_FOLDED;
	CHECK_ROUNDTRIP(req);

	/* No baseline: a plain speedscope export, render options and all. */
	req->export.diff_from_ms = 0;
	req->export.diff_to_ms = 0;
	req->export.normalize = 0;
	req->export.strip_hex = 0;
	req->export.diff_widths_from_old = 0;
	req->export.negate = 0;
	req->export.format = PROTO_FORMAT_SPEEDSCOPE;
	CHECK_ROUNDTRIP(req);
	free(req);
}

/* ---- kinds and histograms: requests ------------------------------------ */

static void test_kind_names(void)
{
	static const char *const names[] = { "offcpu", "wakeup", "offwake", "chain",
					     "runq",   "oncpu",	 "bio",	    "fileio" };

	CHECK(PROTO_KIND_OFFCPU == 0 && PROTO_KIND_WAKEUP == 1 && PROTO_KIND_OFFWAKE == 2 &&
	      PROTO_KIND_CHAIN == 3 && PROTO_KIND_RUNQ == 4 && PROTO_KIND_ONCPU == 5);
	for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		CHECK_STR(proto_kind_name(k), names[k]);
		CHECK_MSG(proto_kind_from_name(names[k]) == (int)k, "(%s)", names[k]);
	}
	CHECK_STR(proto_kind_name(8), "?");
	CHECK_STR(proto_kind_name(UINT32_MAX), "?");
	CHECK(proto_kind_from_name("Offcpu") == -EINVAL);
	CHECK(proto_kind_from_name("off-cpu") == -EINVAL);
	CHECK(proto_kind_from_name("") == -EINVAL);
	CHECK(proto_kind_from_name(NULL) == -EINVAL);
}

static void test_capture_kinds(void)
{
	static const struct {
		const char *name;
		enum proto_kind kind;
	} kinds[] = {
		{ "offcpu", PROTO_KIND_OFFCPU },   { "wakeup", PROTO_KIND_WAKEUP },
		{ "offwake", PROTO_KIND_OFFWAKE }, { "chain", PROTO_KIND_CHAIN },
		{ "runq", PROTO_KIND_RUNQ },	   { "oncpu", PROTO_KIND_ONCPU },
	};
	struct proto_request req;
	char extra[128], want[128];

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(extra, sizeof(extra), "\"kind\":\"%s\"", kinds[i].name);
		memset(&req, 0xa5, sizeof(req));
		if (CAPTURE_OK(extra, &req) == 0) {
			CHECK_MSG(req.capture.kind == kinds[i].kind, "(%s)", extra);
			CHECK(req.capture.split_runq == 0);
			CHECK(req.capture.chain_depth == PROTO_CHAIN_DEPTH_DEFAULT);
		}
		/* split_runq false is the default, so any kind takes it. */
		snprintf(extra, sizeof(extra), "\"kind\":\"%s\",\"split_runq\":false",
			 kinds[i].name);
		CAPTURE_OK(extra, &req);
		if (kinds[i].kind != PROTO_KIND_OFFCPU) {
			snprintf(extra, sizeof(extra), "\"kind\":\"%s\",\"split_runq\":true",
				 kinds[i].name);
			snprintf(want, sizeof(want), "field 'split_runq' needs kind offcpu, not %s",
				 kinds[i].name);
			CAPTURE_BAD(extra, want);
			snprintf(extra, sizeof(extra), "\"kind\":\"%s\",\"oncpu\":true",
				 kinds[i].name);
			snprintf(want, sizeof(want), "field 'oncpu' needs kind offcpu, not %s",
				 kinds[i].name);
			CAPTURE_BAD(extra, want);
		}
		if (kinds[i].kind != PROTO_KIND_FILEIO) {
			snprintf(extra, sizeof(extra), "\"kind\":\"%s\",\"with_filename\":true",
				 kinds[i].name);
			snprintf(want, sizeof(want),
				 "field 'with_filename' needs kind fileio, not %s", kinds[i].name);
			CAPTURE_BAD(extra, want);
		}
		/* A depth is refused for other kinds, even the default one. */
		if (kinds[i].kind != PROTO_KIND_CHAIN) {
			snprintf(extra, sizeof(extra), "\"kind\":\"%s\",\"chain_depth\":3",
				 kinds[i].name);
			snprintf(want, sizeof(want), "field 'chain_depth' needs kind chain, not %s",
				 kinds[i].name);
			CAPTURE_BAD(extra, want);
		}
	}

	if (CAPTURE_OK("\"oncpu\":true,\"split_runq\":true", &req) == 0)
		CHECK(req.capture.kind == PROTO_KIND_OFFCPU && req.capture.oncpu == 1);
	CAPTURE_BAD("\"kind\":\"oncpu\",\"requests\":[\"main\"]",
		    "field 'requests' does not apply to on-CPU samples (kind oncpu, oncpu)");
	CAPTURE_BAD("\"oncpu\":true,\"requests\":[\"main\"]",
		    "field 'requests' does not apply to on-CPU samples (kind oncpu, oncpu)");
	if (CAPTURE_OK("\"split_runq\":true", &req) == 0)
		CHECK(req.capture.kind == PROTO_KIND_OFFCPU && req.capture.split_runq == 1);
	if (CAPTURE_OK("\"kind\":\"offcpu\",\"split_runq\":true,\"states\":[\"S\"]", &req) == 0)
		CHECK(req.capture.split_runq == 1);
	if (CAPTURE_OK("\"chain_depth\":1,\"kind\":\"chain\"", &req) == 0)
		CHECK(req.capture.kind == PROTO_KIND_CHAIN && req.capture.chain_depth == 1);
	if (CAPTURE_OK("\"kind\":\"chain\",\"chain_depth\":8", &req) == 0)
		CHECK(req.capture.chain_depth == PROTO_CHAIN_DEPTH_MAX);
	if (CAPTURE_OK("\"kind\":\"chain\",\"chain_depth\":5.0", &req) == 0)
		CHECK(req.capture.chain_depth == 5);

	CAPTURE_BAD("\"chain_depth\":3", "field 'chain_depth' needs kind chain, not offcpu");
	CAPTURE_BAD("\"kind\":\"chain\",\"chain_depth\":0",
		    "field 'chain_depth' must be between 1 and 8");
	CAPTURE_BAD("\"kind\":\"chain\",\"chain_depth\":9",
		    "field 'chain_depth' must be between 1 and 8");
	CAPTURE_BAD("\"kind\":\"chain\",\"chain_depth\":2.5",
		    "field 'chain_depth' must be an integer");
	CAPTURE_BAD("\"kind\":\"chain\",\"chain_depth\":\"3\"",
		    "field 'chain_depth' must be an integer");
	/* Field errors come before the rules that span fields. */
	CAPTURE_BAD("\"chain_depth\":9", "field 'chain_depth' must be between 1 and 8");
	CAPTURE_BAD("\"split_runq\":1", "field 'split_runq' must be true or false");
	CAPTURE_BAD("\"split_runq\":\"true\"", "field 'split_runq' must be true or false");
	CAPTURE_BAD("\"kind\":\"wakeup\",\"split_runq\":null",
		    "field 'split_runq' must be true or false");
	CAPTURE_BAD("\"kind\":\"bogus\"",
		    "field 'kind' must be one of: offcpu, wakeup, offwake, chain, runq");
	CAPTURE_BAD("\"kind\":\"Offcpu\"", "field 'kind' must be one of");
	CAPTURE_BAD("\"kind\":0", "field 'kind' must be one of");
	CAPTURE_BAD("\"kind\":null", "field 'kind' must be one of");
	CAPTURE_BAD("\"kind\":\"chain\",\"kind\":\"chain\"", "duplicate field 'kind'");
	CAPTURE_BAD("\"kinds\":[\"chain\"]", "unknown field 'kinds' for command 'capture'");
	CAPTURE_BAD("\"depth\":3", "unknown field 'depth'");
}

static void test_export_kind(void)
{
	struct proto_request req;

	memset(&req, 0xa5, sizeof(req));
	if (EXPORT_OK("\"from_ms\":5", &req) == 0)
		CHECK(req.export.kind == PROTO_KIND_OFFCPU);
	if (EXPORT_OK("\"from_ms\":5,\"kind\":\"runq\"", &req) == 0)
		CHECK(req.export.kind == PROTO_KIND_RUNQ);
	if (EXPORT_OK("\"capture\":7,\"kind\":\"wakeup\",\"format\":\"json\"", &req) == 0)
		CHECK(req.export.kind == PROTO_KIND_WAKEUP && req.export.capture_id == 7);
	/* A differential export compares one kind, A and B alike. */
	if (EXPORT_OK("\"from_ms\":5,\"diff_capture\":3,\"kind\":\"chain\"", &req) == 0)
		CHECK(req.export.kind == PROTO_KIND_CHAIN && req.export.diff_capture == 3);
	if (EXPORT_OK("\"from_ms\":5,\"kind\":\"offwake\",\"format\":\"svg\","
		      "\"palette\":\"chain\"",
		      &req) == 0)
		CHECK(req.export.kind == PROTO_KIND_OFFWAKE);

	EXPORT_BAD("\"from_ms\":5,\"kind\":\"all\"",
		   "field 'kind' must be one of: offcpu, wakeup, offwake, chain, runq");
	EXPORT_BAD("\"from_ms\":5,\"kind\":[\"runq\"]", "field 'kind' must be one of");
	EXPORT_BAD("\"from_ms\":5,\"split_runq\":true", "unknown field 'split_runq'");
	EXPORT_BAD("\"from_ms\":5,\"chain_depth\":3", "unknown field 'chain_depth'");
	EXPORT_BAD("\"kind\":\"runq\"", "export needs from_ms or capture");
}

/* latency: pid and func required, seconds defaulted and bounded; the
 * request formats back to what parses. */
static void test_latency_request(void)
{
	struct proto_request req, back;
	char *line, err[256];

	memset(&req, 0xa5, sizeof(req));
	if (PARSE_OK(cmd_line("latency", "\"pid\":42,\"func\":\"handle@/bin/x\""), &req) == 0) {
		CHECK(req.cmd == PROTO_CMD_LATENCY && req.latency.pid == 42);
		CHECK(!strcmp(req.latency.func, "handle@/bin/x") && req.latency.seconds == 10);
		line = proto_request_format(&req);
		CHECK(line &&
		      proto_request_parse(line, strlen(line), &back, err, sizeof(err)) == 0 &&
		      back.latency.pid == 42 && !strcmp(back.latency.func, "handle@/bin/x"));
		free(line);
	}
	{ /* the reply: formatted, then its figures parsed back */
		uint64_t hist[PROTO_LATENCY_BUCKETS] = { [3] = 2 };
		struct proto_latency_child child = { "lookup", 2, 700, 500 };
		struct proto_latency_call call = { 9, 1000, 350, 0 };
		struct proto_latency_result res = {
			.func = "handle",
			.calls = 2,
			.total_ns = 20,
			.min_ns = 8,
			.max_ns = 12,
			.incomplete = 3,
			.hist = hist,
			.children = &child,
			.n_children = 1,
			.timeline = &call,
			.n_timeline = 1,
		};
		struct proto_reply *reply = NULL;

		line = proto_reply_latency(&res);
		CHECK(line && strstr(line, "\"hist_log2_ns\":[0,0,0,2],") &&
		      strstr(line,
			     "\"children\":[{\"name\":\"lookup\",\"count\":2,\"total_ns\":700,"
			     "\"off_cpu_ns\":500}]") &&
		      strstr(line,
			     "\"timeline\":[{\"tid\":9,\"start_ns\":1000,\"latency_ns\":350,"));
		CHECK(line && proto_reply_parse(line, strlen(line), &reply) == 0 &&
		      reply->cmd == PROTO_CMD_LATENCY && reply->latency.calls == 2 &&
		      reply->latency.total_ns == 20 && reply->latency.incomplete == 3 &&
		      !strcmp(reply->latency.func, "handle"));
		proto_reply_free(reply);
		free(line);
	}
	BAD(cmd_line("latency", "\"func\":\"f\""), "latency needs 'pid'");
	BAD(cmd_line("latency", "\"pid\":1"), "latency needs 'func'");
	BAD(cmd_line("latency", "\"pid\":1,\"func\":\"f\",\"seconds\":0"), "seconds");
	BAD(cmd_line("latency", "\"pid\":1,\"func\":\"f\",\"grep\":\"x\""), "grep");
}

static void test_hist_request(void)
{
	struct proto_request req;
	char extra[4096], *p;

	memset(&req, 0xa5, sizeof(req));
	if (HIST_OK("\"from_ms\":1795305600000", &req) == 0) {
		CHECK(req.cmd == PROTO_CMD_HIST);
		CHECK(req.hist.from_ms == INT64_C(1795305600000) && req.hist.to_ms == 0);
		CHECK(req.hist.capture_id == 0 && req.hist.n_pids == 0);
		CHECK(req.hist.kind == PROTO_KIND_OFFCPU);
	}
	memset(&req, 0xa5, sizeof(req));
	if (HIST_OK("\"capture\":7,\"kind\":\"runq\",\"pids\":[1,4194304]", &req) == 0) {
		CHECK(req.hist.capture_id == 7 && req.hist.from_ms == 0 && req.hist.to_ms == 0);
		CHECK(req.hist.kind == PROTO_KIND_RUNQ);
		CHECK(req.hist.n_pids == 2 && req.hist.pids[0] == 1 && req.hist.pids[1] == 4194304);
	}
	if (HIST_OK("\"from_ms\":1000,\"to_ms\":1001,\"kind\":\"offcpu\"", &req) == 0)
		CHECK(req.hist.from_ms == 1000 && req.hist.to_ms == 1001);
	if (HIST_OK("\"capture\":7,\"from_ms\":0,\"to_ms\":0,\"pids\":[]", &req) == 0)
		CHECK(req.hist.capture_id == 7 && req.hist.n_pids == 0);
	if (HIST_OK("\"capture\":9007199254740992", &req) == 0)
		CHECK(req.hist.capture_id == UINT64_C(9007199254740992));
	p = extra + sprintf(extra, "\"from_ms\":1,\"pids\":[");
	for (int i = 0; i < PROTO_MAX_IDS; i++)
		p += sprintf(p, "%s%d", i ? "," : "", i + 1);
	strcpy(p, "]");
	if (HIST_OK(extra, &req) == 0)
		CHECK(req.hist.n_pids == PROTO_MAX_IDS);
	sprintf(p, ",%d]", PROTO_MAX_IDS + 1);
	HIST_BAD(extra, "field 'pids' has 257 entries; at most 256 allowed");

	/* The range rules are export's. */
	HIST_BAD("", "hist needs from_ms or capture");
	HIST_BAD("\"kind\":\"runq\",\"to_ms\":5", "hist needs from_ms or capture");
	HIST_BAD("\"capture\":0,\"from_ms\":0", "hist needs from_ms or capture");
	HIST_BAD("\"capture\":7,\"from_ms\":1", "field 'capture' excludes 'from_ms' and 'to_ms'");
	HIST_BAD("\"capture\":7,\"to_ms\":1", "field 'capture' excludes 'from_ms' and 'to_ms'");
	HIST_BAD("\"from_ms\":1000,\"to_ms\":1000",
		 "field 'to_ms' (1000) must be > 'from_ms' (1000), or 0 for now");
	HIST_BAD("\"from_ms\":-1", "field 'from_ms' must be between 0 and 9007199254740992");
	HIST_BAD("\"from_ms\":1.5", "field 'from_ms' must be an integer");
	HIST_BAD("\"capture\":\"7\"", "field 'capture' must be an integer");
	HIST_BAD("\"from_ms\":1,\"pids\":[0]", "field 'pids'[0] must be between 1 and 4194304");

	/* Histograms are kept of two kinds only. */
	HIST_BAD("\"from_ms\":1,\"kind\":\"wakeup\"", "field 'kind' must be one of: offcpu, runq");
	HIST_BAD("\"from_ms\":1,\"kind\":\"offwake\"", "field 'kind' must be one of: offcpu, runq");
	HIST_BAD("\"from_ms\":1,\"kind\":\"chain\"", "field 'kind' must be one of: offcpu, runq");
	HIST_BAD("\"from_ms\":1,\"kind\":\"bogus\"", "field 'kind' must be one of: offcpu, runq");
	HIST_BAD("\"from_ms\":1,\"kind\":4", "field 'kind' must be one of: offcpu, runq");

	/* Only its own fields. */
	HIST_BAD("\"from_ms\":1,\"format\":\"json\"", "unknown field 'format' for command 'hist'");
	HIST_BAD("\"from_ms\":1,\"states\":[\"S\"]", "unknown field 'states' for command 'hist'");
	HIST_BAD("\"from_ms\":1,\"comm\":\"x\"", "unknown field 'comm' for command 'hist'");
	HIST_BAD("\"from_ms\":1,\"diff_capture\":2", "unknown field 'diff_capture'");
	HIST_BAD("\"from_ms\":1,\"title\":\"t\"", "unknown field 'title'");
	HIST_BAD("\"from_ms\":1,\"from_ms\":2", "duplicate field 'from_ms'");
	HIST_BAD("\"from_ms\":1,\"kind\":\"runq\",\"kind\":\"runq\"", "duplicate field 'kind'");
	BAD("{\"v\":1,\"cmd\":\"HIST\",\"from_ms\":1}", "unknown command 'HIST'");
}

static void test_request_format_kinds(void)
{
	struct proto_request *req = calloc(1, sizeof(*req));
	char *s;

	if (!req)
		return;
	/* A capture's defaults stay out, the new fields among them. */
	req->cmd = PROTO_CMD_CAPTURE;
	req->capture.seconds = 10;
	req->capture.state_mask = THREAD_STATE_ALL;
	req->capture.chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"capture\"}\n"), "('%s')", STR(s));
	free(s);
	req->capture.kind = PROTO_KIND_CHAIN;
	req->capture.chain_depth = 5;
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"capture\",\"kind\":\"chain\","
				  "\"chain_depth\":5}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);
	req->capture.kind = PROTO_KIND_OFFCPU;
	req->capture.chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	req->capture.split_runq = 1;
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"capture\",\"split_runq\":true}\n"), "('%s')",
		  STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);
	req->capture.split_runq = 0;
	for (unsigned k = PROTO_KIND_OFFCPU; k <= PROTO_KIND_RUNQ; k++) {
		req->capture.kind = k;
		CHECK_ROUNDTRIP(req);
	}

	/* An export of a kind. */
	memset(req, 0, sizeof(*req));
	req->cmd = PROTO_CMD_EXPORT;
	req->export.state_mask = THREAD_STATE_ALL;
	req->export.from_ms = 5;
	req->export.kind = PROTO_KIND_OFFWAKE;
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"export\",\"from_ms\":5,\"kind\":"
				  "\"offwake\"}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);
	req->export.diff_capture = 3;
	req->export.kind = PROTO_KIND_RUNQ;
	CHECK_ROUNDTRIP(req);
	req->export.lines = 1;
	s = proto_request_format(req);
	CHECK_MSG(s && strstr(s, "\"lines\":true"), "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);

	/* hist: the minimal line, then everything. */
	memset(req, 0, sizeof(*req));
	req->cmd = PROTO_CMD_HIST;
	req->hist.from_ms = INT64_C(1795305600000);
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"hist\",\"from_ms\":1795305600000}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);
	req->hist.to_ms = INT64_C(9007199254740992);
	req->hist.n_pids = PROTO_MAX_IDS;
	for (size_t i = 0; i < PROTO_MAX_IDS; i++)
		req->hist.pids[i] = 4194304 - i;
	req->hist.kind = PROTO_KIND_RUNQ;
	CHECK_ROUNDTRIP(req);
	req->hist.from_ms = 0;
	req->hist.to_ms = 0;
	req->hist.capture_id = 7;
	req->hist.n_pids = 1;
	s = proto_request_format(req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"hist\",\"capture\":7,\"pids\":[4194304],"
				  "\"kind\":\"runq\"}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(req);
	free(req);
}

/* ---- replies ----------------------------------------------------------- */

static void test_reply_error(void)
{
	const char *nasty = "say \"hi\"\nnew\tline\r\x01\x1f\x7f back\\slash \xc3\xa9 bad \xff\xfe"
			    " cut \xe2\x82 end }\n{";
	const char *fixed = "say \"hi\"\nnew\tline\r\x01\x1f\x7f back\\slash \xc3\xa9 bad "
			    "\xef\xbf\xbd\xef\xbf\xbd cut \xef\xbf\xbd\xef\xbf\xbd end }\n{";
	struct proto_reply *reply = NULL;
	char *s;

	s = proto_reply_error(PROTO_ERR_BAD_REQUEST, nasty);
	CHECK_LINE(s);
	if (s && proto_reply_parse(s, strlen(s), &reply) == 0) {
		CHECK(!reply->ok);
		CHECK(!strcmp(reply->error_code, "bad_request"));
		CHECK_MSG(!strcmp(reply->error_message, fixed), "('%s')", reply->error_message);
		proto_reply_free(reply);
	} else {
		CHECK_MSG(0, "(reply does not parse: '%s')", STR(s));
	}
	free(s);

	s = proto_reply_error(NULL, NULL);
	CHECK_LINE(s);
	reply = NULL;
	if (s && proto_reply_parse(s, strlen(s), &reply) == 0) {
		CHECK(!strcmp(reply->error_code, "internal"));
		CHECK(!strcmp(reply->error_message, ""));
	} else {
		CHECK_MSG(0, "(reply does not parse: '%s')", STR(s));
	}
	proto_reply_free(reply);
	free(s);

	/* An error produced by the parser, quoting client bytes, goes out intact. */
	{
		const char *req = "{\"v\":1,\"cmd\":\"capture\",\"\xff\\n\\\"x\":1}";
		struct proto_request r;
		char err[256];

		CHECK(proto_request_parse(req, strlen(req), &r, err, sizeof(err)) == -EINVAL);
		s = proto_reply_error(PROTO_ERR_BAD_REQUEST, err);
		CHECK_LINE(s);
		reply = NULL;
		CHECK(s && proto_reply_parse(s, strlen(s), &reply) == 0);
		if (reply)
			CHECK_MSG(strstr(reply->error_message, "unknown field '\xef\xbf\xbd\n\"x'"),
				  "('%s')", reply->error_message);
		proto_reply_free(reply);
		free(s);
	}
}

static void test_reply_status(void)
{
	const struct proto_program programs[] = {
		{ "offcpu_switch", true, 1000, 2500000, 500.5, true },
		{ "offcpu_exit", false, 0, 0, 0, false },
	};
	const struct proto_map_fill maps[] = { { "aggregation", 16, 64, 25.0 } };
	const struct proto_kind_status kinds[] = {
		{ "offcpu", "in use", "by the continuous profile" },
		{ "fileio", "unavailable", "tracefs is not mounted at /sys/kernel/tracing" },
		{ "wakeup", "ready", NULL },
	};
	const struct proto_counter counters[] = {
		{ "switches", 123456789012ull },
		{ "drop_agg_full", 0 },
		{ "huge", UINT64_MAX },
	};
	struct proto_status st = {
		.version = "0.1.0",
		.uptime_s = 86400 * 3,
		.pid = 4242,
		.tracepoint = "tp_btf",
		.kstack_cache = false,
		.kstack_cache_reason = "stack_cache = off",
		.programs = programs,
		.n_programs = 2,
		.maps = maps,
		.n_maps = 1,
		.store = { "/var/lib/offcpud/offcpud.db", 4096, 3, 5, 2, true,
			   "database or disk is full" },
		.cpu_pct = 1.5,
		.rss_bytes = 12345678,
		.slots_active = 3,
		.slots_max = 64,
		.captures_running = 2,
		.switches_per_s = 12345.5,
		.recorded_per_s = 0.1,
		.counters = counters,
		.n_counters = 3,
		.groups = { { "oncpu", "loaded", "", 812 },
			    { "fileio", "unavailable", "no tracefs", 0 } },
		.n_groups = 2,
		.kinds = kinds,
		.n_kinds = 3,
	};
	struct proto_reply *reply = NULL;
	char *s = proto_reply_status(&st);

	CHECK_LINE(s);
	CHECK_MSG(s && !strncmp(s, "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{", 42),
		  "('%s')", STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_status *p = &reply->status;

		CHECK(reply->ok && reply->cmd == PROTO_CMD_STATUS);
		CHECK(!strcmp(p->version, "0.1.0"));
		CHECK(p->uptime_s == 86400 * 3);
		CHECK(p->pid == 4242);
		CHECK(!strcmp(p->tracepoint, "tp_btf"));
		CHECK(!p->kstack_cache);
		CHECK_STR(p->kstack_cache_reason, "stack_cache = off");
		CHECK(p->n_programs == 2);
		if (p->n_programs == 2) {
			CHECK(!strcmp(p->programs[0].name, "offcpu_switch") &&
			      p->programs[0].attached);
			CHECK(!strcmp(p->programs[1].name, "offcpu_exit") &&
			      !p->programs[1].attached);
			CHECK(p->programs[0].loaded && !p->programs[1].loaded);
		}
		CHECK(p->n_groups == 2);
		if (p->n_groups == 2) {
			CHECK(!strcmp(p->groups[0].name, "oncpu") &&
			      !strcmp(p->groups[0].state, "loaded") && !*p->groups[0].reason &&
			      p->groups[0].load_ms == 812);
			CHECK(!strcmp(p->groups[1].name, "fileio") &&
			      !strcmp(p->groups[1].state, "unavailable") &&
			      !strcmp(p->groups[1].reason, "no tracefs"));
		}
		CHECK(p->slots_active == 3 && p->slots_max == 64 && p->captures_running == 2);
		CHECK(p->n_programs == 2 && p->programs[0].run_cnt == 1000 &&
		      p->programs[0].run_time_ns == 2500000 &&
		      p->programs[0].events_per_s == 500.5);
		CHECK(p->n_maps == 1 && !strcmp(p->maps[0].name, "aggregation") &&
		      p->maps[0].entries == 16 && p->maps[0].max_entries == 64 &&
		      p->maps[0].fill_pct == 25.0);
		CHECK(!strcmp(p->store.path, "/var/lib/offcpud/offcpud.db") &&
		      p->store.bytes == 4096 && p->store.windows == 3 &&
		      p->store.windows_written == 5 && p->store.windows_failed == 2 &&
		      p->store.disk_full &&
		      !strcmp(p->store.last_error, "database or disk is full"));
		CHECK(p->cpu_pct == 1.5 && p->rss_bytes == 12345678);
		CHECK(p->n_kinds == 3);
		if (p->n_kinds == 3) {
			CHECK_STR(p->kinds[0].name, "offcpu");
			CHECK_STR(p->kinds[0].state, "in use");
			CHECK_STR(p->kinds[0].detail, "by the continuous profile");
			CHECK_STR(p->kinds[1].state, "unavailable");
			CHECK_STR(p->kinds[1].detail, "tracefs is not mounted at /sys/kernel/tracing");
			CHECK_STR(p->kinds[2].detail, ""); /* NULL: no detail */
		}
		CHECK(p->switches_per_s == 12345.5);
		CHECK(p->recorded_per_s == 0.1);
		CHECK(p->n_counters == 3);
		if (p->n_counters == 3) {
			CHECK(!strcmp(p->counters[0].name, "switches") &&
			      p->counters[0].value == 123456789012ull);
			CHECK(!strcmp(p->counters[1].name, "drop_agg_full") &&
			      p->counters[1].value == 0);
			/* Past 2^53 values are approximate; the top saturates. */
			CHECK(p->counters[2].value == UINT64_MAX);
		}
	}
	proto_reply_free(reply);
	free(s);

	/* Empty lists, NULL strings and non-finite rates still make a valid reply. */
	memset(&st, 0, sizeof(st));
	{
		static const struct proto_program odd_programs[] = { { NULL, true, 0, 0, 0,
								       true } };
		static const struct proto_counter odd_counters[] = { { NULL, 1 }, { "\xfe", 2 } };

		st.programs = odd_programs;
		st.n_programs = 1;
		st.counters = odd_counters;
		st.n_counters = 2;
		s = proto_reply_status(&st);
		CHECK_LINE(s);
		reply = NULL;
		CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
		if (reply && reply->status.n_counters == 2) {
			CHECK(!strcmp(reply->status.programs[0].name, ""));
			CHECK(!strcmp(reply->status.counters[0].name, ""));
			CHECK(!strcmp(reply->status.counters[1].name, "\xef\xbf\xbd"));
			CHECK(reply->status.counters[1].value == 2);
		} else {
			CHECK_MSG(0, "(odd status did not round-trip)");
		}
		proto_reply_free(reply);
		free(s);
		memset(&st, 0, sizeof(st));
	}
	st.switches_per_s = 0.0 / 0.0;
	st.recorded_per_s = 1.0 / 0.0;
	s = proto_reply_status(&st);
	CHECK_LINE(s);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK(reply->status.n_programs == 0 && reply->status.n_counters == 0);
		CHECK(reply->status.n_kinds == 0);
		CHECK(!strcmp(reply->status.version, ""));
		CHECK(!reply->status.kstack_cache && !strcmp(reply->status.kstack_cache_reason, ""));
		CHECK(reply->status.switches_per_s == 0 && reply->status.recorded_per_s == 0);
	}
	proto_reply_free(reply);
	free(s);
}

static void test_reply_capture(void)
{
	const struct proto_counter drops[] = {
		{ "agg_full", 7 },
		{ "stack_full", 1u << 31 },
	};
	struct proto_capture_result res = {
		.id = 17,
		.duration_ns = 10000000000ull,
		.total_ns = 123456789,
		.n_samples = 2,
		.target_exited = true,
		.drops = drops,
		.n_drops = 2,
		.folded = "bash;main;read;[k] do_syscall_64 1000\nbash;\"quoted\";\\ 42\n",
	};
	struct proto_reply *reply = NULL;
	char *s = proto_reply_capture(&res, 0);

	CHECK_LINE(s);
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_capture_result *c = &reply->capture;

		CHECK(reply->ok && reply->cmd == PROTO_CMD_CAPTURE);
		CHECK(c->id == 17 && c->duration_ns == 10000000000ull && c->total_ns == 123456789);
		CHECK(c->n_samples == 2);
		CHECK(c->target_exited);
		CHECK(c->folded && !strcmp(c->folded, res.folded));
		CHECK(c->samples == NULL);
		CHECK(c->n_drops == 2);
		if (c->n_drops == 2) {
			CHECK(!strcmp(c->drops[0].name, "agg_full") && c->drops[0].value == 7);
			CHECK(!strcmp(c->drops[1].name, "stack_full") &&
			      c->drops[1].value == 1u << 31);
		}
	}
	proto_reply_free(reply);
	free(s);

	/* Integers are printed exactly, even past 10^15 where a double printed
	 * with 15 digits would round; up to 2^53 they also parse back exactly. */
	res.total_ns = UINT64_C(9007199254740991);
	res.duration_ns = UINT64_MAX;
	s = proto_reply_capture(&res, 0);
	CHECK_MSG(s && strstr(s, "\"total_ns\":9007199254740991,"), "('%s')", STR(s));
	CHECK_MSG(s && strstr(s, "\"duration_ns\":18446744073709551615,"), "('%s')", STR(s));
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK(reply->capture.total_ns == UINT64_C(9007199254740991));
		CHECK(reply->capture.duration_ns == UINT64_MAX);
	}
	proto_reply_free(reply);
	free(s);

	/* No folded text, no drops. */
	res.folded = NULL;
	res.n_drops = 0;
	res.target_exited = false;
	s = proto_reply_capture(&res, 0);
	CHECK_LINE(s);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK(reply->capture.folded == NULL);
		CHECK(reply->capture.n_drops == 0);
		CHECK(!reply->capture.target_exited);
		CHECK(reply->capture.loaded == NULL && reply->capture.load_ms == 0);
	}
	proto_reply_free(reply);
	free(s);

	/* A capture that loaded program groups says which and how long it took. */
	res.loaded = "oncpu,fileio";
	res.load_ms = 1900;
	s = proto_reply_capture(&res, 0);
	CHECK_MSG(s && strstr(s, "\"loaded\":\"oncpu,fileio\",\"load_ms\":1900"), "('%s')", STR(s));
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK(reply->capture.loaded && !strcmp(reply->capture.loaded, "oncpu,fileio") &&
		      reply->capture.load_ms == 1900);
	proto_reply_free(reply);
	free(s);
}

static void test_reply_samples(void)
{
	const char *const u0[] = { "_start", "main", "do_read" };
	const char *const k0[] = { "entry_SYSCALL_64", "ksys_read", "schedule" };
	const char *const k1[] = { "ret_from_fork", "worker_thread\xff" };
	const struct proto_sample samples[] = {
		{ "cat", 100, 101, "S", 5000, 3, u0, 3, k0, 3, NULL, NULL, 0 },
		{ "kworker/0:1", 7, 7, "D", 250, 1, NULL, 0, k1, 2, "runq", NULL, 0 },
	};
	struct proto_capture_result res = {
		.id = 1,
		.duration_ns = 1000,
		.total_ns = 5250,
		.n_samples = 2,
		.samples = samples,
	};
	struct proto_reply *reply = NULL;
	char *s = proto_reply_capture(&res, 2);
	cJSON *root, *arr, *el;

	CHECK_LINE(s);
	if (!s)
		return;
	root = cJSON_Parse(s);
	CHECK_MSG(root != NULL, "('%s')", STR(s));
	arr = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "capture"),
					       "samples");
	CHECK_MSG(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 2, "('%s')", STR(s));
	if (cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 2) {
		el = cJSON_GetArrayItem(arr, 0);
		CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(el, "comm")), "cat"));
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(el, "tgid")) == 100);
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(el, "pid")) == 101);
		CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(el, "state")), "S"));
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(el, "value_ns")) == 5000);
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(el, "count")) == 3);
		/* A row without a kind is an offcpu row; one without a chain has none. */
		CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "kind")), "offcpu");
		CHECK(!cJSON_GetObjectItem(el, "chain"));
		for (int i = 0; i < 3; i++) {
			cJSON *u = cJSON_GetArrayItem(cJSON_GetObjectItem(el, "ustack"), i);
			cJSON *k = cJSON_GetArrayItem(cJSON_GetObjectItem(el, "kstack"), i);

			CHECK_MSG(u && !strcmp(cJSON_GetStringValue(u), u0[i]), "(frame %d)", i);
			CHECK_MSG(k && !strcmp(cJSON_GetStringValue(k), k0[i]), "(frame %d)", i);
		}
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(el, "ustack")) == 3);

		el = cJSON_GetArrayItem(arr, 1);
		CHECK(cJSON_IsArray(cJSON_GetObjectItem(el, "ustack")) &&
		      cJSON_GetArraySize(cJSON_GetObjectItem(el, "ustack")) == 0);
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(el, "kstack")) == 2);
		CHECK(!strcmp(cJSON_GetStringValue(
				      cJSON_GetArrayItem(cJSON_GetObjectItem(el, "kstack"), 1)),
			      "worker_thread\xef\xbf\xbd"));
		CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "kind")), "runq");
	}
	CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "capture"),
					       "folded") == NULL);
	cJSON_Delete(root);

	/* The CLI's parser reads the summary and leaves samples alone. */
	CHECK(proto_reply_parse(s, strlen(s), &reply) == 0);
	if (reply) {
		CHECK(reply->capture.n_samples == 2 && reply->capture.samples == NULL);
		CHECK(reply->capture.folded == NULL);
	}
	proto_reply_free(reply);
	free(s);

	/* An empty sample list is still an array. */
	res.n_samples = 0;
	s = proto_reply_capture(&res, 0);
	CHECK_MSG(s && strstr(s, "\"samples\":[]"), "('%s')", STR(s));
	free(s);
}

static void reply_bad_at(const char *file, int line, const char *s)
{
	struct proto_reply *reply = (struct proto_reply *)&reply; /* sentinel */
	int r = proto_reply_parse(s, strlen(s), &reply);

	CHECK_AT(file, line, r == -EINVAL, "(r=%d for '%s')", r, s);
	CHECK_AT(file, line, reply == (struct proto_reply *)&reply, "(ret written)");
	if (r == 0)
		proto_reply_free(reply);
}

#define REPLY_BAD(s) reply_bad_at(__FILE__, __LINE__, s)

static void test_reply_invalid(void)
{
	const char *st = "{\"version\":\"1\",\"uptime_s\":1,\"pid\":1,\"tracepoint\":\"raw_tp\","
			 "\"programs\":[],\"slots_active\":0,\"slots_max\":1,"
			 "\"captures_running\":0,\"switches_per_s\":0,\"recorded_per_s\":0,"
			 "\"counters\":{}";
	char buf[1024];
	struct proto_reply *reply = NULL;

	/* The reference status reply parses; variations of it do not. */
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":%s}}", st);
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	proto_reply_free(reply);
	snprintf(buf, sizeof(buf), "{\"v\":2,\"ok\":true,\"cmd\":\"status\",\"status\":%s}}", st);
	REPLY_BAD(buf);
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":1,\"cmd\":\"status\",\"status\":%s}}", st);
	REPLY_BAD(buf);
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"bogus\",\"status\":%s}}", st);
	REPLY_BAD(buf);
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":%s,\"x\":1}}", st);
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "(unknown fields are ignored)");
	proto_reply_free(reply);
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":%s,\"pid\":-1}}", st);
	/* Duplicate keys: the first wins, so this one still parses. */
	reply = NULL;
	CHECK(proto_reply_parse(buf, strlen(buf), &reply) == 0);
	proto_reply_free(reply);

	REPLY_BAD("");
	REPLY_BAD("not json");
	REPLY_BAD("[]");
	REPLY_BAD("{}");
	REPLY_BAD("{\"v\":1}");
	REPLY_BAD("{\"v\":1,\"ok\":false}");
	REPLY_BAD("{\"v\":1,\"ok\":false,\"error\":{\"code\":\"x\"}}");
	REPLY_BAD("{\"v\":1,\"ok\":false,\"error\":{\"code\":1,\"message\":\"m\"}}");
	REPLY_BAD("{\"v\":1,\"ok\":false,\"error\":\"x\"}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"status\"}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{\"version\":\"1\","
		  "\"uptime_s\":1,\"pid\":4294967296,\"tracepoint\":\"raw_tp\",\"programs\":[],"
		  "\"slots_active\":0,\"slots_max\":1,\"captures_running\":0,"
		  "\"switches_per_s\":0,\"recorded_per_s\":0,\"counters\":{}}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{\"version\":\"1\","
		  "\"uptime_s\":1,\"pid\":1,\"tracepoint\":\"raw_tp\",\"programs\":[{\"name\":1}],"
		  "\"slots_active\":0,\"slots_max\":1,\"captures_running\":0,"
		  "\"switches_per_s\":0,\"recorded_per_s\":0,\"counters\":{}}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{\"version\":\"1\","
		  "\"uptime_s\":1,\"pid\":1,\"tracepoint\":\"raw_tp\",\"programs\":[],"
		  "\"slots_active\":0,\"slots_max\":1,\"captures_running\":0,"
		  "\"switches_per_s\":0,\"recorded_per_s\":0,\"counters\":{\"a\":-1}}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"capture\",\"capture\":{\"id\":1,"
		  "\"duration_ns\":1,\"total_ns\":1,\"samples_count\":0,\"target_exited\":false,"
		  "\"drops\":{},\"folded\":5}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"capture\",\"capture\":{\"id\":1.5,"
		  "\"duration_ns\":1,\"total_ns\":1,\"samples_count\":0,\"target_exited\":false,"
		  "\"drops\":{}}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"capture\",\"capture\":{\"id\":1,"
		  "\"duration_ns\":1,\"total_ns\":1,\"samples_count\":0,\"target_exited\":false}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"capture\",\"capture\":{\"id\":1,"
		  "\"duration_ns\":1,\"total_ns\":1,\"samples_count\":0,\"target_exited\":false,"
		  "\"drops\":{}}} trailing");

	proto_reply_free(NULL);
}

static void test_reply_windows(void)
{
	const struct proto_window_info w[] = {
		{ 41, INT64_C(1795309200000), INT64_C(1795309210000), 0, 12, 40, 12595 },
		{ 42, INT64_C(1795309203117), INT64_C(1795309205118), 7, 2, 2, 930 },
		/* Extremes: a clock before 1970, counters past 2^53. */
		{ UINT64_MAX, INT64_C(-1000), INT64_C(9007199254740991), UINT64_C(9007199254740993),
		  0, 0, UINT64_MAX },
	};
	struct proto_reply *reply = NULL;
	char *s = proto_reply_windows(w, 3);

	CHECK_LINE(s);
	CHECK_MSG(starts_with(s, "{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[{\"id\":41,"
				 "\"start_ms\":1795309200000,\"end_ms\":1795309210000,"
				 "\"capture_id\":0,\"stacks\":12,\"samples\":40,\"bytes\":12595},"),
		  "('%s')", STR(s));
	CHECK_MSG(s && strstr(s, "\"start_ms\":-1000,\"end_ms\":9007199254740991,"), "('%s')",
		  STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK(reply->ok && reply->cmd == PROTO_CMD_WINDOWS);
		CHECK(reply->n_windows == 3);
		for (size_t i = 0; i < 2 && reply->n_windows == 3; i++) {
			const struct proto_window_info *a = &w[i], *b = &reply->windows[i];

			CHECK_MSG(a->id == b->id && a->start_ms == b->start_ms &&
					  a->end_ms == b->end_ms &&
					  a->capture_id == b->capture_id &&
					  a->stacks == b->stacks && a->samples == b->samples &&
					  a->bytes == b->bytes,
				  "(window %zu)", i);
		}
		if (reply->n_windows == 3) {
			/* Past 2^53 doubles are approximate; 2^64 saturates. */
			CHECK(reply->windows[2].id == UINT64_MAX);
			CHECK(reply->windows[2].bytes == UINT64_MAX);
			CHECK(reply->windows[2].start_ms == -1000);
			CHECK(reply->windows[2].end_ms == INT64_C(9007199254740991));
		}
	}
	proto_reply_free(reply);
	free(s);

	/* None: still an array. */
	s = proto_reply_windows(NULL, 0);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[]}\n"),
		  "('%s')", STR(s));
	reply = NULL;
	CHECK(s && proto_reply_parse(s, strlen(s), &reply) == 0);
	if (reply)
		CHECK(reply->cmd == PROTO_CMD_WINDOWS && reply->n_windows == 0);
	proto_reply_free(reply);
	free(s);
}

static void test_reply_export(void)
{
	const char *const u0[] = { "_start", "main", "poll" };
	const char *const k0[] = { "entry_SYSCALL_64", "do_sys_poll", "schedule" };
	const struct proto_sample samples[] = {
		{ "app\xff", 4321, 4322, "S", 1900000000, 19, u0, 3, k0, 3, "offcpu", NULL, 0 },
	};
	struct proto_export_result res = {
		.from_ms = INT64_C(1795305600000),
		.to_ms = INT64_C(1795309200001),
		.capture_id = 0,
		.windows = 360,
		.total_ns = UINT64_C(9007199254740991),
		.n_samples = 2,
		.folded = "app;main;poll;-;schedule 3000000\napp;\"q\\\";-; 2\n",
	};
	struct proto_reply *reply = NULL;
	cJSON *root, *arr;
	char *s = proto_reply_export(&res, 0);

	CHECK_LINE(s);
	CHECK_MSG(starts_with(s, "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{"
				 "\"from_ms\":1795305600000,\"to_ms\":1795309200001,"
				 "\"capture_id\":0,\"windows\":360,\"total_ns\":9007199254740991,"
				 "\"samples_count\":2,\"differential\":false,"
				 "\"diff_windows\":0,\"folded\":"),
		  "('%s')", STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_export_result *e = &reply->export;

		CHECK(reply->ok && reply->cmd == PROTO_CMD_EXPORT);
		CHECK(e->from_ms == res.from_ms && e->to_ms == res.to_ms);
		CHECK(e->capture_id == 0 && e->windows == 360);
		CHECK(e->total_ns == res.total_ns && e->n_samples == 2);
		CHECK_STR(e->folded, res.folded);
		CHECK(e->samples == NULL);
	}
	proto_reply_free(reply);
	free(s);

	/* A capture's window as JSON rows, the same rows as a capture's. */
	res.from_ms = 0;
	res.capture_id = 7;
	res.windows = 1;
	res.total_ns = 1900000000;
	res.n_samples = 1;
	res.folded = NULL;
	res.samples = samples;
	s = proto_reply_export(&res, 1);
	CHECK_LINE(s);
	root = s ? cJSON_Parse(s) : NULL;
	arr = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "export"),
					       "samples");
	CHECK_MSG(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 1, "('%s')", STR(s));
	{
		struct proto_capture_result cap = { .samples = samples };
		char *c = proto_reply_capture(&cap, 1);
		cJSON *croot = c ? cJSON_Parse(c) : NULL;
		cJSON *carr = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(croot, "capture"), "samples");

		CHECK_MSG(carr && arr && cJSON_Compare(carr, arr, true), "('%s' vs '%s')", STR(s),
			  STR(c));
		cJSON_Delete(croot);
		free(c);
	}
	CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "export"),
					       "folded") == NULL);
	cJSON_Delete(root);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK(reply->export.capture_id == 7 && reply->export.from_ms == 0);
		CHECK(reply->export.n_samples == 1 && reply->export.windows == 1);
		CHECK(reply->export.folded == NULL && reply->export.samples == NULL);
	}
	proto_reply_free(reply);
	free(s);

	/* Nothing matched. */
	res.windows = 0;
	res.n_samples = 0;
	res.total_ns = 0;
	s = proto_reply_export(&res, 0);
	CHECK_MSG(s && strstr(s, "\"windows\":0,\"total_ns\":0,\"samples_count\":0,"
				 "\"differential\":false,\"diff_windows\":0,\"samples\":[]}"),
		  "('%s')", STR(s));
	free(s);
	res.samples = NULL;
	res.folded = "";
	s = proto_reply_export(&res, 0);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK_STR(reply->export.folded, "");
	proto_reply_free(reply);
	free(s);

	/* The store's error code goes through like any other. */
	s = proto_reply_error(PROTO_ERR_STORE, "database or disk is full");
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK(!reply->ok && !strcmp(reply->error_code, "store_error"));
	proto_reply_free(reply);
	free(s);
}

static void test_reply_invalid_new(void)
{
	static const char w_ok[] = "{\"id\":1,\"start_ms\":1,\"end_ms\":2,\"capture_id\":0,"
				   "\"stacks\":0,\"samples\":0,\"bytes\":0}";
	static const char e_ok[] = "\"from_ms\":1,\"to_ms\":2,\"capture_id\":0,\"windows\":0,"
				   "\"total_ns\":0,\"samples_count\":0";
	char buf[1024];
	struct proto_reply *reply = NULL;

	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[%s]}",
		 w_ok);
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	proto_reply_free(reply);
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{%s}}",
		 e_ok);
	reply = NULL;
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	proto_reply_free(reply);
	/* Unknown fields are ignored in both. */
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{%s,\"new\":[1]},\"x\":1}",
		 e_ok);
	reply = NULL;
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	proto_reply_free(reply);

	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\"}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":{}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[1]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[{}]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[{\"id\":1,"
		  "\"start_ms\":1.5,\"end_ms\":2,\"capture_id\":0,\"stacks\":0,\"samples\":0,"
		  "\"bytes\":0}]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[{\"id\":1,"
		  "\"start_ms\":1e19,\"end_ms\":2,\"capture_id\":0,\"stacks\":0,\"samples\":0,"
		  "\"bytes\":0}]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[{\"id\":1,"
		  "\"start_ms\":1,\"end_ms\":\"2\",\"capture_id\":0,\"stacks\":0,\"samples\":0,"
		  "\"bytes\":0}]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[{\"id\":1,"
		  "\"start_ms\":1,\"end_ms\":2,\"capture_id\":-1,\"stacks\":0,\"samples\":0,"
		  "\"bytes\":0}]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[{\"id\":1,"
		  "\"start_ms\":1,\"end_ms\":2,\"capture_id\":0,\"stacks\":0,\"samples\":0}]}");
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"windows\":[%s,7]}",
		 w_ok);
	REPLY_BAD(buf);

	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"export\"}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":[]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{}}");
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{%s,"
		 "\"folded\":1}}",
		 e_ok);
	REPLY_BAD(buf);
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"from_ms\":1,"
		  "\"to_ms\":2,\"capture_id\":0,\"windows\":-1,\"total_ns\":0,"
		  "\"samples_count\":0}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"from_ms\":1,"
		  "\"to_ms\":null,\"capture_id\":0,\"windows\":0,\"total_ns\":0,"
		  "\"samples_count\":0}}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{\"from_ms\":1,"
		  "\"to_ms\":2,\"capture_id\":0,\"windows\":0,\"total_ns\":0}}");
	/* The cmd decides which body is read. */
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"windows\",\"export\":{%s}}",
		 e_ok);
	REPLY_BAD(buf);
}

static void test_reply_output(void)
{
	const char *svg = "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg width=\"1200\">"
			  "<text>a;b \\ \xc3\xa9</text></svg>\n";
	struct proto_capture_result cap = {
		.id = 9,
		.duration_ns = 5000000000ull,
		.total_ns = 4100000000ull,
		.n_samples = 1,
		.output = svg,
	};
	struct proto_export_result ex = {
		.from_ms = INT64_C(1795309200000),
		.to_ms = INT64_C(1795309500000),
		.windows = 30,
		.total_ns = 410000000,
		.n_samples = 2,
		.differential = true,
		.diff_windows = 360,
		.folded = "app;main;poll 266667 400000\napp;main;read 0 10000\n",
	};
	struct proto_reply *reply = NULL;
	cJSON *root;
	char *s, *big;

	/* A capture's rendered output, without folded text or samples. */
	s = proto_reply_capture(&cap, 0);
	CHECK_LINE(s);
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK(reply->cmd == PROTO_CMD_CAPTURE && reply->capture.id == 9);
		CHECK_STR(reply->capture.output, svg);
		CHECK(reply->capture.folded == NULL && reply->capture.samples == NULL);
	}
	proto_reply_free(reply);
	root = s ? cJSON_Parse(s) : NULL;
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
			  cJSON_GetObjectItemCaseSensitive(root, "capture"), "output")),
		  svg);
	CHECK(!cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "capture"),
						"folded"));
	cJSON_Delete(root);
	free(s);

	/* Bytes that are not UTF-8 are replaced, as in any string. */
	cap.output = "<svg>\xff</svg>";
	s = proto_reply_capture(&cap, 0);
	CHECK_LINE(s);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK_STR(reply->capture.output, "<svg>\xef\xbf\xbd</svg>");
	proto_reply_free(reply);
	free(s);

	/* Without output, no "output" member; an empty one is still sent. */
	cap.output = NULL;
	s = proto_reply_capture(&cap, 0);
	CHECK_MSG(s && !strstr(s, "\"output\""), "('%s')", STR(s));
	free(s);
	cap.output = "";
	s = proto_reply_capture(&cap, 0);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK_STR(reply->capture.output, "");
	proto_reply_free(reply);
	free(s);

	/* A differential export's three columns. */
	s = proto_reply_export(&ex, 0);
	CHECK_LINE(s);
	CHECK_MSG(s && strstr(s, "\"samples_count\":2,\"differential\":true,\"diff_windows\":360,"
				 "\"folded\":\"app;main;poll 266667 400000\\napp;main;read 0 "
				 "10000\\n\"}}\n"),
		  "('%s')", STR(s));
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_export_result *e = &reply->export;

		CHECK(e->differential && e->diff_windows == 360 && e->windows == 30);
		CHECK_STR(e->folded, ex.folded);
		CHECK(e->output == NULL);
	}
	proto_reply_free(reply);
	free(s);

	/* Its svg, large: the output is one JSON string however long. */
	big = malloc(1 << 20);
	if (big) {
		memset(big, 'x', (1 << 20) - 1);
		memcpy(big, "<svg>\"", 6);
		big[(1 << 20) - 1] = '\0';
		ex.folded = NULL;
		ex.output = big;
		ex.diff_windows = UINT64_C(9007199254740991);
		s = proto_reply_export(&ex, 0);
		CHECK_LINE(s);
		reply = NULL;
		CHECK(s && proto_reply_parse(s, strlen(s), &reply) == 0);
		if (reply) {
			CHECK(reply->export.output && !strcmp(reply->export.output, big));
			CHECK(reply->export.folded == NULL);
			CHECK(reply->export.diff_windows == UINT64_C(9007199254740991));
		}
		proto_reply_free(reply);
		free(s);
		free(big);
	}

	/* Not differential: sent as false and 0. */
	ex.differential = false;
	ex.diff_windows = 0;
	ex.output = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"}\n";
	s = proto_reply_export(&ex, 0);
	CHECK_MSG(s && strstr(s, "\"differential\":false,\"diff_windows\":0,\"output\":"), "('%s')",
		  STR(s));
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK(!reply->export.differential && reply->export.diff_windows == 0);
		CHECK_STR(reply->export.output, ex.output);
	}
	proto_reply_free(reply);
	free(s);
}

static void test_reply_output_invalid(void)
{
	static const char c_ok[] = "\"id\":1,\"duration_ns\":1,\"total_ns\":1,\"samples_count\":0,"
				   "\"target_exited\":false,\"drops\":{}";
	static const char e_ok[] = "\"from_ms\":1,\"to_ms\":2,\"capture_id\":0,\"windows\":0,"
				   "\"total_ns\":0,\"samples_count\":0";
	static const char *const bad_c[] = { "\"output\":1", "\"output\":null", "\"output\":[]" };
	static const char *const bad_e[] = {
		"\"output\":1",		  "\"output\":{}",
		"\"differential\":1",	  "\"differential\":\"true\"",
		"\"differential\":null",  "\"diff_windows\":-1",
		"\"diff_windows\":1.5",	  "\"diff_windows\":true",
		"\"diff_windows\":\"3\"",
	};
	char buf[1024];
	struct proto_reply *reply = NULL;

	/* An export reply of an older daemon, without the differential members. */
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{%s}}",
		 e_ok);
	memset(&reply, 0, sizeof(reply));
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	if (reply) {
		CHECK(!reply->export.differential && reply->export.diff_windows == 0);
		CHECK(reply->export.output == NULL && reply->export.folded == NULL);
	}
	proto_reply_free(reply);

	for (size_t i = 0; i < sizeof(bad_c) / sizeof(bad_c[0]); i++) {
		snprintf(buf, sizeof(buf),
			 "{\"v\":1,\"ok\":true,\"cmd\":\"capture\",\"capture\":{%s,%s}}", c_ok,
			 bad_c[i]);
		REPLY_BAD(buf);
	}
	for (size_t i = 0; i < sizeof(bad_e) / sizeof(bad_e[0]); i++) {
		snprintf(buf, sizeof(buf),
			 "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"export\":{%s,%s}}", e_ok,
			 bad_e[i]);
		REPLY_BAD(buf);
	}
}

/* ---- kinds and histograms: replies ------------------------------------- */

/* The i-th element of the "samples" of a capture reply's tree. */
static cJSON *reply_sample(cJSON *root, int i)
{
	return cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "capture"),
						 "samples"),
		i);
}

static void test_reply_sample_kinds(void)
{
	const char *const k0[] = { "entry_SYSCALL_64", "futex_wait", "schedule" };
	/* The waker part after "--": kernel leaf to root, "-", user, comm. */
	const char *const w0[] = {
		"try_to_wake_up", "futex_wake", "-", "unlock", "main", "producer"
	};
	const char *const c0[] = { "try_to_wake_up", "-",  "unlock",
				   "producer",	     "--", "try_to_wake_up",
				   "[softirq]\xff" };
	const char *const irq[] = { "[hardirq]" };
	const struct proto_sample samples[] = {
		{ .comm = "consumer",
		  .tgid = 10,
		  .pid = 11,
		  .state = "S",
		  .value_ns = 7000,
		  .count = 2,
		  .kstack = k0,
		  .n_kstack = 3,
		  .kind = "offwake",
		  .chain = w0,
		  .n_chain = 6 },
		{ .comm = "consumer",
		  .tgid = 10,
		  .pid = 11,
		  .state = "S",
		  .value_ns = 5000,
		  .count = 1,
		  .kind = "wakeup",
		  .chain = w0,
		  .n_chain = 6 },
		{ .comm = "consumer",
		  .tgid = 10,
		  .pid = 12,
		  .state = "D",
		  .value_ns = 3000,
		  .count = 1,
		  .kstack = k0,
		  .n_kstack = 3,
		  .kind = "chain",
		  .chain = c0,
		  .n_chain = 7 },
		{ .comm = "nic",
		  .tgid = 20,
		  .pid = 20,
		  .state = "S",
		  .value_ns = 1000,
		  .count = 1,
		  .kind = "offwake",
		  .chain = irq,
		  .n_chain = 1 },
		/* A chain pointer without a length is no chain. */
		{ .comm = "app",
		  .tgid = 30,
		  .pid = 30,
		  .state = "R",
		  .value_ns = 10,
		  .count = 1,
		  .kind = "runq",
		  .chain = irq,
		  .n_chain = 0 },
	};
	struct proto_capture_result res = { .id = 3, .n_samples = 5, .samples = samples };
	char *s = proto_reply_capture(&res, 5);
	cJSON *root, *el, *chain;

	CHECK_LINE(s);
	root = s ? cJSON_Parse(s) : NULL;
	CHECK_MSG(root != NULL, "('%s')", STR(s));

	el = reply_sample(root, 0);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "kind")), "offwake");
	chain = cJSON_GetObjectItem(el, "chain");
	CHECK(cJSON_IsArray(chain) && cJSON_GetArraySize(chain) == 6);
	for (int i = 0; i < 6 && cJSON_GetArraySize(chain) == 6; i++)
		CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(chain, i)), w0[i]);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(el, "kstack")) == 3);

	el = reply_sample(root, 1);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "kind")), "wakeup");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(el, "chain")) == 6);
	CHECK(cJSON_IsArray(cJSON_GetObjectItem(el, "ustack")) &&
	      cJSON_GetArraySize(cJSON_GetObjectItem(el, "ustack")) == 0);

	el = reply_sample(root, 2);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "kind")), "chain");
	chain = cJSON_GetObjectItem(el, "chain");
	CHECK(cJSON_GetArraySize(chain) == 7);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(chain, 4)), "--");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(chain, 6)), "[softirq]\xef\xbf\xbd");

	el = reply_sample(root, 3);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(el, "chain"), 0)),
		  "[hardirq]");

	el = reply_sample(root, 4);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "kind")), "runq");
	CHECK(el && !cJSON_GetObjectItem(el, "chain"));
	cJSON_Delete(root);
	free(s);
}

static void test_reply_hist(void)
{
	struct proto_hist_process procs[3] = {
		{ .tgid = 1234, .comm = "mysqld" },
		{ .tgid = 4194304, .comm = "bad \xff comm" },
		{ .tgid = 7, .comm = NULL },
	};
	struct proto_hist_result res = {
		.kind = "offcpu",
		.from_ms = INT64_C(1795305600000),
		.to_ms = INT64_C(1795309200000),
		.capture_id = 0,
		.windows = 360,
		.processes = procs,
		.n_processes = 3,
	};
	struct proto_reply *reply = NULL;
	char *s;

	procs[0].counts[0] = 3;
	procs[0].counts[1] = 0;
	procs[0].counts[4] = 60;
	procs[0].counts[PROTO_HIST_BUCKETS - 1] = UINT64_C(9007199254740991);
	for (size_t b = 0; b < PROTO_HIST_BUCKETS; b++)
		procs[1].counts[b] = b * 1000;
	procs[2].counts[PROTO_HIST_BUCKETS - 1] = UINT64_MAX;

	s = proto_reply_hist(&res);
	CHECK_LINE(s);
	CHECK_MSG(starts_with(s, "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{\"kind\":"
				 "\"offcpu\",\"from_ms\":1795305600000,\"to_ms\":1795309200000,"
				 "\"capture_id\":0,\"windows\":360,\"processes\":[{\"tgid\":1234,"
				 "\"comm\":\"mysqld\",\"counts\":[3,0,0,0,60,0,"),
		  "('%s')", STR(s));
	CHECK_MSG(s && strstr(s, ",0,9007199254740991]}"), "('%s')", STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_hist_result *h = &reply->hist;

		CHECK(reply->ok && reply->cmd == PROTO_CMD_HIST);
		CHECK_STR(h->kind, "offcpu");
		CHECK(h->from_ms == res.from_ms && h->to_ms == res.to_ms);
		CHECK(h->capture_id == 0 && h->windows == 360);
		CHECK(h->n_processes == 3);
		if (h->n_processes == 3) {
			CHECK(h->processes[0].tgid == 1234);
			CHECK_STR(h->processes[0].comm, "mysqld");
			CHECK(!memcmp(h->processes[0].counts, procs[0].counts,
				      sizeof(procs[0].counts)));
			CHECK(h->processes[1].tgid == 4194304);
			CHECK_STR(h->processes[1].comm, "bad \xef\xbf\xbd comm");
			CHECK(!memcmp(h->processes[1].counts, procs[1].counts,
				      sizeof(procs[1].counts)));
			CHECK_STR(h->processes[2].comm, "");
			/* Past 2^53 counts are approximate; 2^64 saturates. */
			CHECK(h->processes[2].counts[PROTO_HIST_BUCKETS - 1] == UINT64_MAX);
			CHECK(h->processes[2].counts[0] == 0);
		}
	}
	proto_reply_free(reply);
	free(s);

	/* A capture's window, run-queue latency, nothing recorded. */
	res.kind = "runq";
	res.from_ms = 0;
	res.capture_id = 7;
	res.windows = 1;
	res.processes = NULL;
	res.n_processes = 0;
	s = proto_reply_hist(&res);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{\"kind\":"
				  "\"runq\",\"from_ms\":0,\"to_ms\":1795309200000,\"capture_id\":7,"
				  "\"windows\":1,\"processes\":[]}}\n"),
		  "('%s')", STR(s));
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		CHECK_STR(reply->hist.kind, "runq");
		CHECK(reply->hist.capture_id == 7 && reply->hist.n_processes == 0);
		CHECK(reply->hist.processes != NULL);
	}
	proto_reply_free(reply);
	free(s);

	/* No kind: offcpu. */
	res.kind = NULL;
	s = proto_reply_hist(&res);
	CHECK_MSG(s && strstr(s, "\"hist\":{\"kind\":\"offcpu\","), "('%s')", STR(s));
	free(s);
}

static void test_reply_hist_invalid(void)
{
	static const char h_ok[] = "\"kind\":\"runq\",\"from_ms\":1,\"to_ms\":2,\"capture_id\":0,"
				   "\"windows\":1";
	static const char *const bad_body[] = {
		"\"kind\":\"runq\",\"from_ms\":1,\"to_ms\":2,\"capture_id\":0,\"processes\":[]",
		"\"kind\":5,\"from_ms\":1,\"to_ms\":2,\"capture_id\":0,\"windows\":1,"
		"\"processes\":[]",
		"\"from_ms\":1,\"to_ms\":2,\"capture_id\":0,\"windows\":1,\"processes\":[]",
		"\"kind\":\"runq\",\"from_ms\":1.5,\"to_ms\":2,\"capture_id\":0,\"windows\":1,"
		"\"processes\":[]",
		"\"kind\":\"runq\",\"from_ms\":1,\"to_ms\":2,\"capture_id\":-1,\"windows\":1,"
		"\"processes\":[]",
	};
	static const char *const bad_procs[] = {
		"{}",
		"7",
		"{\"tgid\":1,\"comm\":\"x\"}",
		"{\"tgid\":1,\"comm\":\"x\",\"counts\":{}}",
		"{\"tgid\":1,\"comm\":\"x\",\"counts\":[]}",
		"{\"tgid\":-1,\"comm\":\"x\",\"counts\":[%s]}",
		"{\"tgid\":4294967296,\"comm\":\"x\",\"counts\":[%s]}",
		"{\"tgid\":1,\"comm\":1,\"counts\":[%s]}",
		"{\"comm\":\"x\",\"counts\":[%s]}",
		"{\"tgid\":1,\"comm\":\"x\",\"counts\":[%s,0]}",
		"{\"tgid\":1,\"comm\":\"x\",\"counts\":[-1,%s]}",
		"{\"tgid\":1,\"comm\":\"x\",\"counts\":[1.5,%s]}",
		"{\"tgid\":1,\"comm\":\"x\",\"counts\":[null,%s]}",
	};
	char zeros[128], short_zeros[128], proc[512], buf[2048];
	struct proto_reply *reply = NULL;
	char *p;

	p = zeros;
	for (int b = 0; b < PROTO_HIST_BUCKETS; b++)
		p += sprintf(p, "%s0", b ? "," : "");
	memcpy(short_zeros, zeros, sizeof(zeros));
	short_zeros[strlen(short_zeros) - 2] = '\0'; /* one bucket fewer */

	/* The reference parses, unknown fields and all. */
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{%s,\"processes\":[{\"tgid\":1,"
		 "\"comm\":\"x\",\"counts\":[%s],\"new\":1}],\"new\":[]}}",
		 h_ok, zeros);
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	if (reply)
		CHECK(reply->hist.n_processes == 1 && reply->hist.processes[0].tgid == 1);
	proto_reply_free(reply);

	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"hist\"}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":[]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{}}");
	for (size_t i = 0; i < sizeof(bad_body) / sizeof(bad_body[0]); i++) {
		snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{%s}}",
			 bad_body[i]);
		REPLY_BAD(buf);
	}
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{%s}}", h_ok);
	REPLY_BAD(buf);
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{%s,\"processes\":{}}}", h_ok);
	REPLY_BAD(buf);
	for (size_t i = 0; i < sizeof(bad_procs) / sizeof(bad_procs[0]); i++) {
		/* Those with a bad bucket before the list keep 32 in all. */
		bool shorter = strstr(bad_procs[i], "[-1,") || strstr(bad_procs[i], "[1.5,") ||
			       strstr(bad_procs[i], "[null,");

		snprintf(proc, sizeof(proc), bad_procs[i], shorter ? short_zeros : zeros);
		snprintf(buf, sizeof(buf),
			 "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{%s,\"processes\":[%s]}}",
			 h_ok, proc);
		REPLY_BAD(buf);
	}
	/* One bad process among good ones. */
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"hist\":{%s,\"processes\":[{\"tgid\":1,"
		 "\"comm\":\"x\",\"counts\":[%s]},{\"tgid\":2,\"comm\":\"y\",\"counts\":[%s]}]}}",
		 h_ok, zeros, short_zeros);
	REPLY_BAD(buf);
	/* The cmd decides which body is read. */
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"hist\":{%s,\"processes\":[]}}", h_ok);
	REPLY_BAD(buf);
}

/* ---- blocked ----------------------------------------------------------- */

#define BLOCKED_OK(extra, req)	 PARSE_OK(cmd_line("blocked", extra), req)
#define BLOCKED_BAD(extra, want) BAD(cmd_line("blocked", extra), want)

static void test_blocked_request(void)
{
	struct proto_request req, *back;
	char extra[4096], *p, *line;

	memset(&req, 0xa5, sizeof(req));
	if (BLOCKED_OK("", &req) == 0) {
		CHECK(req.cmd == PROTO_CMD_BLOCKED);
		CHECK(req.blocked.n_pids == 0 && req.blocked.n_tids == 0);
		CHECK(req.blocked.state_mask == ((1u << 1) | (1u << 2))); /* S and D */
		CHECK(req.blocked.state_mask == PROTO_BLOCKED_STATES_DEFAULT);
		CHECK(req.blocked.min_ns == 0);
		CHECK(req.blocked.limit == PROTO_BLOCKED_LIMIT_DEFAULT && req.blocked.limit == 50);
	}
	memset(&req, 0xa5, sizeof(req));
	if (BLOCKED_OK("\"pids\":[1,4194304],\"tids\":[7],\"states\":[\"R\",\"disk\"],"
		       "\"min_ms\":1500,\"limit\":0",
		       &req) == 0) {
		CHECK(req.blocked.n_pids == 2 && req.blocked.pids[0] == 1 &&
		      req.blocked.pids[1] == 4194304);
		CHECK(req.blocked.n_tids == 1 && req.blocked.tids[0] == 7);
		CHECK(req.blocked.state_mask == ((1u << 0) | (1u << 2)));
		CHECK(req.blocked.min_ns == UINT64_C(1500000000));
		CHECK(req.blocked.limit == 0); /* all */
	}
	/* The limits: milliseconds whose nanoseconds fit, a bounded list. */
	if (BLOCKED_OK("\"min_ms\":18446744073709,\"limit\":100000", &req) == 0) {
		CHECK(req.blocked.min_ns == UINT64_C(18446744073709000000));
		CHECK(req.blocked.limit == PROTO_BLOCKED_LIMIT_MAX);
	}
	if (BLOCKED_OK("\"min_ms\":0,\"limit\":1,\"pids\":[],\"states\":[\"O\"]", &req) == 0) {
		CHECK(req.blocked.min_ns == 0 && req.blocked.limit == 1 && req.blocked.n_pids == 0);
		CHECK(req.blocked.state_mask == 1u << 3);
	}
	p = extra + sprintf(extra, "\"tids\":[");
	for (int i = 0; i < PROTO_MAX_IDS; i++)
		p += sprintf(p, "%s%d", i ? "," : "", i + 1);
	strcpy(p, "]");
	if (BLOCKED_OK(extra, &req) == 0)
		CHECK(req.blocked.n_tids == PROTO_MAX_IDS);
	sprintf(p, ",%d]", PROTO_MAX_IDS + 1);
	BLOCKED_BAD(extra, "field 'tids' has 257 entries; at most 256 allowed");

	BLOCKED_BAD("\"limit\":100001", "field 'limit' must be between 0 and 100000");
	BLOCKED_BAD("\"limit\":-1", "field 'limit' must be between 0 and 100000");
	BLOCKED_BAD("\"limit\":\"all\"", "field 'limit' must be an integer");
	BLOCKED_BAD("\"min_ms\":18446744073710",
		    "field 'min_ms' must be between 0 and 18446744073709");
	BLOCKED_BAD("\"min_ms\":-5", "field 'min_ms' must be between 0 and 18446744073709");
	BLOCKED_BAD("\"min_ms\":1.5", "field 'min_ms' must be an integer");
	BLOCKED_BAD("\"min_ms\":true", "field 'min_ms' must be an integer");
	BLOCKED_BAD("\"states\":[]", "field 'states' must not be empty");
	BLOCKED_BAD("\"states\":[\"Z\"]", "field 'states': unknown thread state 'Z'");
	BLOCKED_BAD("\"states\":\"S\"", "field 'states' must be an array of strings");
	BLOCKED_BAD("\"pids\":[0]", "field 'pids'[0] must be between 1 and 4194304");
	BLOCKED_BAD("\"pids\":[4194305]", "field 'pids'[0] must be between 1 and 4194304");
	BLOCKED_BAD("\"tids\":[\"7\"]", "field 'tids'[0] must be an integer");
	BLOCKED_BAD("\"pids\":7", "field 'pids' must be an array of integers");

	/* Only its own fields: none of capture's that it does not take. */
	BLOCKED_BAD("\"min_ns\":1", "unknown field 'min_ns' for command 'blocked'");
	BLOCKED_BAD("\"min_block_us\":1", "unknown field 'min_block_us' for command 'blocked'");
	BLOCKED_BAD("\"seconds\":1", "unknown field 'seconds' for command 'blocked'");
	BLOCKED_BAD("\"comm\":\"x\"", "unknown field 'comm' for command 'blocked'");
	BLOCKED_BAD("\"format\":\"json\"", "unknown field 'format' for command 'blocked'");
	BLOCKED_BAD("\"limit\":1,\"limit\":2", "duplicate field 'limit'");
	BAD("{\"v\":1,\"cmd\":\"Blocked\"}", "unknown command 'Blocked'");

	/* Formatted: the defaults left out, then parsed back the same. */
	memset(&req, 0, sizeof(req));
	req.cmd = PROTO_CMD_BLOCKED;
	req.blocked.state_mask = PROTO_BLOCKED_STATES_DEFAULT;
	req.blocked.limit = PROTO_BLOCKED_LIMIT_DEFAULT;
	line = proto_request_format(&req);
	CHECK_MSG(line && !strcmp(line, "{\"v\":1,\"cmd\":\"blocked\"}\n"), "('%s')", STR(line));
	free(line);
	req.blocked.pids[0] = 42;
	req.blocked.n_pids = 1;
	req.blocked.tids[0] = 43;
	req.blocked.tids[1] = 44;
	req.blocked.n_tids = 2;
	req.blocked.state_mask = 1u << 2;
	req.blocked.min_ns = UINT64_C(2500000000);
	req.blocked.limit = 0;
	line = proto_request_format(&req);
	CHECK_MSG(line && !strcmp(line, "{\"v\":1,\"cmd\":\"blocked\",\"pids\":[42],\"tids\":[43,"
					"44],\"states\":[\"D\"],\"min_ms\":2500,\"limit\":0}\n"),
		  "('%s')", STR(line));
	back = calloc(1, sizeof(*back));
	CHECK(line && back);
	if (line && back && PARSE_OK(line, back) == 0) {
		const struct proto_blocked_request *a = &req.blocked, *b = &back->blocked;

		CHECK(back->cmd == PROTO_CMD_BLOCKED);
		CHECK(b->n_pids == 1 && b->pids[0] == 42);
		CHECK(b->n_tids == 2 && b->tids[0] == 43 && b->tids[1] == 44);
		CHECK(a->state_mask == b->state_mask && a->min_ns == b->min_ns);
		CHECK(b->limit == 0);
	}
	free(line);
	/* The wire has milliseconds: a part of one is left out, not rounded up. */
	req.blocked.min_ns = UINT64_C(1999999);
	line = proto_request_format(&req);
	CHECK_MSG(line && strstr(line, "\"min_ms\":1,"), "('%s')", STR(line));
	free(line);
	free(back);
}

static void test_reply_blocked(void)
{
	const char *const ustack[] = { "_start", "main", "clock_nanosleep" };
	const char *const kstack[] = { "entry_SYSCALL_64", "do_nanosleep", "schedule",
				       "__schedule" };
	const char *const bad_kstack[] = { "pipe_\xff" };
	struct proto_blocked_thread threads[3] = {
		{ .comm = "python3",
		  .tgid = 4321,
		  .pid = 4322,
		  .state = "S",
		  .blocked_ns = UINT64_C(30000000000),
		  .since_ms = 0, /* before offcpud started */
		  .ustack = ustack,
		  .n_ustack = 3,
		  .kstack = kstack,
		  .n_kstack = 4 },
		{ .comm = "bad \xff comm",
		  .tgid = 4194304,
		  .pid = 4194304,
		  .state = "D",
		  .blocked_ns = 1500,
		  .since_ms = INT64_C(1795309200000),
		  .runq_ns = 700,
		  .waker_comm = "[softirq]",
		  .kstack = bad_kstack,
		  .n_kstack = 1 },
		{ .comm = "consumer",
		  .tgid = 7,
		  .pid = 8,
		  .state = "S",
		  .since_ms = INT64_C(1795309200001),
		  .waker_comm = "producer",
		  .waker_tgid = 7,
		  .waker_pid = 9 },
	};
	struct proto_blocked_result res = {
		.now_ms = INT64_C(1795309230000),
		.threads = threads,
		.n_threads = 3,
		.n_more = 12,
	};
	struct proto_reply *reply = NULL;
	char *s;

	s = proto_reply_blocked(&res);
	CHECK_LINE(s);
	CHECK_MSG(starts_with(s, "{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":{\"now_ms\":"
				 "1795309230000,\"threads\":[{\"comm\":\"python3\",\"tgid\":4321,"
				 "\"pid\":4322,\"state\":\"S\",\"blocked_ns\":30000000000,"
				 "\"since_ms\":0,\"runq_ns\":0,\"ustack\":[\"_start\",\"main\","
				 "\"clock_nanosleep\"],\"kstack\":[\"entry_SYSCALL_64\","
				 "\"do_nanosleep\",\"schedule\",\"__schedule\"]},"),
		  "('%s')", STR(s));
	CHECK_MSG(s && strstr(s, "\"runq_ns\":700,\"waker\":{\"comm\":\"[softirq]\",\"tgid\":0,"
				 "\"pid\":0},\"ustack\":[],\"kstack\":[\"pipe_\xef\xbf\xbd\"]}"),
		  "('%s')", STR(s));
	CHECK_MSG(s && strstr(s, "\"waker\":{\"comm\":\"producer\",\"tgid\":7,\"pid\":9},"
				 "\"ustack\":[],\"kstack\":[]}],\"more\":12}}\n"),
		  "('%s')", STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_blocked_result *b = &reply->blocked;

		CHECK(reply->ok && reply->cmd == PROTO_CMD_BLOCKED);
		CHECK(b->now_ms == res.now_ms && b->n_more == 12);
		CHECK(b->n_threads == 3);
		if (b->n_threads == 3) {
			const struct proto_blocked_thread *t = b->threads;

			CHECK_STR(t[0].comm, "python3");
			CHECK(t[0].tgid == 4321 && t[0].pid == 4322);
			CHECK_STR(t[0].state, "S");
			CHECK(t[0].blocked_ns == UINT64_C(30000000000) && t[0].since_ms == 0);
			CHECK(t[0].runq_ns == 0 && t[0].waker_comm == NULL);
			CHECK(t[0].n_ustack == 3 && t[0].n_kstack == 4);
			if (t[0].n_ustack == 3 && t[0].n_kstack == 4) {
				CHECK_STR(t[0].ustack[0], "_start");
				CHECK_STR(t[0].ustack[2], "clock_nanosleep");
				CHECK_STR(t[0].kstack[1], "do_nanosleep");
				CHECK_STR(t[0].kstack[3], "__schedule");
			}
			CHECK_STR(t[1].comm, "bad \xef\xbf\xbd comm");
			CHECK(t[1].tgid == 4194304 && t[1].pid == 4194304);
			CHECK(t[1].blocked_ns == 1500 && t[1].runq_ns == 700);
			CHECK(t[1].since_ms == INT64_C(1795309200000));
			CHECK_STR(t[1].waker_comm, "[softirq]");
			CHECK(t[1].waker_tgid == 0 && t[1].waker_pid == 0);
			CHECK(t[1].n_ustack == 0 && t[1].n_kstack == 1);
			if (t[1].n_kstack == 1)
				CHECK_STR(t[1].kstack[0], "pipe_\xef\xbf\xbd");
			CHECK_STR(t[2].waker_comm, "producer");
			CHECK(t[2].waker_tgid == 7 && t[2].waker_pid == 9);
			CHECK(t[2].n_ustack == 0 && t[2].n_kstack == 0);
		}
	}
	proto_reply_free(reply);
	free(s);

	/* Nothing matched. */
	res.threads = NULL;
	res.n_threads = 0;
	res.n_more = 0;
	s = proto_reply_blocked(&res);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":{"
				  "\"now_ms\":1795309230000,\"threads\":[],\"more\":0}}\n"),
		  "('%s')", STR(s));
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK(reply->blocked.n_threads == 0 && reply->blocked.threads != NULL &&
		      reply->blocked.n_more == 0);
	proto_reply_free(reply);
	free(s);
}

static void test_reply_blocked_invalid(void)
{
	static const char t_ok[] = "\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\","
				   "\"blocked_ns\":5,\"since_ms\":0,\"runq_ns\":0,\"ustack\":[],"
				   "\"kstack\":[\"schedule\"]";
	static const char *const bad_body[] = {
		"\"threads\":[],\"more\":0",
		"\"now_ms\":1,\"more\":0",
		"\"now_ms\":1,\"threads\":[]",
		"\"now_ms\":1.5,\"threads\":[],\"more\":0",
		"\"now_ms\":1,\"threads\":{},\"more\":0",
		"\"now_ms\":1,\"threads\":[],\"more\":-1",
		"\"now_ms\":1,\"threads\":[],\"more\":\"2\"",
		"\"now_ms\":1,\"threads\":[7],\"more\":0",
	};
	static const char *const bad_thread[] = {
		/* each lacks or spoils one field */
		"\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,\"since_ms\":0,"
		"\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,\"since_ms\":0,"
		"\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"state\":\"S\",\"blocked_ns\":5,\"since_ms\":0,"
		"\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"blocked_ns\":5,\"since_ms\":0,"
		"\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"since_ms\":0,"
		"\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0,\"runq_ns\":0,\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0,\"runq_ns\":0,\"ustack\":[]",
		"\"comm\":1,\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0,\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":4294967296,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0,\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":-5,"
		"\"since_ms\":0,\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0.5,\"runq_ns\":0,\"ustack\":[],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0,\"runq_ns\":0,\"ustack\":[1],\"kstack\":[]",
		"\"comm\":\"a\",\"tgid\":1,\"pid\":2,\"state\":\"S\",\"blocked_ns\":5,"
		"\"since_ms\":0,\"runq_ns\":0,\"ustack\":[],\"kstack\":\"schedule\"",
	};
	static const char *const bad_waker[] = {
		"\"waker\":null",
		"\"waker\":\"producer\"",
		"\"waker\":{}",
		"\"waker\":{\"tgid\":1,\"pid\":2}",
		"\"waker\":{\"comm\":\"w\",\"pid\":2}",
		"\"waker\":{\"comm\":\"w\",\"tgid\":1}",
		"\"waker\":{\"comm\":\"w\",\"tgid\":1,\"pid\":-2}",
	};
	struct proto_reply *reply = NULL;
	char buf[2048];

	/* The reference parses, unknown fields and all. */
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":{\"now_ms\":1,\"threads\":"
		 "[{%s,\"new\":1,\"waker\":{\"comm\":\"w\",\"tgid\":3,\"pid\":4,\"new\":[]}}],"
		 "\"more\":0,\"new\":{}}}",
		 t_ok);
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	if (reply) {
		CHECK(reply->blocked.n_threads == 1 && reply->blocked.threads[0].pid == 2);
		CHECK(reply->blocked.threads[0].n_kstack == 1);
		CHECK_STR(reply->blocked.threads[0].waker_comm, "w");
	}
	proto_reply_free(reply);

	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"blocked\"}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":[]}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":{}}");
	for (size_t i = 0; i < sizeof(bad_body) / sizeof(bad_body[0]); i++) {
		snprintf(buf, sizeof(buf),
			 "{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":{%s}}", bad_body[i]);
		REPLY_BAD(buf);
	}
	for (size_t i = 0; i < sizeof(bad_thread) / sizeof(bad_thread[0]); i++) {
		snprintf(buf, sizeof(buf),
			 "{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":{\"now_ms\":1,"
			 "\"threads\":[{%s},{%s}],\"more\":0}}",
			 t_ok, bad_thread[i]);
		REPLY_BAD(buf);
	}
	for (size_t i = 0; i < sizeof(bad_waker) / sizeof(bad_waker[0]); i++) {
		snprintf(buf, sizeof(buf),
			 "{\"v\":1,\"ok\":true,\"cmd\":\"blocked\",\"blocked\":{\"now_ms\":1,"
			 "\"threads\":[{%s,%s}],\"more\":0}}",
			 t_ok, bad_waker[i]);
		REPLY_BAD(buf);
	}
	/* The cmd decides which body is read. */
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"hist\",\"blocked\":{\"now_ms\":1,\"threads\":[],"
		 "\"more\":0}}");
	REPLY_BAD(buf);
}

/* ---- PROTOCOL.md ------------------------------------------------------- */

/* Its path, from this file's: the test runs from anywhere. */
static const char *protocol_md_path(void)
{
	static char path[4096];
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash ? (int)(slash - __FILE__) : 1;

	snprintf(path, sizeof(path), "%.*s/../../proto/PROTOCOL.md", dir, slash ? __FILE__ : ".");
	return path;
}

/*
 * Every example in PROTOCOL.md's code blocks holds: "> " request lines parse,
 * unless the reply after them is a bad_request, whose message must then be
 * the parser's, word for word; "< " reply lines parse as replies; and in
 * ```json blocks, lines without a "{...}" placeholder parse as requests or
 * (with "ok") replies.
 */
static void test_protocol_examples(void)
{
	const char *path = protocol_md_path();
	char *lines[2048];
	size_t n = 0, checked = 0;
	bool in_code = false, in_json = false;
	char line[8192];
	FILE *f = fopen(path, "r");

	CHECK_MSG(f != NULL, "(cannot open %s)", path);
	if (!f)
		return;
	while (n < sizeof(lines) / sizeof(lines[0]) && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		lines[n++] = strdup(line);
	}
	CHECK_MSG(!fgets(line, sizeof(line), f),
		  "(%s has more than %zu lines; only those were checked)", path, n);
	fclose(f);

	for (size_t i = 0; i < n; i++) {
		const char *l = lines[i];
		struct proto_request req;
		struct proto_reply *reply = NULL;
		char err[256];

		if (!strncmp(l, "```", 3)) {
			in_code = !in_code;
			in_json = in_code && !strcmp(l, "```json");
			continue;
		}
		if (!in_code)
			continue;
		if (!strncmp(l, "> ", 2)) {
			const char *next = i + 1 < n ? lines[i + 1] : "";
			const char *bad =
				"< {\"v\":1,\"ok\":false,\"error\":{\"code\":\"bad_request\"";
			int r = proto_request_parse(l + 2, strlen(l + 2), &req, err, sizeof(err));

			if (!strncmp(next, bad, strlen(bad))) {
				char want[300];

				snprintf(want, sizeof(want), "\"message\":\"%s\"}}", err);
				CHECK_MSG(r == -EINVAL && strstr(next, want),
					  "(PROTOCOL.md:%zu: '%s' gives '%s')", i + 1, l, err);
			} else {
				CHECK_MSG(r == 0, "(PROTOCOL.md:%zu: '%s': %s)", i + 1, l, err);
			}
			checked++;
		} else if (!strncmp(l, "< ", 2)) {
			CHECK_MSG(proto_reply_parse(l + 2, strlen(l + 2), &reply) == 0,
				  "(PROTOCOL.md:%zu: reply '%s' does not parse)", i + 1, l);
			proto_reply_free(reply);
			checked++;
		} else if (in_json && *l && !strstr(l, "{...}")) {
			if (strstr(l, "\"ok\":")) {
				CHECK_MSG(proto_reply_parse(l, strlen(l), &reply) == 0,
					  "(PROTOCOL.md:%zu: reply '%s' does not parse)", i + 1, l);
				proto_reply_free(reply);
			} else {
				CHECK_MSG(proto_request_parse(l, strlen(l), &req, err,
							      sizeof(err)) == 0,
					  "(PROTOCOL.md:%zu: '%s': %s)", i + 1, l, err);
			}
			checked++;
		}
	}
	CHECK_MSG(checked >= 30, "(only %zu examples found in %s)", checked, path);
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
}

/* ---- robustness -------------------------------------------------------- */

/* Every prefix and many single-byte mutations of real lines must be handled
 * without crashing (the sanitizers turn any slip into a failure). */
static void test_garbage(void)
{
	struct proto_capture_result res = { .id = 1, .folded = "a;b 1\n" };
	const struct proto_window_info w[] = { { 1, 2, 3, 4, 5, 6, 7 }, { 8, -9, 10, 0, 1, 2, 3 } };
	struct proto_export_result ex = {
		.from_ms = 1, .to_ms = 2, .windows = 3, .folded = "x 1\n"
	};
	struct proto_capture_result svg = { .id = 2, .output = "<svg>\"a\"</svg>\n" };
	struct proto_export_result diff = {
		.from_ms = 1, .windows = 3, .differential = true, .diff_windows = 4, .output = "{}"
	};
	const char *const chain[] = { "wake", "-", "--", "[idle]" };
	const struct proto_sample rows[] = {
		{ .comm = "a", .state = "S", .kind = "chain", .chain = chain, .n_chain = 4 },
	};
	struct proto_capture_result kinds = { .id = 3, .samples = rows };
	struct proto_hist_process procs[2] = { { .tgid = 1, .comm = "x" },
					       { .tgid = 2, .comm = "y" } };
	struct proto_hist_result hist = {
		.kind = "runq", .from_ms = 1, .windows = 2, .processes = procs, .n_processes = 2
	};
	const char *const frames[] = { "do_nanosleep", "schedule" };
	const struct proto_blocked_thread blocked[] = {
		{ .comm = "a",
		  .tgid = 1,
		  .pid = 2,
		  .state = "S",
		  .blocked_ns = 3,
		  .since_ms = 4,
		  .waker_comm = "w",
		  .waker_pid = 5,
		  .kstack = frames,
		  .n_kstack = 2 },
	};
	struct proto_blocked_result now = { .now_ms = 9, .threads = blocked, .n_threads = 1 };
	enum { N_LINES = 16 };
	char *lines[N_LINES];
	unsigned seed = 12345;

	procs[0].counts[3] = 9;
	procs[1].counts[31] = 1;

	lines[0] =
		strdup(capture_line("\"pids\":[1,2],\"tids\":[3],\"seconds\":5,"
				    "\"states\":[\"S\",\"D\"],\"min_block_us\":1,"
				    "\"max_block_us\":9,\"stacks\":\"user\",\"format\":\"json\""));
	lines[1] = proto_reply_error("busy", "all slots in use");
	lines[2] = proto_reply_capture(&res, 0);
	lines[3] = strdup(cmd_line("export", "\"from_ms\":1,\"to_ms\":9,\"pids\":[3],"
					     "\"comm\":\"a\\u00e9\",\"grep\":\"^x$\","
					     "\"exclude\":\"y\",\"states\":[\"S\"],"
					     "\"format\":\"json\""));
	lines[4] = proto_reply_windows(w, 2);
	lines[5] = proto_reply_export(&ex, 0);
	lines[6] = strdup(capture_line("\"format\":\"svg\",\"title\":\"t\",\"subtitle\":\"s\","
				       "\"countname\":\"c\",\"width\":300,\"frame_height\":5,"
				       "\"minwidth\":\"0.5%\",\"inverted\":true,\"reverse\":false,"
				       "\"flamechart\":true,\"palette\":\"wakeup\""));
	lines[7] = strdup(cmd_line("export", "\"capture\":7,\"diff_from_ms\":1,\"diff_to_ms\":2,"
					     "\"normalize\":true,\"strip_hex\":true,"
					     "\"diff_widths_from_old\":true,\"negate\":true,"
					     "\"format\":\"svg\",\"minwidth\":\"10\""));
	lines[8] = proto_reply_capture(&svg, 0);
	lines[9] = proto_reply_export(&diff, 0);
	lines[10] = strdup(capture_line("\"kind\":\"chain\",\"chain_depth\":4,\"pids\":[1]"));
	lines[11] = strdup(cmd_line("hist", "\"from_ms\":1,\"to_ms\":9,\"pids\":[3,4],"
					    "\"kind\":\"runq\""));
	lines[12] = proto_reply_hist(&hist);
	lines[13] = proto_reply_capture(&kinds, 1);
	lines[14] = strdup(cmd_line("blocked", "\"pids\":[1],\"tids\":[2,3],"
					       "\"states\":[\"D\"],\"min_ms\":4,\"limit\":0"));
	lines[15] = proto_reply_blocked(&now);

	for (int l = 0; l < N_LINES; l++) {
		size_t len;
		char *copy;

		CHECK(lines[l] != NULL);
		if (!lines[l])
			continue;
		len = strlen(lines[l]);
		copy = malloc(len);
		for (size_t n = 0; n <= len; n++) {
			struct proto_request req;
			struct proto_reply *reply = NULL;
			char err[64];

			/* An exact-size heap copy lets ASan catch any read past len. */
			memcpy(copy, lines[l], n);
			proto_request_parse(copy, n, &req, err, sizeof(err));
			if (proto_reply_parse(copy, n, &reply) == 0)
				proto_reply_free(reply);
		}
		for (int i = 0; i < 5000; i++) {
			struct proto_request req;
			struct proto_reply *reply = NULL;
			char err[64];

			memcpy(copy, lines[l], len);
			for (int k = 0; k < 1 + i % 3; k++) {
				seed = seed * 1103515245 + 12345;
				copy[(seed >> 8) % len] = (char)(seed >> 20);
			}
			proto_request_parse(copy, len, &req, err, sizeof(err));
			CHECK(memchr(err, '\0', sizeof(err)) != NULL);
			if (proto_reply_parse(copy, len, &reply) == 0)
				proto_reply_free(reply);
		}
		free(copy);
		free(lines[l]);
	}

	/* Deep nesting is refused by cJSON's depth limit, not by the stack. */
	{
		size_t depth = 100000;
		char *deep = malloc(2 * depth + 16);
		struct proto_request req;
		struct proto_reply *reply = NULL;
		char err[64];

		strcpy(deep, "{\"v\":");
		memset(deep + 5, '[', depth);
		memset(deep + 5 + depth, ']', depth);
		strcpy(deep + 5 + 2 * depth, "}");
		CHECK(proto_request_parse(deep, strlen(deep), &req, err, sizeof(err)) == -EINVAL);
		CHECK_MSG(!strncmp(err, "malformed JSON at byte", 22), "('%s')", err);
		CHECK(proto_reply_parse(deep, strlen(deep), &reply) == -EINVAL);
		free(deep);
	}
}

/* ---- thread_state ------------------------------------------------------ */

static void test_thread_state(void)
{
	uint32_t mask;

	CHECK(thread_state_mask_parse("S,D", &mask) == 0 && mask == ((1u << 1) | (1u << 2)));
	mask = 0;
	CHECK(thread_state_mask_parse("running,disk", &mask) == 0 &&
	      mask == ((1u << 0) | (1u << 2)));
	CHECK(thread_state_mask_parse("R,S,D,O", &mask) == 0 && mask == THREAD_STATE_ALL);
	CHECK(thread_state_mask_parse("Sleeping", &mask) == 0 && mask == 1u << 1);
	mask = 0x55;
	CHECK(thread_state_mask_parse("x", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse("", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse("S,,D", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse("S,", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse(",S", &mask) == -EINVAL);
	CHECK_MSG(mask == 0x55, "(mask written on failure)");
	CHECK(thread_state_parse("uninterruptible") == 2);
	CHECK(thread_state_parse("bogus") == -EINVAL);
	CHECK(!strcmp(thread_state_name(3), "O"));
	CHECK(!strcmp(thread_state_name(THREAD_STATE_COUNT), "?"));
}

/* ---- heatmap: the request ------------------------------------------------ */

#define HEATMAP_OK(extra, req)	 PARSE_OK(cmd_line("heatmap", extra), req)
#define HEATMAP_BAD(extra, want) BAD(cmd_line("heatmap", extra), want)

static void test_heatmap_request(void)
{
	struct proto_request req, *back;
	char *line;

	memset(&req, 0xa5, sizeof(req));
	if (HEATMAP_OK("\"from_ms\":1795305600000", &req) == 0) {
		CHECK(req.cmd == PROTO_CMD_HEATMAP);
		CHECK(req.heatmap.from_ms == INT64_C(1795305600000) && req.heatmap.to_ms == 0);
		CHECK(req.heatmap.n_pids == 0 && req.heatmap.comm[0] == '\0');
		CHECK(req.heatmap.state_mask == 0xf && req.heatmap.kind == PROTO_KIND_OFFCPU);
		CHECK(!req.heatmap.oncpu && req.heatmap.rows == PROTO_HEATMAP_ROWS_PROCESS);
		CHECK(req.heatmap.max_rows == PROTO_HEATMAP_ROWS_DEFAULT);
	}
	if (HEATMAP_OK("\"from_ms\":1,\"to_ms\":2,\"pids\":[4],\"comm\":\"a\",\"states\":[\"D\"],"
		       "\"kind\":\"offcpu\",\"oncpu\":true,\"rows\":\"thread\",\"max_rows\":1000",
		       &req) == 0) {
		CHECK(req.heatmap.to_ms == 2 && req.heatmap.n_pids == 1 &&
		      req.heatmap.pids[0] == 4);
		CHECK(req.heatmap.state_mask == 1u << 2 && req.heatmap.oncpu);
		CHECK(req.heatmap.rows == PROTO_HEATMAP_ROWS_THREAD &&
		      req.heatmap.max_rows == 1000);
		/* Formatted and parsed back: the same request. */
		line = proto_request_format(&req);
		back = calloc(1, sizeof(*back));
		CHECK(line && back);
		if (line && back && PARSE_OK(line, back) == 0) {
			const struct proto_heatmap_request *a = &req.heatmap, *b = &back->heatmap;

			CHECK(a->from_ms == b->from_ms && a->to_ms == b->to_ms);
			CHECK(b->n_pids == 1 && b->pids[0] == 4 && !strcmp(a->comm, b->comm));
			CHECK(a->state_mask == b->state_mask && a->kind == b->kind);
			CHECK(a->oncpu == b->oncpu && a->rows == b->rows &&
			      a->max_rows == b->max_rows);
		}
		free(line);
		free(back);
	}
	if (HEATMAP_OK("\"from_ms\":1,\"kind\":\"bio\",\"rows\":\"state\"", &req) == 0)
		CHECK(req.heatmap.kind == PROTO_KIND_BIO &&
		      req.heatmap.rows == PROTO_HEATMAP_ROWS_STATE);

	HEATMAP_BAD("", "heatmap needs from_ms");
	HEATMAP_BAD("\"to_ms\":5", "heatmap needs from_ms");
	HEATMAP_BAD("\"from_ms\":5,\"to_ms\":5", "field 'to_ms' (5) must be > 'from_ms' (5)");
	HEATMAP_BAD("\"from_ms\":1,\"capture\":7", "unknown field 'capture'");
	HEATMAP_BAD("\"from_ms\":1,\"grep\":\"x\"", "unknown field 'grep'");
	HEATMAP_BAD("\"from_ms\":1,\"rows\":\"cpu\"", "field 'rows' must be one of");
	HEATMAP_BAD("\"from_ms\":1,\"max_rows\":0", "field 'max_rows' must be between 1 and 1000");
	HEATMAP_BAD("\"from_ms\":1,\"max_rows\":1001",
		    "field 'max_rows' must be between 1 and 1000");
	HEATMAP_BAD("\"from_ms\":1,\"kind\":\"runq\",\"oncpu\":true",
		    "field 'oncpu' needs kind offcpu, not runq");
	HEATMAP_BAD("\"from_ms\":1,\"states\":[]", "states");
}

int main(void)
{
	test_defaults();
	test_fields_valid();
	test_ids_limit();
	test_fields_invalid();
	test_envelope();
	test_err_buffer();
	test_request_format();
	test_windows_request();
	test_heatmap_request();
	test_export_valid();
	test_export_strings();
	test_export_invalid();
	test_capture_filters();
	test_capture_requests();
	test_capture_request_stats_reply();
	test_request_format_new();
	test_render_defaults();
	test_render_valid();
	test_render_invalid();
	test_minwidth_parse();
	test_names();
	test_diff_valid();
	test_diff_invalid();
	test_request_format_render();
	test_kind_names();
	test_capture_kinds();
	test_export_kind();
	test_hist_request();
	test_latency_request();
	test_request_format_kinds();
	test_reply_error();
	test_reply_status();
	test_reply_capture();
	test_reply_samples();
	test_reply_invalid();
	test_reply_windows();
	test_reply_export();
	test_reply_invalid_new();
	test_reply_output();
	test_reply_output_invalid();
	test_reply_sample_kinds();
	test_reply_hist();
	test_reply_hist_invalid();
	test_blocked_request();
	test_reply_blocked();
	test_reply_blocked_invalid();
	test_protocol_examples();
	test_garbage();
	test_thread_state();

	if (CHECK_DONE())
		return 1;
	printf("test-proto: all checks passed\n");
	return 0;
}
