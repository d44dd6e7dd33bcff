"""tracefs: where /sys/kernel/tracing is not mounted, offcpud mounts it (as
systemd does at boot), or status says exactly that it is not mounted. Each
test runs offcpud in a private mount namespace (unshare -m) where tracefs was
unmounted first, so the host's mounts are never touched."""
import os
import shutil
import subprocess
import unittest

from offcpu_env import Daemon

# Unmounts tracefs (both places libbpf looks) in the namespace, then runs the rest;
# debugfs too where the host has it, whose tracing/ would mount tracefs again
# when looked at (an automount).
UNMOUNTED = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             "umount -l /sys/kernel/debug/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; "
             "umount -l /sys/kernel/tracing 2>/dev/null; "
             "if [ -e /sys/kernel/tracing/events ]; then echo 'tracefs still mounted' >&2; exit 99; fi; "
             "exec \"$@\"", "sh"]
# Root without CAP_SYS_ADMIN, as under offcpud.service: mount(2) fails with EPERM.
NO_SYS_ADMIN = ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin"]


def host_tracefs_mounts():
    with open("/proc/self/mountinfo") as f:
        return sorted(line.split()[4] for line in f if " - tracefs " in line)


def kinds(d):
    return {k["name"]: k for k in d.status()["kinds"]}


@unittest.skipUnless(shutil.which("unshare") and shutil.which("setpriv"), "needs unshare and setpriv (util-linux)")
class TracefsTest(unittest.TestCase):
    def setUp(self):
        self.host_mounts = host_tracefs_mounts()

    def tearDown(self):
        self.assertEqual(host_tracefs_mounts(), self.host_mounts, "the host's mounts are untouched")

    def test_mounts_tracefs_where_missing(self):
        d = Daemon("continuous = false\n", wrapper=UNMOUNTED)
        try:
            k = kinds(d)["fileio"]
            self.assertEqual(k["state"], "ready", k)
            self.assertIn("syscall tracepoints", k["detail"])
            self.assertIn("mounted tracefs on /sys/kernel/tracing", d.log_text())
            # mounted in the daemon's namespace, not here
            with open(f"/proc/{d.proc.pid}/mountinfo") as f:
                self.assertTrue(any(" /sys/kernel/tracing " in line and " - tracefs " in line for line in f))
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_status_says_not_mounted_when_it_cannot_mount(self):
        d = Daemon("continuous = false\n", wrapper=UNMOUNTED + NO_SYS_ADMIN)
        try:
            why = "tracefs is not mounted at /sys/kernel/tracing (mounting it failed: Operation not permitted)"
            k = kinds(d)["fileio"]
            self.assertEqual(k["state"], "unavailable", k)
            self.assertEqual(k["detail"], why)
            r = d.ctl("status")
            self.assertRegex(r.stdout, r"\n  fileio +unavailable +" + why.replace("(", r"\(").replace(")", r"\)"))
            r = d.ctl("capture", "--kind", "fileio", "--seconds", "1")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(why, r.stderr)
            self.assertIn(why, d.log_text())
            # the other kinds do not depend on tracefs
            self.assertEqual(kinds(d)["offcpu"]["state"], "ready")
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())


if __name__ == "__main__":
    unittest.main()
