#!/usr/bin/env python3
"""How whole are the stacks of fresh short-lived processes, from their first
block on? (issue 16: "whole stacks from a process's first block ... report
what still falls back")

Fresh processes of tests' short_workload (built -O2 -fomit-frame-pointer,
so frame pointers cannot walk it) run one after another under the always-on
profile, each --threads threads of --naps 1 ms naps, and exit at once: no
start line to wait at, so their first blocks come before user space can
have read their mappings (it reads them some 20 ms after it is asked).
The first process of the run is the first of its binary; later ones map
files whose unwind tables are loaded already.

Reported per --stacks mode (continuous_stacks = sampled and/or exact; the
daemon otherwise default): the share of the processes' off-CPU time, and
of their blocks (samples in sampled mode), whose user stack is whole and
named (from start_thread or __libc_start_main down, no [truncated] or
[unknown] frame), the first process apart from the others; and the
daemon's counters over the run: user stacks walked with frame pointers for
want of tables (ustack_fp_fallback), table walks that stopped short
(ustack_truncated), and mapping lists the kernel side built from a new
process's VMAs (unwind_from_vmas); and the later processes' stacks that are
not whole that hold the most time (--examples).

--busy keeps a busy loop on each CPU while the processes run: the host
whose CPUs are taken, where the daemon's reading of a new binary's tables
competes with the load for a CPU.

--beside-large starts, just before the first process, compilers whose
tables are large and new to the daemon (clang with libLLVM and
libclang-cpp, gcc's cc1, cc1plus and f951: about a second of table builds
on an idle CPU), each waiting on its standard input until the end: the
first process of a new binary then competes with those builds.

--daemon runs another build's offcpud (an A/B of the daemon alone: the
workload and offcpuctl stay the build's).

Usage: sudo bench/first_blocks.py [--build DIR] [--daemon OFFCPUD] [--processes N]
           [--threads N] [--naps N] [--stacks sampled,exact] [--busy]
           [--beside-large] [--examples N] [--json]
"""
import contextlib
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)
import offcpu_env  # noqa: E402 (bench_env puts the tests' helpers on the path)

COUNTERS = ("ustack_fp_fallback", "ustack_truncated", "ustack_table_walks", "unwind_from_vmas")
ROOTS = ("start_thread", "__libc_start_main", "__libc_start_call_main", "_start")


def whole(ustack):
    """Named from a thread's first frame down: [truncated] marks a walk
    that stopped short, [unknown...] a frame that could not be named."""
    return (bool(ustack) and any(f in ROOTS for f in ustack[:3]) and
            not any(f == "[truncated]" or f.startswith("[unknown") or "+0x" in f for f in ustack))


LARGE_PROGRAMS = (
    ["/usr/bin/clang-14", "-x", "c", "-fsyntax-only", "-"],
    ["/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "-quiet"],
    ["/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "-quiet"],
    ["/usr/lib/gcc/x86_64-linux-gnu/12/f951", "-quiet"],
)


@contextlib.contextmanager
def large_programs(on):
    """LARGE_PROGRAMS (those installed) started, each blocked reading its
    standard input, until the block ends; nothing if not on."""
    procs = []
    try:
        for argv in LARGE_PROGRAMS if on else ():
            if os.path.exists(argv[0]):
                procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))
        if on and not procs:
            raise RuntimeError("--beside-large: none of " + ", ".join(a[0] for a in LARGE_PROGRAMS))
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def run_processes(build, args):
    """Runs the processes one after another; returns their pids, in order."""
    pids = []
    for _ in range(args.processes):
        out = subprocess.run([os.path.join(build, "tests", "short_workload"), "--threads",
                              str(args.threads), "--naps", str(args.naps)],
                             capture_output=True, text=True, check=True).stdout
        pids.append(json.loads(out.strip().splitlines()[-1])["pid"])
    return pids


def shares(samples, broken):
    """(whole ns, all ns, whole blocks, all blocks) of these samples; adds
    the others' time to broken, by (comm, user stack)."""
    w_ns = a_ns = w_n = a_n = 0
    for s in samples:
        if s["kind"] != "offcpu":
            continue
        a_ns += s["value_ns"]
        a_n += s["count"]
        if whole(s["ustack"]):
            w_ns += s["value_ns"]
            w_n += s["count"]
        else:
            key = (s["comm"], ";".join(s["ustack"]))
            broken[key] = broken.get(key, 0) + s["value_ns"]
    return w_ns, a_ns, w_n, a_n


def measure(build, args, mode):
    daemon = bench_env.daemon(f"continuous_stacks = {mode}\n", args.daemon)
    try:
        st = daemon.status()
        before, unwind_before = st["counters"], st["unwind"]
        begin = time.time()
        with offcpu_env.cpu_hogs(args.busy), large_programs(args.beside_large):
            pids = run_processes(build, args)
        end = time.time()
        time.sleep(3)  # a drain or two, into a window
        deadline = time.monotonic() + 60
        while True:
            ws = json.loads(daemon.ctl("--json", "windows", "--since", str(begin - 1)).stdout)["windows"]
            if any(w["capture_id"] == 0 and w["end_ms"] >= end * 1000 for w in ws):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("no window after the processes' exit")
            time.sleep(0.5)
        st = daemon.status()
        after, unwind = st["counters"], st["unwind"]
        reads = unwind.get("loader_reads", 0) - unwind_before.get("loader_reads", 0)
        waited = unwind.get("loader_wait_ns_total", 0) - unwind_before.get("loader_wait_ns_total", 0)
        took = unwind.get("loader_read_ns_total", 0) - unwind_before.get("loader_read_ns_total", 0)
        got = {"first": [0, 0, 0, 0], "later": [0, 0, 0, 0]}
        broken = {}  # the later processes' stacks that are not whole
        for i, pid in enumerate(pids):
            r = daemon.ctl("--json", "export", "--from", str(begin - 1), "--to", str(time.time() + 1),
                           "--pid", str(pid))
            if r.returncode:
                raise RuntimeError(f"export failed: {r.stdout}{r.stderr}")
            part = shares(json.loads(r.stdout)["export"]["samples"], broken if i else {})
            got["first" if i == 0 else "later"] = [a + b for a, b in
                                                    zip(got["first" if i == 0 else "later"], part)]
        worst = sorted(broken.items(), key=lambda kv: -kv[1])[:args.examples]
        return {"counters": {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS},
                # where a new process's time to its tables went (since the
                # daemon started: the maxima are not per run)
                "loader_reads": {"reads": reads,
                                 "wait_ms_mean": round(waited / reads / 1e6, 2) if reads else None,
                                 "wait_ms_max": round(unwind.get("loader_wait_ns_max", 0) / 1e6, 2),
                                 "read_ms_mean": round(took / reads / 1e6, 2) if reads else None,
                                 "read_ms_max": round(unwind.get("loader_read_ns_max", 0) / 1e6, 2)},
                "background_builds": unwind.get("background_builds", 0),
                "not_whole": [{"comm": c, "ustack": u, "ns": ns} for (c, u), ns in worst],
                **{k: {"whole_time": round(v[0] / v[1], 4) if v[1] else None,
                       "whole_blocks": round(v[2] / v[3], 4) if v[3] else None,
                       "blocks": v[3]} for k, v in got.items()}}
    finally:
        daemon.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--processes", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--naps", type=int, default=50)
    ap.add_argument("--stacks", default="sampled,exact")
    ap.add_argument("--daemon", help="the offcpud to run (default: the build's), e.g. an older one to compare")
    ap.add_argument("--busy", action="store_true", help="a busy loop on each CPU meanwhile")
    ap.add_argument("--beside-large", action="store_true",
                    help="compilers with large tables new to the daemon started beside the first process")
    ap.add_argument("--examples", type=int, default=3,
                    help="the later processes' stacks that are not whole to show, most time first")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    modes = [m for m in args.stacks.split(",") if m]
    if args.processes < 2 or any(m not in ("sampled", "exact") for m in modes):
        ap.error("--processes wants at least 2; --stacks wants sampled and/or exact")
    bench_env.set_build(args.build)
    report = {"processes": args.processes, "threads": args.threads, "naps": args.naps,
              "busy": args.busy, "beside_large": args.beside_large, "daemon": args.daemon, "modes": {}}
    with bench_env.cleanup():
        for mode in modes:
            report["modes"][mode] = measure(os.path.abspath(args.build), args, mode)
    if args.json:
        print(json.dumps(report))
        return
    print(f"{args.processes} fresh processes of short_workload (no frame pointers), {args.threads} "
          f"threads x {args.naps} naps of 1 ms each, one after another"
          f"{', a busy loop on each CPU' if args.busy else ''}"
          f"{', large compilers started beside the first' if args.beside_large else ''}"
          f"{f', offcpud {args.daemon}' if args.daemon else ''}")
    print(f"{'mode':8} {'processes':9} {'blocks':>7} {'whole time':>10} {'whole blocks':>12}")
    for mode, r in report["modes"].items():
        for which in ("first", "later"):
            x = r[which]
            t = "-" if x["whole_time"] is None else f"{100 * x['whole_time']:.1f}%"
            b = "-" if x["whole_blocks"] is None else f"{100 * x['whole_blocks']:.1f}%"
            print(f"{mode:8} {which:9} {x['blocks']:7d} {t:>10} {b:>12}")
        print(f"{'':8} counters: " + ", ".join(f"{k} {v}" for k, v in r["counters"].items()))
        lr = r["loader_reads"]
        if lr["reads"]:
            print(f"{'':8} reads the loader asked for: {lr['reads']}, waited {lr['wait_ms_mean']} ms "
                  f"on average (at most {lr['wait_ms_max']}), took {lr['read_ms_mean']} ms "
                  f"(at most {lr['read_ms_max']})"
                  + (f"; {r['background_builds']} large tables built apart" if r["background_builds"] else ""))
        for x in r["not_whole"]:
            print(f"{'':8} not whole, {x['ns'] / 1e6:.1f} ms: {x['comm']};{x['ustack'][:160]}")


if __name__ == "__main__":
    bench_env.run_main(main)
