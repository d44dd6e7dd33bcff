"""What the benches start and must always stop: offcpud (tests/integration's
Daemon fixture, killed if its start fails half-way), bpftrace with a
reference script of bench/bpftrace/, and the tracefs mount bpftrace's
tracepoints need. Also probes for the stack-mode keys of offcpud (issue 15),
so that one bench runs against daemons with and without them.

Use: with bench_env.cleanup(): ... ; every process started through this
module inside it is stopped when the block ends, by an error, Ctrl-C or
SIGTERM included.
"""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
BPFTRACE_DIR = os.path.join(HERE, "bpftrace")
TRACEFS = "/sys/kernel/tracing"

_live = []  # objects with stop(), started and not yet stopped


def set_build(build):
    """Points the test fixtures at build (before offcpu_env is imported)."""
    os.environ["OFFCPU_BUILD_DIR"] = os.path.abspath(build)


class _Terminated(Exception):
    pass


def _on_sigterm(signum, frame):
    raise _Terminated()


@contextlib.contextmanager
def cleanup():
    """Stops every daemon and bpftrace still running when the block exits.
    SIGTERM is turned into an exception so that it unwinds like Ctrl-C."""
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        # A second Ctrl-C or SIGTERM must not stop the stopping.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            while _live:
                try:
                    _live[-1].stop()
                except Exception as e:  # keep stopping the others
                    print(f"bench: stopping {_live[-1]!r}: {e}", file=sys.stderr)
                    if _live:
                        _live.pop()
        finally:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old)


def add_daemon_args(ap, workload):
    """The options of a bench that runs the daemon on a workload, and may
    run another build beside it on the same workload (an A/B in one run):
    --config, --daemon, --beside, --beside-config."""
    ap.add_argument("--config", default="", help="extra offcpud.conf lines (\\n-separated)")
    ap.add_argument("--daemon", help="the offcpud to run (default: the build's), e.g. an older one to compare")
    ap.add_argument("--beside", metavar="OFFCPUD",
                    help=f"run this offcpud too (another build), beside the first on the same {workload}, "
                         "and report both: an A/B in one run")
    ap.add_argument("--beside-config", metavar="LINES",
                    help="extra offcpud.conf lines for the daemon beside (default: --config's): the same "
                         "build beside itself compares two configurations")


def daemon(extra_config="", binary=None):
    """A started offcpud (offcpu_env.Daemon; binary: another build's) registered
    for cleanup; its stop() also removes its temporary directory."""
    from offcpu_env import Daemon

    class BenchDaemon(Daemon):
        def start(self):
            try:
                super().start()
            except BaseException:
                # Daemon.start raises without killing a daemon that did not
                # get ready in time (or on Ctrl-C while waiting).
                if getattr(self, "proc", None) and self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
                raise

        def stop(self):
            # Registered until it is stopped: a signal during the stop leaves
            # it to cleanup() to stop again.
            code = super().stop()
            if self in _live:
                _live.remove(self)
            if code != 0:
                raise RuntimeError(f"offcpud exited with {code}; log: {self.log_path}")
            shutil.rmtree(self.dir, ignore_errors=True)
            return code

        def __repr__(self):
            return f"offcpud ({self.config})"

    d = BenchDaemon(extra_config, binary=binary)
    _live.append(d)
    return d


def tracefs_ready():
    """Mounts tracefs at /sys/kernel/tracing if it is not (bpftrace's
    tracepoint: probes read their formats there; systemd normally mounts it).
    Returns True if this call mounted it."""
    if os.path.isdir(os.path.join(TRACEFS, "events")):
        return False
    r = subprocess.run(["mount", "-t", "tracefs", "tracefs", TRACEFS], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tracefs is not mounted at {TRACEFS} and mounting it failed: {r.stderr.strip()}")
    return True


class Bpftrace:
    """bpftrace running bench/bpftrace/SCRIPT, attached once its BEGIN probe
    printed "ready" (BEGIN fires after every probe is attached). Its output
    (the maps printed at exit) goes to a temporary file."""

    def __init__(self, script, timeout=120):
        if not shutil.which("bpftrace"):
            raise RuntimeError("bpftrace is not installed (scripts/setup.sh installs it)")
        self.script = os.path.join(BPFTRACE_DIR, script)
        self.out = tempfile.NamedTemporaryFile(prefix="bench-bpftrace-", suffix=".out")
        # Its own session: a terminal's Ctrl-C goes to the bench, which then
        # stops bpftrace itself.
        self.proc = subprocess.Popen(["bpftrace", self.script], stdout=self.out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        _live.append(self)
        deadline = time.monotonic() + timeout
        while b"\nready\n" not in b"\n" + self.output():
            if self.proc.poll() is not None:
                raise RuntimeError(f"bpftrace {script} exited with {self.proc.returncode}: "
                                   f"{self.output().decode(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"bpftrace {script} did not attach in {timeout} s")
            time.sleep(0.05)

    def output(self):
        with open(self.out.name, "rb") as f:
            return f.read()

    def stop(self):
        """SIGINT (bpftrace prints its maps and exits), SIGKILL after 60 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        if self in _live:
            _live.remove(self)

    def __repr__(self):
        return f"bpftrace {self.script}"


def prog_stats(pid):
    """{prog id: (run_cnt, run_time_ns)} of the BPF programs process pid holds."""
    stats = {}
    fddir = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fddir):
        try:
            with open(os.path.join(fddir, fd)) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # closed meanwhile
        if "prog_id" in fields and "run_cnt" in fields:
            stats[int(fields["prog_id"])] = (int(fields["run_cnt"]), int(fields["run_time_ns"]))
    return stats


def rss_kib(pid):
    """Resident memory of process pid, KiB (VmRSS); 0 where it has none."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@contextlib.contextmanager
def bpf_stats(on=True):
    """kernel.bpf_stats_enabled = on inside the block, put back after. While
    on, programs' run_cnt and run_time_ns count, and every BPF program on the
    host pays two clock reads per run (offcpud keeps them on only with
    bpf_stats = true; bpftrace never does)."""
    path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(path) as f:
        was = f.read().strip()
    with open(path, "w") as f:
        f.write("1" if on else "0")
    try:
        yield
    finally:
        with open(path, "w") as f:
            f.write(was)


def daemon_knows(config_line):
    """True if offcpud accepts config_line ("key = value"): its config is
    checked before anything is loaded, so a file with that line and then a
    bad one fails at once, naming the bad line if the first passed."""
    from offcpu_env import OFFCPUD

    with tempfile.NamedTemporaryFile("w", prefix="bench-probe-", suffix=".conf") as f:
        f.write(f"{config_line}\nwindow_seconds = 0\n")
        f.flush()
        r = subprocess.run([OFFCPUD, "--config", f.name], capture_output=True, text=True, timeout=30)
    return r.returncode != 0 and f"{f.name}:2:" in r.stderr


def ctl_knows(*capture_args):
    """True if offcpuctl capture takes capture_args (asked of a socket that
    does not exist: a known option fails with "not running", 3, an unknown
    one with bad arguments, 2)."""
    from offcpu_env import OFFCPUCTL, EXIT_NOT_RUNNING

    r = subprocess.run([OFFCPUCTL, "--socket", "/nonexistent/offcpud.sock", "capture", "--seconds", "1",
                        *capture_args], capture_output=True, text=True, timeout=30)
    return r.returncode == EXIT_NOT_RUNNING


def run_main(main):
    """Runs a bench's main(): Ctrl-C and SIGTERM end it with one line (and
    128 + the signal) once cleanup() has stopped what it started."""
    try:
        main()
    except KeyboardInterrupt:
        print("bench: interrupted; every daemon and bpftrace it started is stopped", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)
    except _Terminated:
        print("bench: terminated; every daemon and bpftrace it started is stopped", file=sys.stderr)
        sys.exit(128 + signal.SIGTERM)
