/* Unit test of proto/proto_reply.c: each reply the daemon writes, checked
 * as text (one valid UTF-8 line, exact members where the wire format is
 * pinned, JSON rows read with cJSON) and in round trips through
 * proto_reply_parse(), which reads back what the writer wrote. The parser's
 * refusals: test-proto_reply_parse.c.
 * Links proto_reply.c, proto_reply_parse.c, proto_json.c, common/ (the
 * kinds' names) and cJSON.
 * Exit status 0 on success; every failed check is printed as FILE:LINE. */
#include "proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "proto_test_util.h"

static bool starts_with(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

/* ---- replies ------------------------------------------------------------ */

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

	/* An error the parser wrote, quoting client bytes, goes out intact: its
	 * message for {"v":1,"cmd":"capture","\xff\n\"x":1} (test-proto_request
	 * checks that it is this one). */
	{
		const char *err = "unknown field '\xff\n\"x' for command 'capture'";

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
		.heap_in_use_bytes = 9000001,
		.heap_free_bytes = 9000002,
		.store_cache_bytes = 9000003,
		.symbol_cache_bytes = 9000004,
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
		CHECK(p->heap_in_use_bytes == 9000001 && p->heap_free_bytes == 9000002 &&
		      p->store_cache_bytes == 9000003 && p->symbol_cache_bytes == 9000004);
		CHECK(p->n_kinds == 3);
		if (p->n_kinds == 3) {
			CHECK_STR(p->kinds[0].name, "offcpu");
			CHECK_STR(p->kinds[0].state, "in use");
			CHECK_STR(p->kinds[0].detail, "by the continuous profile");
			CHECK_STR(p->kinds[1].state, "unavailable");
			CHECK_STR(p->kinds[1].detail,
				  "tracefs is not mounted at /sys/kernel/tracing");
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
		CHECK(!reply->status.kstack_cache &&
		      !strcmp(reply->status.kstack_cache_reason, ""));
		CHECK(reply->status.switches_per_s == 0 && reply->status.recorded_per_s == 0);
		/* Pushing off: reported, as an empty list. */
		CHECK(reply->status.push != NULL && reply->status.n_push == 0 &&
		      !reply->status.push_configured);
	}
	CHECK_MSG(s && strstr(s, ",\"push\":{\"configured\":false,\"targets\":[]}"), "('%s')",
		  STR(s));
	proto_reply_free(reply);
	free(s);
}

/* status's push targets: every field, real values, back as they went. */
static void test_reply_status_push(void)
{
	const struct proto_push_status targets[] = {
		{
			.name = "grafana",
			.api = "pyroscope",
			.url = "https://pyroscope.example.com:4040",
			.state = "retrying",
			.last_success_ms = INT64_C(1795305600123),
			.lag_windows = 3,
			.lag_ms = 30000,
			.sent = 8640,
			.set_aside = 2,
			.lost = 1,
			.retries = 7,
			.bytes_sent = UINT64_C(123456789012),
			.next_try_ms = INT64_C(1795305630000),
			.backfill_windows = 360,
			.last_error = "HTTP 429: \"too many requests\"\n",
		},
		{
			.name = "otel",
			.api = "otlp",
			.url = "http://collector:4318",
			.state = "idle",
		},
	};
	struct proto_status st = {
		.version = "1",
		.tracepoint = "tp_btf",
		.push = targets,
		.n_push = 2,
		.push_configured = true,
	};
	struct proto_reply *reply = NULL;
	char *s = proto_reply_status(&st);

	CHECK_LINE(s);
	CHECK_MSG(s && strstr(s, "\"push\":{\"configured\":true,\"targets\":[{\"name\":"
				 "\"grafana\",\"api\":\"pyroscope\",\"url\":"
				 "\"https://pyroscope.example.com:4040\",\"state\":\"retrying\","
				 "\"last_success_ms\":1795305600123,\"lag_windows\":3,"
				 "\"lag_ms\":30000,\"sent\":8640,\"set_aside\":2,\"lost\":1,"
				 "\"retries\":7,\"bytes_sent\":123456789012,"
				 "\"next_try_ms\":1795305630000,\"backfill_windows\":360,"
				 "\"last_error\":\"HTTP 429: \\\"too many requests\\\"\\n\"},"),
		  "('%s')", STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply && reply->status.n_push == 2) {
		const struct proto_status *p = &reply->status;
		const struct proto_push_status *a = &p->push[0], *b = &p->push[1];

		CHECK(p->push_configured);
		CHECK_STR(a->name, "grafana");
		CHECK_STR(a->api, "pyroscope");
		CHECK_STR(a->url, "https://pyroscope.example.com:4040");
		CHECK_STR(a->state, "retrying");
		CHECK(a->last_success_ms == INT64_C(1795305600123));
		CHECK(a->lag_windows == 3 && a->lag_ms == 30000);
		CHECK(a->sent == 8640 && a->set_aside == 2 && a->lost == 1);
		CHECK(a->retries == 7 && a->bytes_sent == UINT64_C(123456789012));
		CHECK(a->next_try_ms == INT64_C(1795305630000));
		CHECK(a->backfill_windows == 360);
		CHECK_STR(a->last_error, "HTTP 429: \"too many requests\"\n");
		CHECK_STR(b->name, "otel");
		CHECK_STR(b->api, "otlp");
		CHECK_STR(b->url, "http://collector:4318");
		CHECK_STR(b->state, "idle");
		CHECK(!b->last_success_ms && !b->lag_windows && !b->lag_ms && !b->sent &&
		      !b->set_aside && !b->lost && !b->retries && !b->bytes_sent &&
		      !b->next_try_ms && !b->backfill_windows);
		CHECK_STR(b->last_error, ""); /* NULL: none */
	} else {
		CHECK_MSG(0, "(push targets did not round-trip: '%s')", STR(s));
	}
	proto_reply_free(reply);
	free(s);
}

/* A push request's reply: the range, the targets, the count. */
static void test_reply_push(void)
{
	const char *const targets[] = { "grafana", "otel" };
	struct proto_push_result res = {
		.from_ms = INT64_C(1795305600000),
		.to_ms = INT64_C(1795309200000),
		.targets = targets,
		.n_targets = 2,
	};
	struct proto_reply *reply = NULL;
	char *s = proto_reply_push(&res);

	CHECK_LINE(s);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"ok\":true,\"cmd\":\"push\",\"push\":{"
				  "\"from_ms\":1795305600000,\"to_ms\":1795309200000,"
				  "\"targets\":[\"grafana\",\"otel\"]}}\n"),
		  "('%s')", STR(s));
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply) {
		const struct proto_push_result *p = &reply->push;

		CHECK(reply->ok && reply->cmd == PROTO_CMD_PUSH);
		CHECK(p->from_ms == INT64_C(1795305600000) && p->to_ms == INT64_C(1795309200000));
		CHECK(p->n_targets == 2);
		if (p->n_targets == 2) {
			CHECK_STR(p->targets[0], "grafana");
			CHECK_STR(p->targets[1], "otel");
		}
	}
	proto_reply_free(reply);
	free(s);

	/* No target: still a reply. */
	res.n_targets = 0;
	s = proto_reply_push(&res);
	reply = NULL;
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK(reply->push.n_targets == 0 && reply->push.targets != NULL);
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

/* The line a capture with notify_started sends before its reply. */
static void test_reply_capture_started(void)
{
	struct proto_capture_started st = { .id = 12, .seconds = 3600 };
	struct proto_reply *reply = NULL;
	char *s = proto_reply_capture_started(&st);

	CHECK_STR(s, "{\"v\":1,\"ok\":true,\"cmd\":\"capture\",\"started\":{\"id\":12,"
		     "\"seconds\":3600}}\n");
	CHECK_MSG(s && proto_reply_parse(s, strlen(s), &reply) == 0, "('%s')", STR(s));
	if (reply)
		CHECK(reply->ok && reply->cmd == PROTO_CMD_CAPTURE && reply->has_started &&
		      reply->started.id == 12 && reply->started.seconds == 3600);
	proto_reply_free(reply);
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

static void test_reply_samples(void)
{
	const char *const u0[] = { "_start", "main", "do_read" };
	const char *const k0[] = { "entry_SYSCALL_64", "ksys_read", "schedule" };
	const char *const k1[] = { "ret_from_fork", "worker_thread\xff" };
	const struct proto_sample samples[] = {
		{ .comm = "cat", .tgid = 100, .pid = 101, .state = "S", .value_ns = 5000, .count = 3,
		  .ustack = u0, .n_ustack = 3, .kstack = k0, .n_kstack = 3,
		  .cgroup = "/system.slice/docker-ab12.scope", .unit = "docker-ab12.scope",
		  .container = "ab12", .runtime = "docker", .ns_pid = 1 },
		{ .comm = "kworker/0:1", .tgid = 7, .pid = 7, .state = "D", .value_ns = 250,
		  .count = 1, .kstack = k1, .n_kstack = 2, .kind = "runq", .cgroup = "" },
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
		/* Who, where known; a pod not known is left out. */
		CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "cgroup")),
			  "/system.slice/docker-ab12.scope");
		CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "unit")), "docker-ab12.scope");
		CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "container")), "ab12");
		CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(el, "runtime")), "docker");
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(el, "ns_pid")) == 1);
		CHECK(!cJSON_GetObjectItem(el, "pod"));

		el = cJSON_GetArrayItem(arr, 1);
		CHECK(!cJSON_GetObjectItem(el, "cgroup") && !cJSON_GetObjectItem(el, "ns_pid"));
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

static void test_reply_windows(void)
{
	const struct proto_window_info w[] = {
		{ 41, INT64_C(1795309200000), INT64_C(1795309210000), 0, 12, 40, 12595, NULL, NULL },
		{ 42, INT64_C(1795309203117), INT64_C(1795309205118), 7, 2, 2, 930, "wakeup",
		  "pid 12, comm x" },
		/* Extremes: a clock before 1970, counters past 2^53. */
		{ UINT64_MAX, INT64_C(-1000), INT64_C(9007199254740991), UINT64_C(9007199254740993),
		  0, 0, UINT64_MAX, NULL, NULL },
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
	/* A capture's kind and targets; the continuous window has neither. */
	CHECK_MSG(s && strstr(s, "\"bytes\":930,\"kind\":\"wakeup\",\"targets\":\"pid 12, "
				 "comm x\"}"),
		  "('%s')", STR(s));
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
			CHECK(!reply->windows[0].kind && !reply->windows[0].targets);
			CHECK(reply->windows[1].kind && !strcmp(reply->windows[1].kind, "wakeup"));
			CHECK(reply->windows[1].targets &&
			      !strcmp(reply->windows[1].targets, "pid 12, comm x"));
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
		{ .comm = "app\xff", .tgid = 4321, .pid = 4322, .state = "S", .value_ns = 1900000000,
		  .count = 19, .ustack = u0, .n_ustack = 3, .kstack = k0, .n_kstack = 3,
		  .kind = "offcpu" },
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

/* ---- kinds, histograms, blocked threads and latency --------------------- */

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

/* latency: formatted, then its figures parsed back. */
static void test_reply_latency(void)
{
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
	char *line;

	line = proto_reply_latency(&res);
	CHECK(line && strstr(line, "\"hist_log2_ns\":[0,0,0,2],") &&
	      strstr(line, "\"children\":[{\"name\":\"lookup\",\"count\":2,\"total_ns\":700,"
			   "\"off_cpu_ns\":500}]") &&
	      strstr(line, "\"timeline\":[{\"tid\":9,\"start_ns\":1000,\"latency_ns\":350,"));
	CHECK(line && proto_reply_parse(line, strlen(line), &reply) == 0 &&
	      reply->cmd == PROTO_CMD_LATENCY && reply->latency.calls == 2 &&
	      reply->latency.total_ns == 20 && reply->latency.incomplete == 3 &&
	      !strcmp(reply->latency.func, "handle"));
	proto_reply_free(reply);
	free(line);
}

/* Notes: written only where there are some, parsed back in order. */
static void test_reply_notes(void)
{
	const char *const notes[] = { "no stored window starts in that range",
				      "a \"quoted\" note; with \\ and \u00e9" };
	struct proto_export_result ex = { .from_ms = 1, .to_ms = 2, .folded = "", .kind = "wakeup",
					  .notes = notes, .n_notes = 2 };
	struct proto_capture_result cap = { .id = 3, .folded = "", .notes = notes, .n_notes = 1 };
	struct proto_reply *reply = NULL;
	char *s = proto_reply_export(&ex, 0);

	CHECK_MSG(s && strstr(s, "\"kind\":\"wakeup\",\"notes\":[\"no stored window starts in "
				 "that range\","),
		  "('%s')", STR(s));
	CHECK(s && proto_reply_parse(s, strlen(s), &reply) == 0);
	if (reply) {
		CHECK(reply->export.n_notes == 2);
		CHECK_STR(reply->export.kind, "wakeup");
		if (reply->export.n_notes == 2) {
			CHECK_STR(reply->export.notes[0], notes[0]);
			CHECK_STR(reply->export.notes[1], notes[1]);
		}
	}
	proto_reply_free(reply);
	free(s);

	reply = NULL;
	s = proto_reply_capture(&cap, 0);
	CHECK(s && proto_reply_parse(s, strlen(s), &reply) == 0);
	CHECK(reply && reply->capture.n_notes == 1);
	if (reply && reply->capture.n_notes == 1)
		CHECK_STR(reply->capture.notes[0], notes[0]);
	proto_reply_free(reply);
	free(s);

	/* None: no field, and none parsed. */
	cap.n_notes = 0;
	reply = NULL;
	s = proto_reply_capture(&cap, 0);
	CHECK_MSG(s && !strstr(s, "notes"), "('%s')", STR(s));
	CHECK(s && proto_reply_parse(s, strlen(s), &reply) == 0);
	CHECK(reply && reply->capture.n_notes == 0 && !reply->capture.notes);
	proto_reply_free(reply);
	free(s);

	s = proto_notes_json(notes, 1);
	CHECK_MSG(s && !strcmp(s, "{\"v\":1,\"ok\":true,\"cmd\":\"export\",\"notes\":[\"no stored "
				  "window starts in that range\"]}\n"),
		  "('%s')", STR(s));
	free(s);
}

int main(void)
{
	test_reply_notes();
	test_reply_error();
	test_reply_status();
	test_reply_status_push();
	test_reply_push();
	test_reply_capture();
	test_reply_capture_started();
	test_capture_request_stats_reply();
	test_reply_samples();
	test_reply_windows();
	test_reply_export();
	test_reply_output();
	test_reply_sample_kinds();
	test_reply_hist();
	test_reply_blocked();
	test_reply_latency();

	if (CHECK_DONE())
		return 1;
	printf("test-proto_reply: all checks passed\n");
	return 0;
}
