"""Integration tests of what ships around the daemon: the systemd units, the
cron example and the man pages.

PID 1 is not necessarily systemd where the tests run, so the units are
checked with `systemd-analyze verify` on copies configured as CMake would,
with their paths pointing into the build; what the units ask of the daemon
is then exercised on the real daemon by hand: socket activation with
systemd-socket-activate, the sd_notify protocol on a socket of our own
(READY, STATUS, WATCHDOG, STOPPING), and the unit's capability bounding set
applied with setpriv to a daemon that must still symbolize another user's
process.
"""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import unittest

from offcpu_env import BUILD, OFFCPUCTL, OFFCPUD, WORKLOAD

SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SYSTEMD_DIR = os.path.join(SOURCE, "systemd")
MAN_DIR = os.path.join(SOURCE, "man")
NOBODY = 65534


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        return re.search(r"project\(\S+\s+VERSION\s+(\S+)", f.read()).group(1)


# What CMake's configure_file(@ONLY) fills in; binaries are the build's.
SUBSTITUTIONS = {
    "CMAKE_INSTALL_FULL_SBINDIR": os.path.abspath(os.path.join(BUILD, "daemon")),
    "CMAKE_INSTALL_FULL_BINDIR": os.path.abspath(os.path.join(BUILD, "ctl")),
    "CMAKE_INSTALL_FULL_SYSCONFDIR": "/usr/local/etc",
    "PROJECT_VERSION": project_version(),
}


def configure(src, dst):
    """configure_file(src dst @ONLY): every @VAR@ must be known."""
    with open(src) as f:
        text = f.read()

    def sub(m):
        if m.group(1) not in SUBSTITUTIONS:
            raise AssertionError(f"{src}: unknown @{m.group(1)}@")
        return SUBSTITUTIONS[m.group(1)]

    with open(dst, "w") as f:
        f.write(re.sub(r"@([A-Za-z_]+)@", sub, text))


def configure_tree(dest):
    """Configured units in dest/units, man pages in dest/man/man8."""
    units, man8 = os.path.join(dest, "units"), os.path.join(dest, "man", "man8")
    os.makedirs(units)
    os.makedirs(man8)
    for d, out in ((SYSTEMD_DIR, units), (MAN_DIR, man8)):
        for name in sorted(os.listdir(d)):
            configure(os.path.join(d, name), os.path.join(out, name.removesuffix(".in")))
    return units, man8


def unit_settings(path):
    """[(section, key, value)] of a unit file, continuation lines joined
    (systemd replaces a line-ending backslash with a space)."""
    out, section, pending = [], None, ""
    with open(path) as f:
        for line in f.read().splitlines():
            if pending:
                line, pending = pending + line, ""
            elif line.lstrip().startswith(("#", ";")):
                continue
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            line = line.strip()
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1]
            elif "=" in line:
                key, _, value = line.partition("=")
                out.append((section, key.strip(), value.strip()))
    return out


def unit_value(path, key):
    values = [v for _, k, v in unit_settings(path) if k == key]
    assert len(values) == 1, f"{path}: {key} set {len(values)} times"
    return values[0]


def exec_argv(path, key="ExecStart"):
    """The argv systemd runs for a command line: %% is a specifier escape,
    quotes group words, $$ is a literal $ (the units use no variables)."""
    words = shlex.split(unit_value(path, key).replace("%%", "%"))
    return [w.replace("$$", "$") for w in words]


def conf_defaults():
    """{key: value} of the settings in the shipped etc/offcpud.conf."""
    out = {}
    with open(os.path.join(SOURCE, "etc", "offcpud.conf")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                key, _, value = line.partition("=")
                out[key.strip()] = value.strip().strip('"')
    return out


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


class UnitFilesTest(unittest.TestCase):
    """The files themselves, without running the daemon."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="offcpu-units-")
        cls.units, cls.man8 = configure_tree(cls.dir)
        cls.service = os.path.join(cls.units, "offcpud.service")
        cls.socket = os.path.join(cls.units, "offcpud.socket")
        cls.export = os.path.join(cls.units, "offcpu-export.service")
        cls.timer = os.path.join(cls.units, "offcpu-export.timer")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def verify(self, *units):
        if not shutil.which("systemd-analyze"):
            self.skipTest("no systemd-analyze")
        # MANPATH: the Documentation= man pages are looked up for real.
        env = dict(os.environ, MANPATH=os.path.dirname(self.man8), SYSTEMD_LOG_COLOR="0")
        return run(["systemd-analyze", "verify", *units], env=env)

    def test_verify(self):
        units = sorted(os.path.join(self.units, n) for n in os.listdir(self.units))
        self.assertEqual(len(units), 4, units)
        r = self.verify(*units)
        # Warnings (unknown keys, bad values, missing man pages) leave the
        # exit status 0: any output at all fails the test.
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def test_verify_is_not_vacuous(self):
        broken = os.path.join(self.dir, "broken")
        os.makedirs(broken, exist_ok=True)
        shutil.copy(self.socket, broken)
        with open(self.service) as f:
            text = f.read().replace("PrivateTmp=yes", "PrivateTmpp=yes")
        with open(os.path.join(broken, "offcpud.service"), "w") as f:
            f.write(text)
        r = self.verify(os.path.join(broken, "offcpud.service"))
        self.assertIn("Unknown key 'PrivateTmpp'", r.stderr)

    def test_paths_agree(self):
        conf = conf_defaults()
        socket_path = unit_value(self.socket, "ListenStream")
        self.assertEqual(socket_path, conf["socket_path"])
        help_text = run([OFFCPUCTL, "help", "--all"]).stdout
        self.assertIn(socket_path, help_text, "offcpuctl's default socket")
        self.assertEqual(unit_value(self.socket, "SocketMode"), conf["socket_mode"])
        # RuntimeDirectory= and StateDirectory= are relative to /run and /var/lib.
        self.assertEqual(os.path.dirname(socket_path), "/run/" + unit_value(self.service, "RuntimeDirectory"))
        self.assertEqual(os.path.dirname(conf["database"]), "/var/lib/" + unit_value(self.service, "StateDirectory"))
        export_dir = "/var/lib/" + unit_value(self.export, "StateDirectory")
        self.assertTrue(export_dir.startswith(os.path.dirname(conf["database"]) + "/"), export_dir)
        self.assertEqual(exec_argv(self.service), [os.path.join(SUBSTITUTIONS["CMAKE_INSTALL_FULL_SBINDIR"],
                                                                "offcpud")])

    def test_service_contract(self):
        """What offcpud implements and the unit relies on."""
        s = dict((k, v) for _, k, v in unit_settings(self.service))
        self.assertEqual(s["Type"], "notify")
        self.assertEqual(s["NotifyAccess"], "main")
        self.assertEqual(s["WatchdogSec"], "30s")
        self.assertEqual(s["Requires"], "offcpud.socket")
        # The socket outlives the service in the runtime directory.
        self.assertEqual(s["RuntimeDirectoryPreserve"], "yes")
        # These would hide /proc/kallsyms or drop CAP_SYSLOG.
        for key in ("ProtectKernelTunables", "ProtectKernelLogs", "ProtectProc", "ProcSubset", "PrivateUsers"):
            self.assertNotIn(key, s)

    def test_export_script(self):
        argv = exec_argv(self.export)
        self.assertEqual(argv[:2], ["/bin/sh", "-euc"], argv)
        self.assertEqual(len(argv), 3, argv)
        offcpuctl = os.path.join(SUBSTITUTIONS["CMAKE_INSTALL_FULL_BINDIR"], "offcpuctl")
        self.assertIn(offcpuctl + " export ", argv[2])
        r = run(["sh", "-n", "-c", argv[2]])
        self.assertEqual(r.returncode, 0, r.stderr)
        dumped = systemd_test_dump(self.units, "offcpu-export.service")
        if dumped is None:
            return
        # systemd's own reading of the line (variables are expanded at exec
        # time, so its dump still shows $$).
        self.assertEqual([w.replace("$$", "$") for w in dumped], argv)

    def test_timer(self):
        if not shutil.which("systemd-analyze"):
            self.skipTest("no systemd-analyze")
        spec = unit_value(self.timer, "OnCalendar")
        r = run(["systemd-analyze", "calendar", "--iterations=3", spec])
        self.assertEqual(r.returncode, 0, r.stderr)
        times = re.findall(r"(\d\d):(\d\d):(\d\d)", r.stdout)
        self.assertEqual(len(times), 3, r.stdout)
        for hh, mm, ss in times:
            self.assertEqual((int(mm) % 5, ss), (0, "30"), r.stdout)

    def test_cron_lines(self):
        with open(os.path.join(SOURCE, "etc", "offcpu-export.cron")) as f:
            lines = [line for line in f.read().splitlines() if line and not line.startswith("#")]
        jobs = [line for line in lines if not re.match(r"^[A-Z_]+=", line)]
        self.assertEqual(len(jobs), 1, jobs)
        fields = jobs[0].split(None, 6)
        self.assertEqual(fields[:6], ["*/5", "*", "*", "*", "*", "root"])
        # An unescaped % ends the command in a crontab line.
        self.assertNotRegex(fields[6], r"(?<!\\)%")
        r = run(["sh", "-n", "-c", cron_command(fields[6])])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_man_pages(self):
        for name in ("offcpud.8", "offcpuctl.8"):
            page = os.path.join(self.man8, name)
            if shutil.which("groff"):
                r = run(["groff", "-man", "-Tutf8", "-ww", "-z", page])
                self.assertEqual(r.stdout + r.stderr, "", f"{name}: groff warnings")
            if shutil.which("man"):
                r = run(["man", "-l", page], env=dict(os.environ, MANWIDTH="80", MANPAGER="cat"))
                self.assertEqual(r.returncode, 0, r.stderr)
                text = re.sub(r".\x08", "", r.stdout)  # overstrike bold and underline
                self.assertIn("\nNAME\n", text)
                self.assertIn(name.split(".")[0] + " - ", text)

    def test_man_page_lists_every_key(self):
        with open(os.path.join(self.man8, "offcpud.8")) as f:
            page = f.read()
        for key, value in conf_defaults().items():
            self.assertRegex(page, r"\.BI " + re.escape(key) + r' " = ', f"key {key} missing")
            self.assertIn(value.replace("-", "\\-") if value else "empty", page, f"default of {key}")

    def test_man_page_lists_every_option(self):
        with open(os.path.join(self.man8, "offcpuctl.8")) as f:
            page = f.read().replace("\\-", "-")
        help_text = run([OFFCPUCTL, "help", "--all"]).stdout
        for option in sorted(set(re.findall(r"--[a-z][a-z-]+", help_text))):
            self.assertIn(option, page)
        commands = help_text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
        for command in re.findall(r"^  ([a-z]+)\s", commands, re.M):
            self.assertRegex(page, r"\.SS " + command + r"\b")


def cron_command(command):
    """A crontab command as cron hands it to the shell: \\% is a literal %."""
    return command.replace("\\%", "%")


def unquote_dump(line):
    """Words of a "Command Line:" of `systemd --test`: double quotes group,
    a backslash escapes one character, \\t and \\n are C escapes."""
    words, word, quoted, started, i = [], [], False, False, 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            word.append({"t": "\t", "n": "\n"}.get(line[i + 1], line[i + 1]))
            started, i = True, i + 2
            continue
        if c == '"':
            quoted, started = not quoted, True
        elif c == " " and not quoted:
            if started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(c)
            started = True
        i += 1
    if started:
        words.append("".join(word))
    return words


def systemd_test_dump(unit_dir, unit):
    """argv of the unit's ExecStart as systemd itself parses it, from
    `systemd --test` (which refuses to run as root, so as nobody), or None
    where that cannot run."""
    binary = "/lib/systemd/systemd"
    if not os.path.exists(binary) or not shutil.which("setpriv"):
        return None
    os.chmod(os.path.dirname(unit_dir), 0o755)
    os.chmod(unit_dir, 0o755)
    # The trailing ':' appends the default search path (sysinit.target etc.).
    env = {"SYSTEMD_UNIT_PATH": unit_dir + ":", "HOME": "/", "PATH": "/usr/bin:/bin"}
    r = run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", binary, "--test", "--system",
             f"--unit={unit}", "--log-target=console", "--log-level=err"], env=env)
    dump = r.stdout.split(f"-> Unit {unit}:", 1)
    if r.returncode != 0 or len(dump) != 2:
        return None
    m = re.search(r"-> ExecStart:\n\s*Command Line: (.*)\n", dump[1])
    return unquote_dump(m.group(1)) if m else None


class NotifySocket:
    """An sd_notify receiver: NOTIFY_SOCKET, with the sender's credentials."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(path)
        self.messages = []  # (monotonic time, sender pid, {field: value})

    def receive(self, timeout):
        """Adds one message to self.messages; False if none came in time."""
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            return False
        pid = None
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", cdata[:12])[0]
        fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
        self.messages.append((time.monotonic(), pid, fields))
        return True

    def having(self, field, value):
        return [m for m in self.messages if m[2].get(field) == value]

    def wait(self, field, value, count=1, timeout=20):
        """Receives until count messages set field to value; returns them."""
        deadline = time.monotonic() + timeout
        while len(self.having(field, value)) < count:
            if not self.receive(deadline - time.monotonic()):
                raise AssertionError(f"fewer than {count} {field}={value} in {timeout} s: {self.messages}")
        return self.having(field, value)

    def close(self):
        self.sock.close()


def write_config(directory, **extra):
    """A config on a socket and database in directory (as the Daemon fixture
    of offcpu_env does)."""
    path = os.path.join(directory, "offcpud.conf")
    settings = {"socket_path": os.path.join(directory, "offcpud.sock"), "socket_mode": "0600",
                "database": os.path.join(directory, "offcpud.db"), **extra}
    with open(path, "w") as f:
        f.writelines(f"{k} = {v}\n" for k, v in settings.items())
    return path


def stop(proc, timeout=20):
    """SIGTERM; returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def read_log(f):
    f.flush()
    with open(f.name) as r:
        return r.read()


class SocketActivationTest(unittest.TestCase):
    """offcpud as offcpud.socket and offcpud.service run it: on a socket it
    is handed, talking sd_notify, with a watchdog."""

    WATCHDOG_USEC = 2000000

    def setUp(self):
        if not shutil.which("systemd-socket-activate"):
            self.skipTest("no systemd-socket-activate")
        self.dir = tempfile.mkdtemp(prefix="offcpud-activate-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.socket = os.path.join(self.dir, "activated.sock")
        # socket_path differs from the activation socket: it must go unused.
        self.config = write_config(self.dir)
        self.config_socket = os.path.join(self.dir, "offcpud.sock")
        self.notify = NotifySocket(os.path.join(self.dir, "notify"))
        self.addCleanup(self.notify.close)
        self.log = open(os.path.join(self.dir, "offcpud.log"), "w")
        self.addCleanup(self.log.close)
        self.proc = subprocess.Popen(
            ["systemd-socket-activate", "-l", self.socket, "-E", f"NOTIFY_SOCKET={self.notify.path}",
             "-E", f"WATCHDOG_USEC={self.WATCHDOG_USEC}", OFFCPUD, "--config", self.config],
            stdout=self.log, stderr=self.log)
        self.addCleanup(stop, self.proc)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.fail(f"systemd-socket-activate did not listen: {read_log(self.log)}")
            time.sleep(0.02)

    def test_activation(self):
        # Nothing runs until the first client, which is answered by the
        # daemon started for it, in the same process (LISTEN_PID).
        with open(f"/proc/{self.proc.pid}/comm") as f:
            self.assertTrue(f.read().startswith("systemd-socket"))
        r = run([OFFCPUCTL, "--socket", self.socket, "--json", "status"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + read_log(self.log))
        self.assertEqual(json.loads(r.stdout)["status"]["pid"], self.proc.pid)
        self.assertFalse(os.path.exists(self.config_socket), "socket_path must go unused")
        self.assertIn("listening on the socket passed by systemd", read_log(self.log))

        # sd_notify, all from the main process (NotifyAccess=main).
        ready = self.notify.wait("READY", "1")[0]
        self.assertEqual(ready[1], self.proc.pid)
        self.assertIn("STATUS", ready[2])

        # Watchdog pings every WATCHDOG_USEC / 2, from the event loop: well
        # within the timeout, and not a flood.
        timeout_s = self.WATCHDOG_USEC / 1e6
        pings = self.notify.wait("WATCHDOG", "1", count=4, timeout=3 * timeout_s)
        self.assertEqual({pid for _, pid, _ in pings}, {self.proc.pid})
        gaps = [b[0] - a[0] for a, b in zip(pings, pings[1:])]
        for gap in gaps:
            self.assertTrue(0.25 * timeout_s < gap < 0.75 * timeout_s, gaps)

        # SIGTERM: STOPPING=1, exit 0, and the socket, which systemd owns,
        # left in place for the next activation.
        self.assertEqual(stop(self.proc), 0, read_log(self.log))
        self.notify.wait("STOPPING", "1", timeout=1)
        self.assertTrue(os.path.exists(self.socket), "offcpud removed the socket systemd passed it")

    def test_no_watchdog_without_watchdog_usec(self):
        """Without WATCHDOG_USEC (WatchdogSec= unset) there are no pings."""
        stop(self.proc)
        os.unlink(self.socket)
        self.proc = subprocess.Popen(
            ["systemd-socket-activate", "-l", self.socket, "-E", f"NOTIFY_SOCKET={self.notify.path}", OFFCPUD,
             "--config", self.config], stdout=self.log, stderr=self.log)
        self.addCleanup(stop, self.proc)
        while not os.path.exists(self.socket):
            time.sleep(0.02)
        r = run([OFFCPUCTL, "--socket", self.socket, "status"])
        self.assertEqual(r.returncode, 0, r.stderr + read_log(self.log))
        self.notify.wait("READY", "1")
        deadline = time.monotonic() + 2.5
        while self.notify.receive(deadline - time.monotonic()):
            pass
        self.assertEqual(self.notify.having("WATCHDOG", "1"), [])


def has_export():
    return "export" in run([OFFCPUCTL, "help"]).stdout


class ServiceCapabilitiesTest(unittest.TestCase):
    """offcpud limited to offcpud.service's CapabilityBoundingSet (applied
    with setpriv) must still record and name the stacks of another user's
    process that it could not read without them: non-dumpable (its binary is
    execute-only), in a directory only that user may enter, its binary
    deleted once it started. The export job's commands run against it."""

    @classmethod
    def setUpClass(cls):
        if not shutil.which("setpriv"):
            raise unittest.SkipTest("no setpriv")
        cls.dir = tempfile.mkdtemp(prefix="offcpud-caps-")
        os.chmod(cls.dir, 0o711)  # nobody passes through to its own directory
        units, _ = configure_tree(os.path.join(cls.dir, "configured"))
        cls.units = units
        caps = unit_value(os.path.join(units, "offcpud.service"), "CapabilityBoundingSet").split()
        cls.caps = caps
        state = os.path.join(cls.dir, "state")
        os.mkdir(state, 0o700)
        cls.config = write_config(state)
        cls.socket = os.path.join(state, "offcpud.sock")
        cls.log = open(os.path.join(cls.dir, "offcpud.log"), "w")
        bounding = "-all," + ",".join("+" + c.removeprefix("CAP_").lower() for c in caps)
        cls.proc = subprocess.Popen(["setpriv", f"--bounding-set={bounding}", "--inh-caps=-all", OFFCPUD,
                                     "--config", cls.config], stdout=cls.log, stderr=cls.log)
        deadline = time.monotonic() + 20
        while not os.path.exists(cls.socket):
            if cls.proc.poll() is not None or time.monotonic() > deadline:
                log = read_log(cls.log)
                cls.tearDownClass()
                raise RuntimeError(f"offcpud did not start with {caps}: {log}")
            time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        stop(cls.proc)
        cls.log.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def ctl(self, *args, **kw):
        return run([OFFCPUCTL, "--socket", self.socket, *args], **kw)

    def test_capabilities_applied(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            status = dict(line.split(":\t", 1) for line in f.read().splitlines())
        eff, bnd = int(status["CapEff"], 16), int(status["CapBnd"], 16)
        self.assertEqual(eff, bnd)
        self.assertEqual(bin(eff).count("1"), len(self.caps), self.caps)

    def test_unwinder_priority(self):
        """CAP_SYS_NICE: the thread that reads new processes' tables runs
        at nice -10, and status says so."""
        self.assertIn("CAP_SYS_NICE", self.caps)
        self.assertEqual(self.status()["unwind"]["unwinder_nice"], -10)

    def test_other_users_process(self):
        private = os.path.join(self.dir, "nobody")
        os.mkdir(private, 0o700)
        os.chown(private, NOBODY, NOBODY)
        binary = os.path.join(private, "offcpu_workload")
        shutil.copy(WORKLOAD, binary)
        os.chown(binary, NOBODY, NOBODY)
        os.chmod(binary, 0o100)
        w = subprocess.Popen([binary, "--wait-go", "--only", "sleeper"], user=NOBODY, group=NOBODY, extra_groups=[],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
        try:
            line = w.stdout.readline().split()
            self.assertEqual(line[:1], ["ready"], line)
            pid = int(line[1])
            os.unlink(binary)
            # Unreadable binary: the kernel made the process non-dumpable,
            # so its /proc files are root's and need CAP_SYS_PTRACE.
            self.assertEqual(os.stat(f"/proc/{pid}/maps").st_uid, 0)
            before = self.status()["captures_running"]
            cap = subprocess.Popen([OFFCPUCTL, "--socket", self.socket, "--json", "capture", "--pid", str(pid),
                                    "--seconds", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 10
            while self.status()["captures_running"] <= before and time.monotonic() < deadline:
                time.sleep(0.02)
            w.stdin.write("go\n")
            w.stdin.flush()
            w.communicate(timeout=60)
            out, err = cap.communicate(timeout=60)
        finally:
            if w.poll() is None:
                w.kill()
                w.wait()
        self.assertEqual(cap.returncode, 0, out + err + read_log(self.log))
        samples = [s for s in json.loads(out)["capture"]["samples"] if s["comm"] == "ow-sleeper"]
        self.assertTrue(samples, out)
        # User frames from the deleted, unreadable binary (map_files, with
        # CAP_CHECKPOINT_RESTORE, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH);
        # kernel frames from /proc/kallsyms (CAP_SYSLOG).
        self.assertTrue(any("sleeper_thread" in s["ustack"] for s in samples), samples)
        self.assertTrue(any("do_nanosleep" in s["kstack"] for s in samples), samples)

    def status(self):
        r = self.ctl("--json", "status")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return json.loads(r.stdout)["status"]

    def export_env(self, exports, socket_path=None):
        return dict(os.environ, STATE_DIRECTORY=exports, OFFCPUD_SOCKET=socket_path or self.socket)

    def prepare_exports(self, name):
        exports = os.path.join(self.dir, name)
        os.mkdir(exports, 0o700)
        eight_days_ago = time.time() - 8 * 86400
        for old in ("offcpu-20000101-0000.folded", "offcpu-20000101-0005.folded.tmp", "notes.txt"):
            path = os.path.join(exports, old)
            open(path, "w").close()
            os.utime(path, (eight_days_ago, eight_days_ago))
        open(os.path.join(exports, "offcpu-20000101-0010.folded"), "w").close()  # recent: kept
        return exports

    def check_exports(self, exports, t0, t1):
        names = set(os.listdir(exports))
        slots = {time.strftime("offcpu-%Y%m%d-%H%M.folded", time.gmtime(t // 300 * 300 - 300)) for t in (t0, t1)}
        self.assertEqual(len(names & slots), 1, names)
        self.assertEqual(names - slots, {"offcpu-20000101-0010.folded", "notes.txt"})
        with open(os.path.join(exports, (names & slots).pop())) as f:
            for line in f:
                self.assertRegex(line, r"^\S.* \d+$")

    def test_export_service_command(self):
        if not has_export():
            self.skipTest("offcpuctl has no export command yet")
        argv = exec_argv(os.path.join(self.units, "offcpu-export.service"))
        exports = self.prepare_exports("exports-service")
        t0 = time.time()
        r = run(argv, env=self.export_env(exports))
        t1 = time.time()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_exports(exports, t0, t1)

        # A failed export leaves no file and fails the unit with offcpuctl's status.
        before = set(os.listdir(exports))
        r = run(argv, env=self.export_env(exports, os.path.join(self.dir, "none.sock")))
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(set(os.listdir(exports)), before)

    def test_export_cron_command(self):
        if not has_export():
            self.skipTest("offcpuctl has no export command yet")
        with open(os.path.join(SOURCE, "etc", "offcpu-export.cron")) as f:
            job = [line for line in f.read().splitlines() if line.startswith("*/5 ")][0]
        command = cron_command(job.split(None, 6)[6])
        exports = self.prepare_exports("exports-cron")
        self.assertIn("sleep 30; ", command)
        self.assertIn("d=/var/lib/offcpud/exports;", command)
        command = command.replace("sleep 30; ", "").replace("d=/var/lib/offcpud/exports;", f"d={exports};")
        env = self.export_env(exports)
        env["PATH"] = os.path.dirname(OFFCPUCTL) + ":" + env["PATH"]
        t0 = time.time()
        r = run(["/bin/sh", "-c", command], env=env)
        t1 = time.time()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_exports(exports, t0, t1)


if __name__ == "__main__":
    unittest.main()
