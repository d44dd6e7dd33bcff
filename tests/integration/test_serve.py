"""offcpuctl serve: the HTTP API over a real daemon's stored windows, and the
page in headless Chromium (serve_browser.js).

A ground-truth workload (offcpu_workload's sleeper) runs under the
continuous profile (1 s windows); the heatmap's cells are checked against
exports of single windows, the API's folded export byte for byte against
offcpuctl export, the page's drag against the export of the dragged
windows, its shift-drag against the differential export, and its URL by
reopening it. The browser part is skipped, with the reason, when node,
Chromium or playwright-core is missing (offcpu_env.browser_missing).
"""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from offcpu_env import OFFCPUCTL, Daemon, Workload, browser_missing, check_sanitizer_report, node_env
from test_daemon import TOLERANCE
from test_windows import FAST, continuous, now_ms, wait_stored, windows

HERE = os.path.dirname(os.path.abspath(__file__))


class Server:
    """offcpuctl serve on an ephemeral loopback port."""

    def __init__(self, socket_path, *args):
        self.proc = subprocess.Popen([OFFCPUCTL, "--socket", socket_path, "serve", *args],
                                     stderr=subprocess.PIPE, text=True)
        self.line = self.proc.stderr.readline()
        m = re.search(r"serving (http://\S+/)", self.line)
        if not m:
            self.stop()
            raise AssertionError(f"serve did not start: {self.line}")
        self.url = m.group(1)

    def get(self, path, method="GET", headers=None):
        """(status, content type, body bytes), errors included."""
        req = urllib.request.Request(self.url + path.lstrip("/"), method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.headers["Content-Type"], r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers["Content-Type"], e.read()

    def json(self, path):
        status, ctype, body = self.get(path)
        assert ctype == "application/json", (path, status, ctype, body[:200])
        return status, json.loads(body)

    def stop(self):
        """SIGTERM; returns the exit code (0: it stopped cleanly). Raises
        AssertionError on a sanitizer report in its stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            rest = self.proc.stderr.read()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rest = ""
        self.proc.stderr.close()
        check_sanitizer_report(rest, "offcpuctl serve")
        return self.proc.returncode


def sec(ms):
    return f"{ms / 1000:.3f}"


def cgroup2_mount():
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or
    /sys/fs/cgroup/unified beside v1 controllers), or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[2] == "cgroup2":
                return fields[1]
    return None


def cgroup_of(pid):
    """pid's cgroup v2 path, as /proc/PID/cgroup and offcpud name it."""
    with open(f"/proc/{pid}/cgroup") as f:
        return next(line[3:].rstrip("\n") for line in f if line.startswith("0::"))


def rmdir_retry(path, timeout=5):
    """rmdir of a cgroup whose last task is exiting: busy until it is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def folded_total_us(text):
    return sum(int(line.rpartition(" ")[2]) for line in text.splitlines() if line)


class ServeTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(FAST)
        try:
            # 3 s of 30 ms sleeps, over three or four 1 s windows.
            cls.workload = Workload("--only", "sleeper", "--sleeps", "100", "--sleep-ms", "30")
            cls.begin = now_ms()
            cls.truth = cls.workload.go()
            cls.end = now_ms()
            wait_stored(cls.daemon, cls.end)
            # The range: every continuous window the workload's blocks may be in.
            ws = [w for w in continuous(windows(cls.daemon)) if w["end_ms"] > cls.begin - 1000
                  and w["start_ms"] < cls.end + 1000]
            cls.windows = ws
            cls.from_ms, cls.to_ms = ws[0]["start_ms"], ws[-1]["end_ms"]
            cls.server = Server(cls.daemon.socket, "--listen", "127.0.0.1:0")
        except BaseException:
            cls.daemon.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        served = cls.server.stop()
        code = cls.daemon.stop()
        assert served == 0, f"offcpuctl serve exited with {served}"
        assert code == 0, cls.daemon.log_text()

    def export_json(self, *args):
        r = self.daemon.ctl("--json", "export", *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return json.loads(r.stdout)["export"]

    def heatmap(self, **params):
        q = "&".join(f"{k}={v}" for k, v in {"from": sec(self.from_ms), "to": sec(self.to_ms),
                                              **params}.items())
        status, body = self.server.json(f"/api/heatmap?{q}")
        self.assertEqual(status, 200, body)
        return body["heatmap"]

    def test_heatmap_cells_are_the_windows_totals(self):
        h = self.heatmap(pid=self.workload.pid, rows="thread")
        self.assertEqual(h["start_ms"], [w["start_ms"] for w in self.windows], "a column per window")
        self.assertEqual(h["end_ms"], [w["end_ms"] for w in self.windows])
        pid = str(self.workload.pid)
        for s in h["series"]:
            cells = dict(zip(s["cells"][::2], s["cells"][1::2]))
            self.assertEqual(sum(cells.values()), s["total_ns"])
            for i, w in enumerate(self.windows):
                exp = self.export_json("--from", sec(w["start_ms"]), "--to", sec(w["start_ms"] + 1),
                                       "--pid", pid, "--format", "json")
                self.assertEqual(exp["windows"], 1)
                want = sum(r["value_ns"] for r in exp["samples"] if r["pid"] == s["key"])
                self.assertEqual(cells.get(i, 0), want, f"thread {s['key']}, window {i}")
        # Ground truth: the sleeper's row holds at least its measured sleep.
        sleeper = next(s for s in h["series"] if s["key"] == self.workload.tids["ow-sleeper"])
        truth = self.truth["ow-sleeper"]["blocked_ns"]
        self.assertGreaterEqual(sleeper["total_ns"], truth * (1 - TOLERANCE))
        self.assertLessEqual(sleeper["total_ns"], truth * (1 + TOLERANCE) + 1.5e9,
                             "its sleeps plus at most its start-line wait")

        # Processes and states partition the same time.
        procs = self.heatmap(pid=pid)
        self.assertEqual([s["key"] for s in procs["series"]], [self.workload.pid])
        self.assertEqual(procs["series"][0]["total_ns"], sum(s["total_ns"] for s in h["series"]))
        states = self.heatmap(pid=pid, rows="state")
        self.assertEqual(sum(s["total_ns"] for s in states["series"]), procs["series"][0]["total_ns"])
        self.assertIn("S", [s["label"] for s in states["series"]])
        exp = self.export_json("--from", sec(self.from_ms), "--to", sec(self.to_ms), "--pid", pid)
        self.assertEqual(procs["series"][0]["total_ns"], exp["total_ns"])

        # max_rows: the rest is one "other" row, and nothing is lost.
        every = self.heatmap(max_rows=1000)
        top = self.heatmap(max_rows=2)
        self.assertEqual(len(top["series"]), 3)
        self.assertTrue(top["series"][-1]["other"])
        self.assertEqual(sum(s["total_ns"] for s in top["series"]),
                         sum(s["total_ns"] for s in every["series"]))

    def test_export_is_offcpuctl_export_byte_for_byte(self):
        f, t = sec(self.from_ms), sec(self.to_ms)
        status, ctype, body = self.server.get(f"/api/export?from={f}&to={t}&format=folded")
        self.assertEqual((status, ctype), (200, "text/plain; charset=utf-8"))
        cli = subprocess.run([OFFCPUCTL, "--socket", self.daemon.socket, "export", "--from", f, "--to", t],
                             capture_output=True)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertTrue(body)
        self.assertEqual(body, cli.stdout)
        # With filters, and as a differential.
        pid, half = str(self.workload.pid), sec(self.windows[len(self.windows) // 2]["start_ms"])
        q = f"from={half}&to={t}&pid={pid}&state=S&grep=sleeper&diff_against={f}..{half}"
        status, _, body = self.server.get(f"/api/export?{q}")
        cli = subprocess.run([OFFCPUCTL, "--socket", self.daemon.socket, "export", "--from", half, "--to", t,
                              "--pid", pid, "--state", "S", "--grep", "sleeper", "--diff-against",
                              f"{f}..{half}"], capture_output=True)
        self.assertEqual(status, 200)
        self.assertEqual(body, cli.stdout)
        # The other formats.
        status, ctype, svg = self.server.get(f"/api/export?from={f}&to={t}&format=svg&pid={pid}")
        self.assertEqual((status, ctype), (200, "image/svg+xml"))
        self.assertIn(b"<svg", svg)
        status, ctype, body = self.server.get(f"/api/export?from={f}&to={t}&format=json&pid={pid}")
        self.assertEqual(json.loads(body)["export"]["total_ns"],
                         self.export_json("--from", f, "--to", t, "--pid", pid)["total_ns"])
        status, ctype, body = self.server.get(f"/api/export?from={f}&to={t}&format=pprof&pid={pid}")
        self.assertEqual((status, ctype, body[:2]), (200, "application/octet-stream", b"\x1f\x8b"))
        status, body = self.server.json(f"/api/hist?from={f}&to={t}&pid={pid}")
        self.assertEqual([p["tgid"] for p in body["hist"]["processes"]], [self.workload.pid])
        status, body = self.server.json("/api/windows")
        self.assertEqual(status, 200)
        self.assertTrue(set(w["id"] for w in continuous(body["windows"])) >=
                        set(w["id"] for w in self.windows))

    def test_api_errors(self):
        cases = [
            ("/api/export?from=yesterday", 400, "bad_request", "bad from 'yesterday'"),
            ("/api/export", 400, "bad_request", "needs window, from or capture"),
            ("/api/export?window=last1m&format=xml", 400, "bad_request", "bad format"),
            ("/api/export?window=last1m&cmd=capture", 400, "bad_request", "takes no parameter 'cmd'"),
            ("/api/export?window=last1m&pid=1&pid=2", 400, "bad_request", "given twice"),
            ("/api/export?window=last1m&grep=(", 400, "bad_request", "not a POSIX extended regex"),
            ("/api/export?window=last1m&diff_against=last2m&format=json", 400, "bad_request",
             "differential export is folded or svg"),
            ("/api/hist?window=last1m&kind=wakeup", 400, "bad_request", "must be one of: offcpu, runq"),
            ("/api/heatmap?window=last1m&rows=cpu", 400, "bad_request", "bad rows"),
            ("/api/heatmap?capture=1", 400, "bad_request", "takes no parameter 'capture'"),
            ("/api/export?window=last1m&group_by=pid", 400, "bad_request",
             "bad group_by 'pid': want comm, process, unit, container or cgroup"),
            ("/api/export?window=last1m&cgroup=/a&unit=nginx", 400, "bad_request",
             "cgroup, unit and container exclude each other: give one"),
            ("/api/hist?window=last1m&unit=nginx&container=ab12", 400, "bad_request",
             "cgroup, unit and container exclude each other: give one"),
            ("/api/export?window=last1m&cgroup=system.slice", 400, "bad_request",
             "bad cgroup 'system.slice': want an absolute cgroup v2 path"),
            ("/api/export?window=last1m&unit=a/b", 400, "bad_request", "bad unit 'a/b'"),
            ("/api/hist?window=last1m&container=xyz", 400, "bad_request",
             "bad container 'xyz': want up to 64 hex digits"),
            ("/api/hist?window=last1m&group_by=cgroup", 400, "bad_request",
             "takes no parameter 'group_by'"),
            ("/api/export?from=1000&to=2000&format=svg", 404, "no_data", ""),
            ("/api/nothing", 404, "not_found", ""),
        ]
        for path, status, code, msg in cases:
            got, body = self.server.json(path)
            self.assertEqual((got, body["ok"], body["error"]["code"]), (status, False, code), path)
            self.assertIn(msg, body["error"]["message"], path)
        # No daemon behind it: not_running.
        other = Server(os.path.join(self.daemon.dir, "missing.sock"), "--listen", "127.0.0.1:0")
        try:
            status, body = other.json("/api/windows")
            self.assertEqual((status, body["error"]["code"]), (503, "not_running"))
        finally:
            other.stop()

    def test_export_by_cgroup(self):
        mount = cgroup2_mount()
        if not mount:
            self.skipTest("no cgroup v2 hierarchy is mounted")
        test_dir = os.path.join(mount, "offcpu-serve-test")
        rmdir_retry(test_dir)  # a killed run's, empty once its tasks are gone
        os.mkdir(test_dir)
        # A shell that sleeps 50 ms at a time, in a cgroup of its own: it
        # waits for its sleeps, which are born in the cgroup too.
        sleeper = subprocess.Popen(["sh", "-c", "while :; do sleep 0.05; done"])
        try:
            with open(os.path.join(test_dir, "cgroup.procs"), "w") as f:
                f.write(str(sleeper.pid))
            path = cgroup_of(sleeper.pid)
            self.assertTrue(path.endswith("/offcpu-serve-test"), path)
            begin = now_ms()
            time.sleep(2)
            end = now_ms()
            wait_stored(self.daemon, end)
        finally:
            sleeper.kill()
            sleeper.wait()
            rmdir_retry(test_dir)
        f, t = sec(begin), sec(end)

        # group_by=cgroup: every stack's root frame is a cgroup, the sleeper's among them.
        status, ctype, body = self.server.get(f"/api/export?from={f}&to={t}&group_by=cgroup")
        self.assertEqual((status, ctype), (200, "text/plain; charset=utf-8"), body[:300])
        lines = body.decode().splitlines()
        roots = {line.split(";", 1)[0] for line in lines}
        self.assertIn(path, roots)
        # "[cgroup ID]": a cgroup offcpud could not name (gone before it looked).
        self.assertTrue(all(r.startswith("/") or r == "[no cgroup]" or r.startswith("[cgroup ")
                            for r in roots), roots)
        self.assertTrue(any(line.startswith(f"{path};sh;") for line in lines), "the shell under its cgroup")
        cli = subprocess.run([OFFCPUCTL, "--socket", self.daemon.socket, "export", "--from", f, "--to", t,
                              "--group-by", "cgroup"], capture_output=True)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(body, cli.stdout, "byte for byte offcpuctl export --group-by cgroup")

        # cgroup=PATH: that cgroup's rows only, as offcpuctl export --cgroup.
        q = f"from={f}&to={t}&cgroup={urllib.parse.quote(path)}"
        status, _, body = self.server.get(f"/api/export?{q}&group_by=cgroup")
        self.assertEqual(status, 200, body[:300])
        self.assertEqual({line.split(";", 1)[0] for line in body.decode().splitlines()}, {path})
        cli = subprocess.run([OFFCPUCTL, "--socket", self.daemon.socket, "export", "--from", f, "--to", t,
                              "--cgroup", path, "--group-by", "cgroup"], capture_output=True)
        self.assertEqual(body, cli.stdout)
        status, body = self.server.json(f"/api/export?{q}&format=json")
        self.assertEqual(status, 200, body)
        samples = body["export"]["samples"]
        self.assertTrue(samples)
        self.assertEqual({r.get("cgroup") for r in samples}, {path})
        self.assertIn(sleeper.pid, {r["tgid"] for r in samples})
        # group_by=process: "name [pid]" roots.
        status, _, body = self.server.get(f"/api/export?{q}&group_by=process")
        self.assertEqual(status, 200, body[:300])
        self.assertIn(f"sh [{sleeper.pid}]", {line.split(";", 1)[0] for line in body.decode().splitlines()})
        # hist: the processes in that cgroup, not the daemon or this test.
        status, body = self.server.json(f"/api/hist?{q}")
        self.assertEqual(status, 200, body)
        tgids = {p["tgid"] for p in body["hist"]["processes"]}
        self.assertIn(sleeper.pid, tgids)
        self.assertFalse(tgids & {os.getpid(), self.daemon.proc.pid, self.workload.pid}, tgids)

    def test_page_has_cgroup_controls(self):
        status, ctype, html = self.server.get("/")
        self.assertEqual((status, ctype), (200, "text/html; charset=utf-8"))
        html = html.decode()
        for control in ('<input id="cgroup"', '<input id="unit"', '<input id="container"',
                        '<select id="group_by">'):
            self.assertIn(control, html)
        select = html[html.index('<select id="group_by">'):]
        select = select[:select.index("</select>")]
        self.assertEqual(re.findall(r'<option value="(\w+)"', select),
                         ["comm", "process", "unit", "container", "cgroup"])
        status, _, js = self.server.get("/app.js")
        self.assertEqual(status, 200)
        for key in ("cgroup", "unit", "container", "group_by", "--group-by"):
            self.assertIn(key, js.decode())

    def test_read_only_and_loopback(self):
        before = self.daemon.status()["counters"]
        for path in ("/api/capture", "/api/stop", "/api/latency", "/api/status/../capture"):
            status, body = self.server.json(path)
            self.assertEqual((status, body["error"]["code"]), (404, "not_found"), path)
        for method in ("POST", "PUT", "DELETE"):
            status, _, body = self.server.get("/api/export?window=last1m", method=method)
            self.assertEqual(status, 405, method)
            self.assertEqual(json.loads(body)["error"]["code"], "bad_request")
        # Another site's name for 127.0.0.1 (DNS rebinding) is refused.
        status, _, body = self.server.get("/api/windows", headers={"Host": "evil.example:80"})
        self.assertEqual((status, json.loads(body)["error"]["code"]), (403, "permission_denied"))
        self.assertEqual(self.daemon.status()["captures_running"], 0)
        self.assertEqual(self.daemon.status()["counters"].get("captures", 0), before.get("captures", 0))

        # Not loopback: refused without --allow-remote, a warning with it.
        r = subprocess.run([OFFCPUCTL, "--socket", self.daemon.socket, "serve", "--listen", "0.0.0.0:0"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a loopback address", r.stderr)
        remote = subprocess.Popen([OFFCPUCTL, "--socket", self.daemon.socket, "serve", "--listen", "0.0.0.0:0",
                                   "--allow-remote"], stderr=subprocess.PIPE, text=True)
        try:
            self.assertIn("warning: serving on 0.0.0.0", remote.stderr.readline())
            self.assertIn("serving http://0.0.0.0:", remote.stderr.readline())
        finally:
            remote.terminate()
            remote.wait(timeout=10)
            remote.stderr.close()
        # The default: loopback, the documented port (unless something holds it).
        default = subprocess.Popen([OFFCPUCTL, "--socket", self.daemon.socket, "serve"],
                                   stderr=subprocess.PIPE, text=True)
        try:
            line = default.stderr.readline()
            self.assertTrue("serving http://127.0.0.1:9274/" in line or
                            "cannot listen on 127.0.0.1:9274" in line, line)
        finally:
            default.terminate()
            default.wait(timeout=10)
            default.stderr.close()

    def test_page_in_browser(self):
        missing = browser_missing()
        if missing:
            self.skipTest(missing)
        pid = self.workload.pid
        n = len(self.windows)
        cols_b, cols_a = (max(1, n - 3), n - 1), (0, max(0, n - 4))
        url = (f"{self.server.url}?window=custom&from={sec(self.from_ms)}&to={sec(self.to_ms)}"
               f"&rows=thread&pid={pid}")
        outdir = tempfile.mkdtemp(prefix="serve-browser-")
        p = subprocess.run(["node", os.path.join(HERE, "serve_browser.js"), url,
                            str(self.workload.tids["ow-sleeper"]), "%d-%d" % cols_b, "%d-%d" % cols_a, outdir],
                           capture_output=True, text=True, timeout=300, env=node_env())
        self.assertEqual(p.returncode, 0, f"serve_browser.js failed: {p.stderr}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(res["errors"], [], "no JavaScript errors")
        self.assertGreaterEqual(res["row"], 0, res["labels"])
        sleeper = self.workload.tids["ow-sleeper"]

        # The cells as the page shows them: each window's export of that thread.
        self.assertEqual(len(res["hover"]), n)
        for i, (cell, w) in enumerate(zip(res["hover"], self.windows)):
            self.assertTrue(cell["visible"])
            self.assertEqual((cell["col"], cell["row"]), (i, res["row"]))
            exp = self.export_json("--from", sec(w["start_ms"]), "--to", sec(w["start_ms"] + 1),
                                   "--pid", str(pid), "--format", "json")
            want = sum(r["value_ns"] for r in exp["samples"] if r["pid"] == sleeper)
            self.assertEqual(cell["ns"], want, f"column {i}")
            self.assertIn(f"{want / 1e9:.3f} s", cell["text"])

        # The drag: exactly the dragged windows, and their flame graph.
        b = self.windows[cols_b[0]:cols_b[1] + 1]
        view = res["afterDrag"]["view"]
        self.assertEqual(view["sel"], f"{sec(b[0]['start_ms'])}..{sec(b[-1]['end_ms'])}")
        exp = self.export_json("--from", sec(b[0]["start_ms"]), "--to", sec(b[-1]["end_ms"]), "--pid", str(pid))
        self.assertEqual(exp["windows"], len(b))
        folded = self.daemon.ctl("export", "--from", sec(b[0]["start_ms"]), "--to", sec(b[-1]["end_ms"]),
                                 "--pid", str(pid)).stdout
        self.assertEqual(res["afterDrag"]["graph"]["error"], "")
        self.assertEqual(res["afterDrag"]["graph"]["root"], f"all ({folded_total_us(folded):,} us, 100.00%)")
        self.assertEqual(res["afterDrag"]["boxB"], "block")
        self.assertIn(f"--from {sec(b[0]['start_ms'])} --to {sec(b[-1]['end_ms'])} --pid '{pid}'",
                      res["afterDrag"]["cli"])
        self.assertEqual([h["tgid"] for h in res["hist"]], [pid])

        # The shift-drag: the baseline, and the differential graph against it.
        a = self.windows[cols_a[0]:cols_a[1] + 1]
        view = res["afterShiftDrag"]["view"]
        self.assertEqual(view["base"], f"{sec(a[0]['start_ms'])}..{sec(a[-1]['end_ms'])}")
        g = res["afterShiftDrag"]["graph"]
        self.assertIn("diff_against=", g["src"])
        self.assertIn("Differential", g["title"])
        diff = self.daemon.ctl("export", "--from", sec(b[0]["start_ms"]), "--to", sec(b[-1]["end_ms"]),
                               "--pid", str(pid), "--diff-against", view["base"]).stdout
        b_total = sum(int(line.split()[-1]) for line in diff.splitlines())
        self.assertTrue(g["root"].startswith(f"all ({b_total:,} us, 100.00%"), g["root"])

        # The URL holds the view: reopened, the same view, rows and boxes.
        self.assertEqual(res["reopened"]["view"], res["afterShiftDrag"]["view"])
        self.assertEqual(res["reopened"]["labels"], res["labels"])
        self.assertEqual(res["reopened"]["boxes"], res["original"])
        self.assertEqual([b[0] for b in res["original"].values()], ["block", "block"])
        self.assertEqual(res["reopened"]["graph"]["root"], g["root"])


if __name__ == "__main__":
    unittest.main()
