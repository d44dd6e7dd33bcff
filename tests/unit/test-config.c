/*
 * Unit test of daemon/config.c alone. argv[1]: path of etc/offcpud.conf
 * (default "etc/offcpud.conf", relative to the source root).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "proto.h"
#include "thread_state.h"

static char err[512];

/* Parses text over defaults into *c; returns config_parse()'s result. */
static int parse(struct config *c, const char *text)
{
	config_init(c);
	memset(err, 'x', sizeof(err)); /* so a missing terminator shows */
	return config_parse(c, "test.conf", text, err, sizeof(err));
}

static int config_equal(const struct config *a, const struct config *b)
{
	return !strcmp(a->socket_path, b->socket_path) && a->socket_mode == b->socket_mode &&
	       !strcmp(a->socket_group, b->socket_group) &&
	       !strcmp(a->allowed_users, b->allowed_users) &&
	       !strcmp(a->allowed_groups, b->allowed_groups) &&
	       !strcmp(a->capture_users, b->capture_users) &&
	       !strcmp(a->capture_groups, b->capture_groups) &&
	       a->drain_interval_ms == b->drain_interval_ms &&
	       a->max_capture_seconds == b->max_capture_seconds &&
	       a->max_request_bytes == b->max_request_bytes && a->max_clients == b->max_clients &&
	       a->client_timeout_s == b->client_timeout_s && a->max_captures == b->max_captures &&
	       a->max_reply_bytes == b->max_reply_bytes &&
	       a->agg_map_entries == b->agg_map_entries &&
	       a->stack_map_entries == b->stack_map_entries && a->trace_self == b->trace_self &&
	       a->tracepoint == b->tracepoint && a->continuous == b->continuous &&
	       a->continuous_kinds == b->continuous_kinds &&
	       a->continuous_split_runq == b->continuous_split_runq &&
	       a->oncpu_frequency == b->oncpu_frequency &&
	       a->continuous_states == b->continuous_states &&
	       a->continuous_min_block_us == b->continuous_min_block_us &&
	       !strcmp(a->continuous_requests, b->continuous_requests) &&
	       a->window_seconds == b->window_seconds && !strcmp(a->database, b->database) &&
	       a->max_db_bytes == b->max_db_bytes && a->max_age_s == b->max_age_s &&
	       !strcmp(a->pt_dir, b->pt_dir) && a->pt_keep == b->pt_keep &&
	       a->pt_buffer_bytes == b->pt_buffer_bytes && a->pt_max_bytes == b->pt_max_bytes &&
	       a->pt_max_threads == b->pt_max_threads && a->pt_event == b->pt_event &&
	       a->n_push == b->n_push && !strcmp(a->push_host, b->push_host) &&
	       a->push_max_bytes_in_flight == b->push_max_bytes_in_flight;
}

/* A config differing from the defaults in every field. */
static void config_scramble(struct config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->socket_path, "/scrambled");
	c->socket_mode = 0123;
	strcpy(c->socket_group, "scrambled");
	strcpy(c->allowed_users, "scrambled");
	strcpy(c->allowed_groups, "scrambled");
	strcpy(c->capture_users, "scrambled");
	strcpy(c->capture_groups, "scrambled");
	c->drain_interval_ms = 7;
	c->max_capture_seconds = 7;
	c->max_request_bytes = 7;
	c->max_clients = 7;
	c->client_timeout_s = 7;
	c->max_captures = 7;
	c->max_reply_bytes = 7;
	c->agg_map_entries = 7;
	c->stack_map_entries = 7;
	c->trace_self = true;
	c->tracepoint = CONFIG_TRACEPOINT_RAW_TP;
	c->continuous = false;
	c->continuous_kinds = 0x6;
	c->continuous_split_runq = false;
	c->oncpu_frequency = 7;
	c->continuous_states = 0x5;
	c->continuous_min_block_us = 7;
	strcpy(c->continuous_requests, "scrambled@/x");
	c->window_seconds = 7;
	strcpy(c->database, "/scrambled.db");
	c->max_db_bytes = 7;
	c->max_age_s = 7;
	strcpy(c->pt_dir, "/scrambled");
	c->pt_keep = 7;
	c->pt_buffer_bytes = 7;
	c->pt_max_bytes = 7;
	c->pt_max_threads = 7;
	c->pt_event = CONFIG_PT_EVENT_SIDEBAND;
	/* n_push stays 0: no key sets it back (targets are made, not set). */
	strcpy(c->push_host, "scrambled");
	c->push_max_bytes_in_flight = 7;
}

static void test_defaults(void)
{
	struct config c;

	config_init(&c);
	CHECK_STR(c.socket_path, "/run/offcpud/offcpud.sock");
	CHECK(c.socket_mode == 0660);
	CHECK_STR(c.socket_group, "offcpu");
	CHECK(c.drain_interval_ms == 1000);
	CHECK(c.max_capture_seconds == 3600);
	CHECK(c.max_request_bytes == 65536);
	CHECK(c.max_clients == 64);
	CHECK(c.agg_map_entries == 16384);
	CHECK(c.stack_map_entries == 8192);
	CHECK(!c.trace_self);
	CHECK(c.tracepoint == CONFIG_TRACEPOINT_AUTO);
	CHECK(c.continuous);
	CHECK(c.continuous_kinds == 1u << PROTO_KIND_OFFCPU);
	CHECK(c.continuous_split_runq);
	CHECK(c.oncpu_frequency == 99);
	CHECK(c.continuous_states == THREAD_STATE_ALL);
	CHECK(c.continuous_min_block_us == 0);
	CHECK(c.window_seconds == 10);
	CHECK_STR(c.database, "/var/lib/offcpud/offcpud.db");
	CHECK(c.max_db_bytes == 256ull << 20);
	CHECK(c.max_age_s == 86400);
	CHECK(c.stack_cache);
	CHECK(c.stack_cache_audit == 64);
	CHECK(c.python_frames);
}

static void test_empty(void)
{
	struct config c, def;

	config_init(&def);
	CHECK(parse(&c, "") == 0);
	CHECK(config_equal(&c, &def));
	CHECK_STR(err, "");
	CHECK(parse(&c, "\n\n   \n\t\n") == 0);
	CHECK(config_equal(&c, &def));
	CHECK(parse(&c, "# only a comment\n   # indented\n") == 0);
	CHECK(config_equal(&c, &def));
	CHECK(parse(&c, "# no final newline") == 0);
	CHECK(config_equal(&c, &def));
}

/* Plain decimal keys; size is that of the field (uint32_t or uint64_t). */
static const struct {
	const char *key;
	size_t offset, size;
	uint64_t min, max;
} int_keys[] = {
#define INT_KEY(f, lo, hi)                                                                         \
	{                                                                                          \
#f, offsetof(struct config, f), sizeof(((struct config *)0)->f), lo, hi            \
	}
	INT_KEY(drain_interval_ms, 100, 60000),
	INT_KEY(max_capture_seconds, 1, 86400),
	INT_KEY(max_request_bytes, 1024, 16777216),
	INT_KEY(max_clients, 1, 4096),
	INT_KEY(max_captures, 1, 15),
	INT_KEY(agg_map_entries, 64, 1048576),
	INT_KEY(stack_map_entries, 64, 1048576),
	INT_KEY(window_seconds, 1, 3600),
	INT_KEY(oncpu_frequency, 0, 10000),
	INT_KEY(continuous_min_block_us, 0, 60000000),
	INT_KEY(pt_keep, 1, 100000),
	INT_KEY(pt_max_threads, 1, 4096),
	INT_KEY(stack_cache_audit, 1, 1048576),
#undef INT_KEY
};

static uint64_t int_field(const struct config *c, size_t i)
{
	const char *p = (const char *)c + int_keys[i].offset;

	return int_keys[i].size == 4 ? *(const uint32_t *)p : *(const uint64_t *)p;
}

static void test_integers(void)
{
	static const char *const garbage[] = {
		"",
		"+500",
		"-500",
		"500x",
		"x500",
		"5 00",
		"0x200",
		"1e3",
		"500.0",
		"5\"00",
		"'500'",
		"99999999999999999999999",
		"4294967296",
		"4294967396",		/* 2^32 + 100: wraps into range if overflow is missed */
		"18446744073709551616", /* 2^64 */
		"18446744073709551716", /* 2^64 + 100 */
		"500K",
		"500 s",
	};
	char text[128], want[256];
	struct config c;

	for (size_t i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
		const char *key = int_keys[i].key;
		uint64_t min = int_keys[i].min, max = int_keys[i].max;

		CHECK(int_keys[i].size == 4 || int_keys[i].size == 8);
		snprintf(want, sizeof(want),
			 "test.conf:1: bad value for '%s': must be an integer from %llu to %llu",
			 key, (unsigned long long)min, (unsigned long long)max);

		snprintf(text, sizeof(text), "%s = %llu\n", key, (unsigned long long)min);
		CHECK(parse(&c, text) == 0);
		CHECK(int_field(&c, i) == min);
		snprintf(text, sizeof(text), "%s=%llu", key, (unsigned long long)max);
		CHECK(parse(&c, text) == 0);
		CHECK(int_field(&c, i) == max);
		snprintf(text, sizeof(text), "  %s\t=\t0%llu  \n", key,
			 (unsigned long long)min); /* leading zero */
		CHECK(parse(&c, text) == 0);
		CHECK(int_field(&c, i) == min);
		snprintf(text, sizeof(text), "%s = \"%llu\"\n", key, (unsigned long long)max);
		CHECK(parse(&c, text) == 0);
		CHECK(int_field(&c, i) == max);

		if (min > 0) {
			snprintf(text, sizeof(text), "%s = %llu\n", key,
				 (unsigned long long)min - 1);
			CHECK(parse(&c, text) == -EINVAL);
			CHECK_STR(err, want);
		}
		snprintf(text, sizeof(text), "%s = %llu\n", key, (unsigned long long)max + 1);
		CHECK(parse(&c, text) == -EINVAL);
		CHECK_STR(err, want);
		for (size_t j = 0; j < sizeof(garbage) / sizeof(garbage[0]); j++) {
			snprintf(text, sizeof(text), "%s = %s\n", key, garbage[j]);
			CHECK(parse(&c, text) == -EINVAL);
			CHECK_STR(err, want);
		}
	}
}

static void test_mode(void)
{
	static const char *const bad[] = { "",	   "1000",  "0778", "8",	 "-1",
					   "+660", "0x1a0", "66 0", "rw-rw----", "07777" };
	const char *want = "test.conf:1: bad value for 'socket_mode': must be an octal mode "
			   "from 0 to 0777";
	char text[128];
	struct config c;

	CHECK(parse(&c, "socket_mode = 0660") == 0);
	CHECK(c.socket_mode == 0660);
	CHECK(parse(&c, "socket_mode = 640") == 0);
	CHECK(c.socket_mode == 0640);
	CHECK(parse(&c, "socket_mode = 0") == 0);
	CHECK(c.socket_mode == 0);
	CHECK(parse(&c, "socket_mode = 0777") == 0);
	CHECK(c.socket_mode == 0777);
	CHECK(parse(&c, "socket_mode = 00600") == 0);
	CHECK(c.socket_mode == 0600);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "socket_mode = %s", bad[i]);
		CHECK(parse(&c, text) == -EINVAL);
		CHECK_STR(err, want);
	}
}

static void test_bool(void)
{
	static const struct {
		const char *text;
		bool value;
	} good[] = {
		{ "true", true },   { "yes", true }, { "1", true },  { "TRUE", true },
		{ "false", false }, { "no", false }, { "0", false }, { "No", false },
	};
	static const char *const bad[] = { "", "2", "truth", "y", "n", "on", "off", "01", "true!" };
	static const struct {
		const char *key;
		size_t offset;
	} keys[] = {
		{ "trace_self", offsetof(struct config, trace_self) },
		{ "continuous", offsetof(struct config, continuous) },
		{ "continuous_split_runq", offsetof(struct config, continuous_split_runq) },
		{ "stack_cache", offsetof(struct config, stack_cache) },
		{ "python_frames", offsetof(struct config, python_frames) },
	};
	char text[128], want[256];
	struct config c;

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *key = keys[k].key;
		const bool *field = (const bool *)((const char *)&c + keys[k].offset);

		snprintf(want, sizeof(want),
			 "test.conf:1: bad value for '%s': must be true, false, yes, no, 1 or 0",
			 key);
		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
			/* Start from the opposite value so a no-op cannot pass. */
			snprintf(text, sizeof(text), "%s = %s\n%s = %s\n", key,
				 good[i].value ? "false" : "true", key, good[i].text);
			CHECK(parse(&c, text) == 0);
			CHECK(*field == good[i].value);
		}
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(text, sizeof(text), "%s = %s", key, bad[i]);
			CHECK(parse(&c, text) == -EINVAL);
			CHECK_STR(err, want);
		}
	}
}

static void test_choice(void)
{
	struct config c;

	CHECK(parse(&c, "tracepoint = raw_tp\n") == 0);
	CHECK(c.tracepoint == CONFIG_TRACEPOINT_RAW_TP);
	CHECK(parse(&c, "tracepoint = tp_btf\n") == 0);
	CHECK(c.tracepoint == CONFIG_TRACEPOINT_TP_BTF);
	CHECK(parse(&c, "tracepoint = auto\n") == 0);
	CHECK(c.tracepoint == CONFIG_TRACEPOINT_AUTO);
	CHECK(parse(&c, "tracepoint = kprobe\n") == -EINVAL);
	CHECK_STR(err,
		  "test.conf:1: bad value for 'tracepoint': must be one of auto, tp_btf, raw_tp");
	CHECK(parse(&c, "tracepoint =\n") == -EINVAL);
}

static void test_path(void)
{
	static const struct {
		const char *key;
		size_t offset, size;
	} keys[] = {
		{ "socket_path", offsetof(struct config, socket_path), 108 }, /* sun_path */
		{ "database", offsetof(struct config, database), 256 },
	};
	char text[512], path[300], want[256];
	struct config c;

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *key = keys[k].key;
		const char *field = (const char *)&c + keys[k].offset;
		size_t size = keys[k].size;

		snprintf(want, sizeof(want),
			 "test.conf:1: bad value for '%s': must be an absolute path shorter than "
			 "%zu bytes",
			 key, size);
		snprintf(text, sizeof(text), "%s = /tmp/x", key);
		CHECK(parse(&c, text) == 0);
		CHECK_STR(field, "/tmp/x");
		snprintf(text, sizeof(text), "%s = /tmp/with space/x  ", key);
		CHECK(parse(&c, text) == 0);
		CHECK_STR(field, "/tmp/with space/x");
		snprintf(text, sizeof(text), "%s = \"/tmp/#not a comment \" # a comment", key);
		CHECK(parse(&c, text) == 0);
		CHECK_STR(field, "/tmp/#not a comment ");

		/* size - 1 bytes plus the NUL fill the field exactly. */
		memset(path, 'a', sizeof(path));
		path[0] = '/';
		path[size - 1] = '\0';
		snprintf(text, sizeof(text), "%s = %s", key, path);
		CHECK(parse(&c, text) == 0);
		CHECK_STR(field, path);
		path[size - 1] = 'a';
		path[size] = '\0';
		snprintf(text, sizeof(text), "%s = %s", key, path);
		CHECK(parse(&c, text) == -EINVAL);
		CHECK_STR(err, want);

		static const char *const bad[] = {
			"relative.sock", "\" /leading-space\"", "", "\"\"", "# nothing",
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(text, sizeof(text), "%s = %s", key, bad[i]);
			CHECK(parse(&c, text) == -EINVAL);
			CHECK_STR(err, want);
		}
	}
}

static void test_states(void)
{
	static const struct {
		const char *text;
		uint32_t mask;
	} good[] = {
		{ "R,S,D,O", THREAD_STATE_ALL },
		{ "S", 1u << 1 },
		{ "D", 1u << 2 },
		{ "s,d", (1u << 1) | (1u << 2) },
		{ "running,sleeping", (1u << 0) | (1u << 1) },
		{ "Preempted, Interruptible , uninterruptible,\tother", THREAD_STATE_ALL },
		{ "\"S, D\"", (1u << 1) | (1u << 2) },
		{ "O,O,O", 1u << 3 },
	};
	static const char *const bad[] = {
		"",
		"\"\"",
		"X",
		"S,",
		",S",
		"S,,D",
		"S D",
		"S;D",
		"all",
		"R,S,D,O,Z",
		"sleep",
		"1",
		"S , ,D",
		/* longer than any list worth writing: refused, not cut */
		("R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,"
		 "R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O,R,S,D,O"),
	};
	const char *want = "test.conf:1: bad value for 'continuous_states': must be a "
			   "comma-separated list of thread states: R (running), S (sleeping), D "
			   "(disk), O (other)";
	char text[512];
	struct config c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "continuous_states = %s\n", good[i].text);
		CHECK_MSG(parse(&c, text) == 0, "%s: %s", good[i].text, err);
		CHECK_MSG(c.continuous_states == good[i].mask, "%s: %#x", good[i].text,
			  c.continuous_states);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "continuous_states = %s\n", bad[i]);
		CHECK_MSG(parse(&c, text) == -EINVAL, "%s", bad[i]);
		CHECK_STR(err, want);
	}
	/* A bad list leaves the earlier value. */
	c.continuous_states = 0x2;
	CHECK(config_parse(&c, "test.conf", "continuous_states = S,X\n", err, sizeof(err)) ==
	      -EINVAL);
	CHECK(c.continuous_states == 0x2);
}

static void test_kinds(void)
{
	static const struct {
		const char *text;
		uint32_t mask;
	} good[] = {
		{ "offcpu", 1u << PROTO_KIND_OFFCPU },
		{ "wakeup", 1u << PROTO_KIND_WAKEUP },
		{ "offwake", 1u << PROTO_KIND_OFFWAKE },
		{ "chain", 1u << PROTO_KIND_CHAIN },
		{ "runq", 1u << PROTO_KIND_RUNQ },
		{ "oncpu", 1u << PROTO_KIND_ONCPU },
		{ "offcpu,oncpu", (1u << PROTO_KIND_OFFCPU) | (1u << PROTO_KIND_ONCPU) },
		{ "offcpu,runq", (1u << PROTO_KIND_OFFCPU) | (1u << PROTO_KIND_RUNQ) },
		{ "offcpu, wakeup ,offwake,\tchain , runq", 0x1f },
		{ "OFFCPU,Chain", (1u << PROTO_KIND_OFFCPU) | (1u << PROTO_KIND_CHAIN) },
		{ "\"runq, offcpu\"", (1u << PROTO_KIND_OFFCPU) | (1u << PROTO_KIND_RUNQ) },
		{ "runq,runq", 1u << PROTO_KIND_RUNQ },
	};
	static const char *const bad[] = {
		"",	   "\"\"",	    "off-cpu",	   "offcpu,",
		",offcpu", "offcpu,,runq",  "offcpu runq", "offcpu;runq",
		"all",	   "none",	    "0",	   "1",
		"offcpus", "runq , ,chain", "\"offcpu",
	};
	const char *want = "test.conf:1: bad value for 'continuous_kinds': must be a "
			   "comma-separated list of profile kinds: offcpu, wakeup, offwake, "
			   "chain, runq, oncpu, bio, fileio";
	char text[256];
	struct config c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "continuous_kinds = %s\n", good[i].text);
		CHECK_MSG(parse(&c, text) == 0, "%s: %s", good[i].text, err);
		CHECK_MSG(c.continuous_kinds == good[i].mask, "%s: %#x", good[i].text,
			  c.continuous_kinds);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "continuous_kinds = %s\n", bad[i]);
		CHECK_MSG(parse(&c, text) == -EINVAL, "%s", bad[i]);
		if (strcmp(bad[i], "\"offcpu"))
			CHECK_STR(err, want);
	}
	/* A bad list leaves the earlier value. */
	c.continuous_kinds = 1u << PROTO_KIND_RUNQ;
	CHECK(config_parse(&c, "test.conf", "continuous_kinds = runq,x\n", err, sizeof(err)) ==
	      -EINVAL);
	CHECK(c.continuous_kinds == 1u << PROTO_KIND_RUNQ);
}

static void test_bytes(void)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
		{ "1048576", 1ull << 20 },
		{ "1MiB", 1ull << 20 },
		{ "1M", 1ull << 20 },
		{ "1m", 1ull << 20 },
		{ "1mib", 1ull << 20 },
		{ "1024K", 1ull << 20 },
		{ "1024KiB", 1ull << 20 },
		{ "1025k", 1025ull << 10 },
		{ "256MiB", 256ull << 20 },
		{ "256 MiB", 256ull << 20 },
		{ "256\tM", 256ull << 20 },
		{ "\"256M\"", 256ull << 20 },
		{ "0256M", 256ull << 20 },
		{ "3G", 3ull << 30 },
		{ "3gib", 3ull << 30 },
		{ "1024G", 1ull << 40 },
		{ "1T", 1ull << 40 },
		{ "1TiB", 1ull << 40 },
		{ "1099511627776", 1ull << 40 },
	};
	static const char *const bad[] = {
		"",
		"M",
		"MiB",
		"1048575", /* one byte short of 1 MiB */
		"1023K",   /* 1 KiB short */
		"1099511627777",
		"1025G",
		"2T",
		"0",
		"0M",
		"256MB", /* decimal or binary? refused rather than guessed */
		"256Mb",
		"256KB",
		"256 B",
		"256B",
		"256Mi",
		"256MiBs",
		"1.5G",
		"-1M",
		"+1M",
		"0x100000",
		"256M 1",
		"256 M iB",
		"1P",
		"16777216T",		/* overflows 2^64 once scaled */
		"18014398509481984K",	/* 2^54 KiB = 2^64 bytes */
		"18446744073709551616", /* 2^64 */
		"99999999999999999999999M",
		"1e6",
		"1M,",
	};
	const char *want = "test.conf:1: bad value for 'max_db_bytes': must be a size from 1MiB "
			   "to 1TiB: an integer with an optional suffix K, M, G or T (or KiB, MiB, "
			   "GiB, TiB; powers of 1024)";
	char text[256];
	struct config c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "max_db_bytes = %s\n", good[i].text);
		CHECK_MSG(parse(&c, text) == 0, "%s: %s", good[i].text, err);
		CHECK_MSG(c.max_db_bytes == good[i].bytes, "%s: %llu", good[i].text,
			  (unsigned long long)c.max_db_bytes);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "max_db_bytes = %s\n", bad[i]);
		CHECK_MSG(parse(&c, text) == -EINVAL, "%s", bad[i]);
		CHECK_STR(err, want);
	}
}

static void test_duration(void)
{
	static const struct {
		const char *text;
		uint64_t seconds;
	} good[] = {
		{ "60", 60 },
		{ "60s", 60 },
		{ "1m", 60 },
		{ "90m", 5400 },
		{ "24h", 86400 },
		{ "24 h", 86400 },
		{ "\"24h\"", 86400 },
		{ "1d", 86400 },
		{ "7d", 604800 },
		{ "365d", 31536000 },
		{ "8760h", 31536000 },
		{ "31536000", 31536000 },
		{ "31536000s", 31536000 },
		{ "525600m", 31536000 },
		{ "0090m", 5400 },
	};
	static const char *const bad[] = {
		"",
		"h",
		"59", /* under a minute */
		"59s",
		"0m",
		"366d",
		"31536001",
		"8761h",
		"24H", /* upper case: "1M" could mean a month */
		"1D",
		"1M",
		"1S",
		"1w",
		"1y",
		"1ms",
		"24hours",
		"24hr",
		"1min",
		"1h30m",
		"1.5h",
		"-1h",
		"+1h",
		"1e3",
		"0x3c",
		"18446744073709551616",
		"99999999999999999999999d",
		"213503982334601d", /* overflows 2^64 seconds once scaled */
	};
	const char *want =
		"test.conf:1: bad value for 'max_age': must be a duration from 1m to "
		"365d: an integer with an optional suffix s, m, h or d (seconds if none)";
	char text[256];
	struct config c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "max_age = %s\n", good[i].text);
		CHECK_MSG(parse(&c, text) == 0, "%s: %s", good[i].text, err);
		CHECK_MSG(c.max_age_s == good[i].seconds, "%s: %llu", good[i].text,
			  (unsigned long long)c.max_age_s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "max_age = %s\n", bad[i]);
		CHECK_MSG(parse(&c, text) == -EINVAL, "%s", bad[i]);
		CHECK_STR(err, want);
	}
	/* The key is max_age; the field's unit suffix is not part of it. */
	CHECK(parse(&c, "max_age_s = 60\n") == -EINVAL);
	CHECK_STR(err, "test.conf:1: unknown key 'max_age_s'");
}

static void test_group(void)
{
	const char *want = "test.conf:1: bad value for 'socket_group': must be empty or a group "
			   "name of at most 63 characters from A-Z a-z 0-9 _ . -";
	static const char *const bad[] = { "bad group",	  "bad/group", "\"a b\"",
					   "gr\xc3\xbcn", "a:b",       "'x'" };
	char text[256], name[80];
	struct config c;

	CHECK(parse(&c, "socket_group = offcpu") == 0);
	CHECK_STR(c.socket_group, "offcpu");
	CHECK(parse(&c, "socket_group = Off_cpu.users-2") == 0);
	CHECK_STR(c.socket_group, "Off_cpu.users-2");
	CHECK(parse(&c, "socket_group = \"wheel\"") == 0);
	CHECK_STR(c.socket_group, "wheel");
	CHECK(parse(&c, "socket_group = wheel\nsocket_group =\n") == 0);
	CHECK_STR(c.socket_group, "");
	CHECK(parse(&c, "socket_group = wheel\nsocket_group = \"\"\n") == 0);
	CHECK_STR(c.socket_group, "");

	memset(name, 'g', sizeof(name));
	name[63] = '\0';
	snprintf(text, sizeof(text), "socket_group = %s", name);
	CHECK(parse(&c, text) == 0);
	CHECK_STR(c.socket_group, name);
	name[63] = 'g';
	name[64] = '\0';
	snprintf(text, sizeof(text), "socket_group = %s", name);
	CHECK(parse(&c, text) == -EINVAL);
	CHECK_STR(err, want);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "socket_group = %s", bad[i]);
		CHECK(parse(&c, text) == -EINVAL);
		CHECK_STR(err, want);
	}
}

static void test_names(void)
{
	const char *want =
		"test.conf:1: bad value for 'allowed_users': must be empty or a "
		"comma-separated list of user or group names or numeric ids (A-Z a-z 0-9 "
		"_ . -), at most 64, shorter than 512 bytes in all";
	static const char *const bad[] = { "a b", "a,,b", ",a", "a,", "a;b", "gr\xc3\xbcn" };
	char text[1200];
	struct config c;

	CHECK(parse(&c, "") == 0);
	CHECK_STR(c.allowed_users, "");
	CHECK_STR(c.allowed_groups, "offcpu");
	CHECK_STR(c.capture_users, "");
	CHECK_STR(c.capture_groups, "");
	CHECK(parse(&c, "allowed_users = alice, bob,1000") == 0);
	CHECK_STR(c.allowed_users, "alice, bob,1000");
	CHECK(parse(&c, "capture_groups = perf-users") == 0);
	CHECK_STR(c.capture_groups, "perf-users");
	CHECK(parse(&c, "allowed_groups =") == 0);
	CHECK_STR(c.allowed_groups, "");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "allowed_users = %s", bad[i]);
		CHECK(parse(&c, text) == -EINVAL);
		CHECK_STR(err, want);
	}
	strcpy(text, "allowed_users = u0");
	for (int i = 1; i <= 64; i++)
		sprintf(text + strlen(text), ",u%d", i); /* 65 names */
	CHECK(parse(&c, text) == -EINVAL);
	CHECK_STR(err, want);
}

static void test_requests(void)
{
	const char *want = "test.conf:1: bad value for 'continuous_requests': must be empty or up "
			   "to 8 space-separated SYMBOL@/ABSOLUTE/PATH, shorter than 1024 bytes "
			   "in all";
	static const char *const bad[] = {
		"do_command",	       /* no binary: the continuous profile has no pid */
		"do_command@mariadbd", /* not absolute */
		"@/usr/sbin/mariadbd", /* no symbol */
		"do_command@",	       "a@/1 b@/2 c@/3 d@/4 e@/5 f@/6 g@/7 h@/8 i@/9",
	};
	char text[1200], value[1100];
	struct config c;

	CHECK(parse(&c, "continuous_requests = do_command@/usr/sbin/mariadbd") == 0);
	CHECK_STR(c.continuous_requests, "do_command@/usr/sbin/mariadbd");
	CHECK(parse(&c, "continuous_requests = \"app::*@/opt/a  f@/lib/libx.so.1\"") == 0);
	CHECK_STR(c.continuous_requests, "app::*@/opt/a  f@/lib/libx.so.1");
	CHECK(parse(&c, "continuous_requests = a@/1 b@/2 c@/3 d@/4 e@/5 f@/6 g@/7 h@/8") == 0);
	CHECK(parse(&c, "continuous_requests = \"\"") == 0);
	CHECK_STR(c.continuous_requests, "");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "continuous_requests = %s", bad[i]);
		CHECK(parse(&c, text) == -EINVAL);
		CHECK_STR(err, want);
	}
	memset(value, 'f', sizeof(value));
	memcpy(value + 1030, "@/x", 4); /* 1033 bytes */
	snprintf(text, sizeof(text), "continuous_requests = %s", value);
	CHECK(parse(&c, text) == -EINVAL);
	CHECK_STR(err, want);
}

/* Push targets: "push.NAME.KEY" makes NAME at its first key; defaults;
 * every key's checks; what a target needs as a whole. */
static void test_push(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "push.a.url = ftp://x",
		  "test.conf:1: bad value for 'push.a.url': must be an http:// or "
		  "https:// URL without blanks, shorter than 1024 bytes" },
		{ "push.a.url = \"http://a b\"", NULL },
		{ "push.a.url = http://", NULL },
		{ "push.a.api = grpc",
		  "test.conf:1: bad value for 'push.a.api': must be one of pyroscope, "
		  "pyroscope-ingest, otlp" },
		{ "push.a.service_by = unit",
		  "test.conf:1: bad value for 'push.a.service_by': must be one "
		  "of who, process" },
		{ "push.a.labels = env", NULL },
		{ "push.a.labels = env=", NULL },
		{ "push.a.labels = 1x=a", NULL },
		{ "push.a.labels = __x=a", NULL },
		{ "push.a.labels = host=a", NULL },
		{ "push.a.labels = \"a=1, a=2\"", NULL },
		{ "push.a.labels = a=b=c", NULL },
		{ "push.a.kinds = cpu", NULL },
		{ "push.a.timeout = 0", NULL },
		{ "push.a.basic_auth_file = relative", NULL },
		{ "push.A.url = http://x", "test.conf:1: bad push target name 'A': must be 1 to 31 "
					   "characters from a-z 0-9 _ -" },
		{ "push..url = http://x", NULL },
		{ "push.a.bogus = 1", "test.conf:1: unknown key 'push.a.bogus'" },
		{ "push.a = 1", "test.conf:1: unknown key 'push.a'" },
		{ "push.a.url = http://x\npush.b.labels = e=1\n",
		  "test.conf:2: push target 'b' has no url "
		  "(push.b.url)" },
		{ "push.a.url = http://x\npush.a.basic_auth_file = /a\n"
		  "push.a.bearer_token_file = /b",
		  "test.conf:1: push target 'a' has both basic_auth_file and bearer_token_file: "
		  "give one" },
		{ "push.a.url = http://x\npush.a.key_file = /k",
		  "test.conf:1: push target 'a' has a key_file but no cert_file" },
	};
	char text[2048];
	struct config c;

	CHECK(parse(&c, "") == 0);
	CHECK(c.n_push == 0 && c.push_max_bytes_in_flight == 64u << 20 && !c.push_host[0]);
	CHECK(parse(&c, "push.grafana.url = https://u:p@profiles.example.com/\n"
			"push.otel.api = otlp\n"
			"push.otel.url = http://127.0.0.1:4318\n"
			"push.grafana.labels = \"env=prod, region = eu-west\"\n"
			"push.grafana.tenant = team-a\n"
			"push.grafana.bearer_token_file = /etc/offcpud/token\n"
			"push.grafana.kinds = offcpu, wakeup\n"
			"push.grafana.service_by = process\n"
			"push.grafana.timeout = 2m\n"
			"push.grafana.max_bytes_per_second = 1M\n"
			"push.grafana.ca_file = /ca.pem\n"
			"push.grafana.cert_file = /c.pem\n"
			"push.grafana.key_file = /k.pem\n"
			"push_host = web-1\n"
			"push_max_bytes_in_flight = 8MiB\n") == 0);
	CHECK(c.n_push == 2);
	CHECK_STR(c.push[0].name, "grafana");
	CHECK_STR(c.push[0].url, "https://u:p@profiles.example.com/");
	CHECK(c.push[0].api == CONFIG_PUSH_PYROSCOPE);
	CHECK_STR(c.push[0].labels, "env=prod, region = eu-west");
	CHECK_STR(c.push[0].tenant, "team-a");
	CHECK_STR(c.push[0].bearer_token_file, "/etc/offcpud/token");
	CHECK(c.push[0].kinds == ((1u << PROTO_KIND_OFFCPU) | (1u << PROTO_KIND_WAKEUP)));
	CHECK(c.push[0].service_by == CONFIG_PUSH_SERVICE_PROCESS);
	CHECK(c.push[0].timeout_s == 120 && c.push[0].max_bytes_per_second == 1u << 20);
	CHECK_STR(c.push[0].key_file, "/k.pem");
	CHECK_STR(c.push[1].name, "otel");
	CHECK(c.push[1].api == CONFIG_PUSH_OTLP && c.push[1].timeout_s == 30 &&
	      c.push[1].service_by == CONFIG_PUSH_SERVICE_WHO && c.push[1].kinds == 0 &&
	      c.push[1].line == 2);
	CHECK_STR(c.push_host, "web-1");
	CHECK(c.push_max_bytes_in_flight == 8u << 20);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s", bad[i].text);
		CHECK_MSG(parse(&c, text) == -EINVAL, "(%s)", bad[i].text);
		if (bad[i].want)
			CHECK_STR(err, bad[i].want);
	}
	/* At most CONFIG_MAX_PUSH_TARGETS. */
	text[0] = '\0';
	for (int i = 0; i <= CONFIG_MAX_PUSH_TARGETS; i++)
		sprintf(text + strlen(text), "push.t%d.url = http://x\n", i);
	CHECK(parse(&c, text) == -EINVAL);
	CHECK_STR(err, "test.conf:9: too many push targets: at most 8");
}

static void test_syntax(void)
{
	struct config c;

	/* Comments, blank lines, odd spacing, CRLF, no final newline. */
	CHECK(parse(&c, "# header\r\n"
			"\r\n"
			"max_clients=5\r\n"
			"\t drain_interval_ms \t = \t 250 \t # trailing comment\r\n"
			"trace_self = yes#no space before comment\r\n"
			"socket_path = /a/b\r\n"
			"max_capture_seconds = 10") == 0);
	CHECK(c.max_clients == 5);
	CHECK(c.drain_interval_ms == 250);
	CHECK(c.trace_self);
	CHECK_STR(c.socket_path, "/a/b");
	CHECK(c.max_capture_seconds == 10);

	/* Duplicate keys: the last one wins. */
	CHECK(parse(&c, "max_clients = 5\nmax_clients = 6\nmax_clients = 7\n") == 0);
	CHECK(c.max_clients == 7);

	CHECK(parse(&c, "max_clients 5\n") == -EINVAL);
	CHECK_STR(err, "test.conf:1: expected 'key = value'");
	CHECK(parse(&c, "# fine\n\nmax_clients = 5\ntrace_self\n") == -EINVAL);
	CHECK_STR(err, "test.conf:4: expected 'key = value'");
	CHECK(parse(&c, "= 5\n") == -EINVAL);
	CHECK_STR(err, "test.conf:1: expected 'key = value'");
	CHECK(parse(&c, "max_clients # = 5\n") == -EINVAL);
	CHECK_STR(err, "test.conf:1: expected 'key = value'");
	CHECK(parse(&c, "\r\n\r\nmax_clients\r\n") == -EINVAL);
	CHECK_STR(err, "test.conf:3: expected 'key = value'");

	/* The value is everything after the first '='. */
	CHECK(parse(&c, "socket_path = /a=b\n") == 0);
	CHECK_STR(c.socket_path, "/a=b");

	/* Keys are case-sensitive and exact. */
	CHECK(parse(&c, "\n# comment\nmax_clients = 5\nfoo = 1\n") == -EINVAL);
	CHECK_STR(err, "test.conf:4: unknown key 'foo'");
	CHECK(parse(&c, "Max_Clients = 5") == -EINVAL);
	CHECK_STR(err, "test.conf:1: unknown key 'Max_Clients'");
	CHECK(parse(&c, "max clients = 5") == -EINVAL);
	CHECK_STR(err, "test.conf:1: unknown key 'max clients'");
	CHECK(parse(&c, "max_client = 5") == -EINVAL);
	CHECK_STR(err, "test.conf:1: unknown key 'max_client'");
	/* An unknown key is an error even with a bad value. */
	CHECK(parse(&c, "nope = \"unterminated\n") == -EINVAL);
	CHECK_STR(err, "test.conf:1: unknown key 'nope'");

	/* Quotes. */
	CHECK(parse(&c, "socket_path = \"/a # b\"\n") == 0);
	CHECK_STR(c.socket_path, "/a # b");
	CHECK(parse(&c, "socket_path = \"/a\n") == -EINVAL);
	CHECK_STR(err, "test.conf:1: bad value for 'socket_path': missing closing quote");
	CHECK(parse(&c, "socket_path = \"/a\" /b\n") == -EINVAL);
	CHECK_STR(err, "test.conf:1: bad value for 'socket_path': text after closing quote");
	CHECK(parse(&c, "socket_path = \"/a\"   # comment\r\n") == 0);
	CHECK_STR(c.socket_path, "/a");
	CHECK(parse(&c, "socket_path = /a\"b\n") == 0); /* only surrounding quotes are syntax */
	CHECK_STR(c.socket_path, "/a\"b");
	CHECK(parse(&c, "trace_self = \"yes\"\n") == 0);
	CHECK(c.trace_self);

	/* The error names the right line after many good ones. */
	CHECK(parse(&c, "max_clients = 1\nmax_clients = 2\nmax_clients = 3\n"
			"max_clients = 4\nmax_clients = 5\nmax_clients = 6\n"
			"max_clients = 7\nmax_clients = 8\nmax_clients = 9\n"
			"max_clients = 10\nmax_clients = 0\n") == -EINVAL);
	CHECK_STR(err, "test.conf:11: bad value for 'max_clients': must be an integer from 1 to "
		       "4096");
}

static void test_error_leaves_config(void)
{
	struct config c, before;

	config_scramble(&before);
	c = before;
	CHECK(config_parse(&c, "x", "max_clients = 5\nsocket_path = /b\nbogus = 1\n", err,
			   sizeof(err)) == -EINVAL);
	CHECK(config_equal(&c, &before));

	/* Parsing applies over what is there: unset keys keep their value. */
	CHECK(config_parse(&c, "x", "max_clients = 5\n", err, sizeof(err)) == 0);
	CHECK(c.max_clients == 5);
	CHECK_STR(c.socket_path, "/scrambled");
}

static void test_error_buffer(void)
{
	struct config c;
	char small[8];

	config_init(&c);
	memset(small, 'x', sizeof(small));
	CHECK(config_parse(&c, "name.conf", "foo = 1", small, sizeof(small)) == -EINVAL);
	CHECK_STR(small, "name.co");

	memset(small, 'x', sizeof(small));
	CHECK(config_parse(&c, "n", "foo = 1", small, 1) == -EINVAL);
	CHECK(small[0] == '\0');
	CHECK(small[1] == 'x');

	/* The name prefix alone overflows: still terminated. */
	memset(small, 'x', sizeof(small));
	CHECK(config_parse(&c, "a-very-long-name.conf", "foo = 1", small, sizeof(small)) ==
	      -EINVAL);
	CHECK_STR(small, "a-very-");

	CHECK(config_parse(&c, "n", "foo = 1", NULL, 0) == -EINVAL);
	CHECK(config_parse(&c, "n", "max_clients = 3", NULL, 0) == 0);
	CHECK(c.max_clients == 3);
}

/* Writes len bytes to a new temporary file; returns its path (static). */
static const char *write_temp(const void *data, size_t len)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/test-config.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		exit(1);
	}
	f = fdopen(fd, "w");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
		perror("write temp file");
		exit(1);
	}
	return path;
}

#define write_temp_str(s) write_temp(s, sizeof(s) - 1)

static void test_load(void)
{
	char want[256], *big;
	const char *path;
	struct config c;
	size_t big_len = (1u << 20) + 1;

	config_init(&c);
	CHECK(config_load(&c, "/nonexistent/offcpud.conf", err, sizeof(err)) == -ENOENT);
	CHECK_STR(err, "cannot read /nonexistent/offcpud.conf: No such file or directory");

	CHECK(config_load(&c, "/", err, sizeof(err)) == -EISDIR);
	CHECK_STR(err, "cannot read /: Is a directory");

	/* Not regular files: no size known up front, so the limit is met while reading. */
	CHECK(config_load(&c, "/dev/null", err, sizeof(err)) == 0);
	CHECK(config_load(&c, "/dev/zero", err, sizeof(err)) == -EFBIG);
	CHECK_STR(err, "cannot read /dev/zero: larger than 1048576 bytes");

	path = write_temp_str("max_clients = 9\n");
	CHECK(config_load(&c, path, err, sizeof(err)) == 0);
	CHECK(c.max_clients == 9);
	unlink(path);

	path = write_temp_str("max_clients = 9\n\nbogus = 1\n");
	CHECK(config_load(&c, path, err, sizeof(err)) == -EINVAL);
	snprintf(want, sizeof(want), "%s:3: unknown key 'bogus'", path);
	CHECK_STR(err, want);
	unlink(path);

	/* A NUL would otherwise hide the rest of the file from the parser. */
	path = write_temp_str("max_clients = 9\nmax\0_clients = 1\n");
	CHECK(config_load(&c, path, err, sizeof(err)) == -EINVAL);
	snprintf(want, sizeof(want), "%s:2: unexpected NUL byte", path);
	CHECK_STR(err, want);
	unlink(path);

	path = write_temp_str("");
	config_init(&c);
	c.max_clients = 11;
	CHECK(config_load(&c, path, err, sizeof(err)) == 0);
	CHECK(c.max_clients == 11);
	unlink(path);

	/* Exactly 1 MiB of comment is accepted; one byte more is not. */
	big = malloc(big_len);
	CHECK(big);
	if (!big)
		return;
	memset(big, '#', big_len);
	path = write_temp(big, big_len - 1);
	CHECK(config_load(&c, path, err, sizeof(err)) == 0);
	unlink(path);
	path = write_temp(big, big_len);
	CHECK(config_load(&c, path, err, sizeof(err)) == -EFBIG);
	snprintf(want, sizeof(want), "cannot read %s: larger than 1048576 bytes", path);
	CHECK_STR(err, want);
	unlink(path);
	free(big);
}

/* The shipped file lists every key, set to its default. */
static void test_shipped_file(const char *path)
{
	struct config c, def;
	int r;

	config_init(&def);
	config_scramble(&c);
	r = config_load(&c, path, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "%s\n", err);
	CHECK(r == 0);
	CHECK(config_equal(&c, &def));
}

int main(int argc, char **argv)
{
	test_defaults();
	test_empty();
	test_integers();
	test_mode();
	test_bool();
	test_choice();
	test_path();
	test_states();
	test_kinds();
	test_bytes();
	test_duration();
	test_group();
	test_requests();
	test_push();
	test_names();
	test_syntax();
	test_error_leaves_config();
	test_error_buffer();
	test_load();
	test_shipped_file(argc > 1 ? argv[1] : "etc/offcpud.conf");

	return CHECK_DONE();
}
