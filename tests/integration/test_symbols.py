"""Symbols from DWARF: inline frames, source lines (--lines), names of
binaries without a symbol table, separate debug files (build-id and
.gnu_debuglink, under a configured debug_root), demangled C++ frames, and
JIT code named in /tmp/perf-PID.map (tests/workloads/jit_workload.c).

tests/workloads/inline_workload.c sleeps in a chain of always-inline
functions; the lines marked "LINE:name" in its source are where each frame
stands. Ground truth: the workload's own time in the sleeps.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from offcpu_env import BUILD, SANITIZED, Daemon, RequestWorkload

TOLERANCE = 0.05
SOURCE = os.path.join(os.path.dirname(__file__), "..", "workloads", "inline_workload.c")
BINARY = os.path.join(BUILD, "tests", "inline_workload")
CHAIN = ["sleep_outer", "sleep_middle", "sleep_inner"]


def marked_lines():
    """{function: line} from the LINE: markers of the workload's source."""
    lines = {}
    with open(SOURCE) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"LINE:(\w+)", text)
            if m:
                lines[m.group(1)] = n
    return lines


def expected_frames(with_lines):
    """The workload's leaf frames, root to leaf."""
    lines = marked_lines()
    frames = []
    for i, name in enumerate(CHAIN):
        frame = name + (" [inlined]" if i else "")
        if with_lines:
            frame += f" (inline_workload.c:{lines[name]})"
        frames.append(frame)
    return frames


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def objcopy(*args):
    # Its warnings about sections of a debug-only file are harmless; failure is not.
    r = subprocess.run(["objcopy", *args], capture_output=True, text=True)
    assert r.returncode == 0, f"objcopy {args} failed: {r.stderr}"


class InlineWorkload:
    """inline_workload at path, held at its start line until go()."""

    def __init__(self, path, sleeps=40, sleep_ms=20):
        self.proc = subprocess.Popen([path, "--sleeps", str(sleeps), "--sleep-ms", str(sleep_ms)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", f"inline workload did not get ready: {line}"
        self.pid = int(line[1])

    def go(self):
        """Runs the timed phase; returns its ground truth. The process may
        stay until kill() (jit_workload does, as a JIT's process would)."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"workload printed no result ({self.proc.poll()})"
        return json.loads(line)

    def kill(self):
        """Closes its stdin (jit_workload then removes its map and exits)."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            self.proc.kill()
            self.proc.wait()
        assert self.proc.returncode == 0, f"workload failed: {self.proc.returncode}"


class SymbolsTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="offcpu-symbols-")
        cls.debug_root = os.path.join(cls.tmp, "debug")
        bindir = os.path.join(cls.tmp, "bin")
        os.makedirs(bindir)
        cls.binaries = {}

        def variant(name):
            path = os.path.join(bindir, name)
            cls.binaries[name] = path
            return path

        # DWARF but no symbol table: names from .debug_info.
        objcopy("--remove-section=.symtab", "--remove-section=.strtab", BINARY, variant("no_symtab"))
        # Stripped, its debug file found by build-id under debug_root.
        bid = build_id(BINARY)
        by_id = os.path.join(cls.debug_root, ".build-id", bid[:2], bid[2:] + ".debug")
        os.makedirs(os.path.dirname(by_id))
        objcopy("--only-keep-debug", BINARY, by_id)
        objcopy("--strip-all", BINARY, variant("by_build_id"))
        # Stripped, without a build-id, its debug file found by .gnu_debuglink
        # (CRC-checked) under debug_root + its directory.
        no_id = os.path.join(cls.tmp, "no_id")
        objcopy("--remove-section=.note.gnu.build-id", BINARY, no_id)
        link_dir = cls.debug_root + bindir
        os.makedirs(link_dir)
        objcopy("--only-keep-debug", no_id, os.path.join(link_dir, "by_debuglink.debug"))
        objcopy("--strip-all", no_id, os.path.join(cls.tmp, "stripped_no_id"))
        objcopy(f"--add-gnu-debuglink={os.path.join(link_dir, 'by_debuglink.debug')}",
                os.path.join(cls.tmp, "stripped_no_id"), variant("by_debuglink"))
        # Stripped, with a build-id of its own that no debug file is named
        # after: found by .gnu_debuglink too (never asked of debuginfod).
        other_id = os.path.join(cls.tmp, "other_id")
        shutil.copy(BINARY, other_id)
        with open(other_id, "r+b") as f:  # one byte of its build-id changed
            data = f.read()
            at = data.index(bytes.fromhex(bid))
            f.seek(at)
            f.write(bytes([data[at] ^ 0xff]))
        objcopy("--only-keep-debug", other_id, os.path.join(link_dir, "id_and_debuglink.debug"))
        objcopy("--strip-all", other_id, os.path.join(cls.tmp, "stripped_other_id"))
        objcopy(f"--add-gnu-debuglink={os.path.join(link_dir, 'id_and_debuglink.debug')}",
                os.path.join(cls.tmp, "stripped_other_id"), variant("id_and_debuglink"))
        # The same, but its debug file is of another build: the CRC refuses it.
        objcopy("--strip-all", no_id, os.path.join(cls.tmp, "stripped_bad"))
        bad = os.path.join(link_dir, "bad_crc.debug")
        shutil.copy(os.path.join(link_dir, "by_debuglink.debug"), bad)
        objcopy(f"--add-gnu-debuglink={bad}", os.path.join(cls.tmp, "stripped_bad"), variant("bad_crc"))
        with open(bad, "r+b") as f:  # one byte of its DWARF changed after the link took its CRC
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
            f.seek(-1, os.SEEK_END)
            f.write(bytes([last[0] ^ 0xff]))
        cls.daemon = Daemon(f"debug_root = {cls.debug_root}\n")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert code == 0, cls.daemon.log_text()

    def capture(self, path, *args, seconds=3):
        """Captures the workload at path; returns (samples, truth)."""
        w = InlineWorkload(path)
        p = self.daemon.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", str(seconds),
                                  "--user-only", *args)
        try:
            self.daemon.wait_captures(1)
            truth = w.go()
            out, err = p.communicate(timeout=seconds + 30)
            self.assertEqual(p.returncode, 0, f"capture failed: {out} {err}")
        finally:
            w.kill()
            if p.poll() is None:
                p.kill()
        return json.loads(out)["capture"]["samples"], truth

    def check_chain(self, path, with_lines, check_time=True):
        samples, truth = self.capture(path, *(["--lines"] if with_lines else []))
        want = expected_frames(with_lines)
        hits = [s for s in samples if s["ustack"][-len(want):] == want]
        stacks = "\n".join(";".join(s["ustack"]) for s in samples)
        self.assertTrue(hits, f"no stack ends with {want}:\n{stacks}")
        # The caller of the out-of-line function is named too.
        self.assertIn("main", [f.split(" (")[0] for f in hits[0]["ustack"]], stacks)
        if check_time and not SANITIZED:
            got = sum(s["value_ns"] for s in hits)
            self.assertAlmostEqual(got / truth["blocked_ns"], 1, delta=TOLERANCE,
                                   msg=f"{got} ns in the chain vs {truth['blocked_ns']} ns slept")
        return samples

    def test_inline_frames_with_lines(self):
        samples = self.check_chain(BINARY, True)
        # Every user frame of the workload's own code has a line.
        for s in samples:
            for f in s["ustack"]:
                if f.split(" ")[0] in CHAIN + ["main"]:
                    self.assertRegex(f, r" \(inline_workload\.c:\d+\)$")

    def test_inline_frames_without_lines(self):
        samples = self.check_chain(BINARY, False)
        for s in samples:
            for f in s["ustack"]:
                self.assertNotRegex(f, r" \([^()]*:\d+\)$", "no lines without --lines")

    def test_names_from_dwarf_without_symtab(self):
        self.check_chain(self.binaries["no_symtab"], True)

    def test_separate_debug_file_by_build_id(self):
        self.check_chain(self.binaries["by_build_id"], True)

    def test_separate_debug_file_by_debuglink(self):
        self.check_chain(self.binaries["by_debuglink"], True)

    def test_separate_debug_file_by_debuglink_with_build_id(self):
        self.check_chain(self.binaries["id_and_debuglink"], True)

    def test_debuglink_crc_mismatch_is_refused(self):
        samples, _ = self.capture(self.binaries["bad_crc"])
        frames = [f for s in samples for f in s["ustack"]]
        self.assertFalse([f for f in frames if f.startswith("sleep_")], frames)
        self.assertTrue([f for f in frames if f.startswith("bad_crc+0x")], frames)

    def test_filters_match_frames_with_and_without_lines(self):
        def has_inner(sample):
            return any(f.startswith("sleep_inner [inlined] (") for f in sample["ustack"])

        # by the name without its line
        samples, _ = self.capture(BINARY, "--lines", "--grep", "^sleep_inner \\[inlined\\]$")
        self.assertTrue(samples)
        self.assertTrue(all(has_inner(s) for s in samples), samples)
        # by the line
        samples, _ = self.capture(BINARY, "--lines", "--exclude", "inline_workload\\.c:")
        self.assertFalse([s for s in samples if has_inner(s)], samples)

    def test_export_with_and_without_lines(self):
        samples, _ = self.capture(BINARY, "--lines")
        cap_id = None
        windows = json.loads(self.daemon.ctl("--json", "windows").stdout)["windows"]
        cap_id = max(w["capture_id"] for w in windows)
        want_lines, want_plain = expected_frames(True), expected_frames(False)
        for args, want in (([], want_plain), (["--lines"], want_lines)):
            r = self.daemon.ctl("--json", "export", "--capture", str(cap_id), *args)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = json.loads(r.stdout)["export"]["samples"]
            self.assertTrue([s for s in rows if s["ustack"][-3:] == want], (args, rows))

    def test_jit_symbols_from_perf_map(self):
        samples, truth = self.capture(os.path.join(BUILD, "tests", "jit_workload"))
        hits = [s for s in samples if s["ustack"] and s["ustack"][-1] == truth["jit_name"]]
        stacks = "\n".join(";".join(s["ustack"]) for s in samples)
        self.assertTrue(hits, f"no stack ends in the JIT stub:\n{stacks}")
        if not SANITIZED:
            got = sum(s["value_ns"] for s in hits)
            self.assertAlmostEqual(got / truth["blocked_ns"], 1, delta=TOLERANCE,
                                   msg=f"{got} ns in the stub vs {truth['blocked_ns']} ns slept")

    def test_cxx_frames_demangled(self):
        w = RequestWorkload("request_workload_cpp", "--requests", "20", "--backend-ms", "5",
                            "--between-ms", "1")
        p = self.daemon.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", "2", "--user-only")
        try:
            self.daemon.wait_captures(1)
            w.go()
            out, err = p.communicate(timeout=40)
            self.assertEqual(p.returncode, 0, err)
        finally:
            w.kill()
        frames = [f for s in json.loads(out)["capture"]["samples"] for f in s["ustack"]]
        self.assertIn("app::Server::handle_request(app::Request&)", frames)
        self.assertFalse([f for f in frames if f.startswith("_Z")], frames)


if __name__ == "__main__":
    unittest.main()
