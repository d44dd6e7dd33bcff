"""CPython's own frames in off-CPU stacks (bpf/python.bpf.h), against the
ground truth of py_blocker.py in each CPython this host has (pyenv's 3.10
to 3.13, Debian's 3.11): each blocking function by its qualified name,
file and line, in place of the interpreter's _PyEval_EvalFrameDefault,
above the native frames that block and below the thread's start, with its
time within TOLERANCE. Also: 3.12's perf trampolines, a process started
during a capture, an always-on window, the export formats, a version the
walk does not know, a corrupt frame chain, and the switch that turns it
off."""
import gzip
import json
import os
import re
import signal
import subprocess
import time
import unittest

from offcpu_env import Daemon, HeldProgram, capture_held
from test_daemon import TOLERANCE
from test_windows import export_json, now_ms, wait_stored, windows

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCKER = os.path.join(HERE, "py_blocker.py")
PYENV = "/root/.pyenv/versions"
INTERPRETERS = {
    "3.10": f"{PYENV}/3.10.13/bin/python3.10",
    "3.11": f"{PYENV}/3.11.7/bin/python3.11",
    "3.12": f"{PYENV}/3.12.1/bin/python3.12",
    "3.13": f"{PYENV}/3.13.0/bin/python3.13",
    "3.11-debian": "/usr/bin/python3.11",
}
UNKNOWN_VERSION = f"{PYENV}/3.9.18/bin/python3.9"
FAST = "window_seconds = 1\ndrain_interval_ms = 250\n"


def blocker_lines():
    """The line of each "# blocks: NAME" of py_blocker.py."""
    with open(BLOCKER) as f:
        return {m.group(1): n for n, line in enumerate(f, 1)
                if (m := re.search(r"# blocks: (\w+)", line))}


def truth_ns(version):
    """py_blocker's blocks, by function: (nanoseconds, the libc call that
    blocks; 3.10's time.sleep is a select())."""
    return {"nap": (1.0e9, "select" if version == "3.10" else "clock_nanosleep"),
            "wait_lock": (1.5e9, None), "read_peer": (2.0e9, "recv")}


def qualname(version, func):
    """3.10 has no co_qualname: the plain name there."""
    if version == "3.10":
        return func
    return {"nap": "nap", "wait_lock": "Waiter.wait_lock", "read_peer": "Peer.read_peer"}[func]


def Blocker(python, *flags):
    """py_blocker.py under one interpreter, held at its start."""
    return HeldProgram([python, *flags, BLOCKER])


def python_stacks(samples, pid, frame):
    """The user stacks of pid's samples with a frame that starts with frame."""
    return [s for s in samples if s["tgid"] == pid and any(f.startswith(frame) for f in s["ustack"])]


def capture(daemon, blocker, *args):
    return capture_held(daemon, blocker, "-U", "--lines", *args)[0]


class PythonFramesTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(FAST)
        cls.lines = blocker_lines()

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def tearDown(self):
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())

    def python(self, version):
        path = INTERPRETERS[version]
        if not os.access(path, os.X_OK):
            self.skipTest(f"skipped: no CPython {version} here ({path})")
        return path

    def assert_ground_truth(self, version, samples, pid, whole=True):
        """Each blocking function, named with its line, in place of the eval
        loop, between the thread's start and the native frames that block,
        with its time. whole=False: the native walk may have stopped early
        (a library loaded after the process's tables were read: its first
        walks), the Python frames then at the root."""
        for func, (want_ns, libc) in truth_ns(version).items():
            frame = f"{qualname(version, func)} (py_blocker.py:{self.lines[func]})"
            stacks = python_stacks(samples, pid, frame)
            got = sum(s["value_ns"] for s in stacks)
            self.assertAlmostEqual(got / want_ns, 1.0, delta=TOLERANCE,
                                   msg=f"{version} {func}: {got} ns, want {want_ns:.0f}: {stacks}")
            longest = max(stacks, key=lambda s: s["value_ns"])["ustack"]
            at = next(i for i, f in enumerate(longest) if f.startswith(frame))
            above, below = longest[:at], longest[at + 1:]
            self.assertTrue(any(f.startswith("start_thread") for f in above) or
                            (not whole and above[0] == "[truncated]"), longest)
            self.assertTrue(any(re.match(r"(Thread\.)?run \(threading\.py:\d+\)$", f) for f in above),
                            longest)
            self.assertFalse(any(f.startswith("_PyEval_EvalFrameDefault") for f in longest), longest)
            self.assertFalse(any(f.startswith("[python:") for f in longest), longest)
            self.assertTrue(below, f"no native frames under {frame}: {longest}")
            if libc:
                self.assertTrue(any(f.startswith(libc) for f in below), longest)

    def check_version(self, version, *flags):
        b = Blocker(self.python(version), *flags)
        try:
            cap = capture(self.daemon, b)
        finally:
            b.stop()
            perf_map = f"/tmp/perf-{b.pid}.map"  # -X perf leaves its map behind
            if os.path.exists(perf_map):
                os.unlink(perf_map)
        self.assert_ground_truth(version, cap["samples"], b.pid)

    def test_3_10(self):
        self.check_version("3.10")

    def test_3_11(self):
        self.check_version("3.11")

    def test_3_12(self):
        self.check_version("3.12")

    def test_3_13(self):
        self.check_version("3.13")

    def test_3_11_debian(self):
        """Debian's stripped interpreter: the layout from its own symbols."""
        self.check_version("3.11-debian")

    def test_perf_trampolines(self):
        """3.12 with -X perf: each eval loop called through a trampoline
        in anonymous memory without CFI or frame pointer, walked through
        all the same; the trampolines' perf-map names ("py::") left out
        where the frames they stand for are."""
        self.check_version("3.12", "-X", "perf")

    def test_new_process(self):
        """A process started during a system-wide capture: Python frames
        from its first blocks, and whole stacks through the library its
        imports dlopen'ed (the socket module's) a moment before: the loader
        asks for the process's mappings again at once, where a walk that
        meets the library's code would wait up to a second to ask."""
        python = self.python("3.12")
        d = self.daemon
        proc = d.ctl_popen("--json", "capture", "--seconds", "4", "-U", "--lines", "--comm", "python3.12")
        try:
            d.wait_captures(1)
            b = Blocker(python)
            try:
                time.sleep(0.3)  # the read after the dlopen, with room to spare under load
                b.go()
                b.done()
                out, err = proc.communicate(timeout=40)
            finally:
                b.stop()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 0, err)
        self.assert_ground_truth("3.12", json.loads(out)["capture"]["samples"], b.pid)

    def test_always_on_windows(self):
        """The always-on profile's sampled windows: blocks longer than the
        sample period are all sampled, and their parts in each window are
        walked by the in-progress pass from outside the thread."""
        python = self.python("3.12")
        d = self.daemon
        b = Blocker(python)
        try:
            begin = now_ms()
            b.go()
            b.done()
            wait_stored(d, now_ms())
        finally:
            b.stop()
        exp = export_json(d, "--from", str(begin / 1000 - 2), "--to", str(now_ms() / 1000 + 1),
                          "--pid", str(b.pid), "--lines")
        self.assert_ground_truth("3.12", exp["samples"], b.pid, whole=False)

    def test_formats(self):
        """The spliced names in every output: folded, SVG, speedscope, pprof."""
        python = self.python("3.11")
        d = self.daemon
        b = Blocker(python)
        try:
            capture(d, b)
        finally:
            b.stop()
        cap_id = max(w["capture_id"] for w in windows(d))
        name = "Waiter.wait_lock"
        for fmt in ("folded", "svg", "speedscope"):
            r = d.ctl("export", "--capture", str(cap_id), "--format", fmt)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(name, r.stdout, fmt)
            self.assertNotIn("_PyEval_EvalFrameDefault", r.stdout, fmt)
        out = os.path.join(d.dir, "python.pb.gz")
        r = d.ctl("export", "--capture", str(cap_id), "--format", "pprof", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with gzip.open(out) as f:
            self.assertIn(name.encode(), f.read())

    def test_unknown_version(self):
        """3.9: native frames as before, and status says why."""
        if not os.access(UNKNOWN_VERSION, os.X_OK):
            self.skipTest(f"skipped: no CPython 3.9 here ({UNKNOWN_VERSION})")
        b = Blocker(UNKNOWN_VERSION)
        try:
            cap = capture(self.daemon, b)
        finally:
            b.stop()
        stacks = [s["ustack"] for s in cap["samples"] if s["tgid"] == b.pid]
        self.assertTrue(any(any(f.startswith("_PyEval_EvalFrameDefault") for f in s) for s in stacks),
                        stacks)
        self.assertFalse(any(any(f.startswith(("nap (", "[python:")) for f in s) for s in stacks), stacks)
        u = self.daemon.status()["unwind"]
        self.assertGreater(u["python_unsupported"], 0, u)
        self.assertTrue(u["python_unsupported_what"].startswith("3.9"), u)
        r = self.daemon.ctl("status")
        self.assertIn("native frames only for", r.stdout)

    def test_corrupt_chain(self):
        """A frame chain made to loop: the walk stops and says why; the
        native stack stays; nothing else suffers. (3.10: its frames are
        objects Python code can reach.)"""
        python = self.python("3.10")
        script = ("import ctypes, sys, time\n"
                  "def looped():\n"
                  "    f = sys._getframe()\n"
                  "    ctypes.c_void_p.from_address(id(f) + 24).value = id(f)\n"  # f_back = f
                  "    print('ready', flush=True)\n"
                  "    time.sleep(30)\n"
                  "looped()\n")
        proc = subprocess.Popen([python, "-c", script], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(proc.stdout.readline().strip(), "ready")
            r = self.daemon.ctl("--json", "blocked", "--pid", str(proc.pid))
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            proc.send_signal(signal.SIGKILL)  # its frames cannot be freed
            proc.wait()
        threads = json.loads(r.stdout)["blocked"]["threads"]
        stacks = [t["ustack"] for t in threads]
        self.assertTrue(any("[python: frame chain loops]" in s for s in stacks), stacks)
        self.assertTrue(any(any(f.startswith("select") for f in s) for s in stacks), stacks)
        self.assertIsNone(self.daemon.proc.poll())


class PythonFramesOffTest(unittest.TestCase):
    def test_off(self):
        """python_frames = false: the interpreter's native frames, as before."""
        python = INTERPRETERS["3.12"]
        if not os.access(python, os.X_OK):
            self.skipTest(f"skipped: no CPython 3.12 here ({python})")
        d = Daemon("python_frames = false\ncontinuous = false\n")
        try:
            self.assertFalse(d.status()["unwind"]["python_frames"])
            b = Blocker(python)
            try:
                cap = capture(d, b)
            finally:
                b.stop()
            stacks = [s["ustack"] for s in cap["samples"] if s["tgid"] == b.pid]
            self.assertTrue(any(any(f.startswith("_PyEval_EvalFrameDefault") for f in s) for s in stacks))
            self.assertFalse(any(any(" (py_blocker.py:" in f for f in s) for s in stacks), stacks)
            self.assertIn("python frames: off", d.ctl("status").stdout)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())


if __name__ == "__main__":
    unittest.main()
