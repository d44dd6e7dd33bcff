/*
 * proto_request_table: each command's fields, described once (see
 * proto_request_table.h), and the rules that span a command's fields.
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
#include "proto_request_table.h"

/* Enum values are stored through a uint32_t; see proto__store(). */
_Static_assert(sizeof(enum proto_stacks) == sizeof(uint32_t), "enum proto_stacks size");
_Static_assert(sizeof(enum proto_format) == sizeof(uint32_t), "enum proto_format size");
_Static_assert(sizeof(enum proto_palette) == sizeof(uint32_t), "enum proto_palette size");
_Static_assert(sizeof(enum proto_kind) == sizeof(uint32_t), "enum proto_kind size");

const char *const proto__stacks_names[] = {
	[PROTO_STACKS_BOTH] = "both",
	[PROTO_STACKS_USER] = "user",
	[PROTO_STACKS_KERNEL] = "kernel",
	NULL,
};

const char *const proto__format_names[] = {
	[PROTO_FORMAT_FOLDED] = "folded",
	[PROTO_FORMAT_JSON] = "json",
	[PROTO_FORMAT_SVG] = "svg",
	[PROTO_FORMAT_SPEEDSCOPE] = "speedscope",
	NULL,
};

const char *const proto__palette_names[] = {
	[PROTO_PALETTE_AUTO] = "auto",	     [PROTO_PALETTE_HOT] = "hot",
	[PROTO_PALETTE_IO] = "io",	     [PROTO_PALETTE_WAKEUP] = "wakeup",
	[PROTO_PALETTE_CHAIN] = "chain",     [PROTO_PALETTE_DIFF] = "diff",
	[PROTO_PALETTE_HOTCOLD] = "hotcold", NULL,
};

const char *const proto__metric_names[] = {
	[PROTO_METRIC_TIME] = "time",
	[PROTO_METRIC_COUNT] = "count",
	[PROTO_METRIC_BYTES] = "bytes",
	NULL,
};

const char *const proto__group_by_names[] = {
	[PROTO_GROUP_BY_COMM] = "comm",
	[PROTO_GROUP_BY_PROCESS] = "process",
	[PROTO_GROUP_BY_UNIT] = "unit",
	[PROTO_GROUP_BY_CONTAINER] = "container",
	[PROTO_GROUP_BY_CGROUP] = "cgroup",
	NULL,
};

/* As the kernel writes them: "/", or '/'-led segments, none empty, "." or "..". */
static bool proto__cgroup_path_valid(const char *s)
{
	if (s[0] != '/')
		return false;
	if (!s[1])
		return true;
	for (const char *seg = s + 1;; seg++) {
		size_t len = strcspn(seg, "/");

		if (!len || (len == 1 && seg[0] == '.') || (len == 2 && !strncmp(seg, "..", 2)))
			return false;
		seg += len;
		if (!*seg)
			return true;
	}
}

static bool proto__container_valid(const char *s)
{
	return s[strspn(s, "0123456789abcdefABCDEF")] == '\0';
}

static bool proto__unit_valid(const char *s)
{
	return !strchr(s, '/');
}

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
 * A time range of stored windows, from_ms and to_ms in the command's struct
 * TYPE, the same wherever one is taken (proto__range_check() checks it).
 */
/* clang-format off */
#define PROTO__RANGE_FIELDS(type)                                                                  \
	{ .name = "from_ms", .kind = PROTO__KIND_UINT, PROTO__AT(type, from_ms),                   \
	  .max = PROTO__JSON_INT_MAX },                                                            \
	{ .name = "to_ms", .kind = PROTO__KIND_UINT, PROTO__AT(type, to_ms),                       \
	  .max = PROTO__JSON_INT_MAX }
/* clang-format on */

/*
 * Which stored windows a request reads, the same for export and hist: a time
 * range or a capture (proto__range_check() enforces one of them), and pids.
 */
/* clang-format off */
#define PROTO__SELECTION_FIELDS(type)                                                              \
	PROTO__RANGE_FIELDS(type),                                                                 \
	{ .name = "capture", .kind = PROTO__KIND_UINT, PROTO__AT(type, capture_id),                \
	  .max = PROTO__JSON_INT_MAX },                                                            \
	{ .name = "pids", .kind = PROTO__KIND_IDS, PROTO__AT(type, pids),                          \
	  .count_offset = offsetof(type, n_pids), .min = 1, .max = PROTO_PID_MAX }
/* clang-format on */

/*
 * The stack filters (common/stack_filter.h) of capture and export, named,
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
 * Who a request is about (struct proto_cgroup_filter who in the command's
 * struct TYPE), and for capture and export the root frame they group by.
 */
/* clang-format off */
#define PROTO__WHO_FIELDS(type)                                                                    \
	{ .name = "cgroup", .kind = PROTO__KIND_STRING, PROTO__AT(type, who.cgroup),               \
	  .max = PROTO_CGROUP_MAX, .valid = proto__cgroup_path_valid,                              \
	  .expect = "an absolute cgroup v2 path, e.g. /system.slice/nginx.service" },              \
	{ .name = "unit", .kind = PROTO__KIND_STRING, PROTO__AT(type, who.unit),                   \
	  .max = PROTO_UNIT_MAX, .valid = proto__unit_valid,                                       \
	  .expect = "a systemd unit name, e.g. nginx.service" },                                   \
	{ .name = "container", .kind = PROTO__KIND_STRING, PROTO__AT(type, who.container),         \
	  .max = PROTO_CONTAINER_MAX, .valid = proto__container_valid,                             \
	  .expect = "hex digits of a container id (a unique prefix)" }

#define PROTO__GROUP_BY_FIELD(type)                                                                \
	{ .name = "group_by", .kind = PROTO__KIND_ENUM, PROTO__AT(type, group_by),                 \
	  .def = PROTO_GROUP_BY_COMM, .names = proto__group_by_names }
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
		.max = PROTO_PID_MAX,
	},
	{
		.name = "tids",
		.kind = PROTO__KIND_IDS,
		PROTO__CAP(tids),
		.count_offset = offsetof(struct proto_capture_request, n_tids),
		.min = 1,
		.max = PROTO_PID_MAX,
	},
	{
		.name = "seconds",
		.kind = PROTO__KIND_UINT,
		PROTO__CAP(seconds),
		.min = 1,
		.max = PROTO_SECONDS_MAX,
		.def = PROTO_SECONDS_DEFAULT,
		.zero_ok = true, /* until stop */
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
		.names = proto_kind_names,
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
	PROTO__WHO_FIELDS(struct proto_capture_request),
	PROTO__GROUP_BY_FIELD(struct proto_capture_request),
	{ .name = "follow_children", .kind = PROTO__KIND_BOOL, PROTO__CAP(follow_children) },
	{ .name = "notify_started", .kind = PROTO__KIND_BOOL, PROTO__CAP(notify_started) },
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
		.names = proto_kind_names,
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
	PROTO__WHO_FIELDS(struct proto_export_request),
	PROTO__GROUP_BY_FIELD(struct proto_export_request),
};

#define PROTO__HIST(member) PROTO__AT(struct proto_hist_request, member)

static const struct proto__field proto__hist_fields[] = {
	PROTO__SELECTION_FIELDS(struct proto_hist_request),
	{
		.name = "kind",
		.kind = PROTO__KIND_ENUM,
		PROTO__HIST(kind),
		.def = PROTO_KIND_OFFCPU,
		.names = proto_kind_names,
		.allowed = PROTO__HIST_KINDS,
	},
	PROTO__WHO_FIELDS(struct proto_hist_request),
};

#define PROTO__LAT(member) PROTO__AT(struct proto_latency_request, member)

static const struct proto__field proto__latency_fields[] = {
	{ .name = "pid",
	  .kind = PROTO__KIND_UINT,
	  PROTO__LAT(pid),
	  .min = 1,
	  .max = PROTO_PID_MAX },
	{ .name = "func",
	  .kind = PROTO__KIND_STRING,
	  PROTO__LAT(func),
	  .max = PROTO_REQUEST_SPEC_MAX },
	{
		.name = "seconds",
		.kind = PROTO__KIND_UINT,
		PROTO__LAT(seconds),
		.min = 1,
		.max = PROTO_SECONDS_MAX,
		.def = PROTO_SECONDS_DEFAULT,
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
	PROTO__RANGE_FIELDS(struct proto_heatmap_request),
	{ .name = "pids",
	  .kind = PROTO__KIND_IDS,
	  PROTO__HEAT(pids),
	  .count_offset = offsetof(struct proto_heatmap_request, n_pids),
	  .min = 1,
	  .max = PROTO_PID_MAX },
	{ .name = "comm", .kind = PROTO__KIND_STRING, PROTO__HEAT(comm), .max = PROTO_COMM_MAX },
	{ .name = "states",
	  .kind = PROTO__KIND_STATES,
	  PROTO__HEAT(state_mask),
	  .def = THREAD_STATE_ALL },
	{ .name = "kind",
	  .kind = PROTO__KIND_ENUM,
	  PROTO__HEAT(kind),
	  .def = PROTO_KIND_OFFCPU,
	  .names = proto_kind_names },
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

#define PROTO__BLK(member) PROTO__AT(struct proto_blocked_request, member)

/* Filters as capture's; min_ms is whole milliseconds, as people ask. */
static const struct proto__field proto__blocked_fields[] = {
	{ .name = "pids",
	  .kind = PROTO__KIND_IDS,
	  PROTO__BLK(pids),
	  .count_offset = offsetof(struct proto_blocked_request, n_pids),
	  .min = 1,
	  .max = PROTO_PID_MAX },
	{ .name = "tids",
	  .kind = PROTO__KIND_IDS,
	  PROTO__BLK(tids),
	  .count_offset = offsetof(struct proto_blocked_request, n_tids),
	  .min = 1,
	  .max = PROTO_PID_MAX },
	{ .name = "states",
	  .kind = PROTO__KIND_STATES,
	  PROTO__BLK(state_mask),
	  .def = PROTO_BLOCKED_STATES_DEFAULT },
	{ .name = "min_ms",
	  .kind = PROTO__KIND_UINT,
	  PROTO__BLK(min_ns),
	  .max = PROTO_BLOCKED_MIN_MS_MAX,
	  .unit = 1000000 },
	{ .name = "limit",
	  .kind = PROTO__KIND_UINT,
	  PROTO__BLK(limit),
	  .max = PROTO_BLOCKED_LIMIT_MAX,
	  .def = PROTO_BLOCKED_LIMIT_DEFAULT },
};

/* A push target's name, as the configuration's push.NAME takes it. */
static bool proto__push_target_valid(const char *s)
{
	return s[strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-")] == '\0';
}

/* A range of the continuous windows, as heatmap's, and the target. */
static const struct proto__field proto__push_fields[] = {
	PROTO__RANGE_FIELDS(struct proto_push_request),
	{ .name = "target",
	  .kind = PROTO__KIND_STRING,
	  PROTO__AT(struct proto_push_request, target),
	  .max = PROTO_PUSH_TARGET_MAX,
	  .valid = proto__push_target_valid,
	  .expect = "a push target's name: a-z, 0-9, '_' and '-'" },
};

/* Defined below with the other checks; private to this file. */
static proto__check_fn proto__push_check;

/* The duplicate check keeps one bit per field of a command. */
_Static_assert(PROTO__ARRAY_SIZE(proto__capture_fields) <= 64, "too many capture fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__windows_fields) <= 64, "too many windows fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__export_fields) <= 64, "too many export fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__hist_fields) <= 64, "too many hist fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__blocked_fields) <= 64, "too many blocked fields");
_Static_assert(PROTO__ARRAY_SIZE(proto__push_fields) <= 64, "too many push fields");

#define PROTO__FIELDS(member, table)                                                               \
	.offset = offsetof(struct proto_request, member), .fields = table,                         \
	.n_fields = PROTO__ARRAY_SIZE(table)

const struct proto__command proto__commands[] = {
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
	{
		.name = "blocked",
		.cmd = PROTO_CMD_BLOCKED,
		PROTO__FIELDS(blocked, proto__blocked_fields),
	},
	{
		.name = "push",
		.cmd = PROTO_CMD_PUSH,
		PROTO__FIELDS(push, proto__push_fields),
		.check = proto__push_check,
	},
};

const size_t proto__n_commands = PROTO__ARRAY_SIZE(proto__commands);

const struct proto__field *proto__find_field(const struct proto__command *c,
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
bool proto__given(const struct proto__command *c, uint64_t given, const char *name)
{
	size_t index;

	if (!proto__find_field(c, name, &index)) {
		assert(!"no such field");
		return false;
	}
	return given & (UINT64_C(1) << index);
}

/* At most one of cgroup, unit and container. */
static int proto__who_check(const struct proto_cgroup_filter *who, char *err, size_t err_size)
{
	if (!!who->cgroup[0] + !!who->unit[0] + !!who->container[0] > 1)
		return proto__fail(err, err_size,
				   "fields 'cgroup', 'unit' and 'container' exclude each other: give "
				   "one");
	return 0;
}

int proto__capture_check(const void *args, const struct proto__command *command,
				uint64_t given, char *err, size_t err_size)
{
	const struct proto_capture_request *c = args;

	if (proto__who_check(&c->who, err, err_size) < 0)
		return -EINVAL;

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
	/* The children's threads would not be in tids: nothing of theirs counts. */
	if (c->follow_children && (!c->n_pids || c->n_tids))
		return proto__fail(err, err_size, "field 'follow_children' needs 'pids' and no 'tids'");
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

int proto__export_check(const void *args, const struct proto__command *c, uint64_t given,
			       char *err, size_t err_size)
{
	const struct proto_export_request *e = args;
	int r;

	(void)given;
	if (proto__who_check(&e->who, err, err_size) < 0)
		return -EINVAL;
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

int proto__hist_check(const void *args, const struct proto__command *c, uint64_t given,
			     char *err, size_t err_size)
{
	const struct proto_hist_request *h = args;

	(void)given;
	if (proto__who_check(&h->who, err, err_size) < 0)
		return -EINVAL;
	return proto__range_check(c, h->from_ms, h->to_ms, h->capture_id, err, err_size);
}

int proto__heatmap_check(const void *args, const struct proto__command *c, uint64_t given,
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

static int proto__push_check(const void *args, const struct proto__command *c, uint64_t given,
			     char *err, size_t err_size)
{
	const struct proto_push_request *p = args;

	(void)given;
	if (!p->from_ms)
		return proto__fail(err, err_size, "push needs from_ms");
	return proto__range_check(c, p->from_ms, p->to_ms, 0, err, err_size);
}

int proto__latency_check(const void *args, const struct proto__command *c, uint64_t given,
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
