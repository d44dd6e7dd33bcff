/* Unit test of proto/proto_request.c: the request parser's envelope (JSON,
 * "v", "cmd", NULs), its error messages and buffer, proto_request_format()
 * and its round trips through the parser, the name lookups and
 * proto_minwidth_parse(), PROTOCOL.md's request examples, and robustness
 * against garbage. Each command's fields: test-proto_request_table.c.
 * Links proto_request.c, proto_request_table.c, proto_json.c, proto_reply.c
 * (which writes the replies the robustness test mangles), common/ and cJSON.
 * Exit status 0 on success; every failed check is printed as FILE:LINE. */
#include "proto.h"
#include "thread_state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto_test_util.h"

/* ---- the envelope and errors -------------------------------------------- */

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

/* A message quoting client bytes has them as they came, escapes decoded
 * (test-proto_reply sends this very message in an error reply). */
static void test_err_client_bytes(void)
{
	const char *req = "{\"v\":1,\"cmd\":\"capture\",\"\xff\\n\\\"x\":1}";
	struct proto_request r;
	char err[256];

	CHECK(proto_request_parse(req, strlen(req), &r, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "unknown field '\xff\n\"x' for command 'capture'");
}

/* ---- formatting --------------------------------------------------------- */

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
		if (in->cmd == PROTO_CMD_PUSH) {
			const struct proto_push_request *a = &in->push, *b = &out.push;

			CHECK_AT(file, line, a->from_ms == b->from_ms, "(%s)", s);
			CHECK_AT(file, line, a->to_ms == b->to_ms, "(%s)", s);
			CHECK_AT(file, line, !strcmp(a->target, b->target), "(%s)", s);
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

/* push: its fields (a range, as heatmap's, and a target's name) parsed,
 * refused and formatted back. */
static void test_push_request(void)
{
	struct proto_request req;
	char name[PROTO_PUSH_TARGET_MAX + 2], extra[128];
	char *s;

	CHECK(PARSE_OK(cmd_line("push", "\"from_ms\":1795305600000"), &req) == 0);
	CHECK(req.cmd == PROTO_CMD_PUSH && req.push.from_ms == INT64_C(1795305600000) &&
	      req.push.to_ms == 0 && !req.push.target[0]);
	CHECK(PARSE_OK(cmd_line("push", "\"from_ms\":1,\"to_ms\":9007199254740992,"
					"\"target\":\"grafana-eu_2\""),
		       &req) == 0);
	CHECK(req.push.from_ms == 1 && req.push.to_ms == INT64_C(9007199254740992));
	CHECK_STR(req.push.target, "grafana-eu_2");
	CHECK(PARSE_OK(cmd_line("push", "\"from_ms\":1,\"target\":\"\""), &req) == 0);
	CHECK(!req.push.target[0]);
	memset(name, 'a', PROTO_PUSH_TARGET_MAX);
	name[PROTO_PUSH_TARGET_MAX] = '\0';
	snprintf(extra, sizeof(extra), "\"from_ms\":1,\"target\":\"%s\"", name);
	CHECK(PARSE_OK(cmd_line("push", extra), &req) == 0);
	CHECK_STR(req.push.target, name);

	BAD(cmd_line("push", ""), "push needs from_ms");
	BAD(cmd_line("push", "\"to_ms\":5"), "push needs from_ms");
	BAD(cmd_line("push", "\"from_ms\":5,\"to_ms\":5"),
	    "field 'to_ms' (5) must be > 'from_ms' (5), or 0 for now");
	BAD(cmd_line("push", "\"from_ms\":-1"), "field 'from_ms' must be between 0 and");
	BAD(cmd_line("push", "\"from_ms\":1,\"capture\":2"), "unknown field 'capture'");
	BAD(cmd_line("push", "\"from_ms\":1,\"target\":\"Grafana\""),
	    "field 'target' must be a push target's name: a-z, 0-9, '_' and '-', not 'Grafana'");
	BAD(cmd_line("push", "\"from_ms\":1,\"target\":\"a b\""), "field 'target' must be");
	BAD(cmd_line("push", "\"from_ms\":1,\"target\":\"a.b\""), "field 'target' must be");
	BAD(cmd_line("push", "\"from_ms\":1,\"target\":7"), "field 'target' must be a string");
	name[PROTO_PUSH_TARGET_MAX] = 'a';
	name[PROTO_PUSH_TARGET_MAX + 1] = '\0';
	snprintf(extra, sizeof(extra), "\"from_ms\":1,\"target\":\"%s\"", name);
	BAD(cmd_line("push", extra), "field 'target' is 32 bytes long; at most 31 allowed");

	/* Formatted: defaults left out; round trips. */
	memset(&req, 0, sizeof(req));
	req.cmd = PROTO_CMD_PUSH;
	req.push.from_ms = INT64_C(1795305600000);
	s = proto_request_format(&req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"push\",\"from_ms\":1795305600000}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(&req);
	req.push.to_ms = INT64_C(1795309200000);
	strcpy(req.push.target, "otel");
	s = proto_request_format(&req);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"cmd\":\"push\",\"from_ms\":1795305600000,"
				  "\"to_ms\":1795309200000,\"target\":\"otel\"}\n"),
		  "('%s')", STR(s));
	free(s);
	CHECK_ROUNDTRIP(&req);
}

/* capture's stack filters: formatted only when set; round trips. */
static void test_request_format_filters(void)
{
	struct proto_request *big;
	char *s;

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

/* ---- names -------------------------------------------------------------- */

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

/* ---- PROTOCOL.md -------------------------------------------------------- */

/* One request example: it parses, unless the reply after it is a bad_request,
 * whose message must then be the parser's, word for word. */
static void request_example(size_t lineno, const char *l, const char *next)
{
	const char *bad = "< {\"v\":1,\"ok\":false,\"error\":{\"code\":\"bad_request\"";
	struct proto_request req;
	char err[256];
	int r = proto_request_parse(l, strlen(l), &req, err, sizeof(err));

	if (next && !strncmp(next, bad, strlen(bad))) {
		char want[300];

		snprintf(want, sizeof(want), "\"message\":\"%s\"}}", err);
		CHECK_MSG(r == -EINVAL && strstr(next, want), "(PROTOCOL.md:%zu: '%s' gives '%s')",
			  lineno, l, err);
	} else {
		CHECK_MSG(r == 0, "(PROTOCOL.md:%zu: '%s': %s)", lineno, l, err);
	}
}

/* Every request example in PROTOCOL.md's code blocks holds ("> " lines, and
 * lines of ```json blocks without "ok"); its replies: test-proto_reply_parse. */
static void test_protocol_examples(void)
{
	size_t n = protocol_examples(PROTOCOL_EXAMPLE_REQUEST, request_example);

	CHECK_MSG(n >= 30, "(only %zu request examples found in %s)", n, protocol_md_path());
}

/* ---- robustness --------------------------------------------------------- */

static void request_garbage(const char *buf, size_t len, bool mutated)
{
	struct proto_request req;
	char err[64];

	proto_request_parse(buf, len, &req, err, sizeof(err));
	if (mutated)
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
}

/* Every prefix and many single-byte mutations of real lines, requests and
 * replies, must be handled without crashing (the sanitizers turn any slip
 * into a failure); test-proto_reply_parse feeds the same to the reply parser. */
static void test_garbage(void)
{
	garbage_feed(request_garbage);

	/* Deep nesting is refused by cJSON's depth limit, not by the stack. */
	{
		char *deep = deep_line(100000);
		struct proto_request req;
		char err[64];

		if (!deep)
			return;
		CHECK(proto_request_parse(deep, strlen(deep), &req, err, sizeof(err)) == -EINVAL);
		CHECK_MSG(!strncmp(err, "malformed JSON at byte", 22), "('%s')", err);
		free(deep);
	}
}

int main(void)
{
	test_envelope();
	test_err_buffer();
	test_err_client_bytes();
	test_request_format();
	test_request_format_new();
	test_request_format_filters();
	test_request_format_render();
	test_request_format_kinds();
	test_push_request();
	test_minwidth_parse();
	test_names();
	test_kind_names();
	test_protocol_examples();
	test_garbage();

	if (CHECK_DONE())
		return 1;
	printf("test-proto_request: all checks passed\n");
	return 0;
}
