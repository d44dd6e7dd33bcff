/*
 * proto: request parsing and reply formatting for the offcpud socket protocol
 * (see proto.h and PROTOCOL.md). All JSON handling of the project lives here.
 * Each command's fields are described once, by its field table below
 * (proto__commands[] names the table and where the command's struct sits in
 * struct proto_request), which drives defaults, parsing, validation and
 * proto_request_format().
 */
#include "proto.h"
#include "stack_filter.h"
#include "thread_state.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto_json.h"

#define PROTO__PID_MAX	       4194304 /* PID_MAX_LIMIT on 64-bit kernels */
#define PROTO__SECONDS_MAX     86400
#define PROTO__SECONDS_DEFAULT 10
/* Largest integer a JSON number (an IEEE double) carries exactly. */
#define PROTO__JSON_INT_MAX    (UINT64_C(1) << 53)

#define PROTO__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the requests' fields ---------------------------------------------- */

enum proto__kind {
	/* integer in [min, max], stored in a uint32_t, uint64_t or int64_t
	 * (min >= 0, so the int64_t bits are the uint64_t's) */
	PROTO__KIND_UINT,
	PROTO__KIND_IDS,    /* array of integers in [min, max], stored as uint32_t[] + count */
	PROTO__KIND_STATES, /* non-empty array of thread_state names, stored as a mask */
	PROTO__KIND_ENUM,   /* one of names[], stored as its index (the enum value) */
	PROTO__KIND_STRING, /* string of at most max bytes (< size), stored NUL-terminated */
	/* non-empty strings of at most max bytes each, stored as char[][max + 1] + count */
	PROTO__KIND_STRINGS,
	PROTO__KIND_BOOL, /* true or false (not a number), stored as a uint32_t 0 or 1 */
};

struct proto__field {
	const char *name;
	enum proto__kind kind;
	size_t offset;		  /* of the value in the command's struct */
	size_t size;		  /* of the value; for IDS, of the whole array */
	size_t count_offset;	  /* IDS: of the element count */
	uint64_t min;		  /* UINT, IDS (per element) */
	uint64_t max;		  /* UINT, IDS (per element); STRING: bytes */
	uint64_t def;		  /* UINT: value; STATES: mask; ENUM: index; BOOL: 0 or 1;
				     STRING: "" */
	bool zero_ok;		  /* UINT: 0 (the default) is valid too, below min */
	const char *const *names; /* ENUM: NULL-terminated, indexed by enum value */
	uint32_t allowed;	  /* ENUM: bit per value this field takes; 0: all of names */
	/* STRING: the syntax a value other than "" must have, and its words for
	 * "field 'x' must be ..." */
	bool (*valid)(const char *s);
	const char *expect;
	bool regex; /* STRING: a pattern that must compile as a stack filter's */
};

/* Enum values are stored through a uint32_t; see proto__store(). */
_Static_assert(sizeof(enum proto_stacks) == sizeof(uint32_t), "enum proto_stacks size");
_Static_assert(sizeof(enum proto_format) == sizeof(uint32_t), "enum proto_format size");
_Static_assert(sizeof(enum proto_palette) == sizeof(uint32_t), "enum proto_palette size");
_Static_assert(sizeof(enum proto_kind) == sizeof(uint32_t), "enum proto_kind size");

static const char *const proto__stacks_names[] = {
	[PROTO_STACKS_BOTH] = "both",
	[PROTO_STACKS_USER] = "user",
	[PROTO_STACKS_KERNEL] = "kernel",
	NULL,
};

static const char *const proto__format_names[] = {
	[PROTO_FORMAT_FOLDED] = "folded",
	[PROTO_FORMAT_JSON] = "json",
	[PROTO_FORMAT_SVG] = "svg",
	[PROTO_FORMAT_SPEEDSCOPE] = "speedscope",
	NULL,
};

static const char *const proto__palette_names[] = {
	[PROTO_PALETTE_AUTO] = "auto",	     [PROTO_PALETTE_HOT] = "hot",
	[PROTO_PALETTE_IO] = "io",	     [PROTO_PALETTE_WAKEUP] = "wakeup",
	[PROTO_PALETTE_CHAIN] = "chain",     [PROTO_PALETTE_DIFF] = "diff",
	[PROTO_PALETTE_HOTCOLD] = "hotcold", NULL,
};

static const char *const proto__kind_names[] = {
	[PROTO_KIND_OFFCPU] = "offcpu",
	[PROTO_KIND_WAKEUP] = "wakeup",
	[PROTO_KIND_OFFWAKE] = "offwake",
	[PROTO_KIND_CHAIN] = "chain",
	[PROTO_KIND_RUNQ] = "runq",
	[PROTO_KIND_ONCPU] = "oncpu",
	[PROTO_KIND_BIO] = "bio",
	[PROTO_KIND_FILEIO] = "fileio",
	NULL,
};

static const char *const proto__metric_names[] = {
	[PROTO_METRIC_TIME] = "time",
	[PROTO_METRIC_COUNT] = "count",
	[PROTO_METRIC_BYTES] = "bytes",
	NULL,
};

static bool proto__kind_io(enum proto_kind kind)
{
	return kind == PROTO_KIND_BIO || kind == PROTO_KIND_FILEIO;
}

/* The kinds a histogram is kept of: whole off-CPU time and run-queue wait. */
#define PROTO__HIST_KINDS ((UINT32_C(1) << PROTO_KIND_OFFCPU) | (UINT32_C(1) << PROTO_KIND_RUNQ))

#define PROTO__MINWIDTH_EXPECT                                                                     \
	"a non-negative decimal (pixels) or a percentage up to 100, e.g. 0.1 or 0.5%"

static bool proto__minwidth_valid(const char *s)
{
	double v;
	bool percent;

	return proto_minwidth_parse(s, &v, &percent) == 0;
}

/* Offset and size of a member of the command's struct TYPE. */
#define PROTO__AT(type, member)                                                                    \
	.offset = offsetof(type, member), .size = sizeof(((type *)0)->member)

#define PROTO__CAP(member) PROTO__AT(struct proto_capture_request, member)

/*
 * Which stored windows a request reads, the same for export and hist: a time
 * range or a capture (proto__range_check() enforces one of them), and pids.
 */
/* clang-format off */
#define PROTO__SELECTION_FIELDS(type)                                                              \
	{ .name = "from_ms", .kind = PROTO__KIND_UINT, PROTO__AT(type, from_ms),                   \
	  .max = PROTO__JSON_INT_MAX },                                                            \
	{ .name = "to_ms", .kind = PROTO__KIND_UINT, PROTO__AT(type, to_ms),                       \
	  .max = PROTO__JSON_INT_MAX },                                                            \
	{ .name = "capture", .kind = PROTO__KIND_UINT, PROTO__AT(type, capture_id),                \
	  .max = PROTO__JSON_INT_MAX },                                                            \
	{ .name = "pids", .kind = PROTO__KIND_IDS, PROTO__AT(type, pids),                          \
	  .count_offset = offsetof(type, n_pids), .min = 1, .max = PROTO__PID_MAX }
/* clang-format on */

/*
 * The stack filters (proto/stack_filter.h) of capture and export, named,
 * limited and validated alike: comm, states, grep, exclude in the command's
 * struct TYPE.
 */
/* clang-format off */
#define PROTO__FILTER_FIELDS(type)                                                                 \
	{ .name = "comm", .kind = PROTO__KIND_STRING, PROTO__AT(type, comm),                       \
	  .max = PROTO_COMM_MAX },                                                                 \
	{ .name = "states", .kind = PROTO__KIND_STATES, PROTO__AT(type, state_mask),               \
	  .def = THREAD_STATE_ALL },                                                               \
	{ .name = "grep", .kind = PROTO__KIND_STRING, PROTO__AT(type, grep),                       \
	  .max = PROTO_REGEX_MAX, .regex = true },                                                 \
	{ .name = "exclude", .kind = PROTO__KIND_STRING, PROTO__AT(type, exclude),                 \
	  .max = PROTO_REGEX_MAX, .regex = true }
/* clang-format on */

/*
 * The render options: the fields of the struct proto_render named render in
 * the command's struct TYPE, the same for every command that renders.
 * (clang-format cannot lay out a list of initializers in a macro.)
 */
/* clang-format off */
#define PROTO__RENDER_FIELDS(type)                                                                 \
	{ .name = "title", .kind = PROTO__KIND_STRING, PROTO__AT(type, render.title),              \
	  .max = PROTO_TITLE_MAX },                                                                \
	{ .name = "subtitle", .kind = PROTO__KIND_STRING,                                          \
	  PROTO__AT(type, render.subtitle), .max = PROTO_TITLE_MAX },                              \
	{ .name = "countname", .kind = PROTO__KIND_STRING,                                         \
	  PROTO__AT(type, render.countname), .max = PROTO_COUNTNAME_MAX },                         \
	{ .name = "width", .kind = PROTO__KIND_UINT, PROTO__AT(type, render.width),                \
	  .min = PROTO_WIDTH_MIN, .max = PROTO_WIDTH_MAX, .zero_ok = true },                       \
	{ .name = "frame_height", .kind = PROTO__KIND_UINT,                                        \
	  PROTO__AT(type, render.frame_height), .min = PROTO_FRAME_HEIGHT_MIN,                     \
	  .max = PROTO_FRAME_HEIGHT_MAX, .zero_ok = true },                                        \
	{ .name = "minwidth", .kind = PROTO__KIND_STRING,                                          \
	  PROTO__AT(type, render.minwidth), .max = PROTO_MINWIDTH_MAX,                             \
	  .valid = proto__minwidth_valid, .expect = PROTO__MINWIDTH_EXPECT },                      \
	{ .name = "inverted", .kind = PROTO__KIND_BOOL,                                            \
	  PROTO__AT(type, render.inverted) },                                                      \
	{ .name = "reverse", .kind = PROTO__KIND_BOOL,                                             \
	  PROTO__AT(type, render.reverse) },                                                       \
	{ .name = "flamechart", .kind = PROTO__KIND_BOOL,                                          \
	  PROTO__AT(type, render.flamechart) },                                                    \
	{ .name = "palette", .kind = PROTO__KIND_ENUM,                                             \
	  PROTO__AT(type, render.palette), .def = PROTO_PALETTE_AUTO,                              \
	  .names = proto__palette_names }
/* clang-format on */

static const struct proto__field proto__capture_fields[] = {
	{
		.name = "pids",
		.kind = PROTO__KIND_IDS,
		PROTO__CAP(pids),
		.count_offset = offsetof(struct proto_capture_request, n_pids),
		.min = 1,
		.max = PROTO__PID_MAX,
	},
	{
		.name = "tids",
		.kind = PROTO__KIND_IDS,
		PROTO__CAP(tids),
		.count_offset = offsetof(struct proto_capture_request, n_tids),
		.min = 1,
		.max = PROTO__PID_MAX,
	},
	{
		.name = "seconds",
		.kind = PROTO__KIND_UINT,
		PROTO__CAP(seconds),
		.min = 1,
		.max = PROTO__SECONDS_MAX,
		.def = PROTO__SECONDS_DEFAULT,
	},
	PROTO__FILTER_FIELDS(struct proto_capture_request),
	{
		.name = "min_block_us",
		.kind = PROTO__KIND_UINT,
		PROTO__CAP(min_block_us),
		.max = PROTO__JSON_INT_MAX,
	},
	{
		.name = "max_block_us",
		.kind = PROTO__KIND_UINT,
		PROTO__CAP(max_block_us),
		.max = PROTO__JSON_INT_MAX,
	},
	{
		.name = "stacks",
		.kind = PROTO__KIND_ENUM,
		PROTO__CAP(stacks),
		.def = PROTO_STACKS_BOTH,
		.names = proto__stacks_names,
	},
	{
		.name = "format",
		.kind = PROTO__KIND_ENUM,
		PROTO__CAP(format),
		.def = PROTO_FORMAT_FOLDED,
		.names = proto__format_names,
	},
	PROTO__RENDER_FIELDS(struct proto_capture_request),
	{
		.name = "kind",
		.kind = PROTO__KIND_ENUM,
		PROTO__CAP(kind),
		.def = PROTO_KIND_OFFCPU,
		.names = proto__kind_names,
	},
	{
		.name = "metric",
		.kind = PROTO__KIND_ENUM,
		PROTO__CAP(metric),
		.def = PROTO_METRIC_TIME,
		.names = proto__metric_names,
	},
	{ .name = "split_runq", .kind = PROTO__KIND_BOOL, PROTO__CAP(split_runq) },
	{ .name = "with_filename", .kind = PROTO__KIND_BOOL, PROTO__CAP(with_filename) },
	{ .name = "sampled", .kind = PROTO__KIND_BOOL, PROTO__CAP(sampled) },
	{
		.name = "sample_period_us",
		.kind = PROTO__KIND_UINT,
		PROTO__CAP(sample_period_us),
		.min = 0,
		.max = PROTO_MAX_SAMPLE_PERIOD_US,
	},
	{ .name = "oncpu", .kind = PROTO__KIND_BOOL, PROTO__CAP(oncpu) },
	{
		.name = "chain_depth",
		.kind = PROTO__KIND_UINT,
		PROTO__CAP(chain_depth),
		.min = 1,
		.max = PROTO_CHAIN_DEPTH_MAX,
		.def = PROTO_CHAIN_DEPTH_DEFAULT,
	},
	{
		.name = "requests",
		.kind = PROTO__KIND_STRINGS,
		PROTO__CAP(requests),
		.count_offset = offsetof(struct proto_capture_request, n_requests),
		.max = PROTO_REQUEST_SPEC_MAX,
	},
	{ .name = "lines", .kind = PROTO__KIND_BOOL, PROTO__CAP(lines) },
};

static const struct proto__field proto__windows_fields[] = {
	{
		.name = "since_ms",
		.kind = PROTO__KIND_UINT,
		PROTO__AT(struct proto_windows_request, since_ms),
		.max = PROTO__JSON_INT_MAX,
	},
};

#define PROTO__EXP(member) PROTO__AT(struct proto_export_request, member)

static const struct proto__field proto__export_fields[] = {
	PROTO__SELECTION_FIELDS(struct proto_export_request),
	PROTO__FILTER_FIELDS(struct proto_export_request),
	{
		.name = "format",
		.kind = PROTO__KIND_ENUM,
		PROTO__EXP(format),
		.def = PROTO_FORMAT_FOLDED,
		.names = proto__format_names,
	},
	PROTO__RENDER_FIELDS(struct proto_export_request),
	{
		.name = "diff_from_ms",
		.kind = PROTO__KIND_UINT,
		PROTO__EXP(diff_from_ms),
		.max = PROTO__JSON_INT_MAX,
	},
	{
		.name = "diff_to_ms",
		.kind = PROTO__KIND_UINT,
		PROTO__EXP(diff_to_ms),
		.max = PROTO__JSON_INT_MAX,
	},
	{
		.name = "diff_capture",
		.kind = PROTO__KIND_UINT,
		PROTO__EXP(diff_capture),
		.max = PROTO__JSON_INT_MAX,
	},
	{ .name = "normalize", .kind = PROTO__KIND_BOOL, PROTO__EXP(normalize) },
	{ .name = "strip_hex", .kind = PROTO__KIND_BOOL, PROTO__EXP(strip_hex) },
	{
		.name = "diff_widths_from_old",
		.kind = PROTO__KIND_BOOL,
		PROTO__EXP(diff_widths_from_old),
	},
	{ .name = "negate", .kind = PROTO__KIND_BOOL, PROTO__EXP(negate) },
	{
		.name = "kind",
		.kind = PROTO__KIND_ENUM,
		PROTO__EXP(kind),
		.def = PROTO_KIND_OFFCPU,
		.names = proto__kind_names,
	},
	{ .name = "oncpu", .kind = PROTO__KIND_BOOL, PROTO__EXP(oncpu) },
	{ .name = "lines", .kind = PROTO__KIND_BOOL, PROTO__EXP(lines) },
	{
		.name = "metric",
		.kind = PROTO__KIND_ENUM,
		PROTO__EXP(metric),
		.def = PROTO_METRIC_TIME,
		.names = proto__metric_names,
	},
};

#define PROTO__HIST(member) PROTO__AT(struct proto_hist_request, member)

static const struct proto__field proto__hist_fields[] = {
	PROTO__SELECTION_FIELDS(struct proto_hist_request),
	{
		.name = "kind",
		.kind = PROTO__KIND_ENUM,
		PROTO__HIST(kind),
		.def = PROTO_KIND_OFFCPU,
		.names = proto__kind_names,
		.allowed = PROTO__HIST_KINDS,
	},
};

#define PROTO__LAT(member) PROTO__AT(struct proto_latency_request, member)

static const struct proto__field proto__latency_fields[] = {
	{ .name = "pid",
	  .kind = PROTO__KIND_UINT,
	  PROTO__LAT(pid),
	  .min = 1,
	  .max = PROTO__PID_MAX },
	{ .name = "func",
	  .kind = PROTO__KIND_STRING,
	  PROTO__LAT(func),
	  .max = PROTO_REQUEST_SPEC_MAX },
	{
		.name = "seconds",
		.kind = PROTO__KIND_UINT,
		PROTO__LAT(seconds),
		.min = 1,
		.max = PROTO__SECONDS_MAX,
		.def = PROTO__SECONDS_DEFAULT,
	},
	{ .name = "snapshot", .kind = PROTO__KIND_BOOL, PROTO__LAT(snapshot) },
};

static const char *const proto__heatmap_rows_names[] = {
	[PROTO_HEATMAP_ROWS_PROCESS] = "process",
	[PROTO_HEATMAP_ROWS_THREAD] = "thread",
	[PROTO_HEATMAP_ROWS_STATE] = "state",
	NULL,
};

#define PROTO__HEAT(member) PROTO__AT(struct proto_heatmap_request, member)

static const struct proto__field proto__heatmap_fields[] = {
	{ .name = "from_ms",
	  .kind = PROTO__KIND_UINT,
	  PROTO__HEAT(from_ms),
	  .max = PROTO__JSON_INT_MAX },
	{ .name = "to_ms",
	  .kind = PROTO__KIND_UINT,
	  PROTO__HEAT(to_ms),
	  .max = PROTO__JSON_INT_MAX },
	{ .name = "pids",
	  .kind = PROTO__KIND_IDS,
	  PROTO__HEAT(pids),
	  .count_offset = offsetof(struct proto_heatmap_request, n_pids),
	  .min = 1,
	  .max = PROTO__PID_MAX },
	{ .name = "comm", .kind = PROTO__KIND_STRING, PROTO__HEAT(comm), .max = PROTO_COMM_MAX },
	{ .name = "states",
	  .kind = PROTO__KIND_STATES,
	  PROTO__HEAT(state_mask),
	  .def = THREAD_STATE_ALL },
	{ .name = "kind",
	  .kind = PROTO__KIND_ENUM,
	  PROTO__HEAT(kind),
	  .def = PROTO_KIND_OFFCPU,
	  .names = proto__kind_names },
	{ .name = "oncpu", .kind = PROTO__KIND_BOOL, PROTO__HEAT(oncpu) },
	{ .name = "rows",
	  .kind = PROTO__KIND_ENUM,
	  PROTO__HEAT(rows),
	  .def = PROTO_HEATMAP_ROWS_PROCESS,
	  .names = proto__heatmap_rows_names },
	{ .name = "max_rows",
	  .kind = PROTO__KIND_UINT,
	  PROTO__HEAT(max_rows),
	  .min = 1,
	  .max = PROTO_HEATMAP_MAX_ROWS,
	  .def = PROTO_HEATMAP_ROWS_DEFAULT },
};

/* The duplicate check keeps one bit per field of a command. */
_Static_assert(PROTO__ARRAY_SIZE(proto__capture_fields) <= 32, "too many capture fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__windows_fields) <= 32, "too many windows fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__export_fields) <= 32, "too many export fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__hist_fields) <= 32, "too many hist fields");

struct proto__command;

/* Rules that span fields, checked once all fields are in. given: bit i set
 * if the request named the command's field i (see proto__given()). */
typedef int proto__check_fn(const void *args, const struct proto__command *c, uint32_t given,
			    char *err, size_t err_size);
static proto__check_fn proto__capture_check, proto__export_check, proto__hist_check,
	proto__latency_check, proto__heatmap_check;

#define PROTO__FIELDS(member, table)                                                               \
	.offset = offsetof(struct proto_request, member), .fields = table,                         \
	.n_fields = PROTO__ARRAY_SIZE(table)

static const struct proto__command {
	const char *name;
	enum proto_cmd cmd;
	size_t offset;			   /* of the command's struct in struct proto_request */
	const struct proto__field *fields; /* NULL: the command takes no fields */
	size_t n_fields;
	proto__check_fn *check; /* NULL: none */
} proto__commands[] = {
	{ .name = "status", .cmd = PROTO_CMD_STATUS },
	{
		.name = "capture",
		.cmd = PROTO_CMD_CAPTURE,
		PROTO__FIELDS(capture, proto__capture_fields),
		.check = proto__capture_check,
	},
	{ .name = "stop", .cmd = PROTO_CMD_STOP },
	{
		.name = "windows",
		.cmd = PROTO_CMD_WINDOWS,
		PROTO__FIELDS(windows, proto__windows_fields),
	},
	{
		.name = "export",
		.cmd = PROTO_CMD_EXPORT,
		PROTO__FIELDS(export, proto__export_fields),
		.check = proto__export_check,
	},
	{
		.name = "hist",
		.cmd = PROTO_CMD_HIST,
		PROTO__FIELDS(hist, proto__hist_fields),
		.check = proto__hist_check,
	},
	{
		.name = "latency",
		.cmd = PROTO_CMD_LATENCY,
		PROTO__FIELDS(latency, proto__latency_fields),
		.check = proto__latency_check,
	},
	{
		.name = "heatmap",
		.cmd = PROTO_CMD_HEATMAP,
		PROTO__FIELDS(heatmap, proto__heatmap_fields),
		.check = proto__heatmap_check,
	},
};

#define PROTO__N_COMMANDS PROTO__ARRAY_SIZE(proto__commands)

/* ---- small helpers ----------------------------------------------------- */

/* Integer members of 4 or 8 bytes, in host byte order; memcpy keeps this free
 * of aliasing questions for the enum members. */
static void proto__store(void *dst, size_t size, uint64_t v)
{
	assert(size == sizeof(uint32_t) || size == sizeof(uint64_t));
	if (size == sizeof(uint32_t)) {
		uint32_t v32 = v;

		memcpy(dst, &v32, sizeof(v32));
	} else {
		memcpy(dst, &v, sizeof(v));
	}
}

static uint64_t proto__load(const void *src, size_t size)
{
	assert(size == sizeof(uint32_t) || size == sizeof(uint64_t));
	if (size == sizeof(uint32_t)) {
		uint32_t v32;

		memcpy(&v32, src, sizeof(v32));
		return v32;
	} else {
		uint64_t v;

		memcpy(&v, src, sizeof(v));
		return v;
	}
}

static int proto__fail(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int proto__fail(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;

	if (err && err_size) {
		va_start(ap, fmt);
		vsnprintf(err, err_size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/*
 * Offset of the first NUL in buf[0..len), raw or escaped as \u0000, or len.
 * cJSON strings are NUL-terminated, so either would silently cut a string
 * (or, raw, the whole input). In valid JSON every backslash starts an escape,
 * which makes a plain scan enough; in invalid JSON cJSON finds the error.
 */
static size_t proto__find_nul(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (!buf[i])
			return i;
		if (buf[i] != '\\')
			continue;
		if (len - i >= 6 && !memcmp(buf + i + 1, "u0000", 5))
			return i;
		i++; /* the escaped character, which may be a backslash */
		if (i < len && !buf[i])
			return i;
	}
	return len;
}

/*
 * Parses buf[0..len) as exactly one JSON value, surrounded by optional
 * whitespace. Returns the tree, or NULL with *ret_offset set to the byte
 * offset of the first error. len is authoritative; a NUL is an error.
 */
static cJSON *proto__parse_json(const char *buf, size_t len, size_t *ret_offset)
{
	const char *end = NULL;
	cJSON *root;
	size_t pos;

	*ret_offset = 0;
	if (!buf || !len)
		return NULL;
	pos = proto__find_nul(buf, len);
	if (pos < len) {
		*ret_offset = pos;
		return NULL;
	}
	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		if (end && end >= buf && end <= buf + len)
			*ret_offset = end - buf;
		return NULL;
	}
	pos = end - buf;
	while (pos < len &&
	       (buf[pos] == ' ' || buf[pos] == '\t' || buf[pos] == '\r' || buf[pos] == '\n'))
		pos++;
	if (pos < len) {
		cJSON_Delete(root);
		*ret_offset = pos;
		return NULL;
	}
	return root;
}

/*
 * Reads an integral JSON number in [min, max], or with zero_ok also 0, into
 * *ret. what names the value in messages, e.g. "field 'seconds'".
 */
static int proto__get_uint(const cJSON *item, const char *what, uint64_t min, uint64_t max,
			   bool zero_ok, uint64_t *ret, char *err, size_t err_size)
{
	double d;

	if (!cJSON_IsNumber(item))
		return proto__fail(err, err_size, "%s must be an integer", what);
	d = item->valuedouble;
	/* Converting NaN, infinities or |d| >= 2^63 to an integer is undefined;
	 * those fail the range check instead. */
	if (d > -9.0e18 && d < 9.0e18 && d != (double)(int64_t)d)
		return proto__fail(err, err_size, "%s must be an integer", what);
	if (zero_ok && d == 0) {
		*ret = 0;
		return 0;
	}
	if (!(d >= (double)min && d <= (double)max))
		return proto__fail(err, err_size, "%s must be %sbetween %" PRIu64 " and %" PRIu64,
				   what, zero_ok ? "0 or " : "", min, max);
	*ret = (uint64_t)d;
	return 0;
}

/* ---- requests ---------------------------------------------------------- */

static void proto__defaults(const struct proto__command *c, void *args)
{
	for (size_t i = 0; i < c->n_fields; i++) {
		const struct proto__field *f = &c->fields[i];
		char *dst = (char *)args + f->offset;

		switch (f->kind) {
		case PROTO__KIND_IDS:
		case PROTO__KIND_STRINGS:
			memset(dst, 0, f->size);
			proto__store((char *)args + f->count_offset, sizeof(size_t), 0);
			break;
		case PROTO__KIND_STRING:
			memset(dst, 0, f->size);
			break;
		default:
			proto__store(dst, f->size, f->def);
		}
	}
}

static int proto__parse_enum(const struct proto__field *f, const cJSON *item, void *dst,
			     const char *what, char *err, size_t err_size)
{
	char list[64] = "";

	for (size_t i = 0; f->names[i]; i++) {
		if (f->allowed && !(f->allowed & (UINT32_C(1) << i)))
			continue;
		if (cJSON_IsString(item) && !strcmp(item->valuestring, f->names[i])) {
			proto__store(dst, f->size, i);
			return 0;
		}
	}
	for (size_t i = 0; f->names[i]; i++) {
		if (f->allowed && !(f->allowed & (UINT32_C(1) << i)))
			continue;
		if (strlen(list) + strlen(f->names[i]) + 3 > sizeof(list))
			break;
		if (*list)
			strcat(list, ", ");
		strcat(list, f->names[i]);
	}
	return proto__fail(err, err_size, "%s must be one of: %s", what, list);
}

static bool proto__utf8_valid(const char *s);

/* args: the command's struct. */
static int proto__parse_field(const struct proto__field *f, const cJSON *item, void *args,
			      char *err, size_t err_size)
{
	char *dst = (char *)args + f->offset;
	char what[96];
	const cJSON *el;
	uint64_t v;
	size_t n;
	int r;

	snprintf(what, sizeof(what), "field '%s'", f->name);

	switch (f->kind) {
	case PROTO__KIND_UINT:
		r = proto__get_uint(item, what, f->min, f->max, f->zero_ok, &v, err, err_size);
		if (r < 0)
			return r;
		proto__store(dst, f->size, v);
		return 0;

	case PROTO__KIND_IDS: {
		size_t cap = f->size / sizeof(uint32_t);
		uint32_t ids[PROTO_MAX_IDS];

		if (!cJSON_IsArray(item))
			return proto__fail(err, err_size, "%s must be an array of integers", what);
		n = cJSON_GetArraySize(item);
		if (n > cap || n > PROTO_MAX_IDS)
			return proto__fail(err, err_size, "%s has %zu entries; at most %zu allowed",
					   what, n, cap);
		n = 0;
		cJSON_ArrayForEach(el, item)
		{
			char el_what[128];

			snprintf(el_what, sizeof(el_what), "%s[%zu]", what, n);
			r = proto__get_uint(el, el_what, f->min, f->max, false, &v, err, err_size);
			if (r < 0)
				return r;
			ids[n++] = v;
		}
		memcpy(dst, ids, n * sizeof(ids[0]));
		proto__store((char *)args + f->count_offset, sizeof(size_t), n);
		return 0;
	}

	case PROTO__KIND_STATES: {
		uint32_t mask = 0;

		if (!cJSON_IsArray(item))
			return proto__fail(err, err_size, "%s must be an array of strings", what);
		cJSON_ArrayForEach(el, item)
		{
			int bit;

			if (!cJSON_IsString(el))
				return proto__fail(err, err_size, "%s must be an array of strings",
						   what);
			bit = thread_state_parse(el->valuestring);
			if (bit < 0)
				return proto__fail(
					err, err_size,
					"%s: unknown thread state '%s' (expected R, S, D, O "
					"or running, sleeping, disk, other)",
					what, el->valuestring);
			mask |= 1u << bit;
		}
		/* An empty list would capture nothing; almost surely a client bug. */
		if (!mask)
			return proto__fail(err, err_size, "%s must not be empty", what);
		proto__store(dst, f->size, mask);
		return 0;
	}

	case PROTO__KIND_ENUM:
		return proto__parse_enum(f, item, dst, what, err, err_size);

	case PROTO__KIND_STRINGS: {
		size_t cap = f->size / (f->max + 1);

		if (!cJSON_IsArray(item))
			return proto__fail(err, err_size, "%s must be an array of strings", what);
		n = cJSON_GetArraySize(item);
		if (n > cap)
			return proto__fail(err, err_size, "%s has %zu entries; at most %zu allowed",
					   what, n, cap);
		n = 0;
		cJSON_ArrayForEach(el, item)
		{
			size_t len;

			if (!cJSON_IsString(el) || !*el->valuestring)
				return proto__fail(err, err_size,
						   "%s must be an array of non-empty strings",
						   what);
			len = strlen(el->valuestring);
			if (len > f->max)
				return proto__fail(err, err_size,
						   "%s[%zu] is %zu bytes long; at most %" PRIu64
						   " allowed",
						   what, n, len, f->max);
			if (!proto__utf8_valid(el->valuestring))
				return proto__fail(err, err_size, "%s[%zu] must be valid UTF-8",
						   what, n);
			memcpy(dst + n++ * (f->max + 1), el->valuestring, len + 1);
		}
		proto__store((char *)args + f->count_offset, sizeof(size_t), n);
		return 0;
	}

	case PROTO__KIND_STRING:
		assert(f->max < f->size);
		if (!cJSON_IsString(item))
			return proto__fail(err, err_size, "%s must be a string", what);
		/* No NUL can hide in it: proto__parse_json() refuses them. */
		n = strlen(item->valuestring);
		if (n > f->max)
			return proto__fail(err, err_size,
					   "%s is %zu bytes long; at most %" PRIu64 " allowed",
					   what, n, f->max);
		/* Formatting would replace invalid bytes, so such a value could
		 * not mean what it says. */
		if (!proto__utf8_valid(item->valuestring))
			return proto__fail(err, err_size, "%s must be valid UTF-8", what);
		if (n && f->valid && !f->valid(item->valuestring))
			return proto__fail(err, err_size, "%s must be %s, not '%s'", what,
					   f->expect, item->valuestring);
		if (n && f->regex) {
			char why[128];

			if (!stack_filter_regex_valid(item->valuestring, why, sizeof(why)))
				return proto__fail(err, err_size,
						   "%s is not a POSIX extended regex: %s", what,
						   why);
		}
		memcpy(dst, item->valuestring, n + 1);
		return 0;

	case PROTO__KIND_BOOL:
		/* 0 and 1 are refused: a client sending them has another type in mind. */
		if (!cJSON_IsBool(item))
			return proto__fail(err, err_size, "%s must be true or false", what);
		proto__store(dst, f->size, cJSON_IsTrue(item));
		return 0;
	}
	return proto__fail(err, err_size, "%s: internal error", what);
}

static const struct proto__field *proto__find_field(const struct proto__command *c,
						    const char *name, size_t *ret_index)
{
	for (size_t i = 0; i < c->n_fields; i++) {
		if (!strcmp(name, c->fields[i].name)) {
			*ret_index = i;
			return &c->fields[i];
		}
	}
	return NULL;
}

/* Whether the request named field name of command c; given as for checks. */
static bool proto__given(const struct proto__command *c, uint32_t given, const char *name)
{
	size_t index;

	if (!proto__find_field(c, name, &index)) {
		assert(!"no such field");
		return false;
	}
	return given & (UINT32_C(1) << index);
}

static int proto__capture_check(const void *args, const struct proto__command *command,
				uint32_t given, char *err, size_t err_size)
{
	const struct proto_capture_request *c = args;

	if (c->max_block_us && c->max_block_us < c->min_block_us)
		return proto__fail(err, err_size,
				   "field 'max_block_us' (%" PRIu64
				   ") must be >= 'min_block_us' (%" PRIu64 "), or 0 for no bound",
				   c->max_block_us, c->min_block_us);
	/* false is the default, as with the export's flags; a depth has none
	 * that could mean "absent", so any is refused. */
	if (c->split_runq && c->kind != PROTO_KIND_OFFCPU)
		return proto__fail(err, err_size, "field 'split_runq' needs kind offcpu, not %s",
				   proto_kind_name(c->kind));
	if (c->with_filename && c->kind != PROTO_KIND_FILEIO)
		return proto__fail(err, err_size, "field 'with_filename' needs kind fileio, not %s",
				   proto_kind_name(c->kind));
	if (c->sampled && c->kind != PROTO_KIND_OFFCPU && c->kind != PROTO_KIND_RUNQ)
		return proto__fail(err, err_size, "field 'sampled' needs kind offcpu or runq, not %s",
				   proto_kind_name(c->kind));
	if (c->sample_period_us && !c->sampled)
		return proto__fail(err, err_size, "field 'sample_period_us' needs 'sampled'");
	if (c->oncpu && c->kind != PROTO_KIND_OFFCPU)
		return proto__fail(err, err_size, "field 'oncpu' needs kind offcpu, not %s",
				   proto_kind_name(c->kind));
	/* Requests gate blocks; on-CPU samples are not request-synchronous. */
	if (c->n_requests && (c->oncpu || c->kind == PROTO_KIND_ONCPU))
		return proto__fail(err, err_size,
				   "field 'requests' does not apply to on-CPU samples (kind oncpu, "
				   "oncpu)");
	if (c->metric == PROTO_METRIC_BYTES && !proto__kind_io(c->kind))
		return proto__fail(err, err_size,
				   "field 'metric' bytes needs kind bio or fileio, not %s",
				   proto_kind_name(c->kind));
	if (c->n_requests && proto__kind_io(c->kind))
		return proto__fail(err, err_size, "field 'requests' needs an off-CPU kind, not %s",
				   proto_kind_name(c->kind));
	if (proto__given(command, given, "chain_depth") && c->kind != PROTO_KIND_CHAIN)
		return proto__fail(err, err_size, "field 'chain_depth' needs kind chain, not %s",
				   proto_kind_name(c->kind));
	return 0;
}

/* The baseline (A) of a differential export, and what needs one. */
static int proto__export_diff_check(const struct proto_export_request *e, char *err,
				    size_t err_size)
{
	const struct {
		const char *name;
		uint32_t value;
	} flags[] = {
		{ "normalize", e->normalize },
		{ "strip_hex", e->strip_hex },
		{ "diff_widths_from_old", e->diff_widths_from_old },
		{ "negate", e->negate },
	};

	if (e->diff_capture && (e->diff_from_ms || e->diff_to_ms))
		return proto__fail(err, err_size,
				   "field 'diff_capture' excludes 'diff_from_ms' and 'diff_to_ms': "
				   "the baseline is a capture or a time range, not both");
	if (e->diff_to_ms && !e->diff_from_ms)
		return proto__fail(err, err_size, "field 'diff_to_ms' needs 'diff_from_ms'");
	if (e->diff_to_ms && e->diff_to_ms <= e->diff_from_ms)
		return proto__fail(err, err_size,
				   "field 'diff_to_ms' (%" PRId64
				   ") must be > 'diff_from_ms' (%" PRId64 "), or 0 for now",
				   e->diff_to_ms, e->diff_from_ms);
	if (!e->diff_from_ms && !e->diff_capture) {
		for (size_t i = 0; i < PROTO__ARRAY_SIZE(flags); i++)
			if (flags[i].value)
				return proto__fail(err, err_size,
						   "field '%s' needs a baseline: 'diff_from_ms' or "
						   "'diff_capture'",
						   flags[i].name);
		return 0;
	}
	if (e->format != PROTO_FORMAT_FOLDED && e->format != PROTO_FORMAT_SVG)
		return proto__fail(err, err_size, "a differential export is folded or svg, not %s",
				   proto__format_names[e->format]);
	return 0;
}

/* Which windows export and hist read: exactly one of a range and a capture. */
static int proto__range_check(const struct proto__command *c, int64_t from_ms, int64_t to_ms,
			      uint64_t capture_id, char *err, size_t err_size)
{
	if (capture_id && (from_ms || to_ms))
		return proto__fail(err, err_size,
				   "field 'capture' excludes 'from_ms' and 'to_ms': ask for "
				   "a capture or a time range, not both");
	if (!capture_id && !from_ms)
		return proto__fail(err, err_size, "%s needs from_ms or capture", c->name);
	if (to_ms && to_ms <= from_ms)
		return proto__fail(err, err_size,
				   "field 'to_ms' (%" PRId64 ") must be > 'from_ms' (%" PRId64
				   "), or 0 for now",
				   to_ms, from_ms);
	return 0;
}

static int proto__export_check(const void *args, const struct proto__command *c, uint32_t given,
			       char *err, size_t err_size)
{
	const struct proto_export_request *e = args;
	int r;

	(void)given;
	if (e->oncpu && e->kind != PROTO_KIND_OFFCPU)
		return proto__fail(err, err_size, "field 'oncpu' needs kind offcpu, not %s",
				   proto_kind_name(e->kind));
	if (e->metric == PROTO_METRIC_BYTES && !proto__kind_io(e->kind))
		return proto__fail(err, err_size,
				   "field 'metric' bytes needs kind bio or fileio, not %s",
				   proto_kind_name(e->kind));
	r = proto__range_check(c, e->from_ms, e->to_ms, e->capture_id, err, err_size);
	return r < 0 ? r : proto__export_diff_check(e, err, err_size);
}

static int proto__hist_check(const void *args, const struct proto__command *c, uint32_t given,
			     char *err, size_t err_size)
{
	const struct proto_hist_request *h = args;

	(void)given;
	return proto__range_check(c, h->from_ms, h->to_ms, h->capture_id, err, err_size);
}

static int proto__heatmap_check(const void *args, const struct proto__command *c, uint32_t given,
				char *err, size_t err_size)
{
	const struct proto_heatmap_request *h = args;

	(void)given;
	if (h->oncpu && h->kind != PROTO_KIND_OFFCPU)
		return proto__fail(err, err_size, "field 'oncpu' needs kind offcpu, not %s",
				   proto_kind_name(h->kind));
	if (!h->from_ms)
		return proto__fail(err, err_size, "heatmap needs from_ms");
	return proto__range_check(c, h->from_ms, h->to_ms, 0, err, err_size);
}

static int proto__latency_check(const void *args, const struct proto__command *c, uint32_t given,
				char *err, size_t err_size)
{
	const struct proto_latency_request *l = args;

	(void)c;
	(void)given;
	if (!l->pid)
		return proto__fail(err, err_size, "latency needs 'pid'");
	if (!l->func[0])
		return proto__fail(err, err_size, "latency needs 'func'");
	return 0;
}

static int proto__parse_request(const cJSON *root, struct proto_request *req, char *err,
				size_t err_size)
{
	const struct proto__command *c = NULL;
	const cJSON *v, *cmd, *item;
	const char *cmd_name;
	uint32_t seen = 0;
	void *args;
	int r;

	if (!cJSON_IsObject(root))
		return proto__fail(err, err_size, "request must be a JSON object");

	/* The version comes first: another version may use another shape. */
	v = cJSON_GetObjectItemCaseSensitive(root, "v");
	if (!v)
		return proto__fail(err, err_size, "missing field 'v' (protocol version)");
	if (!cJSON_IsNumber(v))
		return proto__fail(err, err_size, "field 'v' must be an integer");
	if (v->valuedouble != PROTO_VERSION)
		return proto__fail(err, err_size,
				   "unsupported protocol version %g; this daemon speaks %d",
				   v->valuedouble, PROTO_VERSION);

	cmd = cJSON_GetObjectItemCaseSensitive(root, "cmd");
	if (!cmd)
		return proto__fail(err, err_size, "missing field 'cmd'");
	if (!cJSON_IsString(cmd))
		return proto__fail(err, err_size, "field 'cmd' must be a string");
	cmd_name = cmd->valuestring;
	for (size_t i = 0; i < PROTO__N_COMMANDS; i++) {
		if (!strcmp(cmd_name, proto__commands[i].name)) {
			c = &proto__commands[i];
			break;
		}
	}
	if (!c)
		return proto__fail(err, err_size, "unknown command '%s'", cmd_name);
	req->cmd = c->cmd;
	args = (char *)req + c->offset;
	proto__defaults(c, args);

	cJSON_ArrayForEach(item, root)
	{
		const struct proto__field *f;
		const char *name = item->string;
		size_t index;

		if (!strcmp(name, "v") || !strcmp(name, "cmd")) {
			/* cJSON keeps duplicate keys; the lookups above saw the first. */
			if (item != v && item != cmd)
				return proto__fail(err, err_size, "duplicate field '%s'", name);
			continue;
		}
		f = proto__find_field(c, name, &index);
		if (!f)
			return proto__fail(err, err_size, "unknown field '%s' for command '%s'",
					   name, cmd_name);
		if (seen & (UINT32_C(1) << index))
			return proto__fail(err, err_size, "duplicate field '%s'", name);
		seen |= UINT32_C(1) << index;
		r = proto__parse_field(f, item, args, err, err_size);
		if (r < 0)
			return r;
	}
	return c->check ? c->check(args, c, seen, err, err_size) : 0;
}

int proto_request_parse(const char *buf, size_t len, struct proto_request *ret, char *err,
			size_t err_size)
{
	size_t offset;
	cJSON *root;
	int r;

	if (err && err_size)
		err[0] = '\0';
	if (!buf || !len)
		return proto__fail(err, err_size, "empty request");
	root = proto__parse_json(buf, len, &offset);
	if (!root)
		return proto__fail(err, err_size, "malformed JSON at byte %zu", offset);
	memset(ret, 0, sizeof(*ret));
	r = proto__parse_request(root, ret, err, err_size);
	cJSON_Delete(root);
	return r;
}

static int proto__name_index(const char *const *names, const char *name)
{
	for (int i = 0; name && names[i]; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -EINVAL;
}

int proto_format_from_name(const char *name)
{
	return proto__name_index(proto__format_names, name);
}

int proto_palette_from_name(const char *name)
{
	return proto__name_index(proto__palette_names, name);
}

int proto_kind_from_name(const char *name)
{
	return proto__name_index(proto__kind_names, name);
}

const char *proto_kind_name(unsigned kind)
{
	return kind < PROTO__ARRAY_SIZE(proto__kind_names) - 1 ? proto__kind_names[kind] : "?";
}

/* By hand, not strtod(): that one follows LC_NUMERIC and takes "1e3", " 1",
 * "inf" and hex floats. */
int proto_minwidth_parse(const char *s, double *ret_value, bool *ret_percent)
{
	const char *p = s;
	double v = 0, scale = 1;
	bool percent;

	if (!s || strlen(s) > PROTO_MINWIDTH_MAX || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		for (p++; *p >= '0' && *p <= '9'; p++) {
			scale /= 10;
			v += (*p - '0') * scale;
		}
	}
	percent = *p == '%';
	if (percent)
		p++;
	if (*p || (percent && v > 100))
		return -EINVAL;
	*ret_value = v;
	*ret_percent = percent;
	return 0;
}

/* ---- reply and request formatting -------------------------------------- */

/*
 * Length of the well-formed UTF-8 sequence at s, or 0 if there is none
 * (overlong forms, surrogates and code points past U+10FFFF are not).
 * Stops at the first bad byte, so never reads past a NUL.
 */
static size_t proto__utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

static bool proto__utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; *p; p += n) {
		n = proto__utf8_seq(p);
		if (!n)
			return false;
	}
	return true;
}

/* A malloc'd copy of s with each byte that does not start valid UTF-8
 * replaced by U+FFFD; NULL on ENOMEM. */
static char *proto__utf8_fix(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char *fixed, *q;
	size_t n;

	fixed = malloc(strlen(s) * 3 + 1);
	if (!fixed)
		return NULL;
	for (q = fixed; *p; p += n ? n : 1) {
		n = proto__utf8_seq(p);
		if (n) {
			memcpy(q, p, n);
			q += n;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
		}
	}
	*q = '\0';
	return (char *)fixed;
}

/*
 * A JSON string item for s. cJSON escapes quotes and control characters but
 * copies other bytes as they are, and comm names, symbols and error messages
 * (which quote client input) may hold any bytes: cleaning them keeps every
 * line valid JSON. NULL becomes "".
 */
cJSON *proto__string(const char *s)
{
	cJSON *item;
	char *fixed;

	if (!s)
		s = "";
	if (proto__utf8_valid(s))
		return cJSON_CreateString(s);
	fixed = proto__utf8_fix(s);
	if (!fixed)
		return NULL;
	item = cJSON_CreateString(fixed);
	free(fixed);
	return item;
}

/* Adds item under name (cleaned like a string value: counter names come
 * from the caller; NULL becomes ""). Consumes item, also on failure. */
static bool proto__add_item(cJSON *obj, const char *name, cJSON *item)
{
	char *fixed = NULL;
	bool ok;

	if (!item)
		return false;
	if (!name)
		name = "";
	if (!proto__utf8_valid(name)) {
		fixed = proto__utf8_fix(name);
		if (!fixed) {
			cJSON_Delete(item);
			return false;
		}
		name = fixed;
	}
	ok = cJSON_AddItemToObject(obj, name, item);
	if (!ok)
		cJSON_Delete(item);
	free(fixed);
	return ok;
}

static bool proto__add_string(cJSON *obj, const char *name, const char *s)
{
	return proto__add_item(obj, name, proto__string(s));
}

/*
 * Integers go out as raw decimal text: cJSON prints doubles with 15
 * significant digits, which would round nanosecond totals past 10^15.
 */
static cJSON *proto__u64(uint64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRIu64, v);
	return cJSON_CreateRaw(text);
}

static bool proto__add_u64(cJSON *obj, const char *name, uint64_t v)
{
	return proto__add_item(obj, name, proto__u64(v));
}

static bool proto__add_i64(cJSON *obj, const char *name, int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return proto__add_item(obj, name, cJSON_CreateRaw(text));
}

/* cJSON would print NaN and infinities as null; rates are never negative either. */
static bool proto__add_rate(cJSON *obj, const char *name, double v)
{
	return proto__add_item(obj, name, cJSON_CreateNumber(isfinite(v) && v > 0 ? v : 0));
}

static bool proto__add_bool(cJSON *obj, const char *name, bool v)
{
	return proto__add_item(obj, name, cJSON_CreateBool(v));
}

static bool proto__add_counters(cJSON *obj, const char *name, const struct proto_counter *c,
				size_t n)
{
	cJSON *o = cJSON_CreateObject();

	for (size_t i = 0; o && c && i < n; i++) {
		if (!proto__add_u64(o, c[i].name, c[i].value)) {
			cJSON_Delete(o);
			return false;
		}
	}
	return proto__add_item(obj, name, o);
}

static bool proto__add_frames(cJSON *obj, const char *name, const char *const *frames, size_t n)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && frames && i < n; i++) {
		cJSON *s = proto__string(frames[i]);

		if (!s || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			cJSON_Delete(a);
			return false;
		}
	}
	return proto__add_item(obj, name, a);
}

/* A reply or request object with its "v" member. */
static cJSON *proto__new_message(void)
{
	cJSON *root = cJSON_CreateObject();

	if (root && !proto__add_u64(root, "v", PROTO_VERSION)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* Prints root as one '\n'-terminated line and frees it; NULL on ENOMEM. */
static char *proto__finish(cJSON *root)
{
	char *line, *grown;
	size_t len;

	if (!root)
		return NULL;
	line = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!line)
		return NULL;
	/* cJSON allocates with malloc (no hooks are installed), so realloc is fine. */
	len = strlen(line);
	grown = realloc(line, len + 2);
	if (!grown) {
		free(line);
		return NULL;
	}
	grown[len] = '\n';
	grown[len + 1] = '\0';
	return grown;
}

/* args: the command's struct. */
static bool proto__format_field(cJSON *obj, const struct proto__field *f, const void *args)
{
	const char *src = (const char *)args + f->offset;
	uint64_t v;
	cJSON *a;

	switch (f->kind) {
	case PROTO__KIND_UINT:
		v = proto__load(src, f->size);
		return v == f->def || proto__add_u64(obj, f->name, v);

	case PROTO__KIND_IDS: {
		size_t n = proto__load((const char *)args + f->count_offset, sizeof(size_t));
		uint32_t id;

		/* The caller builds the request; more ids would not fit the struct. */
		assert(n <= f->size / sizeof(uint32_t));
		if (!n)
			return true;
		a = cJSON_CreateArray();
		for (size_t i = 0; a && i < n; i++) {
			memcpy(&id, src + i * sizeof(id), sizeof(id));
			if (!cJSON_AddItemToArray(a, proto__u64(id))) {
				cJSON_Delete(a);
				return false;
			}
		}
		return proto__add_item(obj, f->name, a);
	}

	case PROTO__KIND_STATES:
		v = proto__load(src, f->size);
		if (v == f->def)
			return true;
		a = cJSON_CreateArray();
		for (unsigned bit = 0; a && bit < 32; bit++) {
			/* Unknown bits are sent as "?" so the daemon rejects them. */
			if ((v & (UINT64_C(1) << bit)) &&
			    !cJSON_AddItemToArray(a, cJSON_CreateString(thread_state_name(bit)))) {
				cJSON_Delete(a);
				return false;
			}
		}
		return proto__add_item(obj, f->name, a);

	case PROTO__KIND_ENUM: {
		size_t n_names = 0;

		v = proto__load(src, f->size);
		while (f->names[n_names])
			n_names++;
		assert(v < n_names);
		return v == f->def || proto__add_string(obj, f->name, f->names[v]);
	}

	case PROTO__KIND_STRING:
		/* The caller fills a fixed buffer; it must stay terminated. */
		assert(memchr(src, '\0', f->size));
		return !*src || proto__add_string(obj, f->name, src);

	case PROTO__KIND_STRINGS: {
		size_t n = proto__load((const char *)args + f->count_offset, sizeof(size_t));

		assert(n <= f->size / (f->max + 1));
		if (!n)
			return true;
		a = cJSON_CreateArray();
		for (size_t i = 0; a && i < n; i++) {
			const char *str = src + i * (f->max + 1);

			assert(memchr(str, '\0', f->max + 1));
			if (!cJSON_AddItemToArray(a, cJSON_CreateString(str))) {
				cJSON_Delete(a);
				return false;
			}
		}
		return proto__add_item(obj, f->name, a);
	}

	case PROTO__KIND_BOOL:
		v = proto__load(src, f->size);
		return v == f->def || proto__add_bool(obj, f->name, v);
	}
	return false;
}

char *proto_request_format(const struct proto_request *req)
{
	cJSON *root = proto__new_message();
	const struct proto__command *c = NULL;
	const void *args;

	for (size_t i = 0; i < PROTO__N_COMMANDS; i++)
		if (proto__commands[i].cmd == req->cmd)
			c = &proto__commands[i];
	assert(c);
	args = (const char *)req + c->offset;
	if (!root || !proto__add_string(root, "cmd", c->name))
		goto fail;
	for (size_t i = 0; i < c->n_fields; i++)
		if (!proto__format_field(root, &c->fields[i], args))
			goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_reply_error(const char *code, const char *message)
{
	cJSON *root = proto__new_message();
	cJSON *error;

	if (!root || !proto__add_bool(root, "ok", false))
		goto fail;
	error = cJSON_AddObjectToObject(root, "error");
	if (!proto__add_string(error, "code", code ? code : PROTO_ERR_INTERNAL) ||
	    !proto__add_string(error, "message", message))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

/* {"v":1,"ok":true,"cmd":CMD}, to which the caller adds the body. */
static cJSON *proto__new_ok_head(const char *cmd)
{
	cJSON *root = proto__new_message();

	if (!root || !proto__add_bool(root, "ok", true) || !proto__add_string(root, "cmd", cmd)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* {"v":1,"ok":true,"cmd":CMD,CMD:{}}, with *ret_body pointing at the last object. */
static cJSON *proto__new_ok(const char *cmd, cJSON **ret_body)
{
	cJSON *root = proto__new_ok_head(cmd);

	if (root && !(*ret_body = cJSON_AddObjectToObject(root, cmd))) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

static bool proto__add_counts(cJSON *o, const char *name, const uint64_t *counts, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, name);

	if (!a)
		return false;
	for (size_t b = 0; b < n; b++) {
		cJSON *n = proto__u64(counts[b]);

		if (!n || !cJSON_AddItemToArray(a, n)) {
			cJSON_Delete(n);
			return false;
		}
	}
	return true;
}

static bool proto__add_buckets(cJSON *o, const char *name, const uint64_t *counts)
{
	return proto__add_counts(o, name, counts, PROTO_HIST_BUCKETS);
}

/* "requests": [...], left out when there are none. */
static bool proto__add_requests(cJSON *body, const struct proto_request_stats *r, size_t n)
{
	cJSON *list;

	if (!n)
		return true;
	list = cJSON_AddArrayToObject(body, "requests");
	for (size_t i = 0; list && i < n; i++) {
		cJSON *funcs, *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			return false;
		}
		if (!proto__add_string(o, "symbol", r[i].symbol) ||
		    !(funcs = cJSON_AddArrayToObject(o, "functions")))
			return false;
		for (size_t f = 0; f < r[i].n_functions; f++) {
			cJSON *fo = cJSON_CreateObject();

			if (!fo || !cJSON_AddItemToArray(funcs, fo)) {
				cJSON_Delete(fo);
				return false;
			}
			if (!proto__add_string(fo, "name", r[i].functions[f].name) ||
			    !proto__add_string(fo, "binary", r[i].functions[f].binary))
				return false;
		}
		if (!proto__add_u64(o, "count", r[i].count) ||
		    !proto__add_u64(o, "calls", r[i].calls) ||
		    (r[i].warning && !proto__add_string(o, "warning", r[i].warning)) ||
		    !proto__add_u64(o, "wall_ns", r[i].wall_ns) ||
		    !proto__add_u64(o, "offcpu_ns", r[i].offcpu_ns) ||
		    !proto__add_buckets(o, "wall_hist", r[i].wall_hist) ||
		    !proto__add_buckets(o, "offcpu_hist", r[i].offcpu_hist))
			return false;
	}
	return list != NULL;
}

static bool proto__add_kinds(cJSON *body, const struct proto_kind_status *k, size_t n)
{
	cJSON *kinds = cJSON_AddArrayToObject(body, "kinds");

	if (!kinds)
		return false;
	for (size_t i = 0; k && i < n; i++) {
		cJSON *ko = cJSON_CreateObject();

		if (!ko || !cJSON_AddItemToArray(kinds, ko)) {
			cJSON_Delete(ko);
			return false;
		}
		if (!proto__add_string(ko, "name", k[i].name) ||
		    !proto__add_string(ko, "state", k[i].state) ||
		    !proto__add_string(ko, "detail", k[i].detail ? k[i].detail : ""))
			return false;
	}
	return true;
}

char *proto_reply_status(const struct proto_status *s)
{
	cJSON *body, *programs, *groups, *maps, *store, *daemon, *unwind, *pt, *sampling,
		*root = proto__new_ok("status", &body);

	if (!root)
		return NULL;
	if (!proto__add_string(body, "version", s->version) ||
	    !proto__add_u64(body, "uptime_s", s->uptime_s) ||
	    !proto__add_u64(body, "pid", s->pid) ||
	    !proto__add_string(body, "tracepoint", s->tracepoint) ||
	    !proto__add_string(body, "bio_tracepoints", s->bio_tracepoints) ||
	    !proto__add_string(body, "fileio_tracepoints", s->fileio_tracepoints) ||
	    !(programs = cJSON_AddArrayToObject(body, "programs")))
		goto fail;
	for (size_t i = 0; s->programs && i < s->n_programs; i++) {
		cJSON *p = cJSON_CreateObject();

		if (!p || !cJSON_AddItemToArray(programs, p)) {
			cJSON_Delete(p);
			goto fail;
		}
		if (!proto__add_string(p, "name", s->programs[i].name) ||
		    !proto__add_bool(p, "loaded", s->programs[i].loaded) ||
		    !proto__add_bool(p, "attached", s->programs[i].attached) ||
		    !proto__add_u64(p, "run_cnt", s->programs[i].run_cnt) ||
		    !proto__add_u64(p, "run_time_ns", s->programs[i].run_time_ns) ||
		    !proto__add_rate(p, "events_per_s", s->programs[i].events_per_s))
			goto fail;
	}
	if (!(groups = cJSON_AddArrayToObject(body, "program_groups")))
		goto fail;
	for (size_t i = 0; i < s->n_groups && i < PROTO_MAX_GROUPS; i++) {
		cJSON *g = cJSON_CreateObject();

		if (!g || !cJSON_AddItemToArray(groups, g)) {
			cJSON_Delete(g);
			goto fail;
		}
		if (!proto__add_string(g, "name", s->groups[i].name) ||
		    !proto__add_string(g, "state", s->groups[i].state) ||
		    !proto__add_string(g, "reason",
				       s->groups[i].reason ? s->groups[i].reason : "") ||
		    !proto__add_u64(g, "load_ms", s->groups[i].load_ms))
			goto fail;
	}
	if (!(maps = cJSON_AddArrayToObject(body, "maps")))
		goto fail;
	for (size_t i = 0; s->maps && i < s->n_maps; i++) {
		cJSON *mo = cJSON_CreateObject();

		if (!mo || !cJSON_AddItemToArray(maps, mo)) {
			cJSON_Delete(mo);
			goto fail;
		}
		if (!proto__add_string(mo, "name", s->maps[i].name) ||
		    !proto__add_u64(mo, "entries", s->maps[i].entries) ||
		    !proto__add_u64(mo, "max_entries", s->maps[i].max_entries) ||
		    !proto__add_rate(mo, "fill_pct", s->maps[i].fill_pct))
			goto fail;
	}
	if (!(store = cJSON_AddObjectToObject(body, "store")) ||
	    !proto__add_string(store, "path", s->store.path ? s->store.path : "") ||
	    !proto__add_u64(store, "bytes", s->store.bytes) ||
	    !proto__add_u64(store, "windows", s->store.windows) ||
	    !proto__add_u64(store, "windows_written", s->store.windows_written) ||
	    !proto__add_u64(store, "windows_failed", s->store.windows_failed) ||
	    !proto__add_bool(store, "disk_full", s->store.disk_full) ||
	    !proto__add_string(store, "last_error",
			       s->store.last_error ? s->store.last_error : "") ||
	    !(daemon = cJSON_AddObjectToObject(body, "daemon")) ||
	    !proto__add_rate(daemon, "cpu_pct", s->cpu_pct) ||
	    !proto__add_u64(daemon, "rss_bytes", s->rss_bytes) ||
	    !(unwind = cJSON_AddObjectToObject(body, "unwind")) ||
	    !proto__add_string(unwind, "mode", s->unwind.mode ? s->unwind.mode : "fp") ||
	    !proto__add_u64(unwind, "tables", s->unwind.tables) ||
	    !proto__add_u64(unwind, "processes", s->unwind.processes) ||
	    !proto__add_u64(unwind, "rows_used", s->unwind.rows_used) ||
	    !proto__add_u64(unwind, "rows_max", s->unwind.rows_max) ||
	    !proto__add_u64(unwind, "table_bytes", s->unwind.table_bytes) ||
	    !proto__add_u64(unwind, "builds", s->unwind.builds) ||
	    !proto__add_u64(unwind, "build_ns_total", s->unwind.build_ns_total) ||
	    !proto__add_u64(unwind, "build_ns_max", s->unwind.build_ns_max) ||
	    !proto__add_string(unwind, "build_max_path",
			       s->unwind.build_max_path ? s->unwind.build_max_path : "") ||
	    !proto__add_u64(unwind, "evictions", s->unwind.evictions) ||
	    !proto__add_u64(unwind, "no_room", s->unwind.no_room) ||
	    !proto__add_u64(unwind, "failed", s->unwind.failed) ||
	    !proto__add_u64(unwind, "requests", s->unwind.requests) ||
	    !(pt = cJSON_AddObjectToObject(body, "pt")) ||
	    !proto__add_string(pt, "event", s->pt.event ? s->pt.event : "intel_pt") ||
	    !proto__add_bool(pt, "available", s->pt.available) ||
	    !proto__add_string(pt, "reason", s->pt.reason ? s->pt.reason : "") ||
	    !proto__add_u64(pt, "address_ranges", s->pt.address_ranges) ||
	    !proto__add_u64(pt, "recording_pid", s->pt.recording_pid) ||
	    !(sampling = cJSON_AddObjectToObject(body, "sampling")) ||
	    !proto__add_string(sampling, "stacks", s->sampling.stacks ? s->sampling.stacks : "") ||
	    !proto__add_u64(sampling, "period_us", s->sampling.period_us) ||
	    !proto__add_string(sampling, "walk", s->sampling.walk ? s->sampling.walk : "") ||
	    !proto__add_string(sampling, "walk_reason",
			       s->sampling.walk_reason ? s->sampling.walk_reason : "") ||
	    !proto__add_rate(sampling, "blocks_per_s", s->sampling.blocks_per_s) ||
	    !proto__add_rate(sampling, "samples_per_s", s->sampling.samples_per_s) ||
	    !proto__add_rate(sampling, "user_walks_per_s", s->sampling.user_walks_per_s) ||
	    !proto__add_rate(sampling, "kernel_walks_per_s", s->sampling.kernel_walks_per_s) ||
	    !proto__add_u64(sampling, "samples_lost", s->sampling.samples_lost) ||
	    !proto__add_u64(sampling, "window_blocks", s->sampling.window_blocks) ||
	    !proto__add_u64(sampling, "window_samples", s->sampling.window_samples) ||
	    !proto__add_rate(sampling, "window_error_pct", s->sampling.window_error_pct))
		goto fail;
	if (!proto__add_u64(body, "slots_active", s->slots_active) ||
	    !proto__add_u64(body, "slots_max", s->slots_max) ||
	    !proto__add_u64(body, "captures_running", s->captures_running) ||
	    !proto__add_rate(body, "switches_per_s", s->switches_per_s) ||
	    !proto__add_rate(body, "recorded_per_s", s->recorded_per_s) ||
	    !proto__add_counters(body, "counters", s->counters, s->n_counters) ||
	    !proto__add_requests(body, s->requests, s->n_requests) ||
	    !proto__add_kinds(body, s->kinds, s->n_kinds))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

/* A row's or histogram's kind name; rows made before kinds existed are offcpu. */
static const char *proto__kind_or_default(const char *kind)
{
	return kind ? kind : proto__kind_names[PROTO_KIND_OFFCPU];
}

static bool proto__add_sample(cJSON *samples, const struct proto_sample *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(samples, o)) {
		cJSON_Delete(o);
		return false;
	}
	return proto__add_string(o, "comm", s->comm) && proto__add_u64(o, "tgid", s->tgid) &&
	       proto__add_u64(o, "pid", s->pid) && proto__add_string(o, "state", s->state) &&
	       proto__add_string(o, "kind", proto__kind_or_default(s->kind)) &&
	       proto__add_u64(o, "value_ns", s->value_ns) && proto__add_u64(o, "count", s->count) &&
	       proto__add_frames(o, "ustack", s->ustack, s->n_ustack) &&
	       proto__add_frames(o, "kstack", s->kstack, s->n_kstack) &&
	       (!s->n_chain || proto__add_frames(o, "chain", s->chain, s->n_chain));
}

/* The result's "folded" text or "samples" array, whichever is set. */
static bool proto__add_rows(cJSON *body, const char *folded, const struct proto_sample *samples,
			    size_t n_samples)
{
	cJSON *a;

	if (folded && !proto__add_string(body, "folded", folded))
		return false;
	if (!samples)
		return true;
	a = cJSON_AddArrayToObject(body, "samples");
	if (!a)
		return false;
	for (size_t i = 0; i < n_samples; i++)
		if (!proto__add_sample(a, &samples[i]))
			return false;
	return true;
}

char *proto_reply_capture(const struct proto_capture_result *r, size_t n_samples)
{
	cJSON *body, *us, *sm, *root = proto__new_ok("capture", &body);

	if (!root)
		return NULL;

	if (!proto__add_u64(body, "id", r->id) ||
	    !proto__add_u64(body, "duration_ns", r->duration_ns) ||
	    !proto__add_u64(body, "total_ns", r->total_ns) ||
	    !(us = cJSON_AddObjectToObject(body, "user_stacks")) ||
	    !proto__add_u64(us, "complete_ns", r->user_stacks.complete_ns) ||
	    !proto__add_u64(us, "truncated_ns", r->user_stacks.truncated_ns) ||
	    !proto__add_u64(us, "frame_pointer_ns", r->user_stacks.frame_pointer_ns) ||
	    !proto__add_u64(body, "samples_count", r->n_samples) ||
	    !proto__add_bool(body, "target_exited", r->target_exited) ||
	    !proto__add_counters(body, "drops", r->drops, r->n_drops) ||
	    !proto__add_rows(body, r->folded, r->samples, n_samples) ||
	    (r->output && !proto__add_string(body, "output", r->output)) ||
	    !proto__add_requests(body, r->requests, r->n_requests) ||
	    (r->loaded && *r->loaded &&
	     (!proto__add_string(body, "loaded", r->loaded) ||
	      !proto__add_u64(body, "load_ms", r->load_ms))))
		goto fail;
	if (r->sampling.period_us &&
	    (!(sm = cJSON_AddObjectToObject(body, "sampling")) ||
	     !proto__add_u64(sm, "period_us", r->sampling.period_us) ||
	     !proto__add_u64(sm, "blocks", r->sampling.blocks) ||
	     !proto__add_u64(sm, "samples", r->sampling.samples) ||
	     !proto__add_rate(sm, "error_pct", r->sampling.error_pct)))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_reply_windows(const struct proto_window_info *w, size_t n)
{
	cJSON *list, *root = proto__new_ok_head("windows");

	if (!root || !(list = cJSON_AddArrayToObject(root, "windows")))
		goto fail;
	for (size_t i = 0; w && i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (!proto__add_u64(o, "id", w[i].id) ||
		    !proto__add_i64(o, "start_ms", w[i].start_ms) ||
		    !proto__add_i64(o, "end_ms", w[i].end_ms) ||
		    !proto__add_u64(o, "capture_id", w[i].capture_id) ||
		    !proto__add_u64(o, "stacks", w[i].stacks) ||
		    !proto__add_u64(o, "samples", w[i].samples) ||
		    !proto__add_u64(o, "bytes", w[i].bytes))
			goto fail;
	}
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_reply_export(const struct proto_export_result *r, size_t n_samples)
{
	cJSON *body, *root = proto__new_ok("export", &body);

	if (!root)
		return NULL;
	if (!proto__add_i64(body, "from_ms", r->from_ms) ||
	    !proto__add_i64(body, "to_ms", r->to_ms) ||
	    !proto__add_u64(body, "capture_id", r->capture_id) ||
	    !proto__add_u64(body, "windows", r->windows) ||
	    !proto__add_u64(body, "total_ns", r->total_ns) ||
	    !proto__add_u64(body, "samples_count", r->n_samples) ||
	    !proto__add_bool(body, "differential", r->differential) ||
	    !proto__add_u64(body, "diff_windows", r->diff_windows) ||
	    !proto__add_rows(body, r->folded, r->samples, n_samples) ||
	    (r->output && !proto__add_string(body, "output", r->output)))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

static bool proto__add_hist_process(cJSON *list, const struct proto_hist_process *p)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(list, o)) {
		cJSON_Delete(o);
		return false;
	}
	return proto__add_u64(o, "tgid", p->tgid) && proto__add_string(o, "comm", p->comm) &&
	       proto__add_buckets(o, "counts", p->counts);
}

char *proto_reply_hist(const struct proto_hist_result *r)
{
	cJSON *body, *list, *root = proto__new_ok("hist", &body);

	if (!root)
		return NULL;
	if (!proto__add_string(body, "kind", proto__kind_or_default(r->kind)) ||
	    !proto__add_i64(body, "from_ms", r->from_ms) ||
	    !proto__add_i64(body, "to_ms", r->to_ms) ||
	    !proto__add_u64(body, "capture_id", r->capture_id) ||
	    !proto__add_u64(body, "windows", r->windows) ||
	    !(list = cJSON_AddArrayToObject(body, "processes")))
		goto fail;
	for (size_t i = 0; r->processes && i < r->n_processes; i++)
		if (!proto__add_hist_process(list, &r->processes[i]))
			goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

/* An object appended to list, or NULL. */
static cJSON *proto__append_object(cJSON *list)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(list, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *proto_reply_latency(const struct proto_latency_result *r)
{
	cJSON *body, *children, *timeline, *o, *root = proto__new_ok("latency", &body);
	size_t n_hist = PROTO_LATENCY_BUCKETS;

	if (!root)
		return NULL;
	while (n_hist && !r->hist[n_hist - 1]) /* up to the last bucket used */
		n_hist--;
	if (!proto__add_string(body, "func", r->func) || !proto__add_u64(body, "calls", r->calls) ||
	    !proto__add_u64(body, "total_ns", r->total_ns) ||
	    !proto__add_u64(body, "min_ns", r->calls ? r->min_ns : 0) ||
	    !proto__add_u64(body, "max_ns", r->max_ns) ||
	    !proto__add_u64(body, "off_cpu_ns", r->off_cpu_ns) ||
	    !proto__add_u64(body, "out_of_range", r->out_of_range) ||
	    !proto__add_u64(body, "incomplete", r->incomplete) ||
	    !proto__add_u64(body, "unmatched_returns", r->unmatched_returns) ||
	    !proto__add_u64(body, "overflows", r->overflows) ||
	    !proto__add_u64(body, "decode_errors", r->decode_errors) ||
	    !proto__add_counts(body, "hist_log2_ns", r->hist, n_hist) ||
	    !(children = cJSON_AddArrayToObject(body, "children")) ||
	    !(timeline = cJSON_AddArrayToObject(body, "timeline")))
		goto fail;
	for (size_t i = 0; i < r->n_children; i++) {
		const struct proto_latency_child *c = &r->children[i];

		if (!(o = proto__append_object(children)) ||
		    !proto__add_string(o, "name", c->name) ||
		    !proto__add_u64(o, "count", c->count) ||
		    !proto__add_u64(o, "total_ns", c->total_ns) ||
		    !proto__add_u64(o, "off_cpu_ns", c->off_cpu_ns))
			goto fail;
	}
	for (size_t i = 0; i < r->n_timeline; i++) {
		const struct proto_latency_call *c = &r->timeline[i];

		if (!(o = proto__append_object(timeline)) || !proto__add_u64(o, "tid", c->tid) ||
		    !proto__add_u64(o, "start_ns", c->start_ns) ||
		    !proto__add_u64(o, "latency_ns", c->latency_ns) ||
		    !proto__add_u64(o, "off_cpu_ns", c->off_cpu_ns))
			goto fail;
	}
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_reply_pt_trace(const struct proto_pt_trace_result *r)
{
	cJSON *body, *root = proto__new_ok_head("latency");

	if (!root)
		return NULL;
	if (!(body = cJSON_AddObjectToObject(root, "trace")) ||
	    !proto__add_string(body, "path", r->path) ||
	    !proto__add_string(body, "event", r->event) ||
	    !proto__add_bool(body, "snapshot", r->snapshot) ||
	    !proto__add_bool(body, "filtered", r->filtered) ||
	    !proto__add_u64(body, "bytes", r->bytes) ||
	    !proto__add_u64(body, "threads", r->threads) ||
	    !proto__add_u64(body, "threads_lost", r->threads_lost) ||
	    !proto__add_u64(body, "switches", r->switches) ||
	    !proto__add_u64(body, "truncated", r->truncated) ||
	    !proto__add_u64(body, "lost", r->lost)) {
		cJSON_Delete(root);
		return NULL;
	}
	return proto__finish(root);
}

/* ---- reply parsing (offcpuctl) ----------------------------------------- */

/* The public reply plus what its pointers point into. */
struct proto__reply {
	struct proto_reply pub;
	cJSON *root; /* every string of pub lives here */
	struct proto_program *programs;
	struct proto_counter *counters;
	struct proto_counter *drops;
	struct proto_window_info *windows;
	struct proto_hist_process *processes;
	struct proto_request_stats *requests;
	struct proto_map_fill *maps;
	struct proto_kind_status *kinds;
};

static int proto__reply_str(const cJSON *obj, const char *name, const char **ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!cJSON_IsString(item))
		return -EINVAL;
	*ret = item->valuestring;
	return 0;
}

static int proto__reply_bool(const cJSON *obj, const char *name, bool *ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!cJSON_IsBool(item))
		return -EINVAL;
	*ret = cJSON_IsTrue(item);
	return 0;
}

static int proto__reply_double(const cJSON *obj, const char *name, double *ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!cJSON_IsNumber(item))
		return -EINVAL;
	*ret = item->valuedouble;
	return 0;
}

/* See proto_json.h. */
int proto__number_u64(const cJSON *item, uint64_t *ret)
{
	double d;

	if (!cJSON_IsNumber(item))
		return -EINVAL;
	d = item->valuedouble;
	if (!(d >= 0))
		return -EINVAL;
	if (d >= 18446744073709551616.0) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (d != (double)(uint64_t)d)
		return -EINVAL;
	*ret = (uint64_t)d;
	return 0;
}

static int proto__reply_u64(const cJSON *obj, const char *name, uint64_t *ret)
{
	return proto__number_u64(cJSON_GetObjectItemCaseSensitive(obj, name), ret);
}

/* An integral number in int64_t's range. */
static int proto__reply_i64(const cJSON *obj, const char *name, int64_t *ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
	double d;

	if (!cJSON_IsNumber(item))
		return -EINVAL;
	d = item->valuedouble;
	/* -2^63 and 2^63 are exact doubles; NaN fails both comparisons. */
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
		return -EINVAL;
	if (d != (double)(int64_t)d)
		return -EINVAL;
	*ret = (int64_t)d;
	return 0;
}

static int proto__reply_u32(const cJSON *obj, const char *name, uint32_t *ret)
{
	uint64_t v;

	if (proto__reply_u64(obj, name, &v) < 0 || v > UINT32_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* {"name":value,...} into a malloc'd array; names point into the tree. */
static int proto__reply_counters(const cJSON *obj, const char *name, struct proto_counter **ret,
				 size_t *ret_n)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(obj, name), *item;
	struct proto_counter *c;
	size_t n = 0;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	c = calloc(cJSON_GetArraySize(o) + 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	cJSON_ArrayForEach(item, o)
	{
		if (proto__number_u64(item, &c[n].value) < 0) {
			free(c);
			return -EINVAL;
		}
		c[n++].name = item->string;
	}
	*ret = c;
	*ret_n = n;
	return 0;
}

/* A bucket's meaning is its index: there must be exactly that many. */
static int proto__reply_buckets(const cJSON *o, const char *name, uint64_t *counts)
{
	const cJSON *c, *list = cJSON_GetObjectItemCaseSensitive(o, name);
	size_t b = 0;

	if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != PROTO_HIST_BUCKETS)
		return -EINVAL;
	cJSON_ArrayForEach(c, list)
	{
		if (proto__number_u64(c, &counts[b++]) < 0)
			return -EINVAL;
	}
	return 0;
}

/* The optional "requests" list; each one's functions are not parsed. */
static int proto__reply_requests(struct proto__reply *r, const cJSON *o,
				 const struct proto_request_stats **ret, size_t *ret_n)
{
	const cJSON *p, *list = cJSON_GetObjectItemCaseSensitive(o, "requests");
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!list)
		return 0;
	if (!cJSON_IsArray(list))
		return -EINVAL;
	r->requests = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->requests));
	if (!r->requests)
		return -ENOMEM;
	cJSON_ArrayForEach(p, list)
	{
		struct proto_request_stats *q = &r->requests[n++];

		if (!cJSON_IsObject(p) || proto__reply_str(p, "symbol", &q->symbol) < 0 ||
		    proto__reply_u64(p, "count", &q->count) < 0 ||
		    proto__reply_u64(p, "wall_ns", &q->wall_ns) < 0 ||
		    proto__reply_u64(p, "offcpu_ns", &q->offcpu_ns) < 0 ||
		    proto__reply_buckets(p, "wall_hist", q->wall_hist) < 0 ||
		    proto__reply_buckets(p, "offcpu_hist", q->offcpu_hist) < 0)
			return -EINVAL;
		/* Optional: older daemons send neither. */
		if ((cJSON_GetObjectItemCaseSensitive(p, "calls") &&
		     proto__reply_u64(p, "calls", &q->calls) < 0) ||
		    (cJSON_GetObjectItemCaseSensitive(p, "warning") &&
		     proto__reply_str(p, "warning", &q->warning) < 0))
			return -EINVAL;
	}
	*ret = r->requests;
	*ret_n = n;
	return 0;
}

static bool proto__has(const cJSON *obj, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(obj, name) != NULL;
}

/* Optional: daemons before per-kind status did not send "kinds". */
static int proto__reply_kinds(struct proto__reply *r, const cJSON *o)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "kinds"), *item;
	struct proto_status *s = &r->pub.status;
	size_t n = 0;

	if (list && !cJSON_IsArray(list))
		return -EINVAL;
	r->kinds = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->kinds));
	if (!r->kinds)
		return -ENOMEM;
	cJSON_ArrayForEach(item, list)
	{
		struct proto_kind_status *k = &r->kinds[n++];

		if (!cJSON_IsObject(item) || proto__reply_str(item, "name", &k->name) < 0 ||
		    proto__reply_str(item, "state", &k->state) < 0 ||
		    proto__reply_str(item, "detail", &k->detail) < 0)
			return -EINVAL;
	}
	s->kinds = r->kinds;
	s->n_kinds = n;
	return 0;
}

static int proto__reply_status(struct proto__reply *r, const cJSON *o)
{
	struct proto_status *s = &r->pub.status;
	const cJSON *programs, *list, *item;
	size_t n = 0;
	int e;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	programs = cJSON_GetObjectItemCaseSensitive(o, "programs");
	if (!cJSON_IsArray(programs))
		return -EINVAL;
	r->programs = calloc(cJSON_GetArraySize(programs) + 1, sizeof(*r->programs));
	if (!r->programs)
		return -ENOMEM;
	cJSON_ArrayForEach(item, programs)
	{
		r->programs[n].loaded = true; /* older daemons loaded every program at start */
		if (!cJSON_IsObject(item) ||
		    proto__reply_str(item, "name", &r->programs[n].name) < 0 ||
		    proto__reply_bool(item, "attached", &r->programs[n].attached) < 0 ||
		    (proto__has(item, "loaded") &&
		     proto__reply_bool(item, "loaded", &r->programs[n].loaded) < 0) ||
		    (proto__has(item, "run_cnt") &&
		     (proto__reply_u64(item, "run_cnt", &r->programs[n].run_cnt) < 0 ||
		      proto__reply_u64(item, "run_time_ns", &r->programs[n].run_time_ns) < 0 ||
		      proto__reply_double(item, "events_per_s", &r->programs[n].events_per_s) < 0)))
			return -EINVAL;
		n++;
	}
	s->programs = r->programs;
	s->n_programs = n;

	/* Groups loaded on first use came later: absent from older daemons. */
	list = cJSON_GetObjectItemCaseSensitive(o, "program_groups");
	if (list && !cJSON_IsArray(list))
		return -EINVAL;
	cJSON_ArrayForEach(item, list)
	{
		struct proto_program_group *g = &s->groups[s->n_groups];

		if (s->n_groups == PROTO_MAX_GROUPS)
			break;
		if (!cJSON_IsObject(item) || proto__reply_str(item, "name", &g->name) < 0 ||
		    proto__reply_str(item, "state", &g->state) < 0 ||
		    proto__reply_str(item, "reason", &g->reason) < 0 ||
		    proto__reply_u64(item, "load_ms", &g->load_ms) < 0)
			return -EINVAL;
		s->n_groups++;
	}

	/* Self-accounting came later: a reply without it is still whole. */
	list = cJSON_GetObjectItemCaseSensitive(o, "maps");
	if (list && !cJSON_IsArray(list))
		return -EINVAL;
	r->maps = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->maps));
	if (!r->maps)
		return -ENOMEM;
	n = 0;
	cJSON_ArrayForEach(item, list)
	{
		struct proto_map_fill *mf = &r->maps[n++];

		if (!cJSON_IsObject(item) || proto__reply_str(item, "name", &mf->name) < 0 ||
		    proto__reply_u64(item, "entries", &mf->entries) < 0 ||
		    proto__reply_u64(item, "max_entries", &mf->max_entries) < 0 ||
		    proto__reply_double(item, "fill_pct", &mf->fill_pct) < 0)
			return -EINVAL;
	}
	s->maps = r->maps;
	s->n_maps = n;

	item = cJSON_GetObjectItemCaseSensitive(o, "store");
	s->store.path = s->store.last_error = "";
	if (item && (!cJSON_IsObject(item) || proto__reply_str(item, "path", &s->store.path) < 0 ||
		     proto__reply_u64(item, "bytes", &s->store.bytes) < 0 ||
		     proto__reply_u64(item, "windows", &s->store.windows) < 0 ||
		     proto__reply_u64(item, "windows_written", &s->store.windows_written) < 0 ||
		     proto__reply_u64(item, "windows_failed", &s->store.windows_failed) < 0 ||
		     proto__reply_bool(item, "disk_full", &s->store.disk_full) < 0 ||
		     proto__reply_str(item, "last_error", &s->store.last_error) < 0))
		return -EINVAL;
	item = cJSON_GetObjectItemCaseSensitive(o, "unwind");
	s->unwind.mode = s->unwind.build_max_path = "";
	if (item && (!cJSON_IsObject(item) || proto__reply_str(item, "mode", &s->unwind.mode) < 0 ||
		     proto__reply_u64(item, "tables", &s->unwind.tables) < 0 ||
		     proto__reply_u64(item, "processes", &s->unwind.processes) < 0 ||
		     proto__reply_u64(item, "rows_used", &s->unwind.rows_used) < 0 ||
		     proto__reply_u64(item, "rows_max", &s->unwind.rows_max) < 0 ||
		     proto__reply_u64(item, "table_bytes", &s->unwind.table_bytes) < 0 ||
		     proto__reply_u64(item, "builds", &s->unwind.builds) < 0 ||
		     proto__reply_u64(item, "build_ns_total", &s->unwind.build_ns_total) < 0 ||
		     proto__reply_u64(item, "build_ns_max", &s->unwind.build_ns_max) < 0 ||
		     proto__reply_str(item, "build_max_path", &s->unwind.build_max_path) < 0 ||
		     proto__reply_u64(item, "evictions", &s->unwind.evictions) < 0 ||
		     proto__reply_u64(item, "no_room", &s->unwind.no_room) < 0 ||
		     proto__reply_u64(item, "failed", &s->unwind.failed) < 0 ||
		     proto__reply_u64(item, "requests", &s->unwind.requests) < 0))
		return -EINVAL;
	item = cJSON_GetObjectItemCaseSensitive(o, "pt");
	s->pt.event = s->pt.reason = "";
	if (item && (!cJSON_IsObject(item) || proto__reply_str(item, "event", &s->pt.event) < 0 ||
		     proto__reply_bool(item, "available", &s->pt.available) < 0 ||
		     proto__reply_str(item, "reason", &s->pt.reason) < 0 ||
		     proto__reply_u32(item, "address_ranges", &s->pt.address_ranges) < 0 ||
		     proto__reply_u32(item, "recording_pid", &s->pt.recording_pid) < 0))
		return -EINVAL;
	item = cJSON_GetObjectItemCaseSensitive(o, "sampling");
	s->sampling.stacks = s->sampling.walk = s->sampling.walk_reason = "";
	if (item &&
	    (!cJSON_IsObject(item) || proto__reply_str(item, "stacks", &s->sampling.stacks) < 0 ||
	     proto__reply_u64(item, "period_us", &s->sampling.period_us) < 0 ||
	     proto__reply_str(item, "walk", &s->sampling.walk) < 0 ||
	     proto__reply_str(item, "walk_reason", &s->sampling.walk_reason) < 0 ||
	     proto__reply_double(item, "blocks_per_s", &s->sampling.blocks_per_s) < 0 ||
	     proto__reply_double(item, "samples_per_s", &s->sampling.samples_per_s) < 0 ||
	     proto__reply_double(item, "user_walks_per_s", &s->sampling.user_walks_per_s) < 0 ||
	     proto__reply_double(item, "kernel_walks_per_s", &s->sampling.kernel_walks_per_s) < 0 ||
	     proto__reply_u64(item, "samples_lost", &s->sampling.samples_lost) < 0 ||
	     proto__reply_u64(item, "window_blocks", &s->sampling.window_blocks) < 0 ||
	     proto__reply_u64(item, "window_samples", &s->sampling.window_samples) < 0 ||
	     proto__reply_double(item, "window_error_pct", &s->sampling.window_error_pct) < 0))
		return -EINVAL;
	item = cJSON_GetObjectItemCaseSensitive(o, "daemon");
	if (item &&
	    (!cJSON_IsObject(item) || proto__reply_double(item, "cpu_pct", &s->cpu_pct) < 0 ||
	     proto__reply_u64(item, "rss_bytes", &s->rss_bytes) < 0))
		return -EINVAL;

	/* Optional: daemons before the I/O kinds did not send them. */
	s->bio_tracepoints = s->fileio_tracepoints = "";
	if ((cJSON_GetObjectItemCaseSensitive(o, "bio_tracepoints") &&
	     proto__reply_str(o, "bio_tracepoints", &s->bio_tracepoints) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "fileio_tracepoints") &&
	     proto__reply_str(o, "fileio_tracepoints", &s->fileio_tracepoints) < 0))
		return -EINVAL;
	if (proto__reply_str(o, "version", &s->version) < 0 ||
	    proto__reply_u64(o, "uptime_s", &s->uptime_s) < 0 ||
	    proto__reply_u32(o, "pid", &s->pid) < 0 ||
	    proto__reply_str(o, "tracepoint", &s->tracepoint) < 0 ||
	    proto__reply_u32(o, "slots_active", &s->slots_active) < 0 ||
	    proto__reply_u32(o, "slots_max", &s->slots_max) < 0 ||
	    proto__reply_u32(o, "captures_running", &s->captures_running) < 0 ||
	    proto__reply_double(o, "switches_per_s", &s->switches_per_s) < 0 ||
	    proto__reply_double(o, "recorded_per_s", &s->recorded_per_s) < 0)
		return -EINVAL;
	e = proto__reply_counters(o, "counters", &r->counters, &s->n_counters);
	if (e < 0)
		return e;
	s->counters = r->counters;
	e = proto__reply_kinds(r, o);
	if (e < 0)
		return e;
	return proto__reply_requests(r, o, &s->requests, &s->n_requests);
}

/* An optional string of a reply ("folded", "output"): *ret stays as it is
 * if absent. */
static int proto__reply_opt_str(const cJSON *o, const char *name, const char **ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!item)
		return 0;
	if (!cJSON_IsString(item))
		return -EINVAL;
	*ret = item->valuestring;
	return 0;
}

static int proto__reply_capture(struct proto__reply *r, const cJSON *o)
{
	struct proto_capture_result *c = &r->pub.capture;
	const cJSON *us, *sm;
	int e;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	if (proto__reply_u64(o, "id", &c->id) < 0 ||
	    proto__reply_u64(o, "duration_ns", &c->duration_ns) < 0 ||
	    proto__reply_u64(o, "total_ns", &c->total_ns) < 0 ||
	    proto__reply_u64(o, "samples_count", &c->n_samples) < 0 ||
	    proto__reply_bool(o, "target_exited", &c->target_exited) < 0)
		return -EINVAL;
	if (proto__reply_opt_str(o, "folded", &c->folded) < 0 ||
	    proto__reply_opt_str(o, "output", &c->output) < 0 ||
	    proto__reply_opt_str(o, "loaded", &c->loaded) < 0 ||
	    (c->loaded && proto__reply_u64(o, "load_ms", &c->load_ms) < 0))
		return -EINVAL;
	us = cJSON_GetObjectItemCaseSensitive(o, "user_stacks");
	if (us && (!cJSON_IsObject(us) ||
		   proto__reply_u64(us, "complete_ns", &c->user_stacks.complete_ns) < 0 ||
		   proto__reply_u64(us, "truncated_ns", &c->user_stacks.truncated_ns) < 0 ||
		   proto__reply_u64(us, "frame_pointer_ns", &c->user_stacks.frame_pointer_ns) < 0))
		return -EINVAL;
	sm = cJSON_GetObjectItemCaseSensitive(o, "sampling");
	if (sm && (!cJSON_IsObject(sm) ||
		   proto__reply_u64(sm, "period_us", &c->sampling.period_us) < 0 ||
		   proto__reply_u64(sm, "blocks", &c->sampling.blocks) < 0 ||
		   proto__reply_u64(sm, "samples", &c->sampling.samples) < 0 ||
		   proto__reply_double(sm, "error_pct", &c->sampling.error_pct) < 0))
		return -EINVAL;
	e = proto__reply_counters(o, "drops", &r->drops, &c->n_drops);
	if (e < 0)
		return e;
	c->drops = r->drops;
	return proto__reply_requests(r, o, &c->requests, &c->n_requests);
}

/* The reply's own array, not an object: {"cmd":"windows","windows":[...]}. */
static int proto__reply_windows(struct proto__reply *r, const cJSON *a)
{
	const cJSON *o;
	size_t n = 0;

	if (!cJSON_IsArray(a))
		return -EINVAL;
	r->windows = calloc(cJSON_GetArraySize(a) + 1, sizeof(*r->windows));
	if (!r->windows)
		return -ENOMEM;
	cJSON_ArrayForEach(o, a)
	{
		struct proto_window_info *w = &r->windows[n];

		if (!cJSON_IsObject(o) || proto__reply_u64(o, "id", &w->id) < 0 ||
		    proto__reply_i64(o, "start_ms", &w->start_ms) < 0 ||
		    proto__reply_i64(o, "end_ms", &w->end_ms) < 0 ||
		    proto__reply_u64(o, "capture_id", &w->capture_id) < 0 ||
		    proto__reply_u64(o, "stacks", &w->stacks) < 0 ||
		    proto__reply_u64(o, "samples", &w->samples) < 0 ||
		    proto__reply_u64(o, "bytes", &w->bytes) < 0)
			return -EINVAL;
		n++;
	}
	r->pub.windows = r->windows;
	r->pub.n_windows = n;
	return 0;
}

static int proto__reply_export(struct proto__reply *r, const cJSON *o)
{
	struct proto_export_result *e = &r->pub.export;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	if (proto__reply_i64(o, "from_ms", &e->from_ms) < 0 ||
	    proto__reply_i64(o, "to_ms", &e->to_ms) < 0 ||
	    proto__reply_u64(o, "capture_id", &e->capture_id) < 0 ||
	    proto__reply_u64(o, "windows", &e->windows) < 0 ||
	    proto__reply_u64(o, "total_ns", &e->total_ns) < 0 ||
	    proto__reply_u64(o, "samples_count", &e->n_samples) < 0)
		return -EINVAL;
	/* Daemons from before differential exports leave these out. */
	if ((cJSON_GetObjectItemCaseSensitive(o, "differential") &&
	     proto__reply_bool(o, "differential", &e->differential) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "diff_windows") &&
	     proto__reply_u64(o, "diff_windows", &e->diff_windows) < 0))
		return -EINVAL;
	if (proto__reply_opt_str(o, "folded", &e->folded) < 0 ||
	    proto__reply_opt_str(o, "output", &e->output) < 0)
		return -EINVAL;
	return 0;
}

/* The figures of a latency reply; hist, children and timeline are left
 * unparsed (NULL, 0): offcpuctl prints the raw reply in JSON mode. */
static int proto__reply_latency(struct proto__reply *r, const cJSON *o)
{
	struct proto_latency_result *l = &r->pub.latency;

	if (!cJSON_IsObject(o) || proto__reply_str(o, "func", &l->func) < 0 ||
	    proto__reply_u64(o, "calls", &l->calls) < 0 ||
	    proto__reply_u64(o, "total_ns", &l->total_ns) < 0 ||
	    proto__reply_u64(o, "min_ns", &l->min_ns) < 0 ||
	    proto__reply_u64(o, "max_ns", &l->max_ns) < 0 ||
	    proto__reply_u64(o, "off_cpu_ns", &l->off_cpu_ns) < 0 ||
	    proto__reply_u64(o, "out_of_range", &l->out_of_range) < 0 ||
	    proto__reply_u64(o, "incomplete", &l->incomplete) < 0 ||
	    proto__reply_u64(o, "unmatched_returns", &l->unmatched_returns) < 0 ||
	    proto__reply_u64(o, "overflows", &l->overflows) < 0 ||
	    proto__reply_u64(o, "decode_errors", &l->decode_errors) < 0)
		return -EINVAL;
	return 0;
}

static int proto__reply_pt_trace(struct proto__reply *r, const cJSON *o)
{
	struct proto_pt_trace_result *t = &r->pub.trace;

	r->pub.has_trace = true;
	if (!cJSON_IsObject(o) || proto__reply_str(o, "path", &t->path) < 0 ||
	    proto__reply_str(o, "event", &t->event) < 0 ||
	    proto__reply_bool(o, "snapshot", &t->snapshot) < 0 ||
	    proto__reply_bool(o, "filtered", &t->filtered) < 0 ||
	    proto__reply_u64(o, "bytes", &t->bytes) < 0 ||
	    proto__reply_u64(o, "threads", &t->threads) < 0 ||
	    proto__reply_u64(o, "threads_lost", &t->threads_lost) < 0 ||
	    proto__reply_u64(o, "switches", &t->switches) < 0 ||
	    proto__reply_u64(o, "truncated", &t->truncated) < 0 ||
	    proto__reply_u64(o, "lost", &t->lost) < 0)
		return -EINVAL;
	return 0;
}

static int proto__reply_hist(struct proto__reply *r, const cJSON *o)
{
	struct proto_hist_result *h = &r->pub.hist;
	const cJSON *list, *p;
	size_t n = 0;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	if (proto__reply_str(o, "kind", &h->kind) < 0 ||
	    proto__reply_i64(o, "from_ms", &h->from_ms) < 0 ||
	    proto__reply_i64(o, "to_ms", &h->to_ms) < 0 ||
	    proto__reply_u64(o, "capture_id", &h->capture_id) < 0 ||
	    proto__reply_u64(o, "windows", &h->windows) < 0)
		return -EINVAL;
	list = cJSON_GetObjectItemCaseSensitive(o, "processes");
	if (!cJSON_IsArray(list))
		return -EINVAL;
	r->processes = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->processes));
	if (!r->processes)
		return -ENOMEM;
	cJSON_ArrayForEach(p, list)
	{
		struct proto_hist_process *hp = &r->processes[n];

		if (!cJSON_IsObject(p) || proto__reply_u32(p, "tgid", &hp->tgid) < 0 ||
		    proto__reply_str(p, "comm", &hp->comm) < 0 ||
		    proto__reply_buckets(p, "counts", hp->counts) < 0)
			return -EINVAL;
		n++;
	}
	h->processes = r->processes;
	h->n_processes = n;
	return 0;
}

static int proto__reply_fill(struct proto__reply *r)
{
	const cJSON *root = r->root, *error;
	const char *cmd;
	uint64_t version;

	if (!cJSON_IsObject(root))
		return -EINVAL;
	if (proto__reply_u64(root, "v", &version) < 0 || version != PROTO_VERSION)
		return -EINVAL;
	if (proto__reply_bool(root, "ok", &r->pub.ok) < 0)
		return -EINVAL;
	if (!r->pub.ok) {
		error = cJSON_GetObjectItemCaseSensitive(root, "error");
		if (!cJSON_IsObject(error) ||
		    proto__reply_str(error, "code", &r->pub.error_code) < 0 ||
		    proto__reply_str(error, "message", &r->pub.error_message) < 0)
			return -EINVAL;
		return 0;
	}
	if (proto__reply_str(root, "cmd", &cmd) < 0)
		return -EINVAL;
	if (!strcmp(cmd, "status")) {
		r->pub.cmd = PROTO_CMD_STATUS;
		return proto__reply_status(r, cJSON_GetObjectItemCaseSensitive(root, "status"));
	}
	if (!strcmp(cmd, "capture")) {
		r->pub.cmd = PROTO_CMD_CAPTURE;
		return proto__reply_capture(r, cJSON_GetObjectItemCaseSensitive(root, "capture"));
	}
	if (!strcmp(cmd, "windows")) {
		r->pub.cmd = PROTO_CMD_WINDOWS;
		return proto__reply_windows(r, cJSON_GetObjectItemCaseSensitive(root, "windows"));
	}
	if (!strcmp(cmd, "export")) {
		r->pub.cmd = PROTO_CMD_EXPORT;
		return proto__reply_export(r, cJSON_GetObjectItemCaseSensitive(root, "export"));
	}
	if (!strcmp(cmd, "hist")) {
		r->pub.cmd = PROTO_CMD_HIST;
		return proto__reply_hist(r, cJSON_GetObjectItemCaseSensitive(root, "hist"));
	}
	if (!strcmp(cmd, "heatmap")) { /* its body is for offcpuctl serve's page */
		r->pub.cmd = PROTO_CMD_HEATMAP;
		return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "heatmap")) ? 0
											 : -EINVAL;
	}
	if (!strcmp(cmd, "latency")) {
		const cJSON *trace = cJSON_GetObjectItemCaseSensitive(root, "trace");

		r->pub.cmd = PROTO_CMD_LATENCY;
		if (trace)
			return proto__reply_pt_trace(r, trace);
		return proto__reply_latency(r, cJSON_GetObjectItemCaseSensitive(root, "latency"));
	}
	return -EINVAL;
}

int proto_reply_parse(const char *buf, size_t len, struct proto_reply **ret)
{
	struct proto__reply *r;
	size_t offset;
	int e;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->root = proto__parse_json(buf, len, &offset);
	if (!r->root) {
		free(r);
		return -EINVAL;
	}
	e = proto__reply_fill(r);
	if (e < 0) {
		proto_reply_free(&r->pub);
		return e;
	}
	*ret = &r->pub;
	return 0;
}

void proto_reply_free(struct proto_reply *reply)
{
	struct proto__reply *r;

	if (!reply)
		return;
	/* pub is the first member, so the reply is the private struct. */
	r = (struct proto__reply *)reply;
	cJSON_Delete(r->root);
	free(r->programs);
	free(r->counters);
	free(r->drops);
	free(r->windows);
	free(r->processes);
	free(r->requests);
	free(r->maps);
	free(r->kinds);
	free(r);
}

enum proto_palette proto_palette_of_kind(enum proto_kind kind, bool oncpu)
{
	if (oncpu)
		return PROTO_PALETTE_HOTCOLD;
	switch (kind) {
	case PROTO_KIND_WAKEUP:
		return PROTO_PALETTE_WAKEUP;
	case PROTO_KIND_OFFWAKE:
	case PROTO_KIND_CHAIN:
		return PROTO_PALETTE_CHAIN;
	case PROTO_KIND_ONCPU:
		return PROTO_PALETTE_HOT;
	default:
		return PROTO_PALETTE_IO;
	}
}

int proto_metric_from_name(const char *name)
{
	return proto__name_index(proto__metric_names, name);
}

const char *proto_metric_unit(enum proto_metric metric)
{
	return metric == PROTO_METRIC_BYTES   ? "bytes"
	       : metric == PROTO_METRIC_COUNT ? "I/Os"
					      : "us";
}

const char *proto_title_of_kind(enum proto_kind kind, bool oncpu)
{
	if (oncpu)
		return "Hot/Cold Flame Graph";
	switch (kind) {
	case PROTO_KIND_WAKEUP:
		return "Wakeup Time Flame Graph";
	case PROTO_KIND_OFFWAKE:
		return "Off-Wake Time Flame Graph";
	case PROTO_KIND_CHAIN:
		return "Chain Graph";
	case PROTO_KIND_RUNQ:
		return "Run-Queue Wait Flame Graph";
	case PROTO_KIND_ONCPU:
		return "On-CPU Time Flame Graph";
	case PROTO_KIND_BIO:
		return "Block I/O Flame Graph";
	case PROTO_KIND_FILEIO:
		return "File I/O Flame Graph";
	default:
		return "Off-CPU Time Flame Graph";
	}
}
