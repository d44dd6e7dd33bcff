/*
 * test-proto: unit test of proto/ (requests, replies) and thread_state.
 * Links only proto.c, thread_state.c and cJSON. Exit status 0 on success;
 * every failed check is printed as FILE:LINE.
 */
#include "proto.h"
#include "thread_state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"

/* For messages about strings that may be NULL. */
#define STR(s) ((s) ? (s) : "(null)")

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
		CHECK(req.capture.min_block_us == 0);
		CHECK(req.capture.max_block_us == 0);
		CHECK(req.capture.stacks == PROTO_STACKS_BOTH);
		CHECK(req.capture.format == PROTO_FORMAT_FOLDED);
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
	CAPTURE_BAD("\"format\":\"xml\"", "field 'format' must be one of: folded, json");
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
			CHECK_AT(file, line, a->min_block_us == b->min_block_us, "(%s)", s);
			CHECK_AT(file, line, a->max_block_us == b->max_block_us, "(%s)", s);
			CHECK_AT(file, line, a->stacks == b->stacks, "(%s)", s);
			CHECK_AT(file, line, a->format == b->format, "(%s)", s);
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
	CHECK_ROUNDTRIP(&req);

	req.capture.n_pids = 0;
	req.capture.state_mask = 1u << 3;
	req.capture.seconds = 1;
	req.capture.stacks = PROTO_STACKS_USER;
	CHECK_ROUNDTRIP(&req);
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
		{ "offcpu_switch", true },
		{ "offcpu_exit", false },
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
		.programs = programs,
		.n_programs = 2,
		.slots_active = 3,
		.slots_max = 64,
		.captures_running = 2,
		.switches_per_s = 12345.5,
		.recorded_per_s = 0.1,
		.counters = counters,
		.n_counters = 3,
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
		CHECK(p->n_programs == 2);
		if (p->n_programs == 2) {
			CHECK(!strcmp(p->programs[0].name, "offcpu_switch") &&
			      p->programs[0].attached);
			CHECK(!strcmp(p->programs[1].name, "offcpu_exit") &&
			      !p->programs[1].attached);
		}
		CHECK(p->slots_active == 3 && p->slots_max == 64 && p->captures_running == 2);
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
		static const struct proto_program odd_programs[] = { { NULL, true } };
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
		CHECK(!strcmp(reply->status.version, ""));
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
	}
	proto_reply_free(reply);
	free(s);
}

static void test_reply_samples(void)
{
	const char *const u0[] = { "_start", "main", "do_read" };
	const char *const k0[] = { "entry_SYSCALL_64", "ksys_read", "schedule" };
	const char *const k1[] = { "ret_from_fork", "worker_thread\xff" };
	const struct proto_sample samples[] = {
		{ "cat", 100, 101, "S", 5000, 3, u0, 3, k0, 3 },
		{ "kworker/0:1", 7, 7, "D", 250, 1, NULL, 0, k1, 2 },
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

/* ---- robustness -------------------------------------------------------- */

/* Every prefix and many single-byte mutations of real lines must be handled
 * without crashing (the sanitizers turn any slip into a failure). */
static void test_garbage(void)
{
	struct proto_capture_result res = { .id = 1, .folded = "a;b 1\n" };
	char *lines[3];
	unsigned seed = 12345;

	lines[0] =
		strdup(capture_line("\"pids\":[1,2],\"tids\":[3],\"seconds\":5,"
				    "\"states\":[\"S\",\"D\"],\"min_block_us\":1,"
				    "\"max_block_us\":9,\"stacks\":\"user\",\"format\":\"json\""));
	lines[1] = proto_reply_error("busy", "all slots in use");
	lines[2] = proto_reply_capture(&res, 0);

	for (int l = 0; l < 3; l++) {
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

int main(void)
{
	test_defaults();
	test_fields_valid();
	test_ids_limit();
	test_fields_invalid();
	test_envelope();
	test_err_buffer();
	test_request_format();
	test_reply_error();
	test_reply_status();
	test_reply_capture();
	test_reply_samples();
	test_reply_invalid();
	test_garbage();
	test_thread_state();

	if (CHECK_DONE())
		return 1;
	printf("test-proto: all checks passed\n");
	return 0;
}
