/* Unit test of proto/proto_request_table.c: each command's fields, through
 * proto_request_parse(): their defaults, the values each takes and those it
 * refuses (with the parser's message), and the rules that span a command's
 * fields (the kinds' fields, export's and hist's range or capture, a
 * differential export's baseline, latency's pid and func). The parser's
 * envelope and proto_request_format(): test-proto_request.c.
 * Links proto_request.c, proto_request_table.c, proto_json.c, common/ (the
 * kinds, thread states and the stack filters' regex check) and cJSON.
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

#define WINDOWS_OK(extra, req)	 PARSE_OK(cmd_line("windows", extra), req)
#define WINDOWS_BAD(extra, want) BAD(cmd_line("windows", extra), want)
#define EXPORT_OK(extra, req)	 PARSE_OK(cmd_line("export", extra), req)
#define EXPORT_BAD(extra, want)	 BAD(cmd_line("export", extra), want)
#define HIST_OK(extra, req)	 PARSE_OK(cmd_line("hist", extra), req)
#define HIST_BAD(extra, want)	 BAD(cmd_line("hist", extra), want)

/* ---- capture ------------------------------------------------------------ */

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
	CAPTURE_BAD("\"seconds\":86401", "field 'seconds' must be 0 or between 1 and 86400");
	CAPTURE_BAD("\"seconds\":-1", "field 'seconds' must be 0 or between 1 and 86400");
	CAPTURE_BAD("\"seconds\":1.5", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":0.5", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":\"10\"", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":true", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":null", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":[10]", "field 'seconds' must be an integer");
	CAPTURE_BAD("\"seconds\":1e300", "field 'seconds' must be 0 or between 1 and 86400");
	CAPTURE_BAD("\"seconds\":1e999", "field 'seconds' must be 0 or between 1 and 86400");
	CAPTURE_BAD("\"seconds\":-1e999", "field 'seconds' must be 0 or between 1 and 86400");
	CAPTURE_BAD("\"seconds\":9007199254740993", "field 'seconds' must be 0 or between");

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

/* ---- windows and export ------------------------------------------------- */

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

/* ---- capture's stack filters and requests ------------------------------- */

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
static void test_capture_filters(void)
{
	struct proto_request req;

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
}

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

/* ---- render options and differential exports ---------------------------- */

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

/* ---- kinds, hist and latency -------------------------------------------- */

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
	BAD(cmd_line("latency", "\"func\":\"f\""), "latency needs 'pid'");
	BAD(cmd_line("latency", "\"pid\":1"), "latency needs 'func'");
	BAD(cmd_line("latency", "\"pid\":1,\"func\":\"f\",\"seconds\":0"), "seconds");
	BAD(cmd_line("latency", "\"pid\":1,\"func\":\"f\",\"grep\":\"x\""), "grep");
}

/* ---- blocked ------------------------------------------------------------ */

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

/* ---- heatmap ------------------------------------------------------------ */

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

/* A capture of a command (offcpuctl capture -- CMD): until stop, its
 * children followed, its start announced. */
static void test_capture_command(void)
{
	struct proto_request req;

	if (CAPTURE_OK("\"pids\":[7],\"seconds\":0,\"follow_children\":true,"
		       "\"notify_started\":true",
		       &req) == 0)
		CHECK(req.capture.seconds == 0 && req.capture.follow_children == 1 &&
		      req.capture.notify_started == 1);
	if (CAPTURE_OK("\"notify_started\":true", &req) == 0)
		CHECK(req.capture.notify_started == 1 && req.capture.follow_children == 0 &&
		      req.capture.seconds == PROTO_SECONDS_DEFAULT);
	CAPTURE_BAD("\"follow_children\":true",
		    "field 'follow_children' needs 'pids' and no 'tids'");
	CAPTURE_BAD("\"pids\":[7],\"tids\":[8],\"follow_children\":true",
		    "field 'follow_children' needs 'pids' and no 'tids'");
	CAPTURE_BAD("\"pids\":[7],\"follow_children\":1",
		    "field 'follow_children' must be true or false");
	CAPTURE_BAD("\"notify_started\":\"yes\"", "field 'notify_started' must be true or false");
}

int main(void)
{
	test_defaults();
	test_capture_command();
	test_fields_valid();
	test_ids_limit();
	test_fields_invalid();
	test_windows_request();
	test_heatmap_request();
	test_export_valid();
	test_export_strings();
	test_export_invalid();
	test_capture_filters();
	test_capture_requests();
	test_render_defaults();
	test_render_valid();
	test_render_invalid();
	test_diff_valid();
	test_diff_invalid();
	test_capture_kinds();
	test_export_kind();
	test_hist_request();
	test_latency_request();
	test_blocked_request();

	if (CHECK_DONE())
		return 1;
	printf("test-proto_request_table: all checks passed\n");
	return 0;
}
