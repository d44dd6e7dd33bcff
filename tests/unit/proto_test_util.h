/* proto_test_util: what the unit tests of proto/ (test-proto_*.c) share:
 * request lines and the checks of their parsing, the check of a formatted
 * line, PROTOCOL.md's examples, and the lines the robustness tests mangle.
 * All static inline, so that a test links only the proto/ files whose
 * functions it calls. */
#ifndef PROTO_TEST_UTIL_H
#define PROTO_TEST_UTIL_H

#include "proto.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* For messages about strings that may be NULL. */
#define STR(s) ((s) ? (s) : "(null)")

/* ---- request lines ------------------------------------------------------ */

static inline int parse_at(const char *file, int line, const char *buf, size_t len,
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
static inline void bad_at(const char *file, int line, const char *buf, size_t len, const char *want)
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
static inline char *capture_line(const char *extra)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf), "{\"v\":1,\"cmd\":\"capture\"%s%s}", *extra ? "," : "", extra);
	return buf;
}

#define CAPTURE_OK(extra, req)	 PARSE_OK(capture_line(extra), req)
#define CAPTURE_BAD(extra, want) BAD(capture_line(extra), want)

/* Request lines of other commands, built like capture_line(). */
static inline char *cmd_line(const char *cmd, const char *extra)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf), "{\"v\":1,\"cmd\":\"%s\"%s%s}", cmd, *extra ? "," : "", extra);
	return buf;
}

/* ---- formatted lines ---------------------------------------------------- */

/* Strict UTF-8 check, to prove replies stay valid JSON text. */
static inline int utf8_valid(const char *s)
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
static inline void line_at(const char *file, int line, const char *s)
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

/* ---- PROTOCOL.md -------------------------------------------------------- */

/* Its path, from this file's: the tests run from anywhere. */
static inline const char *protocol_md_path(void)
{
	static char path[4096];
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash ? (int)(slash - __FILE__) : 1;

	snprintf(path, sizeof(path), "%.*s/../../proto/PROTOCOL.md", dir, slash ? __FILE__ : ".");
	return path;
}

enum protocol_example { PROTOCOL_EXAMPLE_REQUEST, PROTOCOL_EXAMPLE_REPLY };

/*
 * Hands fn each example of the kind wanted in PROTOCOL.md's code blocks, with
 * its line number: "> " request lines (next: the line after it, which is the
 * reply to it), "< " reply lines, and in ```json blocks, lines without a
 * "{...}" placeholder: replies if they have "ok", else requests (next: NULL).
 * Returns how many it handed over.
 */
static inline size_t protocol_examples(enum protocol_example want,
				       void (*fn)(size_t lineno, const char *l, const char *next))
{
	const char *path = protocol_md_path();
	char *lines[2048];
	size_t n = 0, handed = 0;
	bool in_code = false, in_json = false;
	char line[8192];
	FILE *f = fopen(path, "r");

	CHECK_MSG(f != NULL, "(cannot open %s)", path);
	if (!f)
		return 0;
	while (n < sizeof(lines) / sizeof(lines[0]) && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		lines[n++] = strdup(line);
	}
	CHECK_MSG(!fgets(line, sizeof(line), f),
		  "(%s has more than %zu lines; only those were checked)", path, n);
	fclose(f);

	for (size_t i = 0; i < n; i++) {
		const char *l = lines[i];

		if (!strncmp(l, "```", 3)) {
			in_code = !in_code;
			in_json = in_code && !strcmp(l, "```json");
			continue;
		}
		if (!in_code)
			continue;
		if (!strncmp(l, "> ", 2)) {
			if (want == PROTOCOL_EXAMPLE_REQUEST) {
				fn(i + 1, l + 2, i + 1 < n ? lines[i + 1] : "");
				handed++;
			}
		} else if (!strncmp(l, "< ", 2)) {
			if (want == PROTOCOL_EXAMPLE_REPLY) {
				fn(i + 1, l + 2, NULL);
				handed++;
			}
		} else if (in_json && *l && !strstr(l, "{...}")) {
			bool reply = strstr(l, "\"ok\":") != NULL;

			if (reply == (want == PROTOCOL_EXAMPLE_REPLY)) {
				fn(i + 1, l, NULL);
				handed++;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	return handed;
}

/* ---- robustness --------------------------------------------------------- */

enum { GARBAGE_LINES = 16 };

/* Real lines of every command: requests as offcpuctl sends them, replies as
 * proto_reply.c writes them; each malloc'd (NULL on ENOMEM). */
static inline void garbage_lines(char *lines[GARBAGE_LINES])
{
	struct proto_capture_result res = { .id = 1, .folded = "a;b 1\n" };
	const struct proto_window_info w[] = { { 1, 2, 3, 4, 5, 6, 7, "offcpu", "pid 1" },
						 { 8, -9, 10, 0, 1, 2, 3, NULL, NULL } };
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
}

/*
 * Hands fn every prefix of each of garbage_lines() (mutated false), then 5000
 * mutations of the whole line, each with 1 to 3 bytes changed (mutated true;
 * the seed is fixed, so they are the same each run). Each in an exact-size
 * heap copy: ASan catches any read past len.
 */
static inline void garbage_feed(void (*fn)(const char *buf, size_t len, bool mutated))
{
	char *lines[GARBAGE_LINES];
	unsigned seed = 12345;

	garbage_lines(lines);
	for (int l = 0; l < GARBAGE_LINES; l++) {
		size_t len;
		char *copy;

		CHECK(lines[l] != NULL);
		if (!lines[l])
			continue;
		len = strlen(lines[l]);
		copy = malloc(len);
		for (size_t n = 0; n <= len; n++) {
			memcpy(copy, lines[l], n);
			fn(copy, n, false);
		}
		for (int i = 0; i < 5000; i++) {
			memcpy(copy, lines[l], len);
			for (int k = 0; k < 1 + i % 3; k++) {
				seed = seed * 1103515245 + 12345;
				copy[(seed >> 8) % len] = (char)(seed >> 20);
			}
			fn(copy, len, true);
		}
		free(copy);
		free(lines[l]);
	}
}

/* {"v":[[[...]]]} nested depth deep, for cJSON's depth limit; malloc'd. */
static inline char *deep_line(size_t depth)
{
	char *deep = malloc(2 * depth + 16);

	if (!deep)
		return NULL;
	strcpy(deep, "{\"v\":");
	memset(deep + 5, '[', depth);
	memset(deep + 5 + depth, ']', depth);
	strcpy(deep + 5 + 2 * depth, "}");
	return deep;
}

#endif
