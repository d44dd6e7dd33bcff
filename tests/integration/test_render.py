"""Flame graphs through the daemon: capture --svg, speedscope, export --svg
and differential exports, drawn by offcpud with the same library as the
offline `offcpuctl flamegraph`."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from offcpu_env import Daemon, Workload

HERE = os.path.dirname(os.path.abspath(__file__))


def capture(d, w, *args, seconds=3, truth=None):
    """Captures workload w; returns offcpuctl's stdout (text). The workload's
    ground truth (Workload.go()) goes into the dict truth, where given."""
    p = d.ctl_popen("capture", "--pid", str(w.pid), "--seconds", str(seconds), *args)
    d.wait_captures(1)
    measured = w.go()
    if truth is not None:
        truth.update(measured)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return out


def last_capture_id(d):
    ws = json.loads(d.ctl("--json", "windows").stdout)["windows"]
    return max(w["capture_id"] for w in ws)


def wait_capture_stored(d, capture_id):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ws = json.loads(d.ctl("--json", "windows").stdout)["windows"]
        if any(w["capture_id"] == capture_id for w in ws):
            return
        time.sleep(0.1)
    raise AssertionError(f"capture {capture_id} not stored")


class RenderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("window_seconds = 1\ndrain_interval_ms = 250\n")
        cls.tmp = tempfile.mkdtemp(prefix="offcpud-render-")

    @classmethod
    def tearDownClass(cls):
        assert cls.daemon.stop() == 0, cls.daemon.log_text()
        shutil.rmtree(cls.tmp)

    def test_capture_svg(self):
        w = Workload("--only", "sleeper")
        svg = capture(self.daemon, w, "--svg", "--title", "sleepy")
        self.assertTrue(svg.startswith("<?xml") or svg.startswith("<svg"), svg[:100])
        self.assertIn("sleepy", svg)
        # Every frame has a tooltip with its time and share; the sleeper's stack is there.
        titles = re.findall(r"<title>([^<]*)</title>", svg)
        self.assertTrue(any(t.startswith("sleeper_thread (") and " us, " in t for t in titles), titles[:20])
        self.assertTrue(any(t.startswith("do_nanosleep (") for t in titles))
        self.assertIn("<script", svg)

    def test_capture_speedscope(self):
        w = Workload("--only", "sleeper")
        out = capture(self.daemon, w, "--format", "speedscope")
        doc = json.loads(out)
        prof = doc["profiles"][0]
        self.assertEqual(prof["type"], "sampled")
        self.assertEqual(prof["unit"], "microseconds")
        names = [f["name"] for f in doc["shared"]["frames"]]
        self.assertIn("sleeper_thread", names)
        self.assertEqual(len(prof["samples"]), len(prof["weights"]))
        self.assertAlmostEqual(sum(prof["weights"]), prof["endValue"] - prof["startValue"], delta=1)
        validator = os.path.join(HERE, "validate_speedscope.js")
        if shutil.which("node") and os.path.isdir(os.path.join(HERE, "node_modules", "ajv")) \
                and os.path.exists(validator):
            path = os.path.join(self.tmp, "cap.speedscope.json")
            with open(path, "w") as f:
                f.write(out)
            r = subprocess.run(["node", validator, path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_differential_export_between_captures(self):
        d = self.daemon
        # Before: 10 sleeps of 20 ms; after: 30 sleeps of 20 ms, each as long
        # as the workload measured it (a loaded host wakes it late).
        truth_a, truth_b = {}, {}
        w = Workload("--only", "sleeper", "--sleeps", "10")
        capture(d, w, seconds=2, truth=truth_a)
        before = last_capture_id(d)
        w = Workload("--only", "sleeper", "--sleeps", "30")
        capture(d, w, seconds=2, truth=truth_b)
        after = last_capture_id(d)
        wait_capture_stored(d, after)
        r = d.ctl("export", "--capture", str(after), "--diff-against", f"capture:{before}",
                  "--grep", "sleeper_thread")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line.rsplit(" ", 2) for line in r.stdout.splitlines()]
        sleeps = [(int(a), int(b)) for stack, a, b in rows if stack.endswith("do_nanosleep;schedule;__schedule")]
        self.assertEqual(len(sleeps), 1, r.stdout)
        a_us, b_us = sleeps[0]
        self.assertAlmostEqual(a_us * 1000 / truth_a["ow-sleeper"]["blocked_ns"], 1.0, delta=0.05)
        self.assertAlmostEqual(b_us * 1000 / truth_b["ow-sleeper"]["blocked_ns"], 1.0, delta=0.05)
        self.assertGreaterEqual(truth_a["ow-sleeper"]["blocked_ns"], 200_000_000)  # 10 x 20 ms
        # --normalize scales BEFORE to AFTER's total.
        r = d.ctl("export", "--capture", str(after), "--diff-against", f"capture:{before}",
                  "--grep", "sleeper_thread", "--normalize")
        total_a = sum(int(line.rsplit(" ", 2)[1]) for line in r.stdout.splitlines())
        total_b = sum(int(line.rsplit(" ", 2)[2]) for line in r.stdout.splitlines())
        self.assertAlmostEqual(total_a / total_b, 1.0, delta=0.01)
        # The svg colours the grown sleep red: its title carries a positive change.
        r = d.ctl("export", "--capture", str(after), "--diff-against", f"capture:{before}",
                  "--grep", "sleeper_thread", "--svg")
        self.assertEqual(r.returncode, 0, r.stderr)
        grown = [t for t in re.findall(r"<title>([^<]*)</title>", r.stdout) if t.startswith("do_nanosleep (")]
        self.assertTrue(grown and "+" in grown[0], grown)
        r = d.ctl("--json", "export", "--capture", str(after), "--diff-against", f"capture:{before}",
                  "--svg")
        reply = json.loads(r.stdout)["export"]
        self.assertTrue(reply["differential"])
        self.assertEqual(reply["diff_windows"], 1)

    def test_export_svg_and_nothing_to_draw(self):
        d = self.daemon
        deadline = time.monotonic() + 10
        while not [w for w in json.loads(d.ctl("--json", "windows").stdout)["windows"] if not w["capture_id"]]:
            self.assertLess(time.monotonic(), deadline, "no continuous window stored")
            time.sleep(0.2)
        r = d.ctl("export", "--window", "last5m", "--svg", "--minwidth", "0.5%", "--inverted")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("<svg", r.stdout)
        r = d.ctl("export", "--window", "last5m", "--svg", "--comm", "no-such-thread-name")
        self.assertEqual(r.returncode, 1)
        self.assertIn("nothing to draw", r.stderr)


if __name__ == "__main__":
    unittest.main()
