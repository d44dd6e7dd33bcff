"""Integration tests of the kernel stack cache of exact walks
(bpf/stack_cache.bpf.c): a switch-out that finds a thread's return addresses
where an earlier walk found them takes that walk's stack instead of walking.

With stack_cache_audit = 1 every cache hit is walked anyway and compared, so
these tests check each stack the cache gave against the kernel's own walk:
a single difference fails them. Ground truth: the workload's blocks, counted
by the workload, each in the kernel function its kind of wait blocks in.
"""
import json
import os
import subprocess
import threading
import time
import unittest

from offcpu_env import BUILD, Daemon, Workload

# A block the workload counts may show as two (a wakeup that finds the
# condition false sleeps again), rarely: the count per site is checked to 2 %.
COUNT_TOLERANCE = 0.02


def counters(daemon):
    return daemon.status()["counters"]


def delta(before, after, name):
    return after[name] - before[name]


def capture(daemon, *args, seconds=3, during=None):
    """A --json capture of seconds; during() runs while it does. Returns the capture."""
    proc = daemon.ctl_popen("--json", "capture", "--seconds", str(seconds), *args)
    try:
        daemon.wait_captures(1)
        if during:
            during()
        out, err = proc.communicate(timeout=seconds + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, f"capture failed ({proc.returncode}): {out} {err}"
    return json.loads(out)["capture"]


class AuditedCacheTest(unittest.TestCase):
    """Every cached stack is walked again and compared."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("continuous = false\nstack_cache_audit = 1\n")
        st = cls.daemon.status()
        if not st["kstack_cache"]:
            cls.daemon.stop()
            raise unittest.SkipTest(f"no kernel stack cache here: {st['kstack_cache_reason']}")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, f"offcpud exited with {code}:\n{cls.daemon.log_text()}"

    def test_workload_stacks_from_the_cache(self):
        w = Workload()
        before = counters(self.daemon)
        truth = {}
        try:
            cap = capture(self.daemon, "--pid", str(w.pid), during=lambda: truth.update(w.go()))
        finally:
            w.kill()
        after = counters(self.daemon)
        hits = delta(before, after, "kstack_cache_hits")
        audits = delta(before, after, "kstack_cache_audits")
        self.assertGreater(delta(before, after, "kstack_cache_learned"), 0)
        # Threads that block where they blocked before: most stacks are hits.
        blocks = sum(t["blocks"] for t in truth.values())
        self.assertGreater(hits, blocks // 2, f"{hits} hits for {blocks} blocks")
        self.assertEqual(audits, hits, "stack_cache_audit = 1 walks every hit again")
        self.assertEqual(delta(before, after, "kstack_cache_mismatches"), 0)
        # Each wait in its kernel function, as often as the workload waited
        # there (the locker also waits for the holder: futex_wait elsewhere).
        for name, user_frame, kernel_frame in (("ow-sleeper", "block_in_sleep", "do_nanosleep"),
                                               ("ow-reader", "block_in_pipe_read", "pipe_read"),
                                               ("ow-locker", "block_in_mutex_lock", "futex_wait")):
            tid = w.tids[name]
            rows = [s for s in cap["samples"] if s["pid"] == tid and s["state"] == "S"
                    and user_frame in s["ustack"] and any(kernel_frame in f for f in s["kstack"])]
            got = sum(s["count"] for s in rows)
            want = truth[name]["blocks"]
            self.assertAlmostEqual(got / want, 1.0, delta=COUNT_TOLERANCE,
                                   msg=f"{name}: {got} blocks in {user_frame} and {kernel_frame}, "
                                       f"the workload counted {want}")

    def test_system_wide_stacks_from_the_cache(self):
        """Many kernel paths at once (pipes, sleeps, locks, disk and file
        system work, process start and exit, and CPU hogs preempted out of
        page faults, timer interrupts and rescheduling interrupts, whose
        stacks differ only in their entry frame): not one cached stack
        differs from its walk."""
        stop = threading.Event()
        # Twice as many hogs as CPUs, each faulting in fresh memory.
        hog = "import mmap\nwhile True:\n    m = mmap.mmap(-1, 1 << 22)\n    m[::4096] = bytes(1024)\n    m.close()\n"
        hogs = [subprocess.Popen(["python3", "-c", hog]) for _ in range(2 * os.cpu_count())]

        def load():
            while not stop.is_set():
                subprocess.run(["dd", "if=/dev/zero", f"of={self.daemon.dir}/dd.out", "bs=64k",
                                "count=64", "conv=fsync"], capture_output=True)
                subprocess.run(["find", "/usr/lib", "-name", "*.so*"], capture_output=True)
                subprocess.run([os.path.join(BUILD, "bench", "pingpong"), "--round-trips", "2000"],
                               capture_output=True)

        before = counters(self.daemon)
        t = threading.Thread(target=load)
        t.start()
        try:
            capture(self.daemon, seconds=4)
        finally:
            stop.set()
            t.join()
            for h in hogs:
                h.kill()
                h.wait()
        after = counters(self.daemon)
        self.assertGreater(delta(before, after, "kstack_cache_audits"), 100)
        self.assertEqual(delta(before, after, "kstack_cache_mismatches"), 0)


class CacheOffTest(unittest.TestCase):
    """stack_cache = off: every exact block is walked, and status says why."""

    def test_walked_every_time(self):
        daemon = Daemon("continuous = false\nstack_cache = false\n")
        try:
            st = daemon.status()
            self.assertFalse(st["kstack_cache"])
            self.assertEqual(st["kstack_cache_reason"], "stack_cache = off")
            w = Workload("--only", "sleeper")
            truth = {}
            try:
                cap = capture(daemon, "--pid", str(w.pid), during=lambda: truth.update(w.go()))
            finally:
                w.kill()
            c = counters(daemon)
            self.assertEqual(c["kstack_cache_hits"], 0)
            self.assertEqual(c["kstack_cache_learned"], 0)
            sleeps = sum(s["count"] for s in cap["samples"]
                         if s["state"] == "S" and "do_nanosleep" in s["kstack"])
            self.assertAlmostEqual(sleeps / truth["ow-sleeper"]["blocks"], 1.0, delta=COUNT_TOLERANCE)
            text = daemon.ctl("status").stdout
            self.assertIn("exact kernel stacks: walked at every block (stack_cache = off)", text)
        finally:
            code = daemon.stop()
            self.assertEqual(code, 0, daemon.log_text())


if __name__ == "__main__":
    unittest.main()
