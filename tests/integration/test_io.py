"""I/O kinds against ground truth: block I/O (bio) by the issuing stack and
file I/O syscall latency (fileio), through captures and stored windows.

The workload (tests/workloads/io_workload.c) reads 4 KiB blocks with O_DIRECT
in direct_read_thread, does pwrite + fsync in sync_write_thread and reads a
cached file in cached_read_thread. Its files are on the build directory's
file system, which must be a real disk (O_DIRECT reads on tmpfs never reach
a block device): the test skips if it is not one.
"""
import json
import os
import re
import subprocess
import time
import unittest

from offcpu_env import BUILD, Daemon, parse_folded, skip_if_sanitized

IO_WORKLOAD = os.path.join(BUILD, "tests", "io_workload")
READS, SYNCS, CACHED = 300, 20, 2000
FAST = "window_seconds = 1\ndrain_interval_ms = 250\ncontinuous_kinds = offcpu, bio, fileio\n"


def on_block_device(path):
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split() for line in f]
    best = max((m for m in mounts if os.path.realpath(path).startswith(m[4])), key=lambda m: len(m[4]))
    fstype = best[best.index("-") + 1]
    return fstype in ("ext4", "xfs", "btrfs", "ext3", "ext2", "f2fs")


class IoWorkload:
    """io_workload --wait-go in BUILD; held until go(), alive until done()."""

    def __init__(self):
        self.proc = subprocess.Popen([IO_WORKLOAD, "--dir", os.path.abspath(BUILD), "--reads", str(READS),
                                      "--syncs", str(SYNCS), "--cached", str(CACHED), "--wait-go"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", f"io_workload did not get ready: {line}"
        self.pid = int(line[1])

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        return {t["name"]: t for t in json.loads(line)["threads"]}

    def done(self):
        if self.proc.poll() is None:
            try:
                self.proc.communicate("exit\n", timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def captures(d, workload, *specs, seconds=3):
    """Runs one capture of the workload's pid per spec (extra offcpuctl args)
    while it runs; returns ([stdout per spec], truth)."""
    procs = [d.ctl_popen("capture", "--pid", str(workload.pid), "--seconds", str(seconds), *spec)
             for spec in specs]
    try:
        d.wait_captures(len(procs))
        truth = workload.go()
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=seconds + 30)
            assert p.returncode == 0, f"capture failed ({p.returncode}): {out} {err}"
            outs.append(out)
    finally:
        workload.done()
        for p in procs:
            if p.poll() is None:
                p.kill()
    return outs, truth


def rows_with(rows, function):
    return [(frames, v) for frames, v in rows if function in frames]


def foreign_rows(text):
    """Rows of a --pid capture of io_workload that are not its threads'."""
    return [frames for frames, _ in parse_folded(text) if frames[0] != "io_workload" and
            not frames[0].startswith("iow-")]


@unittest.skipUnless(on_block_device(BUILD), "the build directory is not on a disk file system: "
                     "O_DIRECT reads would not reach a block device")
class IoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(FAST)
        st = cls.daemon.status()
        cls.bio = st.get("bio_tracepoints", "")
        cls.fileio = st.get("fileio_tracepoints", "")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def setUp(self):
        if not self.bio or not self.fileio:
            self.skipTest(f"I/O kinds unavailable on this kernel: bio '{self.bio}', fileio '{self.fileio}'")

    def test_status_names_the_tracepoints(self):
        r = self.daemon.ctl("status")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, rf"\n  bio +(ready|in use) +.*{re.escape(self.bio)}")
        self.assertRegex(r.stdout, r"\n  fileio +(ready|in use) +.*syscall tracepoints")

    def test_bio_direct_reads_by_issuing_stack(self):
        d = self.daemon
        (count, device, queue, everything, nbytes), truth = captures(
            d, IoWorkload(),
            ["--kind", "bio", "--metric", "count", "--user-only"],
            ["--kind", "bio", "--state", "D", "--user-only"],
            ["--kind", "bio", "--state", "R", "--user-only"],
            ["--kind", "bio", "--user-only"],
            ["--kind", "bio", "--metric", "bytes", "--user-only"])
        for text in (count, device, queue, everything, nbytes):
            self.assertEqual(foreign_rows(text), [], text)
        reads = truth["iow-direct"]["calls"]
        self.assertEqual(reads, READS)
        # Requests: one per O_DIRECT read, counted once (on the device row).
        n = sum(v for _, v in rows_with(parse_folded(count), "direct_read_thread"))
        self.assertLessEqual(abs(n - reads), 3, f"{n} requests for {reads} reads:\n{count}")
        # Device time (issue to completion) > 0, within the time the reads took.
        dev_us = sum(v for _, v in rows_with(parse_folded(device), "direct_read_thread"))
        self.assertGreater(dev_us, 0, device)
        self.assertLessEqual(dev_us, truth["iow-direct"]["io_ns"] / 1000 * 1.05 + 100)
        # Queue time (insert to issue) alone with --state R, as [queued] leaves;
        # insert to completion is both.
        queue_rows = rows_with(parse_folded(queue), "direct_read_thread")
        self.assertTrue(all(f[-1] == "[queued]" for f, _ in queue_rows), queue)
        self.assertFalse(any(f[-1] == "[queued]" for f, _ in rows_with(parse_folded(device), "direct_read_thread")))
        all_us = sum(v for _, v in rows_with(parse_folded(everything), "direct_read_thread"))
        queue_us = sum(v for _, v in queue_rows)
        self.assertLessEqual(abs(all_us - (dev_us + queue_us)), 3, f"{all_us} vs {dev_us} + {queue_us}")
        # Bytes: 4 KiB a request.
        b = sum(v for _, v in rows_with(parse_folded(nbytes), "direct_read_thread"))
        self.assertLessEqual(abs(b - reads * 4096), 3 * 4096, nbytes)
        # The cached reader never reaches the disk.
        self.assertFalse(rows_with(parse_folded(count), "cached_read_thread"), count)

    def test_fileio_latency_and_min_us(self):
        d = self.daemon
        (count, latency, slow), truth = captures(
            d, IoWorkload(),
            ["--kind", "fileio", "--metric", "count"],
            ["--kind", "fileio"],
            ["--kind", "fileio", "--metric", "count", "--min-us", "50"])
        for text in (count, latency, slow):
            self.assertEqual(foreign_rows(text), [], text)
        counts = parse_folded(count)
        # pwrite + fsync per round; the cached reads all seen.
        # A tracepoint program is skipped when another BPF program runs on its CPU
        # (the kernel's recursion guard): allow a few misses, never extra calls.
        # By the function that does the I/O: with whole stacks the thread
        # function is also above the thread's other calls (its start line).
        for fn, want in (("write_and_sync", 2 * SYNCS), ("read_cached_block", CACHED),
                         ("read_direct_block", READS)):
            got = sum(v for _, v in rows_with(counts, fn))
            self.assertLessEqual(got, want, count)
            self.assertGreaterEqual(got, want - max(2, want // 100), count)
        sync_us = sum(v for _, v in rows_with(parse_folded(latency), "write_and_sync"))
        self.assertGreater(sync_us, 0, latency)
        if not skip_if_sanitized_active():
            truth_us = truth["iow-sync"]["io_ns"] / 1000
            self.assertLessEqual(sync_us, truth_us * 1.05 + 100, f"{sync_us} us vs {truth_us} us")
            self.assertGreaterEqual(sync_us, truth_us * 0.80, f"{sync_us} us vs {truth_us} us")
        # --min-us 50: the cached reads (a few us each) are gone, fsyncs stay.
        slow_rows = parse_folded(slow)
        self.assertLess(sum(v for _, v in rows_with(slow_rows, "cached_read_thread")), CACHED // 100, slow)
        self.assertGreaterEqual(sum(v for _, v in rows_with(slow_rows, "write_and_sync")), SYNCS // 2, slow)

    def test_fileio_with_filename(self):
        d = self.daemon
        w = IoWorkload()
        (named, plain), _ = captures(d, w, ["--kind", "fileio", "--metric", "count", "--with-filename"],
                                     ["--kind", "fileio", "--metric", "count"])
        rows = parse_folded(named)
        # The file's name is the leaf of the user stack: "...;pwrite;[file] NAME;-".
        for fn, name, want in (("write_and_sync", f"io_workload.{w.pid}.sync", 2 * SYNCS),
                               ("read_cached_block", f"io_workload.{w.pid}.cached", CACHED)):
            mine = rows_with(rows, fn)
            self.assertTrue(mine, named)
            self.assertTrue(all(f[f.index("-") - 1] == f"[file] {name}" for f, _ in mine), mine)
            got = sum(v for _, v in mine)
            self.assertGreaterEqual(got, want - max(2, want // 100), named)
            self.assertLessEqual(got, want)
        self.assertFalse([f for f, _ in parse_folded(plain) if any(x.startswith("[file] ") for x in f)])
        r = d.ctl("capture", "--pid", str(os.getpid()), "--seconds", "1", "--with-filename")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--with-filename only applies to --kind fileio", r.stderr)

    def test_windows_hold_io_kinds(self):
        d = self.daemon
        w = IoWorkload()
        begin = time.time()
        try:
            truth = w.go()
            time.sleep(2.5)  # stored windows: 1 s each, drained every 250 ms
            rng = ["--from", str(begin - 2), "--to", str(time.time() + 1), "--pid", str(w.pid)]
            r = d.ctl("export", *rng, "--kind", "bio", "--metric", "count")
            self.assertEqual(r.returncode, 0, r.stderr)
            n = sum(v for _, v in rows_with(parse_folded(r.stdout), "direct_read_thread"))
            self.assertLessEqual(abs(n - truth["iow-direct"]["calls"]), 3, r.stdout)
            r = d.ctl("export", *rng, "--kind", "bio", "--metric", "bytes")
            self.assertEqual(r.returncode, 0, r.stderr)
            b = sum(v for _, v in rows_with(parse_folded(r.stdout), "direct_read_thread"))
            self.assertLessEqual(abs(b - truth["iow-direct"]["bytes"]), 3 * 4096, r.stdout)
            r = d.ctl("export", *rng, "--kind", "fileio", "--svg")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("sync_write_thread", r.stdout)
            self.assertIn(f">File I/O \u2014 pid {w.pid} \u2014 ", r.stdout)
        finally:
            w.done()

    def test_fileio_attached_only_while_used(self):
        """Syscall tracepoints slow every syscall down: fileio's programs are
        attached only while a fileio capture (or continuous slot) runs."""
        d = Daemon("continuous = false\ndrain_interval_ms = 250\n")
        try:
            def fileio_attached(want):
                """The programs' state as status reports it (sampled at each drain)."""
                deadline = time.monotonic() + 10
                while True:
                    progs = [p for p in d.status()["programs"] if p["name"].startswith("fileio_")]
                    self.assertEqual(len(progs), 16, progs)
                    got = {p["attached"] for p in progs}
                    if got == {want} or time.monotonic() > deadline:
                        return got
                    time.sleep(0.1)
            self.assertEqual(fileio_attached(False), {False})
            cap = d.ctl_popen("capture", "--kind", "fileio", "--seconds", "60", "-o", os.devnull)
            d.wait_captures(1)
            self.assertEqual(fileio_attached(True), {True})
            cap.send_signal(2)
            cap.communicate(timeout=30)
            self.assertEqual(fileio_attached(False), {False})
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_bad_requests(self):
        d = self.daemon
        r = d.ctl("capture", "--kind", "offcpu", "--metric", "bytes", "-d", "1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--metric bytes only applies to --kind bio or fileio", r.stderr)
        reply = d.raw(b'{"v":1,"cmd":"capture","seconds":1,"kind":"fileio","requests":["main"]}\n')[0]
        self.assertFalse(reply["ok"])
        self.assertIn("needs an off-CPU kind", reply["error"]["message"])
        reply = d.raw(b'{"v":1,"cmd":"export","from_ms":1,"kind":"runq","metric":"bytes"}\n')[0]
        self.assertFalse(reply["ok"])
        self.assertIn("bytes needs kind bio or fileio", reply["error"]["message"])


def skip_if_sanitized_active():
    from offcpu_env import SANITIZED
    return SANITIZED


if __name__ == "__main__":
    unittest.main()
