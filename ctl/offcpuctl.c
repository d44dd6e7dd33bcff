/*
 * offcpuctl: the command-line client of offcpud. Subcommands are dispatched
 * from a table; every one has a --json mode whose output (errors included)
 * is JSON. Exit codes are listed in usage() and proto/PROTOCOL.md.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
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
		"  help                        this text\n"
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
	char msg[256];

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
	if (json_output) {
		char *text = NULL;

		if (asprintf(&text, "%s\n", raw) < 0)
			r = fail(EXIT_ERROR, "internal", "out of memory");
		else
			r = write_output(output, text);
		free(text);
	} else {
		capture_summary(&reply->capture);
		r = write_output(output, reply->capture.folded ? reply->capture.folded : "");
	}
	proto_reply_free(reply);
	free(raw);
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
	{ "status", cmd_status },
	{ "capture", cmd_capture },
	{ "help", cmd_help },
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
