/*
 * options: the option parsing that offcpuctl's subcommands share: ids,
 * numbers, kinds and metrics, the output options (RESULT_OPTIONS), the stack
 * filters (FILTER_OPTIONS), the range of stored windows (RANGE_OPTIONS) and
 * times. Each takes its values from proto's limits; a bad one is reported
 * as a usage error (ctl.h) and its exit code returned.
 */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/*
 * The stack filters' options (FILTERS in offcpuctl(8)) that capture,
 * export, flamegraph and diff take alike; each command has its own --pid
 * and --state. 700 on.
 */
enum { OPT_COMM = 700, OPT_GREP, OPT_EXCLUDE };

/*
 * The output options that capture and export share: the format, the output
 * file, and how an svg is drawn. The commands' own long options count from
 * 256; these from 512.
 */
enum {
	OPT_FORMAT = 512,
	OPT_SVG,
	OPT_TITLE,
	OPT_SUBTITLE,
	OPT_COUNTNAME,
	OPT_WIDTH,
	OPT_HEIGHT,
	OPT_MINWIDTH,
	OPT_INVERTED,
	OPT_REVERSE,
	OPT_FLAMECHART,
	OPT_PALETTE,
};

/* Their getopt_long() entries (clang-format cannot lay out a list in a
 * macro), and the short ones: -o FILE, -j. */
/* clang-format off */
#define RESULT_OPTIONS                                                                             \
	{ "output", required_argument, NULL, 'o' },                                                \
	{ "json", no_argument, NULL, 'j' },                                                        \
	{ "format", required_argument, NULL, OPT_FORMAT },                                         \
	{ "svg", no_argument, NULL, OPT_SVG },                                                     \
	{ "title", required_argument, NULL, OPT_TITLE },                                           \
	{ "subtitle", required_argument, NULL, OPT_SUBTITLE },                                     \
	{ "countname", required_argument, NULL, OPT_COUNTNAME },                                   \
	{ "width", required_argument, NULL, OPT_WIDTH },                                           \
	{ "height", required_argument, NULL, OPT_HEIGHT },                                         \
	{ "minwidth", required_argument, NULL, OPT_MINWIDTH },                                     \
	{ "inverted", no_argument, NULL, OPT_INVERTED },                                           \
	{ "reverse", no_argument, NULL, OPT_REVERSE },                                             \
	{ "flamechart", no_argument, NULL, OPT_FLAMECHART },                                       \
	{ "palette", required_argument, NULL, OPT_PALETTE }
/* clang-format on */
#define RESULT_SHORT_OPTIONS "o:j"

struct result_opts {
	int format;		    /* enum proto_format; -1: not given */
	bool pprof;		    /* --format pprof: format JSON, encoded here */
	const char *path;	    /* -o; NULL: stdout */
	struct proto_render render; /* to copy into the request */
	const char *svg_only;	    /* the first option given that only svg uses */
	bool title;		    /* --title, which speedscope uses too */
};

#define RESULT_OPTS_INIT                                                                           \
	{                                                                                          \
		.format = -1                                                                       \
	}

/* clang-format off */
#define FILTER_OPTIONS                                                                             \
	{ "comm", required_argument, NULL, OPT_COMM },                                             \
	{ "grep", required_argument, NULL, OPT_GREP },                                             \
	{ "exclude", required_argument, NULL, OPT_EXCLUDE }
/* clang-format on */

/* The filter options as given; NULL: absent. */
struct filter_args {
	const char *comm, *grep, *exclude;
};

/*
 * Who a request is about (WHO in offcpuctl(8)): --cgroup, --unit,
 * --container, which capture, export and hist take; and --group-by, the
 * root frame of capture's and export's stacks. 720 on.
 */
enum { OPT_CGROUP = 720, OPT_UNIT, OPT_CONTAINER, OPT_GROUP_BY };

/* clang-format off */
#define WHO_OPTIONS                                                                                \
	{ "cgroup", required_argument, NULL, OPT_CGROUP },                                         \
	{ "unit", required_argument, NULL, OPT_UNIT },                                             \
	{ "container", required_argument, NULL, OPT_CONTAINER }
/* clang-format on */

/* The who options as given; NULL: absent. */
struct who_args {
	const char *cgroup, *unit, *container;
};

/* Takes opt if it is one of WHO_OPTIONS. */
bool who_option(struct who_args *a, int opt, const char *arg);

/* Checks the who options given, as the daemon would (one of them, a path
 * from the hierarchy's root, hex digits), and copies them into who. A path
 * under the mount point ("/sys/fs/cgroup/a") is passed on for the daemon,
 * which knows where the hierarchy is. Returns an exit code. */
int who_args_copy(const struct who_args *a, struct proto_cgroup_filter *who);

/* --group-by comm|process|unit|container|cgroup. Returns an exit code. */
int parse_group_by(const char *arg, enum proto_group_by *ret);

/* The range options of export, hist and push as given; NULL: absent. */
struct range_args {
	const char *window, *from, *to, *capture;
};

/* The range options' getopt_long() entries and their values: 256 on.
 * TIME_RANGE_OPTIONS: a time range only (push); RANGE_OPTIONS: or a
 * capture's window (export, hist). */
enum { OPT_WINDOW = 256, OPT_FROM, OPT_TO, OPT_CAPTURE, OPT_RANGE_END };

/* clang-format off */
#define TIME_RANGE_OPTIONS                                                                         \
	{ "window", required_argument, NULL, OPT_WINDOW },                                         \
	{ "from", required_argument, NULL, OPT_FROM },                                             \
	{ "to", required_argument, NULL, OPT_TO }
#define RANGE_OPTIONS                                                                              \
	TIME_RANGE_OPTIONS,                                                                        \
	{ "capture", required_argument, NULL, OPT_CAPTURE }
/* clang-format on */

/* Parses "1,2,3" into ids. Returns 0 or -EINVAL. */
int parse_ids(const char *s, uint32_t *ids, size_t *n);

int parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* --kind NAME; allowed: bit per enum proto_kind accepted. */
int parse_kind(const char *arg, uint32_t allowed, const char *want, enum proto_kind *ret);

/* --kind of a profile: a kind's name, or hotcold ("oncpu,offcpu" in either
 * order): kind offcpu with on-CPU samples beside. */
int parse_profile_kind(const char *arg, enum proto_kind *ret, uint32_t *oncpu);

int parse_metric(const char *arg, enum proto_metric *ret);

/* --pid LIST into pids (*n of them). Returns an exit code. */
int parse_pids(const char *arg, uint32_t *pids, size_t *n);

/* --state LIST (R, S, D, O) into a mask of thread states. Returns an exit code. */
int parse_states(const char *arg, uint32_t *mask);

/* Takes one of RESULT_OPTIONS; anything else is a bad option of cmd. */
int result_option(struct result_opts *o, const char *cmd, int opt, const char *arg);

/* The format to ask for: the one given, else JSON rows with --json, else
 * folded. Checks that the render options given apply to it. */
int result_opts_format(const struct result_opts *o, enum proto_format *ret_format);

/* Takes opt if it is one of FILTER_OPTIONS. */
bool filter_option(struct filter_args *a, int opt, const char *arg);

/* Checks the filter options given, as the daemon would, and copies them
 * into a request's comm (PROTO_COMM_MAX + 1 bytes), grep and exclude
 * (PROTO_REGEX_MAX + 1 bytes each). */
int filter_args_copy(const struct filter_args *a, char *comm, char *grep, char *exclude);

int64_t now_ms(void);

/* A time option's value: timearg_point(), or with allow_window also "lastNx"
 * meaning its start. Reports a usage error and returns EXIT_USAGE on failure. */
int parse_time(const char *opt, const char *s, bool allow_window, int64_t now, int64_t *ret_ms);

/* Which windows cmd reads: checks the range options and sets the request's
 * range (from_ms, to_ms) or capture_id; on a usage error they may be set in
 * part. capture_id NULL: cmd takes a time range only (TIME_RANGE_OPTIONS). */
int parse_range(const char *cmd, const struct range_args *a, int64_t *from_ms, int64_t *to_ms,
		uint64_t *capture_id);

/* Takes opt if it is one of RANGE_OPTIONS. */
bool range_option(struct range_args *a, int opt, const char *arg);

#endif
