"""Continuous profiling: the always-on slot, windows in the SQLite ring,
exports by time range and by capture, and survival of kill -9.

The daemon here uses 1 s windows and 250 ms drains so the tests are quick;
the code paths are those of the 10 s default.
"""
import json
import os
import sqlite3
import time
import unittest

from offcpu_env import Daemon, Workload
from test_daemon import TOLERANCE, capture_json, per_thread

FAST = "window_seconds = 1\ndrain_interval_ms = 250\n"


def now_ms():
    return int(time.time() * 1000)


def windows(d, since_ms=0):
    r = d.ctl("--json", "windows", "--since", str(since_ms / 1000))
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["windows"]


def continuous(ws):
    return [w for w in ws if w["capture_id"] == 0]


def wait_windows_after(d, t_ms, timeout=15):
    """Waits until a continuous window ends at or after t_ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ws = continuous(windows(d))
        if ws and ws[-1]["end_ms"] >= t_ms:
            return ws
        time.sleep(0.2)
    raise AssertionError(f"no window reached {t_ms}")


def wait_stored(d, t_ms, timeout=15):
    """Waits until every block that ended by t_ms is in a stored window.

    A block is counted in the window that is open when the drain carrying it
    completes, which can be later than t_ms by a drain interval and the
    drain's own time. So wait for a stored window that *starts* well after
    that: windows are contiguous and stored in order, so the one before it,
    and every earlier one, is in the store too."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ws = continuous(windows(d))
        if ws and ws[-1]["start_ms"] >= t_ms + 750:
            return ws
        time.sleep(0.2)
    raise AssertionError(f"no window started after {t_ms + 750}")


def export_json(d, *args):
    r = d.ctl("--json", "export", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["export"]


class WindowsTest(unittest.TestCase):
    maxDiff = None
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(FAST)

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def test_cadence_and_contiguity(self):
        d = self.daemon
        start = now_ms()
        ws = wait_windows_after(d, start + 3500)
        ws = [w for w in ws if w["start_ms"] >= start - 1000]
        self.assertGreaterEqual(len(ws), 3)
        for a, b in zip(ws, ws[1:]):
            self.assertEqual(a["end_ms"], b["start_ms"], "windows are contiguous: no gap, no overlap")
        for w in ws[1:-1]:
            self.assertAlmostEqual(w["end_ms"] - w["start_ms"], 1000, delta=400)
            self.assertGreater(w["samples"], 0, "a live system always has off-CPU time")

    def test_sum_over_windows_equals_truth(self):
        d = self.daemon
        w = Workload()
        begin = now_ms()
        truth = w.go()  # ~1 s: spread over two or three 1 s windows
        end = now_ms()
        wait_stored(d, end)
        exp = export_json(d, "--from", str(begin / 1000 - 2), "--to", str(now_ms() / 1000 + 1),
                          "--pid", str(w.pid))
        self.assertGreaterEqual(exp["windows"], 2)
        # The thread's own frame, but not its start-line and handshake waits
        # (wait_for_*, wait_on_*), which whole stacks show under it too. The
        # continuous profile may walk a new process's first blocks with
        # frame pointers, which skip block_in_*: so not that frame.
        for name, frame in (("ow-sleeper", "sleeper_thread"), ("ow-reader", "reader_thread"),
                            ("ow-locker", "locker_thread")):
            got = per_thread(exp, w.tids[name], lambda s: frame in s["ustack"] and
                             not any(f.startswith("wait_") for f in s["ustack"]))
            self.assertAlmostEqual(got / truth[name]["blocked_ns"], 1.0, delta=TOLERANCE,
                                   msg=f"{name}: windows sum {got} ns, truth {truth[name]['blocked_ns']} ns")

    def test_export_range_is_exact(self):
        d = self.daemon
        ws = continuous(wait_windows_after(d, now_ms() + 4000))[-4:]
        a, b, c, _ = ws
        exp = export_json(d, "--from", str(a["start_ms"] / 1000), "--to", str(c["start_ms"] / 1000))
        self.assertEqual(exp["windows"], 2, "from <= start < to: a and b")
        exp = export_json(d, "--from", str((a["start_ms"] + 1) / 1000), "--to", str(c["start_ms"] / 1000))
        self.assertEqual(exp["windows"], 1, "b only")
        both = export_json(d, "--from", str(a["start_ms"] / 1000), "--to", str(c["start_ms"] / 1000))
        one = export_json(d, "--from", str(a["start_ms"] / 1000), "--to", str(b["start_ms"] / 1000))
        two = export_json(d, "--from", str(b["start_ms"] / 1000), "--to", str(c["start_ms"] / 1000))
        self.assertEqual(both["total_ns"], one["total_ns"] + two["total_ns"], "ranges add up exactly")
        r = d.ctl("export", "--window", "last5m")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.strip(), "last5m has folded stacks")

    def test_export_filters(self):
        d = self.daemon
        w = Workload("--only", "sleeper", "--only", "reader")
        begin = now_ms()
        w.go()
        wait_stored(d, now_ms())
        rng = ["--from", str(begin / 1000 - 2), "--to", str(now_ms() / 1000 + 1), "--pid", str(w.pid)]
        grep = export_json(d, *rng, "--grep", "^sleeper_thread$")
        self.assertTrue(grep["samples"])
        self.assertTrue(all("sleeper_thread" in s["ustack"] for s in grep["samples"]))
        excl = export_json(d, *rng, "--exclude", "sleeper_thread")
        self.assertTrue(excl["samples"])
        self.assertFalse(any("sleeper_thread" in s["ustack"] for s in excl["samples"]))
        comm = export_json(d, *rng, "--comm", "ow-reader")
        self.assertEqual({s["comm"] for s in comm["samples"]}, {"ow-reader"})
        state = export_json(d, *rng, "--state", "R")
        self.assertTrue(all(s["state"] == "R" for s in state["samples"]))
        r = d.ctl("export", *rng, "--grep", "(unclosed")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_capture_is_stored(self):
        d = self.daemon
        w = Workload("--only", "sleeper")
        cap, _ = capture_json(d, w, seconds=2)
        deadline = time.monotonic() + 10
        while not [x for x in windows(d) if x["capture_id"] == cap["id"]] and time.monotonic() < deadline:
            time.sleep(0.1)
        exp = export_json(d, "--capture", str(cap["id"]))
        self.assertEqual(exp["windows"], 1)
        self.assertEqual(exp["total_ns"], cap["total_ns"])
        key = sorted((s["pid"], s["state"], tuple(s["ustack"]), tuple(s["kstack"]), s["value_ns"])
                     for s in cap["samples"])
        self.assertEqual(sorted((s["pid"], s["state"], tuple(s["ustack"]), tuple(s["kstack"]), s["value_ns"])
                                for s in exp["samples"]), key)
        # A time-range export never mixes in ad-hoc captures.
        rng = export_json(d, "--from", "0.001", "--pid", str(w.pid), "--grep", "sleeper_thread")
        self.assertLess(rng["total_ns"], 2 * cap["total_ns"])


class CrashTest(unittest.TestCase):
    def test_kill9_keeps_committed_windows(self):
        d = Daemon(FAST)
        try:
            before = continuous(wait_windows_after(d, now_ms() + 3000))
            d.proc.kill()  # SIGKILL: no chance to clean up
            d.proc.wait()
            with sqlite3.connect(d.database) as db:
                self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            d.start()
            after = windows(d)
            ids = {w["id"] for w in after}
            self.assertTrue(all(w["id"] in ids for w in before), "every committed window survives")
            self.assertEqual(d.status()["captures_running"], 0)
            # And the restarted daemon goes on writing windows.
            wait_windows_after(d, now_ms() + 1500)
        finally:
            self.assertEqual(d.stop(), 0)

    def test_clean_stop_stores_the_open_window(self):
        d = Daemon("window_seconds = 3600\ndrain_interval_ms = 250\n")
        try:
            w = Workload("--only", "sleeper")
            w.go()
        finally:
            self.assertEqual(d.stop(), 0)
        with sqlite3.connect(d.database) as db:
            n = db.execute("SELECT count(*) FROM windows").fetchone()[0]
        self.assertEqual(n, 1, "the hour-long window in progress was written at SIGTERM")
        d.start()
        try:
            exp = export_json(d, "--from", "0.001", "--pid", str(w.pid))
            self.assertTrue(exp["samples"])
        finally:
            self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
