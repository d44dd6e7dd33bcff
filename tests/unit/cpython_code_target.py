#!/usr/bin/env python3
"""Target of tests/unit/test-cpython_code.c: a CPython process whose code
objects the test names through symbols/cpython_code.c.

Prints, tab-separated, one line per thing to check, then "ready", then waits
until stdin closes:
  version MINOR
  code TAG ADDRESS FIRSTLINENO QUALNAME FILE START:END:LINE...  (co_lines(),
      LINE "-" for None; QUALNAME is co_qualname, or co_name before 3.11)
  garbage TAG ADDRESS                  (an object that is not a code object)
  fake TAG ADDRESS exact|prefix|reject TEXT
      (a forged code object in a bytes object: its name at instruction 0 is
      TEXT, starts with TEXT at every instruction, or is "[python: TEXT]")
  str TAG ADDRESS                      (a str the test writes into a fake)
  many ADDRESS...                      (more code objects than the cache holds:
                                        "<lambda> (<string>:1)")
"""
import os
import random
import struct
import sys
import time
import types

MINOR = sys.version_info.minor

# PyCodeObject offsets (x86-64) of the fields the module reads; 3.10 has no
# co_qualname.
LAYOUT = {
    10: dict(firstlineno=40, filename=104, name=112, qualname=None, linetable=120),
    11: dict(firstlineno=72, filename=112, name=120, qualname=128, linetable=136),
    12: dict(firstlineno=68, filename=112, name=120, qualname=128, linetable=136),
    13: dict(firstlineno=68, filename=112, name=120, qualname=128, linetable=136),
}.get(MINOR)


def nap():
    time.sleep(0)
    return 1


class Sleeper:
    def wait_lock(self, lock=None):
        if lock is None:
            return 0
        with lock:
            return 1


def outer():
    def read_peer(sock=None):
        return sock.recv(1) if sock else b""
    return read_peer


read_peer = outer()


def café(x=1):
    return x * 2


def παύση():
    return 0


def 日本𠀀():
    return 0


snooze = lambda: time.sleep(0)  # noqa: E731


def long_function(n):
    total = 0
    total = total + n * 7 + n * 8 + n * 9 + n * 10 + n * 11 + n * 12
    total = total + n * 14 + n * 15 + n * 16 + n * 17 + n * 18 + n * 19
    total = total + n * 21 + n * 22 + n * 23 + n * 24 + n * 25 + n * 26
    total = total + n * 28 + n * 29 + n * 30 + n * 31 + n * 32 + n * 33
    total = total + n * 35 + n * 36 + n * 37 + n * 38 + n * 39 + n * 40
    total = total + n * 42 + n * 43 + n * 44 + n * 45 + n * 46 + n * 47
    total = total + n * 49 + n * 50 + n * 51 + n * 52 + n * 53 + n * 54
    total = total + n * 56 + n * 57 + n * 58 + n * 59 + n * 60 + n * 61
    total = total + n * 63 + n * 64 + n * 65 + n * 66 + n * 67 + n * 68
    total = total + n * 70 + n * 71 + n * 72 + n * 73 + n * 74 + n * 75
    total = total + n * 77 + n * 78 + n * 79 + n * 80 + n * 81 + n * 82
    total = total + n * 84 + n * 85 + n * 86 + n * 87 + n * 88 + n * 89
    total = total + n * 91 + n * 92 + n * 93 + n * 94 + n * 95 + n * 96
    total = total + n * 98 + n * 99 + n * 100 + n * 101 + n * 102 + n * 103
    total = total + n * 105 + n * 106 + n * 107 + n * 108 + n * 109 + n * 110
    total = total + n * 112 + n * 113 + n * 114 + n * 115 + n * 116 + n * 117
    total = total + n * 119 + n * 120 + n * 121 + n * 122 + n * 123 + n * 124
    total = total + n * 126 + n * 127 + n * 128 + n * 129 + n * 130 + n * 131
    total = total + n * 133 + n * 134 + n * 135 + n * 136 + n * 137 + n * 138
    total = total + n * 140 + n * 141 + n * 142 + n * 143 + n * 144 + n * 145
    for i in range(n):
        total += i
        if i > 3:
            break
    """











































































































































    Padding above: the next line is more than 127 lines on (3.10 splits the
    line delta; 3.11+ takes a multi-byte svarint).
    """
    total = total + n * 147 + n * 148 + n * 149 + n * 150 + n * 151 + n * 152
    total = total + n * 154 + n * 155 + n * 156 + n * 157 + n * 158 + n * 159
    total = total + n * 161 + n * 162 + n * 163 + n * 164 + n * 165 + n * 166
    total = total + n * 168 + n * 169 + n * 170 + n * 171 + n * 172 + n * 173
    total = total + n * 175 + n * 176 + n * 177 + n * 178 + n * 179 + n * 180
    total = total + n * 182 + n * 183 + n * 184 + n * 185 + n * 186 + n * 187
    total = total + n * 189 + n * 190 + n * 191 + n * 192 + n * 193 + n * 194
    total = total + n * 196 + n * 197 + n * 198 + n * 199 + n * 200 + n * 201
    total = total + n * 203 + n * 204 + n * 205 + n * 206 + n * 207 + n * 208
    total = total + n * 210 + n * 211 + n * 212 + n * 213 + n * 214 + n * 215
    total = total + n * 217 + n * 218 + n * 219 + n * 220 + n * 221 + n * 222
    total = total + n * 224 + n * 225 + n * 226 + n * 227 + n * 228 + n * 229
    total = total + n * 231 + n * 232 + n * 233 + n * 234 + n * 235 + n * 236
    total = total + n * 238 + n * 239 + n * 240 + n * 241 + n * 242 + n * 243
    total = total + n * 245 + n * 246 + n * 247 + n * 248 + n * 249 + n * 250
    total = total + n * 252 + n * 253 + n * 254 + n * 255 + n * 256 + n * 257
    total = total + n * 259 + n * 260 + n * 261 + n * 262 + n * 263 + n * 264
    total = total + n * 266 + n * 267 + n * 268 + n * 269 + n * 270 + n * 271
    total = total + n * 273 + n * 274 + n * 275 + n * 276 + n * 277 + n * 278
    total = total + n * 280 + n * 281 + n * 282 + n * 283 + n * 284 + n * 285
    return total


# Over 0x7fff code units, so positions saturate; compiled under this file's
# name so that FILE is the same.
HUGE_LINES = 10000
exec(compile("def huge():\n    x = 0\n" + "    x = x + 1\n" * HUGE_LINES + "    return x\n",
             __file__, "exec"))


def out(*fields):
    sys.stdout.buffer.write("\t".join(str(f) for f in fields).encode("utf-8") + b"\n")


def lines_of(code):
    return " ".join("%d:%d:%s" % (s, e, "-" if l is None else l) for s, e, l in code.co_lines())


def qualname_of(code):
    return getattr(code, "co_qualname", code.co_name)


def show(tag, fn):
    co = fn.__code__
    out("code", tag, id(co), co.co_firstlineno, qualname_of(co), os.path.basename(co.co_filename),
        lines_of(co))


def line_at(code, offset):
    for s, e, l in code.co_lines():
        if s <= offset < e and l:
            return l
    return code.co_firstlineno


def utf8_safe(s):
    return "".join("\ufffd" if 0xd800 <= ord(ch) <= 0xdfff else ch for ch in s)


keep = []


def fake(tag, kind, text, name="fake_fn", filename="/tmp/fake/mod.py", linetable=None,
         firstlineno=None, ob_type=types.CodeType, qualname=None):
    """A forged code object: the header laid out as the module reads it, in a
    bytes object's data (16-byte aligned, as code objects are)."""
    if linetable is None:
        linetable = nap.__code__.co_linetable
    if firstlineno is None:
        firstlineno = nap.__code__.co_firstlineno
    header = bytearray(256)
    struct.pack_into("<qQ", header, 0, 1, id(ob_type))
    struct.pack_into("<i", header, LAYOUT["firstlineno"], firstlineno)
    struct.pack_into("<Q", header, LAYOUT["filename"], id(filename))
    struct.pack_into("<Q", header, LAYOUT["name"], id(name))
    if LAYOUT["qualname"] is not None:
        struct.pack_into("<Q", header, LAYOUT["qualname"], id(qualname if qualname else name))
    struct.pack_into("<Q", header, LAYOUT["linetable"], id(linetable))
    obj = bytes(header)
    keep.extend((obj, name, qualname, filename, linetable))
    out("fake", tag, id(obj) + 32, kind, text)


def main():
    out("version", MINOR)
    show("nap", nap)
    show("wait_lock", Sleeper.wait_lock)
    show("read_peer", read_peer)
    show("cafe", café)
    show("ucs2", παύση)
    show("ucs4", 日本𠀀)
    show("lambda", snooze)
    show("long", long_function)
    show("huge", huge)  # noqa: F821 (defined by exec)

    big_int = 10**40
    text = "not a code object, " * 3
    keep.extend((big_int, text))
    out("garbage", "int", id(big_int))
    out("garbage", "str", id(text))

    if LAYOUT:
        first = line_at(nap.__code__, 0)
        # Non-ASCII (UCS2) file name; a lone surrogate in the name.
        fake("ucs2_file", "exact", "fake_fn (mod_\u00fc.py:%d)" % first,
             filename="/tmp/\u03b4/mod_\u00fc.py")
        surrogate = "bad\ud800name"
        fake("surrogate", "exact", "%s (mod.py:%d)" % (utf8_safe(surrogate), first),
             name=surrogate)
        fake("swap", "exact", "before_fn (mod.py:%d)" % first, name="before_fn")
        after = "after_fn"
        keep.append(after)
        out("str", "after", id(after))
        # Random line tables: any bytes name the function, with some line.
        rng = random.Random(1)
        for i in range(16):
            table = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 3000)))
            fake("fuzz%d" % i, "prefix", "fake_fn (mod.py:", linetable=table)
        fake("big_table", "reject", "not a code object", linetable=bytes(2 << 20))
        fake("table_str", "reject", "not a code object", linetable="not bytes")
        fake("name_bytes", "reject", "not a code object", name=b"fake_fn")
        fake("negative_line", "reject", "not a code object", firstlineno=-1)
        fake("int_type", "reject", "not a code object", ob_type=int)
        fake("mixed_types", "reject", "not a code object", filename=b"/tmp/x.py")
    many = [eval("lambda: 0") for _ in range(17000)]
    keep.append(many)
    out("many", " ".join(str(id(f.__code__)) for f in many))
    sys.stdout.flush()
    out("ready")
    sys.stdout.flush()
    sys.stdin.read()


main()
