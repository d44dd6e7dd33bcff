"""Browser test of the flame graph SVG: offcpuctl renders a folded input
whose tree is known, and headless Chromium (flame_browser.js, through
playwright-core) hovers, clicks, searches and reloads it as a person would.

Skipped, with the reason, when node, Chromium or playwright-core is missing
(offcpu_env.browser_missing: scripts/setup-tests.sh installs them) or when this
offcpuctl has no flamegraph command yet.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from offcpu_env import EXIT_USAGE, OFFCPUCTL, browser_missing, node_env

HERE = os.path.dirname(os.path.abspath(__file__))
MATCH_FILL = "rgb(230,0,230)"

# 100 samples: all = idle(18) [beta(8)] + main(82) [alpha(45) [beta(30),
# gamma(10) [beta(10)]], delta(25) [epsilon(25)], zeta(12) [BETA(12)]].
FOLDED = """main;alpha;beta 30
main;alpha;gamma;beta 10
main;alpha 5
main;delta;epsilon 25
main;zeta;BETA 12
idle;beta 8
idle 10
"""


def render_svg(folded_path, svg_path):
    """offcpuctl flamegraph: folded text in (stdin, or a file argument if the
    command wants one), the SVG out on stdout."""
    with open(folded_path) as stdin:
        r = subprocess.run([OFFCPUCTL, "flamegraph"], stdin=stdin, capture_output=True, timeout=60)
    if r.returncode == EXIT_USAGE and b"unknown command" in r.stderr:
        raise unittest.SkipTest("offcpuctl has no flamegraph command yet")
    if r.returncode == EXIT_USAGE:
        r = subprocess.run([OFFCPUCTL, "flamegraph", folded_path], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)
    assert r.returncode == 0, f"offcpuctl flamegraph failed ({r.returncode}): {r.stderr.decode()}"
    assert r.stdout.startswith(b"<?xml") and b"</svg>" in r.stdout, f"not an SVG: {r.stdout[:200]!r}"
    with open(svg_path, "wb") as f:
        f.write(r.stdout)


def frames_named(snapshot, name):
    return [f for f in snapshot["frames"] if f["name"] == name]


def frame(snapshot, name, nth=0):
    return frames_named(snapshot, name)[nth]


class FlamegraphBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = browser_missing()
        if missing:
            raise unittest.SkipTest(missing)
        if not os.access(OFFCPUCTL, os.X_OK):
            raise unittest.SkipTest(f"no offcpuctl at {OFFCPUCTL}")

    def test_zoom_search_url_state(self):
        outdir = tempfile.mkdtemp(prefix="flame-browser-")
        folded = os.path.join(outdir, "in.folded")
        svg = os.path.join(outdir, "out.svg")
        with open(folded, "w") as f:
            f.write(FOLDED)
        render_svg(folded, svg)
        p = subprocess.run(["node", os.path.join(HERE, "flame_browser.js"), svg, outdir], capture_output=True,
                           text=True, timeout=180, env=node_env())
        self.assertEqual(p.returncode, 0, f"flame_browser.js failed: {p.stderr}")
        r = json.loads(p.stdout)
        where = f"(files in {outdir})"
        self.assertEqual(r["errors"], [], f"JavaScript errors {where}")

        initial = r["initial"]
        root = initial["frames"][0]
        self.assertEqual(root["name"], "all")
        xpad, full = root["x"], root["width"]
        self.assertEqual(len(initial["frames"]), 12, where)
        self.assertAlmostEqual(frame(initial, "alpha")["width"], full * 45 / 100, delta=0.01)
        self.assertFalse(initial["unzoomVisible"], "Reset Zoom shows before any zoom")

        # Hover: the details line names the frame; leaving clears it.
        self.assertTrue(r["hover"].startswith("Function: alpha (45 "), r["hover"])
        self.assertEqual(r["unhover"].strip(), "")

        # Click alpha: it spans the width, its subtree scales, its siblings
        # and their subtrees hide, its ancestors stay full width, dimmed.
        z = r["zoomed"]
        alpha = frame(z, "alpha")
        self.assertAlmostEqual(alpha["x"], xpad, delta=0.01)
        self.assertAlmostEqual(alpha["width"], full, delta=0.01)
        self.assertTrue(alpha["visible"] and not alpha["parent"])
        beta_in_alpha = frame(z, "beta", 1)  # main;alpha;beta
        self.assertAlmostEqual(beta_in_alpha["width"], full * 30 / 45, delta=0.01)
        # alpha's own 5 samples lie left of its callees, as in flamegraph.pl.
        self.assertAlmostEqual(beta_in_alpha["x"], xpad + full * 5 / 45, delta=0.01)
        self.assertAlmostEqual(frame(z, "gamma")["x"], xpad + full * 35 / 45, delta=0.01)
        self.assertAlmostEqual(frame(z, "beta", 2)["width"], full * 10 / 45, delta=0.01)
        for name in ("delta", "epsilon", "zeta", "BETA", "idle"):
            self.assertFalse(frame(z, name)["visible"], f"{name} still shows after zooming into alpha")
        self.assertFalse(frame(z, "beta", 0)["visible"], "idle;beta still shows")
        for name in ("all", "main"):
            f = frame(z, name)
            self.assertTrue(f["visible"] and f["parent"], f"ancestor {name}: {f}")
            self.assertAlmostEqual(f["width"], full, delta=0.01)
        self.assertTrue(z["unzoomVisible"])

        # Reset Zoom: back to the first picture.
        reset = r["reset"]
        for before, after in zip(initial["frames"], reset["frames"]):
            self.assertAlmostEqual(after["x"], before["x"], delta=0.01, msg=after["name"])
            self.assertAlmostEqual(after["width"], before["width"], delta=0.01, msg=after["name"])
            self.assertTrue(after["visible"] and not after["parent"], after["name"])
            self.assertEqual(after["label"], before["label"])
        self.assertFalse(reset["unzoomVisible"])

        # alpha|beta: alpha's betas are inside alpha and count once.
        self.assertAlmostEqual(r["nestedPct"], 53.0, places=6)
        self.assertEqual(r["nested"]["matched"], "Matched: 53.0%")
        self.assertTrue(r["nested"]["matchedVisible"])
        highlighted = {(f["name"], f["x"]) for f in r["nested"]["frames"] if f["fill"] == MATCH_FILL}
        want = {(f["name"], f["x"]) for f in initial["frames"] if f["name"] in ("alpha", "beta")}
        self.assertEqual(highlighted, want)

        # The case-insensitive toggle adds BETA.
        self.assertEqual(r["caseSensitive"]["matched"], "Matched: 48.0%")
        self.assertNotEqual(frame(r["caseSensitive"], "BETA")["fill"], MATCH_FILL)
        self.assertEqual(r["caseInsensitive"]["matched"], "Matched: 60.0%")
        self.assertEqual(frame(r["caseInsensitive"], "BETA")["fill"], MATCH_FILL)
        self.assertEqual(r["caseInsensitive"]["ic"], "on")

        # Zoom and search live in the URL; a reload restores both.
        before, after = r["beforeReload"], r["afterReload"]
        for part in ("x=18", "d=2", "s=beta", "ic"):
            self.assertIn(part, before["hash"].lstrip("#").split("&"))
        self.assertEqual(after["hash"], before["hash"])
        self.assertEqual(after["matched"], "Matched: 60.0%")
        self.assertEqual(after["ic"], "on")
        for b, a in zip(before["frames"], after["frames"]):
            self.assertEqual((a["visible"], a["parent"], a["fill"]), (b["visible"], b["parent"], b["fill"]),
                             a["name"])
            self.assertAlmostEqual(a["width"], b["width"], delta=0.01, msg=a["name"])
        self.assertAlmostEqual(frame(after, "alpha")["width"], full, delta=0.01)

        # Ctrl-F prompts; its answer replaces the search.
        self.assertEqual(r["ctrlF"]["matched"], "Matched: 10.0%")
        self.assertEqual([f["name"] for f in r["ctrlF"]["frames"] if f["fill"] == MATCH_FILL], ["gamma"])

        # Reset Search and Reset Zoom: no highlight, nothing hidden.
        cleared = r["cleared"]
        self.assertFalse(cleared["matchedVisible"])
        self.assertEqual([f["fill"] for f in cleared["frames"]], [f["fill"] for f in initial["frames"]])
        self.assertTrue(all(f["visible"] for f in cleared["frames"]))
        self.assertNotIn("s=", cleared["hash"])
        self.assertNotIn("x=", cleared["hash"])

        for shot in ("zoomed.png", "reloaded.png", "initial.png"):
            with open(os.path.join(outdir, shot), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", f"{shot} {where}")
        shutil.rmtree(outdir)


if __name__ == "__main__":
    unittest.main()
