#!/usr/bin/env python3
"""Overhead of offcpud on a context-switch-heavy workload, against bpftrace.

bench/pingpong passes a byte back and forth over two pipes, both ends pinned
to one CPU (on a 2-CPU host unpinned cross-CPU wake-ups vary by 60 %), as two
threads ("threads") and as two processes ("processes": every switch changes
the address space). Each round trip is about two context switches. Both
workloads run in each of these modes, alternating, --runs times:
  none                 no tracer: the baseline
  bpftrace-sum         bpftrace, blocked time summed per thread, no stacks
                       (bench/bpftrace/offcpu_sum.bt): the reference of the
                       cheapest off-CPU tracer
  bpftrace-offcputime  bpftrace, the same keyed by the kernel and user stacks
                       taken at switch-out, as bcc's offcputime does
                       (bench/bpftrace/offcputime.bt)
  attached             offcpud with continuous = false and no capture: the
                       programs run on every switch, but no slot is on
  continuous           offcpud as configured by default: the always-on
                       profile of every process
  capture              the default daemon plus an exact system-wide ad-hoc
                       capture, so every block is aggregated into two slots
and, with --modes, these captures on the default daemon:
  offwake              capture --kind offwake: every wakeup of a tracked
                       block also walks the waker's kernel and user stacks
  chain                capture --kind chain: every wakeup of any thread
                       records its waker, and the blocks keep three levels
  request              capture --request pingpong_serve (the peer's side of
                       a round trip is one request)
Stack modes (issue 15: continuous_stacks, sample_period_us, capture
--sampled) are passed only where asked (--stacks; "auto", the default, adds
them when this offcpud's config accepts continuous_stacks): for each mode S,
  continuous-S         offcpud with continuous_stacks = S
  capture-S            that daemon plus a system-wide capture (--sampled
                       when S is sampled and offcpuctl knows it)
--sample-period-us T adds sample_period_us = T to those daemons' config.
Ways of walking sampled user stacks (sampled_walk) are passed where asked
(--walks task-work,rseq,switch-out; the default, auto, picks between the
first two as it goes): for each W,
  walk-W               offcpud with sampled_walk = W (and the same
                       sample_period_us): compare it with continuous, or with
                       continuous-sampled where --sample-period-us is given

Each mode runs in --runs sessions (a tracer started, --repeat timed runs of
--round-trips each, the tracer stopped), the modes alternating from one
session to the next. Context switches per run are the workload's own
(pingpong counts both ends' with getrusage; other load on the host does not
add to them). Reported per workload, from the ns per switch of every run of
a mode: --stat p10 (the default), the tenth percentile, or median or min;
the slowdown against the baseline, the extra nanoseconds per context switch,
and each offcpud mode's extra ns/switch divided by each bpftrace reference's
in the same run, next to issue 15's targets. Many short runs and a low
percentile, because on a VM a run's speed can jump by a third from one run
to the next (a host that others load, or the hypervisor's placement): the
tenth percentile of 50 runs of a mode reads its undisturbed cost without
hanging on one lucky run, as the fastest of 5 long runs did. (Timed runs
have kernel.bpf_stats_enabled off, as production has it: neither offcpud by
default nor bpftrace turns it on.) The targets:
  continuous <= 0.5x bpftrace-sum
  capture    <= 0.75x bpftrace-offcputime (exact system-wide capture)
  attached   <= 0.15x bpftrace-sum
Ratios within one run of this script are what count; absolute times depend
on the machine (3x between hosts). Beside them, "BPF ns/sw": the run time of
the tracer's own BPF programs per context switch on the host (they run on
every CPU's switches, the workload's and others'), from the kernel's statistics
(run_time_ns in /proc/PID/fdinfo), in one run of --round-trips at the end of
each session with kernel.bpf_stats_enabled on (the sessions' by --stat), and
the same ratios in it:
little disturbed by other load on the host, but blind to what the programs'
attachment costs outside them (a classic tracepoint's argument copy,
bpftrace's; tp_btf's is smaller).

Every daemon and bpftrace started here is stopped at the end, on an error,
Ctrl-C or SIGTERM too.

Usage: sudo bench/overhead.py [--build DIR] [--runs N] [--repeat K] [--round-trips N] [--cpu C]
           [--workloads threads,processes] [--modes LIST] [--stacks auto|none|sampled,exact]
           [--sample-period-us T] [--walks task-work,rseq,switch-out] [--stat p10|median|min]
           [--json]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

import bench_env  # noqa: E402 (after the path is set)

WORKLOADS = {"threads": [], "processes": ["--processes"]}
BPFTRACE = {"bpftrace-sum": "offcpu_sum.bt", "bpftrace-offcputime": "offcputime.bt"}
# (mode, reference, most allowed ratio): issue 15's targets.
TARGETS = [("continuous", "bpftrace-sum", 0.5), ("capture", "bpftrace-offcputime", 0.75),
           ("attached", "bpftrace-sum", 0.15)]
EXTRA_CAPTURES = ("offwake", "chain", "request")


def p10(xs):
    """The tenth percentile (the nearest rank at or below it)."""
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 10]


STATS = {"p10": p10, "median": statistics.median, "min": min}


def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    raise RuntimeError("no ctxt line in /proc/stat")


def run_pingpong(build, round_trips, cpu, binary="pingpong", args=()):
    """One pingpong run; returns (elapsed ns, context switches): the
    workload's own as it counts them (getrusage), or where an older build
    does not, the host's (/proc/stat)."""
    before = ctxt()
    out = subprocess.run([os.path.join(build, "bench", binary), "--round-trips", str(round_trips),
                          "--cpu", str(cpu), *args], capture_output=True, text=True, check=True).stdout
    host_switches = ctxt() - before
    result = json.loads(out)
    return result["elapsed_ns"], result.get("switches", host_switches)


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


def stack_modes(choice, period_us):
    """The stack modes to run, [] if none: --stacks auto asks the daemon."""
    if choice == "none":
        return []
    if choice == "auto":
        if not bench_env.daemon_knows("continuous_stacks = sampled"):
            if period_us is not None:
                raise SystemExit("overhead.py: --sample-period-us, but this offcpud has no stack modes")
            return []
        choice = "sampled,exact"
    modes = choice.split(",")
    for s in modes:
        if s not in ("sampled", "exact"):
            raise SystemExit(f"overhead.py: bad --stacks '{s}': want auto, none, or sampled and/or exact")
        if not bench_env.daemon_knows(f"continuous_stacks = {s}"):
            raise SystemExit(f"overhead.py: this offcpud does not accept 'continuous_stacks = {s}' "
                             "(issue 15 adds it); run with --stacks none")
    if period_us is not None and not bench_env.daemon_knows(f"sample_period_us = {period_us}"):
        raise SystemExit(f"overhead.py: this offcpud does not accept 'sample_period_us = {period_us}'")
    return modes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=5, help="sessions of each mode (default 5)")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs in each session (default 10)")
    ap.add_argument("--round-trips", type=int, default=20000, help="round trips a run (default 20000)")
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--workloads", default="threads,processes",
                    help="comma-separated: threads, processes (default both)")
    ap.add_argument("--modes", default="",
                    help="extra captures on the default daemon, comma-separated: offwake, chain, request")
    ap.add_argument("--stacks", default="auto",
                    help="stack modes of the always-on profile to add: auto (those the daemon knows), "
                         "none, or sampled and/or exact, comma-separated")
    ap.add_argument("--sample-period-us", type=int,
                    help="sample_period_us of the stack-mode and walk-mode daemons")
    ap.add_argument("--walks", default="",
                    help="sampled_walk values of the always-on profile to add, comma-separated: "
                         "task-work, rseq, switch-out")
    ap.add_argument("--stat", choices=list(STATS), default="p10",
                    help="the run of each mode compared, by ns per switch: p10 (default), the tenth "
                         "percentile; median; or min, the fastest")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 1 or args.repeat < 1:
        ap.error("--runs and --repeat must be at least 1 (5 and 10 or more for figures worth quoting)")
    workloads = args.workloads.split(",")
    if not workloads or any(w not in WORKLOADS for w in workloads):
        ap.error(f"--workloads wants {' and/or '.join(WORKLOADS)}, comma-separated")
    extra = [m for m in args.modes.split(",") if m]
    if any(m not in EXTRA_CAPTURES for m in extra):
        ap.error(f"--modes wants {', '.join(EXTRA_CAPTURES)}, comma-separated")
    bench_env.set_build(args.build)
    stacks = stack_modes(args.stacks, args.sample_period_us)
    sampled_capture = ["--sampled"] if bench_env.ctl_knows("--sampled") else []
    period = f"sample_period_us = {args.sample_period_us}\n" if args.sample_period_us is not None else ""
    walks = [w for w in args.walks.split(",") if w]
    for w in walks:
        if not bench_env.daemon_knows(f"sampled_walk = {w}"):
            raise SystemExit(f"overhead.py: this offcpud does not accept 'sampled_walk = {w}'")
    captures = {m: a for m, a in capture_modes(args.build).items() if m == "capture" or m in extra}

    modes = ["none", *BPFTRACE, "attached", "continuous", *captures]
    for s in stacks:
        modes += [f"continuous-{s}", f"capture-{s}"]
    modes += [f"walk-{w}" for w in walks]
    # By workload and mode: each run's (ns, switches), each session's BPF ns/switch.
    results = {w: {m: {"runs": [], "bpf": []} for m in modes} for w in workloads}
    status = {}
    mounted = bench_env.tracefs_ready()

    def warm_up():
        """A short unmeasured run of each workload: a daemon builds the unwind
        tables of a binary it has not seen when the binary first runs."""
        for w in workloads:
            run_pingpong(args.build, 1000, args.cpu, args=WORKLOADS[w])

    def timed(tracer_pid, w, mode):
        """A session's runs of workload w, with the kernel's BPF stats off,
        and then, in one more run with them on, the run time of the
        tracer's BPF programs per context switch on the host: they run on
        every CPU's switches, the workload's and any other load's alike.
        Returns the mode's results, to which they were added."""
        r = results[w][mode]
        for _ in range(args.repeat):
            r["runs"].append(run_pingpong(args.build, args.round_trips, args.cpu, args=WORKLOADS[w]))
        if not tracer_pid:
            r["bpf"].append(0)
            return r
        with bench_env.bpf_stats():
            host = ctxt()
            before = bench_env.prog_stats(tracer_pid)
            run_pingpong(args.build, args.round_trips, args.cpu, args=WORKLOADS[w])
            after = bench_env.prog_stats(tracer_pid)
            bpf_ns = sum(after[i][1] - before[i][1] for i in after if i in before)
            r["bpf"].append(bpf_ns / max(ctxt() - host, 1))
        return r

    def measure(mode, tracer_pid=None):
        for w in workloads:
            timed(tracer_pid, w, mode)

    def measure_captures(daemon, mode, capture_args):
        for w in workloads:
            run_with_capture(daemon, lambda: timed(daemon.proc.pid, w, mode), *capture_args)

    with bench_env.cleanup(), bench_env.bpf_stats(False):
        for _ in range(args.runs):
            measure("none")
            for mode, script in BPFTRACE.items():
                tracer = bench_env.Bpftrace(script)
                try:
                    measure(mode, tracer.proc.pid)
                finally:
                    tracer.stop()
            daemon = bench_env.daemon("continuous = false\n")
            try:
                warm_up()
                measure("attached", daemon.proc.pid)
            finally:
                daemon.stop()
            daemon = bench_env.daemon()
            try:
                warm_up()
                measure("continuous", daemon.proc.pid)
                for mode, capture_args in captures.items():
                    measure_captures(daemon, mode, capture_args)
                status["default"] = daemon.status()
            finally:
                daemon.stop()
            for s in stacks:
                daemon = bench_env.daemon(f"continuous_stacks = {s}\n{period}")
                try:
                    warm_up()
                    measure(f"continuous-{s}", daemon.proc.pid)
                    measure_captures(daemon, f"capture-{s}", sampled_capture if s == "sampled" else [])
                    status[s] = daemon.status()
                finally:
                    daemon.stop()
            for w in walks:
                daemon = bench_env.daemon(f"sampled_walk = {w}\n{period}")
                try:
                    warm_up()
                    measure(f"walk-{w}", daemon.proc.pid)
                    status[f"walk-{w}"] = daemon.status()
                finally:
                    daemon.stop()

    report = {"round_trips": args.round_trips, "runs": args.runs, "repeat": args.repeat, "cpu": args.cpu,
              "stat": args.stat,
              "stacks": stacks, "sample_period_us": args.sample_period_us,
              "capture_sampled_flag": bool(sampled_capture),
              "tracefs_mounted_by_bench": mounted, "workloads": {}}
    pick = STATS[args.stat]
    for w in workloads:
        per_switch = {mode: [ns / sw for ns, sw in r["runs"]] for mode, r in results[w].items()}
        base = pick(per_switch["none"])
        rows = {}
        for mode, r in results[w].items():
            ns = pick(per_switch[mode])
            rows[mode] = {
                "ns_per_switch": round(ns),
                "switches": statistics.median(sw for _, sw in r["runs"]),
                "slowdown_pct": round(100 * (ns - base) / base, 1),
                "extra_ns_per_switch": round(ns - base),
                "bpf_ns_per_switch": round(pick(r["bpf"])),
                "runs_ns_per_switch": [round(x) for x in per_switch[mode]],
            }
        for mode, r in rows.items():
            if mode == "none" or mode in BPFTRACE:
                continue
            r["ratio_to"] = {ref: ratio(r, rows[ref]) for ref in BPFTRACE}
            r["bpf_ratio_to"] = {ref: ratio(r, rows[ref], "bpf_ns_per_switch") for ref in BPFTRACE}
        targets = []
        for mode, ref, most in TARGETS:
            got = rows[mode]["ratio_to"][ref]
            # A mode measured faster than the baseline cost less than the
            # noise: met, but flagged, as is a reference that cost nothing.
            targets.append({"mode": mode, "reference": ref, "target": most, "ratio": got,
                            "bpf_ratio": rows[mode]["bpf_ratio_to"][ref],
                            "met": got is not None and got <= most,
                            "below_noise": got is not None and got <= 0})
        report["workloads"][w] = {"modes": rows, "targets": targets}
    report["drops_last_run"] = {name: {k: v for k, v in st["counters"].items() if k.startswith("drop_") and v}
                                for name, st in status.items()}
    # How each daemon's deferred walks met the return to user mode at the
    # end of its last session (sampled_walk = auto chooses as it goes).
    report["walk_return_last_run"] = {name: [st["sampling"]["walk_return"], st["sampling"]["walk_return_reason"]]
                                      for name, st in status.items()
                                      if st.get("sampling", {}).get("walk_return")}
    if args.json:
        print(json.dumps(report))
        return
    print_report(report, args)


def ratio(r, ref, key="extra_ns_per_switch"):
    """r's key (extra ns per switch) over ref's; None where ref cost nothing measurable."""
    return round(r[key] / ref[key], 3) if ref[key] > 0 else None


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}x"


def print_report(report, args):
    print(f"pingpong: {args.round_trips} round trips pinned to CPU {args.cpu}, {args.runs} sessions of "
          f"{args.repeat} runs per mode, {args.stat} of their ns/switch"
          + (f"; stack modes: {', '.join(report['stacks'])}" if report["stacks"] else ""))
    for w, wr in report["workloads"].items():
        print(f"\n{w}:")
        print(f"{'mode':20} {'ns/switch':>10} {'switches':>9} {'slowdown':>9} {'extra ns':>10} "
              f"{'/bt-sum':>8} {'/bt-offcputime':>14} {'BPF ns/sw':>10}")
        for mode, r in wr["modes"].items():
            ratios = r.get("ratio_to")
            cols = (f"{fmt_ratio(ratios['bpftrace-sum']):>8} {fmt_ratio(ratios['bpftrace-offcputime']):>14}"
                    if ratios else f"{'':8} {'':14}")
            print(f"{mode:20} {r['ns_per_switch']:10d} {r['switches']:9.0f} {r['slowdown_pct']:8.1f}% "
                  f"{r['extra_ns_per_switch']:10d} {cols} {r['bpf_ns_per_switch']:10d}")
        print("issue 15 targets:")
        for t in wr["targets"]:
            verdict = "met" if t["met"] else "NOT met"
            if t["below_noise"]:
                verdict += f" (below the noise: {t['mode']} measured no slower than none; more runs)"
            elif t["ratio"] is None:
                verdict += f" ({t['reference']} measured no slower than none; more runs)"
            print(f"  {t['mode']:10} <= {t['target']:.2f}x {t['reference']:20} measured "
                  f"{fmt_ratio(t['ratio']):>6}  {verdict}; BPF run time alone {fmt_ratio(t['bpf_ratio'])}")
    if "sampled" in report["stacks"] and not report["capture_sampled_flag"]:
        print("\n(this offcpuctl has no capture --sampled: capture-sampled is an exact capture "
              "on the sampled daemon)")
    drops = {k: v for k, v in report["drops_last_run"].items() if v}
    print(f"\ndrops in the last run's daemons: {drops or 'none'}")
    for name, (how, why) in report["walk_return_last_run"].items():
        print(f"deferred walks of the {name} daemon, at its last status: {how}" + (f" ({why})" if why else ""))
    if report["tracefs_mounted_by_bench"]:
        print(f"(tracefs was not mounted; mounted it at {bench_env.TRACEFS} for bpftrace)")


if __name__ == "__main__":
    bench_env.run_main(main)
