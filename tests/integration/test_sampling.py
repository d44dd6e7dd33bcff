"""Sampled stacks (bpf/sampling.h): the always-on profile and capture --sampled
take a block's stacks with probability min(1, d/T) and scale each thread's
samples to its exact total.

Ground truth: offcpu_workload's threads block in known functions for known
times. With T far above their blocks' lengths, most blocks get no stacks,
yet each thread's total, and so the stack of a thread that blocks in one
function only, is exact. Each mode of walking user stacks is run: deferred
to the return to user mode by BPF task work (where the kernel has it),
deferred to the rseq_update tracepoint (sampled_walk = rseq) and the
forced switch-out fallback; and auto, the default, going from the first
to the second and back as task works get dear and cheap again.
"""
import json
import os
import re
import signal
import subprocess
import time
import unittest

from offcpu_env import BUILD, Daemon, Workload
from test_daemon import TOLERANCE, capture_json, per_thread
from test_windows import export_json, now_ms, wait_stored

FAST = "window_seconds = 1\ndrain_interval_ms = 250\n"
# 3 ms sleeps against a 20 ms period: about one block in six gets stacks.
SHORT_SLEEPS = ("--only", "sleeper", "--sleeps", "400", "--sleep-ms", "3")
PERIOD_US = 20000


def counters(d):
    return d.status()["counters"]


def is_unsampled(sample):
    return sample["ustack"] == ["[unsampled]"]


def grew(before, after, name):
    return after[name] - before[name]


class SampledTest(unittest.TestCase):
    """User walks deferred where the kernel can, by task work
    (sampled_walk = task-work; auto, the default, moves between task works
    and rseq_update as their costs go: AutoWalkTest)."""
    walk_config = "sampled_walk = task-work\n"
    walk_return = "task work"  # how a deferred walk meets the return to user mode

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(FAST + f"sample_period_us = {PERIOD_US}\n" + cls.walk_config)

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def tearDown(self):
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())

    def assert_sleeps(self, sleeps, unsampled, want, reply):
        """The sleeper's sleeps, its one stack, against the workload's own
        measure: the thread's total is exact, so that stack is too, but for
        time no sample stood for. Samples are scaled to the thread's total
        over its window (or capture); a window in which none of its blocks
        was taken (at the edges of its run, a few blocks) gives them an
        [unsampled] row instead: one run in 28, by a simulation of these
        windows and blocks (one in seven when each drain stood alone)."""
        self.assertAlmostEqual((sleeps + unsampled) / want, 1.0, delta=TOLERANCE,
                               msg=f"{sleeps} ns in the sleep's stack and {unsampled} ns "
                               f"unsampled; workload measured {want} ns; {reply['samples']}")
        # Only edges go unsampled: 30 of the 400 blocks in one run of 1,000.
        self.assertLess(unsampled, 0.25 * want, reply["samples"])

    def expected_walk(self):
        st = self.daemon.status()["sampling"]
        return st["walk"], st["walk_reason"]

    def test_status(self):
        st = self.daemon.status()["sampling"]
        self.assertEqual(st["stacks"], "sampled")
        self.assertEqual(st["period_us"], PERIOD_US)
        self.assertIn(st["walk"], ("deferred", "switch-out"))
        self.assertEqual(st["walk"] == "deferred", st["walk_reason"] == "", st)
        self.assertEqual(st["walk_return"], {"deferred": self.walk_return,
                                             "switch-out": ""}[st["walk"]], st)
        self.assertGreaterEqual(st["task_works_per_s"], 0, st)
        self.assertGreaterEqual(st["task_work_us"], 0, st)
        text = self.daemon.ctl("status").stdout
        self.assertIn(f"always-on stacks: sampled, T = {PERIOD_US} us", text)

    def test_capture_ground_truth(self):
        """capture --sampled: blocks of 3 ms against T = 20 ms."""
        d = self.daemon
        before = counters(d)
        w = Workload(*SHORT_SLEEPS)
        cap, truth = capture_json(d, w, "--sampled", seconds=6)
        after = counters(d)
        tid = w.tids["ow-sleeper"]
        self.assert_sleeps(per_thread(cap, tid, lambda s: "block_in_sleep" in s["ustack"]),
                           per_thread(cap, tid, is_unsampled), truth["ow-sleeper"]["blocked_ns"],
                           cap)
        # Sampling did happen: far fewer samples than blocks (about 400 / 6).
        sm = cap["sampling"]
        self.assertEqual(sm["period_us"], PERIOD_US)
        self.assertGreaterEqual(sm["blocks"], 400)
        self.assertTrue(0 < sm["samples"] < sm["blocks"] / 2, sm)
        self.assertGreater(sm["error_pct"], 0)
        walk, _ = self.expected_walk()
        walked = {k: grew(before, after, k) for k in
                  ("walks_same_mm", "walks_deferred", "walks_at_rseq", "walks_next_switch",
                   "walks_switch_out", "task_works", "task_work_ns")}
        if walk == "deferred":
            # The sleeper is woken by a timer, from the idle task: a deferred
            # walk, by task work (each its own), or at rseq_update where the
            # thread has rseq (glibc registers it); other threads' may still
            # need task works.
            self.assertEqual(walked["walks_switch_out"], 0, walked)
            self.assertGreaterEqual(walked["task_works"], walked["walks_deferred"], walked)
            # Each task work is timed where it is scheduled (a self-IPI:
            # microseconds on a VM, never near a second).
            if walked["task_works"]:
                self.assertTrue(0 < walked["task_work_ns"] < walked["task_works"] * 10**9, walked)
            if self.walk_return == "task work":
                self.assertGreater(walked["walks_deferred"], 0, walked)
                self.assertEqual(walked["walks_at_rseq"], 0, walked)
            else:  # the sleeper's samples, about 400 / 6 blocks
                self.assertGreater(walked["walks_at_rseq"], 20, walked)
        else:
            self.assertGreater(walked["walks_switch_out"], 0, walked)
            self.assertEqual(walked["walks_deferred"] + walked["walks_at_rseq"] +
                             walked["walks_same_mm"], 0, walked)

    def test_windows_ground_truth(self):
        """The always-on windows: the sleeper's stack is its exact total."""
        d = self.daemon
        w = Workload(*SHORT_SLEEPS)
        begin = now_ms()
        truth = w.go()
        wait_stored(d, now_ms())
        exp = export_json(d, "--from", str(begin / 1000 - 2), "--to", str(now_ms() / 1000 + 1),
                          "--pid", str(w.pid))
        tid = w.tids["ow-sleeper"]
        self.assert_sleeps(per_thread(exp, tid, lambda s: "sleeper_thread" in s["ustack"]
                                      and not any(f.startswith("wait_") for f in s["ustack"])),
                           per_thread(exp, tid, is_unsampled), truth["ow-sleeper"]["blocked_ns"],
                           exp)
        # Every row is a block's stack, or time no sample stood for.
        for s in exp["samples"]:
            self.assertTrue(s["ustack"] or s["kstack"], s)
        st = d.status()["sampling"]
        self.assertGreater(st["window_blocks"], st["window_samples"])
        self.assertTrue(0 <= st["window_unsampled_pct"] < 100, st)

    def test_exact_capture_beside(self):
        """An exact capture and the sampled profile count the same threads'
        totals: per thread, the sampled windows equal the exact capture."""
        d = self.daemon
        w = Workload(*SHORT_SLEEPS)
        begin = now_ms()
        cap, truth = capture_json(d, w, seconds=6)
        wait_stored(d, now_ms())
        exp = export_json(d, "--from", str(begin / 1000 - 2), "--to", str(now_ms() / 1000 + 1),
                          "--pid", str(w.pid))

        def sleeps(rows):
            return per_thread(rows, w.tids["ow-sleeper"], lambda s: "block_in_sleep" in s["ustack"])

        # (The windows' time no sample stood for, as in assert_sleeps().)
        unsampled = per_thread(exp, w.tids["ow-sleeper"], is_unsampled)
        self.assertAlmostEqual((sleeps(exp) + unsampled) / sleeps(cap), 1.0, delta=TOLERANCE)
        self.assertLess(unsampled, 0.25 * sleeps(cap))
        self.assertNotIn("sampling", cap)  # an exact capture

    def test_few_blocks_keep_their_time(self):
        """Five sleeps of 1 ms against T = 20 ms: most runs sample none of
        them, in any drain. Their time is carried from drain to drain and
        comes out when the capture ends (as [unsampled], or in the stack of
        a block of the thread that was taken): the thread's total is an
        exact capture's beside it. (Which stack the short time goes to is
        the estimate: a short wait at the start barrier, if taken, stands
        for the sleeps too.)"""
        d = self.daemon
        w = Workload("--only", "sleeper", "--sleeps", "5", "--sleep-ms", "1")
        procs = {name: d.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", "3", *args)
                 for name, args in (("sampled", ["--sampled"]), ("exact", []))}
        caps = {}
        try:
            d.wait_captures(2)
            truth = w.go()
            for name, proc in procs.items():
                out, err = proc.communicate(timeout=40)
                self.assertEqual(proc.returncode, 0, err)
                caps[name] = json.loads(out)["capture"]
        finally:
            w.kill()
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
        tid = w.tids["ow-sleeper"]
        exact, sampled = (per_thread(caps[name], tid, lambda s: s["state"] == "S")
                          for name in ("exact", "sampled"))
        # The blocks that began before a capture are not its: both have the sleeps.
        self.assertGreaterEqual(exact, 0.9 * truth["ow-sleeper"]["blocked_ns"], caps["exact"]["samples"])
        self.assertAlmostEqual(sampled / exact, 1.0, delta=0.02,
                               msg=f"{[s for s in caps['sampled']['samples'] if s['pid'] == tid]}")
        # The share of the time no sample stood for, as the reply's rows add up.
        rows = caps["sampled"]["samples"]
        unsampled = 100 * sum(s["value_ns"] for s in rows if is_unsampled(s)) / sum(s["value_ns"] for s in rows)
        self.assertAlmostEqual(caps["sampled"]["sampling"]["unsampled_pct"], unsampled, delta=0.01)

    def test_killed_process_keeps_its_time(self):
        """kill -9 of a process whose sample may still wait for its user
        stack: its time is in the windows; a sample it lost is counted."""
        d = self.daemon
        before = counters(d)
        begin = now_ms()
        killed = []
        for _ in range(3):
            p = subprocess.Popen(["sleep", "30"])
            started = time.monotonic()
            time.sleep(0.5)
            p.send_signal(signal.SIGKILL)
            p.wait()
            killed.append((p.pid, time.monotonic() - started))
        wait_stored(d, now_ms())
        after = counters(d)
        for pid, wall_s in killed:
            exp = export_json(d, "--from", str(begin / 1000 - 2), "--to",
                              str(now_ms() / 1000 + 1), "--pid", str(pid))
            total = sum(s["value_ns"] for s in exp["samples"])
            # Sleeping from shortly after its start to the kill.
            self.assertAlmostEqual(total / 1e9 / wall_s, 1.0, delta=0.1, msg=exp["samples"])
            # The sleep (longer than T: always sampled) has its stacks,
            # unless its sample was lost, which is then counted; the rest
            # is start-up's short blocks, sampled or not ([unsampled]).
            sleep = sum(s["value_ns"] for s in exp["samples"]
                        if "hrtimer_nanosleep" in s["kstack"] and s["ustack"])
            if sleep < 0.9 * total:
                self.assertGreater(grew(before, after, "samples_lost"), 0, exp["samples"])
        self.assertIsNone(d.proc.poll())


class RseqWalkTest(SampledTest):
    """sampled_walk = rseq: a deferred walk of a thread with rseq registered
    meets its return to user mode at the rseq_update tracepoint, not by a BPF
    task work; every test of SampledTest holds the same."""
    walk_config = "sampled_walk = rseq\n"
    walk_return = "rseq_update"

    def setUp(self):
        st = self.daemon.status()["sampling"]
        if st["walk"] == "deferred" and st["walk_return"] != "rseq_update":
            self.skipTest(f"deferred walks cannot use rseq_update here: {st['walk_return_reason']}")

    def test_status_says_how(self):
        self.assertIn("when the thread is current again (at rseq_update, else by BPF task work)",
                      self.daemon.ctl("status").stdout)


class SwitchOutFallbackTest(SampledTest):
    """sampled_walk = switch-out: the fallback of kernels without BPF task
    work, forced here; status says so and why."""
    walk_config = "sampled_walk = switch-out\n"

    def test_status_says_why(self):
        st = self.daemon.status()["sampling"]
        self.assertEqual(st["walk"], "switch-out")
        self.assertEqual(st["walk_reason"], "sampled_walk = switch-out")
        self.assertIn("at switch-out: sampled_walk = switch-out", self.daemon.ctl("status").stdout)


class AutoWalkTest(unittest.TestCase):
    """sampled_walk = auto, the default: deferred walks by task work, or at
    rseq_update while task works would cost the host more than that program
    at every switch (walk_return.h). Four processes sleeping 2 ms at a time
    against T = 1 ms have every block sampled and every walk deferred (a
    sleeper is woken from the idle task, another address space) while the
    host switches a few thousand times a second: rseq_update. A ping-pong of
    two threads switches hundreds of thousands of times a second, and its
    samples are walked at once (one address space): task works."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(FAST)

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def wait_walk_return(self, want, busy):
        """Status's sampling block once walk_return is want, or the last one
        when the busy processes are done."""
        while True:
            st = self.daemon.status()["sampling"]
            if st["walk_return"] == want or all(p.poll() is not None for p in busy):
                return st
            time.sleep(0.1)

    def test_follows_the_cost(self):
        d = self.daemon
        st = d.status()["sampling"]
        if st["walk"] != "deferred":
            self.skipTest(f"walks are not deferred here: {st['walk_reason']}")
        if not st["walk_return_reason"].startswith("auto:"):
            self.skipTest(f"deferred walks cannot use rseq_update here: {st['walk_return_reason']}")
        before = counters(d)
        sleepers = [Workload("--only", "sleeper", "--sleeps", "1500", "--sleep-ms", "2")
                    for _ in range(4)]
        try:
            for w in sleepers:
                w.proc.stdin.write("go\n")
                w.proc.stdin.flush()
            st = self.wait_walk_return("rseq_update", [w.proc for w in sleepers])
            if st["walk_return"] != "rseq_update":
                # Only where the host makes a task work cheap (no hypervisor
                # trapping its self-IPI) may auto keep them.
                cost = re.search(r" would cost (\d+) ns a switch", st["walk_return_reason"])
                if cost and int(cost.group(1)) <= 2 * 100:
                    self.skipTest(f"task works are cheap here: {st['walk_return_reason']}")
                self.fail(f"auto kept task works: {st}")
            self.assertRegex(st["walk_return_reason"],
                             r"^auto: \d+ walks/s would cost \d+ ns a switch by task work")
            self.assertIn("(at rseq_update, else by BPF task work; auto: ", d.ctl("status").stdout)
            for w in sleepers:
                w.proc.communicate(timeout=60)
                self.assertEqual(w.proc.returncode, 0)
        finally:
            for w in sleepers:
                w.kill()
        after = counters(d)
        self.assertGreater(grew(before, after, "walks_at_rseq"), 100, after)

        pingpong = subprocess.Popen([os.path.join(BUILD, "bench", "pingpong"), "--round-trips",
                                     "2000000", "--cpu", "0"], stdout=subprocess.DEVNULL)
        try:
            st = self.wait_walk_return("task work", [pingpong])
        finally:
            pingpong.kill()
            pingpong.wait()
        self.assertEqual(st["walk_return"], "task work", st)
        self.assertIn("(by BPF task work; auto: ", d.ctl("status").stdout)
        self.assertIn("deferred walks now at rseq_update (auto: ", d.log_text())
        self.assertIn("deferred walks now by task work (auto: ", d.log_text())


class SampledRequestErrorsTest(unittest.TestCase):
    """--sampled applies to offcpu and runq; the daemon refuses the rest."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("continuous = false\n")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_refused(self):
        r = self.daemon.ctl("capture", "--kind", "wakeup", "--sampled", "--seconds", "1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--sampled only applies to --kind offcpu or runq", r.stderr)
        r = self.daemon.ctl("capture", "--sampled=0", "--seconds", "1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("the period is 1 to 1000000 microseconds, not '0'", r.stderr)
        reply = self.daemon.raw(b'{"v":1,"cmd":"capture","seconds":1,"kind":"bio","sampled":true}\n')
        self.assertIn("field 'sampled' needs kind offcpu or runq", reply[0]["error"]["message"])
        reply = self.daemon.raw(b'{"v":1,"cmd":"capture","seconds":1,"sample_period_us":5}\n')
        self.assertIn("field 'sample_period_us' needs 'sampled'", reply[0]["error"]["message"])
        st = self.daemon.status()["sampling"]
        self.assertEqual(st["stacks"], "sampled")  # the configuration's, continuous or not


if __name__ == "__main__":
    unittest.main()
