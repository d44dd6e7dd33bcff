"""Blocks still open where an interval ends: the in-progress pass
(bpf/in_progress.bpf.c) counts their time in the interval that ends.

- A stored window of the continuous profile holds the part of a long block
  that fell inside it, so a thread's off-CPU time in a window is never more
  than the window's length; the block's end counts only the rest, and its
  count (1) lands once, in the window where it ended.
- A capture holds the part inside it of each block open at its end, with
  its stacks and "[in progress]" as the leaf frame ("in_progress": true in
  JSON, count 0), also of a block that began before the capture (the
  continuous profile saw it begin). Blocks that ended inside it are counted
  as before, without the marker.

The workloads are Python (one small script, WORKLOAD below): its function
names are not in the stacks (native frames only: time_sleep,
clock_nanosleep, ...), so their rows are told apart by tid and kernel
stack. Each measures its own blocks with time.time() / CLOCK_MONOTONIC
around the blocking call, the ground truth. Tolerances are stated where they
are used.
"""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

from offcpu_env import Daemon, parse_folded
from test_daemon import TOLERANCE
from test_windows import export_json, wait_stored, windows

WINDOW_S = 5
CONFIG = f"window_seconds = {WINDOW_S}\ndrain_interval_ms = 250\n"
IN_PROGRESS = "[in progress]"
LONG_SLEEP_S = 25
# A window's part of the long block: within 2 % of the window's length, plus
# 30 ms for the clock edges (the window's bounds are CLOCK_REALTIME ms read
# beside the pass's CLOCK_MONOTONIC; the workload's time.time() brackets the
# kernel's switch-out and wake-up by a few Python instructions).
WINDOW_REL, EDGE_MS = 0.02, 30

WORKLOAD = r'''
import json, os, sys, threading, time


def say(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def in_progress_napper(seconds):
    before = time.time()
    time.sleep(seconds)  # one clock_nanosleep
    after = time.time()
    return before, after


mode = sys.argv[1]
if mode == "long":  # one long sleep, then exit
    say(ready=os.getpid())
    before, after = in_progress_napper(float(sys.argv[2]))
    say(before=before, after=after)
elif mode == "pipe":  # blocked in read() on a pipe nobody writes, until killed
    r, w = os.pipe()
    say(ready=os.getpid())
    os.read(r, 1)
elif mode == "naps":  # after go, a thread naps N x T and exits; main reads stdin until killed
    n, t = int(sys.argv[2]), float(sys.argv[3])
    go, done = threading.Event(), {}

    def in_progress_napper_thread():
        go.wait()
        total = 0
        for _ in range(n):
            t0 = time.monotonic_ns()
            time.sleep(t)
            total += time.monotonic_ns() - t0
        done.update(tid=threading.get_native_id(), naps_ns=total)

    th = threading.Thread(target=in_progress_napper_thread)
    th.start()
    say(ready=os.getpid())
    sys.stdin.readline()
    go.set()
    th.join()
    say(**done)
    sys.stdin.readline()
elif mode == "contend":  # for S s: writers queue on one tmpfs inode's rwsem and one
    # open file's f_pos_lock (a mutex); a thread naps 10 ms at a time
    secs, path = float(sys.argv[2]), sys.argv[3]
    shared = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    buf = b"x" * (1 << 20)
    end = time.monotonic() + secs
    kids = []
    for _ in range(2):  # processes writing through one open file: its f_pos_lock
        pid = os.fork()
        if pid == 0:
            while time.monotonic() < end:
                os.write(shared, buf)
                if os.lseek(shared, 0, os.SEEK_CUR) > (32 << 20):
                    os.lseek(shared, 0, os.SEEK_SET)
            os._exit(0)
        kids.append(pid)

    def pwriter():  # pwrite at 0 through its own open file: the inode's rwsem only
        fd = os.open(path, os.O_WRONLY)
        while time.monotonic() < end:
            os.pwrite(fd, buf * 4, 0)

    def napper():
        while time.monotonic() < end:
            time.sleep(0.01)

    ts = [threading.Thread(target=f) for f in (pwriter, pwriter, napper)]
    [t.start() for t in ts]
    say(ready=os.getpid(), kids=kids)
    [t.join() for t in ts]
    for k in kids:
        os.waitpid(k, 0)
    say(done=True)
elif mode == "late":  # after go, naps 1 s, then blocks in read() on a pipe until killed
    r, w = os.pipe()
    say(ready=os.getpid())
    sys.stdin.readline()
    t0 = time.monotonic_ns()
    time.sleep(1.0)
    nap_ns = time.monotonic_ns() - t0
    start = time.time()
    say(nap_ns=nap_ns, block_start=start)
    os.read(r, 1)
'''


class PyWorkload:
    """The Python workload in one of its modes: started, and read up to its
    "ready" line (its pid, which is also its main thread's tid)."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, "-c", WORKLOAD, *map(str, args)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        try:
            ready = self.line()
            self.pid = ready["ready"]
            self.kids = ready.get("kids", [])
        except BaseException:
            self.kill()
            raise

    def line(self):
        text = self.proc.stdout.readline()
        assert text, f"workload ended early ({self.proc.poll()})"
        return json.loads(text)

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self):
        for k in self.kids:  # (forked: not the Popen's to reap)
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            f.close()


def wait_blocked_in(pid, wchan, timeout=10):
    """Waits until pid sleeps in kernel function wchan (a substring of
    /proc/PID/wchan); where wchan reads "0" (a kernel that hides it), until
    it has been asleep 1 s."""
    deadline = time.monotonic() + timeout
    asleep_since = None
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/wchan") as f:
            where = f.read()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
        if wchan in where and state == "S":
            return
        if state == "S" and where in ("", "0"):
            asleep_since = asleep_since or time.monotonic()
            if time.monotonic() - asleep_since > 1:
                return
        else:
            asleep_since = None
        time.sleep(0.02)
    raise AssertionError(f"{pid} not blocked in {wchan} after {timeout} s")


def pass_missing(d, feature="in_progress"):
    """Why the in-progress pass (feature "in_progress") or the __sched frames
    ("sched_frames") are not there with this daemon, or None (status says,
    as collector.c decides: tp_btf's task storage, the kernel's
    bpf_copy_from_user_task() (5.18), bpf_rdonly_cast(), x86-64). raw_tp is
    a failure, not a reason."""
    st = d.status()
    if st["tracepoint"] != "tp_btf":
        # The config does not force raw_tp, and run.py runs only where the
        # kernel has BTF: the verifier refused the tp_btf programs.
        raise AssertionError(f"offcpud fell back to {st['tracepoint']} on a kernel with BTF (the pass "
                             f"needs tp_btf's task storage):\n{d.log_text()[-3000:]}")
    if not st[feature]:
        return st[f"{feature}_reason"]
    return None


def daemon_with(config, feature):
    """A started daemon with config, where it has feature (pass_missing());
    else the test class is skipped, saying why."""
    d = Daemon(config)
    try:
        why = pass_missing(d, feature)
    except BaseException:
        d.stop()
        raise
    if why:
        d.stop()
        raise unittest.SkipTest(why)
    return d


def is_nanosleep(s):
    return any(f in ("hrtimer_nanosleep", "do_nanosleep") for f in s["kstack"])


def is_sleep(s):
    """A nanosleep's own row: blocked (S), not a preemption on its way in or
    out of the syscall (R, a count of its own) or its run-queue wait."""
    return s["kind"] == "offcpu" and s["state"] == "S" and is_nanosleep(s)


def is_pipe_read(s):
    return any("pipe_read" in f for f in s["kstack"])


def offcpu_ns(samples, tid, where=lambda s: True):
    """The thread's off-CPU time in samples: blocked and run-queue rows."""
    return sum(s["value_ns"] for s in samples
               if s["pid"] == tid and s["kind"] in ("offcpu", "runq") and where(s))


def capture(d, pid, seconds, *args, json_out=True, before=lambda: None):
    """Captures pid for seconds; before() runs once the capture is running.
    Returns the reply's capture (JSON) or the folded text."""
    proc = d.ctl_popen(*(["--json"] if json_out else []), "capture", "--pid", str(pid),
                       "--seconds", str(seconds), *args)
    try:
        d.wait_captures(1)
        before()
        out, err = proc.communicate(timeout=seconds + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, f"capture failed ({proc.returncode}): {out} {err}"
    return json.loads(out)["capture"] if json_out else out


class InProgressTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = daemon_with(CONFIG, "in_progress")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        log = cls.daemon.log_text()
        assert code == 0, f"offcpud exited with {code}:\n{log}"
        # drain_after_cb()'s warning where the pass's iterator failed: the
        # intervals then held only the blocks that ended in them.
        assert "counting the blocks still open failed" not in log, log

    def setUp(self):
        self.workloads = []

    def tearDown(self):
        for w in self.workloads:
            w.kill()
        # Every test leaves the daemon alive and its capture slots free.
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())
        deadline = time.monotonic() + 10
        while self.daemon.status()["captures_running"] and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.daemon.status()["captures_running"], 0)

    def workload(self, *args):
        w = PyWorkload(*args)
        self.workloads.append(w)
        return w

    def test_long_block_split_across_windows(self):
        """A 25 s sleep over 5 s windows: each stored window that overlaps it
        holds the overlap (within 2 % of the window's length + 30 ms), no
        window holds more than its length of the thread's off-CPU time, the
        parts add up to the sleep (within 2 %), and its count (1) is in the
        window where it ended, 0 in the others."""
        d = self.daemon
        w = self.workload("long", LONG_SLEEP_S)
        tid = w.pid
        ends = w.line()
        w.proc.wait(timeout=30)
        before_ms, after_ms = ends["before"] * 1000, ends["after"] * 1000
        self.assertAlmostEqual(after_ms - before_ms, LONG_SLEEP_S * 1000, delta=1000)
        stored = wait_stored(d, after_ms, timeout=3 * WINDOW_S + 5)
        over = sorted((x for x in stored if x["start_ms"] < after_ms and x["end_ms"] > before_ms),
                      key=lambda x: x["start_ms"])
        # 25 s over windows of 5 s and a drain (250 ms) or so: 5 or 6 of them.
        self.assertGreaterEqual(len(over), LONG_SLEEP_S // WINDOW_S, over)
        for a, b in zip(over, over[1:]):
            self.assertEqual(a["end_ms"], b["start_ms"], "windows are contiguous")
        sleep_total = counts = 0
        for x in over:
            length = x["end_ms"] - x["start_ms"]
            exp = export_json(d, "--from", str(x["start_ms"] / 1000), "--to", str(x["end_ms"] / 1000),
                              "--pid", str(w.pid))
            self.assertEqual(exp["windows"], 1, x)
            samples = exp["samples"]
            got = offcpu_ns(samples, tid, is_nanosleep)
            want_ms = min(x["end_ms"], after_ms) - max(x["start_ms"], before_ms)
            where = f"window {x} (block {before_ms:.0f}-{after_ms:.0f} ms): {got} ns of the sleep, rows " + \
                json.dumps([s for s in samples if s["pid"] == tid and is_nanosleep(s)])
            self.assertAlmostEqual(got / 1e6, want_ms, delta=WINDOW_REL * length + EDGE_MS, msg=where)
            # Everything of the thread in this window, not only the sleep.
            self.assertLessEqual(offcpu_ns(samples, tid) / 1e6, length + EDGE_MS, where)
            sleep_counts = sum(s["count"] for s in samples if s["pid"] == tid and is_sleep(s))
            # (Where the rest after the last pass is under the 1 ms sample
            # period, and the draw does not take it, its count is in the
            # thread's unsampled row instead: about 1 run in 5000.)
            ended_here = x["start_ms"] - EDGE_MS <= after_ms <= x["end_ms"] + EDGE_MS
            self.assertIn(sleep_counts, (0, 1) if ended_here else (0,),
                          f"{where}: counted once, where it ended")
            sleep_total += got
            counts += sleep_counts
        self.assertAlmostEqual(sleep_total / 1e6 / (after_ms - before_ms), 1.0, delta=WINDOW_REL,
                               msg=f"windows' parts {sleep_total} ns, block {after_ms - before_ms:.1f} ms")
        self.assertEqual(counts, 1, "the sleep is counted once, at its end")

    def test_capture_of_a_process_blocked_throughout(self):
        """A process blocked in read() on a pipe since before the capture: the
        capture holds the whole capture on its blocking stack, as in-progress
        rows (count 0, kernel leaf "[in progress]") with a user stack: at
        least 95 % of duration_ns, and no more than duration_ns + 1 ms (the
        slot's clock starts a little before the capture's own). The folded
        output of the same capture ends that line with "[in progress]"."""
        d = self.daemon
        w = self.workload("pipe")
        wait_blocked_in(w.pid, "pipe_read")
        time.sleep(0.3)  # well before the capture, and seen by the continuous profile
        cap = capture(d, w.pid, 3)
        mine = [s for s in cap["samples"] if s["pid"] == w.pid]
        ip = [s for s in mine if s.get("in_progress")]
        self.assertTrue(ip, json.dumps(cap["samples"]))
        for s in ip:
            self.assertEqual(s["count"], 0, s)
            self.assertEqual(s["kstack"][-1], IN_PROGRESS, s)
            self.assertNotIn(IN_PROGRESS, s["kstack"][:-1] + s["ustack"], s)
        blocking = [s for s in ip if is_pipe_read(s) and s["ustack"]]
        held = sum(s["value_ns"] for s in blocking)
        self.assertGreaterEqual(held, 0.95 * cap["duration_ns"], json.dumps(mine))
        self.assertLessEqual(held, cap["duration_ns"] + 1_000_000, json.dumps(mine))
        # No marker on rows of blocks that ended: the flag and the leaf agree.
        self.assertFalse([s for s in cap["samples"] if not s.get("in_progress")
                          and IN_PROGRESS in s["kstack"] + s["ustack"]])

        out = capture(d, w.pid, 3, json_out=False)
        rows = parse_folded(out)
        open_rows = [(f, v) for f, v in rows if f[-1] == IN_PROGRESS and "-" in f
                     and any("pipe_read" in x for x in f[f.index("-"):])]
        self.assertTrue(open_rows, out)
        frames, value_us = max(open_rows, key=lambda r: r[1])
        self.assertGreater(frames.index("-"), 1, f"a user stack under the comm: {frames}")
        # Folded values are microseconds; the capture lasts 3 s and a drain.
        self.assertGreaterEqual(value_us, 0.95 * 3e6, out)
        self.assertLessEqual(value_us, 3.5e6, out)

    def test_capture_keeps_ended_blocks_apart(self):
        """A thread that naps 20 x 20 ms inside the capture and ends before
        the capture does: its naps are counted as ended blocks (no
        in-progress rows for it, within 5 % of what it measured, count 20).
        The main thread, blocked in read() on stdin at the capture's end,
        has its in-progress row: the pass ran for this capture."""
        d = self.daemon
        w = self.workload("naps", 20, 0.02)
        wait_blocked_in(w.pid, "pipe_read")  # the main thread, waiting for go
        truth = {}
        cap = capture(d, w.pid, 3, before=lambda: (w.go(), truth.update(w.line())))
        tid = truth["tid"]
        self.assertNotEqual(tid, w.pid)
        napper = [s for s in cap["samples"] if s["pid"] == tid]
        self.assertFalse([s for s in napper if s.get("in_progress") or IN_PROGRESS in s["kstack"] + s["ustack"]],
                         json.dumps(napper))
        naps = [s for s in napper if is_sleep(s)]
        got = offcpu_ns(napper, tid, is_nanosleep)
        self.assertAlmostEqual(got / truth["naps_ns"], 1.0, delta=TOLERANCE,
                               msg=f"captured {got} ns of naps, the thread measured {truth['naps_ns']} ns")
        self.assertEqual(sum(s["count"] for s in naps), 20, json.dumps(naps))
        main = [s for s in cap["samples"] if s["pid"] == w.pid and s.get("in_progress")]
        self.assertTrue([s for s in main if is_pipe_read(s) and s["count"] == 0],
                        json.dumps([s for s in cap["samples"] if s["pid"] == w.pid]))

    def test_killed_while_blocked_keeps_its_stack(self):
        """A process killed 3 s into a 30 s sleep: its block, which ends at
        its exit, keeps its stacks (the user stack is walked at the exit
        where the thread will not return to user mode for a deferred walk):
        its sleep's rows hold the time it slept (within 5 % + 50 ms), each
        with its user stack and its kernel stack's do_nanosleep, and no
        [unsampled] row stands for it (before, the part after the last
        window's end was such a row)."""
        d = self.daemon
        w = self.workload("long", 30)
        wait_blocked_in(w.pid, "nanosleep")
        t0 = time.time()
        time.sleep(3)
        w.kill()
        slept_ms = (time.time() - t0) * 1000
        wait_stored(d, time.time() * 1000, timeout=3 * WINDOW_S + 5)
        exp = export_json(d, "--from", str(t0 - 2 * WINDOW_S), "--pid", str(w.pid))
        mine = [s for s in exp["samples"] if s["pid"] == w.pid]
        sleeps = [s for s in mine if is_sleep(s)]
        got_ms = sum(s["value_ns"] for s in sleeps) / 1e6
        self.assertGreaterEqual(got_ms, slept_ms * (1 - TOLERANCE) - 50, json.dumps(mine))
        for s in sleeps:
            self.assertIn("clock_nanosleep", s["ustack"], s)
            self.assertIn("do_nanosleep", s["kstack"], s)
        unsampled = sum(s["value_ns"] for s in mine if "[unsampled]" in s["ustack"])
        self.assertLess(unsampled, 0.01 * got_ms * 1e6, json.dumps(mine))

    def test_block_begun_inside_the_capture_and_open_at_its_end(self):
        """A thread naps 1 s inside the capture, then blocks in read() until
        the capture has ended: its in-progress row holds capture end - block
        start (within 5 %; the capture's end is its stored window's start_ms
        + duration_ns, CLOCK_REALTIME as the workload's time.time()), and its
        ended nap is a plain row within 5 % of what it measured."""
        d = self.daemon
        w = self.workload("late")
        wait_blocked_in(w.pid, "pipe_read")  # waiting for go
        truth = {}
        cap = capture(d, w.pid, 3, before=lambda: (w.go(), truth.update(w.line())))
        mine = [s for s in cap["samples"] if s["pid"] == w.pid]
        deadline = time.monotonic() + 10
        while not [x for x in windows(d) if x["capture_id"] == cap["id"]] and time.monotonic() < deadline:
            time.sleep(0.1)
        stored = [x for x in windows(d) if x["capture_id"] == cap["id"]]
        self.assertEqual(len(stored), 1, "the capture is stored")
        end_ms = stored[0]["start_ms"] + cap["duration_ns"] / 1e6
        want_ms = end_ms - truth["block_start"] * 1000
        open_ns = sum(s["value_ns"] for s in mine if s.get("in_progress") and is_pipe_read(s))
        self.assertAlmostEqual(open_ns / 1e6 / want_ms, 1.0, delta=TOLERANCE,
                               msg=f"in progress {open_ns} ns, capture end - block start {want_ms:.1f} ms: "
                               + json.dumps(mine))
        nap = [s for s in mine if is_nanosleep(s)]
        self.assertFalse([s for s in nap if s.get("in_progress")], json.dumps(nap))
        self.assertAlmostEqual(offcpu_ns(mine, w.pid, is_nanosleep) / truth["nap_ns"], 1.0, delta=TOLERANCE,
                               msg=json.dumps(nap))


if __name__ == "__main__":
    unittest.main()


def share(samples, pids, frame):
    """Of the off-CPU time of pids in samples, the share whose kernel stack
    has a frame starting with frame."""
    mine = [s for s in samples if s["tgid"] in pids and s["kind"] in ("offcpu", "runq")]
    total = sum(s["value_ns"] for s in mine)
    under = sum(s["value_ns"] for s in mine if any(f.startswith(frame) for f in s["kstack"]))
    return under / total if total else 0.0


class SchedFramesTest(unittest.TestCase):
    """Kernel stacks read while their thread is off the CPU (the always-on
    profile's sampled blocks, at switch-in; parts counted by the pass) get
    back the frames of the scheduler's text section that the kernel's walk
    of a sleeping task leaves out (bpf/sched_frames.bpf.c): the frames that
    name the wait, as an exact capture walks them at switch-out."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = daemon_with("window_seconds = 1\ndrain_interval_ms = 250\n", "sched_frames")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, f"offcpud exited with {code}:\n{cls.daemon.log_text()}"

    def test_windows_name_the_wait_as_an_exact_capture(self):
        """Writers queued on one tmpfs inode's rwsem and on one open file's
        f_pos_lock (a kernel mutex), beside a thread napping 10 ms at a time:
        over the interval an exact capture covered, the always-on windows
        (sampled stacks) give the same share of the workload's off-CPU time
        under rwsem_down_write_slowpath, under __mutex_lock and under
        do_nanosleep as the capture, within 5 % of the capture's share plus
        half a point (the sampled estimate of a stack holding X s of short
        blocks is within sqrt(1 ms / X), about 1 % here, one standard
        error). Without the frames put back the windows have none of them."""
        d = self.daemon
        path = f"/dev/shm/offcpu-test-contend-{os.getpid()}"
        w = PyWorkload("contend", 9, path)
        try:
            pids = [w.pid, *w.kids]
            time.sleep(1)
            cap = capture(d, ",".join(map(str, pids)), 6)
            w.line()  # done
            stored = [x for x in windows(d) if x["capture_id"] == cap["id"]]
            self.assertEqual(len(stored), 1, stored)
            start_ms, end_ms = stored[0]["start_ms"], stored[0]["end_ms"]
            wait_stored(d, end_ms)
            inside = [x for x in windows(d) if x["capture_id"] == 0 and x["start_ms"] >= start_ms
                      and x["end_ms"] <= end_ms]
            self.assertGreaterEqual(len(inside), 3, inside)
            exp = export_json(d, "--from", str(inside[0]["start_ms"] / 1000), "--to",
                              str(inside[-1]["end_ms"] / 1000), "--pid", ",".join(map(str, pids)))
        finally:
            w.kill()
            if os.path.exists(path):
                os.unlink(path)
        for frame in ("rwsem_down_write_slowpath", "__mutex_lock", "do_nanosleep"):
            exact, sampled = share(cap["samples"], pids, frame), share(exp["samples"], pids, frame)
            self.assertGreater(exact, 0.02, f"the workload waits under {frame} in the capture: {exact:.3f}")
            self.assertAlmostEqual(sampled, exact, delta=0.05 * exact + 0.005,
                                   msg=f"share under {frame}: windows {sampled:.3f}, capture {exact:.3f}")
        self.assertGreater(d.status()["counters"]["kstack_sched_frames"], 0)
