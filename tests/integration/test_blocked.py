"""offcpuctl blocked: the threads off the CPU now, from the real daemon.

One Python process (WORKLOAD below) blocks two threads in known places at
known times: its main thread in time.sleep (kernel do_nanosleep, libc
clock_nanosleep) and a second one in os.read on a pipe nobody writes
(kernel pipe_read, anon_pipe_read on newer kernels). Each notes
time.time() just before its blocking call, the ground truth: the reply's
blocked_ns must be the time from then to the reply's now_ms, within
TOLERANCE_S (both clocks are CLOCK_REALTIME; the gap between the note and
the switch-out is a print or a GIL hand-off, well under it).

The request only reads: the threads stay asleep, no capture runs, and
nothing is signalled. Every process started here is killed, and the daemon
stopped, whatever a test does.
"""
import json
import os
import subprocess
import sys
import time
import unittest

from offcpu_env import EXIT_NO_SUCH_PID, EXIT_USAGE, OFFCPUCTL, Daemon

TOLERANCE_S = 0.2
AGE_S = 1.0  # how long the threads have been blocked when first listed

WORKLOAD = r'''
import json, os, sys, threading, time


def say(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


r, w = os.pipe()
reading = threading.Event()
state = {}


def blocked_reader():
    state.update(reader=threading.get_native_id(), read_start=time.time())
    reading.set()
    os.read(r, 1)  # nobody writes: blocked until killed


threading.Thread(target=blocked_reader, daemon=True).start()
reading.wait()
# The reader asleep first, so that it is the longest blocked of the two.
while open(f"/proc/self/task/{state['reader']}/stat").read().rpartition(")")[2].split()[0] != "S":
    time.sleep(0.001)
start = time.time()
say(pid=os.getpid(), sleeper=threading.get_native_id(), sleep_start=start, **state)
time.sleep(float(sys.argv[1]))  # one clock_nanosleep
'''


class PyBlocked:
    """The workload: its pid, the two threads' tids and when each blocked."""

    def __init__(self, seconds=600):
        self.proc = subprocess.Popen([sys.executable, "-c", WORKLOAD, str(seconds)], stdout=subprocess.PIPE,
                                     text=True)
        try:
            line = self.proc.stdout.readline()
            assert line, f"workload ended early ({self.proc.poll()})"
            self.info = json.loads(line)
        except BaseException:
            self.kill()
            raise
        self.pid = self.info["pid"]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


def thread_state(pid, tid):
    """The state letter of /proc/PID/task/TID/stat."""
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


class BlockedTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("drain_interval_ms = 250\n")
        try:
            # Started after the daemon: it sees both threads leave the CPU.
            cls.work = PyBlocked()
            time.sleep(AGE_S)
        except BaseException:
            cls.daemon.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.work.kill()
        code = cls.daemon.stop()
        assert code == 0, f"offcpud exited with {code}:\n{cls.daemon.log_text()}"

    def blocked(self, *args):
        """offcpuctl --json blocked ARGS: the reply's body; skips where the
        daemon cannot read blocked threads on this kernel."""
        r = self.daemon.ctl("--json", "blocked", *args)
        reply = json.loads(r.stdout)
        if not reply["ok"] and reply["error"]["code"] == "unsupported":
            self.skipTest(reply["error"]["message"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["cmd"], "blocked")
        return reply["blocked"]

    def thread(self, body, tid):
        got = [t for t in body["threads"] if t["pid"] == tid]
        self.assertEqual(len(got), 1, f"tid {tid} in {[t['pid'] for t in body['threads']]}")
        return got[0]

    def check_age(self, body, t, start):
        """blocked_ns and since_ms against the workload's own clock."""
        want_s = body["now_ms"] / 1000 - start
        self.assertGreater(want_s, AGE_S - TOLERANCE_S)
        self.assertAlmostEqual(t["blocked_ns"] / 1e9, want_s, delta=TOLERANCE_S)
        self.assertAlmostEqual(t["since_ms"] / 1000, start, delta=TOLERANCE_S)

    def test_lists_the_threads_where_they_wait(self):
        w = self.work.info
        body = self.blocked("--pid", str(self.work.pid))
        self.assertEqual(body["more"], 0)
        self.assertEqual({t["tgid"] for t in body["threads"]}, {self.work.pid})
        ns = [t["blocked_ns"] for t in body["threads"]]
        self.assertEqual(ns, sorted(ns, reverse=True), "longest first")

        sleeper = self.thread(body, w["sleeper"])
        self.assertEqual(sleeper["state"], "S")
        self.check_age(body, sleeper, w["sleep_start"])
        self.assertIn("do_nanosleep", sleeper["kstack"])
        self.assertIn("schedule", sleeper["kstack"])
        # Root first: the wait sits between the syscall and the scheduler.
        k = sleeper["kstack"]
        self.assertLess(k.index("do_nanosleep"), k.index("schedule"), k)
        self.assertTrue(sleeper["ustack"], "a user stack")
        self.assertTrue(any("clock_nanosleep" in f for f in sleeper["ustack"]), sleeper["ustack"])

        reader = self.thread(body, w["reader"])
        self.assertEqual(reader["state"], "S")
        self.check_age(body, reader, w["read_start"])
        self.assertTrue({"pipe_read", "anon_pipe_read"} & set(reader["kstack"]), reader["kstack"])
        self.assertIn("schedule", reader["kstack"])
        self.assertTrue(reader["ustack"], "a user stack")
        # Neither was woken: no waker, no run-queue wait.
        for t in (sleeper, reader):
            self.assertNotIn("waker", t)
            self.assertEqual(t["runq_ns"], 0)

    def test_reads_only(self):
        before = self.daemon.status()
        self.blocked()
        self.blocked("--pid", str(self.work.pid), "--limit", "0")
        after = self.daemon.status()
        self.assertEqual(after["captures_running"], 0)
        self.assertEqual(after["slots_active"], before["slots_active"])
        self.assertEqual(after["counters"].get("captures", 0), before["counters"].get("captures", 0))
        # Still asleep where they were: nothing woke or stopped them.
        self.assertIsNone(self.work.proc.poll())
        for tid in (self.work.info["sleeper"], self.work.info["reader"]):
            self.assertEqual(thread_state(self.work.pid, tid), "S")
        body = self.blocked("--tid", str(self.work.info["sleeper"]))
        self.check_age(body, self.thread(body, self.work.info["sleeper"]), self.work.info["sleep_start"])

    def test_filters(self):
        pid, w = str(self.work.pid), self.work.info
        # Older than both: neither is listed.
        body = self.blocked("--pid", pid, "--min-ms", "600000")
        self.assertEqual((body["threads"], body["more"]), ([], 0))
        # Younger: both are.
        body = self.blocked("--pid", pid, "--min-ms", str(int(AGE_S * 1000 / 2)))
        self.assertEqual({t["pid"] for t in body["threads"]}, {w["sleeper"], w["reader"]})
        # Sleeping, not preempted.
        body = self.blocked("--pid", pid, "--state", "R")
        self.assertEqual(body["threads"], [])
        body = self.blocked("--pid", pid, "--state", "D")
        self.assertEqual(body["threads"], [])
        body = self.blocked("--pid", pid, "--state", "S")
        self.assertEqual(len(body["threads"]), 2)
        # One thread by tid, with or without its pid.
        for args in (["--tid", str(w["reader"])], ["--pid", pid, "--tid", str(w["reader"])]):
            body = self.blocked(*args)
            self.assertEqual([t["pid"] for t in body["threads"]], [w["reader"]], args)
        # The limit: the longest, and how many more. The reader blocked first.
        body = self.blocked("--pid", pid, "--limit", "1")
        self.assertEqual([t["pid"] for t in body["threads"]], [w["reader"]])
        self.assertEqual(body["more"], 1)
        # The whole host: this process among the others, longest first.
        body = self.blocked("--limit", "0")
        self.assertEqual(body["more"], 0)
        self.assertIn(w["sleeper"], [t["pid"] for t in body["threads"]])
        ns = [t["blocked_ns"] for t in body["threads"]]
        self.assertEqual(ns, sorted(ns, reverse=True))

    def test_text(self):
        pid, w = self.work.pid, self.work.info
        r = self.daemon.ctl("blocked", "--pid", str(pid))
        if r.returncode != 0 and "cannot be read" in r.stderr:
            self.skipTest(r.stderr)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["PID", "TID", "COMM", "STATE", "BLOCKED-FOR", "WAITING-IN"])
        rows = {int(l.split()[1]): l.split() for l in lines[1:] if l[:1].isdigit()}
        self.assertEqual(set(rows), {w["sleeper"], w["reader"]}, r.stdout)
        sleeper = rows[w["sleeper"]]
        self.assertEqual((int(sleeper[0]), sleeper[3], sleeper[-1]), (pid, "S", "do_nanosleep"), r.stdout)
        self.assertIn(rows[w["reader"]][-1], ("pipe_read", "anon_pipe_read"), r.stdout)
        # Its time as the CLI writes durations: "1.2 s" (the tests take less than a minute).
        self.assertEqual(sleeper[-2], "s", r.stdout)
        self.assertAlmostEqual(float(sleeper[-3]), time.time() - w["sleep_start"], delta=1.0)
        # Its stacks, indented under it: the kernel's from the scheduler out
        # to the syscall, then the user stack.
        start = next(i for i, l in enumerate(lines) if l.split()[1:2] == [str(w["sleeper"])])
        block = []
        for line in lines[start + 1:]:
            if not line.startswith(" " * 8):
                break
            block.append(line)
        labels = [l[8:16].strip() for l in block if l[8:16].strip()]
        self.assertEqual(labels, ["kernel", "user"], block)
        frames = [l[16:] for l in block]
        self.assertLess(frames.index("schedule"), frames.index("do_nanosleep"), block)
        self.assertNotIn("more thread", r.stdout)

        r = self.daemon.ctl("blocked", "--pid", str(pid), "--limit", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith("\n1 more thread (--limit 0 shows all)\n"), r.stdout)

        # Nothing matched: no table, a note that says so and why.
        r = self.daemon.ctl("blocked", "--pid", str(pid), "--min-ms", "600000")
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        self.assertIn(f"note: no thread matched: none of pid {pid} is off the CPU now in state S or D "
                      "for 600000 ms or more", r.stderr)

    def test_unknown_pid_and_bad_arguments(self):
        # As a capture: a pid that does not exist is no_such_pid.
        r = self.daemon.ctl("blocked", "--pid", "4000000")
        self.assertEqual(r.returncode, EXIT_NO_SUCH_PID, r.stdout + r.stderr)
        self.assertIn("no process with pid 4000000", r.stderr)
        r = self.daemon.ctl("--json", "blocked", "--pid", "4000000")
        self.assertEqual(r.returncode, EXIT_NO_SUCH_PID)
        self.assertEqual(json.loads(r.stdout)["error"]["code"], "no_such_pid")
        r = self.daemon.ctl("blocked", "--tid", "4000000")
        self.assertEqual(r.returncode, EXIT_NO_SUCH_PID, r.stdout + r.stderr)
        for bad in (["--limit", "x"], ["--limit", "100001"], ["--min-ms", "-1"], ["--state", "Z"],
                    ["--pid", "0"], ["--tid", "x"], ["extra"]):
            r = self.daemon.ctl("blocked", *bad)
            self.assertEqual(r.returncode, EXIT_USAGE, f"{bad}: {r.stderr}")
        r = self.daemon.ctl("blocked", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--min-ms N", r.stdout)

    def test_serve_api(self):
        from test_serve import Server

        server = Server(self.daemon.socket, "--listen", "127.0.0.1:0")
        try:
            status, body = server.json(f"/api/blocked?pid={self.work.pid}&state=S&limit=0")
            if body.get("error", {}).get("code") == "unsupported":
                self.skipTest(body["error"]["message"])
            self.assertEqual((status, body["ok"], body["cmd"]), (200, True, "blocked"), body)
            self.assertEqual({t["pid"] for t in body["blocked"]["threads"]},
                             {self.work.info["sleeper"], self.work.info["reader"]})
            status, body = server.json("/api/blocked?limit=all")
            self.assertEqual((status, body["error"]["code"]), (400, "bad_request"))
            status, body = server.json("/api/blocked?seconds=5")
            self.assertEqual((status, body["error"]["code"]), (400, "bad_request"))
            # The page asks for the process its view shows, which may have
            # exited: none of its threads is off the CPU, and the page gets
            # no error to log (the CLI's no_such_pid is for a pid typed).
            status, body = server.json("/api/blocked?pid=4000000")
            self.assertEqual((status, body["ok"], body["blocked"]["threads"]), (200, True, []), body)
            # The page has the panel.
            status, _, page = server.get("/")
            self.assertIn(b'id="blocked"', page)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
