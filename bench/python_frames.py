#!/usr/bin/env python3
"""What CPython's frames cost the walks that read them: the same build
with python_frames = true and false, in one run.

The workload is a Python ping-pong: two threads of one CPython process,
pinned to one CPU, passing a byte through two pipes, each at the bottom
of --depth nested Python calls (a service's stack: a request handler some
20 frames down). Every pass blocks a thread, so every switch of the
workload's threads is a block whose user stack the walk may read.

For each setting, alternating, --runs sessions of a fresh daemon:
  always-on   the default daemon: the sampled profile walks the stacks of
              a sample of blocks (at switch-in, or at the return to user
              mode), so most switches read no frame at all
  capture     the default daemon plus an exact capture of the workload:
              every block's user stack is walked at switch-out
Reported per mode and setting (median of the sessions): the workload's
wall time per round trip; the sched_switch program's ns per run (the
kernel's BPF statistics: kernel.bpf_stats_enabled is set for the run and
put back); Python walks and frames per switch (offcpud's counters); and,
from the difference between the settings, the extra ns per switch, per
walk and per frame that reading the interpreter's frames costs. The deferred
walks of the always-on profile run in the rseq_update program (added in) or
in a task work, which the kernel's statistics do not count: there the
workload's wall time is the measure.

Usage: sudo bench/python_frames.py [--build DIR] [--python PATH] [--runs N]
           [--round-trips N] [--depth D] [--cpu C] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)
from overhead import run_with_capture  # noqa: E402

PINGPONG = r"""
import os, sys, threading, time
cpu, trips, depth = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
os.sched_setaffinity(0, {cpu})
a_r, a_w = os.pipe()
b_r, b_w = os.pipe()

def nest(n, fn):
    return nest(n - 1, fn) if n else fn()

def ping():
    for _ in range(trips):
        os.write(a_w, b"x")
        os.read(b_r, 1)

def pong():
    for _ in range(trips):
        os.read(a_r, 1)
        os.write(b_w, b"x")

t = threading.Thread(target=nest, args=(depth, pong))
t.start()
start = time.perf_counter_ns()
nest(depth, ping)
elapsed = time.perf_counter_ns() - start
t.join()
print(elapsed / trips)
"""

# Where user walks run, by the kernel's program names (15 characters). A
# deferred walk's task work runs as no program of its own: its time shows
# only in the workload's wall time.
PROGRAMS = ("sched_switch", "walk_at_rseq")


def prog_names():
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True, check=True)
    return {p["id"]: p.get("name", "") for p in json.loads(out.stdout)}


def walking_progs(d):
    """(run_cnt, run_time_ns) summed over the daemon's programs that walk user stacks."""
    names, cnt, ns = prog_names(), 0, 0
    for pid_prog, (c, t) in bench_env.prog_stats(d.proc.pid).items():
        if any(names.get(pid_prog, "").startswith(p) for p in PROGRAMS):
            cnt, ns = cnt + c, ns + t
    return cnt, ns


def counters(d):
    return d.status()["counters"]


def session(args, script, python_frames, mode):
    """One daemon, one run of the workload; returns its figures."""
    d = bench_env.daemon(f"python_frames = {'true' if python_frames else 'false'}\n")
    try:
        def run():
            c0, (r0, t0) = counters(d), walking_progs(d)
            out = subprocess.run([args.python, script, str(args.cpu), str(args.round_trips), str(args.depth)],
                                 capture_output=True, text=True, check=True)
            time.sleep(0.5)  # the deferred walks of the last blocks
            c1, (r1, t1) = counters(d), walking_progs(d)
            delta = {k: c1[k] - c0.get(k, 0) for k in c1}
            return {"ns_per_trip": float(out.stdout), "prog_runs": r1 - r0, "prog_ns": t1 - t0,
                    "switches": delta["switches"], "python_walks": delta.get("python_walks", 0),
                    "python_frames": delta.get("python_frames", 0)}
        if mode == "capture":
            return run_with_capture(d, run, "-o", os.devnull, "--comm", os.path.basename(args.python))
        return run()
    finally:
        d.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--python", default="/root/.pyenv/versions/3.12.1/bin/python3.12")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--round-trips", type=int, default=50000)
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    bench_env.set_build(args.build)
    if not os.access(args.python, os.X_OK):
        raise SystemExit(f"python_frames: no interpreter at {args.python} (--python)")
    results = {}
    with tempfile.NamedTemporaryFile("w", suffix=".py") as f, bench_env.cleanup(), bench_env.bpf_stats():
        f.write(PINGPONG)
        f.flush()
        for _ in range(args.runs):
            for mode in ("always-on", "capture"):
                for on in (False, True):
                    results.setdefault((mode, on), []).append(session(args, f.name, on, mode))
    report = {}
    for (mode, on), runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        report[f"{mode} python_frames={'on' if on else 'off'}"] = med
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{os.path.basename(args.python)} ping-pong, {args.round_trips} round trips at depth {args.depth}, "
          f"CPU {args.cpu}, median of {args.runs} sessions")
    print(f"{'mode':30} {'ns/round trip':>13} {'walk progs ns/switch':>20} {'py walks/switch':>15} "
          f"{'frames/walk':>11}")
    for name, m in report.items():
        sw = max(m["switches"], 1)
        print(f"{name:30} {m['ns_per_trip']:13.0f} {m['prog_ns'] / sw:20.1f} {m['python_walks'] / sw:15.3f} "
              f"{m['python_frames'] / max(m['python_walks'], 1):11.1f}")
    for mode in ("always-on", "capture"):
        off, on = report[f"{mode} python_frames=off"], report[f"{mode} python_frames=on"]
        extra_sw = on["prog_ns"] / max(on["switches"], 1) - off["prog_ns"] / max(off["switches"], 1)
        walks = on["python_walks"] / max(on["switches"], 1)
        frames = on["python_frames"] / max(on["python_walks"], 1)
        per_walk = extra_sw / walks if walks else float("nan")
        print(f"{mode}: python frames add {extra_sw:.1f} ns per switch of the programs that walk; "
              f"{per_walk:.0f} ns per walk, {per_walk / frames if frames else float('nan'):.0f} ns per frame; "
              f"round trip {on['ns_per_trip'] / off['ns_per_trip']:.3f}x of off")


if __name__ == "__main__":
    bench_env.run_main(main)
