"""Shared fixtures of the integration tests: a real offcpud on a temporary
socket, offcpuctl, and the ground-truth workload.

Everything here runs the real programs; nothing is mocked. The tests need
root (BPF) and the build directory in OFFCPU_BUILD_DIR.
"""
import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BUILD = os.environ.get("OFFCPU_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
OFFCPUD = os.path.join(BUILD, "daemon", "offcpud")
OFFCPUCTL = os.path.join(BUILD, "ctl", "offcpuctl")
WORKLOAD = os.path.join(BUILD, "tests", "offcpu_workload")
REQUEST_LIB = os.path.join(BUILD, "tests", "librequest_workload.so")

# The browser tests' node tools (scripts/setup-tests.sh): headless Chromium through
# playwright-core from tests/integration/node_modules, or the node_modules
# that OFFCPU_NODE_MODULES names (a git worktree has none of its own); node
# finds it through NODE_PATH.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE_MODULES = os.environ.get("OFFCPU_NODE_MODULES",
                              os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_modules"))


@contextlib.contextmanager
def cpu_hogs(on=True):
    """A busy loop on each CPU while the block runs (if on): the host a new
    process's first blocks meet under load."""
    hogs = [subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
            for cpu in (sorted(os.sched_getaffinity(0)) if on else [])]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def fd_ids(pid, key):
    """Ids of the BPF objects (key "prog_id" or "map_id") process pid holds."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids.update(int(line.split()[1]) for line in f if line.startswith(key + ":"))
        except OSError:
            pass
    return ids


def browser_missing():
    """Why node, Chromium and playwright-core cannot drive a page here, or None."""
    if not shutil.which("node"):
        return "node is not installed (the machine image brings it; Debian's is too old)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (scripts/setup-tests.sh installs chromium)"
    if not os.path.isdir(os.path.join(NODE_MODULES, "playwright-core")):
        return (f"{NODE_MODULES} lacks playwright-core (scripts/setup-tests.sh runs npm in "
                "tests/integration; OFFCPU_NODE_MODULES may name another)")
    return None


def node_env():
    """The environment of a node tool that drives the browser."""
    return {**os.environ, "CHROMIUM": CHROMIUM, "NODE_PATH": NODE_MODULES}


# Exit codes of offcpuctl (proto/PROTOCOL.md).
EXIT_USAGE, EXIT_NOT_RUNNING, EXIT_PERMISSION, EXIT_NO_SUCH_PID, EXIT_BUSY = 2, 3, 4, 5, 6


def links_asan(path):
    """True if the program links ASan's runtime (built with -DOFFCPU_SANITIZE=ON)."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    return r.returncode == 0 and "libasan" in r.stdout


# An OFFCPU_SANITIZE build (scripts/test.sh: build-asan): the daemon and
# offcpuctl run under ASan+UBSan, slower, and report to their stderr.
SANITIZED = links_asan(OFFCPUD)


def skip_if_sanitized(what):
    """Skips a timing ground-truth test on an OFFCPU_SANITIZE build, where its
    bound failed in most runs on a 2-CPU machine (the normal build's, only
    under heavy load): the sanitized daemon and offcpuctl take more CPU and
    move the workloads' preemptions and wake-ups. The normal build checks
    these bounds; the ASan run is for memory errors, and reaches the same
    code through the other tests."""
    return unittest.skipIf(SANITIZED, f"ASan build: {what} is timing ground truth, checked by the normal build")


def check_sanitizer_report(text, who):
    """Raises AssertionError if text (a stderr or log) holds an ASan, UBSan or
    LSan report: a report fails the test even where the exit code looks right."""
    for marker in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer"):
        if marker in text:
            raise AssertionError(f"{who}: sanitizer report ({marker!r}):\n{text}")


class CtlPopen(subprocess.Popen):
    """offcpuctl as a child process; communicate() checks its stderr as Daemon.ctl does."""

    def communicate(self, *args, **kw):
        out, err = super().communicate(*args, **kw)
        check_sanitizer_report(err or "", f"offcpuctl {self.args[3:]}")
        return out, err


# Daemons started and not stopped yet: killed when the interpreter exits,
# whatever a test did (one that raised before its try block leaked two
# always-on daemons once, which profiled the machine for the rest of the
# session). SIGTERM (timeout, ctest) exits through atexit too.
_running = set()


def _kill_leftovers():
    for d in list(_running):
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()


atexit.register(_kill_leftovers)
if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


class Daemon:
    """offcpud with its own config, socket and log in a temporary directory."""

    def __init__(self, extra_config="", env=None, wrapper=(), binary=None):
        self.binary = binary or OFFCPUD  # another build's, for a bench's A/B
        self.dir = tempfile.mkdtemp(prefix="offcpud-test-")
        self.socket = os.path.join(self.dir, "offcpud.sock")
        self.config = os.path.join(self.dir, "offcpud.conf")
        self.log_path = os.path.join(self.dir, "offcpud.log")
        self.database = os.path.join(self.dir, "offcpud.db")
        with open(self.config, "w") as f:
            f.write(f"socket_path = {self.socket}\nsocket_mode = 0600\ndatabase = {self.database}\n"
                    f"{extra_config}")
        self.log = open(self.log_path, "w")
        self.env = env
        self.wrapper = list(wrapper)  # a command offcpud runs under: unshare, setpriv...
        self.start()

    def start(self):
        """(Re)starts offcpud on this fixture's config; waits for its socket."""
        if os.path.exists(self.socket):
            os.unlink(self.socket)  # a stale one from a killed daemon would look ready
        if self.log.closed:
            self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([*self.wrapper, self.binary, "--config", self.config], stdout=self.log, stderr=self.log,
                                     env=self.env)
        _running.add(self)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None:
                raise RuntimeError(f"offcpud exited with {self.proc.returncode}: {self.log_text()}")
            if time.monotonic() > deadline:
                # Never leave a daemon behind: the test that fails here
                # gets no chance to stop it.
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("offcpud did not create its socket in 60 s")
            time.sleep(0.05)

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        """SIGTERM; returns the exit code. Raises AssertionError if the log
        holds a sanitizer report (LeakSanitizer's comes at exit)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        _running.discard(self)
        self.log.close()
        check_sanitizer_report(self.log_text(), f"offcpud (log {self.log_path})")
        return self.proc.returncode

    def ctl(self, *args, timeout=120):
        """Runs offcpuctl against this daemon; returns the CompletedProcess.
        Raises AssertionError on a sanitizer report in its stderr."""
        r = subprocess.run([OFFCPUCTL, "--socket", self.socket, *args], capture_output=True,
                           text=True, timeout=timeout)
        check_sanitizer_report(r.stderr, f"offcpuctl {list(args)}")
        return r

    def ctl_popen(self, *args):
        return CtlPopen([OFFCPUCTL, "--socket", self.socket, *args], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)

    def status(self):
        r = self.ctl("--json", "status")
        if r.returncode != 0:
            raise RuntimeError(f"status failed: {r.stdout} {r.stderr}")
        return json.loads(r.stdout)["status"]

    def free_slots(self):
        st = self.status()
        return st["slots_max"] - st["slots_active"]

    def wait_captures(self, n, timeout=60):
        """Waits until n captures are running (a capture counts only blocks
        that begin after it started, so tests start the workload after). The
        first capture of a kind waits for its programs to load: the fileio
        group's 16 took 2-8 s on a busy 2-CPU VM."""
        deadline = time.monotonic() + timeout
        while self.status()["captures_running"] < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {n} captures running after {timeout} s")
            time.sleep(0.02)

    def raw(self, data, lines=1, timeout=10):
        """Sends raw bytes on a fresh connection; returns up to `lines` reply
        objects (fewer if the daemon closes the connection first)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.socket)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon may close on a flood early: its reply is still readable
        out = b""
        try:
            while out.count(b"\n") < lines:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except ConnectionResetError:
            pass
        s.close()
        return [json.loads(line) for line in out.decode().splitlines() if line]


class Workload:
    """offcpu_workload --wait-go: started, held at its start line until go()."""

    def __init__(self, *args, binary=WORKLOAD):
        self.proc = subprocess.Popen([binary, "--wait-go", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", f"workload did not get ready: {line}"
        self.pid = int(line[1])
        self.tids = {}
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                self.tids[f.read().strip()] = int(tid)

    def go(self):
        """Starts the timed phase; returns the ground truth once it is done."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        out, _ = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, f"workload failed: {self.proc.returncode}"
        return {t["name"]: t for t in json.loads(out.strip().splitlines()[-1])["threads"]}

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class HeldProgram:
    """A program that prints "ready", blocks as told once it reads a line
    ("go"), prints "done ..." when its blocks are over and exits when its
    stdin closes (still alive while its stacks are named): the ground-truth
    programs of test_python.py and test_runtimes.py. cwd: where it may
    leave files. A program that hangs is killed after timeout seconds."""

    def __init__(self, argv, cwd=None, timeout=60):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=cwd)
        self.pid = self.proc.pid
        self.watchdog = threading.Timer(timeout, self.proc.kill)
        self.watchdog.start()
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.stop()
            raise RuntimeError(f"{argv}: {line!r} (exit {self.proc.returncode})")

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def done(self):
        """Waits for its "done" line; returns the words after "done"."""
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "done", f"{self.proc.args}: {line}"
        return line[1:]

    def stop(self):
        self.watchdog.cancel()
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.proc.kill()
                self.proc.wait()


def capture_held(daemon, program, *args, seconds=4):
    """A capture of a HeldProgram's process, started before its blocks;
    returns (the capture's reply, what done() returned)."""
    proc = daemon.ctl_popen("--json", "capture", "--pid", str(program.pid), "--seconds", str(seconds), *args)
    try:
        daemon.wait_captures(1)
        program.go()
        done = program.done()
        out, err = proc.communicate(timeout=seconds + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, f"capture failed ({proc.returncode}): {out} {err}"
    return json.loads(out)["capture"], done


# Request workloads (tests/workloads/README.md): the ELF symbol of each one's request
# function and the file that holds it (None: the executable itself).
REQUEST_FUNCTIONS = {
    "request_workload": ("handle_request", None),
    "request_workload_stripped": ("handle_request", None),
    "request_workload_lib": ("lib_handle_request", REQUEST_LIB),
    "request_workload_cpp": ("_ZN3app6Server14handle_requestERNS_7RequestE", None),
    "request_workload_lib_nofp": ("lib_handle_request", os.path.join(BUILD, "tests", "librequest_workload_nofp.so")),
    "request_workload_cpp_nofp": ("_ZN3app6Server14handle_requestERNS_7RequestE", None),
}


class RequestWorkload:
    """A request workload with --wait-go: started, held at its start line until
    go(). `request` is its request function as SYMBOL@BINARY (absolute path),
    for offcpuctl capture --request."""

    def __init__(self, binary_name, *args):
        self.binary = os.path.abspath(os.path.join(BUILD, "tests", binary_name))
        symbol, path = REQUEST_FUNCTIONS[binary_name]
        self.request = f"{symbol}@{os.path.abspath(path) if path else self.binary}"
        self.proc = subprocess.Popen([self.binary, "--wait-go", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", f"request workload did not get ready: {line}"
        self.pid = int(line[1])
        self.tids = {}
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                self.tids[f.read().strip()] = int(tid)

    def go(self):
        """Starts the timed phase; returns the ground truth once it is done:
        {thread name: {"tid", "requests", "in_request_blocked_ns",
        "request_wall_ns", "outside_blocked_ns", ...}}."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        out, _ = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, f"request workload failed: {self.proc.returncode}"
        return {t["name"]: t for t in json.loads(out.strip().splitlines()[-1])["threads"]}

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def parse_folded(text):
    """Folded lines -> list of (frames, value); asserts each line's shape."""
    rows = []
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        assert stack and value.isdigit(), f"malformed folded line: {line!r}"
        rows.append((stack.split(";"), int(value)))
    return rows
