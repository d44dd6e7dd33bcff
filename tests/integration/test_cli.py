"""offcpuctl's habits: COMMAND --help and help COMMAND for every command;
--version; --json before or after the command; a --socket that is not
offcpud's said as such, and how to start offcpud fit for the host; a
capture's id on its summary; status
says per kind whether it is ready, in use or unavailable (and why), and
lists the BPF programs only with --verbose (or --json)."""
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from offcpu_env import OFFCPUCTL, OFFCPUD, Daemon

KINDS = ["offcpu", "wakeup", "offwake", "chain", "runq", "oncpu", "bio", "fileio", "hotcold", "request",
         "latency"]


def ctl(*args):
    return subprocess.run([OFFCPUCTL, *args], capture_output=True, text=True, timeout=30)


def commands():
    """The commands the whole help lists (the lines indented by 2 under Commands:)."""
    text = ctl("help", "--all").stdout
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z]+)", block, re.M)]


class HelpTest(unittest.TestCase):
    def test_every_command_has_its_help(self):
        names = commands()
        for must in ("status", "capture", "blocked", "windows", "export", "hist", "flamegraph", "diff", "latency",
                     "help"):
            self.assertIn(must, names)
        for name in names:
            with self.subTest(command=name):
                r = ctl(name, "--help")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(r.stdout.startswith(f"Usage: offcpuctl [--socket PATH] [--json] {name}"), r.stdout)
                self.assertIn("Global options:", r.stdout)
                self.assertEqual(ctl("help", name).stdout, r.stdout)
                self.assertEqual(ctl(name, "-h").stdout, r.stdout)
                # another command's entry is not in it
                for other in names:
                    if other != name and other != "help":
                        self.assertNotIn(f"Usage: offcpuctl [--socket PATH] [--json] {other}", r.stdout)

    def test_command_help_has_its_options(self):
        r = ctl("capture", "--pid", "1", "--help")  # --help wins wherever it is
        self.assertEqual(r.returncode, 0, r.stderr)
        for opt in ("--pid", "--kind", "--request", "--grep", "--output", "--svg"):
            self.assertIn(opt, r.stdout)
        self.assertNotIn("--normalize", r.stdout)  # export's and diff's
        r = ctl("export", "--help")
        for opt in ("--window", "--diff-against", "--exclude", "Times T"):
            self.assertIn(opt, r.stdout)
        r = ctl("status", "--help")
        self.assertIn("--verbose", r.stdout)

    def test_unknown_command(self):
        r = ctl("help", "nonsense")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown command 'nonsense'", r.stderr)


class ClientHabitsTest(unittest.TestCase):
    def test_version(self):
        for binary, name in ((OFFCPUCTL, "offcpuctl"), (OFFCPUD, "offcpud")):
            for flag in ("--version", "-V"):
                r = subprocess.run([binary, flag], capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertRegex(r.stdout, rf"^{name} \d+\.\d+\.\d+\n$")

    def test_socket_that_is_no_socket(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "file")
            open(path, "w").close()
            for where, what in ((path, "regular file"), (d, "directory")):
                r = ctl("--socket", where, "status")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr, f"offcpuctl: {where} is not a socket but a {what}: --socket "
                                 "(or OFFCPUD_SOCKET) names offcpud's socket, "
                                 "/run/offcpud/offcpud.sock by default\n")
                r = ctl("--socket", where, "status", "--json")
                self.assertEqual(json.loads(r.stdout)["error"]["code"], "not_a_socket")

    def test_socket_of_something_else(self):
        """Something that is not offcpud listens there."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "other.sock")
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(path)
            srv.listen(1)

            def answer():
                conn, _ = srv.accept()
                conn.recv(4096)
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
                conn.close()
            t = threading.Thread(target=answer)
            t.start()
            try:
                r = ctl("--socket", path, "status")
            finally:
                t.join(timeout=10)
                srv.close()
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(r.stderr, f"offcpuctl: what listens on {path} is not offcpud (its reply "
                             "is not offcpud's protocol)\n")

    def test_not_running_says_how_to_start_it_here(self):
        r = ctl("--socket", "/nonexistent/offcpud.sock", "status")
        self.assertEqual(r.returncode, 3)
        how = ("start it with 'systemctl start offcpud'" if os.path.isdir("/run/systemd/system")
               else "start it with 'offcpud' as root (this host does not run systemd)")
        self.assertEqual(r.stderr, "offcpuctl: offcpud is not running (nothing listens on "
                         f"/nonexistent/offcpud.sock); {how}\n")


class StatusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("window_seconds = 1\ndrain_interval_ms = 200\n")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def kinds_text(self, out):
        rows = {}
        for line in out.split("kinds:\n", 1)[1].splitlines():
            m = re.match(r"^  (\S+) +(ready|in use|unavailable) *(.*)$", line)
            if not m:
                break
            rows[m.group(1)] = (m.group(2), m.group(3))
        return rows

    def test_capture_says_its_id(self):
        """On a terminal, the capture's summary says the id export
        --capture takes (scripts have the JSON reply's "id")."""
        master, slave = os.openpty()
        err = b""
        try:
            p = subprocess.Popen([OFFCPUCTL, "--socket", self.daemon.socket, "capture", "--seconds", "1",
                                  "-o", os.devnull], stdout=subprocess.DEVNULL, stderr=slave)
            os.close(slave)
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the other end closed
                    break
                if not chunk:
                    break
                err += chunk
            self.assertEqual(p.wait(timeout=30), 0, err)
        finally:
            os.close(master)
        m = re.search(rb"stored as capture (\d+): offcpuctl export --capture (\d+)\r?\n", err)
        self.assertTrue(m and m.group(1) == m.group(2), err)
        r = self.daemon.ctl("--json", "windows")
        self.assertIn(int(m.group(1)), [w["capture_id"] for w in json.loads(r.stdout)["windows"]])

    def test_json_before_or_after_the_command(self):
        before = self.daemon.ctl("--json", "status")
        after = self.daemon.ctl("status", "--json")
        self.assertEqual(after.returncode, 0, after.stderr)
        self.assertEqual(json.loads(after.stdout)["cmd"], "status")
        self.assertEqual(json.loads(before.stdout)["status"]["pid"], json.loads(after.stdout)["status"]["pid"])

    def test_each_kind_has_a_state(self):
        d = self.daemon
        st = d.status()
        self.assertEqual([k["name"] for k in st["kinds"]], KINDS)
        r = d.ctl("status")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = self.kinds_text(r.stdout)
        self.assertEqual(list(rows), KINDS)
        for k in st["kinds"]:
            self.assertEqual(rows[k["name"]], (k["state"], k["detail"]))
            if k["state"] == "unavailable":
                self.assertTrue(k["detail"], f"{k['name']}: unavailable says why")
        self.assertEqual(rows["offcpu"], ("in use", "by the continuous profile"))

    def test_a_capture_puts_its_kind_in_use(self):
        d = self.daemon
        self.assertEqual({k["name"]: k["state"] for k in d.status()["kinds"]}["wakeup"], "ready")
        proc = d.ctl_popen("capture", "--kind", "wakeup", "--seconds", "30")
        try:
            d.wait_captures(1)
            kinds = {k["name"]: k for k in d.status()["kinds"]}
            self.assertEqual((kinds["wakeup"]["state"], kinds["wakeup"]["detail"]), ("in use", "by 1 capture"))
            self.assertEqual(kinds["offwake"]["state"], "ready")
        finally:
            proc.terminate()
            proc.communicate(timeout=20)
        deadline = time.monotonic() + 10
        while {k["name"]: k["state"] for k in d.status()["kinds"]}["wakeup"] != "ready":
            self.assertLess(time.monotonic(), deadline, "wakeup back to ready once the capture ended")
            time.sleep(0.05)

    def test_programs_only_with_verbose(self):
        d = self.daemon
        names = [p["name"] for p in d.status()["programs"]]
        self.assertTrue(names)
        plain, verbose = d.ctl("status").stdout, d.ctl("status", "--verbose").stdout
        self.assertIn(f"{len(names)} loaded; --verbose lists them", plain)
        for name in names:
            self.assertIsNone(re.search(rf"^  {re.escape(name)} ", plain, re.M), name)
            self.assertRegex(verbose, rf"(?m)^  {re.escape(name)} +(attached|idle|unloaded)")
        self.assertEqual(d.ctl("status", "-v").stdout.count("\n"), verbose.count("\n"))
        r = d.ctl("status", "--nonsense")
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
