#!/usr/bin/env python3
"""What walking user stacks with unwind tables costs, against frame pointers.

bench/pingpong_fp (ping-pong built with frame pointers, so a frame-pointer
walk sees its whole stack) runs pinned to one CPU, alternating, --runs times
in each mode:
  none         no offcpud: the baseline
  fp           offcpud with unwind = fp: the default continuous profile,
               user stacks by the kernel's frame-pointer walk (bpf_get_stack)
  dwarf        offcpud with unwind = dwarf (the default): the same stacks
               walked with .eh_frame tables in BPF
and bench/pingpong (-O2, no frame pointers, as distributions build) with
  dwarf_nofp   unwind = dwarf: only tables can walk it at all
Reported: the extra nanoseconds per context switch of each mode over the
baseline of the same binary, and dwarf / fp. Then the table build time and
size of mariadbd and libc (bench/unwind_tables). Ratios within one run count.

Usage: sudo bench/unwind.py [--build DIR] [--runs N] [--round-trips N] [--cpu C]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from overhead import run_pingpong  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--round-trips", type=int, default=100000)
    ap.add_argument("--cpu", type=int, default=0)
    args = ap.parse_args()
    os.environ["OFFCPU_BUILD_DIR"] = os.path.abspath(args.build)
    from offcpu_env import Daemon

    modes = {"none": [], "none_nofp": [], "fp": [], "dwarf": [], "dwarf_nofp": []}
    walks = {}
    for _ in range(args.runs):
        modes["none"].append(run_pingpong(args.build, args.round_trips, args.cpu, "pingpong_fp"))
        modes["none_nofp"].append(run_pingpong(args.build, args.round_trips, args.cpu, "pingpong"))
        for unwind in ("fp", "dwarf"):
            d = Daemon(f"unwind = {unwind}\n")
            try:
                run_pingpong(args.build, 1000, args.cpu, "pingpong_fp")  # its tables load on first sight
                modes[unwind].append(run_pingpong(args.build, args.round_trips, args.cpu, "pingpong_fp"))
                if unwind == "dwarf":
                    run_pingpong(args.build, 1000, args.cpu, "pingpong")
                    modes["dwarf_nofp"].append(run_pingpong(args.build, args.round_trips, args.cpu, "pingpong"))
                    st = d.status()
                    walks = {k: st["counters"][k] for k in ("ustack_table_walks", "ustack_truncated")}
            finally:
                d.stop()

    def med(mode):
        return statistics.median(ns for ns, _ in modes[mode]), statistics.median(sw for _, sw in modes[mode])

    print(f"pingpong: {args.round_trips} round trips pinned to CPU {args.cpu}, {args.runs} runs per mode")
    print(f"{'mode':11} {'median ms':>10} {'switches':>9} {'ns/switch':>10}")
    extra = {}
    for mode, base in (("none", "none"), ("none_nofp", "none_nofp"), ("fp", "none"), ("dwarf", "none"),
                       ("dwarf_nofp", "none_nofp")):
        ns, sw = med(mode)
        extra[mode] = (ns - med(base)[0]) / sw
        print(f"{mode:11} {ns / 1e6:10.1f} {sw:9.0f} {extra[mode]:10.0f}")
    if extra["fp"] > 0:
        print(f"dwarf / fp per switch (same stacks): {extra['dwarf'] / extra['fp']:.2f}")
    print(f"last dwarf daemon: {walks}")
    files = [f for f in ("/usr/sbin/mariadbd", "/lib/x86_64-linux-gnu/libc.so.6",
                         "/lib/x86_64-linux-gnu/libstdc++.so.6") if os.path.exists(f)]
    subprocess.run([os.path.join(args.build, "bench", "unwind_tables"), *files], check=False)


if __name__ == "__main__":
    main()
