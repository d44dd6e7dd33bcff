#!/usr/bin/env python3
"""Overhead of the I/O kinds (bio, fileio) on a random-read load.

fio reads 4 KiB blocks at random offsets of a file with the psync engine
(one pread per block), pinned to one CPU, in two loads:
  direct   O_DIRECT: every read is a block request to the disk (bio's cost
           per request, fileio's per syscall, against the device's latency)
  cached   buffered reads of a file in the page cache: no disk, a syscall
           per block (fileio's cost per syscall at its worst)
and, for each load, in these modes, alternating, --runs times each:
  none       no offcpud running: the baseline
  attached   offcpud with continuous = false and no capture yet: its
             scheduler programs are attached, no slot is on, and the I/O
             programs are not loaded (they load on their kind's first capture)
  bio        offcpud (continuous off) with a system-wide --kind bio capture
  fileio     the same with a system-wide --kind fileio capture
  fileio50   the same with --min-us 50: calls faster than 50 us are dropped
             in the kernel before their user stack is walked
Reported: median IOPS per mode and load, the slowdown against the baseline of
the same run, and the extra nanoseconds per I/O. Ratios within one run count;
absolute figures depend on the disk. The file lives in --dir, which must be on
a real disk for the direct load (not tmpfs).

--ios is the direct load's reads per run; the cached load does fifty times as many.

Usage: sudo bench/io_overhead.py [--build DIR] [--dir DIR] [--runs N] [--ios N] [--cpu C] [--json]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

MODES = {"none": None, "attached": [], "bio": ["--kind", "bio"], "fileio": ["--kind", "fileio"],
         "fileio50": ["--kind", "fileio", "--min-us", "50"]}


def run_fio(path, load, ios, cpu):
    """One fio job; returns (IOPS, mean completion latency in ns). The cached
    load does fifty times the reads: they are that much faster."""
    ios = ios * 50 if load == "cached" else ios
    cmd = ["fio", "--name=io_overhead", f"--filename={path}", "--rw=randread", "--bs=4k",
           "--ioengine=psync", f"--number_ios={ios}", "--size=64m", "--randrepeat=0",
           f"--cpus_allowed={cpu}", "--output-format=json", "--invalidate=0",
           f"--direct={1 if load == 'direct' else 0}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    read = json.loads(out)["jobs"][0]["read"]
    return read["iops"], read["clat_ns"]["mean"]


def warm_cache(path, cpu):
    """Lays out the file (fio writes it on first use) and reads all of it,
    so that the cached load finds every block in the page cache."""
    if not os.path.exists(path):
        run_fio(path, "direct", 16, cpu)
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def run_load(paths, load, ios, cpu):
    """The cached load has a file of its own, warmed before each run: other
    processes' memory use may evict it between runs."""
    if load == "cached":
        warm_cache(paths[load], cpu)
    return run_fio(paths[load], load, ios, cpu)


def with_capture(daemon, capture_args, fn):
    cap = daemon.ctl_popen("capture", "--seconds", "3600", "-o", os.devnull, *capture_args)
    try:
        deadline = time.monotonic() + 60  # a kind's first capture loads its programs
        while daemon.status()["captures_running"] < 1:
            if cap.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"capture {capture_args} did not start: {cap.communicate()[1]}")
            time.sleep(0.02)
        return fn()
    finally:
        if cap.poll() is None:
            cap.send_signal(signal.SIGINT)
        cap.communicate(timeout=60)
        while daemon.status()["captures_running"]:
            time.sleep(0.02)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--dir", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ios", type=int, default=20000)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 3:
        ap.error("--runs must be at least 3")
    if not shutil.which("fio"):
        sys.exit("io_overhead: fio is not installed (apt-get install fio)")
    os.environ["OFFCPU_BUILD_DIR"] = os.path.abspath(args.build)
    from offcpu_env import Daemon  # the same daemon fixture as the tests

    loads = ("direct", "cached")
    paths = {load: os.path.join(os.path.abspath(args.dir), f"io_overhead.{os.getpid()}.{load}")
             for load in loads}
    results = {(load, mode): [] for load in loads for mode in MODES}
    status = {}
    try:
        for load in loads:
            warm_cache(paths[load], args.cpu)
        for _ in range(args.runs):
            for load in loads:
                results[(load, "none")].append(run_load(paths, load, args.ios, args.cpu))
            daemon = Daemon("continuous = false\nbpf_stats = true\n")  # ns_per_run below
            try:
                for mode, capture_args in MODES.items():
                    if capture_args is None:
                        continue
                    for load in loads:
                        fn = lambda: run_load(paths, load, args.ios, args.cpu)  # noqa: E731
                        results[(load, mode)].append(with_capture(daemon, capture_args, fn) if capture_args
                                                     else fn())
                status = daemon.status()
            finally:
                daemon.stop()
    finally:
        for path in paths.values():
            if os.path.exists(path):
                os.unlink(path)

    report = {"ios": args.ios, "runs": args.runs, "cpu": args.cpu,
              "bio_tracepoints": status.get("bio_tracepoints", ""),
              "fileio_tracepoints": status.get("fileio_tracepoints", ""), "loads": {}}
    for load in loads:
        base = statistics.median(iops for iops, _ in results[(load, "none")])
        report["loads"][load] = {}
        for mode in MODES:
            iops = statistics.median(i for i, _ in results[(load, mode)])
            report["loads"][load][mode] = {
                "median_iops": round(iops),
                "slowdown_pct": round(100 * (base / iops - 1), 1),
                "extra_ns_per_io": round(1e9 / iops - 1e9 / base),
                "runs_iops": [round(i) for i, _ in results[(load, mode)]],
            }
    report["drops_last_run"] = {k: v for k, v in status.get("counters", {}).items()
                                if k.startswith("drop_") and v}
    # The kernel's own accounting of the I/O programs (bpf_enable_stats), in
    # the last run's daemon: the cost per event, free of the load's noise.
    report["ns_per_run"] = {p["name"]: round(p["run_time_ns"] / p["run_cnt"])
                            for p in status.get("programs", [])
                            if p["name"].startswith(("bio_", "fileio_enter_pread64", "fileio_exit_pread64"))
                            and p.get("run_cnt")}
    if args.json:
        print(json.dumps(report))
        return
    print(f"fio randread 4 KiB psync, {args.ios} direct / {args.ios * 50} cached reads per run on CPU "
          f"{args.cpu}, {args.runs} runs per mode")
    print(f"bio via {report['bio_tracepoints']}; fileio via {report['fileio_tracepoints']}")
    print(f"{'load':7} {'mode':9} {'IOPS':>9} {'slowdown':>9} {'ns/IO':>8}")
    for load, modes in report["loads"].items():
        for mode, r in modes.items():
            print(f"{load:7} {mode:9} {r['median_iops']:9d} {r['slowdown_pct']:8.1f}% {r['extra_ns_per_io']:8d}")
    print(f"drops in the last run's daemon: {report['drops_last_run'] or 'none'}")
    print("BPF run time per event in the last run's daemon (all modes): " +
          ", ".join(f"{name} {ns} ns" for name, ns in report["ns_per_run"].items()))


if __name__ == "__main__":
    main()
