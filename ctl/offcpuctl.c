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
#include "pprof.h"
#include "serve.h"
#include "proto.h"
#include "proto_samples.h"
#include "elf_funcs.h"
#include "flame_options.h"
#include "help.h"
#include "latency.h"
#include "latency_plot.h"
#include "render_output.h"
#include "stack_filter.h"
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
		"  status [--verbose]          daemon version, uptime, each kind (ready, in use or\n"
		"                              unavailable, and why), store, slots, rates, drops\n"
		"      -v, --verbose           also the BPF programs (--json: always)\n"
		"  capture [OPTIONS]           capture off-CPU stacks; folded output\n"
		"      -p, --pid PID[,PID...]  processes to capture (default: all)\n"
		"      -t, --tid TID[,TID...]  only these threads\n"
		"      -d, --seconds N         duration (default 10); Ctrl-C ends it early\n"
		"          --state LIST        thread states at switch-out: R (running, "
		"preempted),\n"
		"                              S (sleeping), D (disk), O (other); e.g. S,D\n"
		"          --min-block-us N, --min-us N\n"
		"                              only blocks (I/Os) of at least N microseconds\n"
		"          --max-block-us N    only blocks of at most N microseconds\n"
		"      -U, --user-only         user stacks only\n"
		"      -K, --kernel-only       kernel stacks only\n"
		"          --kind K            what to record: offcpu (default), wakeup (the\n"
		"                              wakers' stacks), offwake, chain (both), runq\n"
		"                              (run-queue wait), oncpu (sampled on-CPU time),\n"
		"                              hotcold or oncpu,offcpu (both, [on-cpu] leaves\n"
		"                              mark on-CPU time), bio (block I/O by the issuing\n"
		"                              stack), fileio (read/write/fsync by user stack);\n"
		"                              see offcpuctl(8)\n"
		"          --metric M          time (default), count or bytes (bio, fileio)\n"
		"          --split-runq        offcpu: run-queue wait as [runqueue] leaves\n"
		"          --with-filename     fileio: the file's name as the leaf ([file] NAME)\n"
		"          --sampled[=T_US]    offcpu, runq: stacks of blocks sampled in\n"
		"                              proportion to time (period T, default the\n"
		"                              daemon's sample_period_us); totals stay exact\n"
		"          --lines             source file:line on each user frame (from\n"
		"                              DWARF; inlined functions are frames anyway)\n"
		"          --chain-depth N     chain: waker levels, 1 to 8 (default 3)\n"
		"          --request SYMBOL[@BINARY]\n"
		"                              only off-CPU time inside this function (repeat\n"
		"                              for up to 8); found in the --pid processes'\n"
		"                              executables and libraries, or in BINARY;\n"
		"                              exact, demangled C++ or glob name\n"
		"      plus the stack filters and output options below\n"
		"  windows [--since T]         list the stored windows (T: a time, or lastNx)\n"
		"  export RANGE [OPTIONS]      merge stored windows; folded output\n"
		"      RANGE is one of:\n"
		"          --window lastNx     the last N s, m, h or d, e.g. last30m\n"
		"          --from T [--to T]   windows starting at or after --from, before --to\n"
		"                              (default: now)\n"
		"          --capture ID        the window a capture stored\n"
		"      -p, --pid PID[,PID...]  only these processes\n"
		"          --state LIST        thread states, as for capture\n"
		"          --kind K            the kind of profile, as for capture (default\n"
		"                              offcpu); a diff compares the same kind\n"
		"          --metric M          time (default), count or bytes (bio, fileio)\n"
		"          --diff-against SPEC compare RANGE (after) with a baseline (before):\n"
		"                              capture:ID, lastNx, or T1..T2 (e.g.\n"
		"                              2h-ago..1h-ago); folded output is then\n"
		"                              'stack BEFORE AFTER', --svg a differential flame\n"
		"                              graph (red: grew, blue: shrank)\n"
		"          --lines             source lines, as for capture (where recorded)\n"
		"          --normalize         scale the baseline to RANGE's total\n"
		"          --strip-hex         match frames that differ only in hex addresses\n"
		"          --diff-reverse-view svg: widths from the baseline, so vanished\n"
		"                              stacks show\n"
		"          --negate            svg: red for shrank, blue for grew\n"
		"      plus the stack filters and output options below\n"
		"  hist RANGE [OPTIONS]        per-process log2 histograms of block times, in\n"
		"                              microseconds; RANGE as for export\n"
		"      -p, --pid PID[,PID...]  only these processes\n"
		"          --kind K            offcpu (default: whole off-CPU time) or runq\n"
		"                              (run-queue latency)\n"
		"  flamegraph [FILE|-]         draw folded stacks (2 columns, or 3 for a\n"
		"                              differential) as an svg, offline; stdin by default\n"
		"      --strip-hex, --negate, --diff-reverse-view as for export\n"
		"      plus the stack filters below (not --pid, --state: a folded file has\n"
		"      no pids or thread states) and the output options (--format svg,\n"
		"      speedscope or pprof)\n"
		"      and flamegraph.pl's: --colors NAME, --hash, --random, --cp,\n"
		"      --palette-map FILE, --bgcolors, --fonttype, --fontsize, --fontwidth,\n"
		"      --nametype, --total, --factor, --encoding, --notes; --self-right\n"
		"      keeps a frame's own time right of its callees\n"
		"  diff BEFORE AFTER           compare two folded files: 'stack BEFORE AFTER'\n"
		"                              lines, or with --svg a differential flame graph\n"
		"      -n, --normalize, -s, --strip-hex (difffolded.pl's), --negate,\n"
		"      --diff-reverse-view as for export, plus the stack filters, applied to\n"
		"      both files as for flamegraph, the output options below and\n"
		"      flamegraph's flamegraph.pl options\n"
		"  latency --func SYMBOL       Intel PT function latency: calls, histogram,\n"
		"                              children, on/off-CPU split\n"
		"      -p, --pid P             offcpud records process P with Intel PT for\n"
		"                              -d, --seconds N (needs an Intel CPU with PT);\n"
		"                              the trace stays in offcpud's pt_dir\n"
		"      --snapshot              flight recorder: only the last pt_buffer bytes\n"
		"                              of trace per thread, taken at the end\n"
		"      --from-trace FILE       from a stored trace, offline\n"
		"      --latency-range MIN,MAX only calls of MIN..MAX ns\n"
		"      --timeline              one line per call: tid start latency off-CPU;\n"
		"                              with --svg a plot of latency (log scale) over\n"
		"                              time, a colour per thread, calls with off-CPU\n"
		"                              time hollow (--title, --subtitle, --width)\n"
		"      --format folded, --svg  the latency flame graph (values in ns)\n"
		"      --json                  report and timeline as JSON\n"
		"  serve [--listen ADDR:PORT]  a web page over the stored windows (heatmap,\n"
		"                              flame graphs, diffs, histograms) and its HTTP\n"
		"                              API (offcpuctl(8), SERVE); default\n"
		"                              127.0.0.1:9274; not loopback: --allow-remote\n"
		"  help [COMMAND]              this text, or one command's (COMMAND --help too)\n"
		"\n"
		"Stack filters of capture, export, flamegraph and diff (FILTERS in\n"
		"offcpuctl(8)); all given must pass:\n"
		"  --comm NAME                 only threads named exactly NAME\n"
		"  --grep RE                   only stacks with a frame matching RE\n"
		"  --exclude RE                drop stacks with a frame matching RE\n"
		"                              (RE: POSIX extended, matched against each frame,\n"
		"                              the comm and the wakers' too: '^do_command$')\n"
		"\n"
		"Output options of capture, export, flamegraph and diff:\n"
		"  -o, --output FILE           write to FILE instead of stdout\n"
		"      --format F              folded (default), json (same as --json), svg,\n"
		"                              speedscope (https://www.speedscope.app), or\n"
		"                              pprof (capture, export: gzipped, for go tool\n"
		"                              pprof; to -o FILE or a pipe, not a terminal)\n"
		"      --svg                   a flame graph: same as --format svg\n"
		"  for svg (speedscope takes --title only):\n"
		"      --title T               title (default: offcpud picks one)\n"
		"      --subtitle T            a second line under the title\n"
		"      --countname NAME        unit of the values (default us)\n"
		"      --width PX              image width, 200 to 100000 (default 1200)\n"
		"      --height PX             frame height, 4 to 200 (default 16)\n"
		"      --minwidth PX|PCT%%      leave out narrower frames (default 0.1)\n"
		"      --inverted              icicle graph: the roots at the top\n"
		"      --reverse               stacks reversed: the blocking leaves as roots\n"
		"      --flamechart            keep the input order instead of sorting frames\n"
		"      --palette NAME          auto (default: diff for --diff-against, else\n"
		"                              io), hot, io, wakeup, chain or diff\n"
		"\n"
		"Times T: unix seconds (1732240000.5), RFC 3339 (2026-11-22T01:00:00Z,\n"
		"2026-11-22 01:00:00+01:00) or relative (30m-ago); units s, m, h, d.\n"
		"\n"
		"Global options:\n"
		"  -s, --socket PATH  daemon socket (default $OFFCPUD_SOCKET or " DEFAULT_SOCKET
		")\n"
		"  -j, --json         JSON output, errors included: the daemon's raw reply\n"
		"                     (JSON rows, unless --format asks for another)\n"
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
	/* A daemon that refuses a client (busy, permission) says why and closes
	 * at once: that reply can still be read after the send failed. */
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
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
	if (reply->cmd != req->cmd) {
		proto_reply_free(reply);
		free(raw);
		return fail(EXIT_ERROR, "bad_reply", "offcpud answered another command");
	}
	*ret_reply = reply;
	*ret_raw = raw;
	return EXIT_OK;
}

/* "do_command: 1200 requests, mean 1.250 ms, of which 0.800 ms off-CPU (64 %)" */
static void requests_summary(FILE *out, const char *prefix, const struct proto_request_stats *r,
			     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double n_req = r[i].count ? (double)r[i].count : 1;

		fprintf(out, "%s%s: %" PRIu64 " request%s, mean %.3f ms, of which %.3f ms off-CPU",
			prefix, r[i].symbol, r[i].count, r[i].count == 1 ? "" : "s",
			r[i].wall_ns / n_req / 1e6, r[i].offcpu_ns / n_req / 1e6);
		if (r[i].wall_ns)
			fprintf(out, " (%.0f %%)", 100.0 * r[i].offcpu_ns / r[i].wall_ns);
		fprintf(out, "\n");
		if (r[i].warning)
			fprintf(stderr, "offcpuctl: warning: %s: %s\n", r[i].symbol, r[i].warning);
	}
}

static uint64_t counter_value(const struct proto_status *st, const char *name)
{
	for (size_t i = 0; i < st->n_counters; i++)
		if (!strcmp(st->counters[i].name, name))
			return st->counters[i].value;
	return 0;
}

static void unwind_summary(const struct proto_status *st)
{
	const struct proto_unwind_status *u = &st->unwind;
	uint64_t walks = counter_value(st, "ustack_table_walks");
	uint64_t truncated = counter_value(st, "ustack_truncated");

	if (!*u->mode)
		return;
	if (strcmp(u->mode, "dwarf")) {
		printf("user stacks: frame pointers only\n");
		return;
	}
	printf("user stacks: unwind tables of %" PRIu64 " files for %" PRIu64 " processes (%" PRIu64
	       " of %" PRIu64 " rows, %.1f MiB); %" PRIu64 " built in %.2f s",
	       u->tables, u->processes, u->rows_used, u->rows_max, u->table_bytes / 1048576.0,
	       u->builds, u->build_ns_total / 1e9);
	if (u->build_ns_max)
		printf(" (longest %.3f s: %s)", u->build_ns_max / 1e9, u->build_max_path);
	if (u->no_room || u->failed || u->evictions)
		printf("; %" PRIu64 " files without room, %" PRIu64 " without CFI, %" PRIu64
		       " evicted",
		       u->no_room, u->failed, u->evictions);
	if (walks)
		printf("; %" PRIu64 " walks, %.1f%% reached the thread's first frame", walks,
		       100.0 * (walks - truncated) / walks);
	printf("\n");
}

/* The continuous profile's stacks: sampled (how, at what cost, how
 * accurate the last window is) or exact. */
static void sampling_summary(const struct proto_sampling_status *sm)
{
	if (!*sm->stacks)
		return;
	if (strcmp(sm->stacks, "sampled")) {
		printf("always-on stacks: exact (every block's)\n");
		return;
	}
	printf("always-on stacks: sampled, T = %" PRIu64 " us; user stacks walked %s%s%s\n",
	       sm->period_us,
	       !strcmp(sm->walk, "deferred") ? "when the thread is current again" : "at switch-out",
	       *sm->walk_reason ? ": " : "", sm->walk_reason);
	printf("  %.0f samples/s of %.0f blocks/s; %.0f user and %.0f kernel stack walks/s",
	       sm->samples_per_s, sm->blocks_per_s, sm->user_walks_per_s, sm->kernel_walks_per_s);
	if (sm->samples_lost)
		printf("; %" PRIu64 " samples lost (their time kept)", sm->samples_lost);
	printf("\n");
	if (sm->window_blocks)
		printf("  last window: %" PRIu64 " samples of %" PRIu64
		       " blocks; a stack holding 1%% of it is within +-%.1f%% (one standard "
		       "error)\n",
		       sm->window_samples, sm->window_blocks, sm->window_error_pct);
}

static void pt_summary(const struct proto_pt_status *pt)
{
	if (!*pt->event)
		return;
	if (!pt->available) {
		printf("Intel PT (latency --pid): %s\n", pt->reason);
		return;
	}
	printf("Intel PT (latency --pid): %s", !strcmp(pt->event, "sideband")
							 ? "sideband only (pt_event = sideband)"
							 : "available");
	if (pt->address_ranges)
		printf(", %u address filter%s", pt->address_ranges,
		       pt->address_ranges == 1 ? "" : "s");
	if (pt->recording_pid)
		printf("; recording process %u", pt->recording_pid);
	printf("\n");
}

/* Each kind: ready, in use or unavailable, and why (daemon/kind_status.c). */
static void kinds_summary(const struct proto_status *st)
{
	if (!st->n_kinds) { /* an older daemon: its I/O paths */
		printf("block I/O (--kind bio): %s\n",
		       *st->bio_tracepoints ? st->bio_tracepoints : "unavailable on this kernel");
		printf("file I/O (--kind fileio): %s\n",
		       *st->fileio_tracepoints ? st->fileio_tracepoints
					       : "unavailable on this kernel");
		return;
	}
	printf("kinds:\n");
	for (size_t i = 0; i < st->n_kinds; i++)
		if (*st->kinds[i].detail)
			printf("  %-8s %-11s %s\n", st->kinds[i].name, st->kinds[i].state,
			       st->kinds[i].detail);
		else
			printf("  %-8s %s\n", st->kinds[i].name, st->kinds[i].state);
}

static int cmd_status(int argc, char **argv)
{
	const struct proto_status *st;
	struct proto_request req = { .cmd = PROTO_CMD_STATUS };
	struct proto_reply *reply;
	size_t n_loaded;
	char *raw;
	int r;

	bool verbose = argc == 2 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--verbose"));

	if (argc > 1 && !verbose)
		return usage_error("status takes only --verbose, got '%s'", argv[1]);
	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (json_output) {
		printf("%s\n", raw);
	} else {
		st = &reply->status;
		printf("offcpud %s, pid %u, up %" PRIu64 " s\n", st->version, st->pid,
		       st->uptime_s);
		kinds_summary(st);
		n_loaded = 0;
		for (size_t i = 0; i < st->n_programs; i++)
			n_loaded += st->programs[i].loaded;
		printf("programs (via %s): %zu of %zu loaded%s\n", st->tracepoint, n_loaded,
		       st->n_programs, verbose ? "" : "; --verbose lists them");
		for (size_t i = 0; verbose && i < st->n_programs; i++) {
			const struct proto_program *p = &st->programs[i];

			printf("  %-18s %-9s %10.0f runs/s", p->name,
			       p->attached ? "attached"
			       : p->loaded ? "idle"
					   : "unloaded",
			       p->events_per_s);
			if (p->run_cnt && p->run_time_ns)
				printf(", %6.0f ns/run, %5.2f%% of a CPU",
				       (double)p->run_time_ns / p->run_cnt,
				       p->events_per_s * p->run_time_ns / p->run_cnt / 1e7);
			printf("\n");
		}
		for (size_t i = 0; i < st->n_groups; i++) {
			const struct proto_program_group *g = &st->groups[i];

			printf("%s %s", i ? ";" : "program groups:", g->name);
			if (!strcmp(g->state, "loaded"))
				printf(" loaded (%.1f s)", g->load_ms / 1e3);
			else if (!strcmp(g->state, "on_demand"))
				printf(" loads on first use");
			else
				printf(" unavailable: %s", g->reason);
		}
		if (st->n_groups)
			printf("\n");
		printf("maps (last drain):");
		for (size_t i = 0; i < st->n_maps; i++)
			printf(" %s %" PRIu64 "/%" PRIu64 " (%.0f%%)", st->maps[i].name,
			       st->maps[i].entries, st->maps[i].max_entries, st->maps[i].fill_pct);
		printf("\noffcpud: %.1f%% of a CPU, %.1f MiB resident\n", st->cpu_pct,
		       st->rss_bytes / 1048576.0);
		printf("store: %s, %.1f MiB, %" PRIu64 " windows (%" PRIu64 " written, %" PRIu64
		       " failed since start)%s%s\n",
		       st->store.path, st->store.bytes / 1048576.0, st->store.windows,
		       st->store.windows_written, st->store.windows_failed,
		       st->store.disk_full     ? "; DISK FULL: "
		       : *st->store.last_error ? "; last error: "
					       : "",
		       st->store.last_error);
		unwind_summary(st);
		sampling_summary(&st->sampling);
		if (!st->n_kinds || st->pt.available) /* else kinds said why not */
			pt_summary(&st->pt);
		printf("slots: %u of %u in use, %u capture%s running\n", st->slots_active,
		       st->slots_max, st->captures_running, st->captures_running == 1 ? "" : "s");
		printf("events: %.0f context switches/s, %.0f blocks recorded/s\n",
		       st->switches_per_s, st->recorded_per_s);
		printf("counters:");
		for (size_t i = 0; i < st->n_counters; i++)
			printf(" %s=%" PRIu64, st->counters[i].name, st->counters[i].value);
		printf("\n");
		requests_summary(stdout, "continuous requests: ", st->requests, st->n_requests);
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

/* --kind NAME; allowed: bit per enum proto_kind accepted. */
static int parse_kind(const char *arg, uint32_t allowed, const char *want, enum proto_kind *ret)
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

/* --kind of a profile: a kind's name, or hotcold ("oncpu,offcpu" in either
 * order): kind offcpu with on-CPU samples beside. */
static int parse_profile_kind(const char *arg, enum proto_kind *ret, uint32_t *oncpu)
{
	*oncpu = !strcmp(arg, "hotcold") || !strcmp(arg, "oncpu,offcpu") ||
		 !strcmp(arg, "offcpu,oncpu");
	if (*oncpu) {
		*ret = PROTO_KIND_OFFCPU;
		return EXIT_OK;
	}
	return parse_kind(arg, ALL_KINDS, KIND_WANT, ret);
}

static int parse_metric(const char *arg, enum proto_metric *ret)
{
	int m = proto_metric_from_name(arg);

	if (m < 0)
		return usage_error("bad --metric '%s': want time, count or bytes", arg);
	*ret = m;
	return EXIT_OK;
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

/* Takes one of RESULT_OPTIONS; anything else is a bad option of cmd. */
static int result_option(struct result_opts *o, const char *cmd, int opt, const char *arg)
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

/* The format to ask for: the one given, else JSON rows with --json, else
 * folded. Checks that the render options given apply to it. */
static int result_opts_format(const struct result_opts *o, enum proto_format *ret_format)
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

/* A capture's or export's result: the raw reply in JSON mode, else the
 * folded text, or the svg or speedscope text. */
static int write_result(const char *path, const char *raw, enum proto_format format,
			const char *folded, const char *output)
{
	char *text = NULL;
	int r;

	if (json_output) {
		if (asprintf(&text, "%s\n", raw) < 0)
			return fail(EXIT_ERROR, "internal", "out of memory");
		r = write_output(path, text);
		free(text);
		return r;
	}
	if (format == PROTO_FORMAT_SVG || format == PROTO_FORMAT_SPEEDSCOPE) {
		if (!output)
			return fail(EXIT_ERROR, "bad_reply",
				    "offcpud's reply has no rendered output");
		return write_output(path, output);
	}
	return write_output(path, folded ? folded : "");
}

/* --format pprof: the JSON rows of raw, a capture's or export's reply, as a
 * pprof profile in path (NULL: stdout). */
static int write_pprof(const char *path, const char *raw, const struct pprof_opts *opts)
{
	struct proto_samples *s;
	FILE *out;
	int r;

	r = proto_samples_parse(raw, strlen(raw), &s);
	if (r == -ENOMEM)
		return fail(EXIT_ERROR, "internal", "out of memory");
	if (r < 0)
		return fail(EXIT_ERROR, "bad_reply",
			    "offcpud's reply has rows this offcpuctl cannot read");
	out = path ? fopen(path, "wb") : stdout;
	if (!out) {
		proto_samples_free(s);
		return fail(EXIT_ERROR, "output_error", "cannot open %s: %s", path,
			    strerror(errno));
	}
	r = pprof_write(s->rows, s->n, opts, out);
	proto_samples_free(s);
	if (path && fclose(out) != 0 && r == 0)
		r = errno ? -errno : -EIO;
	if (r == -ENOMEM)
		return fail(EXIT_ERROR, "internal", "out of memory");
	if (r < 0)
		return fail(EXIT_ERROR, "output_error", "cannot write %s: %s",
			    path ? path : "standard output", strerror(-r));
	return EXIT_OK;
}

/* A pprof profile of a capture: it ended (about) now, after duration_ns. */
static int write_capture_pprof(const char *path, const char *raw,
			       const struct proto_capture_result *res, enum proto_kind kind,
			       bool oncpu)
{
	struct pprof_opts opts = { .kind = kind, .oncpu = oncpu };
	char comment[64];
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (res->duration_ns <= (uint64_t)INT64_MAX) {
		opts.duration_nanos = (int64_t)res->duration_ns;
		opts.time_nanos =
			(int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - opts.duration_nanos;
	}
	snprintf(comment, sizeof(comment), "offcpud capture %" PRIu64, res->id);
	opts.comment = comment;
	return write_pprof(path, raw, &opts);
}

/* A pprof profile of an export: a range's time is known, a capture's not. */
static int write_export_pprof(const char *path, const char *raw,
			      const struct proto_export_result *res, enum proto_kind kind,
			      bool oncpu)
{
	struct pprof_opts opts = { .kind = kind, .oncpu = oncpu };
	char comment[64];

	if (res->capture_id) {
		snprintf(comment, sizeof(comment), "offcpud export of capture %" PRIu64,
			 res->capture_id);
	} else {
		snprintf(comment, sizeof(comment), "offcpud export");
		if (res->from_ms > 0 && res->to_ms > res->from_ms &&
		    res->to_ms <= INT64_MAX / 1000000) {
			opts.time_nanos = res->from_ms * 1000000;
			opts.duration_nanos = (res->to_ms - res->from_ms) * 1000000;
		}
	}
	opts.comment = comment;
	return write_pprof(path, raw, &opts);
}

/*
 * The stack filters' options (FILTERS in offcpuctl(8)) that capture,
 * export, flamegraph and diff take alike; each command has its own --pid
 * and --state. 700 on.
 */
enum { OPT_COMM = 700, OPT_GREP, OPT_EXCLUDE };

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

/* Takes opt if it is one of FILTER_OPTIONS. */
static bool filter_option(struct filter_args *a, int opt, const char *arg)
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

/* Checks the filter options given, as the daemon would, and copies them
 * into a request's comm (PROTO_COMM_MAX + 1 bytes), grep and exclude
 * (PROTO_REGEX_MAX + 1 bytes each). */
static int filter_args_copy(const struct filter_args *a, char *comm, char *grep, char *exclude)
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

/* How much of the time has whole user stacks; only when some were truncated. */
static void user_stacks_summary(const struct proto_user_stacks *us)
{
	uint64_t all = us->complete_ns + us->truncated_ns + us->frame_pointer_ns;

	if (!us->truncated_ns)
		return;
	fprintf(stderr,
		"offcpuctl: note: user stacks of %.1f%% of the time are incomplete "
		"(root frame [truncated]); %.1f%% reach the thread's first frame, %.1f%% are "
		"frame-pointer walks\n",
		100.0 * us->truncated_ns / all, 100.0 * us->complete_ns / all,
		100.0 * us->frame_pointer_ns / all);
}

static void capture_summary(const struct proto_capture_result *res, enum proto_kind kind,
			    bool oncpu)
{
	const char *what = oncpu		      ? "on- and off-CPU"
			   : kind == PROTO_KIND_ONCPU ? "on-CPU"
						      : "off-CPU";

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
	if (res->loaded && *res->loaded)
		fprintf(stderr, "offcpuctl: note: loaded the %s programs in %.1f s (first use)\n",
			res->loaded, res->load_ms / 1e3);
	requests_summary(stderr, "", res->requests, res->n_requests);
	user_stacks_summary(&res->user_stacks);
	if (res->sampling.period_us)
		fprintf(stderr,
			"offcpuctl: note: sampled stacks (T = %" PRIu64 " us): %" PRIu64
			" of %" PRIu64 " blocks; per-thread totals are exact, a stack holding 1%%"
			" of the time is within +-%.1f%% (one standard error)\n",
			res->sampling.period_us, res->sampling.samples, res->sampling.blocks,
			res->sampling.error_pct);
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "captured %" PRIu64 " stacks, %.3f s %s in %.1f s\n",
			res->n_samples, res->total_ns / 1e9, what, res->duration_ns / 1e9);
}

static int cmd_capture(int argc, char **argv)
{
	enum {
		OPT_STATE = 256,
		OPT_MIN,
		OPT_MAX,
		OPT_KIND,
		OPT_SPLIT_RUNQ,
		OPT_LINES,
		OPT_CHAIN_DEPTH,
		OPT_REQUEST,
		OPT_METRIC,
		OPT_WITH_FILENAME,
		OPT_SAMPLED,
	};
	static const struct option options[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "min-block-us", required_argument, NULL, OPT_MIN },
		{ "min-us", required_argument, NULL, OPT_MIN },
		{ "max-block-us", required_argument, NULL, OPT_MAX },
		{ "user-only", no_argument, NULL, 'U' },
		{ "kernel-only", no_argument, NULL, 'K' },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "split-runq", no_argument, NULL, OPT_SPLIT_RUNQ },
		{ "with-filename", no_argument, NULL, OPT_WITH_FILENAME },
		{ "sampled", optional_argument, NULL, OPT_SAMPLED },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "metric", required_argument, NULL, OPT_METRIC },
		{ "chain-depth", required_argument, NULL, OPT_CHAIN_DEPTH },
		{ "request", required_argument, NULL, OPT_REQUEST },
		FILTER_OPTIONS,
		RESULT_OPTIONS,
		{ 0 },
	};
	bool chain_depth = false;
	struct filter_args filters = { 0 };
	struct result_opts ro = RESULT_OPTS_INIT;
	enum proto_format format;
	struct proto_request *req;
	struct proto_capture_request *cap;
	enum proto_kind kind;
	bool oncpu;
	struct progress progress = { .start = time(NULL) };
	struct proto_reply *reply;
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
	cap->chain_depth = PROTO_CHAIN_DEPTH_DEFAULT;
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:t:d:UK" RESULT_SHORT_OPTIONS, options, NULL)) !=
	       -1) {
		r = 0;
		if (filter_option(&filters, opt, optarg))
			continue;
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
		case OPT_KIND:
			r = parse_profile_kind(optarg, &cap->kind, &cap->oncpu);
			break;
		case OPT_METRIC:
			r = parse_metric(optarg, &cap->metric);
			break;
		case OPT_SPLIT_RUNQ:
			cap->split_runq = 1;
			break;
		case OPT_WITH_FILENAME:
			cap->with_filename = 1;
			break;
		case OPT_SAMPLED:
			cap->sampled = 1;
			if (optarg && (parse_u64(optarg, PROTO_MAX_SAMPLE_PERIOD_US, &v) < 0 || !v))
				r = usage_error("--sampled: the period is 1 to 1000000 "
						"microseconds, not '%s'",
						optarg);
			else if (optarg)
				cap->sample_period_us = (uint32_t)v;
			break;
		case OPT_LINES:
			cap->lines = 1;
			break;
		case OPT_CHAIN_DEPTH:
			if (parse_u64(optarg, PROTO_CHAIN_DEPTH_MAX, &v) < 0 || v == 0)
				r = usage_error("bad --chain-depth '%s': want 1 to 8 waker levels",
						optarg);
			else
				cap->chain_depth = v;
			chain_depth = true;
			break;
		case OPT_REQUEST:
			if (cap->n_requests == PROTO_MAX_REQUESTS)
				r = usage_error("more than 8 --request symbols, at '%s'", optarg);
			else if (!*optarg || strlen(optarg) > PROTO_REQUEST_SPEC_MAX)
				r = usage_error("bad --request '%s': want SYMBOL[@BINARY], at most "
						"511 bytes",
						optarg);
			else
				strcpy(cap->requests[cap->n_requests++], optarg);
			break;
		default:
			r = result_option(&ro, "capture", opt, optarg);
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
	if (cap->metric == PROTO_METRIC_BYTES && cap->kind != PROTO_KIND_BIO &&
	    cap->kind != PROTO_KIND_FILEIO) {
		r = usage_error("--metric bytes only applies to --kind bio or fileio, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (cap->with_filename && cap->kind != PROTO_KIND_FILEIO) {
		r = usage_error("--with-filename only applies to --kind fileio, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (cap->sampled && cap->kind != PROTO_KIND_OFFCPU && cap->kind != PROTO_KIND_RUNQ) {
		r = usage_error("--sampled only applies to --kind offcpu or runq, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (cap->split_runq && cap->kind != PROTO_KIND_OFFCPU) {
		r = usage_error("--split-runq only applies to --kind offcpu, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	if (chain_depth && cap->kind != PROTO_KIND_CHAIN) {
		r = usage_error("--chain-depth only applies to --kind chain, not %s",
				proto_kind_name(cap->kind));
		free(req);
		return r;
	}
	r = result_opts_format(&ro, &format);
	if (r == EXIT_OK)
		r = filter_args_copy(&filters, cap->comm, cap->grep, cap->exclude);
	if (r != EXIT_OK) {
		free(req);
		return r;
	}
	cap->format = format;
	cap->render = ro.render;
	progress.seconds = cap->seconds;
	kind = cap->kind;
	oncpu = cap->oncpu;

	signal(SIGINT, on_sigint);
	r = transact(req, isatty(STDERR_FILENO) ? progress_tick : NULL, &progress, &reply, &raw);
	free(req);
	if (progress.shown)
		fprintf(stderr, "\r\033[K");
	if (r != EXIT_OK)
		return r;
	if (!json_output)
		capture_summary(&reply->capture, kind, oncpu);
	if (ro.pprof)
		r = write_capture_pprof(ro.path, raw, &reply->capture, kind, oncpu);
	else
		r = write_result(ro.path, raw, format, reply->capture.folded,
				 reply->capture.output);
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

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
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

/* The range options of export and hist as given; NULL: absent. */
struct range_args {
	const char *window, *from, *to, *capture;
};

/* Which windows cmd reads: checks the range options and sets the request's
 * range (from_ms, to_ms) or capture_id; on a usage error they may be set in
 * part. */
static int parse_range(const char *cmd, const struct range_args *a, int64_t *from_ms,
		       int64_t *to_ms, uint64_t *capture_id)
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
		return usage_error("%s needs --window, --from or --capture", cmd);

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

/* The range options' getopt_long() entries and their values: 256 on. */
enum { OPT_WINDOW = 256, OPT_FROM, OPT_TO, OPT_CAPTURE, OPT_RANGE_END };

/* clang-format off */
#define RANGE_OPTIONS                                                                              \
	{ "window", required_argument, NULL, OPT_WINDOW },                                         \
	{ "from", required_argument, NULL, OPT_FROM },                                             \
	{ "to", required_argument, NULL, OPT_TO },                                                 \
	{ "capture", required_argument, NULL, OPT_CAPTURE }
/* clang-format on */

/* Takes opt if it is one of RANGE_OPTIONS. */
static bool range_option(struct range_args *a, int opt, const char *arg)
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

/*
 * --diff-against SPEC: "capture:ID", "lastNx" (up to the daemon's now, as
 * for --window) or "T1..T2" (two times as for --from and --to). Fills the
 * request's baseline.
 */
static int export_baseline(struct proto_export_request *ex, const char *spec)
{
	static const char want[] = "bad --diff-against '%s': want capture:ID, lastNx (e.g. "
				   "last1h) or T1..T2 (e.g. 2h-ago..1h-ago)";
	int64_t now = now_ms(), from, to;
	const char *dots;
	char *start;
	uint64_t id;
	int r;

	if (!strncmp(spec, "capture:", 8)) {
		if (parse_u64(spec + 8, UINT64_C(1) << 53, &id) < 0 || id == 0)
			return usage_error("bad --diff-against '%s': want capture:ID with a "
					   "capture id (a positive number)",
					   spec);
		ex->diff_capture = id;
		return EXIT_OK;
	}
	if (!strncmp(spec, "last", 4)) {
		r = timearg_window(spec, now, &ex->diff_from_ms, &to);
		if (r == -ERANGE)
			return usage_error("bad --diff-against '%s': reaches back before 1970",
					   spec);
		return r < 0 ? usage_error(want, spec) : EXIT_OK;
	}
	dots = strstr(spec, "..");
	if (!dots)
		return usage_error(want, spec);
	start = strndup(spec, dots - spec);
	if (!start)
		return fail(EXIT_ERROR, "internal", "out of memory");
	r = parse_time("--diff-against start", start, false, now, &from);
	free(start);
	if (r != EXIT_OK)
		return r;
	r = parse_time("--diff-against end", dots + 2, false, now, &to);
	if (r != EXIT_OK)
		return r;
	if (from == 0)
		return usage_error("bad --diff-against '%s': must start after "
				   "1970-01-01T00:00:00Z",
				   spec);
	if (to <= from)
		return usage_error("bad --diff-against '%s': the end must be later than the "
				   "start",
				   spec);
	ex->diff_from_ms = from;
	ex->diff_to_ms = to;
	return EXIT_OK;
}

/* The differential options against the format: what the daemon would refuse,
 * said in offcpuctl's terms. flag: the first of --normalize ... --negate. */
static int export_diff_check(const char *baseline, const char *flag, const char *svg_flag,
			     enum proto_format format)
{
	if (!baseline && flag)
		return usage_error("%s needs --diff-against", flag);
	if (!baseline)
		return EXIT_OK;
	if (format == PROTO_FORMAT_JSON)
		return usage_error("%s",
				   "--diff-against gives folded or svg output, not JSON rows; "
				   "with --json, add --format folded or --svg to get the "
				   "raw reply");
	if (format == PROTO_FORMAT_SPEEDSCOPE)
		return usage_error("%s", "--diff-against gives folded or svg output, not "
					 "speedscope");
	if (svg_flag && format != PROTO_FORMAT_SVG)
		return usage_error("%s only applies to svg output (--svg or --format svg)",
				   svg_flag);
	return EXIT_OK;
}

static void export_summary(const struct proto_export_result *res)
{
	if (!res->windows && res->capture_id)
		fprintf(stderr, "offcpuctl: note: no window of capture %" PRIu64 " is stored\n",
			res->capture_id);
	else if (!res->windows)
		fprintf(stderr, "offcpuctl: note: no stored window starts in that range\n");
	if (res->differential && !res->diff_windows)
		fprintf(stderr, "offcpuctl: note: no stored window matches the baseline "
				"(--diff-against); everything shows as new\n");
	if (!res->windows || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "%" PRIu64 " window%s, %.1f s off-CPU", res->windows,
		res->windows == 1 ? "" : "s", res->total_ns / 1e9);
	if (res->differential)
		fprintf(stderr, ", against %" PRIu64 " baseline window%s", res->diff_windows,
			res->diff_windows == 1 ? "" : "s");
	fprintf(stderr, "\n");
}

static int cmd_export(int argc, char **argv)
{
	enum {
		OPT_KIND = OPT_RANGE_END,
		OPT_STATE,
		OPT_DIFF_AGAINST,
		OPT_NORMALIZE,
		OPT_STRIP_HEX,
		OPT_EXPORT_LINES,
		OPT_DIFF_REVERSE_VIEW,
		OPT_NEGATE,
		OPT_METRIC,
	};
	static const struct option options[] = {
		RANGE_OPTIONS,
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "metric", required_argument, NULL, OPT_METRIC },
		{ "pid", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, OPT_STATE },
		FILTER_OPTIONS,
		{ "diff-against", required_argument, NULL, OPT_DIFF_AGAINST },
		{ "normalize", no_argument, NULL, OPT_NORMALIZE },
		{ "strip-hex", no_argument, NULL, OPT_STRIP_HEX },
		{ "lines", no_argument, NULL, OPT_EXPORT_LINES },
		{ "diff-reverse-view", no_argument, NULL, OPT_DIFF_REVERSE_VIEW },
		{ "negate", no_argument, NULL, OPT_NEGATE },
		RESULT_OPTIONS,
		{ 0 },
	};
	struct range_args range = { 0 };
	struct filter_args filters = { 0 };
	const char *baseline = NULL;
	const char *diff_flag = NULL, *diff_svg_flag = NULL; /* the first given */
	struct result_opts ro = RESULT_OPTS_INIT;
	enum proto_format format;
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
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		r = 0;
		if (range_option(&range, opt, optarg) || filter_option(&filters, opt, optarg))
			continue;
		switch (opt) {
		case OPT_KIND:
			r = parse_profile_kind(optarg, &ex->kind, &ex->oncpu);
			break;
		case OPT_METRIC:
			r = parse_metric(optarg, &ex->metric);
			break;
		case 'p':
			if (parse_ids(optarg, ex->pids, &ex->n_pids) < 0)
				r = usage_error(
					"bad --pid '%s': want positive pids, comma-separated",
					optarg);
			break;
		case OPT_STATE:
			if (thread_state_mask_parse(optarg, &ex->state_mask) < 0)
				r = usage_error("bad --state '%s': want a list of R, S, D, O "
						"(running, sleeping, disk, other)",
						optarg);
			break;
		case OPT_DIFF_AGAINST:
			baseline = optarg;
			break;
		case OPT_NORMALIZE:
			ex->normalize = 1;
			diff_flag = diff_flag ? diff_flag : "--normalize";
			break;
		case OPT_EXPORT_LINES:
			ex->lines = 1;
			break;
		case OPT_STRIP_HEX:
			ex->strip_hex = 1;
			diff_flag = diff_flag ? diff_flag : "--strip-hex";
			break;
		case OPT_DIFF_REVERSE_VIEW:
			ex->diff_widths_from_old = 1;
			diff_flag = diff_flag ? diff_flag : "--diff-reverse-view";
			diff_svg_flag = diff_svg_flag ? diff_svg_flag : "--diff-reverse-view";
			break;
		case OPT_NEGATE:
			ex->negate = 1;
			diff_flag = diff_flag ? diff_flag : "--negate";
			diff_svg_flag = diff_svg_flag ? diff_svg_flag : "--negate";
			break;
		default:
			r = result_option(&ro, "export", opt, optarg);
		}
		if (r)
			goto out;
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	r = parse_range("export", &range, &ex->from_ms, &ex->to_ms, &ex->capture_id);
	if (r == EXIT_OK && baseline)
		r = export_baseline(ex, baseline);
	if (r == EXIT_OK)
		r = result_opts_format(&ro, &format);
	if (r == EXIT_OK && baseline && ro.pprof)
		r = usage_error("%s", "--diff-against gives folded or svg output, not pprof");
	if (r == EXIT_OK)
		r = export_diff_check(baseline, diff_flag, diff_svg_flag, format);
	if (r == EXIT_OK)
		r = filter_args_copy(&filters, ex->comm, ex->grep, ex->exclude);
	if (r != EXIT_OK)
		goto out;
	ex->format = format;
	ex->render = ro.render;

	r = transact(req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		goto out;
	if (!json_output)
		export_summary(&reply->export);
	if (ro.pprof)
		r = write_export_pprof(ro.path, raw, &reply->export, ex->kind, ex->oncpu);
	else
		r = write_result(ro.path, raw, format, reply->export.folded, reply->export.output);
	proto_reply_free(reply);
	free(raw);
out:
	free(req);
	return r;
}

/* ---- hist ---- */

#define HIST_BAR_WIDTH 40

/* The bar of a bucket: count's share of max (> 0) in HIST_BAR_WIDTH stars,
 * rounded down, as bcc's tools draw it. */
static void print_bar(uint64_t count, uint64_t max)
{
	unsigned stars;

	if (count <= UINT64_MAX / HIST_BAR_WIDTH)
		stars = count * HIST_BAR_WIDTH / max;
	else
		stars = (double)count / max * HIST_BAR_WIDTH;
	if (stars > HIST_BAR_WIDTH)
		stars = HIST_BAR_WIDTH;
	printf("|%.*s%*s|\n", (int)stars, "****************************************",
	       (int)(HIST_BAR_WIDTH - stars), "");
}

/*
 * One process's histogram in the layout of bcc's runqlat and cpudist:
 * bucket b is [2^b, 2^(b+1)) microseconds, bucket 0 [0, 2); empty buckets
 * before the first and after the last count are left out. Returns false if
 * the process has no count (nothing printed).
 */
static bool print_hist_process(const struct proto_hist_process *p, const char *what, bool first)
{
	int lo = -1, hi = -1;
	uint64_t max = 0;

	for (int b = 0; b < PROTO_HIST_BUCKETS; b++) {
		if (!p->counts[b])
			continue;
		if (lo < 0)
			lo = b;
		hi = b;
		if (p->counts[b] > max)
			max = p->counts[b];
	}
	if (lo < 0)
		return false;
	if (!first)
		printf("\n");
	printf("pid = %" PRIu32 " comm = %s (%s)\n", p->tgid, p->comm, what);
	printf("     %-19s : count     distribution\n", "usecs");
	for (int b = lo; b <= hi; b++) {
		uint64_t low = b ? UINT64_C(1) << b : 0, high = (UINT64_C(1) << (b + 1)) - 1;

		printf("%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " ", low, high, p->counts[b]);
		print_bar(p->counts[b], max);
	}
	return true;
}

static int hist_process_cmp(const void *a, const void *b)
{
	const struct proto_hist_process *x = *(const struct proto_hist_process *const *)a;
	const struct proto_hist_process *y = *(const struct proto_hist_process *const *)b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

/* The histograms by process id; notes on standard error when there are none. */
static int print_hist(const struct proto_hist_result *h)
{
	const char *what = strcmp(h->kind, "runq") ? "off-CPU time" : "run-queue latency";
	const struct proto_hist_process **order;
	bool printed = false;

	if (!h->windows && h->capture_id) {
		fprintf(stderr, "offcpuctl: note: no window of capture %" PRIu64 " is stored\n",
			h->capture_id);
		return EXIT_OK;
	}
	if (!h->windows) {
		fprintf(stderr, "offcpuctl: note: no stored window starts in that range\n");
		return EXIT_OK;
	}
	order = calloc(h->n_processes + 1, sizeof(*order));
	if (!order)
		return fail(EXIT_ERROR, "internal", "out of memory");
	for (size_t i = 0; i < h->n_processes; i++)
		order[i] = &h->processes[i];
	if (h->n_processes)
		qsort(order, h->n_processes, sizeof(*order), hist_process_cmp);
	for (size_t i = 0; i < h->n_processes; i++)
		if (print_hist_process(order[i], what, !printed))
			printed = true;
	free(order);
	if (!printed)
		fprintf(stderr,
			"offcpuctl: note: no blocks recorded in the %" PRIu64
			" matching window%s\n",
			h->windows, h->windows == 1 ? "" : "s");
	if (fflush(stdout) != 0)
		return fail(EXIT_ERROR, "output_error", "cannot write standard output: %s",
			    strerror(errno));
	return EXIT_OK;
}

static int cmd_hist(int argc, char **argv)
{
	enum { OPT_KIND = OPT_RANGE_END };
	static const struct option options[] = {
		RANGE_OPTIONS,
		{ "pid", required_argument, NULL, 'p' },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "json", no_argument, NULL, 'j' },
		{ 0 },
	};
	const uint32_t kinds =
		(UINT32_C(1) << PROTO_KIND_OFFCPU) | (UINT32_C(1) << PROTO_KIND_RUNQ);
	struct range_args range = { 0 };
	struct proto_hist_request *h;
	struct proto_request *req;
	struct proto_reply *reply;
	char *raw;
	int opt, r;

	req = calloc(1, sizeof(*req));
	if (!req)
		return fail(EXIT_ERROR, "internal", "out of memory");
	req->cmd = PROTO_CMD_HIST;
	h = &req->hist;
	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:j", options, NULL)) != -1) {
		r = EXIT_OK;
		if (range_option(&range, opt, optarg))
			continue;
		switch (opt) {
		case 'p':
			if (parse_ids(optarg, h->pids, &h->n_pids) < 0)
				r = usage_error(
					"bad --pid '%s': want positive pids, comma-separated",
					optarg);
			break;
		case OPT_KIND:
			r = parse_kind(optarg, kinds, "bad --kind '%s': want offcpu or runq",
				       &h->kind);
			break;
		case 'j':
			json_output = true;
			break;
		default:
			r = usage_error("%s", "bad hist option");
		}
		if (r != EXIT_OK)
			goto out;
	}
	if (optind < argc) {
		r = usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	r = parse_range("hist", &range, &h->from_ms, &h->to_ms, &h->capture_id);
	if (r != EXIT_OK)
		goto out;

	r = transact(req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		goto out;
	if (json_output)
		printf("%s\n", raw);
	else
		r = print_hist(&reply->hist);
	proto_reply_free(reply);
	free(raw);
out:
	free(req);
	return r;
}

/* ---- offline rendering: flamegraph, diff ---- */

/* Reads a whole file ("-": standard input). Returns 0 or -errno. */
static int read_all(const char *path, char **ret, size_t *ret_len)
{
	FILE *in = strcmp(path, "-") ? fopen(path, "re") : stdin;
	size_t len = 0, cap = 0;
	char *buf = NULL;

	if (!in)
		return -errno;
	for (;;) {
		size_t n;

		if (cap - len < 65536) {
			char *b = realloc(buf, cap ? cap * 2 : 1 << 20);

			if (!b) {
				free(buf);
				if (in != stdin)
					fclose(in);
				return -ENOMEM;
			}
			buf = b;
			cap = cap ? cap * 2 : 1 << 20;
		}
		n = fread(buf + len, 1, cap - len - 1, in);
		len += n;
		if (n == 0)
			break;
	}
	buf[len] = '\0';
	if (ferror(in)) {
		free(buf);
		if (in != stdin)
			fclose(in);
		return -EIO;
	}
	if (in != stdin)
		fclose(in);
	*ret = buf;
	*ret_len = len;
	return 0;
}

static void warn_invalid(const char *what, const struct flame_parse_stats *st)
{
	if (st->invalid)
		fprintf(stderr,
			"offcpuctl: warning: %s: %" PRIu64 " invalid line%s skipped (first: line "
			"%" PRIu64 ")\n",
			what, st->invalid, st->invalid == 1 ? "" : "s", st->first_invalid);
}

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

/* Takes opt if it is one of OFFLINE_FILTER_OPTIONS. */
static bool offline_option(struct offline_args *a, int opt, const char *arg)
{
	if (opt == 'p')
		a->pid = arg;
	else if (opt == OPT_OFFLINE_STATE)
		a->state = arg;
	else
		return filter_option(&a->f, opt, arg);
	return true;
}

/* The filter for folded input; *ret stays NULL when no filter is given.
 * stack_filter_new() refuses pids and states, which folded text lacks. */
static int offline_filter(const struct offline_args *a, struct stack_filter **ret)
{
	char comm[PROTO_COMM_MAX + 1], grep[PROTO_REGEX_MAX + 1], exclude[PROTO_REGEX_MAX + 1];
	struct stack_filter_spec spec = {
		.comm = a->f.comm,
		.state_mask = THREAD_STATE_ALL,
		.grep = a->f.grep,
		.exclude = a->f.exclude,
		.folded = true,
	};
	uint32_t pids[PROTO_MAX_IDS];
	char err[256], msg[384];
	int r;

	*ret = NULL;
	if (!a->f.comm && !a->f.grep && !a->f.exclude && !a->pid && !a->state)
		return EXIT_OK;
	r = filter_args_copy(&a->f, comm, grep, exclude);
	if (r != EXIT_OK)
		return r;
	if (a->pid && parse_ids(a->pid, pids, &spec.n_pids) < 0)
		return usage_error("bad --pid '%s': want positive pids, comma-separated", a->pid);
	spec.pids = pids;
	if (a->state && thread_state_mask_parse(a->state, &spec.state_mask) < 0)
		return usage_error("bad --state '%s': want a list of R, S, D, O (running, "
				   "sleeping, disk, other)",
				   a->state);
	r = stack_filter_new(&spec, ret, err, sizeof(err));
	if (r == -EINVAL) {
		snprintf(msg, sizeof(msg),
			 "%s%s%s: %s; use them with 'offcpuctl export' or 'capture'",
			 a->pid ? "--pid" : "", a->pid && a->state ? " and " : "",
			 a->state ? "--state" : "", err);
		return usage_error("%s", msg);
	}
	if (r < 0)
		return fail(EXIT_ERROR, "internal", "out of memory");
	return EXIT_OK;
}

/* flamegraph.pl's options (ctl/flame_options.c), and --palette with one
 * of its palette names: true if opt was one (*r: EXIT_OK or the usage
 * error). */
static bool offline_pl_option(struct flame_pl_args *pl, int opt, const char *arg, int *r)
{
	char err[512];
	int t;

	if (opt == OPT_PALETTE && flame_pl_palette_option(pl, arg)) {
		if (!pl->svg_only)
			pl->svg_only = "--palette";
		*r = EXIT_OK;
		return true;
	}
	t = flame_pl_option(pl, opt, arg, err, sizeof(err));
	if (!t)
		return false;
	*r = t < 0 ? usage_error("%s", err) : EXIT_OK;
	return true;
}

/* flamegraph.pl's colour options without a palette: its default, hot. */
static void offline_pl_default(struct flame_pl_args *pl, const struct result_opts *ro)
{
	if (!pl->svg.pl_palette && ro->render.palette == PROTO_PALETTE_AUTO &&
	    (pl->svg.colour_key != FLAME_KEY_NAME || pl->map_path))
		pl->svg.pl_palette = FLAME_PL_HOT;
}

/* Feeds path ("-": stdin) to f in chunks cut after a newline, so a large
 * input is never held whole; with a filter, only the lines it keeps.
 * Returns 0 or -errno. */
static int parse_file(struct flame *f, const char *path, const struct stack_filter *filter)
{
	FILE *in = strcmp(path, "-") ? fopen(path, "re") : stdin;
	size_t cap = 4 << 20, len = 0;
	char *buf;
	int r = 0;

	if (!in)
		return -errno;
	buf = malloc(cap);
	if (!buf)
		r = -ENOMEM;
	while (r == 0) {
		size_t n = fread(buf + len, 1, cap - len, in), cut;

		len += n;
		if (n == 0) { /* end of input: the rest is the last line */
			if (filter)
				len = stack_filter_folded(filter, buf, len);
			r = len ? flame_parse(f, buf, len) : 0;
			break;
		}
		for (cut = len; cut > 0 && buf[cut - 1] != '\n'; cut--)
			;
		if (cut == 0 && len == cap) { /* one line longer than the buffer */
			char *b = realloc(buf, cap * 2);

			if (!b) {
				r = -ENOMEM;
				break;
			}
			buf = b;
			cap *= 2;
			continue;
		}
		r = flame_parse(f, buf, filter ? stack_filter_folded(filter, buf, cut) : cut);
		memmove(buf, buf + cut, len - cut);
		len -= cut;
	}
	if (ferror(in) && r == 0)
		r = -EIO;
	free(buf);
	if (in != stdin)
		fclose(in);
	return r;
}

/*
 * flamegraph and diff: folded stacks to svg (or speedscope) in o->path. The
 * input is the file path ("-": stdin), streamed and filtered by filter (may
 * be NULL), or when path is NULL the len bytes of text. name says what the
 * input is in messages.
 */
static int draw(const char *path, const struct stack_filter *filter, const char *text, size_t len,
		const char *name, const struct result_opts *o, const struct render_input *input,
		struct flame_pl_args *pl, const char *default_title)
{
	enum proto_format format = o->format >= 0 ? o->format : PROTO_FORMAT_SVG;
	const char *svg_only = o->svg_only ? o->svg_only : pl->svg_only;
	struct flame *f = NULL;
	FILE *out = stdout;
	char err[128];
	int r, e;

	if (!o->pprof && format != PROTO_FORMAT_SVG && format != PROTO_FORMAT_SPEEDSCOPE)
		return usage_error("%s", "this command draws: --format svg, speedscope or pprof");
	if (svg_only && (o->pprof || format != PROTO_FORMAT_SVG))
		return usage_error("%s only applies to svg output", svg_only);
	if (o->pprof && !o->path && isatty(STDOUT_FILENO))
		return usage_error("%s",
				   "--format pprof writes a binary (gzipped) profile, not "
				   "for a terminal: give -o FILE or redirect standard output");
	if (o->pprof)
		format = PROTO_FORMAT_SPEEDSCOPE; /* parsed as for speedscope: no layout options */
	r = flame_pl_map_load(pl);
	if (r < 0)
		return fail(EXIT_ERROR, "input_error", "cannot read the palette map %s: %s",
			    pl->map_path, strerror(-r));
	if (render_flame_new(format, &o->render, input, &f) < 0)
		return fail(EXIT_ERROR, "internal", "out of memory");
	r = path ? parse_file(f, path, filter) : flame_parse(f, text, len);
	if (r < 0) {
		flame_free(f);
		return fail(EXIT_ERROR, "input_error", "cannot read %s: %s", name, strerror(-r));
	}
	warn_invalid(name, flame_stats(f));
	/* As flamegraph.pl: a --total below the input's is ignored, with a word
	 * unless it is about the same. */
	if (pl->svg.total > 0 && pl->svg.total < flame_stats(f)->total &&
	    pl->svg.total / flame_stats(f)->total > 0.02)
		fprintf(stderr,
			"offcpuctl: warning: --total %g is less than the input's total %g: "
			"ignored\n",
			pl->svg.total, flame_stats(f)->total);
	if (o->path && !(out = fopen(o->path, "we"))) {
		flame_free(f);
		return fail(EXIT_ERROR, "output_error", "cannot open %s: %s", o->path,
			    strerror(errno));
	}
	if (o->pprof) {
		r = pprof_write_folded(f, NULL, out);
		snprintf(err, sizeof(err), "nothing to draw: the input has no stacks");
	} else {
		r = render_flame_write_pl(f, format, &o->render, &pl->svg, default_title, out, err,
					  sizeof(err));
	}
	flame_free(f);
	if (r == 0 && (e = flame_pl_map_save(pl)) < 0)
		fprintf(stderr, "offcpuctl: warning: cannot write the palette map %s: %s\n",
			pl->map_path, strerror(-e));
	if ((o->path ? fclose(out) : fflush(out)) != 0 && r == 0)
		r = -errno;
	if (r == -ENODATA)
		return fail(EXIT_ERROR, PROTO_ERR_NO_DATA, "%s: %s", name, err);
	if (r < 0)
		return fail(EXIT_ERROR, "output_error", "cannot write %s: %s",
			    o->path ? o->path : "standard output", strerror(-r));
	return EXIT_OK;
}

static int cmd_flamegraph(int argc, char **argv)
{
	static const struct option options[] = {
		RESULT_OPTIONS,
		{ "strip-hex", no_argument, NULL, OPT_STRIP_HEX },
		{ "negate", no_argument, NULL, OPT_NEGATE },
		{ "diff-reverse-view", no_argument, NULL, OPT_REVERSE_VIEW },
		OFFLINE_FILTER_OPTIONS,
		FLAME_PL_OPTIONS,
		{ 0 },
	};
	struct result_opts ro = RESULT_OPTS_INIT;
	struct render_input input = { 0 };
	struct offline_args filters = { 0 };
	struct flame_pl_args pl = { 0 };
	struct stack_filter *filter;
	const char *path = "-";
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		if (offline_option(&filters, opt, optarg))
			continue;
		if (opt == OPT_STRIP_HEX)
			input.strip_hex = true;
		else if (opt == OPT_NEGATE)
			input.negate = true;
		else if (opt == OPT_REVERSE_VIEW)
			input.widths_from_old = true;
		else if (offline_pl_option(&pl, opt, optarg, &r)) {
			if (r != EXIT_OK)
				return r;
		} else if ((r = result_option(&ro, "flamegraph", opt, optarg)) != EXIT_OK)
			return r;
	}
	offline_pl_default(&pl, &ro);
	if (argc - optind > 1)
		return usage_error("flamegraph takes one input file, got '%s' too",
				   argv[optind + 1]);
	if (optind < argc)
		path = argv[optind];
	r = offline_filter(&filters, &filter);
	if (r != EXIT_OK)
		return r;
	r = draw(path, filter, NULL, 0, strcmp(path, "-") ? path : "standard input", &ro, &input,
		 &pl, "Flame Graph");
	stack_filter_free(filter);
	flame_pl_args_free(&pl);
	return r;
}

static int cmd_diff(int argc, char **argv)
{
	static const struct option options[] = {
		RESULT_OPTIONS,
		{ "normalize", no_argument, NULL, OPT_NORMALIZE },
		{ "strip-hex", no_argument, NULL, OPT_STRIP_HEX },
		{ "negate", no_argument, NULL, OPT_NEGATE },
		{ "diff-reverse-view", no_argument, NULL, OPT_REVERSE_VIEW },
		OFFLINE_FILTER_OPTIONS,
		FLAME_PL_OPTIONS,
		{ 0 },
	};
	struct result_opts ro = RESULT_OPTS_INIT;
	struct render_input input = { 0 };
	struct flame_pl_args pl = { 0 };
	struct flame_parse_stats st_a, st_b;
	struct offline_args filters = { 0 };
	struct stack_filter *filter = NULL;
	bool normalize = false;
	char *a = NULL, *b = NULL, *diff = NULL;
	size_t len_a, len_b;
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	/* -n and -s: difffolded.pl's --normalize and --strip-hex */
	while ((opt = getopt_long(argc, argv, "nsp:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		if (offline_option(&filters, opt, optarg))
			continue;
		if (opt == OPT_NORMALIZE || opt == 'n')
			normalize = true;
		else if (opt == OPT_STRIP_HEX || opt == 's')
			input.strip_hex = true;
		else if (opt == OPT_NEGATE)
			input.negate = true;
		else if (opt == OPT_REVERSE_VIEW)
			input.widths_from_old = true;
		else if (offline_pl_option(&pl, opt, optarg, &r)) {
			if (r != EXIT_OK)
				return r;
		} else if ((r = result_option(&ro, "diff", opt, optarg)) != EXIT_OK)
			return r;
	}
	offline_pl_default(&pl, &ro);
	if (argc - optind != 2)
		return usage_error("%s", "diff takes two folded files: BEFORE AFTER");
	if ((input.negate || input.widths_from_old) && ro.format != PROTO_FORMAT_SVG)
		return usage_error("%s", "--negate and --diff-reverse-view apply to --svg output");
	r = offline_filter(&filters, &filter);
	if (r != EXIT_OK)
		return r;
	r = read_all(argv[optind], &a, &len_a);
	if (r == 0)
		r = read_all(argv[optind + 1], &b, &len_b);
	if (r < 0) {
		free(a);
		stack_filter_free(filter);
		return fail(EXIT_ERROR, "input_error", "cannot read %s: %s",
			    a ? argv[optind + 1] : argv[optind], strerror(-r));
	}
	if (filter) { /* both sides alike */
		len_a = stack_filter_folded(filter, a, len_a);
		len_b = stack_filter_folded(filter, b, len_b);
		stack_filter_free(filter);
	}
	diff = flame_diff_folded(a, len_a, b, len_b, normalize, input.strip_hex, &st_a, &st_b);
	if (!diff) {
		r = fail(EXIT_ERROR, "internal", "out of memory");
	} else if (ro.format < 0 || ro.format == PROTO_FORMAT_FOLDED) {
		if (ro.svg_only || pl.svg_only)
			r = usage_error("%s only applies to svg output",
					ro.svg_only ? ro.svg_only : pl.svg_only);
		else {
			warn_invalid(argv[optind], &st_a);
			warn_invalid(argv[optind + 1], &st_b);
			r = write_output(ro.path, diff);
		}
	} else {
		input.strip_hex = false; /* already applied to the differential text */
		r = draw(NULL, NULL, diff, strlen(diff), "the differential", &ro, &input, &pl,
			 "Differential Flame Graph");
	}
	flame_pl_args_free(&pl);
	free(a);
	free(b);
	free(diff);
	return r;
}

/* One command's part of usage() (ctl/help.c). */
static int command_help(const char *cmd)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int r;

	if (!mem)
		return fail(EXIT_ERROR, "internal", "out of memory");
	usage(mem);
	fclose(mem);
	r = text ? help_command(text, cmd, stdout) : -ENOMEM;
	free(text);
	if (r == -ENOENT)
		return usage_error("unknown command '%s'", cmd);
	return r < 0 ? fail(EXIT_ERROR, "internal", "out of memory") : EXIT_OK;
}

static int cmd_help(int argc, char **argv)
{
	if (argc > 2)
		return usage_error("help takes one command, got '%s' too", argv[2]);
	if (argc == 2)
		return command_help(argv[1]);
	usage(stdout);
	return EXIT_OK;
}

/* latency: Intel PT function latency, from the daemon (--pid) or from a
 * stored trace (--from-trace, analysed here: ctl/latency.c). */
enum { OPT_FUNC = 700, OPT_FROM_TRACE, OPT_LATENCY_RANGE, OPT_TIMELINE, OPT_SNAPSHOT };

/* Has offcpud record the process; the trace file it stored goes to
 * trace_path (analysed here like --from-trace). */
static int latency_record(uint32_t pid, const char *func, uint32_t seconds, bool snapshot,
			  char *trace_path, size_t path_size)
{
	struct proto_request req = { .cmd = PROTO_CMD_LATENCY };
	const struct proto_pt_trace_result *t;
	struct proto_reply *reply = NULL;
	char *raw = NULL;
	int r;

	if (strlen(func) > PROTO_REQUEST_SPEC_MAX)
		return usage_error("--func is too long: at most %s bytes", "511");
	req.latency.pid = pid;
	req.latency.seconds = seconds;
	req.latency.snapshot = snapshot;
	strcpy(req.latency.func, func);
	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (!reply->has_trace) {
		proto_reply_free(reply);
		free(raw);
		return fail(EXIT_ERROR, "bad_reply", "offcpud answered latency without a trace");
	}
	t = &reply->trace;
	fprintf(stderr,
		"offcpuctl: recorded %s: %" PRIu64 " bytes of %s trace from %" PRIu64
		" threads%s%s, %" PRIu64 " context switches",
		t->path, t->bytes, t->event, t->threads, t->snapshot ? " (snapshot)" : "",
		t->filtered ? ", filtered to the function" : "", t->switches);
	if (t->threads_lost || t->truncated || t->lost)
		fprintf(stderr,
			"; lost: %" PRIu64 " threads, %" PRIu64 " streams truncated, %" PRIu64
			" sideband records",
			t->threads_lost, t->truncated, t->lost);
	fputc('\n', stderr);
	snprintf(trace_path, path_size, "%s", t->path);
	proto_reply_free(reply);
	free(raw);
	return EXIT_OK;
}

/* The svg options the --timeline plot takes: --title, --subtitle, --width. */
static int latency_plot_options(const struct result_opts *ro, struct latency_opts *lo)
{
	const struct proto_render *r = &ro->render;

	if (r->countname[0] || r->frame_height || r->minwidth[0] || r->inverted || r->reverse ||
	    r->flamechart || r->palette != PROTO_PALETTE_AUTO)
		return usage_error("%s", "the --timeline plot takes --title, --subtitle and "
					 "--width; the other svg options are the flame graph's");
	_Static_assert(LATENCY_PLOT_WIDTH_MIN == 400, "the message below");
	if (r->width && r->width < LATENCY_PLOT_WIDTH_MIN)
		return usage_error("--width of the --timeline plot: at least %s pixels", "400");
	lo->title = r->title[0] ? r->title : NULL;
	lo->subtitle = r->subtitle[0] ? r->subtitle : NULL;
	lo->width = r->width;
	return EXIT_OK;
}

static int cmd_latency(int argc, char **argv)
{
	static const struct option options[] = {
		RESULT_OPTIONS,
		{ "pid", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "func", required_argument, NULL, OPT_FUNC },
		{ "from-trace", required_argument, NULL, OPT_FROM_TRACE },
		{ "latency-range", required_argument, NULL, OPT_LATENCY_RANGE },
		{ "timeline", no_argument, NULL, OPT_TIMELINE },
		{ "snapshot", no_argument, NULL, OPT_SNAPSHOT },
		{ 0 },
	};
	struct latency_opts lo = { .max_ns = UINT64_MAX, .output = LATENCY_REPORT };
	struct result_opts ro = RESULT_OPTS_INIT;
	uint64_t pid = 0, seconds = 10;
	char err[512], *text = NULL, recorded[4200], sym[PROTO_REQUEST_SPEC_MAX + 1], bin[512];
	bool timeline = false, snapshot = false;
	int opt, r;

	optind = 0; /* 0, not 1: GNU getopt re-initializes (and permutes) */
	while ((opt = getopt_long(argc, argv, "p:d:" RESULT_SHORT_OPTIONS, options, NULL)) != -1) {
		if (opt == 'p') {
			if (parse_u64(optarg, 4194304, &pid) < 0 || !pid)
				return usage_error("--pid takes a process id, not '%s'", optarg);
		} else if (opt == 'd') {
			if (parse_u64(optarg, 86400, &seconds) < 0 || !seconds)
				return usage_error("--seconds takes 1..86400, not '%s'", optarg);
		} else if (opt == OPT_FUNC) {
			lo.func = optarg;
		} else if (opt == OPT_FROM_TRACE) {
			lo.trace_path = optarg;
		} else if (opt == OPT_LATENCY_RANGE) {
			if (latency_parse_range(optarg, &lo.min_ns, &lo.max_ns) < 0)
				return usage_error("--latency-range takes MIN,MAX in ns, not '%s'",
						   optarg);
		} else if (opt == OPT_TIMELINE) {
			timeline = true;
		} else if (opt == OPT_SNAPSHOT) {
			snapshot = true;
		} else if ((r = result_option(&ro, "latency", opt, optarg)) != EXIT_OK) {
			return r;
		}
	}
	if (optind < argc)
		return usage_error("latency takes no arguments, got '%s'", argv[optind]);
	if (!lo.func)
		return usage_error("%s", "latency needs --func SYMBOL");
	if (!!pid == !!lo.trace_path)
		return usage_error("%s", "latency needs one of --pid P or --from-trace FILE");
	if (snapshot && !pid)
		return usage_error("%s", "--snapshot is for recording (--pid)");
	if (timeline && ro.format == PROTO_FORMAT_SVG) {
		lo.output = LATENCY_TIMELINE_SVG;
		r = latency_plot_options(&ro, &lo);
		if (r != EXIT_OK)
			return r;
	} else if (timeline) {
		if (ro.format >= 0 || ro.pprof || json_output)
			return usage_error("%s",
					   "--timeline is text, or a plot with --svg (--json "
					   "has the timeline too): leave out --json and --format");
		lo.output = LATENCY_TIMELINE;
	} else if (ro.format == PROTO_FORMAT_SVG || ro.format == PROTO_FORMAT_SPEEDSCOPE ||
		   ro.format == PROTO_FORMAT_FOLDED) {
		lo.output = LATENCY_FOLDED;
	} else if (json_output) {
		lo.output = LATENCY_JSON; /* --json or --format json: report and timeline */
	} else if (ro.format >= 0 || ro.pprof) {
		return usage_error("%s", "latency writes a report, --timeline, --json, --format "
					 "folded, svg or speedscope");
	}
	if (pid) {
		r = latency_record((uint32_t)pid, lo.func, (uint32_t)seconds, snapshot, recorded,
				   sizeof(recorded));
		if (r != EXIT_OK)
			return r;
		/* the trace's files are searched for the symbol: no @BINARY */
		if (elf_funcs_split_spec(lo.func, sym, sizeof(sym), bin, sizeof(bin)) == 0)
			lo.func = sym;
		lo.trace_path = recorded;
	}
	r = latency_from_trace(&lo, &text, err, sizeof(err));
	if (r < 0)
		return fail(EXIT_ERROR,
			    r == -ESRCH	    ? "no_such_function"
			    : r == -ENODATA ? PROTO_ERR_NO_DATA
					    : "input_error",
			    "%s", err);
	if (lo.output == LATENCY_FOLDED &&
	    (ro.format == PROTO_FORMAT_SVG || ro.format == PROTO_FORMAT_SPEEDSCOPE)) {
		if (!ro.render.countname[0])
			strcpy(ro.render.countname, "ns");
		struct flame_pl_args pl = { 0 };

		r = draw(NULL, NULL, text, strlen(text), lo.trace_path, &ro, NULL, &pl,
			 "Latency Flame Graph");
	} else {
		r = write_output(ro.path, text);
	}
	free(text);
	return r;
}

/* serve: the web page and its API (ctl/serve.c). */
static int cmd_serve(int argc, char **argv)
{
	return serve_run(socket_path, argc, argv);
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "status", cmd_status },   { "capture", cmd_capture }, { "windows", cmd_windows },
	{ "export", cmd_export },   { "hist", cmd_hist },	{ "flamegraph", cmd_flamegraph },
	{ "latency", cmd_latency }, { "diff", cmd_diff },	{ "help", cmd_help },
	{ "serve", cmd_serve },
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
			return help_requested(argc - optind, argv + optind)
				       ? command_help(argv[optind])
				       : commands[i].fn(argc - optind, argv + optind);
	return usage_error("unknown command '%s'", argv[optind]);
}
