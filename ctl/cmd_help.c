/*
 * cmd_help: offcpuctl help [COMMAND|--all]: the one-screen overview, and
 * the whole usage text every command's help is cut from (ctl/help.c),
 * each command's examples at its end.
 */
#define _GNU_SOURCE /* asprintf, open_memstream */
#include "ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "help.h"

/* The heading, and status. */
static void usage_status(FILE *out)
{
	fprintf(out,
		"Usage: offcpuctl [--socket PATH] [--json] COMMAND [OPTIONS]\n"
		"\n"
		"Commands:\n"
		"  status [--verbose]          daemon version, uptime, each kind (ready, in\n"
		"                              use or unavailable, and why), store, push\n"
		"                              targets, slots, rates, drops\n"
		"      -v, --verbose           also the BPF programs (--json: always)\n");
}

/* capture: its options. */
static void usage_capture(FILE *out)
{
	fprintf(out,
		"  capture [OPTIONS] [-- CMD]  capture off-CPU stacks; folded output\n"
		"      -p, --pid PID[,PID...]  processes to capture (default: all)\n"
		"      -t, --tid TID[,TID...]  only these threads\n"
		"      -d, --seconds N         duration (default 10); Ctrl-C ends it early\n"
		"          --state LIST        thread states at switch-out: R (running,\n"
		"                              preempted), S (sleeping), D (disk), O\n"
		"                              (other); e.g. S,D\n"
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
		"          --group-by WHAT     the root frame: comm (default), process, unit,\n"
		"                              container or cgroup\n"
		"          -- CMD [ARGS...]    run CMD (as the sudo caller under sudo) and\n"
		"                              capture it and every process it starts, from\n"
		"                              its exec to its exit (--seconds: at most);\n"
		"                              exits with CMD's exit code; not with --pid\n"
		"                              or --tid\n"
		"      plus the who options, stack filters and output options below\n");
}

/* blocked: the threads off the CPU now. */
static void usage_blocked(FILE *out)
{
	fprintf(out,
		"  blocked [OPTIONS]           the threads off the CPU now, longest first: for\n"
		"                              how long, where each waits, its kernel and user\n"
		"                              stacks and who woke it; stops nothing\n"
		"      -p, --pid PID[,PID...]  only these processes (default: all)\n"
		"      -t, --tid TID[,TID...]  only these threads\n"
		"          --state LIST        thread states, as for capture (default S,D:\n"
		"                              asleep; R adds the preempted)\n"
		"          --min-ms N          only threads off the CPU for N ms or more\n"
		"          --limit N           the N longest (default 50; 0: all)\n");
}

/* windows, export, hist, push: the stored windows. */
static void usage_stored(FILE *out)
{
	fprintf(out,
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
		"          --group-by WHAT     the root frame, as for capture\n"
		"      plus the who options, stack filters and output options below\n"
		"  hist RANGE [OPTIONS]        per-process log2 histograms of block times, in\n"
		"                              microseconds\n"
		"      RANGE is --window lastNx, --from T [--to T] or --capture ID, as for export\n"
		"      -p, --pid PID[,PID...]  only these processes\n"
		"          --kind K            offcpu (default: whole off-CPU time) or runq\n"
		"                              (run-queue latency)\n"
		"      plus the who options below (processes whose samples are in)\n"
		"  push RANGE [--target NAME]  send the continuous windows that start in RANGE\n"
		"                              to the push targets again (a backfill; their\n"
		"                              cursors stay); offcpud queues them, and status\n"
		"                              shows their progress\n"
		"      RANGE is --window lastNx, or --from T [--to T], as for export\n"
		"          --target NAME       only to push.NAME of offcpud.conf (default: all)\n");
}

/* flamegraph, diff: folded files, offline. */
static void usage_offline(FILE *out)
{
	fprintf(out,
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
		"      flamegraph's flamegraph.pl options\n");
}

/* latency, serve, help. */
static void usage_latency_serve(FILE *out)
{
	fprintf(out,
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
		"  help [COMMAND|--all]        a one-screen overview, one command's help\n"
		"                              (COMMAND --help too), or all of this text\n");
}

/* The stack filters several commands share. */
static void usage_filters(FILE *out)
{
	fprintf(out,
		"\n"
		"Stack filters of capture, export, flamegraph and diff (FILTERS in\n"
		"offcpuctl(8)); all given must pass:\n"
		"  --comm NAME                 only threads named exactly NAME\n"
		"  --grep RE                   only stacks with a frame matching RE\n"
		"  --exclude RE                drop stacks with a frame matching RE\n"
		"                              (RE: POSIX extended, matched against each frame,\n"
		"                              the comm and the wakers' too: '^do_command$')\n");
}

/* The cgroup filters capture, export and hist share. */
static void usage_who(FILE *out)
{
	fprintf(out,
		"\n"
		"Who options of capture, export and hist (WHO in offcpuctl(8)); one of:\n"
		"  --cgroup PATH               only threads in this cgroup (v2) or below it\n"
		"                              (/system.slice/nginx.service)\n"
		"  --unit NAME                 only threads of this systemd unit (nginx:\n"
		"                              nginx.service)\n"
		"  --container ID              only threads of the container whose id starts\n"
		"                              with ID (Docker, containerd, CRI-O, Podman)\n");
}

/* The output options several commands share. */
static void usage_output(FILE *out)
{
	fprintf(out,
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
		"                              io), hot, io, wakeup, chain or diff\n");
}

/* Times, global options, exit codes. */
static void usage_times_globals(FILE *out)
{
	fprintf(out,
		"\n"
		"Times T: unix seconds (1732240000.5), RFC 3339 (2026-11-22T01:00:00Z,\n"
		"2026-11-22 01:00:00+01:00) or relative (30m-ago); units s, m, h, d.\n"
		"\n"
		"Global options:\n"
		"  -s, --socket PATH  daemon socket (default $OFFCPUD_SOCKET or\n"
		"                     " DEFAULT_SOCKET ")\n"
		"  -j, --json         JSON output, errors included: the daemon's raw reply\n"
		"                     (JSON rows, unless --format asks for another); before\n"
		"                     or after the command\n"
		"  -V, --version      offcpuctl's version\n"
		"\n"
		"Exit codes: 0 ok, 1 error, 2 bad arguments, 3 daemon not running,\n"
		"4 permission denied, 5 no such pid (or cgroup, or push target), 6 busy.\n");
}

/* Each command's examples: its help ends with them ("Examples:"). */
static void usage_examples(FILE *out)
{
	fprintf(out,
		"\n"
		"Examples of status:\n"
		"  offcpuctl status\n"
		"  offcpuctl status --verbose\n"
		"\n"
		"Examples of capture:\n"
		"  offcpuctl capture -p 1234 -d 30 --svg -o offcpu.svg\n"
		"  offcpuctl capture -p 1234 --kind offwake --svg -o offwake.svg\n"
		"  offcpuctl capture --unit nginx --state D --min-block-us 1000 > disk.folded\n"
		"  offcpuctl capture --svg -o make.svg -- make -j8\n"
		"\n"
		"Examples of blocked:\n"
		"  offcpuctl blocked -p 1234 --limit 0\n"
		"  offcpuctl blocked --state D --min-ms 1000\n"
		"\n"
		"Examples of windows:\n"
		"  offcpuctl windows\n"
		"  offcpuctl windows --since 10m-ago\n"
		"\n"
		"Examples of export:\n"
		"  offcpuctl export --window last30m --svg -o last30m.svg\n"
		"  offcpuctl export --from 2h-ago --to 1h-ago -p 1234 > hour.folded\n"
		"  offcpuctl export --capture 7 --format speedscope -o capture7.json\n"
		"  offcpuctl export --capture 9 --diff-against capture:8 --svg -o diff.svg\n"
		"\n"
		"Examples of hist:\n"
		"  offcpuctl hist --window last10m\n"
		"  offcpuctl hist --window last10m --kind runq -p 1234\n"
		"\n"
		"Examples of push:\n"
		"  offcpuctl push --window last1h\n"
		"  offcpuctl push --from 3h-ago --to 2h-ago --target NAME\n"
		"\n"
		"Examples of flamegraph:\n"
		"  offcpuctl flamegraph out.folded -o out.svg\n"
		"  offcpuctl export --window last1h | offcpuctl flamegraph -o last1h.svg\n"
		"  offcpuctl flamegraph out.folded --format speedscope -o out.json\n"
		"\n"
		"Examples of diff:\n"
		"  offcpuctl diff before.folded after.folded > diff.folded\n"
		"  offcpuctl diff before.folded after.folded --normalize --svg -o diff.svg\n"
		"\n"
		"Examples of latency:\n"
		"  offcpuctl latency --func do_command -p 1234 -d 10\n"
		"  offcpuctl latency --func do_command -p 1234 --timeline --svg -o calls.svg\n"
		"\n"
		"Examples of serve:\n"
		"  offcpuctl serve    # then open http://127.0.0.1:9274\n"
		"  offcpuctl serve --listen 0.0.0.0:9274 --allow-remote\n"
		"\n"
		"Examples of help:\n"
		"  offcpuctl help capture\n"
		"  offcpuctl export --help\n"
		"  offcpuctl help --all\n");
}

/* Every command, every option: offcpuctl help --all. */
static void usage_all(FILE *out)
{
	usage_status(out);
	usage_capture(out);
	usage_blocked(out);
	usage_stored(out);
	usage_offline(out);
	usage_latency_serve(out);
	usage_filters(out);
	usage_who(out);
	usage_output(out);
	usage_times_globals(out);
	usage_examples(out);
}

/* One screen (24 lines of 80 columns): what offcpuctl is, the commands a
 * newcomer needs first with an example each, and where to read on. */
void usage(FILE *out)
{
	fprintf(out,
		"offcpuctl: the client of offcpud, an off-CPU profiler (where threads wait)\n"
		"\n"
		"Usage: offcpuctl [--socket PATH] [--json] COMMAND [OPTIONS]\n"
		"\n"
		"First steps:\n"
		"  status     whether offcpud runs here, and what it can record\n"
		"               offcpuctl status\n"
		"  capture    record a process's off-CPU stacks now, as a flame graph\n"
		"               offcpuctl capture -p 1234 -d 30 --svg -o offcpu.svg\n"
		"  windows    the windows offcpud keeps of the whole host, always on\n"
		"               offcpuctl windows --since 1h-ago\n"
		"  export     stored windows as one flame graph: the past, afterwards\n"
		"               offcpuctl export --window last30m --svg -o last30m.svg\n"
		"  serve      a web page over the stored windows: heatmap, flame graphs\n"
		"               offcpuctl serve    # then open http://127.0.0.1:9274\n"
		"\n"
		"All commands: status capture blocked windows export hist push flamegraph\n"
		"diff latency serve help\n"
		"\n"
		"Read on: offcpuctl help COMMAND (or COMMAND --help), offcpuctl help --all\n"
		"(every option), man offcpuctl, and docs/ in offcpud's source.\n");
}

int command_help(const char *cmd)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int r;

	if (!mem)
		return fail(EXIT_ERROR, "internal", "out of memory");
	usage_all(mem);
	fclose(mem);
	r = text ? help_command(text, cmd, stdout) : -ENOMEM;
	free(text);
	if (r == -ENOENT)
		return usage_error("unknown command '%s'", cmd);
	return r < 0 ? fail(EXIT_ERROR, "internal", "out of memory") : EXIT_OK;
}

int cmd_help(int argc, char **argv)
{
	if (argc > 2)
		return usage_error("help takes one command, got '%s' too", argv[2]);
	if (argc == 2 && !strcmp(argv[1], "--all")) {
		usage_all(stdout);
		return EXIT_OK;
	}
	if (argc == 2)
		return command_help(argv[1]);
	usage(stdout);
	return EXIT_OK;
}
