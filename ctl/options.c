/*
 * options: the option parsing that subcommands share: ids, numbers, kinds,
 * metrics, the output (RESULT_OPTIONS), stack filter (FILTER_OPTIONS) and
 * range (RANGE_OPTIONS, TIME_RANGE_OPTIONS) options, and times.
 */
#include "options.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "thread_state.h"
#include "stack_filter.h"
#include "timearg.h"

int parse_ids(const char *s, uint32_t *ids, size_t *n)
{
	while (*s) {
		char *end;
		unsigned long v;

		if (*n >= PROTO_MAX_IDS || *s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || v == 0 || v > PROTO_PID_MAX || (*end && *end != ','))
			return -EINVAL;
		ids[(*n)++] = v;
		s = *end ? end + 1 : end;
	}
	return *n ? 0 : -EINVAL;
}

int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int parse_kind(const char *arg, uint32_t allowed, const char *want, enum proto_kind *ret)
{
	int k = proto_kind_from_name(arg);

	if (k < 0 || !(allowed & (UINT32_C(1) << k)))
		return usage_error(want, arg);
	*ret = k;
	return EXIT_OK;
}

#define ALL_KINDS ((UINT32_C(1) << (PROTO_KIND_FILEIO + 1)) - 1)
#define KIND_WANT                                                                                  \
	"bad --kind '%s': want offcpu, wakeup, offwake, chain, runq, oncpu, hotcold "              \
	"(oncpu,offcpu), bio or fileio"

int parse_profile_kind(const char *arg, enum proto_kind *ret, uint32_t *oncpu)
{
	*oncpu = !strcmp(arg, "hotcold") || !strcmp(arg, "oncpu,offcpu") ||
		 !strcmp(arg, "offcpu,oncpu");
	if (*oncpu) {
		*ret = PROTO_KIND_OFFCPU;
		return EXIT_OK;
	}
	return parse_kind(arg, ALL_KINDS, KIND_WANT, ret);
}

int parse_metric(const char *arg, enum proto_metric *ret)
{
	int m = proto_metric_from_name(arg);

	if (m < 0)
		return usage_error("bad --metric '%s': want time, count or bytes", arg);
	*ret = m;
	return EXIT_OK;
}

int parse_pids(const char *arg, uint32_t *pids, size_t *n)
{
	if (parse_ids(arg, pids, n) < 0)
		return usage_error("bad --pid '%s': want positive pids, comma-separated", arg);
	return EXIT_OK;
}

int parse_states(const char *arg, uint32_t *mask)
{
	if (thread_state_mask_parse(arg, mask) < 0)
		return usage_error("bad --state '%s': want a list of R, S, D, O "
				   "(running, sleeping, disk, other)",
				   arg);
	return EXIT_OK;
}

static int result_format(struct result_opts *o, enum proto_format format)
{
	if (o->format >= 0 && (o->format != (int)format || o->pprof))
		return usage_error("%s", "conflicting output formats: give one --format or --svg");
	o->format = format;
	if (format == PROTO_FORMAT_JSON)
		json_output = true;
	return EXIT_OK;
}

/* --format pprof: offcpuctl asks for JSON rows and encodes the profile
 * itself (render/pprof.h), so any daemon that sends rows will do. */
static int result_pprof(struct result_opts *o)
{
	if (o->format >= 0 && !o->pprof)
		return usage_error("%s", "conflicting output formats: give one --format or --svg");
	o->format = PROTO_FORMAT_JSON;
	o->pprof = true;
	return EXIT_OK;
}

/* Copies a --title, --subtitle or --countname into dst (size bytes). */
static int result_string(const char *opt, const char *arg, char *dst, size_t size)
{
	char msg[128];

	if (strlen(arg) >= size) {
		snprintf(msg, sizeof(msg), "%s is too long: at most %zu bytes", opt, size - 1);
		return usage_error("%s", msg);
	}
	strcpy(dst, arg);
	return EXIT_OK;
}

int result_option(struct result_opts *o, const char *cmd, int opt, const char *arg)
{
	struct proto_render *r = &o->render;
	const char *svg_only = NULL;
	bool percent;
	double width;
	uint64_t v;
	int f;

	switch (opt) {
	case 'o':
		o->path = arg;
		return EXIT_OK;
	case 'j':
		json_output = true;
		return EXIT_OK;
	case OPT_FORMAT:
		if (!strcmp(arg, "pprof"))
			return result_pprof(o);
		f = proto_format_from_name(arg);
		if (f < 0)
			return usage_error(
				"bad --format '%s': want folded, json, svg, speedscope or pprof",
				arg);
		return result_format(o, f);
	case OPT_SVG:
		return result_format(o, PROTO_FORMAT_SVG);
	case OPT_TITLE:
		o->title = true;
		return result_string("--title", arg, r->title, sizeof(r->title));
	case OPT_SUBTITLE:
		svg_only = "--subtitle";
		if (result_string(svg_only, arg, r->subtitle, sizeof(r->subtitle)) != EXIT_OK)
			return EXIT_USAGE;
		break;
	case OPT_COUNTNAME:
		svg_only = "--countname";
		if (result_string(svg_only, arg, r->countname, sizeof(r->countname)) != EXIT_OK)
			return EXIT_USAGE;
		break;
	case OPT_WIDTH:
		svg_only = "--width";
		if (parse_u64(arg, PROTO_WIDTH_MAX, &v) < 0 || v < PROTO_WIDTH_MIN)
			return usage_error("bad --width '%s': want 200 to 100000 pixels", arg);
		r->width = v;
		break;
	case OPT_HEIGHT:
		svg_only = "--height";
		if (parse_u64(arg, PROTO_FRAME_HEIGHT_MAX, &v) < 0 || v < PROTO_FRAME_HEIGHT_MIN)
			return usage_error("bad --height '%s': want a frame height of 4 to 200 "
					   "pixels",
					   arg);
		r->frame_height = v;
		break;
	case OPT_MINWIDTH:
		svg_only = "--minwidth";
		if (proto_minwidth_parse(arg, &width, &percent) < 0)
			return usage_error("bad --minwidth '%s': want pixels (e.g. 0.1) or a "
					   "percentage of the total (e.g. 0.5%%)",
					   arg);
		strcpy(r->minwidth, arg);
		break;
	case OPT_INVERTED:
		svg_only = "--inverted";
		r->inverted = 1;
		break;
	case OPT_REVERSE:
		svg_only = "--reverse";
		r->reverse = 1;
		break;
	case OPT_FLAMECHART:
		svg_only = "--flamechart";
		r->flamechart = 1;
		break;
	case OPT_PALETTE:
		svg_only = "--palette";
		f = proto_palette_from_name(arg);
		if (f < 0)
			return usage_error("bad --palette '%s': want auto, hot, io, wakeup, chain "
					   "or diff",
					   arg);
		r->palette = f;
		break;
	default:
		return usage_error("bad %s option", cmd);
	}
	if (!o->svg_only)
		o->svg_only = svg_only;
	return EXIT_OK;
}

int result_opts_format(const struct result_opts *o, enum proto_format *ret_format)
{
	enum proto_format f = PROTO_FORMAT_FOLDED;

	if (o->format >= 0)
		f = o->format;
	else if (json_output)
		f = PROTO_FORMAT_JSON;
	if (o->svg_only && f != PROTO_FORMAT_SVG)
		return usage_error("%s only applies to svg output (--svg or --format svg)",
				   o->svg_only);
	if (o->title && f != PROTO_FORMAT_SVG && f != PROTO_FORMAT_SPEEDSCOPE)
		return usage_error("%s",
				   "--title only applies to --format svg or --format speedscope");
	if (o->pprof && json_output)
		return usage_error("%s", "--format pprof writes a binary profile, not JSON: "
					 "leave out --json (--format json gives the JSON rows)");
	if (o->pprof && !o->path && isatty(STDOUT_FILENO))
		return usage_error("%s",
				   "--format pprof writes a binary (gzipped) profile, not "
				   "for a terminal: give -o FILE or redirect standard output");
	*ret_format = f;
	return EXIT_OK;
}

bool filter_option(struct filter_args *a, int opt, const char *arg)
{
	switch (opt) {
	case OPT_COMM:
		a->comm = arg;
		return true;
	case OPT_GREP:
		a->grep = arg;
		return true;
	case OPT_EXCLUDE:
		a->exclude = arg;
		return true;
	}
	return false;
}

/* Compiles re as the daemon will, for an early, clear error. */
static int check_regex(const char *opt, const char *re)
{
	char msg[PROTO_REGEX_MAX + 256], why[128];

	if (strlen(re) > PROTO_REGEX_MAX) {
		snprintf(msg, sizeof(msg), "%s is too long: at most %d bytes", opt,
			 PROTO_REGEX_MAX);
		return usage_error("%s", msg);
	}
	if (stack_filter_regex_valid(re, why, sizeof(why)))
		return EXIT_OK;
	snprintf(msg, sizeof(msg), "bad %s '%s': %s", opt, re, why);
	return usage_error("%s", msg);
}

int filter_args_copy(const struct filter_args *a, char *comm, char *grep, char *exclude)
{
	int r = EXIT_OK;

	if (a->comm && (!*a->comm || strlen(a->comm) > PROTO_COMM_MAX))
		return usage_error("bad --comm '%s': want a thread name of 1 to 63 bytes", a->comm);
	if (a->grep)
		r = check_regex("--grep", a->grep);
	if (r == EXIT_OK && a->exclude)
		r = check_regex("--exclude", a->exclude);
	if (r != EXIT_OK)
		return r;
	if (a->comm)
		strcpy(comm, a->comm);
	if (a->grep)
		strcpy(grep, a->grep);
	if (a->exclude)
		strcpy(exclude, a->exclude);
	return EXIT_OK;
}

bool who_option(struct who_args *a, int opt, const char *arg)
{
	switch (opt) {
	case OPT_CGROUP:
		a->cgroup = arg;
		return true;
	case OPT_UNIT:
		a->unit = arg;
		return true;
	case OPT_CONTAINER:
		a->container = arg;
		return true;
	}
	return false;
}

int who_args_copy(const struct who_args *a, struct proto_cgroup_filter *who)
{
	if (!!a->cgroup + !!a->unit + !!a->container > 1)
		return usage_error("%s", "--cgroup, --unit and --container exclude each other: give one");
	if (a->cgroup && (a->cgroup[0] != '/' || strlen(a->cgroup) > PROTO_CGROUP_MAX))
		return usage_error("bad --cgroup '%s': want an absolute cgroup path of at most "
				   PROTO_STR(PROTO_CGROUP_MAX) " bytes, e.g. /system.slice/nginx.service",
				   a->cgroup);
	if (a->unit && (!*a->unit || strchr(a->unit, '/') || strlen(a->unit) > PROTO_UNIT_MAX))
		return usage_error("bad --unit '%s': want a systemd unit name, e.g. nginx.service",
				   a->unit);
	if (a->container && (!*a->container || strlen(a->container) > PROTO_CONTAINER_MAX ||
			     a->container[strspn(a->container, "0123456789abcdefABCDEF")]))
		return usage_error("bad --container '%s': want hex digits of a container id (a "
				   "unique prefix, as docker ps shows it)",
				   a->container);
	if (a->cgroup)
		snprintf(who->cgroup, sizeof(who->cgroup), "%s", a->cgroup);
	if (a->unit)
		snprintf(who->unit, sizeof(who->unit), "%s", a->unit);
	if (a->container)
		snprintf(who->container, sizeof(who->container), "%s", a->container);
	return EXIT_OK;
}

int parse_group_by(const char *arg, enum proto_group_by *ret)
{
	int by = proto_group_by_from_name(arg);

	if (by < 0)
		return usage_error("bad --group-by '%s': want comm, process, unit, container or "
				   "cgroup",
				   arg);
	*ret = by;
	return EXIT_OK;
}

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int parse_time(const char *opt, const char *s, bool allow_window, int64_t now, int64_t *ret_ms)
{
	char msg[256];
	int64_t to;
	int r;

	r = allow_window ? timearg_window(s, now, ret_ms, &to) : -EINVAL;
	if (r == -EINVAL)
		r = timearg_point(s, now, ret_ms);
	if (r == 0)
		return EXIT_OK;
	if (r == -ERANGE)
		snprintf(msg, sizeof(msg), "bad %s '%s': out of range (1970 to 9999)", opt, s);
	else
		snprintf(msg, sizeof(msg),
			 "bad %s '%s': want unix seconds, RFC 3339 like 2026-11-22T01:00:00Z, "
			 "or Nx-ago%s (x: s, m, h, d)",
			 opt, s, allow_window ? " or lastNx" : "");
	return usage_error("%s", msg);
}

int parse_range(const char *cmd, const struct range_args *a, int64_t *from_ms, int64_t *to_ms,
		uint64_t *capture_id)
{
	const char *window = a->window, *from = a->from, *to = a->to, *capture = a->capture;
	int64_t now = now_ms(), window_to;
	uint64_t id;
	int r;

	if (capture && (window || from || to))
		return usage_error("%s",
				   "--capture cannot be combined with --window, --from or --to");
	if (window && (from || to))
		return usage_error("%s", "--window cannot be combined with --from or --to");
	if (to && !from)
		return usage_error("%s", "--to needs --from");
	if (!window && !from && !capture)
		return usage_error(capture_id ? "%s needs --window, --from or --capture"
					      : "%s needs --window or --from",
				   cmd);
	assert(!capture || capture_id); /* only RANGE_OPTIONS has --capture */

	if (capture) {
		if (parse_u64(capture, UINT64_C(1) << 53, &id) < 0 || id == 0)
			return usage_error(
				"bad --capture '%s': want a capture id (a positive number)",
				capture);
		*capture_id = id;
		return EXIT_OK;
	}
	if (window) {
		r = timearg_window(window, now, from_ms, &window_to);
		if (r == -ERANGE)
			return usage_error("bad --window '%s': reaches back before 1970", window);
		if (r < 0)
			return usage_error(
				"bad --window '%s': want lastN followed by s, m, h or d, "
				"e.g. last30m",
				window);
		return EXIT_OK; /* to_ms 0: up to the daemon's now */
	}
	r = parse_time("--from", from, false, now, from_ms);
	if (r != EXIT_OK)
		return r;
	if (*from_ms == 0)
		return usage_error("bad --from '%s': must be after 1970-01-01T00:00:00Z", from);
	if (to) {
		r = parse_time("--to", to, false, now, to_ms);
		if (r != EXIT_OK)
			return r;
		if (*to_ms <= *from_ms)
			return usage_error("bad --to '%s': must be later than --from", to);
	}
	return EXIT_OK;
}

bool range_option(struct range_args *a, int opt, const char *arg)
{
	switch (opt) {
	case OPT_WINDOW:
		a->window = arg;
		return true;
	case OPT_FROM:
		a->from = arg;
		return true;
	case OPT_TO:
		a->to = arg;
		return true;
	case OPT_CAPTURE:
		a->capture = arg;
		return true;
	}
	return false;
}
