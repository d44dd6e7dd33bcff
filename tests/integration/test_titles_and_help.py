"""offcpuctl's help fits one screen and every command's ends with examples;
flame graphs drawn by offcpud are titled with what they show (kind,
targets, time range) unless --title says otherwise; folded input with a
count too large to draw exactly is refused with its file and line."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from offcpu_env import OFFCPUCTL, Daemon, Workload
from test_render import capture, last_capture_id, wait_capture_stored

EM, EN = "\u2014", "\u2013"
LIMIT = "9007199254740991"  # 2^53 - 1


def ctl(*args, stdin=None):
    return subprocess.run([OFFCPUCTL, *args], capture_output=True, text=True, timeout=30, input=stdin)


def utc_range(from_s, to_s):
    """As offcpud writes a range: the end's date only when it differs."""
    a, b = time.gmtime(from_s), time.gmtime(to_s)
    end_fmt = "%H:%M:%S" if a[:3] == b[:3] else "%Y-%m-%d %H:%M:%S"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', a)}{EN}{time.strftime(end_fmt, b)} UTC"


def svg_title(svg):
    m = re.search(r'<text id="title"[^>]*>([^<]*)</text>', svg)
    assert m, svg[:400]
    return m.group(1)


class HelpTest(unittest.TestCase):
    FIRST = ("status", "capture", "windows", "export", "serve")

    def test_overview_fits_one_screen(self):
        r = ctl("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertLessEqual(len(lines), 24, r.stdout)
        self.assertTrue(all(len(line) <= 80 for line in lines), r.stdout)
        self.assertEqual(lines[0], "offcpuctl: the client of offcpud, an off-CPU profiler (where threads wait)")
        # The five first commands, each with an example of itself.
        for name in self.FIRST:
            i = next(i for i, line in enumerate(lines) if line.startswith(f"  {name} "))
            self.assertTrue(lines[i + 1].strip().startswith(f"offcpuctl {name}"), lines[i:i + 2])
        self.assertIn("All commands: status capture blocked windows export hist push flamegraph\n"
                      "diff latency serve help\n", r.stdout)
        self.assertIn("offcpuctl help COMMAND", r.stdout)
        self.assertIn("man offcpuctl", r.stdout)
        self.assertEqual(ctl("help").stdout, r.stdout)
        self.assertEqual(ctl("-h").stdout, r.stdout)
        # Without a command: the same, as a usage error.
        bare = ctl()
        self.assertEqual(bare.returncode, 2)
        self.assertEqual(bare.stderr, r.stdout)
        self.assertEqual(bare.stdout, "")

    def test_all_lists_every_command(self):
        r = ctl("help", "--all")
        self.assertEqual(r.returncode, 0, r.stderr)
        block = r.stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
        names = re.findall(r"^  ([a-z]+)", block, re.M)
        listed = ctl("help").stdout.split("All commands: ", 1)[1].split("\n\n", 1)[0].split()
        self.assertEqual(names, listed)

    def test_every_command_ends_with_examples(self):
        names = ctl("help").stdout.split("All commands: ", 1)[1].split("\n\n", 1)[0].split()
        for name in names:
            with self.subTest(command=name):
                r = ctl("help", name)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(ctl(name, "--help").stdout, r.stdout)
                head, examples = r.stdout.rsplit("\n\nExamples:\n", 1)
                lines = examples.splitlines()
                self.assertTrue(2 <= len(lines) <= 4, examples)
                for line in lines:
                    self.assertTrue(line.startswith("  offcpuctl "), line)
                    self.assertIn(f"offcpuctl {name}", line.split("#")[0] + " offcpuctl help")
                    # each option an example uses is one its command takes
                    cmd = re.search(r"offcpuctl ([a-z]+)", line.split("|")[-1]).group(1)
                    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line.split("|")[-1]))
                    own = ctl("help", cmd).stdout if cmd != name else head
                    for opt in options - {"--help"}:  # every command's
                        self.assertIn(opt, own, f"{line}: {opt}")


class TitleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("window_seconds = 1\ndrain_interval_ms = 250\n")
        cls.tmp = tempfile.mkdtemp(prefix="offcpud-titles-")

    @classmethod
    def tearDownClass(cls):
        assert cls.daemon.stop() == 0, cls.daemon.log_text()
        shutil.rmtree(cls.tmp)

    def window_of(self, capture_id):
        ws = json.loads(self.daemon.ctl("--json", "windows").stdout)["windows"]
        return next(w for w in ws if w["capture_id"] == capture_id)

    def test_capture_titles(self):
        d = self.daemon
        w = Workload("--only", "sleeper")
        svg = capture(d, w, "--svg", seconds=2)
        cid = last_capture_id(d)
        wait_capture_stored(d, cid)
        win = self.window_of(cid)
        # the window ends 1 ms after the capture, so that it holds its end
        span = utc_range(win["start_ms"] // 1000, (win["end_ms"] - 1) // 1000)
        self.assertEqual(svg_title(svg), f"Off-CPU Time {EM} pid {w.pid} {EM} {span}")

        w = Workload("--only", "sleeper")
        out = capture(d, w, "--format", "speedscope", "--kind", "offcpu", seconds=2)
        cid = last_capture_id(d)
        wait_capture_stored(d, cid)
        win = self.window_of(cid)
        span = utc_range(win["start_ms"] // 1000, (win["end_ms"] - 1) // 1000)
        doc = json.loads(out)
        self.assertEqual(doc["name"], f"Off-CPU Time {EM} pid {w.pid} {EM} {span}")
        self.assertEqual(doc["profiles"][0]["name"], doc["name"])

        # --title wins.
        w = Workload("--only", "sleeper")
        svg = capture(d, w, "--svg", "--title", "sleepy", seconds=2)
        self.assertEqual(svg_title(svg), "sleepy")

    def test_export_titles(self):
        d = self.daemon
        from_s = int(time.time())
        w = Workload("--only", "sleeper")
        capture(d, w, seconds=2)
        before = last_capture_id(d)
        w2 = Workload("--only", "sleeper")
        capture(d, w2, seconds=2)
        after = last_capture_id(d)
        wait_capture_stored(d, after)
        to_s = int(time.time()) + 2
        # The continuous windows that hold the workload's sleeps are stored.
        deadline = time.monotonic() + 20
        while True:
            r = d.ctl("export", "--from", str(from_s), "--to", str(to_s), "--pid", str(w2.pid), "--svg")
            if r.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(svg_title(r.stdout), f"Off-CPU Time {EM} pid {w2.pid} {EM} {utc_range(from_s, to_s)}")

        r = d.ctl("export", "--capture", str(after), "--kind", "offcpu", "--format", "speedscope")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["name"], f"Off-CPU Time {EM} all processes {EM} capture {after}")

        r = d.ctl("export", "--capture", str(after), "--diff-against", f"capture:{before}", "--svg",
                  "--comm", "ow-sleeper")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(svg_title(r.stdout), f"Differential Off-CPU Time {EM} comm ow-sleeper {EM} "
                         f"capture {after} vs capture {before}")

        r = d.ctl("export", "--capture", str(after), "--svg", "--title", "mine")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(svg_title(r.stdout), "mine")

        # The web page's graph: the same title.
        from test_serve import Server
        server = Server(d.socket, "--listen", "127.0.0.1:0")
        try:
            status, ctype, svg = server.get(f"/api/export?capture={after}&format=svg&pid={w2.pid}")
        finally:
            self.assertEqual(server.stop(), 0)
        self.assertEqual((status, ctype), (200, "image/svg+xml"))
        self.assertEqual(svg_title(svg.decode()), f"Off-CPU Time {EM} pid {w2.pid} {EM} capture {after}")


class FoldedLimitTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="offcpuctl-limit-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_flamegraph_refuses_too_large_counts(self):
        big = self.write("big.folded", "main;a 5\n\nmain;b 1e+26\n")
        r = ctl("flamegraph", big, "-o", os.path.join(self.dir, "out.svg"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, f"offcpuctl: {big}:3: count 1e+26 is too large (at most {LIMIT})\n")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "out.svg")))
        digits = self.write("digits.folded", "main;a 5\nmain;b 100000000000000000000000000\n")
        r = ctl("flamegraph", digits, "--format", "speedscope")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, f"offcpuctl: {digits}:2: count 100000000000000000000000000 is too large "
                         f"(at most {LIMIT})\n")
        r = ctl("flamegraph", stdin="a 1\nb 9007199254740992\n")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, f"offcpuctl: standard input:2: count 9007199254740992 is too large "
                         f"(at most {LIMIT})\n")
        total = self.write("total.folded", "a 9007199254740990\nb 1\nc 1\n")
        r = ctl("--json", "flamegraph", total)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(json.loads(r.stdout)["error"],
                         {"code": "input_error",
                          "message": f"{total}:3: the counts add up to more than {LIMIT}"})
        # A filter keeps the file's line numbers.
        r = ctl("flamegraph", "--grep", "^b$", big)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, f"offcpuctl: {big}:3: count 1e+26 is too large (at most {LIMIT})\n")

    def test_other_lines_as_before(self):
        ok = self.write("ok.folded", f"main;a {LIMIT}\nno count here\nmain;b 1e\n")
        r = ctl("flamegraph", ok)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, f"offcpuctl: warning: {ok}: 2 invalid lines skipped (first: line 2)\n")
        self.assertIn("<svg", r.stdout)

    def test_diff_refuses_too_large_counts(self):
        ok = self.write("ok.folded", "a 1\n")
        big = self.write("big.folded", "a 1\nb 2\nc 1e+26\n")
        for args in ([ok, big], [big, ok], [ok, big, "--svg"]):
            with self.subTest(args=args):
                r = ctl("diff", *args)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stderr, f"offcpuctl: {big}:3: count 1e+26 is too large (at most {LIMIT})\n")
                self.assertEqual(r.stdout, "")
        r = ctl("diff", ok, ok)
        self.assertEqual((r.returncode, r.stdout), (0, "a 1 1\n"))


if __name__ == "__main__":
    unittest.main()
