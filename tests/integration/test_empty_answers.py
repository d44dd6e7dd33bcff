"""No empty answer without a reason (issue 37): every empty capture or
export says why, as an "offcpuctl: note:" line and as the reply's "notes";
a pid that is a thread is refused (capture) or named (export); an export
of a capture takes the capture's kind; windows lists each capture's kind
and targets; frames the daemon could not name ([unknown: anonymous] JIT
code, [truncated] roots) get a note saying what to do."""
import json
import os
import re
import subprocess
import time
import unittest

from offcpu_env import BUILD, Daemon, Workload, browser_missing, node_env
from test_serve import Server

FAST = "window_seconds = 1\ndrain_interval_ms = 250\n"
HERE = os.path.dirname(os.path.abspath(__file__))
NOFP_WORKLOAD = os.path.join(BUILD, "tests", "offcpu_workload_nofp")
JIT_WORKLOAD = os.path.join(BUILD, "tests", "jit_workload")


def notes(stderr):
    return [line[len("offcpuctl: note: "):] for line in stderr.splitlines()
            if line.startswith("offcpuctl: note: ")]


def why(notes):
    """The notes but those on frames the daemon could not name: whole-system
    windows may hold enough [truncated] or JIT time for those to come too."""
    return [n for n in notes if not re.match(r"(Note: )?[0-9]+% of the time ", n)]


def stored_windows(daemon):
    r = daemon.ctl("--json", "windows")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["windows"]


def wait_windows(daemon, n, timeout=20):
    """The continuous windows once n of them are stored."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ws = [w for w in stored_windows(daemon) if w["capture_id"] == 0]
        if len(ws) >= n:
            return ws
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} windows stored in {timeout} s")


class ThreadedProcess:
    """A python3 process with a second thread; pid and tid known."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["python3", "-c", "import sys, threading, time\n"
             "t = threading.Thread(target=lambda: time.sleep(600), daemon=True)\n"
             "t.start()\n"
             "print(t.native_id, flush=True)\n"
             "sys.stdin.read()\n"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.tid = int(self.proc.stdout.readline())

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class EmptyAnswersTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(FAST)
        try:
            cls.stored = wait_windows(cls.daemon, 2)
        except BaseException:
            cls.daemon.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def windows(self):
        return stored_windows(self.daemon)

    def stored_range(self):
        """--from and --to of the first stored windows, and how many start there."""
        ws = self.stored[:2]
        return ["--from", "%.3f" % (ws[0]["start_ms"] / 1000), "--to",
                "%.3f" % ((ws[-1]["start_ms"] + 1) / 1000)], len(ws)

    def capture(self, *args):
        r = self.daemon.ctl("--json", "capture", "--seconds", "1", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["capture"]

    # ---- a pid that is a thread ----

    def test_capture_pid_of_a_thread_is_refused(self):
        p = ThreadedProcess()
        try:
            r = self.daemon.ctl("capture", "--pid", str(p.tid), "--seconds", "1")
        finally:
            p.stop()
        self.assertEqual(r.returncode, 5, r.stderr)  # EXIT_NO_SUCH_PID: no process of that pid
        self.assertEqual(r.stderr, f"offcpuctl: pid {p.tid} is a thread of process {p.pid}, not a "
                                   f"process: give --tid {p.tid} for that thread, or --pid {p.pid} "
                                   "for its process\n")
        self.assertEqual(r.stdout, "")

    def test_export_pid_of_a_thread_names_its_process(self):
        p = ThreadedProcess()
        try:
            rng, _ = self.stored_range()
            r = self.daemon.ctl("export", *rng, "--pid", str(p.tid))
            j = self.daemon.ctl("--json", "export", *rng, "--pid", str(p.tid), "--format", "json")
        finally:
            p.stop()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        want = (f"--pid {p.tid} is a thread of process {p.pid}: stored stacks are kept by process; "
                f"use --pid {p.pid}")
        self.assertEqual(notes(r.stderr), [want])
        self.assertEqual(json.loads(j.stdout)["export"]["notes"], [want])

    # ---- an export of a capture of another kind ----

    def test_export_of_a_capture_takes_its_kind(self):
        cap = self.capture("--kind", "wakeup", "--format", "json")
        self.assertTrue(cap["samples"])
        r = self.daemon.ctl("export", "--capture", str(cap["id"]))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout, r.stderr)
        self.assertEqual(why(notes(r.stderr)), [])
        j = json.loads(self.daemon.ctl("--json", "export", "--capture", str(cap["id"])).stdout)
        self.assertEqual(j["export"]["kind"], "wakeup")
        self.assertEqual(why(j["export"].get("notes", [])), [])

        r = self.daemon.ctl("export", "--capture", str(cap["id"]), "--kind", "offcpu")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(notes(r.stderr), [
            f"capture {cap['id']} recorded wakeup, not offcpu: leave out --kind (an export of a "
            "capture takes its kind) or give --kind wakeup"])

    # ---- a kind the always-on profile does not record ----

    def test_kind_not_recorded_names_the_setting(self):
        rng, _ = self.stored_range()
        r = self.daemon.ctl("export", *rng, "--kind", "wakeup")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        want = ("the always-on profile records offcpu and runq; add wakeup to continuous_kinds in "
                f"{self.daemon.config} to record it")
        self.assertEqual(notes(r.stderr), [want])
        j = self.daemon.ctl("--json", "export", *rng, "--kind", "wakeup", "--format", "json")
        self.assertEqual(json.loads(j.stdout)["export"]["notes"], [want])
        # An svg of it has nothing to draw: the error says why.
        r = self.daemon.ctl("export", *rng, "--kind", "wakeup", "--svg")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr, f"offcpuctl: nothing to draw: {want}\n")

    # ---- a baseline from before the first window ----

    def test_baseline_before_the_first_window(self):
        rng, _ = self.stored_range()
        r = self.daemon.ctl("export", *rng, "--diff-against", "2020-01-01T00:00:00Z..2020-01-02T00:00:00Z")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout)
        self.assertEqual(why(notes(r.stderr)), ["no stored window matches the baseline; everything shows as new"])

    def test_no_window_in_range(self):
        r = self.daemon.ctl("export", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-02T00:00:00Z")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(notes(r.stderr), ["no stored window starts in that range"])
        r = self.daemon.ctl("export", "--capture", "999999")
        self.assertEqual(notes(r.stderr), ["no window of capture 999999 is stored"])

    # ---- filters that matched nothing ----

    def test_export_filters_matched_nothing(self):
        rng, n = self.stored_range()
        r = self.daemon.ctl("export", *rng, "--comm", "no-such-comm", "--grep", "a b")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(notes(r.stderr), [f"{n} windows matched, but no stack passed the filters: "
                                           "--comm no-such-comm --grep 'a b'"])

    def test_capture_filters_matched_nothing(self):
        r = self.daemon.ctl("capture", "--seconds", "1", "--comm", "no-such-comm")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        got = notes(r.stderr)
        self.assertEqual(len(got), 1, r.stderr)
        self.assertRegex(got[0], r"^[0-9]+ stacks were recorded, but none passed the filters: "
                                 r"--comm no-such-comm$")

    # ---- windows lists captures' kinds and targets ----

    def test_windows_shows_captures_kind_and_targets(self):
        p = ThreadedProcess()
        try:
            cap = self.capture("--kind", "runq", "--pid", str(p.pid), "--comm", "python3")
        finally:
            p.stop()
        mine = [w for w in self.windows() if w["capture_id"] == cap["id"]]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["kind"], "runq")
        self.assertEqual(mine[0]["targets"], f"pid {p.pid}; comm python3")
        self.assertTrue(all("kind" not in w for w in self.windows() if w["capture_id"] == 0))
        r = self.daemon.ctl("windows")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.splitlines()[0], r"^START +END +DURATION +CAPTURE +KIND +STACKS +SAMPLES +"
                                                   r"BYTES +TARGETS$")
        line = [ln for ln in r.stdout.splitlines() if re.search(rf"\s{cap['id']}\s+runq\s", ln)]
        self.assertEqual(len(line), 1, r.stdout)
        self.assertTrue(line[0].endswith(f"  pid {p.pid}; comm python3"), line[0])
        self.assertTrue(any(re.search(r"\scontinuous\s+-\s.*  all$", ln) for ln in r.stdout.splitlines()),
                        r.stdout)


class ServeNotesTest(unittest.TestCase):
    """The web UI says what the CLI says: the daemon's notes under the graph."""

    def test_page_shows_why_a_graph_is_empty(self):
        missing = browser_missing()
        if missing:
            self.skipTest(missing)
        d = Daemon(FAST)
        server = None
        try:
            ws = wait_windows(d, 2)
            sel = "%.3f..%.3f" % (ws[0]["start_ms"] / 1000, ws[1]["end_ms"] / 1000)
            server = Server(d.socket, "--listen", "127.0.0.1:0")
            page = f"{server.url}?window=custom&from={ws[0]['start_ms'] / 1000:.3f}&to={ws[1]['end_ms'] / 1000:.3f}"
            urls = [f"{page}&sel={sel}&kind=wakeup",
                    f"{page}&sel={sel}&base=1577836800.000..1577923200.000"]
            p = subprocess.run(["node", os.path.join(HERE, "serve_notes_browser.js"), *urls],
                               capture_output=True, text=True, timeout=300, env=node_env())
        finally:
            if server:
                self.assertEqual(server.stop(), 0)
            d.stop()
        self.assertEqual(p.returncode, 0, f"serve_notes_browser.js failed: {p.stderr}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        # The empty graph's svg is the API's no_data answer (HTTP 404), which
        # Chromium logs; nothing else.
        self.assertEqual(res["errors"], ["Failed to load resource: the server responded with a status of 404 "
                                         "(Not Found)"], "no JavaScript errors")
        kind, base = res["views"]
        want = f"the always-on profile records offcpu and runq; add wakeup to continuous_kinds in {d.config} to record it"
        # The Kind selector's heatmap: its windows, then why they show nothing.
        self.assertRegex(kind.pop("heatinfo"), r"^2 windows, .*; colour: seconds of wakeup time per window "
                                               r"Nothing to show: " + re.escape(want) + "$")
        self.assertEqual(kind, {"notes": [f"Note: {want}"], "error": "Nothing to draw: no stack in the selection.",
                                "graphShown": False})
        base.pop("heatinfo")
        base["notes"] = why(base["notes"])
        self.assertEqual(base, {
            "notes": ["Note: no stored window matches the baseline; everything shows as new"],
            "error": "", "graphShown": True})


class UnnamedFramesTest(unittest.TestCase):
    """Notes for [unknown: anonymous] and [truncated] frames, once each."""

    def test_jit_without_perf_map(self):
        d = Daemon()
        proc = subprocess.Popen([JIT_WORKLOAD, "--sleeps", "40", "--sleep-ms", "20", "--map", "0"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            pid = int(proc.stdout.readline().split()[1])
            self.assertFalse(os.path.exists(f"/tmp/perf-{pid}.map"))
            cap = d.ctl_popen("capture", "--pid", str(pid), "--seconds", "3", "-U")
            d.wait_captures(1)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            proc.stdout.readline()
            out, err = cap.communicate(timeout=60)
        finally:
            proc.stdin.close()
            proc.wait(timeout=10)
            d.stop()
        self.assertEqual(cap.returncode, 0, err)
        self.assertIn("[unknown: anonymous]", out)
        got = [n for n in notes(err) if "[unknown: anonymous]" in n]
        self.assertEqual(len(got), 1, err)
        self.assertRegex(got[0], r"^[0-9]+% of the time is in frames \[unknown: anonymous\]: code in "
                                 r"anonymous memory \(a JIT\) that no perf map names; have the runtime "
                                 r"write /tmp/perf-PID\.map \(Node: --perf-basic-prof; the JVM: jcmd PID "
                                 r"Compiler\.perfmap\) and capture again \(docs/SYMBOLS\.md, JIT code\)$")

    def test_truncated_roots(self):
        d = Daemon("unwind_max_depth = 3\n")
        try:
            if d.status()["unwind"]["mode"] != "dwarf":
                self.skipTest("unwind tables are not used on this host (unwind mode "
                              f"{d.status()['unwind']['mode']})")
            w = Workload("--only", "sleeper", binary=NOFP_WORKLOAD)
            proc = d.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", "2", "-U",
                               "--format", "folded")
            try:
                d.wait_captures(1)
                w.go()
                out, err = proc.communicate(timeout=60)
            finally:
                w.kill()
            self.assertEqual(proc.returncode, 0, err)
            cap = json.loads(out)["capture"]
            self.assertIn("[truncated]", cap["folded"])
            truncated = [n for n in cap.get("notes", []) if "[truncated]" in n]
            self.assertEqual(len(truncated), 1, cap.get("notes"))
            self.assertRegex(truncated[0], r"^[0-9]+% of the time has user stacks with the root frame "
                                           r"\[truncated\]: the walk stopped before the thread's first "
                                           r"frame \(a new process's first blocks before its unwind "
                                           r"tables were read, depth limit, a DWARF expression it does not "
                                           r"evaluate, unreadable stack memory, data where a frame-pointer "
                                           r"walk looked for a return address\), so callers are missing "
                                           r"above it; offcpuctl status shows the unwinder's state "
                                           r"\(docs/UNWINDING\.md, Truncated stacks\)$")
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
