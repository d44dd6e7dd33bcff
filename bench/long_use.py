#!/usr/bin/env python3
"""The always-on daemon's memory in long ordinary use.

bench/churn.py asks what a storm of short processes costs; this asks whether
offcpud's memory (RSS) stays flat over the hours a developer's host runs what
it always runs: a browser, a JVM, Python and Node programs, long-lived ones
beside short runs of the same. A leak, or a cache that keeps what it no longer
needs (unwind tables, kept processes and files, file ids), shows there as a
slope that a churn of tiny programs does not give.

For --seconds (default 420), with offcpud in its default configuration (the
always-on profile), these run side by side:
  - a headless Chromium kept open on a local page whose JavaScript keeps
    working (timers, DOM nodes added and removed, some arithmetic), and every
    --browser-every seconds (default 20) a short Chromium that dumps the
    page's DOM (--virtual-time-budget=2000) and exits;
  - a Java program (single-file launch) whose threads sleep, wait on a
    condition, contend for a lock, allocate and do small work; every 30 s a
    short Java run;
  - a Node program with timers, reads of a file, hashing and a worker
    thread; every 10 s a short `node -e`;
  - a Python program whose threads wait on a Lock and a Condition and sleep;
    every 5 s a short `python3 -c` importing json, socket, sqlite3, decimal.
Chromium, Java or Node missing: that part is left out, and the report says so.

Reported:
  - offcpud's RSS, sampled each second: at the start, at 60, 120 and 300 s
    (when reached), its maximum and at the end, and its growth over the last
    third of the run (least-squares slope, MiB a minute): what is left after
    the warm-up, when every binary's tables are built;
  - offcpud's CPU over the run, in % of one core (as bench/churn.py counts);
  - from `offcpuctl status` at the start and the end: daemon.rss_bytes, the
    unwinder's tables, table_bytes, rows_used and rows_max, processes,
    kept_processes, kept_files, file_ids and evictions, the store's bytes and
    windows, and where the heap goes (daemon.heap_in_use_bytes,
    heap_free_bytes, store_cache_bytes, symbol_cache_bytes) where the daemon
    reports it.

Every process it starts (offcpud, the browsers' children included) is stopped
at the end, on an error, Ctrl-C or SIGTERM too.

With --beside OFFCPUD a second daemon (another build, its own database) runs
at the same time on the same workload, and its RSS and CPU are reported
beside the first's (see bench/churn.py).

Usage: sudo bench/long_use.py [--build DIR] [--seconds N] [--browser-every S]
           [--sample-every S] [--config LINES] [--daemon OFFCPUD]
           [--beside OFFCPUD] [--beside-config LINES] [--json]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)
import churn  # noqa: E402 (its Watch samples RSS and CPU)

CHROMIUM = "/usr/bin/chromium"
NODE = "/usr/bin/node"
PYTHON = churn.PYTHON  # Debian's: a pyenv shim would add its own processes
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu"]
MARKS_S = (60, 120, 300)  # RSS reported at these seconds, when reached
SHORT_TIMEOUT_S = 60  # a short run still there after this is killed

PAGE = """<!doctype html>
<html><head><title>long use</title></head><body><div id="list"></div><script>
// Keeps the renderer busy as an open tab does: timers, DOM churn, arithmetic.
let n = 0;
const list = document.getElementById("list");
setInterval(() => {
  const item = document.createElement("p");
  item.textContent = "item " + (n++) + " " + Math.sqrt(n).toFixed(3);
  list.appendChild(item);
  while (list.childNodes.length > 200) list.removeChild(list.firstChild);
}, 50);
setInterval(() => {
  let s = 0;
  for (let i = 0; i < 50000; i++) s += Math.sin(i) * Math.cos(i);
  document.title = "long use " + s.toFixed(2);
}, 500);
setTimeout(function again() { JSON.parse(JSON.stringify({n, t: Date.now()})); setTimeout(again, 100); }, 100);
</script></body></html>
"""

JAVA_LONG = """import java.util.*;
import java.util.concurrent.locks.*;

// Threads that sleep, wait on a condition, contend for a lock, allocate.
public class LongUse {
    static final ReentrantLock lock = new ReentrantLock();
    static final Condition ready = lock.newCondition();
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 2; i++) {
            new Thread(() -> { while (true) { try { Thread.sleep(100); } catch (InterruptedException e) { return; } } }, "sleeper").start();
            new Thread(() -> {
                while (true) {
                    lock.lock();
                    try { ready.await(); } catch (InterruptedException e) { return; } finally { lock.unlock(); }
                }
            }, "waiter").start();
            new Thread(() -> {
                while (true) {
                    lock.lock();
                    try { List<int[]> l = new ArrayList<>(); for (int k = 0; k < 200; k++) l.add(new int[256]); sink += l.size(); }
                    finally { lock.unlock(); }
                    try { Thread.sleep(20); } catch (InterruptedException e) { return; }
                }
            }, "worker").start();
        }
        while (true) {
            Thread.sleep(250);
            lock.lock();
            try { ready.signalAll(); } finally { lock.unlock(); }
        }
    }
}
"""

JAVA_SHORT = """public class Short {
    public static void main(String[] args) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 10000; i++) b.append(i % 10);
        System.out.println(b.length());
    }
}
"""

NODE_LONG = """const fs = require("fs");
const crypto = require("crypto");
const { Worker } = require("worker_threads");
const file = process.argv[2];
// A worker thread hashing now and then, the main thread reading and hashing
// a file on timers: what a dev server or a build watcher does.
new Worker(`
  const crypto = require("crypto");
  setInterval(() => crypto.createHash("sha256").update(crypto.randomBytes(65536)).digest("hex"), 200);
`, { eval: true });
setInterval(() => crypto.createHash("sha1").update(fs.readFileSync(file)).digest("hex"), 100);
setInterval(() => fs.readFile(file, () => {}), 300);
setInterval(() => JSON.stringify(Array.from({ length: 1000 }, (_, i) => i)), 1000);
"""

NODE_SHORT = "require('crypto').createHash('sha256').update('x'.repeat(1e5)).digest('hex')"

PYTHON_LONG = """import threading, time
lock = threading.Lock()
cond = threading.Condition()
# Threads waiting on a Lock and a Condition and sleeping: a service at rest.
def holder():
    while True:
        with lock:
            time.sleep(0.05)
        time.sleep(0.01)
def contender():
    while True:
        with lock:
            sum(range(1000))
        time.sleep(0.005)  # contends, without burning a core
def waiter():
    while True:
        with cond:
            cond.wait(1.0)
def sleeper():
    while True:
        time.sleep(0.1)
for f in (holder, contender, waiter, waiter, sleeper):
    threading.Thread(target=f, daemon=True).start()
while True:
    time.sleep(0.5)
    with cond:
        cond.notify_all()
"""

PYTHON_SHORT = "import json, socket, sqlite3, decimal; json.dumps([str(decimal.Decimal(1) / 7)])"


def session_pids(sid):
    """The processes of session sid (each program here runs in its own):
    Chromium's helpers stay in it even once their parent is gone."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[3]) == sid:
            pids.append(int(name))
    return pids


def kill_session(proc):
    """SIGKILLs every process of proc's session until none is left; reaps proc."""
    for _ in range(50):
        pids = session_pids(proc.pid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.poll()  # reap the leader, or it stays as a zombie of the session
        time.sleep(0.02)
    proc.wait()


def spawn(argv, workdir):
    """argv in its own session (so that kill_session finds all it starts)."""
    return subprocess.Popen(argv, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def write(workdir, name, text):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def parts(workdir):
    """{name: (long-lived argv, short argv, every seconds)} of the programs
    found here, and {name: why} of those left out."""
    page = "file://" + write(workdir, "page.html", PAGE)
    data = write(workdir, "data.txt", "ordinary use\n" * 4096)
    java = shutil.which("java")
    found, missing = {}, {}
    wanted = {
        "chromium": (CHROMIUM,
                     [CHROMIUM, *CHROMIUM_FLAGS, "--remote-debugging-port=0",
                      "--user-data-dir=" + os.path.join(workdir, "profile"), page],
                     # Its own profile: the long-lived one holds the lock of its own (one short run
                     # at a time, see Workload.tick).
                     [CHROMIUM, *CHROMIUM_FLAGS, "--dump-dom", "--virtual-time-budget=2000",
                      "--user-data-dir=" + os.path.join(workdir, "short-profile"), page], None),
        "java": (java, [java, write(workdir, "LongUse.java", JAVA_LONG)],
                 [java, write(workdir, "Short.java", JAVA_SHORT)], 30),
        "node": (NODE, [NODE, write(workdir, "long_use.js", NODE_LONG), data], [NODE, "-e", NODE_SHORT], 10),
        "python3": (PYTHON, [PYTHON, "-c", PYTHON_LONG], [PYTHON, "-c", PYTHON_SHORT], 5),
    }
    for name, (path, long_argv, short_argv, every) in wanted.items():
        if path and os.access(path, os.X_OK):
            found[name] = (long_argv, short_argv, every)
        else:
            missing[name] = f"{path or name} not found"
    return found, missing


class Workload:
    """The long-lived programs, started at once, and the short runs, started
    by tick() when due; stop() kills them all, whatever they started."""

    def __init__(self, browser_every):
        self.workdir = tempfile.mkdtemp(prefix="offcpu-long-use-")
        self.parts, self.missing = parts(self.workdir)
        self.long = {}  # name: Popen
        self.short = []  # (name, Popen, started)
        self.due = {}  # name: monotonic time of its next short run
        self.every = {name: every or browser_every for name, (_, _, every) in self.parts.items()}
        self.runs = {name: 0 for name in self.parts}
        self.failed = {name: 0 for name in self.parts}
        self.died = {}  # name: exit code of a long-lived program that ended
        bench_env._live.append(self)
        for name, (long_argv, _, _) in self.parts.items():
            self.long[name] = spawn(long_argv, self.workdir)
            self.due[name] = time.monotonic() + self.every[name]

    def tick(self):
        """Reaps and starts short runs; notes a long-lived program that died."""
        now = time.monotonic()
        still = []
        for name, p, started in self.short:
            if p.poll() is None and now - started > SHORT_TIMEOUT_S:
                kill_session(p)
                self.failed[name] += 1
            elif p.poll() is None:
                still.append((name, p, started))
            else:
                kill_session(p)  # whatever it left behind (a browser's helpers)
                self.failed[name] += p.returncode != 0
        self.short = still
        busy = {name for name, _, _ in self.short}
        for name, due in self.due.items():
            # One short run of a kind at a time: a slow one delays the next.
            if now >= due and name not in busy:
                self.short.append((name, spawn(self.parts[name][1], self.workdir), now))
                self.runs[name] += 1
                self.due[name] = now + self.every[name]
        for name, p in self.long.items():
            if name not in self.died and p.poll() is not None:
                self.died[name] = p.returncode

    def stop(self):
        for _, p, _ in self.short:
            kill_session(p)
        self.short = []
        for p in self.long.values():
            kill_session(p)
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self in bench_env._live:
            bench_env._live.remove(self)

    def __repr__(self):
        return f"long-use workload ({', '.join(self.long)})"


STATUS_UNWIND = ("tables", "table_bytes", "rows_used", "rows_max", "processes", "kept_processes",
                 "kept_files", "file_ids", "evictions")


def status_memory(daemon):
    """What status says of offcpud's memory; a field an older build lacks is left out."""
    st = daemon.status()
    unwind = st.get("unwind", {})
    store = st.get("store", {})
    out = {
        "rss_bytes": st.get("daemon", {}).get("rss_bytes"),
        "unwind": {k: unwind[k] for k in STATUS_UNWIND if k in unwind},
        "store": {k: store[k] for k in ("bytes", "windows") if k in store},
    }
    memory = churn.memory_figures(st)
    if memory:
        out["memory"] = memory
    return out


def slope_mib_per_min(series):
    """Least-squares slope of series (KiB, one a second), in MiB a minute."""
    n = len(series)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(series) / n
    cov = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(series))
    var = sum((x - mean_x) ** 2 for x in range(n))
    return cov / var * 60 / 1024


def rss_figures(watch):
    """RSS (KiB) at the start, the marks reached, max and end; the last third's slope."""
    rss = watch.rss  # rss[i]: i seconds into the run
    return {
        "start": rss[0],
        "at_s": {str(s): rss[s] for s in MARKS_S if s < len(rss)},
        "max": max(rss),
        "end": rss[-1],
        "last_third_mib_per_min": round(slope_mib_per_min(rss[len(rss) * 2 // 3:]), 3),
    }


def run(daemon, seconds, browser_every, sample_every, beside=None, progress=True):
    """The workload for seconds next to daemon (and beside); the measurements."""
    status0 = status_memory(daemon)
    watch = churn.Watch(daemon.proc.pid)
    watch_beside = churn.Watch(beside.proc.pid) if beside else None
    work = Workload(browser_every)
    start = time.monotonic()
    tick = start
    while tick + 1 <= start + seconds:
        tick += 1
        time.sleep(max(0, tick - time.monotonic()))
        work.tick()
        watch.sample()
        if beside:
            watch_beside.sample()
        elapsed = len(watch.rss) - 1
        if progress and elapsed % sample_every == 0:
            line = f"  {elapsed:4d} s  RSS {watch.rss[-1] / 1024:.0f} MiB"
            print(line + (f"  (beside {watch_beside.rss[-1] / 1024:.0f} MiB)" if beside else ""), flush=True)
    # Status before the workload stops: what the daemon keeps for it then.
    status1 = status_memory(daemon)
    watch.end()
    if beside:
        watch_beside.end()
    work.stop()
    return {
        "seconds": round(watch.seconds, 1),
        "programs": sorted(work.parts),
        "left_out": work.missing,
        "short_runs": work.runs,
        "short_runs_failed": work.failed,
        "long_lived_died": work.died,
        "daemon_cpu_pct": round(watch.cpu_pct, 2),
        "rss_kib": rss_figures(watch),
        "status_start": status0,
        "status_end": status1,
        "beside": {
            "daemon": beside.binary,
            "daemon_cpu_pct": round(watch_beside.cpu_pct, 2),
            "rss_kib": rss_figures(watch_beside),
        } if beside else None,
    }


def mib(kib):
    return f"{kib / 1024:.1f}"


def print_rss(who, r):
    marks = "".join(f", at {s} s {mib(kib)}" for s, kib in r["at_s"].items())
    print(f"{who} RSS MiB: start {mib(r['start'])}{marks}, max {mib(r['max'])}, end {mib(r['end'])}; "
          f"last third {r['last_third_mib_per_min']:+.3f} MiB/min")


def print_status(when, st):
    rss = st["rss_bytes"]
    print(f"status at {when}: rss {rss / 2**20 if rss is not None else float('nan'):.1f} MiB, "
          f"store {st['store']}")
    print(f"  unwind {st['unwind']}")
    if "memory" in st:
        print("  memory MiB: " + ", ".join(f"{k} {v / 2**20:.1f}" for k, v in st["memory"].items()))


def report(res):
    print(f"long use: {res['seconds']} s of {', '.join(res['programs'])}; short runs {res['short_runs']} "
          f"(failed {res['short_runs_failed']})")
    for name, why in res["left_out"].items():
        print(f"  left out: {name} ({why})")
    for name, code in res["long_lived_died"].items():
        print(f"  the long-lived {name} ended early (exit {code})")
    print(f"offcpud CPU: {res['daemon_cpu_pct']:.2f} % of one core")
    print_rss("offcpud", res["rss_kib"])
    b = res["beside"]
    if b:
        print(f"beside it, on the same workload, {b['daemon']}: CPU {b['daemon_cpu_pct']:.2f} % of one core")
        print_rss("  beside", b["rss_kib"])
    print_status("start", res["status_start"])
    print_status("end", res["status_end"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--seconds", type=int, default=420)
    ap.add_argument("--browser-every", type=int, default=20, metavar="S",
                    help="seconds between short Chromium runs")
    ap.add_argument("--sample-every", type=int, default=30, metavar="S",
                    help="seconds between progress lines (RSS is sampled each second regardless)")
    bench_env.add_daemon_args(ap, "workload")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.seconds < 1 or args.browser_every < 1 or args.sample_every < 1:
        sys.exit("long_use: --seconds, --browser-every and --sample-every must be at least 1")
    bench_env.set_build(os.path.abspath(args.build))
    if args.daemon:
        import offcpu_env
        offcpu_env.OFFCPUD = os.path.abspath(args.daemon)
    with bench_env.cleanup():
        d = bench_env.daemon(args.config.replace("\\n", "\n"))
        beside_config = args.config if args.beside_config is None else args.beside_config
        beside = bench_env.daemon(beside_config.replace("\\n", "\n"), binary=os.path.abspath(args.beside)) \
            if args.beside else None
        res = run(d, args.seconds, args.browser_every, args.sample_every, beside, progress=not args.json)
        d.stop()
        if beside:
            beside.stop()
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        report(res)


if __name__ == "__main__":
    bench_env.run_main(main)
