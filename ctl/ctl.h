/*
 * ctl: what offcpuctl's subcommands share (see offcpuctl.c): the global
 * options, exit codes, errors, one request to offcpud (transact.c), option
 * parsing (options.c), output (output.c), offline rendering (offline.c), and
 * each subcommand's entry point (cmd_*.c, one file each, as perf's
 * builtin-*.c).
 */
#ifndef CTL_H
#define CTL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "proto.h"

struct flame_parse_stats;
struct render_input;
struct flame_pl_args;
struct stack_filter;

#define DEFAULT_SOCKET "/run/offcpud/offcpud.sock"

enum exit_code {
	EXIT_OK = 0,
	EXIT_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_NOT_RUNNING = 3,
	EXIT_PERMISSION = 4,
	EXIT_NO_SUCH_PID = 5,
	EXIT_BUSY = 6,
};

/* The global options (offcpuctl.c), and whether Ctrl-C asked to stop. */
extern const char *socket_path;
extern bool json_output;
extern volatile int stop_requested;

struct progress {
	time_t start;
	uint32_t seconds;
	bool shown;
};

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

/* The range options of export and hist as given; NULL: absent. */
struct range_args {
	const char *window, *from, *to, *capture;
};

/* The range options' getopt_long() entries and their values: 256 on. */
enum { OPT_WINDOW = 256, OPT_FROM, OPT_TO, OPT_CAPTURE, OPT_RANGE_END };

/* clang-format off */
#define RANGE_OPTIONS                                                                              \
	{ "window", required_argument, NULL, OPT_WINDOW },                                         \
	{ "from", required_argument, NULL, OPT_FROM },                                             \
	{ "to", required_argument, NULL, OPT_TO },                                                 \
	{ "capture", required_argument, NULL, OPT_CAPTURE }
/* clang-format on */

enum { OPT_STRIP_HEX = 600, OPT_NORMALIZE, OPT_NEGATE, OPT_REVERSE_VIEW, OPT_OFFLINE_STATE };

/* flamegraph's and diff's filters: the stack filters, and --pid and --state,
 * taken only to be refused with a reason. NULL: absent. */
struct offline_args {
	struct filter_args f;
	const char *pid, *state;
};

/* clang-format off */
#define OFFLINE_FILTER_OPTIONS                                                                     \
	FILTER_OPTIONS,                                                                            \
	{ "pid", required_argument, NULL, 'p' },                                                   \
	{ "state", required_argument, NULL, OPT_OFFLINE_STATE }
/* clang-format on */

void usage(FILE *out);

/* One command's part of usage() (ctl/help.c). */
int command_help(const char *cmd);

int cmd_help(int argc, char **argv);

/* Reports an error in the current output mode and returns its exit code. */
int fail(int code, const char *json_code, const char *fmt, ...);

int usage_error(const char *fmt, const char *arg);

/* Sends one request and reads its reply. On success *ret_reply is an ok
 * reply (the raw line in *ret_raw); otherwise the error is reported and its
 * exit code returned. */
int transact(const struct proto_request *req, void (*tick)(void *), void *arg,
	     struct proto_reply **ret_reply, char **ret_raw);

void progress_tick(void *arg);

void on_sigint(int sig);

/* "do_command: 1200 requests, mean 1.250 ms, of which 0.800 ms off-CPU (64 %)" */
void requests_summary(FILE *out, const char *prefix, const struct proto_request_stats *r, size_t n);

int write_output(const char *path, const char *text);

/* A capture's or export's result: the raw reply in JSON mode, else the
 * folded text, or the svg or speedscope text. */
int write_result(const char *path, const char *raw, enum proto_format format, const char *folded,
		 const char *output);

/* A pprof profile of a capture: it ended (about) now, after duration_ns. */
int write_capture_pprof(const char *path, const char *raw, const struct proto_capture_result *res,
			enum proto_kind kind, bool oncpu);

/* A pprof profile of an export: a range's time is known, a capture's not. */
int write_export_pprof(const char *path, const char *raw, const struct proto_export_result *res,
		       enum proto_kind kind, bool oncpu);

int cmd_status(int argc, char **argv);

/* Parses "1,2,3" into ids. Returns 0 or -EINVAL. */
int parse_ids(const char *s, uint32_t *ids, size_t *n);

int parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* --kind NAME; allowed: bit per enum proto_kind accepted. */
int parse_kind(const char *arg, uint32_t allowed, const char *want, enum proto_kind *ret);

/* --kind of a profile: a kind's name, or hotcold ("oncpu,offcpu" in either
 * order): kind offcpu with on-CPU samples beside. */
int parse_profile_kind(const char *arg, enum proto_kind *ret, uint32_t *oncpu);

int parse_metric(const char *arg, enum proto_metric *ret);

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
 * part. */
int parse_range(const char *cmd, const struct range_args *a, int64_t *from_ms, int64_t *to_ms,
		uint64_t *capture_id);

/* Takes opt if it is one of RANGE_OPTIONS. */
bool range_option(struct range_args *a, int opt, const char *arg);

int cmd_capture(int argc, char **argv);

int cmd_windows(int argc, char **argv);

int cmd_export(int argc, char **argv);

int cmd_hist(int argc, char **argv);

/* Reads a whole file ("-": standard input). Returns 0 or -errno. */
int read_all(const char *path, char **ret, size_t *ret_len);

void warn_invalid(const char *what, const struct flame_parse_stats *st);

/* Takes opt if it is one of OFFLINE_FILTER_OPTIONS. */
bool offline_option(struct offline_args *a, int opt, const char *arg);

/* The filter for folded input; *ret stays NULL when no filter is given.
 * stack_filter_new() refuses pids and states, which folded text lacks. */
int offline_filter(const struct offline_args *a, struct stack_filter **ret);

/* flamegraph.pl's options (ctl/flame_options.c), and --palette with one
 * of its palette names: true if opt was one (*r: EXIT_OK or the usage
 * error). */
bool offline_pl_option(struct flame_pl_args *pl, int opt, const char *arg, int *r);

/* flamegraph.pl's colour options without a palette: its default, hot. */
void offline_pl_default(struct flame_pl_args *pl, const struct result_opts *ro);

/*
 * flamegraph and diff: folded stacks to svg (or speedscope) in o->path. The
 * input is the file path ("-": stdin), streamed and filtered by filter (may
 * be NULL), or when path is NULL the len bytes of text. name says what the
 * input is in messages.
 */
int draw(const char *path, const struct stack_filter *filter, const char *text, size_t len,
	 const char *name, const struct result_opts *o, const struct render_input *input,
	 struct flame_pl_args *pl, const char *default_title);

int cmd_flamegraph(int argc, char **argv);

int cmd_diff(int argc, char **argv);

int cmd_latency(int argc, char **argv);

/* serve: the web page and its API (ctl/serve.c). */
int cmd_serve(int argc, char **argv);

#endif
