/*
 * offline: what flamegraph and diff share: reading folded files, their
 * filters, flamegraph.pl's options and drawing.
 */
#ifndef OFFLINE_H
#define OFFLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "options.h"

struct flame_parse_stats;
struct flame_pl_args;
struct render_input;
struct stack_filter;

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

/* Reads a whole file ("-": standard input). Returns 0 or -errno. */
int read_all(const char *path, char **ret, size_t *ret_len);

void warn_invalid(const char *what, const struct flame_parse_stats *st);

/* Refuses the input name whose count (or total) st says is above
 * FLAME_COUNT_EXACT_MAX, with its line: returns EXIT_ERROR. */
int fail_too_large(const char *name, const struct flame_parse_stats *st);

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
 * input is in messages. input->max_count > 0: larger counts are refused.
 */
int draw(const char *path, const struct stack_filter *filter, const char *text, size_t len,
	 const char *name, const struct result_opts *o, const struct render_input *input,
	 struct flame_pl_args *pl, const char *default_title);

#endif
