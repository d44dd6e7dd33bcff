"""--format pprof: offcpuctl encodes the daemon's JSON rows as a gzipped
pprof profile (render/pprof.c). The files are read by an independent
decoder, Go's own pprof (`go tool pprof -raw`, from Debian's golang-go,
which scripts/setup-tests.sh installs), and must say what the folded export of
the same stored capture says: the same stacks with the same times, the same
total as the daemon's total_ns. The capture's own pprof must also match the
workload's ground truth."""
import datetime
import json
import os
import pty
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from offcpu_env import EXIT_USAGE, OFFCPUCTL, Daemon, Workload, parse_folded

TOLERANCE = 0.05
GO = shutil.which("go")


def pprof_raw(path):
    """Go's pprof's reading of a profile file: a dict with the header lines
    ("Comment", "PeriodType", ...), the "sample_types", and "samples", each
    {"values": [...], "frames": [root, ..., leaf], "labels": {...}}."""
    r = subprocess.run([GO, "tool", "pprof", "-raw", "-symbolize=none", path], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "TZ": "UTC"})
    assert r.returncode == 0, f"go tool pprof refused {path}: {r.stderr}"
    assert not r.stderr.strip(), f"go tool pprof warned: {r.stderr}"
    lines = r.stdout.splitlines()
    prof = {"samples": []}
    section = "header"
    locations = {}
    for line in lines:
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "header":
            key, _, value = line.partition(": ")
            prof[key] = value
        elif section == "Samples:" and "sample_types" not in prof:
            prof["sample_types"] = line.split()  # "blocks/count off_cpu/nanoseconds[dflt]"
        elif section == "Samples:":
            m = re.match(r"^\s+(-?\d+)\s+(-?\d+): ([\d ]*)$", line)
            if m:
                prof["samples"].append({"values": [int(m.group(1)), int(m.group(2))],
                                        "locations": [int(x) for x in m.group(3).split()], "labels": {}})
                continue
            # Label lines under a sample: "comm:[ow-sleeper] kind:[offcpu] ...", "pid:[12] tid:[13]".
            labels = re.findall(r"(\w+):\[([^\]]*)\]", line)
            assert labels and prof["samples"], f"unexpected line in samples: {line!r}"
            prof["samples"][-1]["labels"].update(labels)
        elif section == "Locations":
            m = re.match(r"^\s*(\d+): 0x0 M=1 (.*) :0 s=0$", line)
            assert m, f"unexpected location line: {line!r}"
            locations[int(m.group(1))] = m.group(2)
    for s in prof["samples"]:
        s["frames"] = [locations[i] for i in reversed(s.pop("locations"))]
    return prof


def pprof_time_ns(text):
    """Go's time.Time text in UTC ("2026-11-22 01:00:00.123 +0000 UTC") as unix ns."""
    m = re.match(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d+))? \+0000 UTC$", text)
    assert m, f"unexpected time: {text!r}"
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp()) * 10**9 + int((m.group(2) or "0").ljust(9, "0"))


def pprof_seconds(text):
    """Go's "%.4v" of a time.Duration of seconds ("3s", "3.00", "1m0s") as seconds."""
    m = re.match(r"^(?:(\d+)m)?([\d.]+)s?$", text)
    assert m, f"unexpected duration: {text!r}"
    return int(m.group(1) or 0) * 60 + float(m.group(2))


def by_stack(prof):
    """{(comm, frames root->leaf): off-CPU ns} of a decoded profile."""
    out = {}
    for s in prof["samples"]:
        key = (s["labels"]["comm"], tuple(s["frames"]))
        out[key] = out.get(key, 0) + s["values"][1]
    return out


def folded_by_stack(text):
    """{(comm, frames without "-"): (us, lines)} of folded text."""
    out = {}
    for frames, us in parse_folded(text):
        key = (frames[0], tuple(f for f in frames[1:] if f != "-"))
        total, n = out.get(key, (0, 0))
        out[key] = (total + us, n + 1)
    return out


class PprofTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not GO:
            raise unittest.SkipTest("go is not installed (scripts/setup-tests.sh installs golang-go): "
                                    "no reference pprof reader")
        cls.daemon = Daemon()
        cls.tmp = tempfile.mkdtemp(prefix="offcpud-pprof-")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        shutil.rmtree(cls.tmp)
        assert code == 0, cls.daemon.log_text()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def capture_pprof(self, name, *args, workload_args=(), seconds=3):
        """Captures a workload into a pprof file; returns (decoded, truth,
        workload, capture id, wall-clock ns before and after)."""
        w = Workload(*workload_args)
        out = self.path(name)
        before = time.time_ns()
        p = self.daemon.ctl_popen("capture", "--pid", str(w.pid), "--seconds", str(seconds),
                                  "--format", "pprof", "-o", out, *args)
        try:
            self.daemon.wait_captures(1)
            truth = w.go()
            stdout, err = p.communicate(timeout=seconds + 60)
        finally:
            w.kill()
            if p.poll() is None:
                p.kill()
        after = time.time_ns()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(stdout, "", "the profile goes to -o, nothing to stdout")
        with open(out, "rb") as f:
            self.assertEqual(f.read(2), b"\x1f\x8b", "gzip, as pprof files are")
        prof = pprof_raw(out)
        m = re.fullmatch(r"offcpud capture (\d+)", prof.get("Comment", ""))
        self.assertTrue(m, prof.get("Comment"))
        return prof, truth, w, int(m.group(1)), before, after

    def assert_matches_export(self, capture_id, kind="offcpu"):
        """Exports the stored capture as folded text, JSON rows and pprof, and
        checks that the pprof says what the others say; returns it decoded."""
        d = self.daemon
        args = ("export", "--capture", str(capture_id), "--kind", kind)
        r = d.ctl(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        folded = folded_by_stack(r.stdout)
        r = d.ctl("--json", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        reply = json.loads(r.stdout)["export"]
        out = self.path(f"export-{capture_id}-{kind}.pb.gz")
        r = d.ctl(*args, "--format", "pprof", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        prof = pprof_raw(out)
        self.assertEqual(prof["Comment"], f"offcpud export of capture {capture_id}")
        # To a pipe instead of -o: the same bytes (gzip's header holds no time).
        r = subprocess.run([OFFCPUCTL, "--socket", d.socket, *args, "--format", "pprof"], capture_output=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            self.assertEqual(r.stdout, f.read())

        # The totals are the daemon's, to the nanosecond and the block.
        stacks = by_stack(prof)
        self.assertGreater(len(stacks), 0)
        self.assertEqual(sum(stacks.values()), reply["total_ns"])
        self.assertEqual(sum(s["values"][0] for s in prof["samples"]),
                         sum(row["count"] for row in reply["samples"]))
        self.assertEqual(len(prof["samples"]), reply["samples_count"])

        # Each stack's time is the folded line's, which rounds to microseconds
        # (and leaves out lines that round to 0). Removing "-" from folded
        # lines could merge several into one stack: each rounds on its own.
        for key, (us, n) in folded.items():
            self.assertIn(key, stacks, f"folded stack missing from the pprof: {key}")
            got = (stacks[key] + 500) // 1000
            self.assertLessEqual(abs(got - us), 0 if n == 1 else (n + 1) // 2, key)
        for key, ns in stacks.items():
            if key not in folded:
                self.assertEqual((ns + 500) // 1000, 0, f"pprof stack missing from the folded: {key}")
        return prof

    def test_capture_and_export_match_folded_and_truth(self):
        prof, truth, w, capture_id, before, after = self.capture_pprof("capture.pb.gz")
        self.assertEqual(prof["sample_types"], ["blocks/count", "off_cpu/nanoseconds[dflt]"])
        self.assertEqual(prof["PeriodType"], "off_cpu nanoseconds")

        # Labels: the workload's threads, by name and tid; frames hold no comm.
        for s in prof["samples"]:
            labels = s["labels"]
            self.assertEqual(int(labels["pid"]), w.pid)
            self.assertIn(labels["comm"], w.tids, labels)
            self.assertEqual(int(labels["tid"]), w.tids[labels["comm"]], labels)
            self.assertIn(labels["state"], ("R", "S", "D", "O"))
            self.assertEqual(labels["kind"], "offcpu")
            self.assertNotIn("-", s["frames"])

        # Ground truth: the sleeper's time in its sleep, as test_daemon checks it.
        got = sum(s["values"][1] for s in prof["samples"] if s["labels"]["comm"] == "ow-sleeper"
                  and "sleeper_thread" in s["frames"] and "clock_nanosleep" in s["frames"])
        want = truth["ow-sleeper"]["blocked_ns"]
        self.assertAlmostEqual(got / want, 1.0, delta=TOLERANCE, msg=f"pprof {got} ns, workload {want} ns")
        # Leaf first in the file: the kernel's schedule() is the leaf, main-ish frames the root.
        sleeps = [s for s in prof["samples"] if "sleeper_thread" in s["frames"] and "do_nanosleep" in s["frames"]]
        self.assertTrue(sleeps)
        for s in sleeps:
            self.assertLess(s["frames"].index("sleeper_thread"), s["frames"].index("do_nanosleep"), s["frames"])

        # The capture's span: it ran between our clock readings, for ~3 s.
        seconds = pprof_seconds(prof["Duration"])
        self.assertAlmostEqual(seconds, 3.0, delta=0.5)
        start = pprof_time_ns(prof["Time"])
        self.assertGreaterEqual(start, before - 10**9, "Time is the capture's start")
        self.assertLessEqual(start + seconds * 1e9, after + 10**9)

        # The stored capture, exported: the same rows as the capture's reply.
        exported = self.assert_matches_export(capture_id)
        self.assertEqual(by_stack(exported), by_stack(prof))
        self.assertNotIn("Time", exported, "an export of a capture does not know its start")

    def test_split_runq_and_offwake(self):
        # --split-runq: run-queue rows keep type off_cpu, marked by label and leaf.
        prof, _, _, capture_id, _, _ = self.capture_pprof("split.pb.gz", "--split-runq")
        self.assertEqual(prof["sample_types"], ["blocks/count", "off_cpu/nanoseconds[dflt]"])
        kinds = {s["labels"]["kind"] for s in prof["samples"]}
        self.assertEqual(kinds, {"offcpu", "runq"})
        for s in prof["samples"]:
            self.assertEqual(s["frames"][-1] == "[runqueue]", s["labels"]["kind"] == "runq", s)
        self.assert_matches_export(capture_id)

        # offwake: the waker part above a "--" frame, as in the folded line.
        prof, _, _, capture_id, _, _ = self.capture_pprof("offwake.pb.gz", "--kind", "offwake")
        self.assertEqual(prof["sample_types"], ["blocks/count", "offwake/nanoseconds[dflt]"])
        self.assertTrue(all("--" in s["frames"] for s in prof["samples"]))
        self.assertEqual({s["labels"]["kind"] for s in prof["samples"]}, {"offwake"})
        self.assert_matches_export(capture_id, "offwake")

    def test_empty_export_is_a_valid_profile(self):
        out = self.path("empty.pb.gz")
        r = self.daemon.ctl("export", "--capture", "999999", "--format", "pprof", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        prof = pprof_raw(out)
        self.assertEqual(prof["samples"], [])
        self.assertEqual(prof["sample_types"], ["blocks/count", "off_cpu/nanoseconds[dflt]"])

    def test_range_export_has_its_span(self):
        out = self.path("range.pb.gz")
        r = self.daemon.ctl("export", "--from", "1700000000", "--to", "1700000060", "--format", "pprof",
                            "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        prof = pprof_raw(out)
        self.assertEqual(prof["Comment"], "offcpud export")
        self.assertEqual(pprof_time_ns(prof["Time"]), 1700000000 * 10**9)
        self.assertEqual(pprof_seconds(prof["Duration"]), 60)

    def test_usage_errors(self):
        d = self.daemon
        x = self.path("refused.pb.gz")
        cases = [
            (("export", "--capture", "1", "--diff-against", "capture:2", "--format", "pprof", "-o", x),
             "not pprof"),
            (("--json", "capture", "--format", "pprof", "-o", x), "not JSON"),
            (("capture", "--format", "pprof", "--svg", "-o", x), "conflicting output formats"),
            (("capture", "--format", "json", "--format", "pprof", "-o", x), "conflicting output formats"),
            (("capture", "--format", "pprof", "--title", "t", "-o", x), "--title only applies"),
        ]
        for args, message in cases:
            r = d.ctl(*args)
            self.assertEqual(r.returncode, EXIT_USAGE, args)
            self.assertIn(message, r.stdout + r.stderr, args)
        self.assertFalse(os.path.exists(x))

        # Binary to a terminal: refused before anything is asked of the daemon.
        master, slave = pty.openpty()
        try:
            p = subprocess.run([OFFCPUCTL, "--socket", d.socket, "capture", "--seconds", "1", "--format", "pprof"],
                               stdout=slave, stderr=subprocess.PIPE, text=True, timeout=30)
        finally:
            os.close(slave)
            os.close(master)
        self.assertEqual(p.returncode, EXIT_USAGE, p.stderr)
        self.assertIn("give -o FILE or redirect standard output", p.stderr)


if __name__ == "__main__":
    unittest.main()
