"""Programs loaded when used: offcpud loads and attaches only its scheduler
core at start; the on-CPU, request, bio and fileio programs load when a
capture first needs them, as a second instance of the BPF object that shares
every map of the core (slots, masks, buffers), and stay loaded.

Checked against the kernel's own account: the BPF programs and maps the
daemon's fds hold (/proc/PID/fdinfo, bpftool). The first capture of bio and
fileio is checked against io_workload's ground truth here; the first on-CPU
and --request captures are those of test_oncpu and test_requests, each on a
fresh daemon.
"""
import json
import os
import shutil
import subprocess
import time
import unittest

from offcpu_env import BUILD, Daemon, fd_ids, parse_folded
import test_io  # its workload and helpers; not "from": that would run its tests here too

GROUPS = ("oncpu", "requests", "bio", "fileio")
PREFIXES = {"oncpu": "oncpu_", "requests": "request_", "bio": "bio_", "fileio": "fileio_"}


def programs_held(pid):
    """[(name, map ids)] of the BPF programs pid holds. The kernel keeps 15
    characters of a name (bpftool may show more): compare prefixes."""
    progs = []
    for i in fd_ids(pid, "prog_id"):
        r = subprocess.run(["bpftool", "--json", "prog", "show", "id", str(i)], capture_output=True, text=True)
        if r.returncode == 0:
            p = json.loads(r.stdout)
            progs.append((p["name"], set(p.get("map_ids", []))))
    return progs


def groups(d):
    return {g["name"]: g for g in d.status()["program_groups"]}


def capture_json(d, *args):
    r = d.ctl("--json", "capture", *args)
    return r, json.loads(r.stdout)


@unittest.skipUnless(shutil.which("bpftool"), "bpftool is not installed (scripts/setup.sh installs it)")
class StartTest(unittest.TestCase):
    def test_serves_with_the_core_only(self):
        started = time.monotonic()
        d = Daemon()  # the default: continuous offcpu profile, nothing optional
        try:
            st = d.status()
            serving_s = time.monotonic() - started
            state = {g["name"]: g["state"] for g in st["program_groups"]}
            self.assertEqual(state, dict.fromkeys(GROUPS, "on_demand"), st["program_groups"])
            progs = {p["name"]: p for p in st["programs"]}
            self.assertTrue(progs["sched_switch_btf"]["loaded"])
            # The kernel's run-time stats cost every BPF program two clock
            # reads per run: off unless bpf_stats asks.
            self.assertFalse(st["bpf_stats"])
            # Attached with the continuous slot (status's program list may
            # lag it by a drain).
            deadline = time.monotonic() + 5
            while not progs["sched_switch_btf"]["attached"] and time.monotonic() < deadline:
                time.sleep(0.2)
                progs = {p["name"]: p for p in d.status()["programs"]}
            self.assertTrue(progs["sched_switch_btf"]["attached"])
            for name, p in progs.items():
                optional = any(name.startswith(prefix) for prefix in PREFIXES.values())
                self.assertEqual(p["loaded"], not optional, p)
            # The kernel agrees: the daemon holds no program of an optional group.
            held = [name for name, _ in programs_held(d.proc.pid)]
            self.assertIn("sched_switch_bt", {n[:15] for n in held})
            self.assertEqual([n for n in held if any(n.startswith(p) for p in PREFIXES.values())], [], held)
            self.assertIn("load when a capture first needs them", d.log_text())
            print(f"start to serving: {serving_s:.2f} s (bench/start_time.py measures it)")
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())


@unittest.skipUnless(shutil.which("bpftool"), "bpftool is not installed (scripts/setup.sh installs it)")
class IdleTest(unittest.TestCase):
    """The scheduler's programs run at every context switch: a daemon with
    no slot in use keeps them loaded but not attached, so it costs a switch
    nothing (bench/overhead.py's "attached" mode)."""

    def sched_programs(self, d):
        return {p["name"]: p for p in d.status()["programs"] if p["name"].startswith("sched_")}

    def wait_attached(self, d, want):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            progs = self.sched_programs(d)
            if all(progs[n]["attached"] == want for n in ("sched_switch_btf", "sched_waking_btf")):
                return progs
            time.sleep(0.2)
        self.fail(f"sched programs attached != {want}: {progs}")

    def test_attached_only_while_a_slot_is_used(self):
        d = Daemon("continuous = false\nbpf_stats = true\n")  # run_cnt counts
        try:
            idle = self.wait_attached(d, False)
            time.sleep(0.5)  # switches happen all the time; none may run them
            still = self.wait_attached(d, False)
            for name in ("sched_switch_btf", "sched_waking_btf"):
                self.assertEqual(still[name]["run_cnt"], idle[name]["run_cnt"], name)
            r = d.ctl("capture", "--seconds", "1")
            self.assertEqual(r.returncode, 0, r.stderr)
            after = self.wait_attached(d, False)  # detached again when it ended
            self.assertGreater(after["sched_switch_btf"]["run_cnt"],
                               idle["sched_switch_btf"]["run_cnt"])
        finally:
            self.assertEqual(d.stop(), 0)


class FirstUseTest(unittest.TestCase):
    """Each group loads on its first capture, once, sharing the core's maps."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("continuous = false\ndrain_interval_ms = 250\n")
        cls.core_maps = fd_ids(cls.daemon.proc.pid, "map_id")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def check_loaded_once(self, group, *args):
        """The first capture with args loads group and says so; the next does not."""
        d = self.daemon
        self.assertEqual(groups(d)[group]["state"], "on_demand")
        r, first = capture_json(d, "--seconds", "1", *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(first["capture"]["loaded"], group, first["capture"].keys())
        g = groups(d)[group]
        self.assertEqual(g["state"], "loaded", g)
        self.assertGreater(g["load_ms"], 0)
        self.assertEqual(first["capture"]["load_ms"], g["load_ms"])
        r, second = capture_json(d, "--seconds", "1", *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("loaded", second["capture"])
        self.assertIn(f"loaded the {group} programs in", d.log_text())
        # Its programs are loaded, listed as such, and use only the core's maps
        # (no map of their own: .bss, .rodata and the buffers are shared).
        progs = {p["name"]: p for p in d.status()["programs"] if p["name"].startswith(PREFIXES[group])}
        self.assertTrue(progs and all(p["loaded"] for p in progs.values()), progs)
        mine = [(n, m) for n, m in programs_held(d.proc.pid) if n.startswith(PREFIXES[group])]
        self.assertEqual(len(mine), len(progs), (mine, progs))
        for name, maps in mine:
            self.assertTrue(maps, name)
            self.assertLessEqual(maps, self.core_maps, f"{name} uses maps the core did not create")
        self.assertEqual(fd_ids(d.proc.pid, "map_id"), self.core_maps, "no map was created for the group")

    def test_oncpu(self):
        self.check_loaded_once("oncpu", "--kind", "oncpu")
        # hotcold needs the same group: nothing more to load.
        r, hot = capture_json(self.daemon, "--seconds", "1", "--kind", "hotcold")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertNotIn("loaded", hot["capture"])

    def test_requests(self):
        self.check_loaded_once("requests", "--request",
                               "handle_request@" + os.path.join(BUILD, "tests", "request_workload"))

    @unittest.skipUnless(test_io.on_block_device(BUILD), "the build directory is not on a disk file system")
    def test_bio_first_capture_against_ground_truth(self):
        d = self.daemon
        if not d.status()["bio_tracepoints"]:
            self.skipTest("no block tracepoints on this kernel")
        if groups(d)["bio"]["state"] != "on_demand":
            self.skipTest("bio was loaded by another test of this class")
        (count,), truth = test_io.captures(d, test_io.IoWorkload(), ["--kind", "bio", "--metric", "count",
                                                                     "--user-only"])
        self.assertEqual(groups(d)["bio"]["state"], "loaded")
        n = sum(v for _, v in test_io.rows_with(parse_folded(count), "direct_read_thread"))
        self.assertLessEqual(abs(n - truth["iow-direct"]["calls"]), 3, count)

    def test_fileio_first_capture_against_ground_truth(self):
        d = self.daemon
        if groups(d)["fileio"]["state"] != "on_demand":
            self.skipTest("fileio was loaded by another test of this class")
        # While the fileio programs load (seconds), the daemon keeps serving.
        cap = d.ctl_popen("capture", "--kind", "fileio", "--metric", "count", "--seconds", "60",
                          "-o", os.devnull)
        slowest, answered_while_loading = 0.0, 0
        while cap.poll() is None and groups(d)["fileio"]["state"] == "on_demand":
            t = time.monotonic()
            st = d.status()
            slowest = max(slowest, time.monotonic() - t)
            answered_while_loading += st["captures_running"] == 0
        cap.send_signal(2)
        _, err = cap.communicate(timeout=60)
        self.assertEqual(cap.returncode, 0, err)
        self.assertIn("offcpuctl: note: loaded the fileio programs in", err)
        load_s = groups(d)["fileio"]["load_ms"] / 1000
        if load_s > 1.0:
            self.assertGreater(answered_while_loading, 0)
            self.assertLess(slowest, load_s / 2, f"status took {slowest:.2f} s during a {load_s:.2f} s load")
        # Attached only while a fileio capture runs, as before (status samples
        # the programs at each drain).
        deadline = time.monotonic() + 10
        while any(p["attached"] for p in d.status()["programs"] if p["name"].startswith("fileio_")):
            self.assertLess(time.monotonic(), deadline, "fileio programs still attached")
            time.sleep(0.1)
        w = test_io.IoWorkload()
        (count,), truth = test_io.captures(d, w, ["--kind", "fileio", "--metric", "count"])
        got = sum(v for _, v in test_io.rows_with(parse_folded(count), "write_and_sync"))
        want = 2 * test_io.SYNCS
        self.assertLessEqual(got, want, count)
        self.assertGreaterEqual(got, want - 2, count)


class LoadInterruptedTest(unittest.TestCase):
    """A client that goes, or a daemon that stops, while a capture waits for
    its programs (fileio's take seconds to verify)."""

    def test_client_gone_while_loading(self):
        d = Daemon("continuous = false\n")
        try:
            cap = d.ctl_popen("capture", "--kind", "fileio", "--seconds", "5", "-o", os.devnull)
            time.sleep(0.3)
            loading = groups(d)["fileio"]["state"] == "on_demand"
            cap.kill()
            cap.communicate()
            deadline = time.monotonic() + 60
            while groups(d)["fileio"]["state"] == "on_demand":
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.1)
            # The load went on for later captures; the capture itself was dropped.
            self.assertEqual(groups(d)["fileio"]["state"], "loaded")
            time.sleep(0.5)
            st = d.status()
            self.assertEqual((st["captures_running"], st["slots_active"]), (0, 0), st)
            if not loading:
                self.skipTest("the fileio programs loaded before the client went")
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_stop_while_loading(self):
        d = Daemon("continuous = false\n")
        cap = d.ctl_popen("--json", "capture", "--kind", "fileio", "--seconds", "5")
        time.sleep(0.3)
        loading = groups(d)["fileio"]["state"] == "on_demand"
        self.assertEqual(d.stop(), 0, d.log_text())
        out, _ = cap.communicate(timeout=30)
        if not loading:
            self.skipTest("the fileio programs loaded before the stop")
        reply = json.loads(out)
        self.assertFalse(reply["ok"], reply)
        self.assertEqual(reply["error"]["message"], "offcpud is shutting down")


class LoadFailureTest(unittest.TestCase):
    """A group whose programs cannot attach: fileio with tracefs hidden (an
    empty tmpfs over /sys/kernel/tracing in the daemon's own mount
    namespace), so the syscall tracepoints have no id to attach by. The
    capture gets a clear 'unsupported', the error is kept, the daemon and the
    other kinds go on."""

    def setUp(self):
        if not shutil.which("unshare"):
            self.skipTest("unshare (util-linux) is not installed")
        if not os.path.isdir("/sys/kernel/tracing/events/syscalls"):
            self.skipTest("no syscall tracepoints here to hide")

    def test_fileio_attach_failure(self):
        # Over events/, not tracefs itself: offcpud mounts tracefs where a
        # tmpfs hides it (test_tracefs), but this one is still tracefs.
        hide = ("mount -t tmpfs none /sys/kernel/tracing/events && "
                "{ ! mountpoint -q /sys/kernel/debug || mount -t tmpfs none /sys/kernel/debug; } && "
                'exec "$0" "$@"')
        d = Daemon("continuous = false\n", wrapper=["unshare", "--mount", "--propagation", "private",
                                                    "sh", "-c", hide])
        try:
            r, reply = capture_json(d, "--seconds", "1", "--kind", "fileio")
            self.assertEqual(r.returncode, 1, r.stdout)
            err = reply["error"]
            self.assertEqual(err["code"], "unsupported", err)
            self.assertTrue(err["message"].startswith("kind fileio unavailable: the syscall tracepoints did "
                                                      "not attach"), err)
            g = groups(d)["fileio"]
            self.assertEqual(g["state"], "unavailable")
            self.assertIn("did not attach", g["reason"])
            self.assertEqual(d.status()["fileio_tracepoints"], "")
            self.assertRegex(d.ctl("status").stdout,
                             r"\n  fileio +unavailable +the syscall tracepoints did not attach")
            # Kept: the next capture is refused at once, without a new try.
            t = time.monotonic()
            r, again = capture_json(d, "--seconds", "1", "--kind", "fileio")
            self.assertEqual(again["error"], err)
            self.assertLess(time.monotonic() - t, 5)
            self.assertEqual(d.log_text().count("kind fileio unavailable"), 1, d.log_text())
            # The rest works: an off-CPU capture, and the text client's message.
            r = d.ctl("capture", "--seconds", "1", "-o", os.devnull)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = d.ctl("capture", "--seconds", "1", "--kind", "fileio")
            self.assertEqual(r.returncode, 1)
            self.assertIn("kind fileio unavailable", r.stderr)
            self.assertEqual(d.status()["captures_running"], 0)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())


if __name__ == "__main__":
    unittest.main()
