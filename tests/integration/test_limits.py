"""Client limits: each one, when hit, gives a clear error and leaves the
daemon serving others (etc/offcpud.conf: client_timeout, max_captures,
max_reply_bytes, max_capture_seconds, max_clients; max_request_bytes is in
test_daemon)."""
import json
import os
import socket
import subprocess
import time
import unittest

from offcpu_env import EXIT_BUSY, EXIT_USAGE, Daemon


def connect(d):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect(d.socket)
    return s


def read_all(s):
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    return out


class LimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("client_timeout = 2s\nmax_captures = 2\nmax_reply_bytes = 64K\n"
                            "max_capture_seconds = 5\n")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def tearDown(self):
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())
        self.assertEqual(self.daemon.ctl("status").returncode, 0)

    def test_slow_request_line_times_out(self):
        s = connect(self.daemon)
        start = time.monotonic()
        try:
            for b in b'{"v":1,"cmd":"status"':  # one byte every 0.3 s, never finished
                s.sendall(bytes([b]))
                time.sleep(0.3)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = read_all(s)
        s.close()
        elapsed = time.monotonic() - start
        err = json.loads(reply.splitlines()[0])["error"]
        self.assertEqual(err["code"], "timeout")
        self.assertIn("request line not finished for 2 s", err["message"])
        self.assertLess(elapsed, 6, "cut off at about the timeout, not at the end of the trickle")

    def test_idle_connection_is_closed(self):
        s = connect(self.daemon)
        start = time.monotonic()
        reply = read_all(s)
        s.close()
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(json.loads(reply)["error"]["code"], "timeout")

    def test_a_capture_is_not_idleness(self):
        r = self.daemon.ctl("--json", "capture", "--seconds", "4", "--pid", str(os.getpid()))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_max_captures(self):
        d = self.daemon
        running = [d.ctl_popen("capture", "--seconds", "5", "-o", "/dev/null") for _ in range(2)]
        try:
            d.wait_captures(2)
            r = d.ctl("capture", "--seconds", "1")
            self.assertEqual(r.returncode, EXIT_BUSY, r.stderr)
            self.assertIn("2 captures are running, the limit (max_captures)", r.stderr)
        finally:
            for p in running:
                p.communicate(timeout=30)
        self.assertEqual(d.ctl("capture", "--seconds", "1", "-o", "/dev/null").returncode, 0)

    def test_max_capture_seconds(self):
        for cmd in (["capture"], ["latency", "--func", "main"]):
            r = self.daemon.ctl(*cmd, "--pid", str(os.getpid()), "--seconds", "6")
            self.assertEqual(r.returncode, EXIT_USAGE, r.stderr)
            self.assertIn("seconds must be at most 5 (max_capture_seconds)", r.stderr)

    def test_reply_too_large(self):
        # 300 short-lived processes, each its own rows: far more than 64 KiB of JSON.
        d = self.daemon
        cap = d.ctl_popen("--json", "capture", "--seconds", "3")
        d.wait_captures(1)
        subprocess.run(["sh", "-c", "for i in $(seq 300); do sleep 0.01 & done; wait"], check=True)
        out, _ = cap.communicate(timeout=30)
        err = json.loads(out)["error"]
        self.assertEqual(err["code"], "too_large")
        self.assertIn("over max_reply_bytes (65536): narrow the request", err["message"])
        # Narrowed, it fits.
        r = d.ctl("--json", "capture", "--seconds", "1", "--pid", str(d.proc.pid))
        self.assertEqual(r.returncode, 0, r.stderr)


class MaxClientsTest(unittest.TestCase):
    def test_max_clients(self):
        d = Daemon("max_clients = 3\n")
        try:
            held = [connect(d) for _ in range(3)]
            s = connect(d)  # a fourth while the three are held
            err = json.loads(read_all(s).splitlines()[0])["error"]
            s.close()
            self.assertEqual((err["code"], err["message"]), ("busy", "too many clients connected"))
            for h in held:
                h.close()
            # their slots are free again once the daemon sees them close
            deadline = time.monotonic() + 5
            while d.ctl("status").returncode != 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(d.ctl("status").returncode, 0)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())


if __name__ == "__main__":
    unittest.main()
