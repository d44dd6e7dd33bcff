#!/usr/bin/env python3
"""Overhead of offcpud on a context-switch-heavy workload.

bench/pingpong (two threads pinned to one CPU passing a byte over pipes) runs
in these modes, alternating, --runs times each:
  none        no offcpud running: the baseline
  attached    offcpud with continuous = false and no capture: the program
              runs on every switch, but no slot is on
  continuous  offcpud as configured by default: the always-on profile of
              every process (all states, user + kernel stacks)
  capture     the default daemon plus a system-wide ad-hoc capture, so every
              block is aggregated into two slots
  offwake     the same with --kind offwake: every wakeup of a tracked block
              also walks the waker's kernel and user stacks
  chain       the same with --kind chain: every wakeup of any thread records
              its waker (a chain needs each thread's last waker), and the
              blocks keep three levels
  request     the default daemon plus a request-synchronous capture of
              pingpong itself (--request pingpong_serve): each round trip
              is one request, so one uprobe and one uretprobe hit per two
              switches, and the peer's blocks are counted inside it
Context switches per run are counted from /proc/stat "ctxt". Reported: the
median run time per mode, slowdown against the baseline, and the extra
nanoseconds per context switch. Ratios within one run of this script are what
count; absolute times depend on the machine.

Usage: sudo bench/overhead.py [--build DIR] [--runs N] [--round-trips N] [--cpu C] [--json]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    raise RuntimeError("no ctxt line in /proc/stat")


def run_pingpong(build, round_trips, cpu, binary="pingpong"):
    before = ctxt()
    out = subprocess.run([os.path.join(build, "bench", binary), "--round-trips", str(round_trips),
                          "--cpu", str(cpu)], capture_output=True, text=True, check=True).stdout
    switches = ctxt() - before
    return json.loads(out)["elapsed_ns"], switches


def run_with_capture(daemon, run, *capture_args):
    """run() (a benchmark run) while a system-wide ad-hoc capture with
    capture_args runs; returns what run() returns."""
    what = " ".join(["capture", *capture_args])
    cap = daemon.ctl_popen("capture", "--seconds", "3600", "-o", os.devnull, *capture_args)
    result = None
    try:
        deadline = time.monotonic() + 60  # a kind's first capture loads its programs
        while daemon.status()["captures_running"] < 1 and cap.poll() is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start in 60 s")
            time.sleep(0.02)
        if cap.poll() is None:
            result = run()
    finally:
        if cap.poll() is None:
            cap.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=60)
    if cap.returncode != 0 or result is None:
        raise RuntimeError(f"{what} failed with {cap.returncode}: {err.strip()}")
    # The next capture must not count this one as running.
    while daemon.status()["captures_running"]:
        time.sleep(0.02)
    return result


def capture_modes(build):
    pingpong = os.path.abspath(os.path.join(build, "bench", "pingpong"))
    return {"capture": [], "offwake": ["--kind", "offwake"], "chain": ["--kind", "chain"],
            "request": ["--request", f"pingpong_serve@{pingpong}"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--round-trips", type=int, default=200000)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 5:
        ap.error("--runs must be at least 5")
    os.environ["OFFCPU_BUILD_DIR"] = os.path.abspath(args.build)
    from offcpu_env import Daemon  # the same daemon fixture as the tests

    modes = capture_modes(args.build)
    results = {"none": [], "attached": [], "continuous": [], **{mode: [] for mode in modes}}
    for _ in range(args.runs):
        results["none"].append(run_pingpong(args.build, args.round_trips, args.cpu))
        daemon = Daemon("continuous = false\n")
        try:
            results["attached"].append(run_pingpong(args.build, args.round_trips, args.cpu))
        finally:
            daemon.stop()
        daemon = Daemon()
        try:
            results["continuous"].append(run_pingpong(args.build, args.round_trips, args.cpu))
            for mode, capture_args in modes.items():
                results[mode].append(run_with_capture(
                    daemon, lambda: run_pingpong(args.build, args.round_trips, args.cpu), *capture_args))
            status = daemon.status()
        finally:
            daemon.stop()

    base_ns = statistics.median(ns for ns, _ in results["none"])
    report = {"round_trips": args.round_trips, "runs": args.runs, "cpu": args.cpu, "modes": {}}
    for mode, runs in results.items():
        med_ns = statistics.median(ns for ns, _ in runs)
        med_sw = statistics.median(sw for _, sw in runs)
        report["modes"][mode] = {
            "median_ms": round(med_ns / 1e6, 2),
            "switches": med_sw,
            "slowdown_pct": round(100 * (med_ns - base_ns) / base_ns, 1),
            "extra_ns_per_switch": round((med_ns - base_ns) / med_sw, 0),
            "runs_ms": [round(ns / 1e6, 1) for ns, _ in runs],
        }
    report["drops_last_run"] = {k: v for k, v in status["counters"].items() if k.startswith("drop_") and v}
    if args.json:
        print(json.dumps(report))
        return
    print(f"pingpong: {args.round_trips} round trips pinned to CPU {args.cpu}, {args.runs} runs per mode")
    print(f"{'mode':10} {'median ms':>10} {'switches':>9} {'slowdown':>9} {'ns/switch':>10}")
    for mode, r in report["modes"].items():
        print(f"{mode:10} {r['median_ms']:10.1f} {r['switches']:9d} {r['slowdown_pct']:8.1f}% "
              f"{r['extra_ns_per_switch']:10.0f}")
    print(f"drops in the last run's daemon: {report['drops_last_run'] or 'none'}")


if __name__ == "__main__":
    main()
