"""offcpuctl capture -- CMD (issue 37): the command profiled from its start
to its exit, the processes it starts included; offcpuctl exits with its exit
code (128+N when signal N killed it); terminal signals reach it; a command
that cannot run is said as a shell says it, and leaves no capture; under sudo
the command runs as the user who called sudo."""
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import unittest

from offcpu_env import OFFCPUCTL, SANITIZED, Daemon, EXIT_NOT_RUNNING, EXIT_USAGE, fd_ids, parse_folded

ROOT_NOTE = ("offcpuctl: note: the command runs as root (under sudo it runs as the user who called "
             "sudo)\n")


def env_without_sudo():
    """offcpuctl's environment as root logged in as root (the tests may run under sudo)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}


def sleep_ns(samples):
    """The time of the samples blocked in nanosleep (sleep(1), time.sleep)."""
    return sum(s["value_ns"] for s in samples if "do_nanosleep" in s["kstack"])


def filter_tgids(daemon):
    """The entries of the daemon's filter_tgids map (tgid -> slot mask), by bpftool."""
    for map_id in fd_ids(daemon.proc.pid, "map_id"):
        info = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(map_id)], capture_output=True,
                                         text=True, check=True).stdout)
        if info.get("name") == "filter_tgids":
            dump = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(map_id)], capture_output=True,
                                  text=True, check=True).stdout
            return {int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little"):
                    int.from_bytes(bytes(int(b, 16) for b in e["value"]), "little") for e in json.loads(dump)}
    raise AssertionError("offcpud holds no filter_tgids map")


class CaptureCommandTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def run_ctl(self, *args, env=None, timeout=60):
        r = subprocess.run([OFFCPUCTL, "--socket", self.daemon.socket, *args], capture_output=True, text=True,
                           timeout=timeout, env=env if env is not None else env_without_sudo())
        return r

    def capture_json(self, *command):
        r = self.run_ctl("--json", "capture", "--", *command)
        return r, json.loads(r.stdout)["capture"]

    def wait_no_capture(self):
        """A cancelled capture ends at the daemon's next drain: status says 0 soon after."""
        deadline = time.monotonic() + 10
        while self.daemon.status()["captures_running"]:
            self.assertLess(time.monotonic(), deadline, "a capture is still running 10 s later")
            time.sleep(0.05)

    def test_sleep_recorded_and_exit_code(self):
        r, cap = self.capture_json("sh", "-c", "sleep 0.5; cat /dev/null")
        self.assertEqual(r.returncode, 0, r.stderr)
        slept = sleep_ns(cap["samples"])
        self.assertTrue(any(s["comm"] == "sleep" and "do_nanosleep" in s["kstack"] for s in cap["samples"]),
                        cap["samples"])
        if not SANITIZED:
            self.assertAlmostEqual(slept / 1e9, 0.5, delta=0.025, msg=cap["samples"])
        # the capture lasted as long as the command, no longer than it needed to
        self.assertGreaterEqual(cap["duration_ns"], 0.5e9)

        r = self.run_ctl("capture", "--", "sh", "-c", "sleep 0.2; exit 3")
        self.assertEqual(r.returncode, 3, r.stderr)
        # the command's exit is how the capture ends, not news
        self.assertNotIn("a target exited", r.stderr)
        rows = parse_folded(r.stdout)
        self.assertTrue(any(f[0] == "sleep" and "do_nanosleep" in f for f, _ in rows), r.stdout)

    def test_children_and_grandchildren_included(self):
        # sh waits for its child; python's child waits for the grandchild, which sleeps.
        r, cap = self.capture_json("sh", "-c", "sleep 0.3 & wait")
        self.assertEqual(r.returncode, 0, r.stderr)
        tgids = {s["tgid"] for s in cap["samples"] if s["comm"] == "sleep"}
        self.assertEqual(len(tgids), 1, cap["samples"])
        if not SANITIZED:
            self.assertAlmostEqual(sleep_ns(cap["samples"]) / 1e9, 0.3, delta=0.015, msg=cap["samples"])

        script = ("import os, time\n"
                  "if os.fork() == 0:\n"
                  "    if os.fork() == 0:\n"
                  "        time.sleep(0.3)\n"
                  "        os._exit(0)\n"
                  "    os.wait()\n"
                  "    os._exit(0)\n"
                  "os.wait()\n")
        r, cap = self.capture_json("python3", "-c", script)
        self.assertEqual(r.returncode, 0, r.stderr)
        sleepers = {s["tgid"] for s in cap["samples"] if "do_nanosleep" in s["kstack"]}
        self.assertEqual(len(sleepers), 1, cap["samples"])
        self.assertGreaterEqual(len({s["tgid"] for s in cap["samples"] if s["comm"] == "python3"}), 3,
                                cap["samples"])
        if not SANITIZED:
            self.assertAlmostEqual(sleep_ns(cap["samples"]) / 1e9, 0.3, delta=0.015, msg=cap["samples"])

    @unittest.skipUnless(shutil.which("bpftool"), "bpftool is not installed")
    def test_filter_entries_go_with_the_capture(self):
        # A child that outlives the command keeps its entry until the capture
        # ends; one that exits takes its own with it.
        r = self.run_ctl("capture", "--", "sh", "-c", "sleep 0.1; sleep 3 & echo $!")
        self.assertEqual(r.returncode, 0, r.stderr)
        orphan = int(r.stdout.split("\n", 1)[0])
        try:
            self.wait_no_capture()
            self.assertEqual(filter_tgids(self.daemon), {})
        finally:
            try:
                os.kill(orphan, signal.SIGKILL)
            except ProcessLookupError:
                pass

        # While it runs: the command and the child alive now, not the one gone.
        p = subprocess.Popen([OFFCPUCTL, "--socket", self.daemon.socket, "capture", "-o", os.devnull, "--", "sh",
                              "-c", "sleep 0.01; sleep 30 & echo $!; wait"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env_without_sudo())
        try:
            child = int(p.stdout.readline())
            time.sleep(0.3)  # the first sleep has exited by now
            entries = filter_tgids(self.daemon)
            shell = int(open(f"/proc/{child}/stat").read().split(") ")[1].split()[1])  # its parent
            self.assertEqual(set(entries), {shell, child}, entries)
            self.assertEqual(entries[shell], entries[child])
            os.kill(child, signal.SIGTERM)
            out, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0, err)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.wait_no_capture()
        self.assertEqual(filter_tgids(self.daemon), {})

    def test_killed_by_signal(self):
        r = self.run_ctl("capture", "--", "sh", "-c", "sleep 0.1; kill -KILL $$")
        self.assertEqual(r.returncode, 128 + signal.SIGKILL, r.stderr)
        self.assertTrue(any("do_nanosleep" in f for f, _ in parse_folded(r.stdout)), r.stdout)

    def test_sigint_to_the_process_group_reaches_the_command(self):
        # offcpuctl leads its own process group here, as a shell's foreground job would be.
        p = subprocess.Popen([OFFCPUCTL, "--socket", self.daemon.socket, "capture", "--", "sleep", "30"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                             env=env_without_sudo())
        try:
            deadline = time.monotonic() + 30
            while not self.child_runs(p.pid, "sleep"):
                self.assertLess(time.monotonic(), deadline, "the command did not start")
                time.sleep(0.05)
            time.sleep(0.3)
            os.killpg(p.pid, signal.SIGINT)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.assertEqual(p.returncode, 128 + signal.SIGINT, err)
        rows = parse_folded(out)
        self.assertTrue(any(f[0] == "sleep" and "do_nanosleep" in f for f, _ in rows), out)

    def test_sigterm_is_passed_on(self):
        p = subprocess.Popen([OFFCPUCTL, "--socket", self.daemon.socket, "capture", "--", "sleep", "30"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_without_sudo())
        try:
            deadline = time.monotonic() + 30
            while not self.child_runs(p.pid, "sleep"):
                self.assertLess(time.monotonic(), deadline, "the command did not start")
                time.sleep(0.05)
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, err)
        self.assertTrue(any(f[0] == "sleep" for f, _ in parse_folded(out)), out)

    @staticmethod
    def child_runs(pid, comm):
        """Whether process pid has a child named comm (the command, exec'd)."""
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                children = f.read().split()
        except OSError:
            return False
        for c in children:
            try:
                with open(f"/proc/{c}/comm") as f:
                    if f.read().strip() == comm:
                        return True
            except OSError:
                pass
        return False

    def test_seconds_is_a_limit(self):
        r = self.run_ctl("capture", "--seconds", "1", "--", "sh", "-c", "sleep 2.5; exit 4", timeout=60)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("offcpuctl: note: the capture ended at --seconds 1 before the command exited; offcpuctl "
                      "waits for it\n", r.stderr)
        rows = parse_folded(r.stdout)
        slept = sum(v for f, v in rows if "do_nanosleep" in f)
        # the sleep is still open at the end: the capture counts the part it saw
        self.assertLess(slept, 1.5e6, r.stdout)

    def test_missing_command(self):
        r = self.run_ctl("capture", "--", "offcpu-no-such-command", "x")
        self.assertEqual(r.returncode, 127)
        self.assertEqual(r.stderr, ROOT_NOTE + "offcpuctl: cannot run 'offcpu-no-such-command': No such file or "
                         "directory\n")
        self.assertEqual(r.stdout, "")
        self.wait_no_capture()
        # nothing kept of it, and the daemon serves on
        r = self.run_ctl("capture", "--", "true")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_no_capture()

    def test_command_not_executable(self):
        with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
            f.write("#!/bin/sh\necho ran\n")
            f.flush()
            os.chmod(f.name, stat.S_IRUSR | stat.S_IWUSR)
            # root may run any file with an execute bit: there is none here
            r = self.run_ctl("capture", "--", f.name)
        self.assertEqual(r.returncode, 126)
        self.assertEqual(r.stderr, ROOT_NOTE + f"offcpuctl: cannot run '{f.name}': Permission denied\n")
        self.assertNotIn("ran", r.stdout)
        self.wait_no_capture()

    def test_bad_arguments(self):
        r = self.run_ctl("capture", "--")
        self.assertEqual(r.returncode, EXIT_USAGE)
        self.assertEqual(r.stderr, "offcpuctl: no command after '--': want -- CMD [ARGS...]\n"
                         "Try 'offcpuctl help'.\n")
        for opt in (["--pid", "1"], ["--tid", "1"]):
            r = self.run_ctl("capture", *opt, "--", "true")
            self.assertEqual(r.returncode, EXIT_USAGE)
            self.assertEqual(r.stderr, "offcpuctl: --pid and --tid do not go with '-- CMD': the capture is of the "
                             "command and the processes it starts\nTry 'offcpuctl help'.\n")
        # what follows "--" is the command's, --json and --help included
        r = self.run_ctl("capture", "--", "sh", "-c", "echo \"$@\"", "sh", "--json", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("--json --help\n"), r.stdout)

    def test_daemon_not_running(self):
        with tempfile.TemporaryDirectory() as d:
            mark = os.path.join(d, "ran")
            r = subprocess.run([OFFCPUCTL, "--socket", os.path.join(d, "none.sock"), "capture", "--", "touch",
                                mark], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, EXIT_NOT_RUNNING)
            self.assertIn("offcpud is not running", r.stderr)
            self.assertFalse(os.path.exists(mark), "the command ran unprofiled")

    def test_runs_as_the_sudo_caller(self):
        # What sudo sets; sudo itself is not needed (nor always installed).
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            self.skipTest("no user 'nobody' here")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "capture.folded")
            env = {**env_without_sudo(), "SUDO_UID": str(nobody.pw_uid), "SUDO_GID": str(nobody.pw_gid),
                   "SUDO_USER": "nobody"}
            r = self.run_ctl("capture", "-o", out, "--", "sh", "-c", "id -u; id -g; sleep 0.2", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, f"{nobody.pw_uid}\n{nobody.pw_gid}\n")
            self.assertNotIn("runs as root", r.stderr)
            with open(out) as f:
                self.assertTrue(any(fr[0] == "sleep" for fr, _ in parse_folded(f.read())))

            r = self.run_ctl("capture", "-o", out, "--", "id", "-u")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "0\n")
            self.assertTrue(r.stderr.startswith(ROOT_NOTE), r.stderr)


class RawTracepointTest(unittest.TestCase):
    """Children followed on the raw_tp fallback too (kernels without tp_btf)."""

    def test_children_on_raw_tp(self):
        d = Daemon("tracepoint = raw_tp\n")
        try:
            self.assertEqual(d.status()["tracepoint"], "raw_tp")
            r = subprocess.run([OFFCPUCTL, "--socket", d.socket, "--json", "capture", "--", "sh", "-c",
                                "sleep 0.3 & wait"], capture_output=True, text=True, timeout=60,
                               env=env_without_sudo())
            self.assertEqual(r.returncode, 0, r.stderr)
            samples = json.loads(r.stdout)["capture"]["samples"]
            self.assertTrue(any(s["comm"] == "sleep" for s in samples), samples)
            if not SANITIZED:
                self.assertAlmostEqual(sleep_ns(samples) / 1e9, 0.3, delta=0.015, msg=samples)
        finally:
            self.assertEqual(d.stop(), 0)


class FollowChildrenProtocolTest(unittest.TestCase):
    """The protocol's parts that capture -- CMD uses, as any client sees them."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_started_line_then_stop(self):
        held = subprocess.Popen(["sleep", "30"])
        try:
            req = {"v": 1, "cmd": "capture", "pids": [held.pid], "seconds": 0, "follow_children": True,
                   "notify_started": True}
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(self.daemon.socket)
            f = s.makefile("rw")
            f.write(json.dumps(req) + "\n")
            f.flush()
            started = json.loads(f.readline())
            self.assertEqual(set(started), {"v", "ok", "cmd", "started"})
            self.assertEqual(started["cmd"], "capture")
            # seconds 0: until stop, at most the daemon's max_capture_seconds (3600 by default)
            self.assertEqual(started["started"]["seconds"], 3600)
            self.assertEqual(self.daemon.status()["captures_running"], 1)
            f.write('{"v":1,"cmd":"stop"}\n')
            f.flush()
            reply = json.loads(f.readline())
            self.assertTrue(reply["ok"], reply)
            self.assertEqual(reply["capture"]["id"], started["started"]["id"])
            s.close()
        finally:
            held.kill()
            held.wait()

    def test_follow_children_needs_pids(self):
        r = self.daemon.raw(b'{"v":1,"cmd":"capture","follow_children":true}\n')
        self.assertEqual(r[0]["error"], {"code": "bad_request",
                                         "message": "field 'follow_children' needs 'pids' and no 'tids'"})


if __name__ == "__main__":
    unittest.main()
