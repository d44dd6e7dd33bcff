"""One daemon per database: a second offcpud on the same database (another
socket) fails at once, naming the database and the first one's pid, and the
first one goes on as if nothing happened."""
import os
import signal
import subprocess
import time
import unittest

from offcpu_env import OFFCPUD, Daemon

FAST = "window_seconds = 1\ndrain_interval_ms = 200\n"
# sampled_walk = auto logs each move between task works and rseq_update (an
# idle host moves it at once); pinned, any line the first daemon logs while the
# second is refused is the second one's doing.
QUIET = FAST + "sampled_walk = task-work\n"


def second_daemon(d, socket_name="second.sock"):
    """offcpud on d's database with its own socket; returns (CompletedProcess, socket path, seconds)."""
    sock = os.path.join(d.dir, socket_name)
    config = os.path.join(d.dir, "second.conf")
    with open(config, "w") as f:
        f.write(f"socket_path = {sock}\nsocket_mode = 0600\ndatabase = {d.database}\n{FAST}")
    t0 = time.monotonic()
    r = subprocess.run([OFFCPUD, "--config", config], capture_output=True, text=True, timeout=60)
    return r, sock, time.monotonic() - t0


class StateLockTest(unittest.TestCase):
    def test_second_daemon_on_the_same_database_is_refused(self):
        d = Daemon(QUIET)
        try:
            time.sleep(2.5)  # a window or two stored
            before = d.status()
            log_before = d.log_text()
            r, sock, seconds = second_daemon(d)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(d.database, r.stderr)
            self.assertIn(f"pid {d.proc.pid}", r.stderr)
            self.assertLess(seconds, 5, "refused before loading anything")
            self.assertFalse(os.path.exists(sock), "the second daemon never listened")
            with open(d.database + ".lock") as f:
                self.assertEqual(f.read().strip(), str(d.proc.pid))
            # The first one never notices: it answers, keeps storing windows, logs nothing.
            time.sleep(2.5)
            after = d.status()
            self.assertEqual(after["pid"], before["pid"])
            self.assertGreater(after["store"]["windows_written"], before["store"]["windows_written"])
            self.assertEqual(after["store"]["windows_failed"], 0)
            self.assertEqual(after["store"]["last_error"], "")
            self.assertEqual(d.log_text(), log_before)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())
        # Stopped, or killed: the lock goes with the process.
        d.start()
        try:
            self.assertTrue(d.status()["store"]["windows"] > 0, "the same database, reopened")
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            d.start()
            self.assertEqual(d.status()["pid"], d.proc.pid)
        finally:
            self.assertEqual(d.stop(), 0, d.log_text())

    def test_another_database_runs_beside(self):
        a, b = Daemon(FAST), None
        try:
            b = Daemon(FAST)
            self.assertNotEqual(a.status()["pid"], b.status()["pid"])
        finally:
            self.assertEqual(a.stop(), 0, a.log_text())
            if b:
                self.assertEqual(b.stop(), 0, b.log_text())


if __name__ == "__main__":
    unittest.main()
