/* config: see config.h. Every key is described once, in the keys[] table. */
#include "config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kind.h"
#include "push_labels.h"
#include "thread_state.h"

/* Far above any real configuration; stops a wrong path (a log, /dev/zero)
 * from being read into memory whole. */
#define CONFIG_FILE_MAX_BYTES (1u << 20)

enum key_type {
	KEY_U32,  /* decimal, min..max */
	KEY_U64,  /* decimal, min..max */
	KEY_MODE, /* octal, min..max */
	KEY_BOOL,
	KEY_PATH,     /* absolute, non-empty; max is the buffer size */
	KEY_GROUP,    /* [A-Za-z0-9_.-], may be empty; max is the buffer size */
	KEY_CHOICE,   /* one of choices[]; stored as its index (unsigned) */
	KEY_STATES,   /* thread-state list, "S,D"; stored as a uint32_t mask */
	KEY_KINDS,    /* profile kind list, "offcpu,runq"; uint32_t mask of 1 << kind */
	KEY_BYTES,    /* decimal, optional K/KiB/M/MiB/... suffix; uint64_t bytes, min..max */
	KEY_DURATION, /* decimal, optional s/m/h/d suffix; uint64_t seconds, min..max */
	KEY_REQUESTS, /* "SYMBOL@/PATH ...", may be empty; max is the buffer size */
	KEY_NAMES,    /* user or group names or ids, comma-separated, may be empty */
	KEY_URL,      /* http:// or https://, no blanks or control characters */
	KEY_TEXT,     /* printable, may be empty; max is the buffer size */
	KEY_LABELS,   /* "NAME=VALUE,...", may be empty; max is the buffer size */
};

struct key {
	const char *name;
	enum key_type type;
	size_t offset;
	uint64_t min;
	uint64_t max;
	const char *const *choices; /* KEY_CHOICE: NULL-terminated */
};

/* A suffix of KEY_BYTES or KEY_DURATION and what it multiplies by. */
struct unit {
	const char *name;
	uint64_t factor;
};

/* Powers of 1024 only: "MB" is refused, not guessed at. The -iB names come
 * first: messages print sizes with them. */
static const struct unit byte_units[] = {
	{ "KiB", UINT64_C(1) << 10 }, { "MiB", UINT64_C(1) << 20 }, { "GiB", UINT64_C(1) << 30 },
	{ "TiB", UINT64_C(1) << 40 }, { "K", UINT64_C(1) << 10 },   { "M", UINT64_C(1) << 20 },
	{ "G", UINT64_C(1) << 30 },   { "T", UINT64_C(1) << 40 },   { NULL, 0 },
};

/* Lower case only, so "1M" (a month?) is an error rather than a minute. */
static const struct unit duration_units[] = {
	{ "s", 1 }, { "m", 60 }, { "h", 3600 }, { "d", 86400 }, { NULL, 0 },
};

#define FIELD_SIZE_IN(st, f) sizeof(((st *)0)->f)
#define FIELD_SIZE(f)	     FIELD_SIZE_IN(struct config, f)

/* 0, but stops the build unless field f of the struct has C type t. */
#define TYPE_CHECK_IN(st, f, t) (0 * sizeof(_Generic(((st *)0)->f, t : 0)))
#define TYPE_CHECK(f, t)	TYPE_CHECK_IN(struct config, f, t)

/* A key of a field of struct st (struct config, or a push target). */
#define KEY_IN(st, key, f, kind, t, lo, hi)                                                        \
	{                                                                                          \
		.name = key, .type = kind, .offset = offsetof(st, f) + TYPE_CHECK_IN(st, f, t),    \
		.min = lo, .max = hi,                                                              \
	}

/* A key spelled differently from its field: the field names the unit
 * (max_age_s), the value carries its own ("24h"). */
#define KEY_AS(key, f, kind, t, lo, hi) KEY_IN(struct config, key, f, kind, t, lo, hi)

/* Usually the key is spelled exactly as the field it sets. */
#define KEY(f, kind, t, lo, hi) KEY_AS(#f, f, kind, t, lo, hi)

static const char *const tracepoint_names[] = { "auto", "tp_btf", "raw_tp", NULL };
static const char *const unwind_names[] = { "dwarf", "fp", NULL };
static const char *const pt_event_names[] = { "intel_pt", "sideband", NULL };
static const char *const stacks_names[] = { "sampled", "exact", NULL };
static const char *const sampled_walk_names[] = { "auto", "switch-out", "rseq", "task-work", NULL };
static const char *const push_api_names[] = { "pyroscope", "pyroscope-ingest", "otlp", NULL };
static const char *const push_service_names[] = { "who", "process", NULL };

static const struct key keys[] = {
	KEY(socket_path, KEY_PATH, char *, 0, FIELD_SIZE(socket_path)),
	KEY(socket_mode, KEY_MODE, mode_t, 0, 0777),
	KEY(socket_group, KEY_GROUP, char *, 0, FIELD_SIZE(socket_group)),
	KEY(allowed_users, KEY_NAMES, char *, 0, FIELD_SIZE(allowed_users)),
	KEY(allowed_groups, KEY_NAMES, char *, 0, FIELD_SIZE(allowed_groups)),
	KEY(capture_users, KEY_NAMES, char *, 0, FIELD_SIZE(capture_users)),
	KEY(capture_groups, KEY_NAMES, char *, 0, FIELD_SIZE(capture_groups)),
	KEY(drain_interval_ms, KEY_U32, uint32_t, 100, 60000),
	KEY(max_capture_seconds, KEY_U32, uint32_t, 1, 86400),
	KEY(max_request_bytes, KEY_U32, uint32_t, 1024, 16777216),
	KEY(max_clients, KEY_U32, uint32_t, 1, 4096),
	KEY_AS("client_timeout", client_timeout_s, KEY_DURATION, uint64_t, 1, 3600),
	KEY(max_captures, KEY_U32, uint32_t, 1, CONFIG_MAX_CAPTURES),
	KEY(max_reply_bytes, KEY_BYTES, uint64_t, UINT64_C(1) << 16, UINT64_C(1) << 32),
	KEY(agg_map_entries, KEY_U32, uint32_t, 64, 1048576),
	KEY(stack_map_entries, KEY_U32, uint32_t, 64, 1048576),
	KEY(trace_self, KEY_BOOL, bool, 0, 1),
	KEY(bpf_stats, KEY_BOOL, bool, 0, 1),
	{ .name = "unwind",
	  .type = KEY_CHOICE,
	  .choices = unwind_names,
	  .offset = offsetof(struct config, unwind) + TYPE_CHECK(unwind, unsigned) },
	KEY(unwind_max_depth, KEY_U32, uint32_t, 1, 127), /* OFFCPU_MAX_STACK_DEPTH */
	KEY(python_frames, KEY_BOOL, bool, 0, 1),
	KEY(unwind_rows, KEY_U32, uint32_t, 4096, 1u << 26),
	KEY(unwind_processes, KEY_U32, uint32_t, 16, 65536),
	KEY(stack_cache, KEY_BOOL, bool, 0, 1),
	KEY(stack_cache_audit, KEY_U32, uint32_t, 1, 1u << 20),
	{ .name = "tracepoint",
	  .type = KEY_CHOICE,
	  .choices = tracepoint_names,
	  .offset = offsetof(struct config, tracepoint) + TYPE_CHECK(tracepoint, unsigned) },
	KEY(continuous, KEY_BOOL, bool, 0, 1),
	KEY(continuous_kinds, KEY_KINDS, uint32_t, 0, 0),
	KEY(continuous_split_runq, KEY_BOOL, bool, 0, 1),
	KEY(oncpu_frequency, KEY_U32, uint32_t, 0, 10000),
	KEY(continuous_states, KEY_STATES, uint32_t, 0, 0),
	KEY(continuous_min_block_us, KEY_U64, uint64_t, 0, 60000000),
	KEY(continuous_requests, KEY_REQUESTS, char *, 0, FIELD_SIZE(continuous_requests)),
	{ .name = "continuous_stacks",
	  .type = KEY_CHOICE,
	  .choices = stacks_names,
	  .offset = offsetof(struct config, continuous_stacks) +
		    TYPE_CHECK(continuous_stacks, unsigned) },
	KEY(sample_period_us, KEY_U32, uint32_t, 1, 1000000), /* OFFCPU_MAX_SAMPLE_PERIOD_NS */
	{ .name = "sampled_walk",
	  .type = KEY_CHOICE,
	  .choices = sampled_walk_names,
	  .offset = offsetof(struct config, sampled_walk) + TYPE_CHECK(sampled_walk, unsigned) },
	KEY(window_seconds, KEY_U32, uint32_t, 1, 3600),
	KEY(database, KEY_PATH, char *, 0, FIELD_SIZE(database)),
	KEY(max_db_bytes, KEY_BYTES, uint64_t, UINT64_C(1) << 20, UINT64_C(1) << 40),
	KEY_AS("max_age", max_age_s, KEY_DURATION, uint64_t, 60, 365 * 86400),
	KEY(debug_root, KEY_PATH, char *, 0, FIELD_SIZE(debug_root)),
	KEY(pt_dir, KEY_PATH, char *, 0, FIELD_SIZE(pt_dir)),
	KEY(pt_keep, KEY_U32, uint32_t, 1, 100000),
	KEY_AS("pt_buffer", pt_buffer_bytes, KEY_BYTES, uint64_t, UINT64_C(1) << 12,
	       UINT64_C(1) << 30),
	KEY(pt_max_bytes, KEY_BYTES, uint64_t, UINT64_C(1) << 16, UINT64_C(1) << 36),
	KEY(pt_max_threads, KEY_U32, uint32_t, 1, 4096),
	{ .name = "pt_event",
	  .type = KEY_CHOICE,
	  .choices = pt_event_names,
	  .offset = offsetof(struct config, pt_event) + TYPE_CHECK(pt_event, unsigned) },
	KEY(push_host, KEY_TEXT, char *, 0, FIELD_SIZE(push_host)),
	KEY(push_max_bytes_in_flight, KEY_BYTES, uint64_t, UINT64_C(1) << 20, UINT64_C(1) << 32),
};

#define TARGET_KEY(f, kind, t, lo, hi) KEY_IN(struct config_push_target, #f, f, kind, t, lo, hi)
#define TARGET_SIZE(f)		       FIELD_SIZE_IN(struct config_push_target, f)

/* The keys of a push target, after "push.NAME.". */
static const struct key target_keys[] = {
	{ .name = "api",
	  .type = KEY_CHOICE,
	  .choices = push_api_names,
	  .offset = offsetof(struct config_push_target, api) +
		    TYPE_CHECK_IN(struct config_push_target, api, unsigned) },
	TARGET_KEY(url, KEY_URL, char *, 0, TARGET_SIZE(url)),
	TARGET_KEY(tenant, KEY_TEXT, char *, 0, TARGET_SIZE(tenant)),
	TARGET_KEY(basic_auth_file, KEY_PATH, char *, 0, TARGET_SIZE(basic_auth_file)),
	TARGET_KEY(bearer_token_file, KEY_PATH, char *, 0, TARGET_SIZE(bearer_token_file)),
	TARGET_KEY(ca_file, KEY_PATH, char *, 0, TARGET_SIZE(ca_file)),
	TARGET_KEY(cert_file, KEY_PATH, char *, 0, TARGET_SIZE(cert_file)),
	TARGET_KEY(key_file, KEY_PATH, char *, 0, TARGET_SIZE(key_file)),
	TARGET_KEY(labels, KEY_LABELS, char *, 0, TARGET_SIZE(labels)),
	TARGET_KEY(kinds, KEY_KINDS, uint32_t, 0, 0),
	{ .name = "service_by",
	  .type = KEY_CHOICE,
	  .choices = push_service_names,
	  .offset = offsetof(struct config_push_target, service_by) +
		    TYPE_CHECK_IN(struct config_push_target, service_by, unsigned) },
	KEY_IN(struct config_push_target, "timeout", timeout_s, KEY_DURATION, uint64_t, 1, 3600),
	TARGET_KEY(max_bytes_per_second, KEY_BYTES, uint64_t, 0, UINT64_C(1) << 40),
};

static const struct config_push_target target_defaults = {
	.api = CONFIG_PUSH_PYROSCOPE,
	.service_by = CONFIG_PUSH_SERVICE_WHO,
	.timeout_s = 30,
};

static const struct config config_defaults = {
	.socket_path = "/run/offcpud/offcpud.sock",
	.socket_mode = 0660,
	.socket_group = "offcpu",
	.allowed_groups = "offcpu",
	.drain_interval_ms = 1000,
	.max_capture_seconds = 3600,
	.max_request_bytes = 65536,
	.max_clients = 64,
	.client_timeout_s = 30,
	.max_captures = CONFIG_MAX_CAPTURES,
	.max_reply_bytes = UINT64_C(256) << 20,
	.agg_map_entries = 16384,
	.stack_map_entries = 8192,
	.trace_self = false,
	.bpf_stats = false,
	.unwind = CONFIG_UNWIND_DWARF,
	.unwind_max_depth = 64,
	.python_frames = true,
	.unwind_rows = 1u << 21,
	.unwind_processes = 4096,
	.stack_cache = true,
	.stack_cache_audit = 64,
	.tracepoint = CONFIG_TRACEPOINT_AUTO,
	.continuous = true,
	.continuous_kinds = 1u << PROTO_KIND_OFFCPU,
	.continuous_split_runq = true,
	.oncpu_frequency = 99,
	.continuous_states = THREAD_STATE_ALL,
	.continuous_min_block_us = 0,
	.continuous_stacks = CONFIG_STACKS_SAMPLED,
	.sample_period_us = 1000,
	.sampled_walk = CONFIG_SAMPLED_WALK_AUTO,
	.window_seconds = 10,
	.database = "/var/lib/offcpud/offcpud.db",
	.max_db_bytes = UINT64_C(256) << 20,
	.max_age_s = 24 * 3600,
	.debug_root = "/usr/lib/debug",
	.pt_dir = "/var/lib/offcpud/pt",
	.pt_keep = 16,
	.pt_buffer_bytes = UINT64_C(4) << 20,
	.pt_max_bytes = UINT64_C(256) << 20,
	.pt_max_threads = 256,
	.pt_event = CONFIG_PT_EVENT_INTEL_PT,
	.push_max_bytes_in_flight = UINT64_C(64) << 20,
};

/* Where a message points: "NAME:LINE: ". */
struct where {
	const char *name;
	unsigned line;
	char *err;
	size_t err_size;
};

void config_init(struct config *c)
{
	assert(c);
	*c = config_defaults;
}

static void set_error(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Always leaves err NUL-terminated; a long message is cut, never overflows. */
static void set_error(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_size)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
}

static int fail(const struct where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const struct where *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!w->err || !w->err_size)
		return -EINVAL;
	n = snprintf(w->err, w->err_size, "%s:%u: ", w->name, w->line);
	if (n >= 0 && (size_t)n < w->err_size) {
		va_start(ap, fmt);
		vsnprintf(w->err + n, w->err_size - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* v with the largest unit that divides it exactly, e.g. "256MiB", "24h";
 * plain digits if none does. */
static const char *unit_format(uint64_t v, const struct unit *units, char *buf, size_t size)
{
	const struct unit *best = NULL;

	for (const struct unit *u = units; u->name; u++)
		if (v && v % u->factor == 0 && (!best || u->factor > best->factor))
			best = u;
	if (best && best->factor > 1)
		snprintf(buf, size, "%" PRIu64 "%s", v / best->factor, best->name);
	else
		snprintf(buf, size, "%" PRIu64, v);
	return buf;
}

static int fail_value(const struct where *w, const struct key *k)
{
	char lo[32], hi[32];

	switch (k->type) {
	case KEY_U32:
	case KEY_U64:
		return fail(w,
			    "bad value for '%s': must be an integer from %" PRIu64 " to %" PRIu64,
			    k->name, k->min, k->max);
	case KEY_MODE:
		return fail(w,
			    "bad value for '%s': must be an octal mode from %#" PRIo64
			    " to %#" PRIo64,
			    k->name, k->min, k->max);
	case KEY_STATES:
		return fail(w,
			    "bad value for '%s': must be a comma-separated list of thread states: "
			    "R (running), S (sleeping), D (disk), O (other)",
			    k->name);
	case KEY_KINDS:
		return fail(w,
			    "bad value for '%s': must be a comma-separated list of profile kinds: "
			    "offcpu, wakeup, offwake, chain, runq, oncpu, bio, fileio",
			    k->name);
	case KEY_BYTES:
		return fail(w,
			    "bad value for '%s': must be a size from %s to %s: an integer with an "
			    "optional suffix K, M, G or T (or KiB, MiB, GiB, TiB; powers of 1024)",
			    k->name, unit_format(k->min, byte_units, lo, sizeof(lo)),
			    unit_format(k->max, byte_units, hi, sizeof(hi)));
	case KEY_DURATION:
		return fail(w,
			    "bad value for '%s': must be a duration from %s to %s: an integer with "
			    "an optional suffix s, m, h or d (seconds if none)",
			    k->name, unit_format(k->min, duration_units, lo, sizeof(lo)),
			    unit_format(k->max, duration_units, hi, sizeof(hi)));
	case KEY_BOOL:
		return fail(w, "bad value for '%s': must be true, false, yes, no, 1 or 0", k->name);
	case KEY_CHOICE: {
		char list[256] = "";
		size_t n = 0;

		for (unsigned i = 0; k->choices[i] && n < sizeof(list); i++)
			n += snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
				      k->choices[i]);
		return fail(w, "bad value for '%s': must be one of %s", k->name, list);
	}
	case KEY_PATH:
		return fail(w,
			    "bad value for '%s': must be an absolute path shorter than %" PRIu64
			    " bytes",
			    k->name, k->max);
	case KEY_GROUP:
		return fail(w,
			    "bad value for '%s': must be empty or a group name of at most %" PRIu64
			    " characters from A-Z a-z 0-9 _ . -",
			    k->name, k->max - 1);
	case KEY_NAMES:
		return fail(
			w,
			"bad value for '%s': must be empty or a comma-separated list of user or "
			"group names or numeric ids (A-Z a-z 0-9 _ . -), at most %d, shorter than "
			"%" PRIu64 " bytes in all",
			k->name, CONFIG_MAX_NAMES, k->max);
	case KEY_REQUESTS:
		return fail(w,
			    "bad value for '%s': must be empty or up to %d space-separated "
			    "SYMBOL@/ABSOLUTE/PATH, shorter than %" PRIu64 " bytes in all",
			    k->name, OFFCPU_MAX_REQUESTS, k->max);
	case KEY_URL:
		return fail(w,
			    "bad value for '%s': must be an http:// or https:// URL without "
			    "blanks, shorter than %" PRIu64 " bytes",
			    k->name, k->max);
	case KEY_TEXT:
		return fail(w,
			    "bad value for '%s': must be printable text shorter than %" PRIu64
			    " bytes",
			    k->name, k->max);
	case KEY_LABELS:
		return fail(
			w,
			"bad value for '%s': must be empty or NAME=VALUE pairs separated by "
			"commas, NAME from A-Z a-z 0-9 _ (not starting with a digit or \"__\"), "
			"VALUE non-empty without commas, shorter than %" PRIu64 " bytes in all",
			k->name, k->max);
	}
	assert(!"unknown key type");
	return -EINVAL;
}

static const char *skip_space(const char *s, const char *end)
{
	while (s < end && isspace((unsigned char)*s))
		s++;
	return s;
}

static const char *trim_end(const char *s, const char *end)
{
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	return end;
}

/* End of the line's content: the first '#' outside double quotes, if any. */
static const char *comment_start(const char *s, const char *end)
{
	bool quoted = false;

	for (; s < end; s++) {
		if (*s == '"')
			quoted = !quoted;
		else if (*s == '#' && !quoted)
			return s;
	}
	return end;
}

static const struct key *key_find(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i].name) == len && !memcmp(keys[i].name, name, len))
			return &keys[i];
	return NULL;
}

/* Digits only: no sign, no space, no base prefix, at least one digit. */
static int parse_uint(const char *s, size_t len, unsigned base, uint64_t min, uint64_t max,
		      uint64_t *ret)
{
	uint64_t v = 0;

	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = s[i];
		unsigned digit = ch - '0';

		if (ch < '0' || ch >= '0' + base)
			return -EINVAL;
		/* v * base + digit > max, asked without overflowing */
		if (digit > max || v > (max - digit) / base)
			return -ERANGE;
		v = v * base + digit;
	}
	if (v < min)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* Decimal digits, then optional blanks and one of units (none: factor 1).
 * "256M", "256 MiB", "90m". The product must lie in min..max. */
static int parse_scaled(const char *s, size_t len, const struct unit *units, bool ignore_case,
			uint64_t min, uint64_t max, uint64_t *ret)
{
	const char *suffix;
	size_t n = 0, suffix_len;
	uint64_t factor = 1, v;
	int r;

	while (n < len && s[n] >= '0' && s[n] <= '9')
		n++;
	suffix = skip_space(s + n, s + len);
	suffix_len = s + len - suffix;
	if (suffix_len) {
		const struct unit *u;

		for (u = units; u->name; u++)
			if (strlen(u->name) == suffix_len &&
			    !(ignore_case ? strncasecmp : strncmp)(suffix, u->name, suffix_len))
				break;
		if (!u->name)
			return -EINVAL;
		factor = u->factor;
	}
	r = parse_uint(s, n, 10, 0, max / factor, &v);
	if (r < 0)
		return r;
	if (v * factor < min)
		return -ERANGE;
	*ret = v * factor;
	return 0;
}

/* Blanks around the names are allowed ("S, D"); thread_state_mask_parse()
 * takes the list without them. */
static int parse_states(const char *s, size_t len, uint32_t *ret)
{
	const char *end = s + len;
	char list[128];
	size_t n = 0;

	for (;;) {
		const char *comma = memchr(s, ',', end - s);
		const char *name_end = comma ? comma : end;
		const char *name = skip_space(s, name_end);
		size_t name_len = trim_end(name, name_end) - name;

		if (n + name_len + 1 >= sizeof(list))
			return -EINVAL;
		memcpy(list + n, name, name_len);
		n += name_len;
		if (!comma)
			break;
		list[n++] = ',';
		s = comma + 1;
	}
	list[n] = '\0';
	return thread_state_mask_parse(list, ret);
}

static bool word_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && !strncasecmp(s, word, len);
}

/* "offcpu, runq": names of kinds (proto_kind_names[]), case-insensitive,
 * blanks around them allowed, none empty. Repeats are harmless. */
static int parse_kinds(const char *s, size_t len, uint32_t *ret)
{
	const char *end = s + len;
	uint32_t mask = 0;

	for (;;) {
		const char *comma = memchr(s, ',', end - s);
		const char *name_end = comma ? comma : end;
		const char *name = skip_space(s, name_end);
		size_t name_len = trim_end(name, name_end) - name, i;

		for (i = 0; proto_kind_names[i]; i++)
			if (word_is(name, name_len, proto_kind_names[i]))
				break;
		if (!proto_kind_names[i])
			return -EINVAL;
		mask |= UINT32_C(1) << i;
		if (!comma)
			break;
		s = comma + 1;
	}
	*ret = mask;
	return 0;
}

static int parse_bool(const char *s, size_t len, bool *ret)
{
	if (word_is(s, len, "true") || word_is(s, len, "yes") || word_is(s, len, "1"))
		*ret = true;
	else if (word_is(s, len, "false") || word_is(s, len, "no") || word_is(s, len, "0"))
		*ret = false;
	else
		return -EINVAL;
	return 0;
}

static bool group_char_ok(char ch)
{
	return isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '-';
}

/* Each space-separated word names a symbol and an absolute path. */
static bool requests_ok(const char *s, size_t len)
{
	unsigned n = 0;

	for (size_t i = 0; i < len;) {
		size_t start, at = 0;

		while (i < len && isspace((unsigned char)s[i]))
			i++;
		if (i == len)
			break;
		start = i;
		for (; i < len && !isspace((unsigned char)s[i]); i++)
			if (s[i] == '@')
				at = i;
		if (at <= start || at + 1 >= i || s[at + 1] != '/' || ++n > OFFCPU_MAX_REQUESTS)
			return false;
	}
	return true;
}

/* "a, b,c": words of group_char_ok() characters between commas. */
static bool names_ok(const char *s, size_t len)
{
	unsigned n = 0;
	size_t i = 0;

	while (i < len) {
		size_t start;

		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		start = i;
		while (i < len && group_char_ok(s[i]))
			i++;
		if (i == start || ++n > CONFIG_MAX_NAMES)
			return false;
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i < len && s[i++] != ',')
			return false;
		if (i == len && s[len - 1] == ',')
			return false;
	}
	return true;
}

static bool url_ok(const char *s, size_t len)
{
	size_t scheme = len >= 7 && !strncasecmp(s, "http://", 7)    ? 7
			: len >= 8 && !strncasecmp(s, "https://", 8) ? 8
								     : 0;

	if (!scheme || len == scheme)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return false;
	return true;
}

static bool text_ok(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
			return false;
	return true;
}

/* "env=prod, region=eu-west": push_labels.h's rule, at most 64 pairs. */
static bool labels_ok(const char *s, size_t len)
{
	char text[FIELD_SIZE_IN(struct config_push_target, labels)];
	char buf[sizeof(text)];
	struct push_label pairs[64];
	size_t n;

	if (len >= sizeof(text))
		return false;
	memcpy(text, s, len);
	text[len] = '\0';
	return push_labels_parse(text, buf, sizeof(buf), pairs, 64, &n) == 0;
}

/* Writes the value of key k into the struct at base (struct config, or a
 * push target for target_keys[]). Returns -EINVAL if it is not valid. */
static int key_set(void *base, const struct key *k, const char *s, size_t len)
{
	void *field = (char *)base + k->offset;
	uint32_t mask;
	uint64_t v;
	bool b;
	int r;

	switch (k->type) {
	case KEY_U32:
	case KEY_U64:
	case KEY_MODE:
		r = parse_uint(s, len, k->type == KEY_MODE ? 8 : 10, k->min, k->max, &v);
		if (r < 0)
			return -EINVAL;
		if (k->type == KEY_MODE)
			*(mode_t *)field = v;
		else if (k->type == KEY_U32)
			*(uint32_t *)field = v;
		else
			*(uint64_t *)field = v;
		return 0;
	case KEY_BYTES:
	case KEY_DURATION:
		r = k->type == KEY_BYTES
			    ? parse_scaled(s, len, byte_units, true, k->min, k->max, &v)
			    : parse_scaled(s, len, duration_units, false, k->min, k->max, &v);
		if (r < 0)
			return -EINVAL;
		*(uint64_t *)field = v;
		return 0;
	case KEY_STATES:
	case KEY_KINDS:
		r = k->type == KEY_STATES ? parse_states(s, len, &mask)
					  : parse_kinds(s, len, &mask);
		if (r < 0)
			return -EINVAL;
		*(uint32_t *)field = mask;
		return 0;
	case KEY_BOOL:
		r = parse_bool(s, len, &b);
		if (r < 0)
			return r;
		*(bool *)field = b;
		return 0;
	case KEY_CHOICE:
		for (unsigned i = 0; k->choices[i]; i++) {
			if (word_is(s, len, k->choices[i])) {
				*(unsigned *)field = i;
				return 0;
			}
		}
		return -EINVAL;
	case KEY_PATH:
		if (!len || s[0] != '/' || len >= k->max)
			return -EINVAL;
		break;
	case KEY_GROUP:
		if (len >= k->max)
			return -EINVAL;
		for (size_t i = 0; i < len; i++)
			if (!group_char_ok(s[i]))
				return -EINVAL;
		break;
	case KEY_REQUESTS:
		if (len >= k->max || !requests_ok(s, len))
			return -EINVAL;
		break;
	case KEY_NAMES:
		if (len >= k->max || !names_ok(s, len))
			return -EINVAL;
		break;
	case KEY_URL:
		if (len >= k->max || !url_ok(s, len))
			return -EINVAL;
		break;
	case KEY_TEXT:
		if (len >= k->max || !text_ok(s, len))
			return -EINVAL;
		break;
	case KEY_LABELS:
		if (len >= k->max || !labels_ok(s, len))
			return -EINVAL;
		break;
	}
	memcpy(field, s, len);
	((char *)field)[len] = '\0';
	return 0;
}

static bool target_name_ok(const char *s, size_t len)
{
	if (!len || len >= CONFIG_PUSH_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* "push.NAME.KEY": the key of target NAME, which the first of its keys
 * makes. *ret_k NULL (and 0): no such key. Else -EINVAL, with a message. */
static int target_key_find(struct config *c, const char *s, size_t len, const struct where *w,
			   const struct key **ret_k, void **ret_base)
{
	const char *name = s + 5, *dot = memchr(name, '.', len - 5), *key;
	size_t name_len, key_len;
	struct config_push_target *t = NULL;

	*ret_k = NULL;
	if (!dot)
		return 0;
	name_len = dot - name;
	key = dot + 1;
	key_len = s + len - key;
	if (!target_name_ok(name, name_len))
		return fail(w,
			    "bad push target name '%.*s': must be 1 to %d characters from a-z 0-9 "
			    "_ -",
			    name_len < INT_MAX ? (int)name_len : INT_MAX, name,
			    CONFIG_PUSH_NAME_MAX - 1);
	for (size_t i = 0; i < sizeof(target_keys) / sizeof(target_keys[0]); i++)
		if (strlen(target_keys[i].name) == key_len &&
		    !memcmp(target_keys[i].name, key, key_len))
			*ret_k = &target_keys[i];
	if (!*ret_k)
		return 0;
	for (uint32_t i = 0; i < c->n_push && !t; i++)
		if (strlen(c->push[i].name) == name_len && !memcmp(c->push[i].name, name, name_len))
			t = &c->push[i];
	if (!t) {
		if (c->n_push == CONFIG_MAX_PUSH_TARGETS)
			return fail(w, "too many push targets: at most %d",
				    CONFIG_MAX_PUSH_TARGETS);
		t = &c->push[c->n_push++];
		*t = target_defaults;
		memcpy(t->name, name, name_len);
		t->name[name_len] = '\0';
		t->line = w->line;
	}
	*ret_base = t;
	return 0;
}

/* What a target needs besides its keys' own checks. */
static int targets_check(const struct config *c, const struct where *file)
{
	for (uint32_t i = 0; i < c->n_push; i++) {
		const struct config_push_target *t = &c->push[i];
		struct where w = *file;

		w.line = t->line;
		if (!t->url[0])
			return fail(&w, "push target '%s' has no url (push.%s.url)", t->name,
				    t->name);
		if (t->basic_auth_file[0] && t->bearer_token_file[0])
			return fail(&w,
				    "push target '%s' has both basic_auth_file and "
				    "bearer_token_file: give one",
				    t->name);
		if (t->key_file[0] && !t->cert_file[0])
			return fail(&w, "push target '%s' has a key_file but no cert_file",
				    t->name);
	}
	return 0;
}

/* One line, without its '\n'. Blank and comment-only lines are fine. */
static int parse_line(struct config *c, const char *s, const char *end, const struct where *w)
{
	void *base = c;
	const struct key *k;
	struct key target_key;
	char full_name[CONFIG_PUSH_NAME_MAX + 64];
	const char *eq, *key_end, *val, *val_end;
	size_t key_len;

	end = comment_start(s, end);
	s = skip_space(s, end);
	end = trim_end(s, end); /* also drops the '\r' of a CRLF line */
	if (s == end)
		return 0;

	eq = memchr(s, '=', end - s);
	if (!eq || eq == s)
		return fail(w, "expected 'key = value'");
	key_end = trim_end(s, eq);
	key_len = key_end - s;
	if (key_len > 5 && !strncmp(s, "push.", 5)) {
		int r = target_key_find(c, s, key_len, w, &k, &base);

		if (r < 0)
			return r;
		if (k) { /* messages name the key as written: push.NAME.KEY */
			snprintf(full_name, sizeof(full_name), "%.*s", (int)key_len, s);
			target_key = *k;
			target_key.name = full_name;
			k = &target_key;
		}
	} else {
		k = key_find(s, key_len);
	}
	if (!k)
		return fail(w, "unknown key '%.*s'", key_len < INT_MAX ? (int)key_len : INT_MAX, s);

	val = skip_space(eq + 1, end);
	val_end = end;
	/* Quotes keep spaces and '#' in a value; there are no escapes. */
	if (val < val_end && *val == '"') {
		const char *close = memchr(val + 1, '"', val_end - val - 1);

		if (!close)
			return fail(w, "bad value for '%s': missing closing quote", k->name);
		if (close + 1 != val_end)
			return fail(w, "bad value for '%s': text after closing quote", k->name);
		val++;
		val_end = close;
	}

	if (key_set(base, k, val, val_end - val) < 0)
		return fail_value(w, k);
	return 0;
}

int config_parse(struct config *c, const char *name, const char *text, char *err, size_t err_size)
{
	struct where w = { .name = name, .line = 0, .err = err, .err_size = err_size };
	struct config tmp;
	const char *p = text;
	int r;

	assert(c && name && text);
	/* Applied to a copy so a bad file leaves c as it was. */
	tmp = *c;
	while (*p) {
		const char *eol = p + strcspn(p, "\n");

		w.line++;
		/* A key given twice is not an error: the last one wins, so a
		 * line appended to the file overrides the shipped value. */
		r = parse_line(&tmp, p, eol, &w);
		if (r < 0)
			return r;
		p = *eol ? eol + 1 : eol;
	}
	r = targets_check(&tmp, &w);
	if (r < 0)
		return r;
	*c = tmp;
	if (err && err_size)
		err[0] = '\0';
	return 0;
}

/* Reads all of path into a NUL-terminated buffer. Returns -EFBIG past
 * CONFIG_FILE_MAX_BYTES, else -errno. */
static int read_file(const char *path, char **ret_text, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL, *nbuf;
	size_t len = 0, cap;
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (S_ISREG(st.st_mode) && st.st_size > CONFIG_FILE_MAX_BYTES) {
		r = -EFBIG;
		goto out;
	}
	/* st_size is only a hint: the file may change, or be a pipe. */
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 2 : 4096;
	buf = malloc(cap);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		/* Room for one more byte and the NUL, up to one byte past the
		 * limit so an oversized file is seen as such. */
		if (cap - len < 2) {
			cap = cap * 2 > CONFIG_FILE_MAX_BYTES + 2 ? CONFIG_FILE_MAX_BYTES + 2
								  : cap * 2;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				r = -ENOMEM;
				goto out;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += n;
		if (len > CONFIG_FILE_MAX_BYTES) {
			r = -EFBIG;
			goto out;
		}
	}
	buf[len] = '\0';
	*ret_text = buf;
	*ret_len = len;
	buf = NULL;
	r = 0;
out:
	free(buf);
	close(fd);
	return r;
}

int config_load(struct config *c, const char *path, char *err, size_t err_size)
{
	const char *nul;
	char *text = NULL;
	size_t len = 0;
	int r;

	assert(c && path);
	r = read_file(path, &text, &len);
	if (r == -EFBIG) {
		set_error(err, err_size, "cannot read %s: larger than %u bytes", path,
			  CONFIG_FILE_MAX_BYTES);
		return r;
	}
	if (r < 0) {
		set_error(err, err_size, "cannot read %s: %s", path, strerror(-r));
		return r;
	}

	/* config_parse() would stop at a NUL and silently ignore the rest. */
	nul = memchr(text, '\0', len);
	if (nul) {
		unsigned line = 1;

		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		set_error(err, err_size, "%s:%u: unexpected NUL byte", path, line);
		free(text);
		return -EINVAL;
	}

	r = config_parse(c, path, text, err, err_size);
	free(text);
	if (r >= 0) /* for messages that name where a setting goes */
		snprintf(c->path, sizeof(c->path), "%s", path);
	return r;
}
