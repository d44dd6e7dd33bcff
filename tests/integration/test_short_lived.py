"""Names that outlive their processes (issue 16): short-lived processes
built without frame pointers (-O2 -fomit-frame-pointer) that do all their
work between two drains and exit right after it. Every one of their naps
must come back whole and named, against the workload's own count: in a
capture that targets them and in the always-on windows.

The daemons here drain every 10 s, so each process lives (a fraction of a
second) between two drains: the drain that names its stacks runs after it
has exited, and its /proc/PID/maps and map_files are gone by then.

Each process first blocks in wait_for_go (its start line), where its
unwind tables are built: naps are counted, not that first block. With
unwind = fp nothing keeps their mappings: their frames say so ([unknown:
exited]) and status counts them.

From the first block (test_*_whole_from_the_first_block): processes that
start napping at once, before user space has read their mappings. Their
binary's tables are loaded already (an earlier process of it ran), so the
kernel side builds their mappings from their VMAs: when their loader is
done (a hook on ld.so), else at their first deferred walk (the always-on
profile's sampled stacks). Every nap whole; those that exit before user
space reads their maps are named from that list. A list that covers all of
a process's executable files is taken by user space as it is, without
reading the process's maps (status unwind.adopted).
"""
import json
import os
import shutil
import struct
import subprocess
import time
import unittest

from offcpu_env import BUILD, Daemon, cpu_hogs, fd_ids
from test_windows import continuous, export_json, windows

SHORT_WORKLOAD = os.path.join(BUILD, "tests", "short_workload")
PROCESSES, THREADS, NAPS = 4, 2, 100
SLOW_DRAINS = "drain_interval_ms = 10000\n"
UNWIND_FROM_VMAS = 1  # bpf/offcpu.h OFFCPU_UNWIND_FROM_VMAS: a list the kernel side built


def unwind_procs_map(d):
    """The id of d's unwind_procs map: each process's mappings, by tgid."""
    for i in fd_ids(d.proc.pid, "map_id"):
        r = subprocess.run(["bpftool", "--json", "map", "show", "id", str(i)],
                           capture_output=True, text=True)
        if r.returncode == 0 and json.loads(r.stdout).get("name") == "unwind_procs":
            return i
    raise AssertionError("the daemon holds no unwind_procs map")


def wait_read(d, pids, timeout=30):
    """Waits until d's unwinder has read the processes pids (published their
    mappings as its own, not the kernel side's provisional list), which it
    does some 20 ms after each first blocks, behind every process asked
    for before: a fresh daemon under ASan took 0.4-0.5 s to catch up with
    a 2-CPU machine's processes, so no fixed sleep is enough."""
    procs_map = unwind_procs_map(d)
    waiting = set(pids)
    deadline = time.monotonic() + timeout
    while waiting:
        for pid in list(waiting):
            r = subprocess.run(["bpftool", "--json", "map", "lookup", "id", str(procs_map), "key",
                                *(str(b) for b in struct.pack("<I", pid))],
                               capture_output=True, text=True)
            if r.returncode == 0:  # struct offcpu_unwind_proc: n, then flags
                flags = struct.unpack("<I", bytes(int(b, 16) for b in json.loads(r.stdout)["value"][4:8]))[0]
                if not flags & UNWIND_FROM_VMAS:
                    waiting.discard(pid)
        if waiting and time.monotonic() > deadline:
            raise AssertionError(f"processes {sorted(waiting)} not read by the unwinder after "
                                 f"{timeout} s: {d.status()['unwind']}")
        time.sleep(0.02)


class ShortWorkload:
    """short_workload --wait-go: started, held at its start line until go()."""

    def __init__(self, binary=SHORT_WORKLOAD):
        self.proc = subprocess.Popen([binary, "--wait-go", "--threads", str(THREADS),
                                      "--naps", str(NAPS)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", f"short_workload did not get ready: {line}"
        self.pid = int(line[1])

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def truth(self):
        """Waits for the exit; returns {tid: naps}."""
        out, _ = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, f"short_workload failed: {self.proc.returncode}"
        return {t["tid"]: t["naps"] for t in json.loads(out.strip().splitlines()[-1])["threads"]}

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_processes(d, before_go=lambda ws: None, read=True):
    """Starts the processes; with read, waits until d has read them (their
    tables are built while they wait at their start line); then runs them
    all at once. Returns ({pid: {tid: naps}}, end time in ms)."""
    ws = [ShortWorkload() for _ in range(PROCESSES)]
    try:
        before_go(ws)
        if read:
            wait_read(d, [w.pid for w in ws])
        for w in ws:
            w.go()
        truth = {w.pid: w.truth() for w in ws}
    finally:
        for w in ws:
            w.kill()
    return truth, int(time.time() * 1000)


def whole_and_named(ustack):
    """A nap's stack: nap_worker right above nap_once, every frame named."""
    return (any(ustack[i:i + 2] == ["nap_worker", "nap_once"] for i in range(len(ustack) - 1))
            and not any(f.startswith("[unknown") or f == "[truncated]" or
                        f.startswith("short_workload+0x") for f in ustack))


def naps_seen(samples, tid):
    """(blocks whole and named under nap_once, all of tid's blocks, an example
    of a stack that is not)."""
    named = total = 0
    other = None
    for s in samples:
        if s["pid"] != tid or s["kind"] != "offcpu":
            continue
        total += s["count"]
        if whole_and_named(s["ustack"]):
            named += s["count"]
        elif other is None:
            other = s["ustack"][:12]
    return named, total, other


class ShortLivedTest(unittest.TestCase):
    def check(self, samples, truth, where):
        for pid, threads in truth.items():
            for tid, naps in threads.items():
                named, total, other = naps_seen(samples, tid)
                self.assertEqual(named, naps, f"{where}: process {pid} thread {tid}: {named} of "
                                 f"{naps} naps whole and named ({total} blocks in all; one "
                                 f"that is not: {other})")

    def check_capture(self, proc, truth, where):
        """check() on the reply of the capture proc, once it ends."""
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, f"capture failed: {out} {err}")
        self.check(json.loads(out)["capture"]["samples"], truth, where)

    def stop(self, d, proc):
        """Kills the capture proc (None: not started) if it still runs,
        then stops d, which must exit cleanly."""
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        self.assertEqual(d.stop(), 0, d.log_text())

    def check_windows(self, d, begin, end, truth, where):
        """check() on the windows from begin (ms) once they hold what ran
        until end (ms). The drain that carries the blocks runs within a
        drain interval of their exit, into the window open then; windows
        are stored in order, so one that starts later means it is in."""
        deadline = time.monotonic() + 60
        while not any(w["start_ms"] >= end + 11000 for w in continuous(windows(d))):
            self.assertLess(time.monotonic(), deadline, "no window after the processes' exit")
            time.sleep(0.5)
        for pid in truth:
            exp = export_json(d, "--from", str(begin / 1000 - 1), "--to", str(time.time() + 1),
                              "--pid", str(pid))
            self.check(exp["samples"], {pid: truth[pid]}, where)

    def daemon(self, config):
        d = Daemon(config)
        try:
            mode = d.status()["unwind"]["mode"]
        except BaseException:
            d.stop()
            raise
        if mode != "dwarf":
            d.stop()
            self.skipTest("unwind tables need the tp_btf program, which this kernel refuses")
        return d

    def test_capture_of_processes_that_exit_between_drains(self):
        # Processes that start after the capture (whose start drains, to
        # read its targets' maps while they surely exist: a target that
        # runs at the start is named even without kept files).
        d = self.daemon(SLOW_DRAINS)
        proc = d.ctl_popen("--json", "capture", "--seconds", "4", "-U", "--state", "S")
        try:
            d.wait_captures(1)
            truth, _ = run_processes(d)
            self.check_capture(proc, truth, "capture")
        finally:
            self.stop(d, proc)

    def test_capture_targeting_them(self):
        d = self.daemon(SLOW_DRAINS)
        proc = None
        try:
            def start_capture(ws):
                nonlocal proc
                # Sleeping time only: one block per nap.
                proc = d.ctl_popen("--json", "capture", "--pid", ",".join(str(w.pid) for w in ws),
                                   "--seconds", "4", "-U", "--state", "S")
                d.wait_captures(1)

            truth, _ = run_processes(d, start_capture)
            self.check_capture(proc, truth, "capture")
        finally:
            self.stop(d, proc)

    def test_windows_of_processes_that_exit_between_drains(self):
        # Every block's stacks walked, sleeping time only: one block per nap.
        d = self.daemon(SLOW_DRAINS + "window_seconds = 10\ncontinuous_stacks = exact\n"
                        "continuous_states = S\n")
        try:
            begin = int(time.time() * 1000)
            truth, end = run_processes(d)
            self.check_windows(d, begin, end, truth, "windows")
            # Status: what is kept for names, what could not be named.
            u = d.status()["unwind"]
            self.assertGreaterEqual(u["kept_processes"], PROCESSES, u)
            self.assertGreater(u["kept_files"], 0, u)
            for why in ("exited", "unmapped", "anonymous", "forgotten"):
                self.assertIn(f"unknown_{why}", u)
            self.assertGreater(u["file_ids"], 0, u)
            text = d.ctl("status").stdout
            self.assertIn("user frames: by file and address for", text)
            self.assertIn("names kept for", text)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def run_fresh_processes(self, d):
        """A first process of short_workload's binary, held at its start
        line while its tables are loaded (user space reads a process's maps
        20 ms after it first blocks); then processes that nap at once:
        PROCESSES that live some 0.1 s, and as many that exit within 10 ms,
        before user space reads their maps (named from the kernel's list
        of them). Returns their {pid: {tid: naps}}."""
        if not d.status()["unwind"]["from_vmas"]:
            self.skipTest("this kernel cannot build a new process's mappings from its VMAs "
                          "(VMA iterator kfuncs, 6.7, and BPF task work needed)")
        first = ShortWorkload()
        try:
            wait_read(d, [first.pid])
            first.go()
            first.truth()
        finally:
            first.kill()
        runs = [(THREADS, NAPS)] * PROCESSES + [(1, 5)] * PROCESSES
        procs = [subprocess.Popen([SHORT_WORKLOAD, "--threads", str(t), "--naps", str(n)],
                                  stdout=subprocess.PIPE, text=True) for t, n in runs]
        truth = {}
        for p in procs:
            out, _ = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0)
            got = json.loads(out.strip().splitlines()[-1])
            truth[got["pid"]] = {t["tid"]: t["naps"] for t in got["threads"]}
        return truth

    def test_always_on_whole_from_the_first_block(self):
        # The default stack mode (sampled): a 1 ms nap is at least the
        # default period T, so every nap is sampled, and its user stack is
        # walked on its way back to user mode.
        d = self.daemon(SLOW_DRAINS + "window_seconds = 10\ncontinuous_stacks = sampled\n"
                        "continuous_states = S\n")
        try:
            # (Before the first window starts: export takes the windows
            # that start in its range.)
            begin = int(time.time() * 1000)
            truth = self.run_fresh_processes(d)
            self.check_windows(d, begin, int(time.time() * 1000), truth,
                               "always-on, from the first block")
            self.assertGreater(d.status()["counters"]["unwind_from_vmas"], 0)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_capture_whole_from_the_first_block(self):
        # Exact stacks, walked at switch-out, where the VMAs cannot be read:
        # the lists come from the loader's hook, before main().
        d = self.daemon(SLOW_DRAINS + "continuous = false\n")
        proc = None
        try:
            if not d.status()["unwind"]["loader_hook"]:
                self.skipTest("no hook on the dynamic loader here (its _dl_debug_state)")
            proc = d.ctl_popen("--json", "capture", "--seconds", "6", "-U", "--state", "S")
            d.wait_captures(1)
            adopted = d.status()["unwind"].get("adopted", 0)
            truth = self.run_fresh_processes(d)
            self.check_capture(proc, truth, "capture, from the first block")
            # Their binary's files all have tables: the lists built when
            # their loader was done are taken as they are, without reading
            # their maps, and their stacks are whole and named all the same.
            # (User space is not woken for such a list: it takes it at its
            # next wakeup, within its 5 s sweep.)
            deadline = time.monotonic() + 15
            while (d.status()["unwind"]["adopted"] - adopted < PROCESSES and
                   time.monotonic() < deadline):
                time.sleep(0.5)
            self.assertGreaterEqual(d.status()["unwind"]["adopted"] - adopted, PROCESSES,
                                    d.status()["unwind"])
        finally:
            self.stop(d, proc)

    def test_capture_whole_from_the_first_block_under_load(self):
        """As test_capture_whole_from_the_first_block with every CPU busy
        (a busy loop on each): the processes' first blocks whole all the
        same."""
        d = self.daemon(SLOW_DRAINS + "continuous = false\n")
        proc = None
        try:
            if not d.status()["unwind"]["loader_hook"]:
                self.skipTest("no hook on the dynamic loader here (its _dl_debug_state)")
            proc = d.ctl_popen("--json", "capture", "--seconds", "8", "-U", "--state", "S")
            d.wait_captures(1)
            reads = d.status()["unwind"]["loader_reads"]
            with cpu_hogs():
                truth = self.run_fresh_processes(d)
            self.check_capture(proc, truth, "capture under load, from the first block")
            # The first of them, whose binary had no table yet, was read
            # when its loader was done, and status says how long it waited.
            u = d.status()["unwind"]
            self.assertGreater(u["loader_reads"], reads, u)
            self.assertGreater(u["loader_wait_ns_max"], 0, u)
            self.assertEqual(u["unwinder_nice"], -10, u)
        finally:
            self.stop(d, proc)

    def test_always_on_whole_from_the_first_block_under_load(self):
        """As test_always_on_whole_from_the_first_block with every CPU busy."""
        d = self.daemon(SLOW_DRAINS + "window_seconds = 10\ncontinuous_stacks = sampled\n"
                        "continuous_states = S\n")
        try:
            begin = int(time.time() * 1000)
            with cpu_hogs():
                truth = self.run_fresh_processes(d)
            self.check_windows(d, begin, int(time.time() * 1000), truth,
                               "always-on under load, from the first block")
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_copy_of_a_binary_whole_from_the_first_block(self):
        # A copy of a binary (another inode, the same build-id: the same
        # binary in another layer of a container image, say) shares its
        # table; the kernel side finds tables by device and inode, so the
        # table is published under the copy's too once user space has read
        # a process of it, and the copy's next processes are whole from
        # their first block.
        d = self.daemon(SLOW_DRAINS + "continuous = false\n")
        proc = None
        copy = os.path.join(d.dir, "copied_workload")
        try:
            if not d.status()["unwind"]["loader_hook"]:
                self.skipTest("no hook on the dynamic loader here (its _dl_debug_state)")
            shutil.copy(SHORT_WORKLOAD, copy)
            proc = d.ctl_popen("--json", "capture", "--seconds", "5", "-U", "--state", "S")
            d.wait_captures(1)
            for binary in (SHORT_WORKLOAD, copy):  # each read while it waits to start
                w = ShortWorkload(binary)
                try:
                    wait_read(d, [w.pid])
                    w.go()
                    w.truth()
                finally:
                    w.kill()
            out = subprocess.run([copy, "--threads", str(THREADS), "--naps", "20"],
                                 capture_output=True, text=True, check=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            self.check_capture(proc, {got["pid"]: {t["tid"]: t["naps"] for t in got["threads"]}},
                               "a process of a copy, from its first block")
        finally:
            self.stop(d, proc)

    def test_file_rewritten_in_place_not_taken_from_its_vmas(self):
        # A list the kernel side built from a process's VMAs is taken whole
        # (its maps unread) only where each file is unchanged since its table
        # was made (size and ctime): a binary rewritten in place (the same
        # inode, a new build-id) is read, and gets a table of its own, while
        # a capture's loader hook builds its processes' lists.
        d = self.daemon(SLOW_DRAINS + "continuous = false\n")
        proc = None
        copy = os.path.join(d.dir, "rewritten_workload")
        try:
            if not d.status()["unwind"]["loader_hook"]:
                self.skipTest("no hook on the dynamic loader here (its _dl_debug_state)")
            shutil.copy(SHORT_WORKLOAD, copy)
            # (Before the capture: readelf's own files would get tables.)
            build_id = subprocess.run(["readelf", "-n", copy], capture_output=True, text=True,
                                      check=True).stdout.split("Build ID: ")[1].split()[0]
            proc = d.ctl_popen("--json", "capture", "--seconds", "60", "-U", "--state", "S")
            d.wait_captures(1)

            def run_one(until):
                """Runs a process of copy; waits (15 s at most) until the
                unwinder's counters' growth passes until(); returns it."""
                before = d.status()["unwind"]
                subprocess.run([copy, "--threads", "1", "--naps", "50"], capture_output=True,
                               check=True, timeout=60)
                deadline = time.monotonic() + 15
                while True:
                    after = d.status()["unwind"]
                    got = {k: after[k] - before[k] for k in ("builds", "files_opened", "adopted")}
                    if until(got) or time.monotonic() > deadline:
                        return got

            first = run_one(lambda g: g["builds"] >= 1)
            self.assertGreaterEqual(first["builds"], 1, first)
            # Taken whole now. (The counts are the daemon's: offcpuctl's own
            # processes, and whatever else runs, count too.)
            again = run_one(lambda g: g["adopted"] >= 1)
            self.assertGreaterEqual(again["adopted"], 1, again)
            with open(copy, "r+b") as f:  # in place: the same inode and size
                data = f.read()
                at = data.index(bytes.fromhex(build_id))
                f.seek(at)
                f.write(bytes([data[at] ^ 0xff]))
            # Taken whole with the old table, it would build nothing. (A read
            # for the fork that execs it, asked before the exec, may find
            # the new image too: the outcome is checked, not which path.)
            rewritten = run_one(lambda g: g["builds"] >= 1)
            self.assertGreaterEqual(rewritten["builds"], 1, f"a new build-id, a new table: {rewritten}")
            self.assertGreaterEqual(rewritten["files_opened"], 1, rewritten)
        finally:
            self.stop(d, proc)

    def test_file_known_from_its_maps_line_until_rewritten(self):
        # The unwinder recognizes a file it has read before from its process's
        # maps line (device, inode) without opening it, while proc_files holds
        # it and the held file's status is unchanged: a file rewritten in place
        # (the same inode, a new build-id) is opened and gets its own table.
        d = self.daemon(SLOW_DRAINS + "continuous = false\n")
        copy = os.path.join(d.dir, "rewritten_workload")
        try:
            shutil.copy(SHORT_WORKLOAD, copy)

            def read_one():
                """Runs a process of copy, its maps read by a capture of its pid
                (read before the capture starts); returns the unwinder's counters'
                growth."""
                before = d.status()["unwind"]
                w = ShortWorkload(copy)
                try:
                    r = d.ctl("capture", "--pid", str(w.pid), "--seconds", "1", "-U")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    w.go()
                    w.truth()
                finally:
                    w.kill()
                after = d.status()["unwind"]
                return {k: after[k] - before[k] for k in ("files_opened", "files_known", "builds")}

            first = read_one()
            self.assertGreaterEqual(first["files_opened"], 1, first)
            self.assertGreaterEqual(first["builds"], 1, first)
            again = read_one()  # the first has exited; its files are held
            self.assertEqual(again["files_opened"], 0, again)
            self.assertGreaterEqual(again["files_known"], 2, again)  # the binary, libc, ld.so
            self.assertEqual(again["builds"], 0, again)

            build_id = subprocess.run(["readelf", "-n", copy], capture_output=True, text=True,
                                      check=True).stdout.split("Build ID: ")[1].split()[0]
            with open(copy, "r+b") as f:  # in place: the same inode
                data = f.read()
                at = data.index(bytes.fromhex(build_id))
                f.seek(at)
                f.write(bytes([data[at] ^ 0xff]))
            rewritten = read_one()
            self.assertGreaterEqual(rewritten["files_opened"], 1, rewritten)
            self.assertEqual(rewritten["builds"], 1, f"a new build-id, a new table: {rewritten}")
        finally:
            self.stop(d, None)

    def stacks_of_processes(self, d, n):
        """Captures n processes of short_workload, held at their start line
        until the capture runs (sleeping time, user stacks: their naps and
        the main thread's wait); checks every nap is whole and named and
        returns how many stacks the kernel's stack map held at the drain
        that ended the capture (the daemon drains at no other time)."""
        ws = [ShortWorkload() for _ in range(n)]
        proc = None
        try:
            proc = d.ctl_popen("--json", "capture", "--pid", ",".join(str(w.pid) for w in ws),
                               "--seconds", "3", "-U", "--state", "S")
            d.wait_captures(1)
            wait_read(d, [w.pid for w in ws])
            for w in ws:
                w.go()
            truth = {w.pid: w.truth() for w in ws}
            self.check_capture(proc, truth, f"{n} processes")
        finally:
            for w in ws:
                w.kill()
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
        return next(m["entries"] for m in d.status()["maps"] if m["name"] == "stacks")

    def test_processes_of_one_binary_share_stacks(self):
        # User frames are recorded by file and ELF address, not by each
        # process's (randomized) addresses: 8 processes' naps are the same
        # stacks as 1 process's, in the kernel's map as in the names.
        d = self.daemon("continuous = false\ndrain_interval_ms = 60000\n")
        try:
            one = self.stacks_of_processes(d, 1)
            eight = self.stacks_of_processes(d, 8)
            self.assertGreater(one, 0)
            self.assertLessEqual(eight, one + 2, f"1 process: {one} stacks; 8 processes: {eight}")
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_without_unwinder_frames_say_why(self):
        # unwind = fp: no unwinder reads the processes' mappings, nothing
        # keeps them; their frames that are not named say why, and status
        # counts them. Their stacks are a leaf in libc and, below it, what a
        # frame-pointer walk of code without frame pointers read as return
        # addresses: data, cut at [truncated], or addresses that no mapping
        # the daemon knows of holds. Whether the leaf is named depends on
        # whether their maps were read while they lived, which this test
        # does not control: each run showed all or none of them named.
        d = Daemon(SLOW_DRAINS + "unwind = fp\ncontinuous = false\n")
        proc = d.ctl_popen("--json", "capture", "--seconds", "8", "-U", "--state", "S")
        try:
            d.wait_captures(1)
            truth, _ = run_processes(d, read=False)  # no unwinder reads them
            out, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0, f"capture failed: {out} {err}")
            tids = {tid for threads in truth.values() for tid in threads}
            frames = [f for s in json.loads(out)["capture"]["samples"] if s["pid"] in tids
                      for f in s["ustack"]]
            self.assertTrue(frames)
            unnamed = {f for f in frames if f.startswith("[unknown")}
            self.assertLessEqual(unnamed, {"[unknown: exited]"}, frames)
            if unnamed:
                self.assertGreater(d.status()["unwind"]["unknown_exited"], 0)
        finally:
            self.stop(d, proc)


if __name__ == "__main__":
    unittest.main()
