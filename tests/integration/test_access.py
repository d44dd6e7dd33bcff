"""Access control: the daemon checks each client's socket credentials
against offcpud.conf (allowed_*, capture_*) and refuses what the policy
does not allow, naming the rule (docs/SECURITY.md).

The socket is made world-connectable here (socket_mode 0666) so that the
daemon's own check, not the file mode, is what refuses; clients run as the
unprivileged user "nobody".
"""
import grp
import json
import os
import stat
import subprocess
import time
import unittest

from offcpu_env import EXIT_PERMISSION, OFFCPUCTL, Daemon

USER, GROUP = "nobody", "nogroup"


def as_user(d, *args, timeout=60):
    return subprocess.run([OFFCPUCTL, "--socket", d.socket, *args], capture_output=True, text=True,
                          user=USER, group=GROUP, extra_groups=[], timeout=timeout)


def open_daemon(extra):
    d = Daemon("socket_mode = 0666\n" + extra)
    os.chmod(d.dir, 0o755)  # let nobody reach the socket
    return d


class AccessTest(unittest.TestCase):
    def setUp(self):
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
            p.wait()

    def spawn(self, user=None):
        """A process that blocks in sleep, owned by user (default root)."""
        p = subprocess.Popen(["sleep", "60"], user=user, group=GROUP if user else None,
                             extra_groups=[] if user else None)
        self.procs.append(p)
        return p.pid

    def test_stranger_is_refused_at_connect(self):
        d = open_daemon("allowed_users =\nallowed_groups =\n")
        try:
            r = as_user(d, "status")
            self.assertEqual(r.returncode, EXIT_PERMISSION, r.stderr)
            self.assertIn("not root and not in allowed_users", r.stderr)
            r = as_user(d, "--json", "status")
            self.assertEqual(json.loads(r.stdout)["error"]["code"], "permission_denied")
            self.assertEqual(d.ctl("status").returncode, 0, "root is always let in")
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_allowed_user_captures_own_processes_only(self):
        d = open_daemon(f"allowed_users = {USER}\n")
        try:
            self.assertEqual(as_user(d, "status").returncode, 0)
            self.assertEqual(as_user(d, "windows").returncode, 0)

            own = self.spawn(user=USER)
            r = as_user(d, "--json", "capture", "--pid", str(own), "--seconds", "1")
            self.assertEqual(r.returncode, 0, r.stderr)

            root_pid = self.spawn()
            r = as_user(d, "capture", "--pid", str(root_pid), "--seconds", "1")
            self.assertEqual(r.returncode, EXIT_PERMISSION, r.stderr)
            self.assertIn(f"capturing {root_pid}, owned by uid 0", r.stderr)
            self.assertIn("capture_users or capture_groups", r.stderr)

            r = as_user(d, "capture", "--seconds", "1")
            self.assertEqual(r.returncode, EXIT_PERMISSION, r.stderr)
            self.assertIn("capturing every process", r.stderr)

            # Request probes in another user's process are a capture of it.
            r = as_user(d, "capture", "--pid", str(root_pid), "--seconds", "1", "--request", "main")
            self.assertEqual(r.returncode, EXIT_PERMISSION, r.stderr)
            self.assertEqual(d.status()["captures_running"], 0)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_capture_user_captures_anything(self):
        d = open_daemon(f"capture_users = {USER}\n")
        try:
            root_pid = self.spawn()
            r = as_user(d, "--json", "capture", "--pid", str(root_pid), "--seconds", "1")
            self.assertEqual(r.returncode, 0, r.stderr)
            r = as_user(d, "--json", "capture", "--seconds", "1")
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_group_membership(self):
        # nobody's primary group is nogroup on Debian: allowing the group lets it in.
        d = open_daemon(f"allowed_groups = {GROUP}\n")
        try:
            r = as_user(d, "status")
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    @unittest.skipUnless(any(g.gr_name == "offcpu" for g in grp.getgrall()),
                         "no group offcpu (scripts/setup.sh creates it)")
    def test_socket_file_defaults(self):
        # The shipped defaults (socket_mode 0660, socket_group offcpu), not
        # the fixture's 0600: root's file, the group's to use.
        d = Daemon("socket_mode = 0660\nsocket_group = offcpu\n")
        try:
            st = os.stat(d.socket)
            self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)),
                             (0, grp.getgrnam("offcpu").gr_gid, 0o660))
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_missing_group_fails_closed(self):
        d = open_daemon("socket_group = no-such-group-xyz\nallowed_groups = no-such-group-xyz\n")
        try:
            self.assertEqual(d.ctl("status").returncode, 0)
            self.assertEqual(as_user(d, "status").returncode, EXIT_PERMISSION)
            log = d.log_text()
            self.assertIn("socket_group 'no-such-group-xyz' does not exist", log)
            self.assertIn("allowed_groups: no group 'no-such-group-xyz'", log)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())


if __name__ == "__main__":
    unittest.main()
