"""Stack filters (--comm, --grep, --exclude) in the daemon's captures and
exports and in offcpuctl's offline flamegraph and diff: one implementation
(common/stack_filter.c), so the same filter selects the same stacks
everywhere.

Ground truth: a filtered capture's time in the workload's blocking calls
must be within 5 % of what the workload measured. The sleeper's own frame is
sleeper_thread, not block_in_sleep: a frame-pointer walk loses the direct
caller of libc (see tests/workloads/offcpu_workload.c).
"""
import json
import os
import re
import shutil
import tempfile
import time
import unittest

from offcpu_env import EXIT_USAGE, Daemon, Workload, parse_folded

TOLERANCE = 0.05


def run_captures(d, w, *arg_lists, seconds=3):
    """Runs one capture of w per argument list, all at once, over the same
    blocks; returns (stdouts, ground truth)."""
    procs = [d.ctl_popen("capture", "--pid", str(w.pid), "--seconds", str(seconds), *args)
             for args in arg_lists]
    try:
        d.wait_captures(len(procs))
        truth = w.go()
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=seconds + 30)
            assert p.returncode == 0, f"capture failed ({p.returncode}): {out} {err}"
            outs.append(out)
    finally:
        w.kill()
        for p in procs:
            if p.poll() is None:
                p.kill()
    return outs, truth


def frames(sample):
    """Every frame of a JSON row's folded line, as the filters see it."""
    return [sample["comm"], *sample["ustack"], *sample["kstack"], *sample.get("chain", [])]


def stacks_of(folded):
    """Folded text -> {stack: value}."""
    return {";".join(f): v for f, v in parse_folded(folded)}


class FiltersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.tmp = tempfile.mkdtemp(prefix="offcpud-filters-")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        shutil.rmtree(cls.tmp)
        assert code == 0, f"offcpud exited with {code}:\n{cls.daemon.log_text()}"

    def tearDown(self):
        # The daemon survives every test, bad patterns included.
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # ---- capture ----

    def test_capture_grep_exclude_comm(self):
        d = self.daemon
        w = Workload("--only", "sleeper", "--only", "reader")
        outs, truth = run_captures(d, w, ["--json"], ["--json", "--grep", "^sleeper_thread$"],
                                   ["--json", "--exclude", "sleeper_thread"],
                                   ["--json", "--comm", "ow-reader"])
        everything, grep, exclude, comm = [json.loads(o)["capture"] for o in outs]
        sleeper, reader = w.tids["ow-sleeper"], w.tids["ow-reader"]

        # --grep keeps only the sleeper's stacks in sleeper_thread, all of its time.
        self.assertTrue(grep["samples"])
        self.assertEqual({s["pid"] for s in grep["samples"]}, {sleeper})
        self.assertTrue(all("sleeper_thread" in s["ustack"] for s in grep["samples"]))
        got = sum(s["value_ns"] for s in grep["samples"])
        want = truth["ow-sleeper"]["blocked_ns"]
        self.assertAlmostEqual(got / want, 1.0, delta=TOLERANCE, msg=f"captured {got} ns, slept {want} ns")
        self.assertEqual(grep["total_ns"], got)
        self.assertEqual(grep["samples_count"], len(grep["samples"]))

        # --exclude removes exactly those; the reader's time stays whole.
        self.assertTrue(exclude["samples"])
        self.assertFalse(any("sleeper_thread" in f for s in exclude["samples"] for f in frames(s)))
        got = sum(s["value_ns"] for s in exclude["samples"]
                  if s["pid"] == reader and "reader_thread" in s["ustack"])
        self.assertAlmostEqual(got / truth["ow-reader"]["blocked_ns"], 1.0, delta=TOLERANCE)

        # --comm keeps that thread only, all of it.
        self.assertEqual({s["comm"] for s in comm["samples"]}, {"ow-reader"})
        self.assertEqual({s["pid"] for s in comm["samples"]}, {reader})
        got = sum(s["value_ns"] for s in comm["samples"] if "reader_thread" in s["ustack"])
        self.assertAlmostEqual(got / truth["ow-reader"]["blocked_ns"], 1.0, delta=TOLERANCE)

        # Each filtered capture is the unfiltered one's rows that pass.
        def key(s):
            return (s["pid"], s["state"], tuple(s["ustack"]), tuple(s["kstack"]))

        rows = {key(s): s for s in everything["samples"]}
        for filtered, keep in ((grep, lambda s: any(re.search("^sleeper_thread$", f) for f in frames(s))),
                               (exclude, lambda s: not any(re.search("sleeper_thread", f) for f in frames(s))),
                               (comm, lambda s: s["comm"] == "ow-reader")):
            self.assertLessEqual({key(s) for s in filtered["samples"]}, set(rows))
            want_ns = sum(s["value_ns"] for s in everything["samples"] if keep(s))
            self.assertAlmostEqual(filtered["total_ns"] / want_ns, 1.0, delta=0.01)

    def test_capture_is_stored_filtered(self):
        d = self.daemon
        w = Workload("--only", "sleeper", "--only", "reader")
        (out,), _ = run_captures(d, w, ["--json", "--comm", "ow-sleeper"], seconds=2)
        cap = json.loads(out)["capture"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ws = json.loads(d.ctl("--json", "windows").stdout)["windows"]
            if any(x["capture_id"] == cap["id"] for x in ws):
                break
            time.sleep(0.1)
        r = d.ctl("--json", "export", "--capture", str(cap["id"]))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        exp = json.loads(r.stdout)["export"]
        self.assertEqual(exp["windows"], 1)
        self.assertEqual(exp["total_ns"], cap["total_ns"])
        self.assertEqual({s["comm"] for s in exp["samples"]}, {"ow-sleeper"})

    def test_grep_sees_waker_frames(self):
        # offwake: the reader's rows carry the writer, its waker, after "--".
        d = self.daemon
        w = Workload("--only", "reader")
        (out,), _ = run_captures(d, w, ["--json", "--kind", "offwake", "--grep", "^ow-writer$"])
        cap = json.loads(out)["capture"]
        self.assertTrue(cap["samples"])
        self.assertTrue(all("ow-writer" in frames(s) for s in cap["samples"]), cap["samples"])
        self.assertTrue(any(s["comm"] == "ow-reader" and "ow-writer" in s["chain"] for s in cap["samples"]))

    def test_bad_patterns(self):
        d = self.daemon
        r = d.ctl("capture", "--seconds", "1", "--grep", "(unclosed")
        self.assertEqual(r.returncode, EXIT_USAGE, r.stderr)
        self.assertIn("bad --grep '(unclosed'", r.stderr)
        r = d.ctl("capture", "--seconds", "1", "--comm", "x" * 64)
        self.assertEqual(r.returncode, EXIT_USAGE, r.stderr)
        # The daemon checks on its own: a bad_request naming regcomp's reason.
        for cmd in ('"cmd":"capture","seconds":1,"exclude":"[z-a]"',
                    '"cmd":"export","from_ms":1,"grep":"(unclosed"'):
            reply = d.raw(("{\"v\":1," + cmd + "}\n").encode())
            self.assertEqual(reply[0]["error"]["code"], "bad_request", reply)
            self.assertIn("is not a POSIX extended regex: ", reply[0]["error"]["message"])
        self.assertEqual(d.status()["captures_running"], 0)

    # ---- offline: the same selection from a folded file ----

    def test_offline_matches_daemon(self):
        d = self.daemon
        w = Workload("--only", "sleeper", "--only", "reader")
        filters = [["--grep", "^sleeper_thread$"], ["--exclude", "sleeper_thread"], ["--comm", "ow-reader"],
                   ["--grep", "read", "--exclude", "^pipe_read$"]]
        outs, _ = run_captures(d, w, [], *filters)
        path = self.write("all.folded", outs[0])
        everything = stacks_of(outs[0])
        self.assertGreater(len(everything), 2)
        for args, daemon_side in zip(filters, outs[1:]):
            # diff prints the stacks it keeps, with their values, as folded text.
            r = d.ctl("diff", *args, path, path)
            self.assertEqual(r.returncode, 0, r.stderr)
            offline = {line.rsplit(" ", 2)[0]: int(line.rsplit(" ", 2)[2]) for line in r.stdout.splitlines()}
            self.assertEqual(offline, stacks_of(daemon_side), args)

            # flamegraph draws the frames of those stacks and no others
            # (--minwidth: however narrow).
            svg_path = os.path.join(self.tmp, "f.svg")
            r = d.ctl("flamegraph", *args, path, "--minwidth", "0.000001", "-o", svg_path)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(svg_path) as f:
                titles = {t.rsplit(" (", 1)[0] for t in re.findall(r"<title>([^<]*)</title>", f.read())}
            kept = {frame for stack in offline for frame in stack.split(";")}
            dropped = {frame for stack in everything for frame in stack.split(";")} - kept
            self.assertLessEqual(kept, titles, args)
            self.assertFalse(dropped & titles, args)

        # A folded file has no pids or thread states: a clear usage error.
        for args in (["--pid", str(os.getpid())], ["--state", "D"]):
            for cmd in (["flamegraph", path], ["diff", path, path]):
                r = d.ctl(cmd[0], *args, *cmd[1:])
                self.assertEqual(r.returncode, EXIT_USAGE, r.stderr)
                self.assertIn("folded stacks do not record pids or thread states", r.stderr)
                self.assertIn("offcpuctl export", r.stderr)


if __name__ == "__main__":
    unittest.main()
