#!/usr/bin/env python3
"""Start to serving: the time from launching offcpud to its socket answering
`offcpuctl status`, the median of --runs starts.

Each start uses a fresh config, socket and database in a temporary
directory (the default config otherwise: continuous offcpu profile). With
several --build directories the builds start in turn, so that a before and
an after are measured in the same run, under the same load.

Usage: sudo bench/start_time.py [--build DIR]... [--runs N] [--config-extra TEXT] [--json]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def binaries(build):
    """offcpud and offcpuctl of a build directory, or of a flat directory holding both."""
    for d, c in ((os.path.join(build, "daemon", "offcpud"), os.path.join(build, "ctl", "offcpuctl")),
                 (os.path.join(build, "offcpud"), os.path.join(build, "offcpuctl"))):
        if os.access(d, os.X_OK) and os.access(c, os.X_OK):
            return d, c
    sys.exit(f"start_time: no offcpud and offcpuctl under {build}")


def start_once(offcpud, offcpuctl, extra, timeout=60):
    """Seconds from launch to the first successful status."""
    tmp = tempfile.mkdtemp(prefix="offcpud-start-")
    sock = os.path.join(tmp, "offcpud.sock")
    conf = os.path.join(tmp, "offcpud.conf")
    with open(conf, "w") as f:
        f.write(f"socket_path = {sock}\nsocket_mode = 0600\ndatabase = {tmp}/offcpud.db\n{extra}")
    log = open(os.path.join(tmp, "offcpud.log"), "w")
    t0 = time.monotonic()
    proc = subprocess.Popen([offcpud, "--config", conf], stdout=log, stderr=log)
    try:
        while True:
            if proc.poll() is not None:
                log.close()
                with open(os.path.join(tmp, "offcpud.log")) as f:
                    sys.exit(f"start_time: offcpud exited with {proc.returncode}: {f.read()}")
            if os.path.exists(sock):
                r = subprocess.run([offcpuctl, "--socket", sock, "status"], capture_output=True)
                if r.returncode == 0:
                    return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                sys.exit(f"start_time: offcpud did not serve in {timeout} s")
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", help="build directory (repeat to compare; default: build)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--config-extra", default="", help="lines added to each start's offcpud.conf")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    builds = args.build or [os.path.join(HERE, "..", "build")]
    bins = [binaries(b) for b in builds]
    times = {b: [] for b in builds}
    for _ in range(args.runs):
        for b, (d, c) in zip(builds, bins):
            times[b].append(start_once(d, c, args.config_extra.replace("\\n", "\n")))
    result = {b: {"median_s": statistics.median(t), "runs_s": t} for b, t in times.items()}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for b, r in result.items():
            print(f"{b}: start to serving {r['median_s']:.2f} s median of {len(r['runs_s'])} "
                  f"({', '.join(f'{t:.2f}' for t in r['runs_s'])})")


if __name__ == "__main__":
    main()
