"""Off-CPU stacks of the common runtimes, one test each, against the ground
truth of a tiny program per runtime (runtimes/): once told to go, it blocks
its OS thread for about 1 s in a function named blockHere (block_here in
Rust), measures that itself, and stays alive until its stdin closes. Each
test checks that the function is named in the user stack with its time
within TOLERANCE, above the native frame that blocks, under the thread's
start (or the runtime's own root), nothing [truncated]:

- Rust, release build without frame pointers: walked by .eh_frame, both as
  rustc links by default (rust-lld since 1.90) and with GNU ld;
- Go: frame pointers; the thread blocked in a system call, as time.Sleep
  would park only the goroutine;
- Node: JavaScript named by --perf-basic-prof's /tmp/perf-PID.map, which
  names interpreted functions only with --interpreted-frames-native-stack
  (without it, the contrast: the interpreter's trampoline);
- Java 17 and 25: -XX:+PreserveFramePointer, the method JIT-compiled and
  named by the perf map jcmd writes; the contrasts: no perf map
  ([unknown: anonymous]), interpreted (Interpreter).

C and C++ without frame pointers: test_unwind.py.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from offcpu_env import Daemon, HeldProgram, capture_held
from test_daemon import TOLERANCE

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "runtimes")
JAVA_HOMES = {"17": "/usr/lib/jvm/java-17-openjdk-amd64", "25": "/usr/lib/jvm/temurin-25-jdk-amd64"}
SECONDS = 3
# glibc's first frame of a thread it created (clone3 since 2.34).
THREAD_ROOTS = ("__clone3", "__clone", "clone3", "clone")
THREAD_ROOT = "|".join(THREAD_ROOTS)


def tool(name, *fallbacks):
    """The path of a tool on PATH or at one of fallbacks, or None."""
    found = shutil.which(name)
    if found:
        return found
    return next((f for f in fallbacks if os.access(f, os.X_OK)), None)


class Program(HeldProgram):
    """A runtime's ground-truth program (a HeldProgram whose done line is
    "done NANOSECONDS", what it measured); stop() also removes its perf map."""

    @property
    def perf_map(self):
        return f"/tmp/perf-{self.pid}.map"

    def stop(self):
        super().stop()
        if os.path.exists(self.perf_map):
            os.unlink(self.perf_map)


def capture(daemon, program):
    """A user-stack capture of the program's process, started before its
    block; returns (samples, the block's nanoseconds as it measured them)."""
    reply, done = capture_held(daemon, program, "-U", seconds=SECONDS)
    assert len(done) == 1, f"{program.proc.args}: done {done}"
    return reply["samples"], int(done[0])


def shown(samples, pid):
    """pid's stacks of more than 0.1 s, for a failure's message."""
    return "\n".join(f"{s['value_ns']} ns: " + " ; ".join(s["ustack"])
                     for s in samples if s["tgid"] == pid and s["value_ns"] > 100_000_000)


class RuntimesTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="offcpu-runtimes-")
        cls.daemon = Daemon("continuous = false\n")

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert code == 0, cls.daemon.log_text()

    def tearDown(self):
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())

    def run_program(self, argv, before=None):
        """Captures the program's block; returns (samples, truth_ns, pid).
        before(program) runs before the capture starts."""
        p = Program(argv, self.tmp)
        try:
            if before:
                before(p)
            samples, truth_ns = capture(self.daemon, p)
        finally:
            p.stop()
        return samples, truth_ns, p.pid

    def build(self, argv):
        r = subprocess.run(argv, capture_output=True, text=True, cwd=self.tmp, timeout=120)
        self.assertEqual(r.returncode, 0, f"{argv}: {r.stderr}")

    def assert_named(self, samples, pid, truth_ns, frame, below, root):
        """The stacks of pid with a frame the regex frame matches hold
        truth_ns within TOLERANCE; in the longest, a frame that starts with
        below is under it, and the regex root matches its first frame."""
        stacks = [s for s in samples if s["tgid"] == pid and any(re.fullmatch(frame, f) for f in s["ustack"])]
        got = sum(s["value_ns"] for s in stacks)
        self.assertAlmostEqual(got / truth_ns, 1.0, delta=TOLERANCE,
                               msg=f"{frame}: {got} ns, want {truth_ns}; the process's stacks:\n"
                                   f"{shown(samples, pid)}")
        longest = max(stacks, key=lambda s: s["value_ns"])["ustack"]
        at = next(i for i, f in enumerate(longest) if re.fullmatch(frame, f))
        self.assertTrue(any(f.startswith(below) for f in longest[at + 1:]),
                        f"no {below} under {frame}: {longest}")
        self.assertNotIn("[truncated]", longest)
        self.assertTrue(re.fullmatch(root, longest[0]), f"root {longest[0]!r}, want {root}: {longest}")

    def blocked_stack(self, samples, pid, truth_ns, leaf):
        """The longest of pid's stacks through a frame that starts with leaf
        (the native call that blocks), after checking that those stacks hold
        truth_ns within TOLERANCE."""
        stacks = [s for s in samples if s["tgid"] == pid and any(f.startswith(leaf) for f in s["ustack"])]
        got = sum(s["value_ns"] for s in stacks)
        self.assertAlmostEqual(got / truth_ns, 1.0, delta=TOLERANCE,
                               msg=f"{leaf}: {got} ns, want {truth_ns}:\n{shown(samples, pid)}")
        return max(stacks, key=lambda s: s["value_ns"])["ustack"]

    # ---- Rust ----

    def rust(self, *link_args):
        rustc = tool("rustc", os.path.expanduser("~/.cargo/bin/rustc"))
        if not rustc:
            self.skipTest("skipped: no rustc here")
        binary = os.path.join(self.tmp, "prog" + "".join(link_args).replace("=", "-"))
        self.build([rustc, "-O", "--crate-name", "prog", *link_args, "-o", binary,
                    os.path.join(SOURCES, "block_here.rs")])
        samples, truth_ns, pid = self.run_program([binary])
        # Legacy mangling, demangled as C++: the hash stays.
        self.assert_named(samples, pid, truth_ns, r"prog::block_here(::h[0-9a-f]{16})?",
                          "clock_nanosleep", "_start")

    def test_rust(self):
        """As rustc links by default: rust-lld since 1.90, whose executable
        segment's virtual address is not its file offset."""
        self.rust()

    def test_rust_gnu_ld(self):
        """The same program linked by GNU ld: segments at their file
        offsets."""
        self.rust("-Clink-arg=-fuse-ld=bfd")

    # ---- Go ----

    def test_go(self):
        go = tool("go", "/usr/local/go/bin/go")
        if not go:
            self.skipTest("skipped: no go here")
        binary = os.path.join(self.tmp, "prog_go")
        env = {**os.environ}
        if "HOME" not in env and "GOCACHE" not in env:
            env["GOCACHE"] = os.path.join(self.tmp, "gocache")
        r = subprocess.run([go, "build", "-o", binary, os.path.join(SOURCES, "block_here.go")],
                           capture_output=True, text=True, cwd=self.tmp, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        samples, truth_ns, pid = self.run_program([binary])
        # Go's own system call, no libc; goexit is every goroutine's root.
        self.assert_named(samples, pid, truth_ns, r"main\.blockHere", "syscall.Nanosleep",
                          r"runtime\.goexit(\.abi0)?")

    # ---- Node ----

    def node(self, *flags):
        node = tool("node")
        if not node:
            self.skipTest("skipped: no node here")
        return self.run_program([node, "--perf-basic-prof", *flags, os.path.join(SOURCES, "block_here.js")])

    def test_node(self):
        samples, truth_ns, pid = self.node("--interpreted-frames-native-stack")
        # "JS:~blockHere /path/block_here.js:12:19": ~ interpreted, * optimized.
        self.assert_named(samples, pid, truth_ns,
                          r"(JS|LazyCompile):[~*^]?blockHere .*/block_here\.js:\d+:\d+",
                          "v8::internal::Builtin_AtomicsWait", "_start")

    def test_node_interpreted_without_own_frames(self):
        """Without --interpreted-frames-native-stack every interpreted
        function runs in the same trampoline: the perf map cannot tell them
        apart."""
        samples, truth_ns, pid = self.node()
        stack = self.blocked_stack(samples, pid, truth_ns, "v8::internal::Builtin_AtomicsWait")
        self.assertFalse(any("blockHere" in f for f in samples_frames(samples, pid)), stack)
        self.assertIn("Builtins_InterpreterEntryTrampoline", stack)
        self.assertEqual(stack[0], "_start", stack)

    # ---- Java ----

    def java(self, version, *flags, perf_map=True):
        """Runs BlockHere on the JDK of version, with jcmd's perf map written
        before the capture if perf_map; returns (samples, truth_ns, pid, the
        perf map's names of blockHere)."""
        bin_dir = os.path.join(JAVA_HOMES[version], "bin")
        if not os.access(os.path.join(bin_dir, "java"), os.X_OK):
            self.skipTest(f"skipped: no Java {version} here ({JAVA_HOMES[version]})")
        classes = os.path.join(self.tmp, f"classes-{version}")
        if not os.path.isdir(classes):
            self.build([os.path.join(bin_dir, "javac"), "-d", classes, os.path.join(SOURCES, "BlockHere.java")])
        named = []

        def write_perf_map(p):
            r = subprocess.run([os.path.join(bin_dir, "jcmd"), str(p.pid), "Compiler.perfmap"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(p.perf_map) as f:  # "START SIZE name"
                named.extend(line.split(" ", 2)[2].strip() for line in f if "blockHere" in line)

        argv = [os.path.join(bin_dir, "java"), "-XX:+PreserveFramePointer", *flags, "-cp", classes, "BlockHere"]
        samples, truth_ns, pid = self.run_program(argv, before=write_perf_map if perf_map else None)
        return samples, truth_ns, pid, named

    def java_jit(self, version):
        # -Xbatch: the warm-up's calls wait for their compilation, so
        # blockHere is compiled before "ready".
        samples, truth_ns, pid, named = self.java(version, "-Xbatch")
        self.assertIn("long BlockHere.blockHere(long)", named)
        self.assert_named(samples, pid, truth_ns, r"long BlockHere\.blockHere\(long\)", "JVM_Sleep",
                          THREAD_ROOT)

    def test_java_17(self):
        self.java_jit("17")

    def test_java_25(self):
        self.java_jit("25")

    def test_java_without_perf_map(self):
        """JIT code without a perf map: anonymous memory, not named."""
        samples, truth_ns, pid, _ = self.java("17", "-Xbatch", perf_map=False)
        stack = self.blocked_stack(samples, pid, truth_ns, "JVM_Sleep")
        at = stack.index("JavaMain")
        self.assertIn("[unknown: anonymous]", stack[at:], stack)
        self.assertFalse(any("blockHere" in f for f in samples_frames(samples, pid)), stack)
        self.assertIn(stack[0], THREAD_ROOTS, stack)

    def test_java_interpreted(self):
        """Interpreted methods: the perf map names the interpreter's code,
        one "Interpreter" frame per Java frame."""
        samples, truth_ns, pid, named = self.java("17", "-Xint", "-DwarmCalls=0")
        self.assertEqual(named, [])
        stack = self.blocked_stack(samples, pid, truth_ns, "JVM_Sleep")
        at = next(i for i, f in enumerate(stack) if f.startswith("JVM_Sleep"))
        self.assertEqual(stack[at - 1], "Interpreter", stack)
        self.assertFalse(any("blockHere" in f for f in samples_frames(samples, pid)), stack)
        self.assertIn(stack[0], THREAD_ROOTS, stack)


def samples_frames(samples, pid):
    """Every frame of pid's stacks."""
    return [f for s in samples if s["tgid"] == pid for f in s["ustack"]]


if __name__ == "__main__":
    unittest.main()
