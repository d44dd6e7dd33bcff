"""Cgroups, systemd units and containers as who is blocked (issue 33).

Real cgroups made here in the host's cgroup v2 hierarchy (on hybrid hosts at
/sys/fs/cgroup/unified), named as systemd and Docker name theirs, with the
ground-truth workload moved into them; real namespaces made with unshare.

Ground truth: each cgroup's sleeper time within 5 % of what the workload
measured; a capture filtered to one cgroup has nothing from outside it.
"""
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest

from offcpu_env import BUILD, OFFCPUCTL, WORKLOAD, Daemon, Workload, parse_folded

TOLERANCE = 0.05
CONTAINER = "4d1f7a6c" + "0123456789abcdef" * 3 + "89abcdef"  # 64 hex digits, as Docker's
FIXTURE_V5 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "store-v5.db")


def v2_mount():
    """Where this host mounts the cgroup v2 hierarchy, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                return left.split()[4].replace("\\040", " ")
    return None


MOUNT = v2_mount()


class Cgroup:
    """A cgroup made for a test under the v2 mount: path is what offcpud
    writes ("/offcpu-test.slice/a.service"), dir where it is."""

    def __init__(self, path):
        self.path = path
        self.dir = MOUNT + path
        os.makedirs(self.dir)

    def add(self, pid):
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        """Moves what is left to the root, then removes it."""
        if not os.path.isdir(self.dir):
            return
        with open(os.path.join(self.dir, "cgroup.procs")) as f:
            pids = f.read().split()
        for pid in pids:
            try:
                with open(os.path.join(MOUNT, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass  # exited meanwhile
        os.rmdir(self.dir)


def cleanup(cgroups):
    for c in reversed(cgroups):
        c.remove()


def sleeper_ns(samples, tgid):
    """The time of tgid's sleeper thread in sleeper_thread stacks."""
    return sum(s["value_ns"] for s in samples
               if s["tgid"] == tgid and s["comm"] == "ow-sleeper" and "sleeper_thread" in s["ustack"])


@unittest.skipUnless(MOUNT, "no cgroup v2 hierarchy is mounted here")
class CgroupsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("window_seconds = 1\ndrain_interval_ms = 250\n")
        cls.slice = Cgroup(f"/offcpu-test-{os.getpid()}.slice")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        cls.slice.remove()
        assert code == 0, f"offcpud exited with {code}:\n{cls.daemon.log_text()}"

    def tearDown(self):
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())

    def ctl_ok(self, *args):
        r = self.daemon.ctl(*args)
        self.assertEqual(r.returncode, 0, f"offcpuctl {args}: {r.stdout} {r.stderr}")
        return r.stdout

    def test_status_says_which_hierarchy(self):
        st = self.daemon.status()["cgroups"]
        self.assertEqual(st["mount"], MOUNT)
        hybrid = any(line.split(" - ")[1].startswith("cgroup ") for line in open("/proc/self/mountinfo"))
        self.assertEqual(st["hierarchy"], "hybrid" if hybrid else "v2")
        self.assertGreater(st["known"], 0)
        self.assertEqual(st["reason"], "")
        out = self.ctl_ok("status")
        self.assertIn("cgroup", out)

    def test_two_cgroups_ground_truth_filters_and_grouping(self):
        """A known sleep in each of two cgroups, a third workload outside:
        each cgroup's time within 5 %, every filter keeps its own and
        nothing from outside, and grouping names the unit and container."""
        service = Cgroup(self.slice.path + "/offcpu-a.service")
        docker = Cgroup(self.slice.path + f"/docker-{CONTAINER}.scope")
        made = [service, docker]
        d = self.daemon
        ws = [Workload("--only", "sleeper") for _ in range(3)]
        try:
            service.add(ws[0].pid)
            docker.add(ws[1].pid)  # ws[2] stays where the test runs
            pids = ",".join(str(w.pid) for w in ws)
            argsets = [["--json"], ["--json", "--cgroup", service.path],
                       ["--json", "--unit", "offcpu-a"], ["--json", "--container", CONTAINER[:12]],
                       ["--group-by", "unit", "--pid", pids], ["--group-by", "container", "--pid", pids],
                       ["--group-by", "cgroup", "--pid", pids]]
            procs = [d.ctl_popen("capture", "--seconds", "3", *a) for a in argsets]
            d.wait_captures(len(procs))
            truths = [w.go() for w in ws]
            outs = []
            for p in procs:
                out, err = p.communicate(timeout=60)
                self.assertEqual(p.returncode, 0, f"capture failed: {out} {err}")
                outs.append(out)
        finally:
            for w in ws:
                w.kill()
            cleanup(made)
        everything, by_path, by_unit, by_container = [json.loads(o)["capture"]["samples"] for o in outs[:4]]
        want = [t["ow-sleeper"]["blocked_ns"] for t in truths]

        # Every row of the workloads carries its cgroup and what it names.
        for w, c in ((ws[0], service), (ws[1], docker)):
            rows = [s for s in everything if s["tgid"] == w.pid]
            self.assertTrue(rows)
            self.assertEqual({s["cgroup"] for s in rows}, {c.path})
        svc_rows = [s for s in everything if s["tgid"] == ws[0].pid]
        self.assertEqual({s["unit"] for s in svc_rows}, {"offcpu-a.service"})
        self.assertFalse(any("container" in s for s in svc_rows))
        dock_rows = [s for s in everything if s["tgid"] == ws[1].pid]
        self.assertEqual({s["container"] for s in dock_rows}, {CONTAINER})
        self.assertEqual({s["runtime"] for s in dock_rows}, {"docker"})

        # Ground truth per cgroup, unfiltered and filtered.
        for i in (0, 1):
            got = sleeper_ns(everything, ws[i].pid)
            self.assertAlmostEqual(got / want[i], 1.0, delta=TOLERANCE, msg=f"cgroup {i}: {got} of {want[i]} ns")
        for rows, i in ((by_path, 0), (by_unit, 0), (by_container, 1)):
            self.assertTrue(rows)
            self.assertEqual({s["tgid"] for s in rows}, {ws[i].pid}, "a filtered capture kept another cgroup")
            got = sleeper_ns(rows, ws[i].pid)
            self.assertAlmostEqual(got / want[i], 1.0, delta=TOLERANCE)
        # ... and nothing from outside: the third workload, in the test's cgroup, is in none.
        for rows in (by_path, by_unit, by_container):
            self.assertEqual(sleeper_ns(rows, ws[2].pid), 0)

        # Grouping: the identity is the root frame, the thread's name below it.
        def roots(folded):
            """Root frame -> the time of its sleeper threads in sleeper_thread."""
            tot = {}
            for frames, v in parse_folded(folded):
                sleeping = frames[1] == "ow-sleeper" and "sleeper_thread" in frames
                tot[frames[0]] = tot.get(frames[0], 0) + (v if sleeping else 0)
            return tot
        by_unit_roots, by_container_roots, by_cgroup_roots = roots(outs[4]), roots(outs[5]), roots(outs[6])
        self.assertIn("offcpu-a.service", by_unit_roots)
        self.assertIn(f"docker-{CONTAINER}.scope", by_unit_roots)
        self.assertIn(f"docker:{CONTAINER[:12]}", by_container_roots)
        self.assertIn("[no container]", by_container_roots)
        self.assertIn(service.path, by_cgroup_roots)
        self.assertAlmostEqual(by_unit_roots["offcpu-a.service"] * 1000 / want[0], 1.0, delta=TOLERANCE)
        self.assertAlmostEqual(by_container_roots[f"docker:{CONTAINER[:12]}"] * 1000 / want[1], 1.0,
                               delta=TOLERANCE)

        # The stored windows answer the same filters and grouping.
        out = self.ctl_ok("export", "--window", "last1m", "--json", "--unit", "offcpu-a.service")
        rows = json.loads(out)["export"]["samples"]
        self.assertEqual({s["tgid"] for s in rows}, {ws[0].pid})
        out = self.ctl_ok("export", "--window", "last1m", "--container", CONTAINER[:8], "--group-by", "container")
        self.assertEqual({f[0] for f, _ in parse_folded(out)}, {f"docker:{CONTAINER[:12]}"})

    def test_removed_cgroup_keeps_its_path(self):
        """A cgroup with an odd name, removed during the capture after its
        workload is done: its rows keep the path, in the reply and in the
        store, byte for byte."""
        odd = Cgroup(self.slice.path + "/odd name \u2603 \u00fcn\u00efcode " + "x" * 180 + ".scope")
        d = self.daemon
        w = Workload("--only", "sleeper")
        try:
            odd.add(w.pid)
            p = d.ctl_popen("capture", "--seconds", "4", "--json", "--pid", str(w.pid))
            d.wait_captures(1)
            truth = w.go()
            odd.remove()  # its process is gone: the cgroup goes before the capture ends
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
        finally:
            w.kill()
            odd.remove()
        cap = json.loads(out)["capture"]
        rows = [s for s in cap["samples"] if s["comm"] == "ow-sleeper"]
        self.assertTrue(rows)
        self.assertEqual({s["cgroup"] for s in rows}, {odd.path})
        got = sleeper_ns(cap["samples"], w.pid)
        self.assertAlmostEqual(got / truth["ow-sleeper"]["blocked_ns"], 1.0, delta=TOLERANCE)
        stored = json.loads(self.ctl_ok("export", "--capture", str(cap["id"]), "--json"))["export"]["samples"]
        self.assertEqual({s["cgroup"] for s in stored if s["comm"] == "ow-sleeper"}, {odd.path})
        folded = self.ctl_ok("export", "--capture", str(cap["id"]), "--group-by", "cgroup")
        self.assertIn(odd.path, {f[0] for f, _ in parse_folded(folded)})
        self.assertGreater(self.daemon.status()["cgroups"]["removed"], 0)

    def test_capture_follows_a_restarted_unit(self):
        """A unit restarted during a capture by --unit: a new cgroup at the
        same path, which the capture's kernel filter takes once a drain has
        seen it made; the new process's sleep is counted whole."""
        path = self.slice.path + "/offcpu-restart.service"
        first = Cgroup(path)
        d = self.daemon
        w = None
        p = d.ctl_popen("capture", "--seconds", "5", "--json", "--unit", "offcpu-restart")
        try:
            d.wait_captures(1)
            first.remove()  # the unit stops,
            again = Cgroup(path)  # and starts again: a new cgroup id
            w = Workload("--only", "sleeper")
            again.add(w.pid)
            time.sleep(1)  # a few drains (250 ms): the capture has seen it made
            truth = w.go()
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
        finally:
            if w:
                w.kill()
            if p.poll() is None:
                p.kill()
            first.remove()
        rows = json.loads(out)["capture"]["samples"]
        self.assertEqual({s["cgroup"] for s in rows}, {path})
        got = sleeper_ns(rows, w.pid)
        want = truth["ow-sleeper"]["blocked_ns"]
        self.assertAlmostEqual(got / want, 1.0, delta=TOLERANCE, msg=f"{got} of {want} ns")

    def test_path_under_the_mount_point(self):
        """--cgroup as the directory under the mount point: the same subtree
        for a capture and for an export of its window."""
        c = Cgroup(self.slice.path + "/offcpu-mounted.service")
        d = self.daemon
        w = Workload("--only", "sleeper")
        try:
            c.add(w.pid)
            p = d.ctl_popen("capture", "--seconds", "2", "--json", "--cgroup", c.dir)
            d.wait_captures(1)
            truth = w.go()
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
        finally:
            w.kill()
            c.remove()
        cap = json.loads(out)["capture"]
        self.assertEqual({s["tgid"] for s in cap["samples"]}, {w.pid})
        got = sleeper_ns(cap["samples"], w.pid)
        self.assertAlmostEqual(got / truth["ow-sleeper"]["blocked_ns"], 1.0, delta=TOLERANCE)
        out = self.ctl_ok("export", "--capture", str(cap["id"]), "--json", "--cgroup", c.dir)
        self.assertEqual(sleeper_ns(json.loads(out)["export"]["samples"], w.pid), got)

    def test_unknown_names_are_clear_errors(self):
        known = Cgroup(self.slice.path + "/offcpu-known.service")
        try:
            r = self.daemon.ctl("capture", "--seconds", "1", "--unit", "offcpu-knwon.service")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("offcpu-known.service", r.stderr)  # the closest unit that exists
            r = self.daemon.ctl("capture", "--seconds", "1", "--cgroup", self.slice.path + "/offcpu-knwon.service")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(known.path, r.stderr)
            r = self.daemon.ctl("capture", "--seconds", "1", "--container", "fedcba9876")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("container", r.stderr)
            r = self.daemon.ctl("capture", "--unit", "a.service", "--container", "ab")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("exclude each other", r.stderr)
            r = self.daemon.ctl("capture", "--container", "xyz")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("hex", r.stderr)
            # Malformed requests on the socket: a clear error, the daemon stays.
            for bad in ('{"v":1,"cmd":"capture","cgroup":"relative/path"}',
                        '{"v":1,"cmd":"export","from_ms":1,"cgroup":"/a//b"}',
                        '{"v":1,"cmd":"capture","group_by":"planet"}'):
                reply = self.daemon.raw((bad + "\n").encode())[0]
                self.assertFalse(reply["ok"], bad)
                self.assertEqual(reply["error"]["code"], "bad_request", reply)
        finally:
            known.remove()


@unittest.skipUnless(MOUNT, "no cgroup v2 hierarchy is mounted here")
class NoCgroupV2Test(unittest.TestCase):
    """A host without a cgroup v2 hierarchy (cgroup v1 only), as offcpud sees
    it in a mount namespace where the v2 mount is gone."""

    def test_v1_only(self):
        wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   f'umount "{MOUNT}" && exec "$0" "$@"']
        d = Daemon(wrapper=wrapper)
        try:
            st = d.status()["cgroups"]
            self.assertEqual(st["hierarchy"], "none")
            self.assertIn("cgroup v1", st["reason"])
            r = d.ctl("capture", "--seconds", "1", "--cgroup", "/")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("cgroup v1", r.stderr)
            out = d.ctl("capture", "--seconds", "1", "--json")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertFalse(any("cgroup" in s for s in json.loads(out.stdout)["capture"]["samples"]))
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())


class NamespacesTest(unittest.TestCase):
    """Processes in their own pid and mount namespaces, nested too, running a
    binary that exists only inside them: named from their own files, with
    the pid their namespace knows."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, f"offcpud exited with {code}:\n{cls.daemon.log_text()}"

    def run_inside(self, levels):
        """Starts the workload `levels` pid+mount namespaces deep, from a
        tmpfs mounted inside the innermost one; returns (popen, host pid)."""
        inner = ("mkdir -p /tmp/offcpu-ns-only && mount -t tmpfs none /tmp/offcpu-ns-only && "
                 f"cp {WORKLOAD} /tmp/offcpu-ns-only/ns_only_workload && "
                 "exec /tmp/offcpu-ns-only/ns_only_workload --wait-go --only sleeper")
        cmd = ["sh", "-c", inner]
        for _ in range(levels):
            cmd = ["unshare", "--pid", "--mount", "--fork", "--propagation", "private", *cmd]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline().split()
        self.assertEqual(line[0], "ready", line)
        ns_pid = int(line[1])
        host = None
        for status in glob.glob("/proc/[0-9]*/status"):
            try:
                with open(status) as f:
                    text = f.read()
                with open(status.replace("status", "cmdline"), "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            nspid = [l for l in text.splitlines() if l.startswith("NSpid:")]
            if b"ns_only_workload" in cmdline and nspid and int(nspid[0].split()[-1]) == ns_pid:
                host = int(nspid[0].split()[1])
        self.assertIsNotNone(host, "the namespaced workload was not found")
        self.assertFalse(os.path.exists("/tmp/offcpu-ns-only/ns_only_workload"),
                         "the binary must exist only inside the namespace")
        return p, host, ns_pid

    def check(self, levels):
        p, host, ns_pid = self.run_inside(levels)
        try:
            cap = self.daemon.ctl_popen("capture", "--seconds", "2", "--json", "--pid", str(host))
            self.daemon.wait_captures(1)
            p.stdin.write("go\n")
            p.stdin.flush()
            out, err = cap.communicate(timeout=60)
            self.assertEqual(cap.returncode, 0, err)
        finally:
            p.kill()
            p.wait()
        rows = [s for s in json.loads(out)["capture"]["samples"] if s["comm"] == "ow-sleeper"]
        self.assertTrue(rows)
        self.assertTrue(any("sleeper_thread" in s["ustack"] for s in rows),
                        f"not named from the namespace's file: {rows[0]['ustack']}")
        self.assertEqual({s.get("ns_pid") for s in rows}, {ns_pid})
        self.assertNotEqual(ns_pid, host)

    def test_own_namespace(self):
        self.check(1)

    def test_nested_namespaces(self):
        self.check(2)


class MigrationTest(unittest.TestCase):
    """A database the previous release wrote (schema version 5): offcpud
    opens it, keeps every window, and adds cgroups to new ones."""

    def test_previous_release_database(self):
        tmp = tempfile.mkdtemp(prefix="offcpud-migration-")
        db = os.path.join(tmp, "old.db")
        shutil.copy(FIXTURE_V5, db)
        with sqlite3.connect(FIXTURE_V5) as old:
            want_windows = old.execute("SELECT count(*) FROM windows").fetchone()[0]
            want_ns = old.execute("SELECT sum(sum_ns) FROM samples s JOIN windows w ON w.id = s.window_id "
                                  "WHERE w.capture_id = 0").fetchone()[0]
            first_ms = old.execute("SELECT min(start_ms) FROM windows").fetchone()[0]
            last_ms = old.execute("SELECT max(end_ms) FROM windows").fetchone()[0]
        d = Daemon(f"database = {db}\nwindow_seconds = 1\ndrain_interval_ms = 250\n")
        try:
            r = d.ctl("--json", "windows")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreaterEqual(len(json.loads(r.stdout)["windows"]), want_windows)
            r = d.ctl("export", "--from", str(first_ms / 1000), "--to", str((last_ms + 1000) / 1000),
                      "--json", "--kind", "offcpu")
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = json.loads(r.stdout)["export"]["samples"]
            self.assertTrue(rows)
            self.assertFalse(any("cgroup" in s for s in rows), "old rows have no cgroup")
            # offcpu exports include the run-queue part kept apart: the old total, whole.
            self.assertEqual(sum(s["value_ns"] for s in rows) // 1000, want_ns // 1000)
            cap = json.loads(d.ctl("capture", "--seconds", "1", "--json").stdout)["capture"]
            self.assertTrue(any(s.get("cgroup") for s in cap["samples"]))
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())
            shutil.rmtree(tmp)
        self.assertTrue(want_ns)


if __name__ == "__main__":
    unittest.main()
