#!/usr/bin/env python3
"""Do the scheduler programs write shared memory on every event? Their run
time per event with one busy CPU against several.

A BPF program that writes a cache line other CPUs also write (a shared hash
map, a global counter) gets slower when more CPUs run it at once: the line
moves between CPUs. One whose events touch only task-local or per-CPU state
does not. On a 2-CPU host the test is 1 busy CPU against 2 (issue 15's
"on 2 CPUs, show that the unsampled path touches no shared map"); on the
16-CPU machine of DEVELOPERS.md, --busy 1,8,15 (its "15 busy CPUs within
1.2x of one").

For each load of --busy (default 1,2: a count N of CPUs 0..N-1, or a list
of CPUs), bench/pingpong (pinned) runs on those CPUs at once, one ping-pong
each, under each mode:
  bpftrace-sum, bpftrace-offcputime  the references of bench/overhead.py
                       (bpftrace's hash maps are written on every switch)
  bpftrace-percpu      the control: a program of about the same run time
                       that writes per-CPU memory only
                       (bench/bpftrace/percpu_count.bt); its ratio is what
                       the host alone adds with more busy CPUs
  attached             offcpud, continuous = false, no slot on
  continuous           offcpud default: the always-on profile
  capture              the default daemon plus an exact system-wide capture
  continuous-S, capture-S  with continuous_stacks = S (--stacks, as in
                       overhead.py; auto adds them where the daemon knows it)
Each program's run count and run time come from the kernel's BPF statistics
(run_cnt and run_time_ns in /proc/PID/fdinfo of the tracer's program fds;
kernel.bpf_stats_enabled is set for the whole run and put back after, so
the wall times below include the stats' own two clock reads per run).
Reported per program that ran at least once per 10 switches: runs per
switch and ns per run with each count of busy CPUs (median of --runs), and
each count's ns per run over the first's. A ratio near 1.0 for the
sched_switch program means its events share no written cache line;
bpftrace's is the contrast in the same run. ns per run is the program
alone, without the tracepoint's own cost. Also reported, per mode and
count: the workload's own wall time per switch (mean of its ping-pongs,
median of --runs) and, against the run with no tracer ("none"), the extra
ns per switch that the tracer costs, tracepoint and all.

Usage: sudo bench/shared_writes.py [--build DIR] [--runs N] [--round-trips N]
           [--busy N,N...] [--workload threads|processes] [--stacks auto|none|sampled,exact]
           [--sample-period-us T] [--modes MODE,...] [--json]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)
from overhead import BPFTRACE, WORKLOADS, ctxt, run_pingpong, run_with_capture, stack_modes  # noqa: E402

# The control: a program that writes per-CPU memory only. What it gains with
# more busy CPUs is the host's, to read the others' ratios against.
CONTROL = {"bpftrace-percpu": "percpu_count.bt"}


def prog_names():
    """{prog id: name} of every loaded BPF program (bpftool)."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: p.get("name", "?") for p in json.loads(out)}


def busy(args, cpus):
    """One pinned pingpong per CPU in cpus, at once; returns (the host's
    context switches meanwhile, the ping-pongs' mean wall ns per switch)."""
    errors = []
    per_switch = []

    def one(cpu):
        try:
            ns, switches = run_pingpong(args.build, args.round_trips, cpu, args=WORKLOADS[args.workload])
            per_switch.append(ns / max(switches, 1))
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
    return ctxt() - before, statistics.mean(per_switch)


def busy_cpus(item):
    """The CPUs of one --busy item: a count N (CPUs 0 to N-1), or a list of
    CPUs and ranges joined by '+' (0+2+4, 0-3+8-11), to choose where the
    load runs: one CPU per core against both threads of fewer cores, say."""
    if item.isdigit():
        return list(range(int(item)))
    cpus = []
    for part in item.split("+"):
        first, _, last = part.partition("-")
        cpus += range(int(first), int(last or first) + 1)
    return cpus


def measure(args, pid, run_load=lambda load: load()):
    """{busy CPUs: ({prog id: (runs, ns, switches)}, wall ns per switch)}
    over one run of each load, for the programs of process pid (none: no
    programs). run_load(load) runs a load (a capture around it, say) and
    returns what the load returns."""
    got = {}
    for n, cpus in args.busy.items():
        before = bench_env.prog_stats(pid) if pid else {}
        switches, wall = run_load(lambda: busy(args, cpus))
        after = bench_env.prog_stats(pid) if pid else {}
        got[n] = ({i: (after[i][0] - before[i][0], after[i][1] - before[i][1], switches)
                   for i in after if i in before}, wall)
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--round-trips", type=int, default=200000)
    ap.add_argument("--busy", default="1,2", help="loads, comma-separated, each a count of busy CPUs or a "
                    "list of them (0+2+4, 0-7); the first is the base of the ratios (default 1,2)")
    ap.add_argument("--workload", choices=list(WORKLOADS), default="threads")
    ap.add_argument("--stacks", default="auto", help="as for overhead.py")
    ap.add_argument("--sample-period-us", type=int)
    ap.add_argument("--modes", help="run only these modes (comma-separated; none, the base, always runs)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    try:
        args.busy = {item: busy_cpus(item) for item in args.busy.split(",")}
    except ValueError:
        ap.error("--busy wants counts of CPUs or CPU lists (0+2+4, 0-7), comma-separated")
    if len(args.busy) < 2 or any(not cpus or max(cpus) >= os.cpu_count() for cpus in args.busy.values()):
        ap.error(f"--busy wants at least two loads, of CPUs 0 to {os.cpu_count() - 1} (this host's)")
    bench_env.set_build(args.build)
    stacks = stack_modes(args.stacks, args.sample_period_us)
    sampled_capture = ["--sampled"] if bench_env.ctl_knows("--sampled") else []
    period = f"sample_period_us = {args.sample_period_us}\n" if args.sample_period_us is not None else ""
    bench_env.tracefs_ready()
    if not shutil.which("bpftrace"):
        print("shared_writes: bpftrace is not installed: its reference rows are left out", file=sys.stderr)

    samples = {}  # mode -> list of measure() results, by program name
    wanted = set(args.modes.split(",")) if args.modes else None

    def want(mode):
        return mode is not None and (wanted is None or mode in wanted)

    def record(mode, got):
        """Keeps got by program name: each run's tracer loads its programs
        anew, under new ids."""
        names = prog_names()
        samples.setdefault(mode, []).append(
            {n: ({names.get(i, f"id {i}"): v for i, v in progs.items()}, wall)
             for n, (progs, wall) in got.items()})

    with bench_env.cleanup(), bench_env.bpf_stats():
        for _ in range(args.runs):
            record("none", measure(args, None))
            for mode, script in ({**BPFTRACE, **CONTROL}.items() if shutil.which("bpftrace") else ()):
                if not want(mode):
                    continue
                tracer = bench_env.Bpftrace(script)
                try:
                    record(mode, measure(args, tracer.proc.pid))
                finally:
                    tracer.stop()
            daemons = [("", "attached", None, "continuous = false\n"), ("", "continuous", "capture", "")]
            daemons += [(f"-{s}", "continuous", "capture", f"continuous_stacks = {s}\n{period}")
                        for s in stacks]
            for suffix, plain, with_capture, config in daemons:
                if not want(plain + suffix) and not (with_capture and want(with_capture + suffix)):
                    continue
                daemon = bench_env.daemon(config)
                try:
                    # Unmeasured: the daemon builds the binary's unwind tables when it first runs.
                    run_pingpong(args.build, 1000, 0, args=WORKLOADS[args.workload])
                    if want(plain + suffix):
                        record(plain + suffix, measure(args, daemon.proc.pid))
                    if with_capture and want(with_capture + suffix):
                        cap = sampled_capture if suffix == "-sampled" else []
                        record(with_capture + suffix, measure(
                            args, daemon.proc.pid, lambda load: run_with_capture(daemon, load, *cap)))
                finally:
                    daemon.stop()

    loads = list(args.busy)
    base = loads[0]
    report = {"workload": args.workload, "round_trips": args.round_trips, "runs": args.runs,
              "busy": args.busy, "cpus": os.cpu_count(), "modes": {}}
    wall_none = {n: statistics.median(r[n][1] for r in samples["none"]) for n in loads}
    for mode, runs in samples.items():
        wall = {n: statistics.median(r[n][1] for r in runs) for n in loads}
        entry = {"wall_ns_per_switch": {n: round(w, 1) for n, w in wall.items()},
                 "extra_ns_per_switch": {n: round(wall[n] - wall_none[n], 1) for n in loads},
                 "programs": {}}
        for name in runs[0][base][0]:
            rows = {}
            for n in loads:
                per = [r[n][0].get(name) for r in runs]
                if any(p is None or p[0] == 0 for p in per):
                    break
                rows[n] = {"runs_per_switch": round(statistics.median(p[0] / p[2] for p in per), 3),
                           "ns_per_run": round(statistics.median(p[1] / p[0] for p in per))}
            if len(rows) < len(loads) or rows[base]["runs_per_switch"] < 0.1:
                continue
            for n in loads[1:]:
                rows[n]["ratio_to_base"] = round(rows[n]["ns_per_run"] / rows[base]["ns_per_run"], 3)
            entry["programs"][name] = rows
        report["modes"][mode] = entry
    if args.json:
        print(json.dumps(report))
        return
    print(f"pingpong ({args.workload}): {args.round_trips} round trips per busy CPU, {args.runs} runs, "
          f"{os.cpu_count()} CPUs; per event, with {' / '.join(loads)} busy CPUs")
    counts = " / ".join(loads)
    print(f"{'mode':20} {'what':34} {'runs/switch':>11}  {'ns per run, ' + counts + ' CPUs':28} ratio to {base}")
    for mode, e in report["modes"].items():
        extra = " / ".join(f"{e['extra_ns_per_switch'][n]:.0f}" for n in loads)
        walls = " / ".join(f"{e['wall_ns_per_switch'][n]:.0f}" for n in loads)
        print(f"{mode:20} {'wall ns/switch (extra vs none)':34} {'':11}  {walls} ({extra})")
        for prog, r in e["programs"].items():
            ns = " / ".join(str(r[n]["ns_per_run"]) for n in loads)
            ratios = " / ".join(f"{r[n]['ratio_to_base']:.2f}x" for n in loads[1:])
            print(f"{mode:20} {prog:34} {r[base]['runs_per_switch']:11.3f}  {ns:28} {ratios}")


if __name__ == "__main__":
    bench_env.run_main(main)
