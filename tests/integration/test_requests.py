"""Request-synchronous captures (--request): only off-CPU time inside a
request function counts, and each request is timed.

The request workloads (tests/workloads/request_workload.c) have two workers
that call a request function which blocks on a backend for a known time, and
sleep between requests; and two idle threads that block outside any request
for the whole run. With --request the idle and between-request time must
vanish, and the request time stay, within TOLERANCE of the workload's own
measurement.
"""
import json
import os
import time
import unittest

from offcpu_env import BUILD, EXIT_USAGE, Daemon, RequestWorkload, parse_folded
from test_windows import FAST, now_ms, wait_stored

TOLERANCE = 0.05
REQUESTS = ["--requests", "60", "--backend-ms", "10", "--between-ms", "3"]  # ~0.8 s


def workload_path(name):
    return os.path.join(BUILD, "tests", name)


def capture(d, w, *args, seconds=4, ungated=False):
    """A --request capture of w (and, if ungated, a plain one beside it, on
    the same run); returns (gated, plain or None, truth)."""
    gated = d.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", str(seconds), *args)
    plain = d.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", str(seconds)) if ungated else None
    try:
        d.wait_captures(2 if ungated else 1)
        truth = w.go()
        results = []
        for p in (gated, plain):
            if p is None:
                results.append(None)
                continue
            out, err = p.communicate(timeout=seconds + 30)
            assert p.returncode == 0, f"capture failed ({p.returncode}): {out} {err}"
            results.append(json.loads(out)["capture"])
    finally:
        w.kill()
        for p in (gated, plain):
            if p and p.poll() is None:
                p.kill()
    return results[0], results[1], truth


def by_thread(cap, tid):
    return sum(s["value_ns"] for s in cap["samples"] if s["pid"] == tid)


def frames(sample):
    return sample["ustack"] + sample["kstack"]


class RequestCaptureTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls):
        code = cls.daemon.stop()
        assert code == 0, cls.daemon.log_text()

    def tearDown(self):
        self.assertIsNone(self.daemon.proc.poll(), self.daemon.log_text())
        # A slot is released once its probes are removed, on a worker thread.
        deadline = time.monotonic() + 30
        while self.daemon.status()["slots_active"] > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.daemon.status()["slots_active"], 1, "request slots are released")

    def check_ground_truth(self, binary, request, function_name):
        w = RequestWorkload(binary, *REQUESTS)
        gated, plain, truth = capture(self.daemon, w, "--request", request, ungated=True)
        workers = [t for name, t in truth.items() if name.startswith("rq-worker")]
        idle = [t for name, t in truth.items() if name.startswith("rq-idle")]
        self.assertEqual(len(workers), 2, truth)
        self.assertEqual(len(idle), 2, truth)

        # The idle threads block for the whole run: the plain capture sees them...
        for t in idle:
            self.assertGreater(by_thread(plain, t["tid"]), 0.5e9, f"plain capture misses {t['name']}")
        # ...the request capture does not, nor the workers' sleeps between requests.
        tids = {s["pid"] for s in gated["samples"]}
        self.assertTrue(tids <= {t["tid"] for t in workers}, f"threads outside requests: {tids}")
        for s in gated["samples"]:
            self.assertNotIn("between_requests", frames(s), s)
        # Each worker's request time is there, whole.
        for t in workers:
            got = by_thread(gated, t["tid"])
            want = t["in_request_blocked_ns"]
            self.assertAlmostEqual(got, want, delta=want * TOLERANCE,
                                   msg=f"{t['name']}: {got} ns in requests, truth {want}")
            self.assertLess(got, by_thread(plain, t["tid"]) - t["outside_blocked_ns"] * 0.5)

        # Request latency: every request, its wall time and its off-CPU part.
        self.assertEqual(len(gated["requests"]), 1, gated["requests"])
        r = gated["requests"][0]
        self.assertEqual(r["symbol"], request)
        self.assertIn(function_name, [f["name"] for f in r["functions"]], r["functions"])
        self.assertEqual(r["count"], sum(t["requests"] for t in workers))
        # Each one entered while counted, and none went unseen: no warning.
        self.assertEqual(r["calls"], r["count"])
        self.assertNotIn("warning", r)
        self.assertEqual(sum(r["wall_hist"]), r["count"])
        self.assertEqual(sum(r["offcpu_hist"]), r["count"])
        wall = sum(t["request_wall_ns"] for t in workers)
        blocked = sum(t["in_request_blocked_ns"] for t in workers)
        self.assertAlmostEqual(r["wall_ns"], wall, delta=wall * TOLERANCE)
        self.assertAlmostEqual(r["offcpu_ns"], blocked, delta=blocked * TOLERANCE)
        self.assertLessEqual(r["offcpu_ns"], r["wall_ns"])
        # 10 ms backend waits: wall times in [8192, 16384) us.
        self.assertGreaterEqual(r["wall_hist"][13], r["count"] * 0.9, r["wall_hist"])
        return gated

    def test_c_executable(self):
        gated = self.check_ground_truth("request_workload", "handle_request", "handle_request")
        # The request function is on the stacks kept (frame pointers: the walk
        # sees it directly above libc's read).
        for s in gated["samples"]:
            if s["value_ns"] > 1e8:
                self.assertIn("handle_request", s["ustack"], s)

    def test_cxx_demangled_name(self):
        self.check_ground_truth("request_workload_cpp", "app::Server::handle_request",
                                "_ZN3app6Server14handle_requestERNS_7RequestE")

    def test_stripped_binary_dynsym(self):
        self.check_ground_truth("request_workload_stripped", "handle_request", "handle_request")

    def test_shared_library(self):
        # Found among the process's mapped libraries, without naming it...
        self.check_ground_truth("request_workload_lib", "lib_handle_request", "lib_handle_request")

    def test_shared_library_named_and_glob(self):
        # ...or named by its basename, with a glob for the symbol.
        self.check_ground_truth("request_workload_lib", "lib_handle_req*@librequest_workload",
                                "lib_handle_request")

    def test_two_request_functions(self):
        # Each symbol is timed on its own; the time counted is inside either.
        w = RequestWorkload("request_workload", *REQUESTS)
        gated, _, truth = capture(self.daemon, w, "--request", "handle_request",
                                  "--request", "between_requests")
        workers = [t for name, t in truth.items() if name.startswith("rq-worker")]
        self.assertEqual([r["symbol"] for r in gated["requests"]],
                         ["handle_request", "between_requests"])
        for r in gated["requests"]:
            self.assertEqual(r["count"], sum(t["requests"] for t in workers), r)
        self.assertTrue({s["pid"] for s in gated["samples"]} <= {t["tid"] for t in workers})
        for t in workers:
            got = by_thread(gated, t["tid"])
            want = t["in_request_blocked_ns"] + t["outside_blocked_ns"]
            self.assertAlmostEqual(got, want, delta=want * TOLERANCE,
                                   msg=f"{t['name']}: {got} ns in either function, truth {want}")

    def test_system_wide_by_binary(self):
        # No --pid: every process running the binary. Other processes still
        # are filtered out by the request condition itself.
        d = self.daemon
        path = workload_path("request_workload")
        w = RequestWorkload("request_workload", *REQUESTS)
        proc = d.ctl_popen("--json", "capture", "--seconds", "4", "--request", f"handle_request@{path}")
        try:
            d.wait_captures(1)
            truth = w.go()
            out, err = proc.communicate(timeout=40)
        finally:
            w.kill()
        self.assertEqual(proc.returncode, 0, out + err)
        cap = json.loads(out)["capture"]
        self.assertEqual({s["tgid"] for s in cap["samples"]}, {w.pid})
        workers = [t for name, t in truth.items() if name.startswith("rq-worker")]
        self.assertEqual(cap["requests"][0]["count"], sum(t["requests"] for t in workers))

    def test_text_output_summary(self):
        d = self.daemon
        w = RequestWorkload("request_workload", "--requests", "20", "--backend-ms", "5")
        proc = d.ctl_popen("capture", "--pid", str(w.pid), "--seconds", "3", "--request", "handle_request")
        try:
            d.wait_captures(1)
            w.go()
            out, err = proc.communicate(timeout=40)
        finally:
            w.kill()
        self.assertEqual(proc.returncode, 0, err)
        parse_folded(out)  # stdout stays plain folded lines
        self.assertRegex(err, r"handle_request: 40 requests, mean [0-9.]+ ms, of which [0-9.]+ ms off-CPU \([0-9]+ %\)")

    def test_probes_never_fired(self):
        # The workload waits at its start line: its request function is never
        # called. The capture still succeeds, and says that its probes never
        # fired rather than look like an idle service.
        d = self.daemon
        w = RequestWorkload("request_workload")
        try:
            r = d.ctl("--json", "capture", "--pid", str(w.pid), "--seconds", "1",
                      "--request", "handle_request")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            cap = json.loads(r.stdout)["capture"]
            req = cap["requests"][0]
            self.assertEqual((req["count"], req["calls"]), (0, 0), req)
            self.assertIn("never fired", req["warning"])
            self.assertEqual(cap["samples"], [])

            r = d.ctl("capture", "--pid", str(w.pid), "--seconds", "1", "--request", "handle_request")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("offcpuctl: warning: handle_request: its probes never fired", r.stderr)
        finally:
            w.kill()

    def test_calls_that_do_not_return(self):
        # Each worker's first request waits 10 s on its backend: the 1 s capture
        # sees the calls enter, none return, and says so.
        d = self.daemon
        w = RequestWorkload("request_workload", "--requests", "1", "--backend-ms", "10000")
        proc = d.ctl_popen("--json", "capture", "--pid", str(w.pid), "--seconds", "1",
                           "--request", "handle_request")
        try:
            d.wait_captures(1)
            w.proc.stdin.write("go\n")
            w.proc.stdin.flush()
            out, err = proc.communicate(timeout=40)
        finally:
            w.kill()
        self.assertEqual(proc.returncode, 0, out + err)
        req = json.loads(out)["capture"]["requests"][0]
        self.assertEqual((req["count"], req["calls"]), (0, 2), req)
        self.assertIn("no call returned while counting", req["warning"])

    def test_errors(self):
        d = self.daemon
        w = RequestWorkload("request_workload")
        try:
            r = d.ctl("capture", "--pid", str(w.pid), "--seconds", "1", "--request", "handle_requets")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("handle_requets", r.stderr)
            self.assertIn("close matches", r.stderr)
            self.assertIn("handle_request", r.stderr.split("close matches")[1])

            r = d.ctl("capture", "--seconds", "1", "--request", "main@/nonexistent/binary")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("/nonexistent/binary", r.stderr)

            r = d.ctl("capture", "--seconds", "1", "--request", "handle_request")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("--pid", r.stderr)

            r = d.ctl("capture", "--pid", str(w.pid), "--seconds", "1", *sum((["--request", f"f{i}"] for i in range(9)), []))
            self.assertEqual(r.returncode, EXIT_USAGE, r.stderr)

            # The kernel refuses the uprobe (the function starts with int3):
            # its reason, and the daemon carries on.
            r = d.ctl("capture", "--pid", str(w.pid), "--seconds", "1", "--request", "unprobeable_request")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("cannot attach a uprobe to unprobeable_request in", r.stderr)
            self.assertIn("the kernel cannot probe its first instruction (ENOTSUPP)", r.stderr)
        finally:
            w.kill()
        self.assertEqual(d.status()["captures_running"], 0)


class ContinuousRequestTest(unittest.TestCase):
    """continuous_requests: the always-on profile counts only inside requests."""

    def test_continuous_profile_keeps_requests_only(self):
        path = workload_path("request_workload")
        d = Daemon(FAST + f"continuous_requests = handle_request@{path}\n")
        try:
            w = RequestWorkload("request_workload", *REQUESTS)
            time.sleep(0.3)  # the probes cover the process from its start: no partial request
            begin = now_ms()
            truth = w.go()
            end = now_ms()
            wait_stored(d, end)
            r = d.ctl("export", "--from", str(begin / 1000 - 2), "--pid", str(w.pid))
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = parse_folded(r.stdout)
            workers = {name: t for name, t in truth.items() if name.startswith("rq-worker")}
            comms = {frames[0] for frames, _ in rows}
            self.assertTrue(comms <= set(workers), f"threads outside requests: {comms}")
            got = sum(v for _, v in rows) * 1000  # folded values are microseconds
            want = sum(t["in_request_blocked_ns"] for t in workers.values())
            self.assertAlmostEqual(got, want, delta=want * TOLERANCE)

            st = d.status()
            reqs = st["requests"]
            self.assertEqual(len(reqs), 1, reqs)
            self.assertEqual(reqs[0]["symbol"], f"handle_request@{path}")
            self.assertEqual(reqs[0]["count"], sum(t["requests"] for t in workers.values()))
        finally:
            code = d.stop()
        self.assertEqual(code, 0, d.log_text())

    def test_missing_symbol_stops_startup(self):
        path = workload_path("request_workload")
        with self.assertRaises(RuntimeError) as e:
            Daemon(f"continuous_requests = no_such_function@{path}\n")
        self.assertIn("no_such_function", str(e.exception))


if __name__ == "__main__":
    unittest.main()
