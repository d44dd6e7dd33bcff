#!/usr/bin/env python3
"""What process churn costs the always-on daemon (issue 16).

For --seconds (default 180), new processes start at --rate (default 65) a
second, of the kinds a busy host runs: shells (sh running a loop and one
command: 2 processes), gcc compiling a small file (gcc, cc1, as: 3),
python3 (1), dd (1) and a thread program (tests/short_workload: 4 threads
napping, built -O2 without frame pointers: 1). Beside them a long-lived
multi-threaded service runs (bench/mixed_workload: pipe ping-pong,
sleepers, mutex waiters, a CPU hog), and offcpud runs with its default
configuration (the always-on profile).

Reported, for the churn's run:
  - offcpud's CPU, in % of one core (utime + stime of /proc/PID/stat), and
    the churn's own (its processes' rusage), in the same run: the ratio is
    the figure that carries to another host; and offcpud's CPU by thread
    name (its unwinder thread apart from the rest);
  - offcpud's RSS and open descriptors at the start, their maximum and at the
    end, sampled each second; at the end its descriptors by kind, and the
    Unix socket pairs with both ends inside offcpud;
  - the unwinder's counters at the start and the end (requests, builds,
    no_room, given_up, evictions) and what proc_files keeps;
  - the share of user frames that are [unknown...] in the always-on windows
    of the run, for the churn's processes and for the service.

Every process it starts (offcpud included) is stopped at the end, on an
error, Ctrl-C or SIGTERM too.

With --llvm N, N more long-lived processes map an LLVM-sized library
(LLVM_LIBRARY, libLLVM: some 100 MiB, its unwind table among the largest
a host has) and block every 50 ms, so their stacks are walked through it:
the unwind rows that table takes are then not there for the churn's.

With --keep-db PATH the daemon's database is copied there at the end, for
bench/store_replay to write its windows again.

With --beside OFFCPUD a second daemon (another build, its own database)
profiles the same churn at the same time, and its CPU and RSS are reported beside
the first's: an A/B that the hour's noise (the same churn cost 33 % of a
core one hour and 46 % the next) moves alike for both. Each daemon also
profiles the other; swap the two between runs to cancel who started first.
With --beside-config the second daemon gets its own configuration lines:
the same build beside itself compares two settings.

Usage: sudo bench/churn.py [--build DIR] [--seconds N] [--rate R] [--config LINES]
           [--daemon OFFCPUD] [--beside OFFCPUD] [--beside-config LINES]
           [--llvm N] [--keep-db PATH] [--json]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_env  # noqa: E402 (after the path is set)

PYTHON = "/usr/bin/python3"  # Debian's: a shim (pyenv) would add its own processes
LLVM_LIBRARY = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1"  # clang's, which the build needs
SMALL_C = """#include <stdio.h>
struct point { int x, y; };
static int dist2(struct point a, struct point b) { return (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y); }
int main(void) { struct point p = { 1, 2 }, q = { 4, 6 }; printf("%d\\n", dist2(p, q)); return 0; }
"""
THREADS = 4
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The steady state is measured from here on: the churn's binaries (gcc's
# cc1 and as, python3, their libraries) have their unwind tables by then.
WARMUP_S = 60


def kinds(build, workdir):
    """(name, processes it starts, argv) of each kind, in the order they are
    started, repeated: 12 processes a round."""
    short = os.path.join(build, "tests", "short_workload")
    src = os.path.join(workdir, "small.c")
    with open(src, "w") as f:
        f.write(SMALL_C)
    sh = ("sh", 2, ["/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do i=$((i+1)); done; /bin/true; :"])
    dd = ("dd", 1, ["dd", "if=/dev/zero", "of=/dev/null", "bs=64k", "count=256", "status=none"])
    thread = ("short_workload", 1, [short, "--threads", str(THREADS), "--naps", "20"])
    return [sh, dd, thread,
            ("python3", 1, [PYTHON, "-c", "import json; json.dumps(list(range(1000)))"]),
            ("gcc", 3, ["gcc", "-O2", "-c", src, "-o", os.path.join(workdir, "small.o")]),
            sh, dd, thread]


def missing(build):
    """Why the churn cannot run here, or None."""
    for path in (os.path.join(build, "tests", "short_workload"), PYTHON, shutil.which("gcc"),
                 shutil.which("dd")):
        if not path or not os.access(path, os.X_OK):
            return f"{path or 'gcc or dd'} is missing"
    return None


class Churn:
    """Starts the kinds in turn at rate processes a second, reaps them as they
    exit; stop() kills what still runs. Counts what it started."""

    def __init__(self, build, rate):
        self.workdir = tempfile.mkdtemp(prefix="offcpu-churn-")
        self.kinds = kinds(build, self.workdir)
        self.rate = rate
        self.running = []
        self.started = {}  # kind: launches
        self.processes = 0  # processes started (a launch's children included)
        self.failed = 0
        self.short_pids = set()  # the thread program's, whose frames must be named
        self.next = 0
        self.due = None
        bench_env._live.append(self)

    def _reap(self):
        still = []
        for p in self.running:
            if p.poll() is None:
                still.append(p)
            elif p.returncode != 0:
                self.failed += 1
        self.running = still

    def run(self, seconds, every_second=lambda: None):
        """Churns for seconds; calls every_second() once a second."""
        start = time.monotonic()
        self.due = start
        tick = start
        while time.monotonic() < start + seconds:
            now = time.monotonic()
            while self.due <= now:
                name, n, argv = self.kinds[self.next % len(self.kinds)]
                self.next += 1
                try:
                    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, cwd=self.workdir)
                except OSError:
                    self.failed += 1
                else:
                    self.running.append(p)
                    if name == "short_workload":
                        self.short_pids.add(p.pid)
                self.started[name] = self.started.get(name, 0) + 1
                self.processes += n
                self.due += n / self.rate
            self._reap()
            if now >= tick + 1:
                tick += 1
                every_second()
            time.sleep(max(0, min(self.due, tick + 1) - time.monotonic()))
        self.finish()

    def finish(self, timeout=60):
        """Waits for what still runs (kills it after timeout)."""
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.05)
        self.stop()

    def stop(self):
        for p in self.running:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.running = []
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self in bench_env._live:
            bench_env._live.remove(self)

    def __repr__(self):
        return f"churn ({len(self.running)} running)"


class Service:
    """bench/mixed_workload for seconds, or None where it is not built."""

    def __init__(self, build, seconds):
        path = os.path.join(build, "bench", "mixed_workload")
        self.proc = subprocess.Popen([path, "--seconds", str(seconds)], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.pids = {self.proc.pid}
        bench_env._live.append(self)

    def children(self):
        """Its processes, as seen now."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                self.pids |= {int(p) for p in f.read().split()}
        except OSError:
            pass
        return self.pids

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()
        if self in bench_env._live:
            bench_env._live.remove(self)

    def __repr__(self):
        return "mixed_workload"


class LlvmHolders:
    """n processes that map LLVM_LIBRARY and block every 50 ms until stopped."""

    CODE = ("import ctypes, sys, time\n"
            "ctypes.CDLL(sys.argv[1])\n"
            "while True:\n"
            "    time.sleep(0.05)\n")

    def __init__(self, n):
        if n and not os.path.exists(LLVM_LIBRARY):
            raise RuntimeError(f"--llvm: {LLVM_LIBRARY} is missing")
        self.procs = [subprocess.Popen([PYTHON, "-c", self.CODE, LLVM_LIBRARY]) for _ in range(n)]
        self.pids = {p.pid for p in self.procs}
        bench_env._live.append(self)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        if self in bench_env._live:
            bench_env._live.remove(self)

    def __repr__(self):
        return f"{len(self.procs)} processes mapping {LLVM_LIBRARY}"


def cpu_ticks(pid):
    """utime + stime of pid, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def thread_ticks(pid):
    """{thread name: utime + stime in clock ticks} of pid's threads (offcpud
    names its unwinder thread; the libuv loop and its workers keep the
    process's name). A thread gone meanwhile is left out."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, _, rest = f.read().rpartition(")")
        except OSError:
            continue
        name, fields = head.partition("(")[2], rest.split()
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out


def threads_pct(ticks0, ticks1, seconds):
    """{thread name: % of one core} between two thread_ticks()."""
    return {name: round(100.0 * (t - ticks0.get(name, 0)) / CLK_TCK / seconds, 2)
            for name, t in sorted(ticks1.items())}


def fd_targets(pid):
    """What each of pid's open descriptors points to (/proc/PID/fd links);
    one closed meanwhile is left out."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            yield os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue


def fd_kinds(pid):
    """{kind: count} of pid's open descriptors: file, socket, pipe, bpf-map,
    bpf-prog, other anon_inode kinds..."""
    out = {}
    for target in fd_targets(pid):
        if target.startswith("/"):
            kind = "file"
        elif target.startswith("anon_inode:"):
            kind = target[len("anon_inode:"):].strip("[]")
        else:
            kind = target.split(":")[0]
        out[kind] = out.get(kind, 0) + 1
    return out


def inner_socket_pairs(pid):
    """Unix socket pairs with both ends held by pid (ss -x: each socket's
    inode and its peer's)."""
    inodes = {int(t[8:-1]) for t in fd_targets(pid) if t.startswith("socket:[")}
    if not shutil.which("ss"):
        return None
    r = subprocess.run(["ss", "-xanH"], capture_output=True, text=True)
    pairs = 0
    for line in r.stdout.splitlines():
        f = line.split()
        # Netid State Recv-Q Send-Q Local Port Peer Port
        if len(f) >= 8 and f[5].isdigit() and f[7].isdigit():
            if int(f[5]) in inodes and int(f[7]) in inodes and int(f[5]) < int(f[7]):
                pairs += 1
    return pairs


class Watch:
    """offcpud's CPU, RSS and descriptors, sampled on each sample() call."""

    def __init__(self, pid):
        self.pid = pid
        self.t0 = time.monotonic()
        self.ticks0 = cpu_ticks(pid)
        self.threads0 = thread_ticks(pid)
        self.rss = [bench_env.rss_kib(pid)]
        self.fds = [len(os.listdir(f"/proc/{pid}/fd"))]

    def sample(self):
        self.rss.append(bench_env.rss_kib(self.pid))
        self.fds.append(len(os.listdir(f"/proc/{self.pid}/fd")))

    def end(self):
        self.sample()
        self.seconds = time.monotonic() - self.t0
        self.ticks1 = cpu_ticks(self.pid)
        self.threads1 = thread_ticks(self.pid)
        self.cpu_pct = 100.0 * (self.ticks1 - self.ticks0) / CLK_TCK / self.seconds
        return self


def unwind_counters(status):
    u = status.get("unwind", {})
    keys = ("requests", "builds", "build_ns_total", "no_room", "given_up", "failed", "evictions", "tables", "processes",
            "kept_processes", "kept_files", "unknown_exited", "unknown_unmapped", "unknown_anonymous",
            "files_opened", "files_known", "adopted")
    return {k: u[k] for k in keys if k in u}


def unknown_share(samples, pids):
    """(unknown user frames, user frames), each weighted by its row's count
    of blocks, of the rows whose process (tgid) is in pids; pids None: all."""
    unknown = total = 0
    for s in samples:
        if pids is not None and s.get("tgid", s["pid"]) not in pids:
            continue
        for f in s.get("ustack", []):
            total += s["count"]
            unknown += s["count"] if f.startswith("[unknown") else 0
    return unknown, total


def export_run(daemon, begin_s, end_s):
    """The always-on windows' rows from begin_s to end_s (unix seconds)."""
    r = daemon.ctl("--json", "export", "--from", f"{begin_s:.3f}", "--to", f"{end_s:.3f}", timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"export failed: {r.stdout} {r.stderr}")
    return json.loads(r.stdout)["export"]["samples"]


def wait_stored(daemon, t_ms, timeout=60):
    """Waits until an always-on window starting a drain after t_ms is stored
    (windows are stored in order: every block that ended by t_ms is in)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = daemon.ctl("--json", "windows")
        if r.returncode == 0 and any(w["capture_id"] == 0 and w["start_ms"] > t_ms + 2000
                                     for w in json.loads(r.stdout)["windows"]):
            return
        time.sleep(0.5)
    raise RuntimeError(f"no window stored after {t_ms} in {timeout} s")


def churn_run(daemon, build, seconds, rate, progress=None, beside=None, llvm=0):
    """Churn next to the service against daemon (and beside, another
    build's daemon profiling the same churn: an A/B without the hour's
    noise); returns the measurements."""
    service = Service(build, seconds + 30)
    holders = LlvmHolders(llvm)
    try:
        time.sleep(1)  # the service's tables are built before the churn
        status0 = daemon.status()
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        begin = time.time()
        watch = Watch(daemon.proc.pid)
        watch_beside = Watch(beside.proc.pid) if beside else None
        fds_by_kind_start = fd_kinds(daemon.proc.pid)
        churn = Churn(build, rate)
        warm = {}

        def every_second():
            watch.sample()
            if beside:
                watch_beside.sample()
            if not warm and seconds >= 2 * WARMUP_S and time.monotonic() - watch.t0 >= WARMUP_S:
                warm.update(t=time.monotonic(), ticks=cpu_ticks(daemon.proc.pid),
                            threads=thread_ticks(daemon.proc.pid),
                            children=resource.getrusage(resource.RUSAGE_CHILDREN))
                if beside:
                    warm.update(beside_ticks=cpu_ticks(beside.proc.pid),
                                beside_threads=thread_ticks(beside.proc.pid))
            service.children()
            if progress:
                progress(watch)

        churn.run(seconds, every_second)
        watch.end()
        if beside:
            watch_beside.end()
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        end = time.time()
        status1 = daemon.status()
        fds_by_kind = fd_kinds(daemon.proc.pid)
        pairs = inner_socket_pairs(daemon.proc.pid)
        service_pids = service.children() | holders.pids
        wait_stored(daemon, int(end * 1000))
        samples = export_run(daemon, begin - 1, time.time())
    finally:
        holders.stop()
        service.stop()
    churn_cpu_s = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
    steady = None
    if warm:
        warm_s = watch.t0 + watch.seconds - warm["t"]  # until the churn's end
        daemon_pct = 100.0 * (watch.ticks1 - warm["ticks"]) / CLK_TCK / warm_s
        c0 = warm["children"]
        churn_pct = 100.0 * ((children1.ru_utime + children1.ru_stime) - (c0.ru_utime + c0.ru_stime)) / warm_s
        steady = {"seconds": round(warm_s, 1), "daemon_cpu_pct": round(daemon_pct, 2),
                  "churn_cpu_pct": round(churn_pct, 1), "daemon_per_churn": round(daemon_pct / churn_pct, 4),
                  "threads_cpu_pct": threads_pct(warm["threads"], watch.threads1, warm_s)}
        if beside:
            pct = 100.0 * (watch_beside.ticks1 - warm["beside_ticks"]) / CLK_TCK / warm_s
            steady["beside_cpu_pct"] = round(pct, 2)
            steady["beside_threads_cpu_pct"] = threads_pct(warm["beside_threads"], watch_beside.threads1, warm_s)
    churn_unknown = unknown_share([s for s in samples if s.get("tgid", s["pid"]) not in service_pids], None)
    return {
        "seconds": round(watch.seconds, 1),
        "rate_asked": rate,
        "llvm_processes": llvm,
        "processes": churn.processes,
        "processes_per_s": round(churn.processes / watch.seconds, 1),
        "launches": churn.started,
        "launches_failed": churn.failed,
        "daemon_cpu_pct": round(watch.cpu_pct, 2),
        "churn_cpu_pct": round(100.0 * churn_cpu_s / watch.seconds, 1),
        "daemon_per_churn": round(watch.cpu_pct / (100.0 * churn_cpu_s / watch.seconds), 4),
        "threads_cpu_pct": threads_pct(watch.threads0, watch.threads1, watch.seconds),
        "beside": {
            "daemon": beside.binary,
            "daemon_cpu_pct": round(watch_beside.cpu_pct, 2),
            "threads_cpu_pct": threads_pct(watch_beside.threads0, watch_beside.threads1, watch.seconds),
            "rss_kib": {"start": watch_beside.rss[0], "max": max(watch_beside.rss),
                        "end": watch_beside.rss[-1]},
        } if beside else None,
        "steady": steady,
        "rss_kib": {"start": watch.rss[0], "max": max(watch.rss), "end": watch.rss[-1]},
        "fds": {"start": watch.fds[0], "max": max(watch.fds), "end": watch.fds[-1]},
        "fds_by_kind_start": fds_by_kind_start,
        "fds_by_kind_end": fds_by_kind,
        "unix_pairs_inside_end": pairs,
        "unwind_start": unwind_counters(status0),
        "unwind_end": unwind_counters(status1),
        "memory_end": memory_figures(status1),
        "unknown_user_frames": {
            "churn": churn_unknown,
            "thread_program": unknown_share(samples, churn.short_pids),
            "service": unknown_share(samples, service_pids),
        },
        "rss_series_kib": watch.rss,
        "fds_series": watch.fds,
        "short_pids": sorted(churn.short_pids),
        "samples": samples,
    }


def share(pair):
    unknown, total = pair
    return f"{100.0 * unknown / total:.1f} % of {total}" if total else "no user frames"


def keep_db(database, path):
    """Copies the daemon's database (its WAL included) to path, with
    SQLite's online backup: the daemon may be writing a window."""
    import sqlite3
    src = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    dst = sqlite3.connect(path)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def memory_figures(status):
    """Where offcpud's memory goes, from its status ({} from builds before
    those figures): the heap in use and free, what its caches and unwind
    tables hold."""
    d = status.get("daemon", {})
    if "heap_in_use_bytes" not in d:
        return {}
    fields = ("heap_in_use_bytes", "heap_free_bytes", "store_cache_bytes", "symbol_cache_bytes")
    out = {k[:-len("_bytes")]: d[k] for k in fields}
    out["unwind_tables"] = status.get("unwind", {}).get("table_bytes", 0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--seconds", type=int, default=180)
    ap.add_argument("--rate", type=float, default=65.0, help="new processes a second")
    bench_env.add_daemon_args(ap, "churn")
    ap.add_argument("--llvm", type=int, default=0, metavar="N",
                    help="N more processes mapping libLLVM, blocking every 50 ms")
    ap.add_argument("--keep-db", metavar="PATH",
                    help="copy the daemon's database here at the end (for bench/store_replay)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    bench_env.set_build(build)
    if args.daemon:
        import offcpu_env
        offcpu_env.OFFCPUD = os.path.abspath(args.daemon)
    why = missing(build)
    if why:
        sys.exit(f"churn: {why}")
    with bench_env.cleanup():
        d = bench_env.daemon(args.config.replace("\\n", "\n"))
        beside_config = args.config if args.beside_config is None else args.beside_config
        beside = bench_env.daemon(beside_config.replace("\\n", "\n"), binary=os.path.abspath(args.beside)) \
            if args.beside else None

        def progress(w):
            if not args.json and len(w.rss) % 30 == 0:
                print(f"  {len(w.rss) - 1:4d} s  RSS {w.rss[-1] / 1024:.0f} MiB  fds {w.fds[-1]}", flush=True)

        res = churn_run(d, build, args.seconds, args.rate, progress, beside, args.llvm)
        if args.keep_db:
            keep_db(d.database, args.keep_db)
        d.stop()
        if beside:
            beside.stop()
    for key in ("samples", "short_pids", "rss_series_kib", "fds_series", "fds_by_kind_start"):
        del res[key]
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print(f"churn: {res['processes']} processes in {res['seconds']} s ({res['processes_per_s']}/s; "
          f"launches {res['launches']}, {res['launches_failed']} failed)"
          f"{f', beside {args.llvm} processes mapping libLLVM' if args.llvm else ''}")
    print(f"CPU, % of one core: offcpud {res['daemon_cpu_pct']:.2f}, the churn itself "
          f"{res['churn_cpu_pct']:.1f}: offcpud / churn = {res['daemon_per_churn']:.3f}")
    if res.get("steady"):
        st = res["steady"]
        print(f"  after the first {WARMUP_S} s (the binaries' tables built), {st['seconds']:.0f} s: offcpud "
              f"{st['daemon_cpu_pct']:.2f}, the churn {st['churn_cpu_pct']:.1f}: {st['daemon_per_churn']:.3f}")
        print(f"  offcpud by thread, % of one core: whole run {res['threads_cpu_pct']}, after the first "
              f"{WARMUP_S} s {st['threads_cpu_pct']}")
    b = res["beside"]
    if b:
        print(f"beside it, on the same churn, {b['daemon']}: {b['daemon_cpu_pct']:.2f} % of one core "
              f"(offcpud / it: {res['daemon_cpu_pct'] / b['daemon_cpu_pct']:.3f}); by thread {b['threads_cpu_pct']}")
        if res.get("steady"):
            st = res["steady"]
            print(f"  after the first {WARMUP_S} s: {st['beside_cpu_pct']:.2f} (offcpud / it: "
                  f"{st['daemon_cpu_pct'] / st['beside_cpu_pct']:.3f}); by thread {st['beside_threads_cpu_pct']}")
    r, f = res["rss_kib"], res["fds"]
    print(f"offcpud RSS MiB: start {r['start'] / 1024:.1f}, max {r['max'] / 1024:.1f}, end {r['end'] / 1024:.1f}")
    if b:
        r = b["rss_kib"]
        print(f"  beside it: start {r['start'] / 1024:.1f}, max {r['max'] / 1024:.1f}, end {r['end'] / 1024:.1f}")
    print(f"offcpud descriptors: start {f['start']}, max {f['max']}, end {f['end']}; at the end "
          f"{res['fds_by_kind_end']}, Unix pairs inside offcpud {res['unix_pairs_inside_end']}")
    u0, u1 = res["unwind_start"], res["unwind_end"]
    build_s = (u1.get("build_ns_total", 0) - u0.get("build_ns_total", 0)) / 1e9
    # Wall time, preemptions included (2 CPUs under the churn): an upper bound
    # on the builds' share of offcpud's CPU, which counts them already.
    print(f"unwind tables built during the churn: {u1['builds'] - u0['builds']} in {build_s:.2f} s of "
          f"wall time ({100 * build_s / res['seconds']:.2f} % of the run; evictions "
          f"{u1['evictions'] - u0['evictions']}, no_room {u1['no_room'] - u0['no_room']}); mappings "
          f"read: {u1.get('files_known', 0) - u0.get('files_known', 0)} known from their maps line, "
          f"{u1.get('files_opened', 0) - u0.get('files_opened', 0)} opened; processes adopted from "
          f"their VMAs, maps unread: {u1.get('adopted', 0) - u0.get('adopted', 0)}")
    print(f"unwind at start: {res['unwind_start']}")
    print(f"unwind at end:   {res['unwind_end']}")
    if res["memory_end"]:
        print("offcpud's memory at the end, MiB: " +
              ", ".join(f"{k} {v / 2**20:.1f}" for k, v in res["memory_end"].items()))
    u = res["unknown_user_frames"]
    print(f"[unknown...] user frames in the windows: churn {share(u['churn'])}, of which the thread "
          f"program {share(u['thread_program'])}; service {share(u['service'])}")


if __name__ == "__main__":
    bench_env.run_main(main)
