#!/usr/bin/env python3
"""Do the always-on windows agree with an exact capture of the same interval?

bench/mixed_workload (a two-process pipe ping-pong, sleepers of 100 us, 1 ms
and 10 ms, a thread alternating 20 us nanosleeps, 1 ms polls and 200 us
selects, four threads contending for a pthread mutex, a CPU hog; every
process and thread with its own comm) runs for --seconds while offcpud's
always-on profile stores windows of --window-seconds AND an exact
system-wide ad-hoc capture (offcpuctl capture) runs. Then the windows are
exported (offcpuctl export --from, --pid the workload's processes) and
compared with the capture's rows of the same processes:
  - per (comm, leaf user function) group holding >= 1 % of the workload's
    off-CPU time in the capture: the windows' total against the capture's,
    target within +-5 % (issue 15);
  - per process: target within +-3 %.
The leaf user function is the innermost user frame (the C library call that
blocked, or the hog's loop where it was preempted); rows without a user
stack group as "[no user stack]". Rows of every kind are summed (the
always-on profile keeps run-queue wait as rows of its own,
continuous_split_runq).

Why the comparison is of whole totals, though windows do not align with the
capture: the workload runs entirely inside both. The capture starts first
(it counts the blocks that begin after it started), then the workload is
spawned; it exits before the capture is stopped; and the windows exported
start before the spawn and reach past the exit plus a drain (a block is
stored in the window open when the drain carrying it completes, so window
edges move blocks between windows, never out of the export). Every block of
the workload's processes is thus in both, whatever the window boundaries:
absolute nanoseconds are compared, with no rescaling.

The always-on profile runs as the daemon's default unless --stacks names a
mode (continuous_stacks = sampled|exact, issue 15; passed only when asked,
so this runs against daemons with and without the key); --sample-period-us
sets sample_period_us. With today's exact always-on profile the differences
measure the bench itself (two exact aggregations of the same blocks).

The daemon started here is stopped at the end, on an error, Ctrl-C or
SIGTERM too.

Usage: sudo bench/sampling_accuracy.py [--build DIR] [--seconds N] [--window-seconds W]
           [--stacks default|sampled|exact] [--sample-period-us T] [--json] [--check]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)

GROUP_MIN_SHARE = 0.01
GROUP_TOLERANCE = 0.05
PROCESS_TOLERANCE = 0.03
DRAIN_MS = 500


def now_ms():
    return int(time.time() * 1000)


def stored_windows(daemon):
    r = daemon.ctl("--json", "windows")
    if r.returncode != 0:
        raise RuntimeError(f"offcpuctl windows failed: {r.stdout} {r.stderr}")
    return [w for w in json.loads(r.stdout)["windows"] if w["capture_id"] == 0]


def wait_stored(daemon, t_ms, timeout):
    """Waits until every block that ended by t_ms is in a stored window: a
    stored always-on window that starts a drain and a margin after t_ms
    (windows are contiguous and stored in order, so every earlier one is
    stored too). Returns the stored windows."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ws = stored_windows(daemon)
        if ws and ws[-1]["start_ms"] >= t_ms + DRAIN_MS + 750:
            return ws
        time.sleep(0.2)
    raise RuntimeError(f"no always-on window started after {t_ms + DRAIN_MS + 750} ms in {timeout} s")


def leaf(row):
    return row["ustack"][-1] if row["ustack"] else "[no user stack]"


def totals(rows, tgids):
    """({(comm, leaf): ns}, {tgid: ns}) of the rows of processes tgids."""
    groups, procs = {}, {}
    for r in rows:
        if r["tgid"] not in tgids:
            continue
        key = (r["comm"], leaf(r))
        groups[key] = groups.get(key, 0) + r["value_ns"]
        procs[r["tgid"]] = procs.get(r["tgid"], 0) + r["value_ns"]
    return groups, procs


def rel(got, want):
    return (got - want) / want if want else (0.0 if not got else float("inf"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--window-seconds", type=int, default=2)
    ap.add_argument("--stacks", choices=["default", "sampled", "exact"], default="default",
                    help="continuous_stacks of the always-on profile (default: the daemon's own default)")
    ap.add_argument("--sample-period-us", type=int)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true", help="exit 1 if a group or process is out of tolerance")
    args = ap.parse_args()
    if not 1 <= args.seconds <= 600:
        ap.error("--seconds wants 1 to 600")
    if not 1 <= args.window_seconds <= 60:
        ap.error("--window-seconds wants 1 to 60")
    bench_env.set_build(args.build)
    config = f"window_seconds = {args.window_seconds}\ndrain_interval_ms = {DRAIN_MS}\n"
    for line, given in ((f"continuous_stacks = {args.stacks}", args.stacks != "default"),
                        (f"sample_period_us = {args.sample_period_us}", args.sample_period_us is not None)):
        if given:
            if not bench_env.daemon_knows(line):
                raise SystemExit(f"sampling_accuracy.py: this offcpud does not accept '{line}' (issue 15 adds it)")
            config += line + "\n"
    workload = os.path.join(os.path.abspath(args.build), "bench", "mixed_workload")

    with bench_env.cleanup():
        daemon = bench_env.daemon(config)
        try:
            # The always-on profile is on once its first window is stored.
            wait_stored(daemon, now_ms() - DRAIN_MS - 750, timeout=args.window_seconds + 30)
            cap = daemon.ctl_popen("--json", "capture", "--seconds", str(args.seconds + 120))
            try:
                daemon.wait_captures(1)
                spawn_ms = now_ms()
                out = subprocess.run([workload, "--seconds", str(args.seconds)], capture_output=True,
                                     text=True, check=True, timeout=args.seconds + 60).stdout
                exit_ms = now_ms()
                time.sleep(2 * DRAIN_MS / 1000)  # the capture's last drain has the last blocks
            finally:
                if cap.poll() is None:
                    cap.send_signal(signal.SIGINT)
                cap_out, cap_err = cap.communicate(timeout=120)
            if cap.returncode != 0:
                raise RuntimeError(f"capture failed with {cap.returncode}: {cap_out} {cap_err}")
            capture = json.loads(cap_out)["capture"]
            info = json.loads(out)
            procs = {info["main_pid"]: "main", **{p["pid"]: p["role"] for p in info["processes"]}}
            wait_stored(daemon, exit_ms, timeout=args.window_seconds + 30)
            from_ms = spawn_ms - 1000 * args.window_seconds - 1000
            r = daemon.ctl("--json", "export", "--from", f"{from_ms / 1000:.3f}",
                           "--pid", ",".join(map(str, procs)))
            if r.returncode != 0:
                raise RuntimeError(f"export failed: {r.stdout} {r.stderr}")
            export = json.loads(r.stdout)["export"]
            status = daemon.status()
        finally:
            daemon.stop()

    want_groups, want_procs = totals(capture["samples"], procs)
    got_groups, got_procs = totals(export["samples"], procs)
    total = sum(want_procs.values())
    if not total:
        raise SystemExit("sampling_accuracy.py: the capture holds no off-CPU time of the workload")
    groups = []
    for key, want in sorted(want_groups.items(), key=lambda kv: -kv[1]):
        if want / total < GROUP_MIN_SHARE:
            continue
        got = got_groups.get(key, 0)
        d = rel(got, want)
        groups.append({"comm": key[0], "leaf": key[1], "share": round(want / total, 4), "exact_ns": want,
                       "always_on_ns": got, "rel_diff": round(d, 4), "ok": abs(d) <= GROUP_TOLERANCE})
    processes = []
    for tgid, role in procs.items():
        want, got = want_procs.get(tgid, 0), got_procs.get(tgid, 0)
        d = rel(got, want)
        processes.append({"pid": tgid, "role": role, "exact_ns": want, "always_on_ns": got,
                          "rel_diff": round(d, 4), "ok": abs(d) <= PROCESS_TOLERANCE})
    report = {
        "seconds": args.seconds, "window_seconds": args.window_seconds, "stacks": args.stacks,
        "sample_period_us": args.sample_period_us,
        "capture": {"id": capture["id"], "duration_ns": capture["duration_ns"], "drops": capture.get("drops", {})},
        "export": {"from_ms": export["from_ms"], "to_ms": export["to_ms"], "windows": export["windows"]},
        "workload_span_ms": [spawn_ms, exit_ms],
        "exact_total_ns": total, "always_on_total_ns": sum(got_procs.values()),
        "groups": groups, "processes": processes,
        "groups_ok": all(g["ok"] for g in groups), "processes_ok": all(p["ok"] for p in processes),
        "daemon_drops": {k: v for k, v in status["counters"].items() if k.startswith("drop_") and v},
    }
    if args.json:
        print(json.dumps(report))
    else:
        print_report(report)
    if args.check and not (report["groups_ok"] and report["processes_ok"]):
        sys.exit(1)


def print_report(rep):
    print(f"mixed workload {rep['seconds']} s; always-on ({rep['stacks']} stacks"
          + (f", T {rep['sample_period_us']} us" if rep["sample_period_us"] is not None else "")
          + f", {rep['window_seconds']} s windows: {rep['export']['windows']} exported) "
          f"vs exact capture {rep['capture']['id']} ({rep['capture']['duration_ns'] / 1e9:.1f} s)")
    print(f"workload off-CPU time: exact {rep['exact_total_ns'] / 1e6:.1f} ms, "
          f"always-on {rep['always_on_total_ns'] / 1e6:.1f} ms")
    print(f"\ngroups >= {GROUP_MIN_SHARE:.0%} of the time (target +-{GROUP_TOLERANCE:.0%}):")
    print(f"{'comm':16} {'leaf user function':40} {'share':>6} {'exact ms':>10} {'always-on ms':>12} {'diff':>8}")
    for g in rep["groups"]:
        print(f"{g['comm']:16} {g['leaf'][:40]:40} {g['share']:6.1%} {g['exact_ns'] / 1e6:10.1f} "
              f"{g['always_on_ns'] / 1e6:12.1f} {g['rel_diff']:+8.2%} {'ok' if g['ok'] else 'OUT'}")
    print(f"\nper process (target +-{PROCESS_TOLERANCE:.0%}):")
    print(f"{'process':16} {'pid':>8} {'exact ms':>10} {'always-on ms':>12} {'diff':>8}")
    for p in rep["processes"]:
        print(f"{p['role']:16} {p['pid']:8d} {p['exact_ns'] / 1e6:10.1f} {p['always_on_ns'] / 1e6:12.1f} "
              f"{p['rel_diff']:+8.2%} {'ok' if p['ok'] else 'OUT'}")
    print(f"\ngroups {'all within' if rep['groups_ok'] else 'NOT all within'} +-{GROUP_TOLERANCE:.0%}; "
          f"processes {'all within' if rep['processes_ok'] else 'NOT all within'} +-{PROCESS_TOLERANCE:.0%}")
    drops = {k: v for k, v in {**rep["capture"]["drops"], **rep["daemon_drops"]}.items() if v}
    print(f"drops: {drops or 'none'}")


if __name__ == "__main__":
    bench_env.run_main(main)
