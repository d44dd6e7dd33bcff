#!/usr/bin/env python3
"""What do the stacks of many processes of one binary cost (issue 16)?

N processes of tests/short_workload (built -O2 -fomit-frame-pointer, 4
threads napping 1 ms, every nap in the same two functions) run at once
under the default daemon (the always-on profile, 1 s windows), for N = 2
and N = 50 (--counts). Reported for each N:
  - the kernel's stack map: the most entries one drain found (status
    maps "stacks"): user frames in files with unwind tables are keyed by
    file and ELF address (bpf/offcpu.h, OFFCPU_FRAME_FILE), the same in
    every process (a daemon before that keyed them by each process's
    virtual addresses: every process brought its own copies);
  - the store: stacks (distinct symbolized frame lists, shared by every
    process and window), series (one per thread, state and stack pair: per
    thread by nature) and the bytes of the windows stored meanwhile (as
    offcpuctl windows reports them);
  - the daemon's RSS before and after.
The store keys stacks by their symbolized frames, so 50 processes of one
binary add no stacks there; what grows with N is per thread by nature
(series), and whatever keeps per-process addresses: the first blocks
walked before a process's mappings were known, and frames outside files.

The daemon started here is stopped at the end, on an error, Ctrl-C or
SIGTERM too.

Usage: sudo bench/stack_sharing.py [--build DIR] [--counts 2,50] [--naps N] [--json]
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

import bench_env  # noqa: E402 (after the path is set)


def store_counts(db):
    """(stacks, series) in the store, read through SQLite as offcpuctl's
    offline mode does (the daemon's WAL is read too)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("stacks", "series"))
    finally:
        con.close()


def window_bytes_since(daemon, t0_ms):
    r = daemon.ctl("--json", "windows")
    if r.returncode != 0:
        raise RuntimeError(f"offcpuctl windows failed: {r.stderr.strip()}")
    return sum(w["bytes"] for w in json.loads(r.stdout)["windows"] if w["start_ms"] >= t0_ms)


def run_count(build, daemon, n, naps):
    """Runs n short_workload processes at once; returns the figures."""
    binary = os.path.join(build, "tests", "short_workload")
    stacks_before, series_before = store_counts(daemon.database)
    t0_ms = int(time.time() * 1000)
    rss_before = bench_env.rss_kib(daemon.proc.pid)
    procs = [subprocess.Popen([binary, "--threads", "4", "--naps", str(naps), "--nap-us", "1000"],
                              stdout=subprocess.DEVNULL) for _ in range(n)]
    most = 0
    try:
        while any(p.poll() is None for p in procs):
            st = daemon.status()
            most = max(most, next(m["entries"] for m in st["maps"] if m["name"] == "stacks"))
            time.sleep(0.1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    # Two windows and their drains after the exits: every block is stored.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        st = daemon.status()
        most = max(most, next(m["entries"] for m in st["maps"] if m["name"] == "stacks"))
        time.sleep(0.1)
    stacks_after, series_after = store_counts(daemon.database)
    return {"processes": n, "threads": 4 * n, "kernel_stack_entries_max": most,
            "store_stacks_added": stacks_after - stacks_before,
            "store_series_added": series_after - series_before,
            "window_bytes": window_bytes_since(daemon, t0_ms),
            "rss_kib_before": rss_before, "rss_kib_after": bench_env.rss_kib(daemon.proc.pid)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--counts", default="2,50", help="process counts, comma-separated")
    ap.add_argument("--naps", type=int, default=1500, help="naps of 1 ms per thread")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    bench_env.set_build(args.build)
    results = []
    with bench_env.cleanup():
        daemon = bench_env.daemon("window_seconds = 1\ndrain_interval_ms = 250\n")
        try:
            # Unmeasured: the binary's unwind tables are built at its first run.
            run_count(args.build, daemon, 1, 50)
            for n in counts:
                results.append(run_count(args.build, daemon, n, args.naps))
        finally:
            daemon.stop()
    if args.json:
        print(json.dumps({"naps": args.naps, "results": results}))
        return
    print(f"short_workload x N, 4 threads x {args.naps} naps of 1 ms each, default daemon, 1 s windows")
    print(f"{'N':>4} {'threads':>8} {'kernel stacks/drain':>20} {'store stacks +':>15} "
          f"{'series +':>9} {'window bytes':>13} {'RSS KiB before/after':>22}")
    for r in results:
        print(f"{r['processes']:4d} {r['threads']:8d} {r['kernel_stack_entries_max']:20d} "
              f"{r['store_stacks_added']:15d} {r['store_series_added']:9d} {r['window_bytes']:13d} "
              f"{r['rss_kib_before']:>10d}/{r['rss_kib_after']:<10d}")


if __name__ == "__main__":
    bench_env.run_main(main)
