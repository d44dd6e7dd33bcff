/*
 * offcpuctl: the command-line client of offcpud. Subcommands are dispatched
 * from a table; every one has a --json mode whose output (errors included)
 * is JSON. Exit codes are listed in usage() and proto/PROTOCOL.md.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "proto.h"
#include "thread_state.h"
#include "timearg.h"

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

static const char *socket_path;
static bool json_output;
static volatile int stop_requested;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: offcpuctl [--socket PATH] [--json] COMMAND [OPTIONS]\n"
		"\n"
		"Commands:\n"
		"  status                      daemon version, uptime, programs, slots, rates, "
		"drops\n"
		"  capture [OPTIONS]           capture off-CPU stacks; folded output\n"
		"      -p, --pid PID[,PID...]  processes to capture (default: all)\n"
		"      -t, --tid TID[,TID...]  only these threads\n"
		"      -d, --seconds N         duration (default 10); Ctrl-C ends it early\n"
		"          --state LIST        thread states at switch-out: R (running, "
		"preempted),\n"
		"                              S (sleeping), D (disk), O (other); e.g. S,D\n"
		"          --min-block-us N    only blocks of at least N microseconds\n"
		"          --max-block-us N    only blocks of at most N microseconds\n"
		"      -U, --user-only         user stacks only\n"
		"      -K, --kernel-only       kernel stacks only\n"
		"      -o, --output FILE       write to FILE instead of stdout\n"
		"  windows [--since T]         list the stored windows (T: a time, or lastNx)\n"
		"  export RANGE [OPTIONS]      merge stored windows; folded output\n"
		"      RANGE is one of:\n"
		"          --window lastNx     the last N s, m, h or d, e.g. last30m\n"
		"          --from T [--to T]   windows starting at or after --from, before --to\n"
		"                              (default: now)\n"
		"          --capture ID        the window a capture stored\n"
		"      -p, --pid PID[,PID...]  only these processes\n"
		"          --comm NAME         only threads named exactly NAME\n"
		"          --state LIST        thread states, as for capture\n"
		"          --grep RE           only stacks with a frame matching RE\n"
		"          --exclude RE        drop stacks with a frame matching RE\n"
		"                              (RE: POSIX extended; the comm counts as a frame)\n"
		"      -o, --output FILE       write to FILE instead of stdout\n"
		"  help                        this text\n"
		"\n"
		"Times T: unix seconds (1732240000.5), RFC 3339 (2026-11-22T01:00:00Z,\n"
		"2026-11-22 01:00:00+01:00) or relative (30m-ago); units s, m, h, d.\n"
		"\n"
		"Global options:\n"
		"  -s, --socket PATH  daemon socket (default $OFFCPUD_SOCKET or " DEFAULT_SOCKET
		")\n"
		"  -j, --json         JSON output, errors included\n"
		"\n"
		"Exit codes: 0 ok, 1 error, 2 bad arguments, 3 daemon not running,\n"
		"4 permission denied, 5 no such pid, 6 busy.\n");
}

/* Reports an error in the current output mode and returns its exit code. */
static int fail(int code, const char *json_code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_output) {
		char *line = proto_reply_error(json_code, msg);

		fputs(line ? line : "{\"ok\":false}\n", stdout);
		free(line);
	} else {
		fprintf(stderr, "offcpuctl: %s\n", msg);
	}
	return code;
}

static int usage_error(const char *fmt, const char *arg)
{
	char msg[2048]; /* room for a quoted regex */

	snprintf(msg, sizeof(msg), fmt, arg);
	if (!json_output)
		fprintf(stderr, "offcpuctl: %s\nTry 'offcpuctl help'.\n", msg);
	else
		fail(EXIT_USAGE, "bad_arguments", "%s", msg);
	return EXIT_USAGE;
}

static int connect_error(int r)
{
	if (r == -ENOENT || r == -ECONNREFUSED)
		return fail(EXIT_NOT_RUNNING, "not_running",
			    "offcpud is not running (nothing listens on %s); start it with "
			    "'systemctl start offcpud' or 'offcpud'",
			    socket_path);
	if (r == -EACCES || r == -EPERM)
		return fail(EXIT_PERMISSION, PROTO_ERR_PERMISSION,
			    "permission denied on %s (run as root or as a member of the "
			    "socket's group)",
			    socket_path);
	return fail(EXIT_ERROR, "connect_failed", "cannot connect to %s: %s", socket_path,
		    strerror(-r));
}

/* Maps a daemon error reply to an exit code and reports it. */
static int reply_error(const struct proto_reply *reply, const char *raw)
{
	static const struct {
		const char *code;
		int exit_code;
	} codes[] = {
		{ PROTO_ERR_BAD_REQUEST, EXIT_USAGE },	     { PROTO_ERR_TOO_LARGE, EXIT_USAGE },
		{ PROTO_ERR_NO_SUCH_PID, EXIT_NO_SUCH_PID }, { PROTO_ERR_BUSY, EXIT_BUSY },
		{ PROTO_ERR_PERMISSION, EXIT_PERMISSION },
	};
	int code = EXIT_ERROR;

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strcmp(reply->error_code, codes[i].code))
			code = codes[i].exit_code;
	if (json_output)
		printf("%s\n", raw);
	else
		fprintf(stderr, "offcpuctl: %s\n", reply->error_message);
	return code;
}

/* Sends one request and reads its reply. On success *ret_reply is an ok
 * reply (the raw line in *ret_raw); otherwise the error is reported and its
 * exit code returned. */
static int transact(const struct proto_request *req, void (*tick)(void *), void *arg,
		    struct proto_reply **ret_reply, char **ret_raw)
{
	static const char stop_line[] = "{\"v\":1,\"cmd\":\"stop\"}\n";
	struct proto_reply *reply = NULL;
	struct client *c = NULL;
	char *line = NULL, *raw = NULL;
	size_t len;
	int r;

	line = proto_request_format(req);
	if (!line)
		return fail(EXIT_ERROR, "internal", "out of memory");
	r = client_connect(socket_path, &c);
	if (r < 0) {
		free(line);
		return connect_error(r);
	}
	r = client_send(c, line);
	free(line);
	if (r == 0)
		r = client_read_line(c, &raw, &len, tick, arg, &stop_requested, stop_line);
	client_free(c);
	if (r == -ECONNRESET)
		return fail(EXIT_ERROR, "connection_closed",
			    "offcpud closed the connection without replying");
	if (r < 0)
		return fail(EXIT_ERROR, "io_error", "talking to offcpud: %s", strerror(-r));
	if (proto_reply_parse(raw, len, &reply) < 0) {
		free(raw);
		return fail(EXIT_ERROR, "bad_reply",
			    "offcpud sent a reply this offcpuctl cannot read");
	}
	if (!reply->ok) {
		r = reply_error(reply, raw);
		proto_reply_free(reply);
		free(raw);
		return r;
	}
	*ret_reply = reply;
	*ret_raw = raw;
	return EXIT_OK;
}

static int cmd_status(int argc, char **argv)
{
	const struct proto_status *st;
	struct proto_request req = { .cmd = PROTO_CMD_STATUS };
	struct proto_reply *reply;
	char *raw;
	int r;

	if (argc > 1)
		return usage_error("status takes no arguments, got '%s'", argv[1]);
	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (json_output) {
		printf("%s\n", raw);
	} else {
		st = &reply->status;
		printf("offcpud %s, pid %u, up %" PRIu64 " s\n", st->version, st->pid,
		       st->uptime_s);
		printf("programs:");
		for (size_t i = 0; i < st->n_programs; i++)
			printf(" %s (%s)", st->programs[i].name,
			       st->programs[i].attached ? "attached" : "detached");
		printf(", via %s\n", st->tracepoint);
		printf("slots: %u of %u in use, %u capture%s running\n", st->slots_active,
		       st->slots_max, st->captures_running, st->captures_running == 1 ? "" : "s");
		printf("events: %.0f context switches/s, %.0f blocks recorded/s\n",
		       st->switches_per_s, st->recorded_per_s);
		printf("counters:");
		for (size_t i = 0; i < st->n_counters; i++)
			printf(" %s=%" PRIu64, st->counters[i].name, st->counters[i].value);
		printf("\n");
	}
	proto_reply_free(reply);
	free(raw);
	return EXIT_OK;
}

/* Parses "1,2,3" into ids. Returns 0 or -EINVAL. */
static int parse_ids(const char *s, uint32_t *ids, size_t *n)
{
	while (*s) {
		char *end;
		unsigned long v;

		if (*n >= PROTO_MAX_IDS || *s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || v == 0 || v > 4194304 || (*end && *end != ','))
			return -EINVAL;
		ids[(*n)++] = v;
		s = *end ? end + 1 : end;
	}
	return *n ? 0 : -EINVAL;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *ret)
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

struct progress {
	time_t start;
	uint32_t seconds;
	bool shown;
};

static void progress_tick(void *arg)
{
	struct progress *p = arg;
	long elapsed = time(NULL) - p->start;
	long left = (long)p->seconds - elapsed;

	fprintf(stderr, "\r\033[Kcapturing: %ld s elapsed, %ld s remaining%s", elapsed,
		left > 0 ? left : 0, stop_requested ? " (stopping)" : " (Ctrl-C ends early)");
	p->shown = true;
}

static void on_sigint(int sig)
{
	stop_requested = 1;
	signal(sig, SIG_DFL); /* a second Ctrl-C quits at once */
}

static int write_output(const char *path, const char *text)
{
	FILE *out = path ? fopen(path, "w") : stdout;

	if (!out)
		return fail(EXIT_ERROR, "output_error", "cannot open %s: %s", path,
			    strerror(errno));
	fputs(text, out);
	if ((path ? fclose(out) : fflush(out)) != 0)
		return fail(EXIT_ERROR, "output_error", "cannot write %s: %s",
			    path ? path : "standard output", strerror(errno));
	return EXIT_OK;
}

/* A capture's or export's result: the raw reply in JSON mode, else folded. */
static int write_result(const char *path, const char *raw, const char *folded)
{
	char *text = NULL;
	int r;

	if (!json_output)
		return write_output(path, folded ? folded : "");
	if (asprintf(&text, "%s\n", raw) < 0)
		return fail(EXIT_ERROR, "internal", "out of memory");
	r = write_output(path, text);
	free(text);
	return r;
}

static void capture_summary(const struct proto_capture_result *res)
{
	uint64_t dropped = 0;

	for (size_t i = 0; i < res->n_drops; i++)
		dropped += res->drops[i].value;
	if (dropped) {
		fprintf(stderr,
			"offcpuctl: warning: %" PRIu64 " events not fully recorded:", dropped);
		for (size_t i = 0; i < res->n_drops; i++)
			if (res->drops[i].value)
				fprintf(stderr, " %s=%" PRIu64, res->drops[i].name,
					res->drops[i].value);
		fprintf(stderr, "\n");
	}
	if (res->target_exited)
		fprintf(stderr, "offcpuctl: note: a target exited during the capture\n");
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "captured %" PRIu64 " stacks, %.3f s off-CPU in %.1f s\n",
			res->n_samples, res->total_ns / 1e9, res->duration_ns / 1e9);
}

static int cmd_capture(int argc, char **argv)
{
	enum { OPT_STATE = 256, OPT_MIN, OPT_MAX };
	static const struct option options[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "min-block-us", required_argument, NULL, OPT_MIN },
		{ "max-block-us", required_argument, NULL, OPT_MAX },
		{ "user-only", no_argument, NULL, 'U' },
		{ "kernel-only", no_argument, NULL, 'K' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	struct proto_request *req;
	struct proto_capture_request *cap;
	struct progress progress = { .start = time(NULL) };
	struct proto_reply *reply;
	const char *output = NULL;
	uint64_t v;
	char *raw;
	int opt, r;

	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_CAPTURE;
	cap = &req->capture;
	cap->seconds = 10;
	cap->state_mask = THREAD_STATE_ALL;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "p:t:d:UKo:j", options, NULL)) != -1) {
		r = 0;
		switch (opt) {
		case 'p':
			if (parse_ids(optarg, cap->pids, &cap->n_pids) < 0)
				r = usage_error(
					"bad --pid '%s': want positive pids, comma-separated",
					optarg);
			break;
		case 't':
			if (parse_ids(optarg, cap->tids, &cap->n_tids) < 0)
				r = usage_error(
					"bad --tid '%s': want positive tids, comma-separated",
					optarg);
			break;
		case 'd':
			if (parse_u64(optarg, 86400, &v) < 0 || v == 0)
				r = usage_error("bad --seconds '%s': want 1 to 86400", optarg);
			cap->seconds = v;
			break;
		case OPT_STATE:
			if (thread_state_mask_parse(optarg, &cap->state_mask) < 0)
				r = usage_error("bad --state '%s': want a list of R, S, D, O "
						"(running, sleeping, disk, other)",
						optarg);
			break;
		case OPT_MIN:
			if (parse_u64(optarg, UINT64_MAX / 1000, &cap->min_block_us) < 0)
				r = usage_error("bad --min-block-us '%s'", optarg);
			break;
		case OPT_MAX:
			if (parse_u64(optarg, UINT64_MAX / 1000, &cap->max_block_us) < 0 ||
			    cap->max_block_us == 0)
				r = usage_error("bad --max-block-us '%s': want a positive number",
						optarg);
			break;
		case 'U':
			cap->stacks = PROTO_STACKS_USER;
			break;
		case 'K':
			cap->stacks = PROTO_STACKS_KERNEL;
			break;
		case 'o':
			output = optarg;
			break;
		case 'j':
			json_output = true;
			break;
		default:
			r = usage_error("%s", "bad capture option");
		}
		if (r) {
			free(req);
			return r;
		}
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		free(req);
		return r;
	}
	if (cap->max_block_us && cap->max_block_us < cap->min_block_us) {
		free(req);
		return usage_error("%s", "--max-block-us is below --min-block-us");
	}
	cap->format = json_output ? PROTO_FORMAT_JSON : PROTO_FORMAT_FOLDED;
	progress.seconds = cap->seconds;

	signal(SIGINT, on_sigint);
	r = transact(req, isatty(STDERR_FILENO) ? progress_tick : NULL, &progress, &reply, &raw);
	free(req);
	if (progress.shown)
		fprintf(stderr, "\r\033[K");
	if (r != EXIT_OK)
		return r;
	if (!json_output)
		capture_summary(&reply->capture);
	r = write_result(output, raw, reply->capture.folded);
	proto_reply_free(reply);
	free(raw);
	return r;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A time option's value: timearg_point(), or with allow_window also "lastNx"
 * meaning its start. Reports a usage error and returns EXIT_USAGE on failure. */
static int parse_time(const char *opt, const char *s, bool allow_window, int64_t now,
		      int64_t *ret_ms)
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

/* Local time as "2026-11-22 01:00:00". */
static void format_local(int64_t ms, char *buf, size_t size)
{
	time_t t = ms / 1000;
	struct tm tm;

	if (ms < 0 || !localtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, size, "?");
}

static void format_duration(int64_t ms, char *buf, size_t size)
{
	if (ms < 0)
		snprintf(buf, size, "?");
	else if (ms < 1000)
		snprintf(buf, size, "%" PRId64 " ms", ms);
	else if (ms < 60 * 1000)
		snprintf(buf, size, "%.1f s", ms / 1000.0);
	else if (ms < 3600 * 1000)
		snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", ms / 60000, ms / 1000 % 60);
	else if (ms < 86400 * 1000)
		snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", ms / 3600000, ms / 60000 % 60);
	else
		snprintf(buf, size, "%" PRId64 "d%02" PRId64 "h", ms / 86400000, ms / 3600000 % 24);
}

/* "512 B", "12.3 KiB", ... */
static void format_bytes(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = bytes;
	size_t i = 0;

	if (bytes < 1024) {
		snprintf(buf, size, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		i++;
	}
	snprintf(buf, size, "%.1f %s", v, units[i]);
}

static void print_windows(const struct proto_window_info *w, size_t n)
{
	char start[32], end[32], duration[32], capture[32], bytes[32];
	uint64_t total = 0;

	if (!n) {
		printf("no stored windows\n");
		return;
	}
	printf("%-19s  %-19s  %8s  %-10s  %8s  %9s  %10s\n", "START", "END", "DURATION", "CAPTURE",
	       "STACKS", "SAMPLES", "BYTES");
	for (size_t i = 0; i < n; i++) {
		format_local(w[i].start_ms, start, sizeof(start));
		format_local(w[i].end_ms, end, sizeof(end));
		format_duration(w[i].end_ms - w[i].start_ms, duration, sizeof(duration));
		if (w[i].capture_id)
			snprintf(capture, sizeof(capture), "%" PRIu64, w[i].capture_id);
		else
			snprintf(capture, sizeof(capture), "continuous");
		format_bytes(w[i].bytes, bytes, sizeof(bytes));
		printf("%-19s  %-19s  %8s  %-10s  %8" PRIu64 "  %9" PRIu64 "  %10s\n", start, end,
		       duration, capture, w[i].stacks, w[i].samples, bytes);
		total += w[i].bytes;
	}
	format_bytes(total, bytes, sizeof(bytes));
	printf("%zu window%s, %s\n", n, n == 1 ? "" : "s", bytes);
}

static int cmd_windows(int argc, char **argv)
{
	static const struct option options[] = {
		{ "since", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	struct proto_request req = { .cmd = PROTO_CMD_WINDOWS };
	struct proto_reply *reply;
	const char *since = NULL;
	char *raw;
	int opt, r;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "j", options, NULL)) != -1) {
		switch (opt) {
		case 'S':
			since = optarg;
			break;
		case 'j':
			json_output = true;
			break;
		default:
			return usage_error("%s", "bad windows option");
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (since) {
		r = parse_time("--since", since, true, now_ms(), &req.windows.since_ms);
		if (r != EXIT_OK)
			return r;
	}

	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (json_output)
		printf("%s\n", raw);
	else
		print_windows(reply->windows, reply->n_windows);
	proto_reply_free(reply);
	free(raw);
	return EXIT_OK;
}

/* Compiles re as the daemon will, for an early, clear error. */
static int check_regex(const char *opt, const char *re)
{
	char msg[PROTO_REGEX_MAX + 256], why[128];
	regex_t compiled;
	int r;

	if (strlen(re) > PROTO_REGEX_MAX) {
		snprintf(msg, sizeof(msg), "%s is too long: at most %d bytes", opt,
			 PROTO_REGEX_MAX);
		return usage_error("%s", msg);
	}
	r = regcomp(&compiled, re, REG_EXTENDED | REG_NOSUB);
	if (r == 0) {
		regfree(&compiled);
		return EXIT_OK;
	}
	regerror(r, &compiled, why, sizeof(why));
	snprintf(msg, sizeof(msg), "bad %s '%s': %s", opt, re, why);
	return usage_error("%s", msg);
}

/* Checks the range options and fills the request's range. */
static int export_range(struct proto_export_request *ex, const char *window, const char *from,
			const char *to, const char *capture)
{
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
		return usage_error("%s", "export needs --window, --from or --capture");

	if (capture) {
		if (parse_u64(capture, UINT64_C(1) << 53, &id) < 0 || id == 0)
			return usage_error(
				"bad --capture '%s': want a capture id (a positive number)",
				capture);
		ex->capture_id = id;
		return EXIT_OK;
	}
	if (window) {
		r = timearg_window(window, now, &ex->from_ms, &window_to);
		if (r == -ERANGE)
			return usage_error("bad --window '%s': reaches back before 1970", window);
		if (r < 0)
			return usage_error(
				"bad --window '%s': want lastN followed by s, m, h or d, "
				"e.g. last30m",
				window);
		return EXIT_OK; /* to_ms 0: up to the daemon's now */
	}
	r = parse_time("--from", from, false, now, &ex->from_ms);
	if (r != EXIT_OK)
		return r;
	if (ex->from_ms == 0)
		return usage_error("bad --from '%s': must be after 1970-01-01T00:00:00Z", from);
	if (to) {
		r = parse_time("--to", to, false, now, &ex->to_ms);
		if (r != EXIT_OK)
			return r;
		if (ex->to_ms <= ex->from_ms)
			return usage_error("bad --to '%s': must be later than --from", to);
	}
	return EXIT_OK;
}

static void export_summary(const struct proto_export_result *res)
{
	if (!res->windows && res->capture_id)
		fprintf(stderr, "offcpuctl: note: no window of capture %" PRIu64 " is stored\n",
			res->capture_id);
	else if (!res->windows)
		fprintf(stderr, "offcpuctl: note: no stored window starts in that range\n");
	else if (isatty(STDERR_FILENO))
		fprintf(stderr, "%" PRIu64 " window%s, %.1f s off-CPU\n", res->windows,
			res->windows == 1 ? "" : "s", res->total_ns / 1e9);
}

static int cmd_export(int argc, char **argv)
{
	enum {
		OPT_WINDOW = 256,
		OPT_FROM,
		OPT_TO,
		OPT_CAPTURE,
		OPT_COMM,
		OPT_STATE,
		OPT_GREP,
		OPT_EXCLUDE,
	};
	static const struct option options[] = {
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "pid", required_argument, NULL, 'p' },
		{ "comm", required_argument, NULL, OPT_COMM },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "grep", required_argument, NULL, OPT_GREP },
		{ "exclude", required_argument, NULL, OPT_EXCLUDE },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	const char *window = NULL, *from = NULL, *to = NULL, *capture = NULL;
	const char *grep = NULL, *exclude = NULL, *output = NULL;
	struct proto_export_request *ex;
	struct proto_request *req;
	struct proto_reply *reply;
	char *raw;
	int opt, r;

	/* Two 1 KiB patterns and the capture's id arrays: keep it off the stack. */
	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_EXPORT;
	ex = &req->export;
	ex->state_mask = THREAD_STATE_ALL;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "p:o:j", options, NULL)) != -1) {
		r = 0;
		switch (opt) {
		case OPT_WINDOW:
			window = optarg;
			break;
		case OPT_FROM:
			from = optarg;
			break;
		case OPT_TO:
			to = optarg;
			break;
		case OPT_CAPTURE:
			capture = optarg;
			break;
		case 'p':
			if (parse_ids(optarg, ex->pids, &ex->n_pids) < 0)
				r = usage_error(
					"bad --pid '%s': want positive pids, comma-separated",
					optarg);
			break;
		case OPT_COMM:
			if (!*optarg || strlen(optarg) > PROTO_COMM_MAX)
				r = usage_error("bad --comm '%s': want a thread name of 1 to "
						"63 bytes",
						optarg);
			else
				strcpy(ex->comm, optarg);
			break;
		case OPT_STATE:
			if (thread_state_mask_parse(optarg, &ex->state_mask) < 0)
				r = usage_error("bad --state '%s': want a list of R, S, D, O "
						"(running, sleeping, disk, other)",
						optarg);
			break;
		case OPT_GREP:
			grep = optarg;
			break;
		case OPT_EXCLUDE:
			exclude = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'j':
			json_output = true;
			break;
		default:
			r = usage_error("%s", "bad export option");
		}
		if (r)
			goto out;
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	r = export_range(ex, window, from, to, capture);
	if (r != EXIT_OK)
		goto out;
	if (grep) {
		r = check_regex("--grep", grep);
		if (r != EXIT_OK)
			goto out;
		strcpy(ex->grep, grep);
	}
	if (exclude) {
		r = check_regex("--exclude", exclude);
		if (r != EXIT_OK)
			goto out;
		strcpy(ex->exclude, exclude);
	}
	ex->format = json_output ? PROTO_FORMAT_JSON : PROTO_FORMAT_FOLDED;

	r = transact(req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		goto out;
	if (!json_output)
		export_summary(&reply->export);
	r = write_result(output, raw, reply->export.folded);
	proto_reply_free(reply);
	free(raw);
out:
	free(req);
	return r;
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
	return EXIT_OK;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "status", cmd_status }, { "capture", cmd_capture }, { "windows", cmd_windows },
	{ "export", cmd_export }, { "help", cmd_help },
};

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	socket_path = getenv("OFFCPUD_SOCKET");
	if (!socket_path || !*socket_path)
		socket_path = DEFAULT_SOCKET;
	/* '+': stop at the command; its options are its own. */
	while ((opt = getopt_long(argc, argv, "+s:jh", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			socket_path = optarg;
			break;
		case 'j':
			json_output = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'offcpuctl help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name))
			return commands[i].fn(argc - optind, argv + optind);
	return usage_error("unknown command '%s'", argv[optind]);
}
