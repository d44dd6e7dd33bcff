"""A private MariaDB server and a sysbench load for the real-application
integration tests.

The server gets its own datadir, Unix socket and error log in a temporary
directory, no TCP port (--skip-networking) and no option files
(--no-defaults), so it neither touches nor depends on the system instance
that Debian's mariadb-server package sets up. Needs root (--user=root).
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

MARIADBD = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
INSTALL_DB = shutil.which("mariadb-install-db")
MARIADB = shutil.which("mariadb")
MARIADB_ADMIN = shutil.which("mariadb-admin")
SYSBENCH = shutil.which("sysbench")


def missing_tools():
    """The reason to skip, if a program these tests run is not installed."""
    tools = {"mariadbd": MARIADBD if os.access(MARIADBD, os.X_OK) else None, "mariadb-install-db": INSTALL_DB,
             "mariadb": MARIADB, "mariadb-admin": MARIADB_ADMIN, "sysbench": SYSBENCH}
    missing = [name for name, path in tools.items() if not path]
    if missing:
        return (f"skipped: {', '.join(missing)} not installed "
                "(scripts/setup-tests.sh installs mariadb-server mariadb-client sysbench)")
    return None


class MariaDB:
    """mariadbd on a fresh datadir in a temporary directory; stop() always
    leaves no server behind and removes the directory."""

    def __init__(self, start_timeout=60):
        self.dir = tempfile.mkdtemp(prefix="offcpu-mariadb-")
        self.datadir = os.path.join(self.dir, "data")
        self.socket = os.path.join(self.dir, "mariadb.sock")
        self.err_log = os.path.join(self.datadir, "err.log")
        self.proc = None
        r = subprocess.run([INSTALL_DB, "--no-defaults", f"--datadir={self.datadir}", "--user=root",
                            "--auth-root-authentication-method=normal", "--skip-test-db"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            self.stop()
            raise RuntimeError(f"mariadb-install-db failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        # mariadbd stays in the foreground (it does not fork), so self.proc is the server.
        self.proc = subprocess.Popen([MARIADBD, "--no-defaults", f"--datadir={self.datadir}",
                                      f"--socket={self.socket}", f"--pid-file={os.path.join(self.dir, 'mariadbd.pid')}",
                                      "--skip-networking", "--user=root", "--performance-schema=ON",
                                      "--innodb-buffer-pool-size=64M", f"--log-error={self.err_log}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = self.proc.pid
        deadline = time.monotonic() + start_timeout
        while True:
            if self.proc.poll() is not None:
                log = self.log_text()
                self.stop()
                raise RuntimeError(f"mariadbd exited with {self.proc.returncode}:\n{log}")
            if os.path.exists(self.socket) and self.sql("SELECT 1", check=False).returncode == 0:
                break
            if time.monotonic() > deadline:
                log = self.log_text()
                self.stop()
                raise RuntimeError(f"mariadbd did not accept connections in {start_timeout} s:\n{log}")
            time.sleep(0.1)

    def log_text(self):
        try:
            with open(self.err_log) as f:
                return f.read()
        except OSError as e:
            return f"(no error log: {e})"

    def sql(self, query, check=True, timeout=30):
        """Runs query in a new client connection (batch mode, no column
        names); returns the CompletedProcess, raising on failure if check."""
        r = subprocess.run([MARIADB, "--no-defaults", f"--socket={self.socket}", "-uroot", "-N", "-B", "-e", query],
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"mariadb -e {query!r} failed ({r.returncode}): {r.stderr}")
        return r

    def threads(self):
        """The server's threads known to performance_schema:
        list of (os_tid, type, name, is_this_connection)."""
        out = self.sql("SELECT THREAD_OS_ID, TYPE, NAME, IFNULL(PROCESSLIST_ID = CONNECTION_ID(), 0) "
                       "FROM performance_schema.threads WHERE THREAD_OS_ID IS NOT NULL").stdout
        rows = []
        for line in out.splitlines():
            tid, kind, name, own = line.split("\t")
            rows.append((int(tid), kind, name, own == "1"))
        return rows

    def stop(self):
        """Shuts the server down (mariadb-admin, then SIGTERM, then SIGKILL)
        and removes the temporary directory. Safe to call more than once."""
        if self.proc is not None and self.proc.poll() is None:
            subprocess.run([MARIADB_ADMIN, "--no-defaults", f"--socket={self.socket}", "-uroot", "shutdown"],
                           capture_output=True, timeout=60)
            for sig, wait_s in ((None, 30), (signal.SIGTERM, 30), (signal.SIGKILL, 10)):
                if sig is not None and self.proc.poll() is None:
                    self.proc.send_signal(sig)
                try:
                    self.proc.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        shutil.rmtree(self.dir, ignore_errors=True)


class Sysbench:
    """sysbench oltp_read_only against a MariaDB's socket."""

    def __init__(self, db, tables=2, table_size=10000):
        self.db = db
        self.common = ["oltp_read_only", "--db-driver=mysql", f"--mysql-socket={db.socket}", "--mysql-user=root",
                       "--mysql-db=sbtest", f"--tables={tables}", f"--table-size={table_size}"]
        self.proc = None
        self.out_path = os.path.join(db.dir, "sysbench-run.log")

    def prepare(self):
        self.db.sql("CREATE DATABASE IF NOT EXISTS sbtest")
        r = subprocess.run([SYSBENCH, *self.common, "prepare"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"sysbench prepare failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")

    def start(self, threads, seconds):
        """Starts `run` in the background; output goes to out_path."""
        self.threads = threads
        with open(self.out_path, "w") as out:
            self.proc = subprocess.Popen([SYSBENCH, *self.common, f"--threads={threads}", f"--time={seconds}",
                                          "--report-interval=0", "run"], stdout=out, stderr=subprocess.STDOUT)

    def output(self):
        try:
            with open(self.out_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """Ends `run` if it is still going (SIGTERM, then SIGKILL)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
