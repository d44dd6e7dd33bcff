"""Whole user stacks of code built without frame pointers (-O2
-fomit-frame-pointer), walked in the kernel with .eh_frame unwind tables:
an executable, a shared library and C++, against the workloads' ground
truth; frame-pointer mode as the contrast; the depth limit and status."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from offcpu_env import BUILD, SANITIZED, Daemon, RequestWorkload, Workload
from test_daemon import TOLERANCE, capture_json, per_thread

NOFP_WORKLOAD = os.path.join(BUILD, "tests", "offcpu_workload_nofp")

# Each ground-truth thread's blocking call: its function, the libc call's
# direct caller (lost by frame-pointer walks, libc having no frame pointers)
# and the libc function that blocks.
BLOCKERS = {
    "ow-sleeper": ("sleeper_thread", "block_in_sleep", "nanosleep"),
    "ow-reader": ("reader_thread", "block_in_pipe_read", "read"),
    "ow-locker": ("locker_thread", "block_in_mutex_lock", None),
}


def follows(frames, *names):
    """Whether names appear in frames one right after the other."""
    n = len(names)
    return any(tuple(frames[i:i + n]) == names for i in range(len(frames) - n + 1))


def sleeper_capture(config, want_mode="dwarf"):
    """A user-stack capture of the no-frame-pointer sleeper by a daemon with
    config; returns (reply, the sleeper thread's user stacks)."""
    d = Daemon(config)
    try:
        assert d.status()["unwind"]["mode"] == want_mode
        w = Workload("--only", "sleeper", binary=NOFP_WORKLOAD)
        cap, _ = capture_json(d, w, "-U", seconds=2)
    finally:
        d.stop()
    return cap, [s["ustack"] for s in cap["samples"] if s["pid"] == w.tids["ow-sleeper"]]


def capture_request_workload(daemon, name, *args, seconds=3):
    w = RequestWorkload(name, "--requests", "100")
    proc = daemon.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", str(seconds), "-U",
                            *[a.replace("REQUEST", w.request) for a in args])
    try:
        daemon.wait_captures(1)
        truth = w.go()
        out, err = proc.communicate(timeout=seconds + 30)
    finally:
        w.kill()
    assert proc.returncode == 0, f"capture failed: {out} {err}"
    return json.loads(out)["capture"], truth


class UnwindTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        if cls.daemon.status()["unwind"]["mode"] != "dwarf":
            cls.daemon.stop()
            raise unittest.SkipTest("unwind tables need the tp_btf program, which this kernel refuses")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_executable_without_frame_pointers(self):
        w = Workload("--only", "sleeper", "--only", "reader", "--only", "locker", binary=NOFP_WORKLOAD)
        cap, truth = capture_json(self.daemon, w, "-U", seconds=3)
        for thread, (role, caller, libc_call) in BLOCKERS.items():
            tid = w.tids[thread]
            got = per_thread(cap, tid, lambda s: follows(s["ustack"], role, caller))
            rows = [s["ustack"] for s in cap["samples"] if s["pid"] == tid]
            self.assertGreater(got, 0, f"{thread}: no stack with {role};{caller}: {rows}")
            if libc_call:
                self.assertTrue(any(follows(s, caller, libc_call) for s in rows),
                                f"{thread}: {caller} not right above {libc_call}: {rows}")
            if not SANITIZED:  # timing ground truth: the normal build checks it
                self.assertAlmostEqual(got / truth[thread]["blocked_ns"], 1.0, delta=TOLERANCE,
                                       msg=f"{thread}: {got} ns vs {truth[thread]['blocked_ns']} ns")
            # Walked up to the thread's first frame: nothing marked truncated.
            self.assertFalse(any(s["ustack"][0] == "[truncated]" for s in cap["samples"]
                                 if s["pid"] == tid and follows(s["ustack"], role, caller)))
        us = cap["user_stacks"]
        walked = us["complete_ns"] + us["truncated_ns"] + us["frame_pointer_ns"]
        self.assertGreaterEqual(us["complete_ns"] / walked, 0.95, us)

    def test_shared_library_without_frame_pointers(self):
        cap, truth = capture_request_workload(self.daemon, "request_workload_lib_nofp")
        for name, t in truth.items():
            if not name.startswith("rq-worker"):
                continue
            got = per_thread(cap, t["tid"], lambda s: follows(s["ustack"], "lib_handle_request",
                                                              "block_in_backend_read", "read"))
            self.assertGreater(got, 0, [s["ustack"] for s in cap["samples"] if s["pid"] == t["tid"]])
            if not SANITIZED:
                self.assertAlmostEqual(got / t["in_request_blocked_ns"], 1.0, delta=TOLERANCE)

    def test_callers_of_a_request_function(self):
        # The uretprobe of --request replaces lib_handle_request's return
        # address with its trampoline: the walk must still name the caller.
        cap, _ = capture_request_workload(self.daemon, "request_workload_lib_nofp", "--request", "REQUEST")
        # A thread preempted inside the trampoline itself ([uprobes] leaf) is
        # walked no further: rare, and not what this checks.
        rows = [s["ustack"] for s in cap["samples"] if s["ustack"][-1:] != ["[uprobes]"]]
        self.assertTrue(rows)
        self.assertTrue(all(follows(s, "worker_thread", "lib_handle_request") for s in rows), rows)
        self.assertFalse(any(f.startswith("[unknown") for s in rows for f in s), rows)

    def test_library_loaded_later(self):
        # The capture loads the process's tables before the library exists;
        # the first walk through it asks for them again (at most once a
        # second), and from then on its stacks are whole.
        lib = os.path.join(BUILD, "tests", "librequest_workload_nofp.so")
        w = subprocess.Popen([os.path.join(BUILD, "tests", "dlopen_workload"), lib, "300", "10"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            pid = int(w.stdout.readline().split()[1])
            proc = self.daemon.ctl_popen("--json", "capture", "--pid", str(pid), "--seconds", "5", "-U")
            self.daemon.wait_captures(1)
            w.stdin.write("go\n")
            w.stdin.flush()
            truth = json.loads(w.communicate(timeout=60)[0].splitlines()[-1])
            out, err = proc.communicate(timeout=60)
        finally:
            if w.poll() is None:
                w.kill()
        self.assertEqual(proc.returncode, 0, err)
        cap = json.loads(out)["capture"]
        whole = sum(s["value_ns"] for s in cap["samples"]
                    if follows(s["ustack"], "main", "block_in_backend_read", "read") and
                    s["ustack"][0] != "[truncated]")
        # 3 s of reads; the refresh comes within about 1 s of the first request.
        self.assertGreater(whole, 0.5 * truth["blocked_ns"],
                           [(s["ustack"], s["value_ns"]) for s in cap["samples"]])

    def test_cxx_without_frame_pointers(self):
        cap, truth = capture_request_workload(self.daemon, "request_workload_cpp_nofp")
        workers = [t["tid"] for name, t in truth.items() if name.startswith("rq-worker")]
        for tid in workers:
            rows = [s["ustack"] for s in cap["samples"] if s["pid"] == tid]
            # app::Server::handle_request, however the symbolizer spells it
            self.assertTrue(any(any("handle_request" in f and "Server" in f for f in s) and
                                follows(s, "block_in_backend_read", "read") for s in rows), rows)

    def test_depth_limit_marks_truncated_stacks(self):
        cap, rows = sleeper_capture("unwind_max_depth = 3\n")
        self.assertTrue(rows)
        for s in rows:  # leaf-most three frames, under a [truncated] root
            self.assertEqual(s[0], "[truncated]", s)
            # The limit counts return addresses; one address can name
            # several functions (libc's futex_wait inlined in
            # pthread_barrier_wait when libc's debug info is installed).
            frames = [f for f in s[1:] if " [inlined]" not in f]
            self.assertLessEqual(len(frames), 3, s)
        self.assertGreater(cap["user_stacks"]["truncated_ns"], 0)

    def test_rows_full(self):
        # libc's table (28,000 rows) cannot fit in 4096: its code is walked
        # with frame pointers (the workload built with them gets through),
        # status says so, captures go on.
        d = Daemon("unwind_rows = 4096\n")
        try:
            w = Workload("--only", "sleeper")
            cap, _ = capture_json(d, w, "-U", seconds=2)
            u = d.status()["unwind"]
        finally:
            d.stop()
        self.assertGreater(u["no_room"], 0, u)
        self.assertLessEqual(u["rows_used"], 4096, u)
        self.assertTrue(any("sleeper_thread" in s["ustack"] for s in cap["samples"]), cap["samples"])

    def test_table_without_room_is_not_built_again(self):
        # 4096 rows: the workload's executable and ld.so (2,482 rows, held
        # while it waits at its start line) leave no room for grep's 3,152.
        # A second grep finds that file given up on, not built again
        # (issue 16: cc1's table, rebuilt and dropped at every request,
        # took 65 % of a core). No always-on profile: only these are walked.
        d = Daemon("unwind_rows = 4096\ncontinuous = false\n")
        w = Workload("--only", "sleeper")
        greps = []
        try:
            def capture_with_a_grep():
                greps.append(subprocess.Popen(["grep", "x"], stdin=subprocess.PIPE,
                                              stdout=subprocess.DEVNULL))
                r = d.ctl("capture", "--pid", f"{w.pid},{greps[-1].pid}", "--seconds", "1")
                self.assertEqual(r.returncode, 0, r.stderr)
                return d.status()["unwind"]

            first = capture_with_a_grep()
            again = capture_with_a_grep()
            text = d.ctl("status").stdout
        finally:
            for g in greps:
                g.kill()
                g.wait()
            w.kill()
            d.stop()
        self.assertGreater(first["no_room"], 0, first)
        self.assertEqual(again["no_room"], first["no_room"], again)
        self.assertGreater(again["given_up"], 0, again)
        self.assertIn("not built again for a minute", text)

    def test_table_that_cannot_fit_evicts_nothing(self):
        # 4096 rows: the held workload's 2,487 leave 1,609. cat's 669 fit;
        # once cat exits its table is unused. grep's 3,152 and pcre2's
        # 5,854 would not fit even with it evicted, so it stays (under
        # churn, such evictions emptied the array at each retry and every
        # table was built again: bench/churn.py).
        d = Daemon("unwind_rows = 4096\ncontinuous = false\n")
        w = Workload("--only", "sleeper")
        try:
            def capture_of(argv):
                p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
                try:
                    r = d.ctl("capture", "--pid", f"{w.pid},{p.pid}", "--seconds", "1")
                    self.assertEqual(r.returncode, 0, r.stderr)
                finally:
                    p.kill()
                    p.wait()
                return d.status()["unwind"]

            with_cat = capture_of(["cat"])
            time.sleep(6)  # the unwinder forgets exited processes every 5 s
            with_grep = capture_of(["grep", "x"])
        finally:
            w.kill()
            d.stop()
        self.assertGreater(with_grep["no_room"], with_cat["no_room"], with_grep)
        self.assertEqual(with_grep["evictions"], 0, with_grep)
        self.assertEqual(with_grep["tables"], with_cat["tables"], (with_cat, with_grep))

    def test_large_table_built_apart(self):
        """gcc's cc1 has some 45,000 functions, past the reader's
        INLINE_BUILD_FDES_MAX: its table is built by the builder thread, the
        process is read again when it is done, and cc1 waiting on its
        standard input is then walked whole, from _start through
        toplev::main to read."""
        cc1 = subprocess.run(["gcc", "-print-prog-name=cc1"], capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(cc1) or not os.path.exists(cc1):
            self.skipTest(f"no cc1 from gcc -print-prog-name=cc1: {cc1!r}")
        d = self.daemon
        before = d.status()["unwind"]["background_builds"]
        proc = subprocess.Popen([cc1, "-quiet"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            deadline, ustack = time.monotonic() + 30, None
            while True:
                unwind = d.status()["unwind"]
                r = d.ctl("--json", "blocked", "--pid", str(proc.pid))
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                threads = json.loads(r.stdout)["blocked"]["threads"]
                ustack = threads[0]["ustack"] if threads else None
                if unwind["background_builds"] > before and ustack and ustack[0] == "_start":
                    break
                self.assertLess(time.monotonic(), deadline,
                                f"cc1's table built apart and its stack whole: {unwind}, {ustack}")
                time.sleep(0.3)
        finally:
            proc.kill()
            proc.wait()
        self.assertIn("toplev::main(int, char**)", ustack)
        self.assertEqual(ustack[-1], "read")
        self.assertNotIn("[truncated]", ustack)

    def test_status_reports_tables(self):
        # Its own capture, so the tables it counts do not depend on the
        # tests that ran before it.
        capture_json(self.daemon, Workload("--only", "sleeper", binary=NOFP_WORKLOAD), "-U", seconds=1)
        st = self.daemon.status()
        u = st["unwind"]
        self.assertEqual(u["mode"], "dwarf")
        self.assertGreaterEqual(u["tables"], 2)  # at least an executable and libc
        self.assertGreater(u["rows_used"], 0)
        self.assertEqual(u["table_bytes"], 16 * u["rows_used"])
        self.assertGreater(u["build_ns_total"], 0)
        self.assertGreater(st["counters"]["ustack_table_walks"], 0)
        text = self.daemon.ctl("status").stdout
        self.assertIn("user stacks: unwind tables of", text)

    def test_walks_before_tables_are_counted(self):
        """A process of a file no table is loaded for (a fresh copy of the
        binary: another inode) blocks before user space has read it (its
        read of the go line, at least): those walks either fall back to
        frame pointers, or are walked with a list the kernel side built of
        the files it knows (libc), which stops at the binary. Status counts
        both."""
        d = self.daemon
        names = ("ustack_fp_fallback", "ustack_truncated")
        before = d.status()["counters"]
        with tempfile.TemporaryDirectory() as tmp:
            binary = os.path.join(tmp, "offcpu_workload_nofp")
            shutil.copy(NOFP_WORKLOAD, binary)
            out = d.ctl_popen("capture", "-U", "--seconds", "2")
            try:
                d.wait_captures(1)
                w = Workload("--only", "sleeper", "--sleeps", "5", binary=binary)
                w.go()
                out.communicate(timeout=60)
            finally:
                if out.poll() is None:
                    out.kill()
        after = d.status()["counters"]
        self.assertGreater(sum(after[n] for n in names), sum(before[n] for n in names))
        if after["ustack_fp_fallback"] > before["ustack_fp_fallback"]:
            self.assertIn("with frame pointers, before their process's tables",
                          d.ctl("status").stdout)


class FramePointerModeTest(unittest.TestCase):
    """The contrast: with unwind = fp the same binary loses the caller of
    each libc call (frame-pointer walking, as bcc and bpftrace do)."""

    def test_frame_pointers_lose_the_direct_caller(self):
        cap, rows = sleeper_capture("unwind = fp\n", want_mode="fp")
        self.assertTrue(rows)
        self.assertFalse(any("block_in_sleep" in s for s in rows), rows)
        self.assertEqual(cap["user_stacks"]["complete_ns"] + cap["user_stacks"]["truncated_ns"], 0)

    def test_garbage_return_addresses_are_not_frames(self):
        """A frame-pointer walk of code that keeps data in rbp reads data as
        return addresses. Values no user address can be (bit 62 set: a
        double such as 2.0) read as CPython frames, "[python: not a code
        object]", for 2/3 of short_workload's time before the walk's result
        was cut there; now such a stack ends at "[truncated]"."""
        d = Daemon("unwind = fp\n")
        w = subprocess.Popen([os.path.join(BUILD, "tests", "short_workload"), "--threads", "2",
                              "--naps", "3000"], stdout=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            r = d.ctl("--json", "capture", "--pid", str(w.pid), "--seconds", "1", "-U")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            w.kill()
            w.wait()
            d.stop()
        samples = json.loads(r.stdout)["capture"]["samples"]
        self.assertTrue(samples, "the workload's naps were captured")
        bogus = [s["ustack"] for s in samples
                 if any(f.startswith("[python") or f == "[unknown: file forgotten]" for f in s["ustack"])]
        self.assertEqual(bogus, [], "garbage taken for CPython or file frames in a C program")


if __name__ == "__main__":
    unittest.main()
