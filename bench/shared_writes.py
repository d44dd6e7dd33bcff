#!/usr/bin/env python3
"""Do the scheduler programs write shared memory on every event? Their run
time per event with one busy CPU against two.

A BPF program that writes a cache line other CPUs also write (a shared hash
map, a global counter) gets slower when more CPUs run it at once: the line
moves between CPUs. One whose events touch only task-local or per-CPU state
does not. On this 2-CPU host the test is 1 busy CPU against 2 (issue 15's
"on 2 CPUs, show that the unsampled path touches no shared map"; its 1 vs 15
CPUs target is for the 16-CPU machine of DEVELOPERS.md).

bench/pingpong (pinned) runs on CPU 0 alone ("1 CPU"), then on CPUs 0 and 1
at once, one ping-pong each ("2 CPUs"), under each mode:
  bpftrace-sum, bpftrace-offcputime  the references of bench/overhead.py
                       (bpftrace's hash maps are written on every switch)
  attached             offcpud, continuous = false, no slot on
  continuous           offcpud default: the always-on profile
  capture              the default daemon plus an exact system-wide capture
  continuous-S, capture-S  with continuous_stacks = S (--stacks, as in
                       overhead.py; auto adds them where the daemon knows it)
Each program's run count and run time come from the kernel's BPF statistics
(run_cnt and run_time_ns in /proc/PID/fdinfo of the tracer's program fds;
kernel.bpf_stats_enabled is set for the whole run and put back after).
Reported per program that ran at least once per 10 switches: runs per
switch and ns per run with 1 and 2 busy CPUs (median of --runs), and
2 CPUs / 1 CPU. A ratio near 1.0 for the sched_switch program means its
events share no written cache line; bpftrace's is the contrast in the same
run. ns per run is the program alone, without the tracepoint's own cost.

Usage: sudo bench/shared_writes.py [--build DIR] [--runs N] [--round-trips N]
           [--workload threads|processes] [--stacks auto|none|sampled,exact]
           [--sample-period-us T] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)
from overhead import BPFTRACE, WORKLOADS, ctxt, run_pingpong, run_with_capture, stack_modes  # noqa: E402

def prog_names():
    """{prog id: name} of every loaded BPF program (bpftool)."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: p.get("name", "?") for p in json.loads(out)}


def busy(args, cpus):
    """One pinned pingpong per CPU in cpus, at once; returns the host's
    context switches meanwhile."""
    errors = []

    def one(cpu):
        try:
            run_pingpong(args.build, args.round_trips, cpu, args=WORKLOADS[args.workload])
        except Exception as e:  # reported below, in the main thread
            errors.append(e)

    before = ctxt()
    threads = [threading.Thread(target=one, args=(cpu,)) for cpu in cpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return ctxt() - before


def measure(args, pid, run_load=lambda load: load()):
    """{load: {prog id: (runs, ns, switches)}} over one run of each load, for
    the programs of process pid. run_load(load) runs a load (a capture
    around it, say) and returns its switch count."""
    got = {}
    for name, cpus in (("1cpu", [0]), ("2cpu", [0, 1])):
        before = bench_env.prog_stats(pid)
        switches = run_load(lambda: busy(args, cpus))
        after = bench_env.prog_stats(pid)
        got[name] = {i: (after[i][0] - before[i][0], after[i][1] - before[i][1], switches)
                     for i in after if i in before}
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--round-trips", type=int, default=200000)
    ap.add_argument("--workload", choices=list(WORKLOADS), default="threads")
    ap.add_argument("--stacks", default="auto", help="as for overhead.py")
    ap.add_argument("--sample-period-us", type=int)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if os.cpu_count() < 2:
        ap.error("needs at least 2 CPUs")
    bench_env.set_build(args.build)
    stacks = stack_modes(args.stacks, args.sample_period_us)
    sampled_capture = ["--sampled"] if bench_env.ctl_knows("--sampled") else []
    period = f"sample_period_us = {args.sample_period_us}\n" if args.sample_period_us is not None else ""
    bench_env.tracefs_ready()

    samples = {}  # mode -> list of measure() results, by program name

    def record(mode, got):
        """Keeps got by program name: each run's tracer loads its programs
        anew, under new ids."""
        names = prog_names()
        samples.setdefault(mode, []).append(
            {load: {names.get(i, f"id {i}"): v for i, v in progs.items()} for load, progs in got.items()})

    with bench_env.cleanup(), bench_env.bpf_stats():
        for _ in range(args.runs):
            for mode, script in BPFTRACE.items():
                tracer = bench_env.Bpftrace(script)
                try:
                    record(mode, measure(args, tracer.proc.pid))
                finally:
                    tracer.stop()
            daemons = [("", "attached", None, "continuous = false\n"), ("", "continuous", "capture", "")]
            daemons += [(f"-{s}", "continuous", "capture", f"continuous_stacks = {s}\n{period}")
                        for s in stacks]
            for suffix, plain, with_capture, config in daemons:
                daemon = bench_env.daemon(config)
                try:
                    # Unmeasured: the daemon builds the binary's unwind tables when it first runs.
                    run_pingpong(args.build, 1000, 0, args=WORKLOADS[args.workload])
                    record(plain + suffix, measure(args, daemon.proc.pid))
                    if with_capture:
                        cap = sampled_capture if suffix == "-sampled" else []
                        record(with_capture + suffix, measure(
                            args, daemon.proc.pid, lambda load: run_with_capture(daemon, load, *cap)))
                finally:
                    daemon.stop()

    report = {"workload": args.workload, "round_trips": args.round_trips, "runs": args.runs, "modes": {}}
    for mode, runs in samples.items():
        progs = {}
        for name in runs[0]["1cpu"]:
            rows = {}
            for load in ("1cpu", "2cpu"):
                per = [r[load].get(name) for r in runs]
                if any(p is None or p[0] == 0 for p in per):
                    break
                rows[load] = {"runs_per_switch": round(statistics.median(p[0] / p[2] for p in per), 3),
                              "ns_per_run": round(statistics.median(p[1] / p[0] for p in per))}
            if len(rows) < 2 or rows["1cpu"]["runs_per_switch"] < 0.1:
                continue
            rows["ratio_2cpu_to_1cpu"] = round(rows["2cpu"]["ns_per_run"] / rows["1cpu"]["ns_per_run"], 3)
            progs[name] = rows
        report["modes"][mode] = progs
    if args.json:
        print(json.dumps(report))
        return
    print(f"pingpong ({args.workload}): {args.round_trips} round trips per busy CPU, {args.runs} runs; "
          "BPF run time per event, 1 busy CPU vs 2")
    print(f"{'mode':20} {'program':34} {'runs/switch':>11} {'ns/run 1cpu':>11} {'ns/run 2cpu':>11} {'2cpu/1cpu':>9}")
    for mode, progs in report["modes"].items():
        for prog, r in progs.items():
            print(f"{mode:20} {prog:34} {r['1cpu']['runs_per_switch']:11.3f} {r['1cpu']['ns_per_run']:11d} "
                  f"{r['2cpu']['ns_per_run']:11d} {r['ratio_2cpu_to_1cpu']:8.2f}x")


if __name__ == "__main__":
    bench_env.run_main(main)
