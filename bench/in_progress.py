#!/usr/bin/env python3
"""What counting open blocks costs: the in-progress pass with many idle
threads, and the always-on cost of a switch before and after it.

1. The pass (docs/OPEN_BLOCKS.md) runs at every window's end over every
   thread: it visits each, and counts and walks (kernel stack with its
   __sched frames, user stack from outside the thread) each open block of
   the always-on profile. With window_seconds = 1, the bench reads, over
   --seconds, the BPF run time of pass_in_progress (kernel.bpf_stats_enabled
   on for the run; the programs' run_cnt and run_time_ns from
   /proc/PID/fdinfo) and of flush_thread_totals (the drain's other task
   iterator, the same visit without walks), the daemon's CPU time and the
   parts the pass counted (status counters in_progress_parts and
   in_progress_walks): first on the host as it is, then with --threads idle
   threads (one process, each thread blocked on a lock). Reported: the
   pass's ns per thread visited, ms per pass, ns per part counted (the
   difference between the two loads over the difference of their parts),
   and the daemon's CPU against the same for flush_thread_totals.
2. The always-on cost of a switch: bench/pingpong pinned to --cpu under no
   tracer, the default daemon of --baseline (a build without the pass, e.g.
   the commit before) and the default daemon of --build, in alternating
   sessions of --repeat runs, each mode's tenth percentile of ns per switch,
   as bench/overhead.py measures; extra ns per switch against none, and the
   difference after - before. Left out without --baseline.

Usage: sudo bench/in_progress.py [--build DIR] [--baseline DIR] [--threads N]
           [--seconds S] [--runs N] [--repeat N] [--round-trips N] [--cpu N]
           [--json]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)
from overhead import p10, run_pingpong  # noqa: E402

IDLE_THREADS = r"""
import sys, threading
threading.stack_size(64 * 1024)
lock = threading.Lock()
lock.acquire()
for _ in range(int(sys.argv[1])):
    threading.Thread(target=lock.acquire, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def cpu_ns(pid):
    """utime + stime of process pid, ns."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def named_stats(d):
    """{program name: (run_cnt, run_time_ns)} of the daemon's programs."""
    names = {p["id"]: p.get("name", "?") for p in json.loads(
        subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True,
                       check=True).stdout)}
    out = {}
    for pid, (cnt, ns) in bench_env.prog_stats(d.proc.pid).items():
        name = names.get(pid, "?")
        c, n = out.get(name, (0, 0))
        out[name] = (c + cnt, n + ns)
    return out


def pass_costs(d, seconds):
    """The pass's and the flush's run time, counts and the daemon's CPU over
    seconds of 1 s windows."""
    def sample():
        st = d.status()
        return (named_stats(d), cpu_ns(d.proc.pid), st["counters"], st["store"]["windows_written"])

    (p0, c0, k0, w0) = sample()
    time.sleep(seconds)
    (p1, c1, k1, w1) = sample()
    r = {"windows": w1 - w0, "daemon_cpu_pct": 100.0 * (c1 - c0) / (seconds * 1e9),
         "parts": k1["in_progress_parts"] - k0["in_progress_parts"],
         "walks": k1["in_progress_walks"] - k0["in_progress_walks"]}
    for prog in ("pass_in_progress", "flush_thread_totals"):
        cnt = p1.get(prog, (0, 0))[0] - p0.get(prog, (0, 0))[0]
        ns = p1.get(prog, (0, 0))[1] - p0.get(prog, (0, 0))[1]
        r[prog] = {"runs": cnt, "ns": ns, "ns_per_thread": ns / cnt if cnt else 0,
                   "ms_per_pass": ns / 1e6 / r["windows"] if r["windows"] else 0}
    return r


def idle_threads(n):
    p = subprocess.Popen([sys.executable, "-c", IDLE_THREADS, str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        p.kill()
        raise RuntimeError("the idle-thread workload did not start")
    return p


def switch_costs(args):
    """Tenth percentile of ns per switch of each mode, alternating sessions."""
    per = {"none": [], "before": [], "after": []}
    for _ in range(args.runs):
        for mode in per:
            d = None
            if mode != "none":
                build = args.baseline if mode == "before" else args.build
                d = bench_env.daemon(binary=os.path.join(build, "daemon", "offcpud"))
            try:
                run_pingpong(args.build, args.round_trips, args.cpu)  # warm up
                for _ in range(args.repeat):
                    ns, switches = run_pingpong(args.build, args.round_trips, args.cpu)
                    per[mode].append(ns / switches)
            finally:
                if d:
                    d.stop()
    r = {mode: p10(xs) for mode, xs in per.items()}
    r["extra_before"] = r["before"] - r["none"]
    r["extra_after"] = r["after"] - r["none"]
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--baseline", help="a build without the pass, for the ns per switch before")
    ap.add_argument("--threads", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--round-trips", type=int, default=20000)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    bench_env.set_build(args.build)
    report = {}
    with bench_env.cleanup(), bench_env.bpf_stats():
        d = bench_env.daemon("window_seconds = 1\n")
        time.sleep(2)  # the first windows, the processes' tables
        report["host"] = pass_costs(d, args.seconds)
        w = idle_threads(args.threads)
        try:
            time.sleep(3)  # every idle thread blocked, counted once
            report["idle"] = pass_costs(d, args.seconds)
        finally:
            w.kill()
            w.wait()
        d.stop()
        host, idle = report["host"], report["idle"]
        dp = idle["pass_in_progress"]["ns"] - host["pass_in_progress"]["ns"]
        dparts = idle["parts"] - host["parts"]
        report["ns_per_part"] = dp / dparts if dparts > 0 else 0
        if args.baseline:
            report["switch"] = switch_costs(args)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"in-progress pass, 1 s windows, {args.seconds:g} s each:")
    for load in ("host", "idle"):
        r = report[load]
        what = "host as it is" if load == "host" else f"+{args.threads} idle threads"
        p, f = r["pass_in_progress"], r["flush_thread_totals"]
        print(f"  {what:22} pass {p['ns_per_thread']:6.0f} ns/thread, {p['ms_per_pass']:6.2f} ms/pass; "
              f"flush {f['ns_per_thread']:5.0f} ns/thread, {f['ms_per_pass']:5.2f} ms/pass; "
              f"{r['parts'] / max(r['windows'], 1):7.0f} parts/pass ({r['walks'] / max(r['windows'], 1):.0f} walked); "
              f"daemon {r['daemon_cpu_pct']:.2f} % of a core")
    print(f"  per open block counted: {report['ns_per_part']:.0f} ns")
    if "switch" in report:
        s = report["switch"]
        print(f"pingpong on CPU {args.cpu}, p10 of {args.runs} x {args.repeat} runs: none {s['none']:.0f} ns/switch; "
              f"always-on before {s['extra_before']:+.0f}, after {s['extra_after']:+.0f} "
              f"(after - before {s['extra_after'] - s['extra_before']:+.0f} ns)")


if __name__ == "__main__":
    bench_env.run_main(main)
