#!/usr/bin/env python3
"""What pushing the always-on profile to a fleet store costs (etc/offcpud.conf,
"Pushing to a fleet store").

The workload, for every part: `stackgen`, a C program this script writes
and builds with gcc at its start (as churn.py builds its small file): PROCS
processes (comm stackgen-NN) of THREADS threads that nap 1 ms in a loop,
each nap at the bottom of one of PATHS distinct call paths (4 levels of 10
functions each: level0_step3 -> level1_step7 -> ...), every path taken
several times a window by exactly one thread. A 10 s window of it holds
about PATHS distinct stacks (checked: the windows' "stacks" from
`offcpuctl --json windows` are reported), plus what the rest of the host
does. The reference of each part is measured in the same run:

1. CPU (target: pushing a 10 s window of 5,000 stacks costs at most 1 % of
   a core). Daemons with and without a push target (a loopback receiver,
   tests/integration/push_receiver.py) on the same running workload, in
   turn (off, pyroscope, otlp; every other round in reverse: --rounds),
   each measured for --seconds from 5 s after its first window closed (a
   whole number of windows close inside when --seconds is a multiple of
   10): the daemon's utime + stime (/proc/PID/stat), in % of one core.
   Reported per mode: the median of the rounds and each round, the
   difference of medians against no push, and the CPU of the pusher thread
   alone (/proc/PID/task/TID/stat: the target's thread, named
   offcpud-push). On a shared 2-vCPU VM
   one round in four was disturbed by other work on the host (a daemon's
   CPU doubled); the pusher thread's own CPU is the steadier figure.
2. Bytes on the wire (target: a window's push at most the size of
   `offcpuctl export --format pprof` of that window). For each --services
   count S, S workload processes split the same PATHS paths; a daemon with
   two targets (pyroscope and otlp) at one receiver, service_by = process
   (each workload process is its own service; the host's other processes
   add theirs); for --bytes-windows whole windows: the request body bytes
   the receiver got for the window (as sent: Content-Length), against the
   size of `offcpuctl export --format pprof` of that window (its offcpu
   kind: with continuous_split_runq, the run-queue lines are in it too, as
   the push's runq series). The push splits a window into one series per
   (service, kind), each its own gzipped pprof with its own string,
   function and location tables; a service whose name is not printable
   is counted (a sign of freed memory read as names).
3. Backlog (target: 1 hour of windows after an outage sent within 2
   minutes on loopback, RSS growing at most 32 MiB). A daemon without a
   target stores two or more whole windows of the workload; stopped, its
   database gets --backlog-windows (360: an hour of 10 s windows) copies
   of those windows (every table with a window_id, through SQLite; copies
   of real windows, so each holds what a window of the workload holds),
   10 s apart, ending a minute before its first window; restarted with the targets,
   it first runs --backlog-control seconds with nothing asked (the
   reference: its RSS moves by itself after a restart, its caches filling
   and malloc's arenas growing and shrinking), then is asked `offcpuctl
   push --from --to --target NAME` for that hour, one target after the
   other. Reported: the time from the command until the receiver had
   answered 200 for every copied window, the daemon's RSS (VmRSS and
   RssAnon, sampled every 0.1 s) before the command, its peak until then
   and that peak over the highest RSS of the control (and of the backfills
   before): what the backfill adds, the figure held against the target;
   also its CPU meanwhile and the bytes sent. The workload keeps running:
   the live windows are pushed meanwhile, as on a real host.

A daemon that dies is reported as such (its exit code and the end of its
log) and the bench exits 1; otherwise it exits 0 and prints the table
(targets missed are marked MISSED, not errors). Every process it starts
is stopped at the end, on an error, Ctrl-C or SIGTERM too.

Usage: sudo bench/push.py [--build DIR] [--seconds 60] [--rounds 3]
           [--cpu-apis pyroscope,otlp] [--services 1,4,16] [--bytes-windows 2]
           [--backlog-windows 360] [--backlog-apis pyroscope,otlp] [--backlog-control 60]
           [--paths 5000] [--procs 4] [--threads 2] [--skip cpu,bytes,backlog] [--json]
       The defaults take about 15 minutes; a quick run (about 3 minutes):
           --seconds 20 --rounds 1 --cpu-apis pyroscope --services 1,8
           --bytes-windows 1 --backlog-windows 60 --backlog-control 10
"""
import argparse
import gzip
import json
import os
import shutil
import signal
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

import bench_env  # noqa: E402 (after the path is set)

CLK_TCK = os.sysconf("SC_CLK_TCK")
WINDOW_S = 10
TARGET_CPU_PCT = 1.0
TARGET_BACKLOG_S = 120
TARGET_RSS_MIB = 32
API_PATHS = {"pyroscope": "/push.v1.PusherService/Push", "otlp": "/v1development/profiles"}
TOTAL_THREADS = 8  # of the workload, whatever its process count

# ---------------------------------------------------------------- the workload

FANOUT, DEPTH = 10, 4  # FANOUT ** DEPTH distinct paths at most


def stackgen_source():
    steps = []
    for level in range(DEPTH):
        for d in range(FANOUT):
            steps.append(f"__attribute__((noinline)) void level{level}_step{d}(unsigned p, int l) {{ NEXT(p, l); }}")
    table = ",\n".join("\t{ " + ", ".join(f"level{level}_step{d}" for d in range(FANOUT)) + " }"
                       for level in range(DEPTH))
    scale = ", ".join(str(FANOUT ** level) for level in range(DEPTH))
    return f"""/* stackgen (bench/push.py): PROCS processes of THREADS threads napping
 * NAP_US in a loop, each nap at the end of one of PATHS call paths. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FANOUT {FANOUT}
#define DEPTH {DEPTH}
#define MAX_THREADS 256
typedef void (*step_fn)(unsigned path, int level);
static const unsigned scale[DEPTH] = {{ {scale} }};
static long nap_ns;
static volatile sig_atomic_t stop;
extern step_fn steps[DEPTH][FANOUT];

__attribute__((noinline)) static void nap(void)
{{
	struct timespec ts = {{ 0, nap_ns }};

	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory");
}}

/* The call after the step's own frame, never a tail call. */
#define NEXT(p, l)                                                                    \\
	do {{                                                                            \\
		if ((l) + 1 < DEPTH)                                                  \\
			steps[(l) + 1][((p) / scale[(l) + 1]) % FANOUT]((p), (l) + 1); \\
		else                                                                  \\
			nap();                                                        \\
		__asm__ volatile("" ::: "memory");                                    \\
	}} while (0)

{chr(10).join(steps)}

step_fn steps[DEPTH][FANOUT] = {{
{table}
}};

struct worker {{
	unsigned first, stride, paths;
}};

static void *worker_main(void *arg)
{{
	struct worker *w = arg;

	for (unsigned i = w->first; !stop; i += w->stride) {{
		if (i >= w->paths)
			i = w->first;
		steps[0][i % FANOUT](i, 0);
	}}
	return NULL;
}}

static void on_term(int sig)
{{
	(void)sig;
	stop = 1;
}}

int main(int argc, char **argv)
{{
	struct sigaction sa = {{ .sa_handler = on_term }}; /* no SA_RESTART: wait() returns */
	unsigned paths, procs, threads, n_kids = 0;
	pid_t kids[MAX_THREADS];

	if (argc != 5) {{
		fprintf(stderr, "usage: stackgen PATHS PROCS THREADS NAP_US\\n");
		return 2;
	}}
	paths = strtoul(argv[1], NULL, 10);
	procs = strtoul(argv[2], NULL, 10);
	threads = strtoul(argv[3], NULL, 10);
	nap_ns = strtol(argv[4], NULL, 10) * 1000;
	if (!paths || paths > {FANOUT ** DEPTH} || !procs || procs > MAX_THREADS || !threads ||
	    threads > MAX_THREADS || nap_ns <= 0 || nap_ns >= 1000000000) {{
		fprintf(stderr, "stackgen: bad arguments\\n");
		return 2;
	}}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_TIMERSLACK, 1UL);
	for (unsigned k = 0; k < procs; k++) {{
		pid_t pid = fork();

		if (pid < 0) {{
			perror("stackgen: fork");
			stop = 1;
			break;
		}}
		if (pid == 0) {{
			pthread_t tids[MAX_THREADS];
			struct worker ws[MAX_THREADS];
			char name[16];

			snprintf(name, sizeof(name), "stackgen-%02u", k % 100);
			prctl(PR_SET_NAME, name);
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() == 1)
				_exit(0);
			for (unsigned t = 0; t < threads; t++) {{
				ws[t] = (struct worker){{ k + t * procs, procs * threads, paths }};
				if (ws[t].first >= paths) /* more threads than paths */
					ws[t].first = ws[t].paths = 0;
				pthread_create(&tids[t], NULL, worker_main, &ws[t]);
			}}
			for (unsigned t = 0; t < threads; t++)
				pthread_join(tids[t], NULL);
			_exit(0);
		}}
		kids[n_kids++] = pid;
	}}
	printf("ready %d\\n", (int)getpid());
	fflush(stdout);
	for (;;) {{
		if (stop == 1) {{ /* SIGTERM: the processes stop after their nap */
			for (unsigned k = 0; k < n_kids; k++)
				kill(kids[k], SIGTERM);
			stop = 2;
		}}
		if (wait(NULL) < 0 && errno == ECHILD)
			break;
	}}
	return 0;
}}
"""


def build_stackgen(workdir):
    src = os.path.join(workdir, "stackgen.c")
    binary = os.path.join(workdir, "stackgen")
    with open(src, "w") as f:
        f.write(stackgen_source())
    # Frame pointers and no inlining or tail calls: every step is a frame.
    r = subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
                        "-fno-inline", "-pthread", "-o", binary, src], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cannot build stackgen: {r.stderr}")
    return binary


class Stackgen:
    """The workload, running until stop(); registered for bench_env.cleanup()."""

    def __init__(self, binary, paths, procs, threads, nap_us=1000):
        self.shape = (paths, procs, threads)
        self.proc = subprocess.Popen([binary, str(paths), str(procs), str(threads), str(nap_us)],
                                     stdout=subprocess.PIPE, text=True, start_new_session=True)
        bench_env._live.append(self)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            self.stop()
            raise RuntimeError(f"stackgen did not start: {line}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # it stops and reaps its processes
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self in bench_env._live:
            bench_env._live.remove(self)

    def __repr__(self):
        return f"stackgen {self.shape}"


# ---------------------------------------------------------------- protobuf, read by hand

def _varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def pb_fields(buf):
    """(field, wire type, value) of a message's fields: ints for varints and
    fixed, bytes for length-delimited. Enough to find a window's time and
    services without a schema compiler."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            ln, i = _varint(buf, i)
            v = bytes(buf[i:i + ln])
            i += ln
        elif wt == 1:
            v = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise ValueError(f"wire type {wt}")
        yield field, wt, v


def _printable(name):
    return bool(name) and all(c in string.printable and c not in "\t\n\r\x0b\x0c" for c in name)


def push_request_info(body):
    """A push.v1.PushRequest (proto/push/pyroscope.proto): (window start ms,
    series, services). The time is the first profile's time_nanos (pprof
    field 9)."""
    start_ms, series, services = None, 0, set()
    for f, _, s in pb_fields(body):
        if f != 1:
            continue
        series += 1
        for g, _, v in pb_fields(s):
            if g == 1:  # LabelPair{name = 1, value = 2}
                kv = {h: x for h, _, x in pb_fields(v)}
                if kv.get(1) == b"service_name":
                    services.add(kv.get(2, b"").decode(errors="replace"))
            elif g == 2 and start_ms is None:  # RawSample{raw_profile = 1}
                raw = next((x for h, _, x in pb_fields(v) if h == 1), b"")
                prof = gzip.decompress(raw)
                t = next((x for h, _, x in pb_fields(prof) if h == 9), None)
                start_ms = t // 1000000 if t is not None else None
    return start_ms, series, services


def otlp_request_info(body):
    """An ExportProfilesServiceRequest (proto/push/otlp): (window start ms,
    profiles, services): time_unix_nano (Profile field 3, fixed64) and the
    resources' service.name."""
    start_ms, profiles, services = None, 0, set()
    for f, _, rp in pb_fields(body):
        if f != 1:  # resource_profiles
            continue
        for g, _, v in pb_fields(rp):
            if g == 1:  # Resource{attributes = 1: KeyValue{key = 1, value = 2: AnyValue{string_value = 1}}}
                for h, _, kv in pb_fields(v):
                    if h != 1:
                        continue
                    d = {k: x for k, _, x in pb_fields(kv)}
                    if d.get(1) == b"service.name":
                        sv = {k: x for k, _, x in pb_fields(d.get(2, b""))}
                        services.add(sv.get(1, b"").decode(errors="replace"))
            elif g == 2:  # ScopeProfiles{profiles = 2}
                for h, _, p in pb_fields(v):
                    if h != 2:
                        continue
                    profiles += 1
                    if start_ms is None:
                        t = next((x for k, _, x in pb_fields(p) if k == 3), None)
                        start_ms = t // 1000000 if t is not None else None
    return start_ms, profiles, services


def make_receiver(keep_bodies=False, gzip_sizes=False):
    """The fake store, each request's window and services read on arrival
    (rec.window_ms, rec.parts, rec.services; rec.decode_error), so that
    bodies need not be kept; with gzip_sizes, also rec.gzip_size: the size
    of a body that came without Content-Encoding once gzipped (level 6)."""
    from push_receiver import Receiver

    class WindowReceiver(Receiver):
        def _arrive(self, rec):
            rec.window_ms, rec.parts, rec.services, rec.decode_error = None, 0, set(), None
            rec.gzip_size = None
            if gzip_sizes and rec.body and "gzip" not in rec.headers.get("Content-Encoding", ""):
                rec.gzip_size = len(gzip.compress(rec.body, 6))
            try:
                if rec.endpoint == "push":
                    rec.window_ms, rec.parts, rec.services = push_request_info(rec.body)
                elif rec.endpoint == "otlp":
                    rec.window_ms, rec.parts, rec.services = otlp_request_info(rec.body)
            except Exception as e:  # a body the reader cannot read: counted, reported
                rec.decode_error = f"{type(e).__name__}: {e}"
            return super()._arrive(rec)

    rx = WindowReceiver(keep_bodies=keep_bodies)
    rx.start()
    stopper = _Stoppable(rx.stop, "push receiver")
    bench_env._live.append(stopper)
    rx.bench_stop = stopper.stop
    return rx


class _Stoppable:
    def __init__(self, fn, name):
        self.fn, self.name = fn, name

    def stop(self):
        if self in bench_env._live:
            bench_env._live.remove(self)
        self.fn()

    def __repr__(self):
        return self.name


# ---------------------------------------------------------------- the daemon

class DaemonDied(Exception):
    pass


def mem_kib(pid):
    """VmRSS, RssAnon, RssFile and RssShmem of process pid, KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(v.split()[0])
    return out


def cpu_ticks(pid, tid=None):
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                out[int(tid)] = f.read().strip()
        except OSError:
            pass
    return out


def check_alive(d, what):
    if d.proc.poll() is not None:
        raise DaemonDied(f"offcpud died during {what}: exit {d.proc.returncode}; log tail:\n"
                         f"{d.log_text()[-1500:]}")


def stop_daemon(d):
    """Stops d; DaemonDied if it had died or exits badly (a crash found at
    the stop is a crash too)."""
    dead = d.proc.poll()
    try:
        d.stop()
    except RuntimeError as e:
        raise DaemonDied(f"{e}; log tail:\n{d.log_text()[-1500:]}") from None
    if dead is not None:
        raise DaemonDied(f"offcpud had died (exit {dead})")


def windows(d):
    r = d.ctl("--json", "windows")
    if r.returncode != 0:
        raise RuntimeError(f"offcpuctl windows: {r.stdout} {r.stderr}")
    return [w for w in json.loads(r.stdout)["windows"] if w["capture_id"] == 0]


def wait_windows(d, n, after_ms=0, timeout=None, what="waiting for windows"):
    """The first n continuous windows that start at or after after_ms, once stored."""
    deadline = time.monotonic() + (timeout or (n + 2) * WINDOW_S + 30)
    while True:
        check_alive(d, what)
        ws = [w for w in windows(d) if w["start_ms"] >= after_ms]
        if len(ws) >= n:
            return ws[:n]
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: {len(ws)} of {n} windows after {timeout} s")
        time.sleep(0.5)


def push_status(d, name):
    return next((t for t in d.status()["push"]["targets"] if t["name"] == name), None)


def start_daemon(config, want_pushers=0):
    """A daemon and its pusher threads' ids (want_pushers of them), found once
    the log says every target is pushing."""
    d = bench_env.daemon(config)
    pushers = set()
    if want_pushers:
        deadline = time.monotonic() + 10
        while d.log_text().count("pushing windows to") < want_pushers and time.monotonic() < deadline:
            time.sleep(0.01)
        while time.monotonic() < deadline:
            pushers = {t for t, c in threads(d.proc.pid).items() if c == "offcpud-push"}
            if len(pushers) >= want_pushers:
                break
            time.sleep(0.01)
    return d, pushers


def target_config(name, rx, api, extra=""):
    return f"push.{name}.url = {rx.url}\npush.{name}.api = {api}\n{extra}"


# ---------------------------------------------------------------- 1. CPU

def run_cpu_mode(mode, rx, seconds):
    config = f"window_seconds = {WINDOW_S}\n"
    if mode != "off":
        config += target_config("bench", rx, mode)
    d, pushers = start_daemon(config, want_pushers=0 if mode == "off" else 1)
    try:
        first = wait_windows(d, 1, what=f"the first window ({mode})")[0]
        start_at = first["end_ms"] / 1000 + WINDOW_S / 2
        time.sleep(max(0.0, start_at - time.time()))
        check_alive(d, f"cpu {mode}")
        non_main = {t for t, c in threads(d.proc.pid).items()
                    if c.startswith("offcpud") and t != d.proc.pid}
        t0, c0 = time.monotonic(), cpu_ticks(d.proc.pid)
        p0 = {t: cpu_ticks(d.proc.pid, t) for t in pushers}
        req0 = len(rx.requests())
        w0 = time.time() * 1000
        time.sleep(seconds)
        check_alive(d, f"cpu {mode}")
        c1, t1 = cpu_ticks(d.proc.pid), time.monotonic()
        p1 = {t: cpu_ticks(d.proc.pid, t) for t in pushers}
        w1 = time.time() * 1000
        reqs = rx.requests()[req0:]
        closed = [w for w in windows(d) if w0 <= w["end_ms"] <= w1]
        st = push_status(d, "bench") if mode != "off" else None
        wall = t1 - t0
        return {
            "mode": mode, "seconds": round(wall, 2),
            "cpu_pct": 100.0 * (c1 - c0) / CLK_TCK / wall,
            "pusher_cpu_pct": 100.0 * sum(p1[t] - p0[t] for t in pushers) / CLK_TCK / wall if pushers else None,
            "pusher_threads": len(pushers),
            "non_main_offcpud_threads": len(non_main),  # job threads and pushers
            "windows": len(closed), "stacks": [w["stacks"] for w in closed],
            "requests": len(reqs), "ok": sum(1 for r in reqs if r.status == 200),
            "bytes": sum(r.wire_size for r in reqs),
            "push_state": st and {k: st[k] for k in ("state", "sent", "lag_windows", "retries", "bytes_sent",
                                                     "last_error")},
        }
    finally:
        stop_daemon(d)


def phase_cpu(args, binary):
    apis = [a for a in args.cpu_apis.split(",") if a]
    modes = ["off", *apis]
    work = Stackgen(binary, args.paths, args.procs, args.threads)
    rx = make_receiver()
    runs = []
    try:
        for rnd in range(args.rounds):
            # A/B/A/B; every other round in reverse, so that neither mode
            # always follows the other.
            for mode in (modes if rnd % 2 == 0 else modes[::-1]):
                r = run_cpu_mode(mode, rx, args.seconds)
                r["round"] = rnd
                runs.append(r)
                print(f"  cpu round {rnd} {mode:9s}: {r['cpu_pct']:.2f} % of a core"
                      + (f", pusher thread {r['pusher_cpu_pct']:.2f} %" if r["pusher_cpu_pct"] is not None else "")
                      + f", {r['windows']} windows of {r['stacks']} stacks, {r['ok']} pushes", file=sys.stderr)
    finally:
        work.stop()
        rx.bench_stop()
    out = {"runs": runs, "modes": {}}
    for mode in modes:
        rs = [r for r in runs if r["mode"] == mode]
        # Medians: a round that other work on the host disturbed (a build
        # beside it) moved the mean of four by half a point.
        out["modes"][mode] = {
            "cpu_pct": statistics.median(r["cpu_pct"] for r in rs),
            "rounds": [round(r["cpu_pct"], 3) for r in rs],
            "pusher_cpu_pct": statistics.median(r["pusher_cpu_pct"] for r in rs)
            if mode != "off" and rs[0]["pusher_cpu_pct"] is not None else None,
            "pusher_rounds": [round(r["pusher_cpu_pct"], 3) for r in rs if r["pusher_cpu_pct"] is not None],
            "stacks": [s for r in rs for s in r["stacks"]],
            "pushes": sum(r["ok"] for r in rs), "windows": sum(r["windows"] for r in rs),
        }
    off = out["modes"]["off"]["cpu_pct"]
    for mode in apis:
        out["modes"][mode]["delta_pct"] = out["modes"][mode]["cpu_pct"] - off
    return out


# ---------------------------------------------------------------- 2. bytes

def export_size(d, w, path):
    s = w["start_ms"] / 1000
    r = d.ctl("export", "--from", f"{s:.3f}", "--to", f"{s + 0.001:.3f}", "--format", "pprof",
              "--kind", "offcpu", "-o", path)
    if r.returncode != 0:
        raise RuntimeError(f"offcpuctl export of window {w['id']}: {r.stdout} {r.stderr}")
    return os.path.getsize(path)


def phase_bytes(args, binary, workdir):
    apis = ["pyroscope", "otlp"]
    results = []
    for services in [int(s) for s in args.services.split(",") if s]:
        threads_each = max(1, TOTAL_THREADS // services)
        work = Stackgen(binary, args.paths, services, threads_each)
        rx = make_receiver(gzip_sizes=True)
        config = f"window_seconds = {WINDOW_S}\n" + "".join(
            target_config(api, rx, api, f"push.{api}.service_by = process\n") for api in apis)
        d, _ = start_daemon(config, want_pushers=len(apis))
        try:
            first = wait_windows(d, 1, what="the first window")[0]
            # The first whole window of the workload is the second one.
            ws = wait_windows(d, args.bytes_windows, after_ms=first["end_ms"], what="the windows to weigh")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                check_alive(d, "bytes")
                got = {(r.endpoint, r.window_ms) for r in rx.requests() if r.status == 200}
                if all((("push" if a == "pyroscope" else "otlp"), w["start_ms"]) in got for a in apis for w in ws):
                    break
                time.sleep(0.2)
            for w in ws:
                row = {"services_run": services, "window": w["id"], "stacks": w["stacks"], "rows": w["samples"],
                       "export_pprof": export_size(d, w, os.path.join(workdir, f"w{w['id']}.pb.gz"))}
                for api, ep in (("pyroscope", "push"), ("otlp", "otlp")):
                    reqs = [r for r in rx.requests() if r.endpoint == ep and r.window_ms == w["start_ms"]
                            and r.status == 200]
                    row[api] = sum(r.wire_size for r in reqs)
                    row[f"{api}_requests"] = len(reqs)
                    row[f"{api}_parts"] = sum(r.parts for r in reqs)
                    svcs = set().union(*(r.services for r in reqs)) if reqs else set()
                    row[f"{api}_services"] = len(svcs)
                    row[f"{api}_bad_names"] = sorted(repr(s) for s in svcs if not _printable(s))[:5]
                    row[f"{api}_ratio"] = row[api] / row["export_pprof"] if reqs and row["export_pprof"] else None
                    row[f"{api}_content_encoding"] = sorted({r.headers.get("Content-Encoding", "") for r in reqs})
                    if reqs and all(r.gzip_size is not None for r in reqs):
                        row[f"{api}_if_gzipped"] = sum(r.gzip_size for r in reqs)
                row["decode_errors"] = [r.decode_error for r in rx.requests() if r.decode_error][:3]
                results.append(row)
                print(f"  bytes S={services} window {w['id']}: {w['stacks']} stacks, export {row['export_pprof']} B, "
                      f"pyroscope {row['pyroscope']} B ({row['pyroscope_services']} services, "
                      f"{row['pyroscope_parts']} series), otlp {row['otlp']} B", file=sys.stderr)
        finally:
            work.stop()
            try:
                stop_daemon(d)
            finally:
                rx.bench_stop()
    return results


# ---------------------------------------------------------------- 3. backlog

def clone_windows(db, sources, n, first_start_ms):
    """n copies of the windows `sources` (cycled) into the database db
    (daemon stopped), 10 s apart from first_start_ms: each copy's rows in
    every table keyed by window_id. Returns (from_ms, to_ms)."""
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        keyed = {}
        for t in tables:
            if t.startswith("push_") or t == "windows":
                continue
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
            if "window_id" in cols:
                keyed[t] = cols
        with con:
            for i in range(n):
                src = sources[i % len(sources)]
                start = first_start_ms + i * WINDOW_S * 1000
                cur = con.execute("INSERT INTO windows (start_ms, end_ms, capture_id, n_stacks, n_samples, bytes) "
                                  "SELECT ?, ?, 0, n_stacks, n_samples, bytes FROM windows WHERE id = ?",
                                  (start, start + WINDOW_S * 1000, src))
                new = cur.lastrowid
                for t, cols in keyed.items():
                    sel = ", ".join("?" if c == "window_id" else c for c in cols)
                    con.execute(f"INSERT INTO {t} ({', '.join(cols)}) SELECT {sel} FROM {t} WHERE window_id = ?",
                                (new, src))
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return first_start_ms, first_start_ms + n * WINDOW_S * 1000


def backfill(d, rx, name, api, from_ms, to_ms, n, timeout):
    """offcpuctl push of [from_ms, to_ms) to target name; waits until the
    receiver answered 200 for each of its n windows. Memory (VmRSS, and its
    anonymous part) sampled every 0.1 s; the timeline holds it at each
    quarter of the windows received."""
    ep = "push" if api == "pyroscope" else "otlp"
    pid = d.proc.pid
    m0 = mem_kib(pid)
    peak = dict(m0)
    c0 = cpu_ticks(pid)
    req0 = len(rx.requests())
    timeline = []
    t0 = time.monotonic()
    r = d.ctl("push", "--from", f"{from_ms / 1000:.3f}", "--to", f"{to_ms / 1000:.3f}", "--target", name, "--json")
    if r.returncode != 0:
        raise RuntimeError(f"offcpuctl push: {r.stdout} {r.stderr}")
    done_at = None

    def sample():
        m = mem_kib(pid)
        for k, v in m.items():
            peak[k] = max(peak.get(k, 0), v)
        return m

    while time.monotonic() - t0 < timeout:
        check_alive(d, f"backfill {name}")
        m = sample()
        got = len({rq.window_ms for rq in rx.requests()[req0:] if rq.endpoint == ep and rq.status == 200
                   and rq.window_ms is not None and from_ms <= rq.window_ms < to_ms})
        if got * 4 >= n * (len(timeline) + 1):
            timeline.append({"received": got, "s": round(time.monotonic() - t0, 1),
                             "rss_kib": m["VmRSS"], "anon_kib": m.get("RssAnon", 0)})
        if got >= n:
            done_at = time.monotonic()
            break
        time.sleep(0.1)
    elapsed = (done_at or time.monotonic()) - t0
    c1 = cpu_ticks(pid)
    reqs = [rq for rq in rx.requests()[req0:] if rq.endpoint == ep and rq.window_ms is not None
            and from_ms <= rq.window_ms < to_ms]
    # Until the daemon says it is done too, then 10 s idle: what stays.
    deadline = time.monotonic() + 30
    st = push_status(d, name)
    while st and st["backfill_windows"] and time.monotonic() < deadline:
        time.sleep(0.2)
        sample()
        st = push_status(d, name)
    time.sleep(10)
    after = sample()
    return {"target": name, "api": api, "windows": n,
            "received": len({rq.window_ms for rq in reqs if rq.status == 200}),
            "requests": len(reqs), "failed_requests": sum(1 for rq in reqs if rq.status != 200),
            "done": done_at is not None, "seconds": elapsed,
            "bytes": sum(rq.wire_size for rq in reqs if rq.status == 200),
            "rss_before_kib": m0["VmRSS"], "rss_peak_kib": peak["VmRSS"],
            "rss_growth_kib": peak["VmRSS"] - m0["VmRSS"], "rss_after_kib": after["VmRSS"],
            "anon_before_kib": m0.get("RssAnon", 0), "anon_peak_kib": peak.get("RssAnon", 0),
            "anon_after_kib": after.get("RssAnon", 0),
            "file_before_kib": m0.get("RssFile", 0), "file_peak_kib": peak.get("RssFile", 0),
            "timeline": timeline,
            "cpu_s": (c1 - c0) / CLK_TCK,
            "status_after": st and {k: st[k] for k in ("state", "backfill_windows", "retries", "last_error")}}


def control_memory(d, seconds):
    """Memory of daemon d over seconds with nothing asked of it: (before,
    peak, after) of VmRSS and RssAnon, sampled every 0.1 s."""
    pid = d.proc.pid
    m0 = mem_kib(pid)
    peak = dict(m0)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        check_alive(d, "the control period")
        for k, v in mem_kib(pid).items():
            peak[k] = max(peak.get(k, 0), v)
        time.sleep(0.1)
    m1 = mem_kib(pid)
    return {"seconds": seconds, "rss_before_kib": m0["VmRSS"], "rss_peak_kib": peak["VmRSS"],
            "rss_after_kib": m1["VmRSS"], "anon_before_kib": m0.get("RssAnon", 0),
            "anon_peak_kib": peak.get("RssAnon", 0), "anon_after_kib": m1.get("RssAnon", 0)}


def phase_backlog(args, binary):
    apis = [a for a in args.backlog_apis.split(",") if a]
    work = Stackgen(binary, args.paths, args.procs, args.threads)
    rx = make_receiver()
    out = {"windows": args.backlog_windows, "targets": []}
    # Room for the copies: the default 256MiB could evict them.
    d, _ = start_daemon(f"window_seconds = {WINDOW_S}\nmax_db_bytes = 4GiB\n")
    try:
        first = wait_windows(d, 1, what="the first window")[0]
        whole = wait_windows(d, 2, after_ms=first["end_ms"], what="the windows to copy")
        # Stopped by the fixture's own stop (the bench's would delete the database).
        type(d).__mro__[1].stop(d)
        if d.proc.returncode != 0:
            raise DaemonDied(f"offcpud exited with {d.proc.returncode} at its stop")
        from_ms, to_ms = clone_windows(d.database, [w["id"] for w in whole], args.backlog_windows,
                                       first["start_ms"] - (args.backlog_windows + 6) * WINDOW_S * 1000)
        out["source_windows"] = [{"id": w["id"], "stacks": w["stacks"], "rows": w["samples"],
                                  "db_bytes": w["bytes"]} for w in whole]
        out["db_bytes"] = os.path.getsize(d.database)
        with open(d.config, "a") as f:
            for api in apis:
                f.write(target_config(api, rx, api))
        d.start()
        check_alive(d, "the restart")
        # One live window pushed first: the buffers of a push exist before.
        restart_ms = time.time() * 1000
        live = wait_windows(d, 1, after_ms=restart_ms - WINDOW_S * 1000, what="a live window after the restart")[0]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                any(r.window_ms == live["start_ms"] and r.status == 200 and r.endpoint == ("push" if a == "pyroscope" else "otlp")
                    for r in rx.requests()) for a in apis):
            check_alive(d, "the first live push")
            time.sleep(0.2)
        # The reference: the same daemon's memory over the same time without
        # a backfill (its caches still grow after a restart).
        out["control"] = control_memory(d, args.backlog_control)
        print(f"  backlog control: {out['control']}", file=sys.stderr)
        ref_peak = out["control"]["rss_peak_kib"]
        for api in apis:
            r = backfill(d, rx, api, api, from_ms, to_ms, args.backlog_windows, args.backlog_timeout)
            # What the backfill adds: its peak over the highest the daemon
            # reached without it (the control, and the backfills before).
            r["rss_reference_kib"] = ref_peak
            r["rss_excess_kib"] = max(0, r["rss_peak_kib"] - ref_peak)
            ref_peak = max(ref_peak, r["rss_peak_kib"])
            out["targets"].append(r)
            print(f"  backlog {api}: {r['received']}/{r['windows']} windows in {r['seconds']:.1f} s, "
                  f"{r['bytes']} B, RSS {r['rss_before_kib']} -> peak {r['rss_peak_kib']} KiB "
                  f"(anon {r['anon_before_kib']} -> {r['anon_peak_kib']}, after {r['anon_after_kib']}), "
                  f"CPU {r['cpu_s']:.1f} s; {r['timeline']}", file=sys.stderr)
    finally:
        work.stop()
        try:
            stop_daemon(d)
        finally:
            rx.bench_stop()
    return out


# ---------------------------------------------------------------- report

def mark(ok):
    return "met" if ok else "MISSED"


def gz_cell(size, ref):
    """What a body sent without Content-Encoding would weigh gzipped, and its ratio."""
    return "" if size is None else f"{size} {size / ref:.2f}"


def report(res, args):
    lines = []
    add = lines.append
    if "cpu" in res:
        c = res["cpu"]
        stacks = [s for m in c["modes"].values() for s in m["stacks"]]
        add(f"1. CPU, daemon utime+stime in % of one core, {args.seconds} s per run, {args.rounds} round(s); "
            f"windows of {min(stacks) if stacks else '?'}-{max(stacks) if stacks else '?'} stacks")
        add(f"   {'mode':10s} {'median':>7s} {'per round':>32s} {'- off':>7s} {'pusher thread':>14s}  target <= {TARGET_CPU_PCT} %")
        for mode, m in c["modes"].items():
            delta = m.get("delta_pct")
            pusher = m.get("pusher_cpu_pct")
            verdict = "" if delta is None else f"delta {mark(delta <= TARGET_CPU_PCT)}"
            if pusher is not None:
                verdict += f", pusher {mark(pusher <= TARGET_CPU_PCT)}"
            add(f"   {mode:10s} {m['cpu_pct']:7.2f} {str(m['rounds']):>32s} "
                f"{'' if delta is None else f'{delta:+7.2f}':>7s} {'' if pusher is None else f'{pusher:14.3f}':>14s}  {verdict}")
        off = c["modes"]["off"]["rounds"]
        if len(off) > 1:
            add(f"   (the no-push rounds alone spread over {max(off) - min(off):.2f} points: a delta smaller "
                f"than that is not resolved; the pusher thread's own CPU is measured directly)")
    if "bytes" in res:
        add("2. Bytes on the wire per window against `offcpuctl export --format pprof` of it (target: ratio <= 1)")
        add(f"   {'procs':>5s} {'window':>6s} {'stacks':>6s} {'export B':>9s} {'pyroscope B':>11s} {'ratio':>6s} "
            f"{'services':>8s} {'series':>6s} {'otlp B':>9s} {'ratio':>6s} {'otlp gzipped':>12s}")
        for r in res["bytes"]:
            pr, orr = r["pyroscope_ratio"], r["otlp_ratio"]

            def ratio(x):
                return "  none" if x is None else f"{x:6.2f}"

            def verdict(x):
                return "NOTHING RECEIVED" if x is None else mark(x <= 1)

            add(f"   {r['services_run']:5d} {r['window']:6d} {r['stacks']:6d} {r['export_pprof']:9d} {r['pyroscope']:11d} "
                f"{ratio(pr)} {r['pyroscope_services']:8d} {r['pyroscope_parts']:6d} {r['otlp']:9d} {ratio(orr)} "
                f"{gz_cell(r.get('otlp_if_gzipped'), r['export_pprof']):>12s}  "
                f"pyroscope {verdict(pr)}, otlp {verdict(orr)}"
                + (f"  unprintable services: {r['pyroscope_bad_names']}" if r["pyroscope_bad_names"] else ""))
    if "backlog" in res:
        b = res["backlog"]
        src = b.get("source_windows", [])
        add(f"3. Backlog: {b['windows']} copies of {len(src)} real windows "
            f"({', '.join(str(s['stacks']) for s in src)} stacks; {', '.join(str(s['rows']) for s in src)} rows), "
            f"database {b.get('db_bytes', 0) / 2**20:.0f} MiB (targets: <= {TARGET_BACKLOG_S} s, RSS growth <= {TARGET_RSS_MIB} MiB)")
        c = b.get("control")
        if c:
            add(f"   control, {c['seconds']} s without a backfill (live windows pushed): RSS "
                f"{c['rss_before_kib'] / 1024:.1f} -> peak {c['rss_peak_kib'] / 1024:.1f} MiB "
                f"(anon {c['anon_before_kib'] / 1024:.1f} -> {c['anon_peak_kib'] / 1024:.1f})")
        for t in b["targets"]:
            add(f"   {t['api']:10s} {t['received']}/{t['windows']} windows in {t['seconds']:6.1f} s "
                f"({t['windows'] / t['seconds']:.1f}/s, {t['bytes'] / 2**20:.1f} MiB sent, daemon CPU {t['cpu_s']:.1f} s); "
                f"RSS {t['rss_before_kib'] / 1024:.1f} -> peak {t['rss_peak_kib'] / 1024:.1f} MiB "
                f"(+{t['rss_growth_kib'] / 1024:.1f}; over the reference peak +{t['rss_excess_kib'] / 1024:.1f}; "
                f"anon {t['anon_before_kib'] / 1024:.1f} -> {t['anon_peak_kib'] / 1024:.1f}); "
                f"time {mark(t['done'] and t['seconds'] <= TARGET_BACKLOG_S)}, "
                f"RSS {mark(t['rss_excess_kib'] <= TARGET_RSS_MIB * 1024)}")
    for e in res.get("errors", []):
        add(f"ERROR: {e}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--seconds", type=int, default=60, help="CPU: measured seconds per run (a multiple of 10)")
    ap.add_argument("--rounds", type=int, default=3, help="CPU: rounds of every mode (medians are reported)")
    ap.add_argument("--cpu-apis", default="pyroscope,otlp", help="CPU: the push modes beside off")
    ap.add_argument("--services", default="1,4,16", help="bytes: workload process counts")
    ap.add_argument("--bytes-windows", type=int, default=2, help="bytes: windows weighed per count")
    ap.add_argument("--backlog-windows", type=int, default=360, help="backlog: windows (360: an hour)")
    ap.add_argument("--backlog-apis", default="pyroscope,otlp")
    ap.add_argument("--backlog-timeout", type=int, default=600, help="backlog: seconds before giving up")
    ap.add_argument("--backlog-control", type=int, default=60,
                    help="backlog: seconds of memory watched without a backfill first (the reference)")
    ap.add_argument("--paths", type=int, default=5000, help="workload: distinct call paths")
    ap.add_argument("--procs", type=int, default=4, help="workload: processes (CPU and backlog)")
    ap.add_argument("--threads", type=int, default=2, help="workload: threads per process (CPU and backlog)")
    ap.add_argument("--skip", default="", help="parts to skip: cpu, bytes, backlog")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.paths > FANOUT ** DEPTH:
        ap.error(f"--paths: at most {FANOUT ** DEPTH}")
    skip = set(s for s in args.skip.split(",") if s)
    bench_env.set_build(args.build)
    res = {"errors": []}
    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="bench-push-")
    died = False
    try:
        with bench_env.cleanup():
            binary = build_stackgen(workdir)
            for part, fn in (("cpu", lambda: phase_cpu(args, binary)),
                             ("bytes", lambda: phase_bytes(args, binary, workdir)),
                             ("backlog", lambda: phase_backlog(args, binary))):
                if part in skip:
                    continue
                print(f"bench/push.py: {part}...", file=sys.stderr)
                try:
                    res[part] = fn()
                except (DaemonDied, RuntimeError) as e:
                    died = True
                    res["errors"].append(f"{part}: {type(e).__name__}: {e}")
                    print(f"bench/push.py: {part}: {e}", file=sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    res["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(res, default=lambda o: sorted(o) if isinstance(o, set) else str(o)))
    else:
        print(report(res, args))
        print(f"(bench took {res['seconds']:.0f} s)")
    sys.exit(1 if died else 0)


if __name__ == "__main__":
    bench_env.run_main(main)
