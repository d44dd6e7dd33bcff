#!/usr/bin/env python3
"""Overhead of on-CPU sampling on CPU-bound work.

bench/cpuburn (a fixed amount of integer hashing, 20 frames deep, pinned to
one CPU) runs in these modes, alternating, --runs times each:
  none       no offcpud running: the baseline
  idle99     offcpud (continuous = false) with its perf events at 99 Hz but
             no capture: the program runs 99 times a second per CPU and
             returns at once (a 1 s oncpu capture loads it first: the
             on-CPU programs load on first use)
  oncpu99    the same plus a system-wide capture --kind oncpu: every sample
             walks the kernel and user stacks and is aggregated
  oncpu999   oncpu_frequency = 999 and the same capture
Reported: the median and the fastest run per mode and their slowdown
against the baseline (ratios within one run of this script are what count;
on a machine that others load, the fastest run is the least disturbed), and the
BPF run time per sample from the kernel's program statistics, which gives
the CPU share the sampling takes: frequency x ns per sample.

Usage: sudo bench/oncpu_overhead.py [--build DIR] [--runs N] [--iterations N] [--cpu C] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from overhead import run_with_capture  # noqa: E402 (after the path is set)


def run_cpuburn(build, iterations, cpu):
    out = subprocess.run([os.path.join(build, "bench", "cpuburn"), "--iterations", str(iterations),
                          "--cpu", str(cpu)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["elapsed_ns"]


def sample_cost(daemon):
    """(runs, ns per run) of the oncpu_sample program so far."""
    prog = next(p for p in daemon.status()["programs"] if p["name"] == "oncpu_sample")
    return prog["run_cnt"], prog["run_time_ns"] / prog["run_cnt"] if prog["run_cnt"] else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=1000000000)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 3:
        ap.error("--runs must be at least 3")
    os.environ["OFFCPU_BUILD_DIR"] = os.path.abspath(args.build)
    from offcpu_env import Daemon  # the same daemon fixture as the tests

    def burn():
        return run_cpuburn(args.build, args.iterations, args.cpu)

    results = {"none": [], "idle99": [], "oncpu99": [], "oncpu999": []}
    per_sample = {}
    for _ in range(args.runs):
        results["none"].append(burn())
        daemon = Daemon("continuous = false\noncpu_frequency = 99\nbpf_stats = true\n")
        try:
            # Load the on-CPU programs (on first use), then measure them idle.
            r = daemon.ctl("capture", "--kind", "oncpu", "--seconds", "1", "-o", os.devnull)
            if r.returncode != 0:
                sys.exit(f"oncpu_overhead: the oncpu capture failed: {r.stderr.strip()}")
            time.sleep(1)  # past the daemon's start-up work
            results["idle99"].append(burn())
            before = sample_cost(daemon)
            results["oncpu99"].append(run_with_capture(daemon, burn, "--kind", "oncpu"))
            after = sample_cost(daemon)
        finally:
            daemon.stop()
        daemon = Daemon("continuous = false\noncpu_frequency = 999\nbpf_stats = true\n")
        try:
            time.sleep(1)
            results["oncpu999"].append(run_with_capture(daemon, burn, "--kind", "oncpu"))
            after999 = sample_cost(daemon)
        finally:
            daemon.stop()
    # The last round's figures: runs and run time of the sampling program.
    per_sample["oncpu99"] = round((after[0] * after[1] - before[0] * before[1]) / max(after[0] - before[0], 1))
    per_sample["oncpu999"] = round(after999[1])

    base_med, base_min = statistics.median(results["none"]), min(results["none"])
    report = {"iterations": args.iterations, "runs": args.runs, "cpu": args.cpu, "modes": {},
              "bpf_ns_per_sample": per_sample}
    for mode, runs in results.items():
        med, fastest = statistics.median(runs), min(runs)
        report["modes"][mode] = {"median_ms": round(med / 1e6, 1),
                                 "slowdown_pct": round(100 * (med - base_med) / base_med, 2),
                                 "min_ms": round(fastest / 1e6, 1),
                                 "min_slowdown_pct": round(100 * (fastest - base_min) / base_min, 2),
                                 "runs_ms": [round(ns / 1e6, 1) for ns in runs]}
    if args.json:
        print(json.dumps(report))
        return
    print(f"cpuburn: {args.iterations} iterations pinned to CPU {args.cpu}, {args.runs} runs per mode")
    print(f"{'mode':10} {'median ms':>10} {'slowdown':>9} {'min ms':>8} {'slowdown':>9}")
    for mode, r in report["modes"].items():
        print(f"{mode:10} {r['median_ms']:10.1f} {r['slowdown_pct']:8.2f}% {r['min_ms']:8.1f} "
              f"{r['min_slowdown_pct']:8.2f}%")
    for mode, ns in per_sample.items():
        hz = 999 if mode.endswith("999") else 99
        print(f"{mode}: BPF {ns} ns per sample = {hz * ns / 1e7:.3f} % of a CPU at {hz} Hz")


if __name__ == "__main__":
    main()
