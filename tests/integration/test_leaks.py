"""Leak check: offcpud built with -DOFFCPU_SANITIZE=ON (scripts/test.sh runs
the suite from build-asan) goes through a capture and export cycle, the
error paths of a bad request and of a client that leaves mid-capture, then
stops on SIGTERM. LeakSanitizer checks the heap at exit: the daemon must
exit 0 with no report in its log. Skipped on a build without ASan, where
nothing would look for leaks."""
import json
import os
import socket
import time
import unittest

from offcpu_env import OFFCPUD, SANITIZED, Daemon, RequestWorkload, Workload, parse_folded

FAST = "window_seconds = 1\ndrain_interval_ms = 250\n"


def capture(d, w, *args, seconds=2):
    """Captures workload w while it runs its timed phase; returns offcpuctl's stdout."""
    p = d.ctl_popen("capture", "--pid", str(w.pid), "--seconds", str(seconds), *args)
    try:
        d.wait_captures(1)
        w.go()
        out, err = p.communicate(timeout=60)
    finally:
        w.kill()
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, f"capture {args} failed ({p.returncode}): {err}"
    return out


@unittest.skipUnless(SANITIZED, f"{OFFCPUD} is not built with ASan (cmake -DOFFCPU_SANITIZE=ON)")
class LeakTest(unittest.TestCase):
    def test_capture_export_cycle(self):
        # Whatever the caller's ASAN_OPTIONS say, leaks are looked for (a later option wins).
        options = ":".join(o for o in (os.environ.get("ASAN_OPTIONS"), "detect_leaks=1") if o)
        d = Daemon(FAST, env=dict(os.environ, ASAN_OPTIONS=options))
        try:
            self.cycle(d)
        finally:
            code = d.stop()  # raises on a sanitizer report
        log = d.log_text()
        self.assertEqual(code, 0, log)
        self.assertNotIn("LeakSanitizer", log)

    def cycle(self, d):
        # Captures: JSON rows, an svg, a wakeup kind, a request-synchronous one.
        cap = json.loads(capture(d, Workload("--only", "sleeper", "--sleeps", "10"), "--json"))["capture"]
        self.assertTrue(cap["samples"])
        before = cap["id"]
        self.assertIn("<svg", capture(d, Workload("--only", "sleeper"), "--svg"))
        after = json.loads(capture(d, Workload("--only", "sleeper"), "--json", "--svg"))["capture"]["id"]
        self.assertTrue(parse_folded(capture(d, Workload("--only", "locker"), "--kind", "offwake")))
        w = RequestWorkload("request_workload")
        self.assertTrue(capture(d, w, "--request", w.request))

        # Stored windows and captures, then exports of them.
        deadline = time.monotonic() + 10
        while True:
            windows = json.loads(d.ctl("--json", "windows").stdout)["windows"]
            if after in {w["capture_id"] for w in windows} and any(w["capture_id"] == 0 for w in windows):
                break
            self.assertLess(time.monotonic(), deadline, f"capture {after} or a window not stored: {windows}")
            time.sleep(0.1)
        self.assertEqual(d.ctl("windows").returncode, 0)
        for args in (["--window", "last5m"], ["--window", "last5m", "--svg"],
                     ["--window", "last5m", "--format", "speedscope"], ["--capture", str(after), "--json"],
                     ["--capture", str(after), "--diff-against", f"capture:{before}"],
                     ["--capture", str(after), "--diff-against", f"capture:{before}", "--normalize", "--svg"],
                     ["--window", "last5m", "--grep", "sleeper_thread", "--exclude", "poll"]):
            r = d.ctl("export", *args)
            self.assertEqual(r.returncode, 0, f"export {args}: {r.stderr}")
            self.assertTrue(r.stdout, args)
        for args in (["--window", "last5m"], ["--json", "--window", "last5m", "--kind", "runq"]):
            r = d.ctl("hist", *args)
            self.assertEqual(r.returncode, 0, f"hist {args}: {r.stderr}")

        # Requests that fail: malformed, unknown fields, too large, cut short.
        for data in (b"this is not json\n", b'{"v":1,"cmd":"capture","bogus":1}\n',
                     b'{"v":1,"cmd":"export","from_ms":"yesterday"}\n'):
            self.assertFalse(d.raw(data)[0]["ok"], data)
        self.assertEqual(d.raw(b'{"v":1,"cmd":"status","pad":"' + b"x" * (1 << 20) + b'"}\n')[0]["error"]["code"],
                         "too_large")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.socket)
        s.sendall(b'{"v":1,"cmd":"sta')
        s.close()

        # A client that disconnects mid-capture: the capture is cancelled, its slot freed.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.socket)
        s.sendall(b'{"v":1,"cmd":"capture","seconds":30}\n')
        d.wait_captures(1)
        time.sleep(0.5)  # a drain or two into the capture
        s.close()
        deadline = time.monotonic() + 10
        while d.status()["captures_running"]:
            self.assertLess(time.monotonic(), deadline, "the abandoned capture still runs")
            time.sleep(0.05)


if __name__ == "__main__":
    unittest.main()
