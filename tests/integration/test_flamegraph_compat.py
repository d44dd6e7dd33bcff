"""offcpuctl flamegraph and diff as a drop-in for flamegraph.pl and
difffolded.pl: folded inputs of each case flamegraph.pl reads its own way
and each of its options, drawn by the real offcpuctl and checked against
the drawing worked out by hand here (frame names, values, x and width) and
against flamegraph.pl's colour formulas. With FLAMEGRAPH_PL naming a copy
of flamegraph.pl, every case is drawn by it too and the frames compared.
No daemon is involved."""
import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

from offcpu_env import OFFCPUCTL

SVG_NS = "{http://www.w3.org/2000/svg}"
XPAD, WIDTH = 10, 1200
FLAMEGRAPH_PL = os.environ.get("FLAMEGRAPH_PL")


def run(args, cwd=None, stdin=None):
    return subprocess.run([OFFCPUCTL] + args, capture_output=True, cwd=cwd, input=stdin, timeout=60)


class Frame:
    def __init__(self, g):
        title = g.find(SVG_NS + "title").text
        rect = g.find(SVG_NS + "rect")
        text = g.find(SVG_NS + "text")
        self.title = title
        self.name = re.sub(r" \([^(]*\)$", "", title)
        self.x, self.w = float(g.get("data-x")), float(g.get("data-w"))
        self.px, self.pw = float(rect.get("x")), float(rect.get("width"))
        self.py = float(rect.get("y"))
        self.fill = rect.get("fill")
        self.label = text.text if text is not None else None


def frames_of(svg_bytes):
    root = ET.fromstring(svg_bytes)
    return [Frame(g) for g in root.iter(SVG_NS + "g") if g.get("class") == "f"]


def depths(frames, inverted=False):
    """Each frame's depth from its y: the root's row is 0."""
    root_y = frames[0].py
    fh = min(abs(f.py - root_y) for f in frames if f.py != root_y) if len(frames) > 1 else 16
    return [round(abs(f.py - root_y) / fh) for f in frames]


# flamegraph.pl's colour keys and palettes, written again from its source
# (not from offcpuctl's C) to check the colours offcpuctl draws.
def namehash(name):
    vector, weight, mx, mod = 0.0, 1.0, 1.0, 10
    i = name.find("`", 1)
    if i >= 1:
        name = name[i + 1:]
    for c in name:
        vector += (ord(c) % mod) / (mod - 1) * weight
        mod += 1
        mx += weight
        weight *= 0.70
        if mod > 12:
            break
    return 1 - vector / mx


def perl_rand_after_srand(seed):
    x = 0x330E + (seed << 16)
    x = (x * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
    return x / 2.0**48


def pl_colour(palette, name, hash_=False):
    if hash_:
        v1 = namehash(name)
        v2 = v3 = namehash(name[::-1])
    else:
        v1 = v2 = v3 = perl_rand_after_srand(sum(ord(c) for c in name) & 0xFFFFFFFF)
    if palette == "hot":
        return (205 + int(50 * v3), int(230 * v1), int(55 * v2))
    if palette == "java":
        if name.endswith("_[j]"):
            palette = "green"
        elif name.endswith("_[i]"):
            palette = "aqua"
        elif re.match(r"^L?(java|javax|jdk|net|org|com|io|sun)/", name) or ":::" in name:
            palette = "green"
        elif "::" in name:
            palette = "yellow"
        elif name.endswith("_[k]"):
            palette = "orange"
        else:
            palette = "red"
    flat = {
        "red": lambda v: (200 + int(55 * v), 50 + int(80 * v), 50 + int(80 * v)),
        "green": lambda v: (50 + int(60 * v), 200 + int(55 * v), 50 + int(60 * v)),
        "blue": lambda v: (80 + int(60 * v), 80 + int(60 * v), 205 + int(50 * v)),
        "aqua": lambda v: (50 + int(60 * v), 165 + int(55 * v), 165 + int(55 * v)),
        "yellow": lambda v: (175 + int(55 * v), 175 + int(55 * v), 50 + int(20 * v)),
        "orange": lambda v: (190 + int(65 * v), 90 + int(65 * v), 0),
        "purple": lambda v: (190 + int(65 * v), 80 + int(60 * v), 190 + int(65 * v)),
    }
    return flat[palette](v1)


def rgb(fill):
    m = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill)
    if m:
        return tuple(int(v) for v in m.groups())
    m = re.fullmatch(r"#(..)(..)(..)", fill)
    assert m, fill
    return tuple(int(v, 16) for v in m.groups())


class FlamegraphCompatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="offcpud-fgcompat-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return path

    def draw(self, folded, *args, cwd=None):
        path = self.write("in.folded", folded)
        p = run(["flamegraph", path] + list(args), cwd=cwd)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return p.stdout

    def check_drawing(self, folded, want, *args, total=None, pl_args=None):
        """want: (name, depth, x, width) per frame in document order, the
        root first; x and width in the input's unit. Checks the pixels too,
        and flamegraph.pl's frames when FLAMEGRAPH_PL is set."""
        svg = self.draw(folded, *args)
        fr = frames_of(svg)
        got = list(zip([f.name for f in fr], depths(fr), [f.x for f in fr], [f.w for f in fr]))
        self.assertEqual(got, [(n, d, float(x), float(w)) for n, d, x, w in want])
        total = total if total is not None else fr[0].w
        scale = (WIDTH - 2 * XPAD) / total
        for f in fr[1:]:
            self.assertAlmostEqual(f.px, XPAD + f.x * scale, delta=0.01, msg=f.name)
            self.assertAlmostEqual(f.pw, f.w * scale, delta=0.01, msg=f.name)
        if FLAMEGRAPH_PL and pl_args is not None:
            self.compare_flamegraph_pl(folded, fr, pl_args)
        return fr

    def compare_flamegraph_pl(self, folded, fr, pl_args):
        """flamegraph.pl's frames: the same names at the same depths, x and
        width (its px rounded to 0.1) and, with --hash, the same colours."""
        path = self.write("pl.folded", folded)
        p = subprocess.run(["perl", FLAMEGRAPH_PL] + pl_args + [path], capture_output=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        theirs = []
        for g in ET.fromstring(p.stdout).iter(SVG_NS + "g"):
            if g.get("class") != "func_g":
                continue
            t = g.find(SVG_NS + "title").text
            r = g.find(SVG_NS + "rect")
            theirs.append([re.sub(r" \([^(]*\)$", "", t), float(r.get("y")), float(r.get("x")),
                           float(r.get("width")), r.get("fill")])
        root_y = max(t[1] for t in theirs) if "--inverted" not in pl_args else min(t[1] for t in theirs)
        fh = 16
        groups = {}
        for name, y, x, w, fill in theirs:
            groups.setdefault((name, round(abs(root_y - y) / fh)), []).append((x, w, fill))
        ours = {}
        for f, d in zip(fr, depths(fr)):
            ours.setdefault((f.name if d else "all", d), []).append((f.px, f.pw, f.fill))
        self.assertEqual(sorted((k, len(v)) for k, v in groups.items()),
                         sorted((k, len(v)) for k, v in ours.items()))
        for key, frames in groups.items():
            for (x1, w1, c1), (x2, w2, c2) in zip(sorted(frames), sorted(ours[key])):
                self.assertAlmostEqual(x1, x2, delta=0.051, msg=key)
                self.assertAlmostEqual(w1, w2, delta=0.11, msg=key)
                if "--hash" in pl_args:
                    self.assertEqual(rgb(c1), rgb(c2), key)

    def test_generated_against_flamegraph_pl(self):
        """A generated profile (bench/flame_gen: user and kernel stacks,
        names with spaces and _[k], 26 frames deep), drawn by both."""
        gen = os.path.join(os.path.dirname(OFFCPUCTL), "..", "bench", "flame_gen")
        if not FLAMEGRAPH_PL or not os.path.exists(gen):
            self.skipTest("FLAMEGRAPH_PL is not set (or bench/flame_gen not built)")
        text = subprocess.run([gen, "-n", "400"], capture_output=True, check=True).stdout
        folded = b"".join(sorted(text.splitlines(keepends=True)))
        svg = self.draw(folded, "--hash", "--colors", "java")
        fr = frames_of(svg)
        self.assertGreater(len(fr), 3000)
        self.compare_flamegraph_pl(folded, fr, ["--hash", "--colors", "java"])

    # ---- input: what flamegraph.pl accepts, with its meaning ----

    def test_annotations(self):
        folded = ("main;sys_read_[k];vfs_read_[k] 5\nmain;jit_[j] 2\nmain;inl_[i] 1\n"
                  "main;waker_[w] 1\nmain;foo::bar 1\n")
        want = [("all", 0, 0, 10), ("main", 1, 0, 10), ("foo::bar", 2, 0, 1), ("inl", 2, 1, 1),
                ("jit", 2, 2, 2), ("sys_read", 2, 4, 5), ("vfs_read", 3, 4, 5), ("waker", 2, 9, 1)]
        fr = self.check_drawing(folded, want, "--colors", "java", "--hash", pl_args=["--colors", "java", "--hash"])
        by = {f.name: f for f in fr}
        # The suffix is a colour hint: java's green (jit), aqua (inlined), orange (kernel).
        for name, full in (("jit", "jit_[j]"), ("inl", "inl_[i]"), ("sys_read", "sys_read_[k]"),
                           ("foo::bar", "foo::bar"), ("main", "main")):
            self.assertEqual(rgb(by[name].fill), pl_colour("java", full, hash_=True), name)
        self.assertEqual(by["sys_read"].label, "sys_read")
        self.assertTrue(by["sys_read"].title.startswith("sys_read (5 "), by["sys_read"].title)
        # Default key (no --hash): flamegraph.pl's srand(checksum of the name).
        fr = frames_of(self.draw(folded, "--colors", "java"))
        by = {f.name: f for f in fr}
        for name, full in (("jit", "jit_[j]"), ("vfs_read", "vfs_read_[k]"), ("main", "main")):
            self.assertEqual(rgb(by[name].fill), pl_colour("java", full), name)
        # offcpud's own palette: a _[k] frame is a kernel one there too.
        fr = frames_of(self.draw(folded, "--palette", "hot"))
        self.assertEqual([f.name for f in fr], [w[0] for w in want])

    def test_whitespace_frames(self):
        # One separator goes: "write0;  3" has a leaf named " ", "a    5" a frame "a   ".
        want = [("all", 0, 0, 9), ("main", 1, 0, 9), ("a   ", 2, 0, 5), ("write0", 2, 5, 4),
                (" ", 3, 6, 3)]
        self.check_drawing("main;write0;  3\nmain;a    5\nmain;write0 1\n", want, pl_args=[])
        # A line without frames counts for the root alone.
        want = [("all", 0, 0, 7), ("a", 1, 2, 5)]
        self.check_drawing(" 2\na 5\n", want, pl_args=[])

    def test_mixed_columns(self):
        # 2- and 3-column lines in one file: widths from the last count; red
        # grew, blue shrank (by the largest change, 3), white unchanged; a
        # frame no 3-column line reached takes the palette's colour.
        want = [("all", 0, 0, 6), ("a", 1, 0, 5), ("b", 2, 0, 2), ("c", 2, 2, 3), ("d", 1, 5, 1)]
        fr = self.check_drawing("a;b 1 2\na;c 3\nd 4 1\n", want, "--colors", "hot", "--hash",
                                pl_args=["--hash"])
        by = {f.name: f for f in fr}
        self.assertEqual(rgb(by["d"].fill), (0, 0, 255))
        self.assertEqual(rgb(by["b"].fill), (255, int(210 * 2 / 3), int(210 * 2 / 3)))
        self.assertEqual(rgb(by["a"].fill), (255, 255, 255))
        self.assertEqual(rgb(by["c"].fill), pl_colour("hot", "c", hash_=True))
        # offcpud's diff palette (the default): the same, hot colours for c.
        fr = self.check_drawing("a;b 1 2\na;c 3\nd 4 1\n", want)
        by = {f.name: f for f in fr}
        self.assertEqual(by["d"].fill, "#0000ff")
        self.assertEqual(by["a"].fill, "#ffffff")
        r, g, b = rgb(by["c"].fill)
        self.assertTrue(r > g > b, by["c"].fill)

    def test_sibling_order_and_self_time(self):
        # flamegraph.pl sorts lines: "b c" before "b", "foo2" before "foo";
        # a frame's own time left of its callees.
        folded = "p;foo2 1\np;foo;x 1\np;b c 1\np;b;y 1\np 2\n"
        want = [("all", 0, 0, 6), ("p", 1, 0, 6), ("b c", 2, 2, 1), ("b", 2, 3, 1), ("y", 3, 3, 1),
                ("foo2", 2, 4, 1), ("foo", 2, 5, 1), ("x", 3, 5, 1)]
        self.check_drawing(folded, want, pl_args=[])
        # --self-right: today's layout, callees from the left edge.
        want = [("all", 0, 0, 6), ("p", 1, 0, 6), ("b c", 2, 0, 1), ("b", 2, 1, 1), ("y", 3, 1, 1),
                ("foo2", 2, 2, 1), ("foo", 2, 3, 1), ("x", 3, 3, 1)]
        self.check_drawing(folded, want, "--self-right")

    def test_kinder_input(self):
        # CRLF, decimals and bytes that are not UTF-8 are read, where
        # flamegraph.pl skips the first and Perl warns of the last.
        fr = self.check_drawing(b"a;b 1.5\r\na;c 0.25\r\ncaf\xe9 2\r\n",
                                [("all", 0, 0, 3.75), ("a", 1, 0, 1.75), ("b", 2, 0, 1.5),
                                 ("c", 2, 1.5, 0.25), ("caf\ufffd", 1, 1.75, 2)])
        self.assertEqual(len(fr), 5)

    # ---- options ----

    def test_minwidth(self):
        folded = "big 100000\nbig;tiny 1\n"
        self.assertEqual([f.name for f in frames_of(self.draw(folded))], ["all", "big"])
        want = [("all", 0, 0, 100001), ("big", 1, 0, 100001), ("tiny", 2, 100000, 1)]
        self.check_drawing(folded, want, "--minwidth", "0", pl_args=["--minwidth", "0"])
        self.assertEqual(len(frames_of(self.draw(folded, "--minwidth", "0.001%"))), 2)
        self.assertEqual(len(frames_of(self.draw(folded, "--minwidth", "0.0009%"))), 3)

    def test_reverse_inverted_flamechart(self):
        self.check_drawing("a;b 2\nc;b 3\n",
                           [("all", 0, 0, 5), ("b", 1, 0, 5), ("a", 2, 0, 2), ("c", 2, 2, 3)],
                           "--reverse", pl_args=["--reverse"])
        fr = self.check_drawing("a;b 2\n", [("all", 0, 0, 2), ("a", 1, 0, 2), ("b", 2, 0, 2)],
                                "--inverted", pl_args=["--inverted"])
        self.assertLess(fr[0].py, fr[2].py)  # the root at the top
        self.check_drawing("z 1\na 2\nz 3\n",
                           [("all", 0, 0, 6), ("z", 1, 0, 1), ("a", 1, 1, 2), ("z", 1, 3, 3)],
                           "--flamechart")

    def test_total_factor_text(self):
        fr = self.check_drawing("a 10\n", [("all", 0, 0, 10), ("a", 1, 0, 10)], "--total", "20",
                                total=20, pl_args=["--total", "20"])
        self.assertAlmostEqual(fr[0].pw, 1180, delta=0.01)  # the root spans --total
        self.assertAlmostEqual(fr[1].pw, 590, delta=0.01)
        p = run(["flamegraph", self.write("t.folded", "a 10\n"), "--total", "5"])
        self.assertEqual(p.returncode, 0)
        self.assertIn("--total 5 is less than the input's total 10: ignored", p.stderr.decode())
        self.assertAlmostEqual(frames_of(p.stdout)[1].pw, 1180, delta=0.01)
        fr = frames_of(self.draw("a 10\n", "--factor", "2", "--countname", "samples"))
        self.assertEqual(fr[1].title, "a (20 samples, 100.00%)")
        # Labels: floor(width / (fontsize * fontwidth)) characters, cut with "..".
        fr = frames_of(self.draw("abcdefghij 1\n", "--width", "200", "--fontsize", "20",
                                 "--fontwidth", "1"))
        self.assertEqual(fr[1].label, "abcdefg..")  # 180 px / 20 = 9 characters
        svg = self.draw("a 1\n", "--nametype", "Stack:", "--encoding", "ISO-8859-1", "--notes",
                        "run 7", "--fonttype", "Courier", "--bgcolors", "blue", "--title", "T",
                        "--subtitle", "S")
        self.assertTrue(svg.startswith(b'<?xml version="1.0" encoding="ISO-8859-1"'), svg[:80])
        self.assertIn(b"<!-- NOTES: run 7 -->", svg)
        self.assertIn(b'nametype: "Stack:"', svg)
        self.assertIn(b'font-family:"Courier"', svg)
        self.assertIn(b'stop-color="#eeeeee" offset="5%"/><stop stop-color="#e0e0ff"', svg)
        self.assertIn(b">T</text>", svg)
        self.assertIn(b">S</text>", svg)
        svg = self.draw("a 1\n", "--bgcolors", "#123456")
        self.assertIn(b'stop-color="#123456" offset="5%"/><stop stop-color="#123456"', svg)
        svg = self.draw("a 1\n", "--colors", "mem")  # its default background, green
        self.assertIn(b'stop-color="#eef2ee"', svg)

    def test_palettes(self):
        folded = "".join(f"{n} 1\n" for n in ("main", "java/lang/Thread", "Perl_runops", "x.js/y",
                                               "f_[k]", "g_[w]", "h::i"))
        for palette in ("hot", "mem", "io", "wakeup", "chain", "java", "js", "perl", "red",
                        "green", "blue", "aqua", "yellow", "purple", "orange"):
            fr = frames_of(self.draw(folded, "--colors", palette, "--hash"))
            self.assertEqual(len(fr), 8, palette)
            for f in fr:
                self.assertRegex(f.fill, r"^rgb\(\d+,\d+,\d+\)$", palette)
            by = {f.name: f for f in fr}
            if palette in ("hot", "java", "red", "green", "blue", "aqua", "yellow", "purple", "orange"):
                for name, full in (("main", "main"), ("f", "f_[k]"), ("h::i", "h::i")):
                    self.assertEqual(rgb(by[name].fill), pl_colour(palette, full, hash_=True),
                                     (palette, name))
            # --palette takes flamegraph.pl's names that offcpud lacks.
            if palette not in ("hot", "io", "wakeup", "chain"):
                self.assertEqual([f.fill for f in frames_of(self.draw(folded, "--palette", palette,
                                                                      "--hash"))],
                                 [f.fill for f in fr], palette)
        # Separators: "--" and "-" grey, as flamegraph.pl.
        fr = frames_of(self.draw("a;-;b;--;c 1\n", "--colors", "chain", "--hash"))
        by = {f.name: f for f in fr}
        self.assertEqual(by["-"].fill, "rgb(200,200,200)")
        self.assertEqual(by["--"].fill, "rgb(160,160,160)")
        # chain: the waker part (after "--") aqua, as flamegraph.pl's _[w].
        c = rgb(by["c"].fill)
        self.assertEqual(c, pl_colour("aqua", "c_[w]", hash_=True))
        self.assertEqual(rgb(by["a"].fill), pl_colour("blue", "a", hash_=True))

    def test_palette_map(self):
        cwd = tempfile.mkdtemp(dir=self.tmp)
        self.draw("main;a 1\nmain;b 1\n", "--cp", cwd=cwd)
        with open(os.path.join(cwd, "palette.map")) as f:
            lines = f.read().splitlines()
        self.assertEqual([l.split("->")[0] for l in lines], ["", "a", "b", "main"])
        for l in lines:
            self.assertRegex(l, r"->rgb\(\d+,\d+,\d+\)$")
        # A colour from the map wins; new names are added.
        with open(os.path.join(cwd, "palette.map"), "w") as f:
            f.write("a->rgb(1,2,3)\noperator->x->rgb(4,5,6)\n")
        fr = frames_of(self.draw("main;a 1\nmain;c 1\noperator->x 1\n", "--cp", cwd=cwd))
        by = {f.name: f for f in fr}
        self.assertEqual(by["a"].fill, "rgb(1,2,3)")
        self.assertEqual(by["operator->x"].fill, "rgb(4,5,6)")
        with open(os.path.join(cwd, "palette.map")) as f:
            self.assertIn("c->" + by["c"].fill, f.read().splitlines())
        path = os.path.join(cwd, "other.map")
        self.draw("z 1\n", "--palette-map", path, "--colors", "blue")
        with open(path) as f:
            self.assertIn("z->", f.read())

    def test_refused_options(self):
        for args, words in ((["--nameattr", "x"], "--grep"),
                            (["--colors", "pink"], "purple"),
                            (["--bgcolors", "red"], "#rrggbb"), (["--notes", "a<b"], "--notes"),
                            (["--fontsize", "0"], "--fontsize"), (["--total", "-1"], "--total")):
            p = run(["flamegraph", self.write("r.folded", "a 1\n")] + args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(words, p.stderr.decode(), args)
        # --help is offcpuctl's: the command's own help, as for every command.
        p = run(["flamegraph", self.write("r.folded", "a 1\n"), "--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("flamegraph", p.stdout.decode())
        p = run(["flamegraph", self.write("r.folded", "a 1\n"), "--hash", "--format", "speedscope"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--hash only applies to svg", p.stderr.decode())

    # ---- diff ----

    def test_diff_normalize_truncates(self):
        a = self.write("a.folded", "a 3\nb 3\n")
        b = self.write("b.folded", "a 4\nb 3\nc 2\n")
        p = run(["diff", "--normalize", a, b])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        # int(3 * 9 / 6) = 4, where rounding would give 5
        self.assertEqual(p.stdout.decode(), "a 4 4\nb 4 3\nc 0 2\n")
        self.assertEqual(run(["diff", "-n", a, b]).stdout, p.stdout)  # difffolded.pl's -n
        p = run(["diff", a, b, "--svg", "--minwidth", "0"])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        fr = frames_of(p.stdout)
        self.assertEqual([(f.name, f.x, f.w) for f in fr],
                         [("all", 0, 9), ("a", 0, 4), ("b", 4, 3), ("c", 7, 2)])

    def test_pprof(self):
        go = shutil.which("go")
        for cmd in (["flamegraph", self.write("p.folded", "main;read_[k] 5\nmain 2\nmain;x 3\n")],
                    ["diff", self.write("p0.folded", "main;x 1\n"),
                     self.write("p1.folded", "main;x 4\nmain;y 2\n")]):
            out = os.path.join(self.tmp, "out.pb.gz")
            p = run(cmd + ["--format", "pprof", "-o", out])
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            with open(out, "rb") as f:
                self.assertTrue(len(gzip.decompress(f.read())) > 0)
            if not go:
                continue
            t = subprocess.run([go, "tool", "pprof", "-raw", out], capture_output=True, text=True,
                               timeout=120, env=dict(os.environ, HOME=self.tmp, GOFLAGS="-mod=mod"))
            self.assertEqual(t.returncode, 0, t.stderr)
            if cmd[0] == "flamegraph":
                # Location 1 main, 2 read (its annotation dropped), 3 x; leaf first.
                self.assertIn("Samples:\nsamples/count[dflt]\n", t.stdout)
                self.assertRegex(t.stdout, r"\n +2: 1 \n +5: 2 1 \n +3: 3 1 \n")
                self.assertRegex(t.stdout, r"\n +1: 0x0 M=1 main :0 s=0\n +2: 0x0 M=1 read :0")
            else:
                self.assertIn("before/count after/count[dflt]", t.stdout)
                self.assertRegex(t.stdout, r"\n +1 +4: 1 2 \n +0 +2: 3 2 \n")  # x, main, y
        if not go:
            self.skipTest("go (golang-go) is missing: the profiles were not read back")


if __name__ == "__main__":
    unittest.main()
