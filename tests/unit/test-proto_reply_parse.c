/* Unit test of proto/proto_reply_parse.c: replies that must be refused
 * (wrong envelope, a body member missing, of the wrong type or out of range,
 * the body of another command) while unknown members are ignored; the reply
 * examples of PROTOCOL.md; robustness against garbage. What it reads back of
 * each reply the daemon writes: the round trips of test-proto_reply.c.
 * Links proto_reply_parse.c, proto_json.c, proto_reply.c (which writes the
 * replies the robustness test mangles), common/ and cJSON.
 * Exit status 0 on success; every failed check is printed as FILE:LINE. */
#include "proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto_test_util.h"

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

/* ---- refused replies ---------------------------------------------------- */

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

/* A push target of status as offcpud writes it, with field skip (an index
 * into its fields; -1: none) left out or, with spoil, of the wrong type.
 * Returns whether skip is one of its fields. */
static bool push_target_json(char *buf, size_t size, int skip, bool spoil)
{
	static const char *const fields[][2] = {
		{ "name", "\"grafana\"" },
		{ "api", "\"pyroscope\"" },
		{ "url", "\"http://p:4040\"" },
		{ "state", "\"idle\"" },
		{ "last_success_ms", "1" },
		{ "lag_windows", "2" },
		{ "lag_ms", "3" },
		{ "sent", "4" },
		{ "set_aside", "5" },
		{ "lost", "6" },
		{ "retries", "7" },
		{ "bytes_sent", "8" },
		{ "next_try_ms", "9" },
		{ "backfill_windows", "10" },
		{ "last_error", "\"\"" },
	};
	int n = sizeof(fields) / sizeof(fields[0]);
	size_t len = 0;

	buf[len++] = '{';
	for (int i = 0; i < n; i++) {
		/* strings become numbers, numbers strings or fractions */
		const char *bad = fields[i][1][0] == '"' ? "1" : i % 2 ? "\"1\"" : "1.5";

		if (i == skip && !spoil)
			continue;
		len += snprintf(buf + len, size - len, "%s\"%s\":%s", len > 1 ? "," : "",
				fields[i][0], i == skip ? bad : fields[i][1]);
	}
	snprintf(buf + len, size - len, "}");
	return skip < n;
}

/* status's "push": optional (older daemons), but whole where it is there;
 * and the push reply. */
static void test_reply_push_invalid(void)
{
	static const char st[] = "\"version\":\"1\",\"uptime_s\":1,\"pid\":1,"
				 "\"tracepoint\":\"raw_tp\",\"programs\":[],\"slots_active\":0,"
				 "\"slots_max\":1,\"captures_running\":0,\"switches_per_s\":0,"
				 "\"recorded_per_s\":0,\"counters\":{}";
	static const char *const bad_push[] = {
		"[]",
		"{}",
		"{\"configured\":false}",
		"{\"targets\":[]}",
		"{\"configured\":0,\"targets\":[]}",
		"{\"configured\":true,\"targets\":{}}",
		"{\"configured\":true,\"targets\":[1]}",
	};
	static const char *const bad_result[] = {
		"\"to_ms\":2,\"targets\":[]",
		"\"from_ms\":1,\"targets\":[]",
		"\"from_ms\":1,\"to_ms\":2",
		"\"from_ms\":1.5,\"to_ms\":2,\"targets\":[]",
		"\"from_ms\":1,\"to_ms\":2,\"targets\":[\"a\",1]",
		"\"from_ms\":1,\"to_ms\":2,\"targets\":\"a\"",
	};
	struct proto_reply *reply = NULL;
	char target[512], buf[2048];

	/* Without "push": not reported. */
	snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{%s}}", st);
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	if (reply)
		CHECK(!reply->status.push && !reply->status.n_push &&
		      !reply->status.push_configured);
	proto_reply_free(reply);

	/* The reference parses, unknown fields and all. */
	push_target_json(target, sizeof(target), -1, false);
	snprintf(buf, sizeof(buf),
		 "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{%s,\"push\":"
		 "{\"configured\":true,\"targets\":[%s],\"new\":1}}}",
		 st, target);
	reply = NULL;
	CHECK_MSG(proto_reply_parse(buf, strlen(buf), &reply) == 0, "('%s')", buf);
	if (reply && reply->status.n_push == 1) {
		CHECK(reply->status.push_configured);
		CHECK_STR(reply->status.push[0].url, "http://p:4040");
		CHECK(reply->status.push[0].backfill_windows == 10);
	} else {
		CHECK_MSG(0, "(no push target in '%s')", buf);
	}
	proto_reply_free(reply);

	for (size_t i = 0; i < sizeof(bad_push) / sizeof(bad_push[0]); i++) {
		snprintf(buf, sizeof(buf),
			 "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{%s,\"push\":%s}}", st,
			 bad_push[i]);
		REPLY_BAD(buf);
	}
	for (int i = 0; push_target_json(target, sizeof(target), i, false); i++) {
		for (int spoil = 0; spoil < 2; spoil++) {
			push_target_json(target, sizeof(target), i, spoil);
			snprintf(buf, sizeof(buf),
				 "{\"v\":1,\"ok\":true,\"cmd\":\"status\",\"status\":{%s,"
				 "\"push\":{\"configured\":true,\"targets\":[%s]}}}",
				 st, target);
			REPLY_BAD(buf);
		}
	}

	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"push\"}");
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"push\",\"push\":[]}");
	for (size_t i = 0; i < sizeof(bad_result) / sizeof(bad_result[0]); i++) {
		snprintf(buf, sizeof(buf), "{\"v\":1,\"ok\":true,\"cmd\":\"push\",\"push\":{%s}}",
			 bad_result[i]);
		REPLY_BAD(buf);
	}
	/* The cmd decides which body is read. */
	REPLY_BAD("{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"push\":{\"from_ms\":1,"
		  "\"to_ms\":2,\"targets\":[]}}");
}

/* ---- PROTOCOL.md -------------------------------------------------------- */

static void reply_example(size_t lineno, const char *l, const char *next)
{
	struct proto_reply *reply = NULL;

	(void)next;
	CHECK_MSG(proto_reply_parse(l, strlen(l), &reply) == 0,
		  "(PROTOCOL.md:%zu: reply '%s' does not parse)", lineno, l);
	proto_reply_free(reply);
}

/* Every reply example in PROTOCOL.md's code blocks parses ("< " lines, and
 * lines of ```json blocks with "ok"); its requests: test-proto_request. */
static void test_protocol_examples(void)
{
	size_t n = protocol_examples(PROTOCOL_EXAMPLE_REPLY, reply_example);

	CHECK_MSG(n >= 20, "(only %zu reply examples found in %s)", n, protocol_md_path());
}

/* ---- robustness --------------------------------------------------------- */

static void reply_garbage(const char *buf, size_t len, bool mutated)
{
	struct proto_reply *reply = NULL;

	(void)mutated;
	if (proto_reply_parse(buf, len, &reply) == 0)
		proto_reply_free(reply);
}

/* Every prefix and many single-byte mutations of real lines, requests and
 * replies, must be handled without crashing (the sanitizers turn any slip
 * into a failure); test-proto_request feeds the same to the request parser. */
static void test_garbage(void)
{
	garbage_feed(reply_garbage);

	/* Deep nesting is refused by cJSON's depth limit, not by the stack. */
	{
		char *deep = deep_line(100000);
		struct proto_reply *reply = NULL;

		if (!deep)
			return;
		CHECK(proto_reply_parse(deep, strlen(deep), &reply) == -EINVAL);
		free(deep);
	}
}

int main(void)
{
	test_reply_invalid();
	test_reply_invalid_new();
	test_reply_output_invalid();
	test_reply_hist_invalid();
	test_reply_blocked_invalid();
	test_reply_push_invalid();
	test_protocol_examples();
	test_garbage();

	if (CHECK_DONE())
		return 1;
	printf("test-proto_reply_parse: all checks passed\n");
	return 0;
}
