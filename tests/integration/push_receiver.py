"""A fake fleet store for the pusher's tests and benchmark: a real HTTP/1.1
server that speaks the three push protocols offcpud sends closed windows
with, records every request, and fails, slows down or disappears on demand;
plus decoders that read what it received through independent reference
readers (Debian's protoc --decode, Go's own `go tool pprof -raw`), never
through offcpud's code.

Endpoints (anything else: 404):
  POST /push.v1.PusherService/Push   Grafana Pyroscope push API, Connect
                                     unary, application/proto (push.v1.PushRequest)
  POST /ingest?name=APP{k=v}&from=&until=&format=pprof
                                     Pyroscope's legacy ingest API
  POST /v1development/profiles       OTLP/HTTP profiles, application/x-protobuf

Usage:
    with Receiver() as rx:
        ... point offcpud at rx.url ...
        rx.fail_next(2, 500)
        reqs = rx.wait_for(lambda rs: [r for r in rs if r.status == 200], timeout=30)
        series = decode_push(reqs[0])
        samples = pprof_samples(series[0]["samples"][0]["raw_profile"])

`python3 tests/integration/push_receiver.py [--otlp-dir DIR]` runs the
self-check that proves the decoders and the fault injection right.
Python 3.11 stdlib only; protoc and go are the only outside programs.
"""
import calendar
import dataclasses
import gzip
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PUSH_PROTO_DIR = os.path.join(REPO, "proto", "push")
OTLP_PROTO_DIR = os.path.join(REPO, "proto", "push", "otlp")
OTLP_SERVICE_PROTO = "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"
OTLP_REQUEST = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"

PUSH_PATH = "/push.v1.PusherService/Push"
INGEST_PATH = "/ingest"
OTLP_PATH = "/v1development/profiles"
ENDPOINTS = {PUSH_PATH: "push", INGEST_PATH: "ingest", OTLP_PATH: "otlp"}

TOOL_TIMEOUT_S = 60


class ToolMissing(unittest.SkipTest):
    """protoc or go is not installed. A SkipTest, so a unittest test that
    meets it is reported "skipped: <reason>" without any handling."""


class DecodeError(Exception):
    """The reference reader refused the bytes, or they break the protocol's
    rules (an index out of range, a dictionary without its zero entry)."""


# ---------------------------------------------------------------- protocol codes

# Connect's code for each HTTP status a Connect server answers with
# (connectrpc.com/docs/protocol, "Error Codes"); fail_next picks the code
# from the status. Statuses no code maps to get "unknown".
CONNECT_CODE_OF_STATUS = {
    400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied",
    404: "not_found", 408: "deadline_exceeded", 409: "aborted", 412: "failed_precondition",
    413: "resource_exhausted", 415: "internal", 429: "resource_exhausted", 499: "canceled",
    500: "internal", 501: "unimplemented", 502: "unavailable", 503: "unavailable",
    504: "deadline_exceeded",
}
# The google.rpc.Code of OTLP/HTTP's error body (a google.rpc.Status).
GRPC_CODE_OF_STATUS = {
    400: 3, 401: 16, 403: 7, 404: 5, 408: 4, 409: 10, 412: 9, 413: 8, 429: 8, 499: 1,
    500: 13, 501: 12, 502: 14, 503: 14, 504: 4,
}


def connect_error_body(status, message=None, code=None):
    """The JSON body of a Connect unary error: {"code": ..., "message": ...}."""
    code = code or CONNECT_CODE_OF_STATUS.get(status, "unknown")
    return json.dumps({"code": code, "message": message or f"injected {code} ({status})"}).encode()


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def grpc_status_body(status, message=None):
    """A packed google.rpc.Status{code=1, message=2}: OTLP/HTTP's error body.
    Encoded by hand (two fields) so the server needs no protoc."""
    code = GRPC_CODE_OF_STATUS.get(status, 2)  # 2: UNKNOWN
    msg = (message or f"injected error ({status})").encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(msg)) + msg


# ---------------------------------------------------------------- the receiver

@dataclasses.dataclass
class RecordedRequest:
    """One request as the receiver saw it. Recorded when it arrives (status
    None until answered), so a test counts tries even while delay() holds
    them. `time` is the arrival (time.time()), `monotonic` the same instant
    on time.monotonic(), for measuring back-off."""
    seq: int
    time: float
    monotonic: float
    method: str
    path: str
    query: dict            # name -> last value (parse_qsl, blanks kept)
    query_string: str
    headers: http.client.HTTPMessage   # case-insensitive: r.headers["x-scope-orgid"]
    body: bytes            # after undoing Content-Encoding: gzip
    raw_body: bytes        # as it came over the wire
    endpoint: str | None   # "push", "ingest", "otlp", None (unknown path)
    client: tuple
    connection: int        # same number: same TCP connection (keep-alive reuse)
    wire_size: int = 0     # len(raw_body), also when keep_bodies=False dropped the bodies
    status: int | None = None      # set when the answer is decided, just before it is sent
    response_headers: dict = dataclasses.field(default_factory=dict)
    response_body: bytes = b""
    injected: bool = False  # the status came from fail_next
    answered_at: float | None = None   # time.time() then (after any delay)
    error: str | None = None  # the client went away, the body was unreadable, ...

    @property
    def ok(self):
        return self.status == 200


def _select(recs, path=None, endpoint=None, status=None):
    return [r for r in recs if (path is None or r.path == path)
            and (endpoint is None or r.endpoint == endpoint)
            and (status is None or r.status == status)]


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its open connections, so that go_down()
    can cut kept-alive ones too: a pusher reusing a connection must see the
    receiver gone, not keep talking to a dead server's handler thread."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, receiver):
        self.receiver = receiver
        self.connections = set()
        self.connections_lock = threading.Lock()
        self.next_connection = 0
        super().__init__(address, _Handler)

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        if self.receiver.verbose:
            super().handle_error(request, client_address)

    def cut_connections(self):
        with self.connections_lock:
            conns = list(self.connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "offcpud-push-receiver"
    sys_version = ""

    def setup(self):
        super().setup()
        with self.server.connections_lock:
            self.server.next_connection += 1
            self.connection_id = self.server.next_connection

    def log_message(self, fmt, *args):
        if self.server.receiver.verbose:
            sys.stderr.write("push_receiver: " + (fmt % args) + "\n")

    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _handle(self):
        rx = self.server.receiver
        arrived, mono = time.time(), time.monotonic()
        url = urllib.parse.urlsplit(self.path)
        error = None
        try:
            raw = self._read_body()
        except (OSError, ValueError) as e:
            raw, error = b"", f"unreadable body: {e}"
            self.close_connection = True
        body = raw
        if raw and self.headers.get("Content-Encoding", "").lower() == "gzip":
            try:
                body = gzip.decompress(raw)
            except (OSError, EOFError) as e:
                error = f"Content-Encoding gzip, but not gzip: {e}"
        rec = rx._arrive(RecordedRequest(
            seq=0, time=arrived, monotonic=mono, method=self.command, path=url.path,
            query=dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True)),
            query_string=url.query, headers=self.headers, body=body, raw_body=raw,
            endpoint=ENDPOINTS.get(url.path), client=self.client_address,
            connection=self.connection_id, error=error, wire_size=len(raw)))
        status, headers, payload, injected = rx._answer_for(rec)
        if not rx.keep_bodies:
            rec.body = rec.raw_body = b""
        if rx._delay_s > 0:
            rx._stopping.wait(rx._delay_s)
        # Recorded before it is sent: whoever got the answer finds it recorded.
        rx._answered(rec, status, headers, payload, injected)
        try:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            self.wfile.flush()
        except OSError as e:
            self.close_connection = True
            rx._failed_to_answer(rec, f"could not answer: {e}")

    do_POST = do_GET = do_PUT = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = _handle


class Receiver:
    """The fake fleet store: a threaded HTTP/1.1 server on 127.0.0.1.

    port=0 picks a free port at start(); the port then stays the same across
    go_down()/come_up(). Fault injection (fail_next, delay, go_down) may be
    changed from any thread at any time. required_authorization, when set,
    is the exact Authorization header every request must carry (else 401).
    keep_bodies=False drops bodies once answered (a long benchmark's memory);
    verbose logs each request and handler error to stderr."""

    def __init__(self, port=0, host="127.0.0.1", required_authorization=None, keep_bodies=True,
                 verbose=False):
        self.host = host
        self.keep_bodies = keep_bodies
        self.port = port
        self.required_authorization = required_authorization
        self.verbose = verbose
        self._server = None
        self._thread = None
        self._placeholder = None   # while down: the port, bound but not listening
        self._lock = threading.RLock()  # reentrant: a wait_for predicate may call requests()
        self._changed = threading.Condition(self._lock)
        self._records = []
        self._faults = []          # [remaining, status, body, headers, message, code]
        self._delay_s = 0.0
        self._stopping = threading.Event()

    # -- life cycle

    def start(self):
        """Listen (port 0: an ephemeral one, remembered for come_up)."""
        self._stopping.clear()
        self._listen()
        return self

    def stop(self):
        """Stop listening and cut open connections; delayed answers end early."""
        self._stopping.set()
        self._unlisten()
        self._release_port()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    @property
    def is_up(self):
        return self._server is not None

    def go_down(self):
        """Close the listening socket (new connections: refused) and cut the
        open ones, as a crashed store would. The port stays bound (without
        listen(), which refuses connections just the same), so that no other
        socket takes it before come_up()."""
        self._unlisten()
        placeholder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        placeholder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            placeholder.bind((self.host, self.port))
        except OSError:
            placeholder.close()
        else:
            self._placeholder = placeholder

    def _release_port(self):
        if self._placeholder is not None:
            self._placeholder.close()
            self._placeholder = None

    def come_up(self, timeout=5.0):
        """Listen again on the same port (SO_REUSEADDR)."""
        self._listen(timeout)

    def _listen(self, timeout=5.0):
        if self._server is not None:
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                server = _Server((self.host, self.port), self)
                break
            except OSError:
                if self.port == 0 or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._release_port()
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"push-receiver:{self.port}", daemon=True)
        self._thread.start()

    def _unlisten(self):
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.server_close()
        server.cut_connections()
        thread.join()

    # -- fault injection

    def fail_next(self, n, status, body=None, headers=None, message=None, code=None):
        """Answer the next n requests to any of the three endpoints with
        `status`. body None: the protocol's own error body (push: Connect
        JSON with the code matching the status, or `code`; OTLP: a packed
        google.rpc.Status; ingest: a line of text), with `message` in it;
        otherwise body (bytes, str, or a dict/list sent as JSON) as is.
        headers are added (e.g. {"Retry-After": "3"}). Calls queue up: the
        first call's n go first."""
        if n > 0:
            with self._lock:
                self._faults.append([n, status, body, dict(headers or {}), message, code])

    def clear_faults(self):
        with self._lock:
            self._faults.clear()

    def delay(self, seconds):
        """Answer each request `seconds` after it arrived (0: at once
        again): a slow store. Requests already sleeping keep their delay."""
        self._delay_s = float(seconds)

    # -- what was received

    def requests(self, path=None, endpoint=None, status=None):
        """The recorded requests in arrival order, optionally only one path,
        endpoint ("push", "ingest", "otlp") or answered status."""
        with self._lock:
            recs = list(self._records)
        return _select(recs, path, endpoint, status)

    def clear(self):
        with self._lock:
            self._records.clear()

    def wait_for(self, predicate, timeout=10.0):
        """Wait until predicate(requests()) is truthy; return its value.
        Re-evaluated on every arrival and answer. TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                value = predicate(list(self._records))
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"push receiver: condition not met in {timeout} s; "
                                       f"received {self._summary()}")
                self._changed.wait(min(left, 0.5))

    def wait_for_requests(self, n, timeout=10.0, answered=True, **filters):
        """Wait for at least n requests (answered ones, by default) matching
        requests()'s filters; return them all."""
        def enough(recs):
            rs = [r for r in _select(recs, **filters) if r.status is not None or not answered]
            return rs if len(rs) >= n else None
        return self.wait_for(enough, timeout)

    def _summary(self):
        return ", ".join(f"{r.method} {r.path} -> {r.status}" for r in self._records[-10:]) or "nothing"

    # -- called by the handler threads

    def _arrive(self, rec):
        with self._changed:
            rec.seq = len(self._records)
            self._records.append(rec)
            self._changed.notify_all()
        return rec

    def _answered(self, rec, status, headers, payload, injected):
        with self._changed:
            rec.status, rec.response_headers, rec.response_body = status, dict(headers), payload
            rec.injected, rec.answered_at = injected, time.time()
            self._changed.notify_all()

    def _failed_to_answer(self, rec, error):
        with self._changed:
            rec.error = rec.error or error
            self._changed.notify_all()

    def _take_fault(self):
        with self._lock:
            if not self._faults:
                return None
            fault = self._faults[0]
            fault[0] -= 1
            if fault[0] <= 0:
                self._faults.pop(0)
            return fault[1:]

    def _answer_for(self, rec):
        """(status, headers, body, injected) for a request: unknown path,
        then injected faults, then the protocol's own checks, then success."""
        ep = rec.endpoint
        if ep is None:
            return 404, {"Content-Type": "text/plain; charset=utf-8"}, b"404 page not found\n", False
        fault = self._take_fault()
        if fault:
            status, body, headers, message, code = fault
            hdrs = {}
            if body is None:
                hdrs, payload = self._error(ep, status, message, code)
            elif isinstance(body, (dict, list)):
                hdrs, payload = {"Content-Type": "application/json"}, json.dumps(body).encode()
            elif isinstance(body, str):
                ctype = "application/json" if ep == "push" else "text/plain; charset=utf-8"
                hdrs, payload = {"Content-Type": ctype}, body.encode()
            else:
                ctype = "application/json" if ep == "push" else "application/octet-stream"
                hdrs, payload = {"Content-Type": ctype}, bytes(body)
            for k in list(hdrs):
                if any(k.lower() == h.lower() for h in headers):
                    del hdrs[k]
            hdrs.update(headers)
            return status, hdrs, payload, True
        # Wrong method or media type: connect-go answers these with an empty
        # body and Allow / Accept-Post; the others with a short error body.
        if rec.method != "POST":
            hdrs, payload = ({}, b"") if ep == "push" else self._error(ep, 405, f"{rec.method}: POST only")
            hdrs["Allow"] = "POST"
            return 405, hdrs, payload, False
        ctype = rec.headers.get("Content-Type", "").split(";")[0].strip().lower()
        want = {"push": "application/proto", "otlp": "application/x-protobuf"}.get(ep)
        if want and ctype != want:
            hdrs, payload = ({}, b"") if ep == "push" else \
                self._error(ep, 415, f"Content-Type {ctype!r}, expected {want}")
            hdrs["Accept-Post"] = want
            return 415, hdrs, payload, False
        if rec.error and rec.error.startswith("Content-Encoding"):
            hdrs, payload = self._error(ep, 400, rec.error, "invalid_argument")
            return 400, hdrs, payload, False
        if self.required_authorization is not None and \
                rec.headers.get("Authorization") != self.required_authorization:
            hdrs, payload = self._error(ep, 401, "missing or wrong Authorization", "unauthenticated")
            return 401, hdrs, payload, False
        if ep == "push":
            # Connect unary success: the packed PushResponse{}, zero bytes.
            return 200, {"Content-Type": "application/proto"}, b"", False
        if ep == "otlp":
            # A packed ExportProfilesServiceResponse{} (no partial_success): empty.
            return 200, {"Content-Type": "application/x-protobuf"}, b"", False
        return 200, {}, b"", False

    @staticmethod
    def _error(ep, status, message, code=None):
        if ep == "push":
            return {"Content-Type": "application/json"}, connect_error_body(status, message, code)
        if ep == "otlp":
            return {"Content-Type": "application/x-protobuf"}, grpc_status_body(status, message)
        text = (message or f"injected error ({status})") + "\n"
        return {"Content-Type": "text/plain; charset=utf-8"}, text.encode()


# ---------------------------------------------------------------- protobuf text format

_TOKEN = re.compile(rb"""
    (?P<ws>[\s,;]+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?|inf(?:inity)?|nan)(?![\w.]))
  | (?P<ident>[A-Za-z_][\w.]*)
  | (?P<slash>/)
  | (?P<punct>[{}<>:\[\]])
""", re.X | re.S)

_SIMPLE_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord('"'): 34, ord("'"): 39, ord("\\"): 92,
                   ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("v"): 11, ord("?"): 63}


def unescape_c(literal):
    """The bytes of a text-format string literal's inside (quotes removed):
    C escapes, octal \\NNN (1-3 digits), hex \\xHH (1-2 digits), \\uXXXX and
    \\UXXXXXXXX (as UTF-8); raw bytes pass through."""
    out = bytearray()
    i, n = 0, len(literal)
    while i < n:
        c = literal[i]
        if c != 0x5C:  # backslash
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            raise DecodeError("string ends in a lone backslash")
        e = literal[i]
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 1
        elif 0x30 <= e <= 0x37:
            j = i
            while j < n and j - i < 3 and 0x30 <= literal[j] <= 0x37:
                j += 1
            out.append(int(literal[i:j], 8) & 0xFF)
            i = j
        elif e in (ord("x"), ord("X")):
            j = i + 1
            while j < n and j - i - 1 < 2 and chr(literal[j]) in "0123456789abcdefABCDEF":
                j += 1
            if j == i + 1:
                raise DecodeError("\\x without hex digits")
            out.append(int(literal[i + 1:j], 16))
            i = j
        elif e in (ord("u"), ord("U")):
            width = 4 if e == ord("u") else 8
            out += chr(int(literal[i + 1:i + 1 + width], 16)).encode("utf-8", "surrogatepass")
            i += 1 + width
        else:
            raise DecodeError(f"unknown escape \\{chr(e)}")
    return bytes(out)


def _number(tok):
    t = tok.decode().lower()
    if t.endswith("f") and not t.startswith(("0x", "-0x")) and t not in ("inf", "-inf"):
        t = t[:-1]
    if re.fullmatch(r"-?0x[0-9a-f]+", t):
        return int(t, 16)
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    return float(t)


def parse_text_format(data):
    """Parse protobuf text format (what protoc --decode prints) into a dict
    field name -> list of values, in order; each value an int, float, bool,
    bytes (every string literal: bytes and string fields look alike
    without the schema), str (an enum name) or a nested dict. Unknown
    fields keep protoc's numeric name ("3")."""
    if isinstance(data, str):
        data = data.encode()
    tokens, end = [], 0
    for m in _TOKEN.finditer(data):
        if m.start() != end:
            break
        end = m.end()
        if m.lastgroup != "ws":
            tokens.append((m.lastgroup, m.group()))
    if end != len(data):
        raise DecodeError(f"text format: cannot read {data[end:end + 40]!r}")
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else (None, None)

    def take():
        nonlocal pos
        if pos >= len(tokens):
            raise DecodeError("text format: unexpected end")
        pos += 1
        return tokens[pos - 1]

    def message(closer):
        msg = {}
        while True:
            kind, tok = peek()
            if kind is None:
                if closer is None:
                    return msg
                raise DecodeError(f"text format: missing {closer.decode()}")
            if kind == "punct" and tok == closer:
                take()
                return msg
            take()
            if kind == "ident" or (kind == "num" and re.fullmatch(rb"\d+|[a-z]+", tok)):
                name = tok.decode()  # digits: an unknown field, which protoc prints by number
            elif kind == "punct" and tok == b"[":  # [an.extension] or [type.googleapis.com/x.Y]
                parts = []
                while peek() != ("punct", b"]"):
                    parts.append(take()[1].decode())
                take()
                name = "[" + "".join(parts) + "]"
            else:
                raise DecodeError(f"text format: expected a field name, got {tok!r}")
            kind, tok = peek()
            colon = kind == "punct" and tok == b":"
            if colon:
                take()
                kind, tok = peek()
            if kind == "punct" and tok in (b"{", b"<"):
                take()
                msg.setdefault(name, []).append(message(b"}" if tok == b"{" else b">"))
            elif colon and kind == "punct" and tok == b"[":
                take()  # a list: name: [v, v, ...]
                while True:
                    kind, tok = peek()
                    if kind == "punct" and tok == b"]":
                        take()
                        break
                    if kind == "punct" and tok in (b"{", b"<"):
                        take()
                        msg.setdefault(name, []).append(message(b"}" if tok == b"{" else b">"))
                    else:
                        msg.setdefault(name, []).append(scalar())
            elif colon:
                msg.setdefault(name, []).append(scalar())
            else:
                raise DecodeError(f"text format: field {name} has neither ':' nor a message")

    def scalar():
        kind, tok = take()
        if kind == "str":
            value = unescape_c(tok[1:-1])
            while peek()[0] == "str":  # adjacent literals concatenate
                value += unescape_c(take()[1][1:-1])
            return value
        if kind == "num":
            return _number(tok)
        if kind == "ident":
            word = tok.decode()
            if word in ("true", "True", "t"):
                return True
            if word in ("false", "False", "f"):
                return False
            if word.lower() in ("inf", "infinity", "nan"):
                return float(word)
            return word
        raise DecodeError(f"text format: expected a value, got {tok!r}")

    return message(None)


def _one(msg, name, default=None):
    """A singular field of a parse_text_format message (the last one wins)."""
    values = msg.get(name)
    return values[-1] if values else default


def _text(value):
    """A string field's value: text format carries the UTF-8 bytes."""
    if value is None:
        return ""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"a string field is not valid UTF-8 ({e}): {value!r}") from None


def text_escape(data):
    """bytes -> a text-format string literal (with quotes), every byte that
    is not printable ASCII as \\NNN octal: for writing protoc --encode input."""
    out = ['"']
    for b in data:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------- running protoc and go

def _body_of(x):
    return x.body if isinstance(x, RecordedRequest) else bytes(x)


def _protoc():
    path = shutil.which("protoc")
    if not path:
        raise ToolMissing("protoc is not installed (Debian's protobuf-compiler; scripts/setup-tests.sh)")
    return path


def _go():
    path = shutil.which("go")
    if not path:
        raise ToolMissing("go is not installed (Debian's golang-go, for `go tool pprof`; "
                          "scripts/setup-tests.sh)")
    return path


def protoc_decode(body, message_type, include_dir, proto_file):
    """protoc --decode's text output (bytes) for a packed message."""
    if not os.path.exists(os.path.join(include_dir, proto_file)):
        raise FileNotFoundError(f"no {proto_file} under {include_dir}")
    r = subprocess.run([_protoc(), f"--decode={message_type}", "-I", include_dir, proto_file],
                       input=_body_of(body), capture_output=True, timeout=TOOL_TIMEOUT_S)
    if r.returncode != 0:
        raise DecodeError(f"protoc --decode={message_type} refused {len(_body_of(body))} bytes: "
                          f"{r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def protoc_encode(text, message_type, include_dir, proto_file):
    """protoc --encode: text format -> packed bytes (for building test input)."""
    r = subprocess.run([_protoc(), f"--encode={message_type}", "-I", include_dir, proto_file],
                       input=text.encode() if isinstance(text, str) else text,
                       capture_output=True, timeout=TOOL_TIMEOUT_S)
    if r.returncode != 0:
        raise DecodeError(f"protoc --encode={message_type}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


# ---------------------------------------------------------------- Pyroscope push

def decode_push(body, proto_dir=PUSH_PROTO_DIR):
    """A push.v1.PushRequest (bytes or a RecordedRequest), read by protoc
    --decode: a list of series, each {"labels": {name: value},
    "label_pairs": [(name, value), ...] (as sent: order, duplicates),
    "samples": [{"id": str, "raw_profile": bytes}, ...]}."""
    msg = parse_text_format(protoc_decode(body, "push.v1.PushRequest", proto_dir, "pyroscope.proto"))
    series = []
    for s in msg.get("series", []):
        pairs = [(_text(_one(lp, "name")), _text(_one(lp, "value"))) for lp in s.get("labels", [])]
        samples = [{"id": _text(_one(rs, "ID")), "raw_profile": _one(rs, "raw_profile", b"")}
                   for rs in s.get("samples", [])]
        series.append({"labels": dict(pairs), "label_pairs": pairs, "samples": samples})
    return series


# ---------------------------------------------------------------- pprof via go tool pprof -raw

class PprofProfile(list):
    """The samples of a pprof profile as `go tool pprof -raw` prints them (a
    list), with the profile's header as attributes:
      sample_types        [(type, unit), ...]
      default_sample_type type marked [dflt], or None
      period_type         (type, unit) or None; period: int
      time_nanos          int or None (from "Time:", printed in UTC)
      duration            the "Duration:" text: Go prints it with %.4v, i.e.
                          cut to 4 characters ("10s", "1m0s", but "10.5" for
                          10.5 s); duration_nanos: that text read best-effort
                          (None if unreadable), exact only when not cut
      comments            [str]
      locations           {id: [{"name", "file", "line", "start_line",
                          "system_name"}, ...] (lines, inlined first)}
      text                -raw's whole output; warnings: its stderr
    -raw (like every pprof report) merges samples with the same stack and
    labels, and renumbers locations."""
    sample_types: list
    default_sample_type: str | None
    period_type: tuple | None
    period: int
    time_nanos: int | None
    duration: str | None
    duration_nanos: int | None
    comments: list
    locations: dict
    text: str
    warnings: str


_SAMPLE_LINE = re.compile(r"^((?: +-?\d+)+): ((?:\d+ )*)$")
_LOCATION_LINE = re.compile(r"^ *(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(\[F\] )?(.*)$")
_LINE_TEXT = re.compile(r"^(.*):(-?\d+) s=(-?\d+)(?:\((.*)\))?$", re.S)
_LABEL = re.compile(r"(\S+?):\[(.*?)\](?= \S+?:\[|$)")
_GO_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))? ([+-])(\d\d)(\d\d)")
_DURATION_UNITS = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3,
                   "µs": 10**3, "μs": 10**3, "ns": 1}
_NEXT_UNIT = {"h": "m", "m": "s"}


def _go_duration_ns(text):
    """Best effort on a Go duration string that %.4v may have cut."""
    parts = re.findall(r"(\d+(?:\.\d*)?)(h|ms|us|µs|μs|ns|m|s)?", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    total, prev = 0.0, None
    for num, unit in parts:
        if not unit:
            unit = _NEXT_UNIT.get(prev)  # "1m0." -> the cut part is seconds
            if unit is None:
                return None
        total += float(num) * _DURATION_UNITS[unit]
        prev = unit
    return round(total)


def _go_time_ns(text):
    m = _GO_TIME.match(text)
    if not m:
        return None
    y, mo, d, hh, mm, ss, frac, sign, oh, om = m.groups()
    secs = calendar.timegm((int(y), int(mo), int(d), int(hh), int(mm), int(ss)))
    secs -= (1 if sign == "+" else -1) * (int(oh) * 3600 + int(om) * 60)
    return secs * 10**9 + int((frac or "0").ljust(9, "0")[:9])


def _parse_line_text(text):
    """"NAME FILE:LINE s=START[(SYSTEM_NAME)]" -> a dict. A name or file
    with spaces makes the split ambiguous: the file is taken as what follows
    the last " /" (an absolute path) or else the last space; an empty file
    leaves "NAME :LINE"."""
    if text == "??":
        return {"name": "??", "file": "", "line": 0, "start_line": 0, "system_name": "??"}
    m = _LINE_TEXT.match(text)
    if not m:
        raise DecodeError(f"go tool pprof -raw: unexpected location line {text!r}")
    head, line, start, system = m.groups()
    if head.endswith(" "):
        name, file = head[:-1], ""
    elif " /" in head:
        name, _, file = head.rpartition(" /")
        file = "/" + file
    else:
        name, _, file = head.rpartition(" ")
    return {"name": name, "file": file, "line": int(line), "start_line": int(start),
            "system_name": name if system is None else system}


def _parse_label_line(line):
    body = line.strip()
    pairs = _LABEL.findall(body)
    if not pairs or " ".join(f"{k}:[{v}]" for k, v in pairs) != body:
        raise DecodeError(f"go tool pprof -raw: unexpected label line {line!r}")
    return pairs


def _numeric_value(v):
    """"12" -> (12, None); "12 bytes" -> (12, "bytes"); lists -> lists."""
    m = re.fullmatch(r"(-?\d+)(?: (\S+))?", v)
    if m:
        return int(m.group(1)), m.group(2)
    toks = v.split(" ")
    if all(re.fullmatch(r"-?\d+", t) for t in toks):
        return [int(t) for t in toks], None
    if len(toks) % 2 == 0 and all(re.fullmatch(r"-?\d+", t) for t in toks[::2]):
        return [int(t) for t in toks[::2]], toks[1]
    return None


def pprof_raw_text(data):
    """`go tool pprof -raw -symbolize=none` on a (gzipped or not) pprof:
    (stdout, stderr). Runs in a temp dir with TZ=UTC and GOTOOLCHAIN=local,
    so nothing is fetched or written outside it."""
    go = _go()
    with tempfile.TemporaryDirectory(prefix="push-receiver-pprof.") as tmp:
        path = os.path.join(tmp, "profile.pb.gz")
        with open(path, "wb") as f:
            f.write(data)
        env = {**os.environ, "TZ": "UTC", "GOTOOLCHAIN": "local", "PPROF_TMPDIR": tmp,
               "GOCACHE": os.path.join(tmp, "gocache"), "GOFLAGS": ""}
        if not os.access(env.get("HOME", "/nonexistent"), os.W_OK):
            env["HOME"] = tmp
        r = subprocess.run([go, "tool", "pprof", "-raw", "-symbolize=none", path], cwd=tmp, env=env,
                           capture_output=True, text=True, errors="surrogateescape",
                           timeout=TOOL_TIMEOUT_S)
    if r.returncode != 0:
        raise DecodeError(f"go tool pprof -raw refused the profile ({len(data)} bytes): {r.stderr.strip()}")
    return r.stdout, r.stderr


def pprof_samples(data):
    """A pprof profile (bytes, gzipped or not), read by Go's pprof (-raw):
    a PprofProfile, i.e. a list of samples, each
      {"values": [int per sample type], "stack": [frame names, leaf first;
       an inlined frame before its caller; "0x..." for a location without
       lines], "locations": [location ids], "labels": {str: str},
       "numlabels": {str: int}, "numunits": {str: unit}}
    with the header as attributes (see PprofProfile). A label key with
    several values keeps them space-joined (str) or as a list (num): -raw
    prints them alike."""
    text, warnings = pprof_raw_text(data)
    prof = PprofProfile()
    prof.sample_types, prof.default_sample_type, prof.period_type, prof.period = [], None, None, 0
    prof.time_nanos = prof.duration = prof.duration_nanos = None
    prof.comments, prof.locations, prof.text, prof.warnings = [], {}, text, warnings
    addresses = {}
    label_lines = []   # (sample, [parsed label lines]), classified once all keys are seen
    section, last_loc = "header", None
    for line in text.split("\n"):
        if line in ("Samples:", "Locations", "Mappings"):
            section = "sample types" if line == "Samples:" else line
        elif section == "sample types":  # the line after "Samples:", even if empty
            for tok in line.split():
                t, _, u = tok.removesuffix("[dflt]").rpartition("/")
                prof.sample_types.append((t, u))
                if tok.endswith("[dflt]"):
                    prof.default_sample_type = t
            section = "Samples:"
        elif not line or section == "Mappings":
            continue
        elif section == "header":
            key, _, value = line.partition(": ")
            if key == "Comment":
                prof.comments.append(value)
            elif key == "PeriodType":
                t, _, u = value.partition(" ")
                prof.period_type = (t, u) if (t or u) else None
            elif key == "Period":
                prof.period = int(value)
            elif key == "Time":
                prof.time_nanos = _go_time_ns(value)
            elif key == "Duration":
                prof.duration, prof.duration_nanos = value, _go_duration_ns(value)
            else:
                raise DecodeError(f"go tool pprof -raw: unexpected header line {line!r}")
        elif section == "Samples:":
            m = _SAMPLE_LINE.match(line)
            if m:
                prof.append({"values": [int(v) for v in m.group(1).split()],
                             "locations": [int(x) for x in m.group(2).split()],
                             "stack": [], "labels": {}, "numlabels": {}, "numunits": {}})
                label_lines.append((prof[-1], []))
            elif line.startswith(" " * 16) and label_lines:
                label_lines[-1][1].append(_parse_label_line(line))
            else:
                raise DecodeError(f"go tool pprof -raw: unexpected sample line {line!r}")
        elif section == "Locations":
            m = _LOCATION_LINE.match(line)
            if m:
                last_loc = int(m.group(1))
                addresses[last_loc] = int(m.group(2), 16)
                prof.locations[last_loc] = [_parse_line_text(m.group(5))] if m.group(5) else []
            elif line.startswith(" " * 13) and last_loc is not None:
                prof.locations[last_loc].append(_parse_line_text(line[13:]))
            else:
                raise DecodeError(f"go tool pprof -raw: unexpected location line {line!r}")

    # A sample prints its string labels on one line and its numeric ones on
    # the next, each only when it has some: a lone line is told apart by its
    # keys, as seen in two-line samples, or else by its values' look.
    string_keys, numeric_keys = set(), set()
    for _, lines in label_lines:
        if len(lines) == 2:
            string_keys.update(k for k, _ in lines[0])
            numeric_keys.update(k for k, _ in lines[1])
    for sample, lines in label_lines:
        if len(lines) > 2:
            raise DecodeError(f"go tool pprof -raw: {len(lines)} label lines under one sample")
        if len(lines) == 2:
            str_pairs, num_pairs = lines
        elif len(lines) == 1:
            keys = {k for k, _ in lines[0]}
            if keys & string_keys:
                numeric = False
            elif keys & numeric_keys:
                numeric = True
            else:
                numeric = all(_numeric_value(v) is not None for _, v in lines[0])
            str_pairs, num_pairs = ([], lines[0]) if numeric else (lines[0], [])
        else:
            str_pairs, num_pairs = [], []
        sample["labels"] = dict(str_pairs)
        for k, v in num_pairs:
            parsed = _numeric_value(v)
            if parsed is None:
                raise DecodeError(f"go tool pprof -raw: numeric label {k}:[{v}] is not a number")
            sample["numlabels"][k] = parsed[0]
            if parsed[1] is not None:
                sample["numunits"][k] = parsed[1]
        for loc in sample["locations"]:
            lines_ = prof.locations.get(loc)
            if lines_ is None:
                raise DecodeError(f"go tool pprof -raw: sample names location {loc}, not listed")
            sample["stack"] += [ln["name"] for ln in lines_] or [hex(addresses.get(loc, 0))]
    return prof


# ---------------------------------------------------------------- legacy ingest

def parse_app_name(name):
    """Pyroscope's "APP{k=v,k2=v2}" -> (APP, {k: v}); no braces: no labels."""
    m = re.fullmatch(r"([^{}]*)(?:\{(.*)\})?", name, re.S)
    if not m:
        raise DecodeError(f"ingest: bad name {name!r}")
    labels = {}
    for part in (m.group(2) or "").split(","):
        if not part.strip():
            continue
        k, eq, v = part.partition("=")
        if not eq:
            raise DecodeError(f"ingest: label {part!r} of {name!r} has no '='")
        labels[k.strip()] = v.strip()
    return m.group(1), labels


def decode_ingest(request):
    """A recorded /ingest request: {"app": str, "labels": {k: v}, "from": int,
    "until": int, "format": str, "query": {all parameters}, "profile":
    pprof_samples(body)} ("profile" None when format is not pprof)."""
    q = request.query
    if "name" not in q:
        raise DecodeError(f"ingest: no name in {request.query_string!r}")
    app, labels = parse_app_name(q["name"])
    fmt = q.get("format", "")
    try:
        frm, until = int(q["from"]), int(q["until"])
    except (KeyError, ValueError) as e:
        raise DecodeError(f"ingest: from/until in {request.query_string!r}: {e}") from None
    return {"app": app, "labels": labels, "from": frm, "until": until, "format": fmt, "query": dict(q),
            "profile": pprof_samples(request.body) if fmt == "pprof" else None}


# ---------------------------------------------------------------- OTLP profiles

_ZERO_CHECKED_TABLES = ("mapping_table", "location_table", "function_table", "link_table",
                        "string_table", "attribute_table", "stack_table")
# The spec prefers this link_table[0] to Link{} ("better compatibility with
# codecs"): ids of zero bytes, as trace.proto calls invalid.
_ZERO_LINK = {"trace_id": [bytes(16)], "span_id": [bytes(8)]}


def decode_otlp(body, proto_dir=OTLP_PROTO_DIR, strict=True):
    """An ExportProfilesServiceRequest (bytes or a RecordedRequest) of
    opentelemetry-proto v1.11.0, read by protoc --decode against the .proto
    files under proto_dir, with the dictionary resolved: a list of profiles,
    each {"resource": {key: value}, "scope": name, "scope_version": str,
    "sample_type": (type, unit), "period_type": (type, unit), "period": int,
    "time_unix_nano": int, "duration_nano": int, "profile_id": bytes,
    "attributes": {key: value}, "attribute_units": {key: unit},
    "original_payload_format": str, "samples": [{"values": [int],
    "timestamps_unix_nano": [int], "stack": [function names, as the Stack
    lists them: leaf first, inlined before caller; "0x..." for a location
    without lines], "attributes": {key: value}, "link": None or
    {"trace_id": bytes, "span_id": bytes}}]}. Values: str, int, float, bool,
    bytes, list, dict. strict: every table's entry 0 must be present and the
    zero value, as the spec says (DecodeError otherwise)."""
    msg = parse_text_format(protoc_decode(body, OTLP_REQUEST, proto_dir, OTLP_SERVICE_PROTO))
    d = _one(msg, "dictionary", {})
    strings = [_text(s) for s in d.get("string_table", [])]
    if strict:
        bad = []
        for table in _ZERO_CHECKED_TABLES:
            entries = d.get(table, [])
            if not entries:
                bad.append(f"{table} has no entry 0")
            elif entries[0] not in ({}, b"") and not (table == "link_table"
                                                      and entries[0] == _ZERO_LINK):
                bad.append(f"{table}[0] is not the zero value: {entries[0]!r}")
        if bad:
            raise DecodeError("OTLP dictionary: " + "; ".join(bad))

    def at(table, index, what):
        entries = d.get(table, [])
        if index == 0 and not entries:
            return {}
        if not 0 <= index < len(entries):
            raise DecodeError(f"OTLP: {what} index {index} outside {table} ({len(entries)} entries)")
        return entries[index]

    def string(index):
        if index == 0 and not strings:
            return ""
        if not 0 <= index < len(strings):
            raise DecodeError(f"OTLP: string index {index} outside string_table ({len(strings)})")
        return strings[index]

    def any_value(v):
        if v is None or v == {}:
            return None
        if "string_value" in v:
            return _text(_one(v, "string_value"))
        if "string_value_strindex" in v:
            return string(_one(v, "string_value_strindex"))
        if "bool_value" in v:
            return _one(v, "bool_value")
        if "int_value" in v:
            return _one(v, "int_value")
        if "double_value" in v:
            return float(_one(v, "double_value"))
        if "bytes_value" in v:
            return _one(v, "bytes_value")
        if "array_value" in v:
            return [any_value(x) for x in _one(v, "array_value").get("values", [])]
        if "kvlist_value" in v:
            return key_values(_one(v, "kvlist_value").get("values", []))
        raise DecodeError(f"OTLP: AnyValue with unknown content {v!r}")

    def key_values(kvs):
        out = {}
        for kv in kvs:
            key = _text(_one(kv, "key")) if "key" in kv else string(_one(kv, "key_strindex", 0))
            out[key] = any_value(_one(kv, "value"))
        return out

    def attributes(indices):
        values, units = {}, {}
        for i in indices:
            kvu = at("attribute_table", i, "attribute")
            key = string(_one(kvu, "key_strindex", 0))
            values[key] = any_value(_one(kvu, "value"))
            if _one(kvu, "unit_strindex", 0):
                units[key] = string(_one(kvu, "unit_strindex"))
        return values, units

    def value_type(vt):
        vt = vt or {}
        return (string(_one(vt, "type_strindex", 0)), string(_one(vt, "unit_strindex", 0)))

    def stack(index):
        names = []
        for li in at("stack_table", index, "stack").get("location_indices", []):
            loc = at("location_table", li, "location")
            lines = loc.get("lines", [])
            if not lines:
                names.append(hex(_one(loc, "address", 0)))
            for line in lines:
                fn = at("function_table", _one(line, "function_index", 0), "function")
                names.append(string(_one(fn, "name_strindex", 0)))
        return names

    profiles = []
    for rp in msg.get("resource_profiles", []):
        resource = key_values(_one(rp, "resource", {}).get("attributes", []))
        for sp in rp.get("scope_profiles", []):
            scope = _one(sp, "scope", {})
            for p in sp.get("profiles", []):
                attrs, units = attributes(p.get("attribute_indices", []))
                samples = []
                for s in p.get("samples", []):
                    s_attrs, s_units = attributes(s.get("attribute_indices", []))
                    link = None
                    if _one(s, "link_index", 0):
                        lk = at("link_table", _one(s, "link_index"), "link")
                        link = {"trace_id": _one(lk, "trace_id", b""), "span_id": _one(lk, "span_id", b"")}
                    samples.append({"values": list(s.get("values", [])),
                                    "timestamps_unix_nano": list(s.get("timestamps_unix_nano", [])),
                                    "stack": stack(_one(s, "stack_index", 0)),
                                    "attributes": s_attrs, "attribute_units": s_units, "link": link})
                profiles.append({
                    "resource": resource,
                    "scope": _text(_one(scope, "name")), "scope_version": _text(_one(scope, "version")),
                    "sample_type": value_type(_one(p, "sample_type")),
                    "period_type": value_type(_one(p, "period_type")),
                    "period": _one(p, "period", 0),
                    "time_unix_nano": _one(p, "time_unix_nano", 0),
                    "duration_nano": _one(p, "duration_nano", 0),
                    "profile_id": _one(p, "profile_id", b""),
                    "attributes": attrs, "attribute_units": units,
                    "original_payload_format": _text(_one(p, "original_payload_format")),
                    "samples": samples})
    return profiles


# ================================================================ self-check

# pprof's profile.proto (github.com/google/pprof/proto/profile.proto), written
# from its published field numbers: only to build test profiles with protoc
# --encode; the reader under test is go tool pprof.
PPROF_PROTO = """syntax = "proto3";
package perftools.profiles;
message Profile {
  repeated ValueType sample_type = 1; repeated Sample sample = 2; repeated Mapping mapping = 3;
  repeated Location location = 4; repeated Function function = 5; repeated string string_table = 6;
  int64 drop_frames = 7; int64 keep_frames = 8; int64 time_nanos = 9; int64 duration_nanos = 10;
  ValueType period_type = 11; int64 period = 12; repeated int64 comment = 13;
  int64 default_sample_type = 14;
}
message ValueType { int64 type = 1; int64 unit = 2; }
message Sample { repeated uint64 location_id = 1; repeated int64 value = 2; repeated Label label = 3; }
message Label { int64 key = 1; int64 str = 2; int64 num = 3; int64 num_unit = 4; }
message Mapping { uint64 id = 1; uint64 memory_start = 2; uint64 memory_limit = 3; uint64 file_offset = 4;
  int64 filename = 5; int64 build_id = 6; bool has_functions = 7; bool has_filenames = 8;
  bool has_line_numbers = 9; bool has_inline_frames = 10; }
message Location { uint64 id = 1; uint64 mapping_id = 2; uint64 address = 3; repeated Line line = 4;
  bool is_folded = 5; }
message Line { uint64 function_id = 1; int64 line = 2; int64 column = 3; }
message Function { uint64 id = 1; int64 name = 2; int64 system_name = 3; int64 filename = 4;
  int64 start_line = 5; }
"""


def build_pprof(tmp, samples, sample_types, default_type=None, period_type=None, period=0,
                time_nanos=0, duration_nanos=0, comments=()):
    """A gzipped pprof built with protoc --encode from a plain description:
    samples [{"values", "stack" (leaf first; a tuple = one location with
    inlined frames, innermost first), "labels" {k: str}, "numlabels" {k: int
    or (int, unit)}}]. For tests of the readers, not of offcpud."""
    strings = [""]

    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)

    functions, locations, lines = {}, {}, []
    for st, unit in sample_types:
        lines.append(f"sample_type {{ type: {s(st)} unit: {s(unit)} }}")
    for smp in samples:
        loc_ids = []
        for frame in smp["stack"]:
            names = frame if isinstance(frame, tuple) else (frame,)
            for n in names:
                functions.setdefault(n, len(functions) + 1)
            locations.setdefault(names, len(locations) + 1)
            loc_ids.append(locations[names])
        labels = [f"label {{ key: {s(k)} str: {s(v)} }}" for k, v in smp.get("labels", {}).items()]
        for k, v in smp.get("numlabels", {}).items():
            num, unit = v if isinstance(v, tuple) else (v, None)
            labels.append(f"label {{ key: {s(k)} num: {num}" + (f" num_unit: {s(unit)}" if unit else "") + " }")
        lines.append("sample { " + " ".join(f"location_id: {i}" for i in loc_ids) + " "
                     + " ".join(f"value: {v}" for v in smp["values"]) + " " + " ".join(labels) + " }")
    lines.append("mapping { id: 1 has_functions: true }")
    for names, lid in locations.items():
        lines.append(f"location {{ id: {lid} mapping_id: 1 "
                     + " ".join(f"line {{ function_id: {functions[n]} }}" for n in names) + " }")
    for n, fid in functions.items():
        lines.append(f"function {{ id: {fid} name: {s(n)} system_name: {s(n)} }}")
    if period_type:
        lines.append(f"period_type {{ type: {s(period_type[0])} unit: {s(period_type[1])} }}")
    if default_type:
        lines.append(f"default_sample_type: {s(default_type)}")
    lines += [f"comment: {s(c)}" for c in comments]
    lines += [f"period: {period}", f"time_nanos: {time_nanos}", f"duration_nanos: {duration_nanos}"]
    lines += [f"string_table: {text_escape(x.encode())}" for x in strings]
    with open(os.path.join(tmp, "profile.proto"), "w") as f:
        f.write(PPROF_PROTO)
    return gzip.compress(protoc_encode("\n".join(lines), "perftools.profiles.Profile", tmp, "profile.proto"))


class _SelfCheck:
    """The checks of `python3 push_receiver.py`: known messages encoded with
    protoc --encode, sent through a started Receiver, decoded back."""

    def __init__(self, otlp_dir):
        self.otlp_dir = otlp_dir
        self.failures = 0
        self.tmp = tempfile.mkdtemp(prefix="push-receiver-check.")

    def run(self, name, fn):
        t = time.monotonic()
        try:
            note = fn()
        except Exception as e:  # noqa: BLE001: report and go on
            self.failures += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            return
        print(f"ok   {name} ({time.monotonic() - t:.2f} s){': ' + note if note else ''}")

    # -- the expected values

    WEIRD = bytes([0, 1, 0x7F, 0x80, 0x9F, 0xC3, 0xFF, 0x22, 0x27, 0x5C, 0x0A, 0x0D, 0x09]) + b"\\x41\\101?"

    def push_text(self, raw_profile, raw2):
        return (
            "series {\n"
            '  labels { name: "__name__" value: "offcpu" }\n'
            '  labels { name: "service_name" value: "db \\"main\\" \\\\ h\\303\\251" }\n'
            '  labels { name: "host" value: "h\\n2\\t" }\n'
            f"  samples {{ raw_profile: {text_escape(raw_profile)} ID: \"7c9e6679-7425-40de-944b-e07fc1f90ae7\" }}\n"
            "}\n"
            "series {\n"
            '  labels { name: "__name__" value: "wakeup" }\n'
            f"  samples {{ raw_profile: {text_escape(raw2)} ID: \"a\" }}\n"
            '  samples { ID: "" }\n'
            "}\n")

    def expected_push(self, raw_profile, raw2):
        pairs1 = [("__name__", "offcpu"), ("service_name", 'db "main" \\ hé'), ("host", "h\n2\t")]
        return [{"labels": dict(pairs1), "label_pairs": pairs1,
                 "samples": [{"id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "raw_profile": raw_profile}]},
                {"labels": {"__name__": "wakeup"}, "label_pairs": [("__name__", "wakeup")],
                 "samples": [{"id": "a", "raw_profile": raw2}, {"id": "", "raw_profile": b""}]}]

    PPROF_SAMPLES = [
        {"values": [3, 3000], "stack": ["schedule", ("inner_inlined", "io_wait"), "main"],
         "labels": {"comm": "my app [x]", "state": "S", "kind": "offcpu"},
         "numlabels": {"pid": 1234, "tid": 1235}},
        {"values": [1, 500], "stack": ["futex_wait", "main"],
         "labels": {"comm": "other", "state": "D", "kind": "offcpu", "cgroup": "/system.slice/x.service"},
         "numlabels": {"pid": 99, "tid": (100, "id")}},
        {"values": [7, 70], "stack": ["std::vector<int>::push_back(int const&)", "ns::f :x"],
         "labels": {"comm": "4242"}},
        {"values": [2, 20], "stack": ["main"], "numlabels": {"pid": 5}},
    ]

    def check_pprof(self):
        data = build_pprof(self.tmp, self.PPROF_SAMPLES, [("blocks", "count"), ("off_cpu", "nanoseconds")],
                           default_type="off_cpu", period_type=("off_cpu", "nanoseconds"), period=1,
                           time_nanos=1700000000123456789, duration_nanos=60 * 10**9,
                           comments=["offcpud window", "second comment"])
        prof = pprof_samples(data)
        assert prof.sample_types == [("blocks", "count"), ("off_cpu", "nanoseconds")], prof.sample_types
        assert prof.default_sample_type == "off_cpu", prof.default_sample_type
        assert prof.period_type == ("off_cpu", "nanoseconds") and prof.period == 1
        assert prof.time_nanos == 1700000000123456789, prof.time_nanos
        assert (prof.duration, prof.duration_nanos) == ("1m0s", 60 * 10**9), prof.duration
        assert prof.comments == ["offcpud window", "second comment"], prof.comments
        assert not prof.warnings.strip(), prof.warnings
        got = [{k: smp[k] for k in ("values", "stack", "labels", "numlabels", "numunits")} for smp in prof]
        want = []
        for smp in self.PPROF_SAMPLES:
            stack = [n for f in smp["stack"] for n in (f if isinstance(f, tuple) else (f,))]
            nums = {k: (v[0] if isinstance(v, tuple) else v) for k, v in smp.get("numlabels", {}).items()}
            units = {k: v[1] for k, v in smp.get("numlabels", {}).items() if isinstance(v, tuple)}
            want.append({"values": smp["values"], "stack": stack, "labels": smp.get("labels", {}),
                         "numlabels": nums, "numunits": units})
        assert got == want, f"\n got  {got}\n want {want}"
        self.pprof = data
        return "-raw: " + " | ".join(prof.text.splitlines()[:9])

    def check_offcpuctl_pprof(self):
        ctl = os.path.join(os.environ.get("OFFCPU_BUILD_DIR", os.path.join(REPO, "build")), "ctl", "offcpuctl")
        if not os.access(ctl, os.X_OK):
            return f"skipped: no {ctl}"
        folded = os.path.join(self.tmp, "in.folded")
        out = os.path.join(self.tmp, "out.pb.gz")
        with open(folded, "w") as f:
            f.write("app;main;work;sleep 100\napp;main;idle 50\n")
        subprocess.run([ctl, "flamegraph", "--format", "pprof", "-o", out, folded], check=True,
                       capture_output=True, timeout=30)
        with open(out, "rb") as f:
            prof = pprof_samples(f.read())
        got = sorted((smp["stack"], smp["values"]) for smp in prof)
        assert got == [(["idle", "main", "app"], [50]), (["sleep", "work", "main", "app"], [100])], got
        return "offcpuctl flamegraph --format pprof read back"

    def check_text_format(self):
        cases = {
            rb'a: "\000\1\12\x41\x7g\"\'\\" b: -5 c: 1.5e3 d: true e: ENUM_X f { g: 0x10 } f <> 7: "u"':
                {"a": [b"\x00\x01\x0aA\x07g\"'\\"], "b": [-5], "c": [1500.0], "d": [True], "e": ["ENUM_X"],
                 "f": [{"g": [16]}, {}], "7": [b"u"]},
            b'x: [1, 2, 3] y: "a" "b" z: -inf': {"x": [1, 2, 3], "y": [b"ab"], "z": [float("-inf")]},
        }
        for text, want in cases.items():
            got = parse_text_format(text)
            assert got == want, f"{text!r}: got {got}"
        for bad in (b"a {", b'a: "x', b"a b", b"a: }"):
            try:
                parse_text_format(bad)
            except DecodeError:
                continue
            raise AssertionError(f"parse_text_format accepted {bad!r}")

    def check_push(self, rx):
        raw2 = bytes(range(256))
        body = protoc_encode(self.push_text(self.WEIRD + self.pprof, raw2), "push.v1.PushRequest",
                             PUSH_PROTO_DIR, "pyroscope.proto")
        status, headers, resp = post(rx.url + PUSH_PATH, body, {"Content-Type": "application/proto",
                                                                "X-Scope-OrgID": "tenant-1",
                                                                "Authorization": "Bearer t0k"})
        assert (status, resp) == (200, b""), (status, resp)
        assert headers["Content-Type"] == "application/proto", headers["Content-Type"]
        rec = rx.requests(path=PUSH_PATH)[-1]
        assert rec.status == 200 and rec.headers["x-scope-orgid"] == "tenant-1"
        assert rec.headers["Authorization"] == "Bearer t0k"
        got = decode_push(rec)
        want = self.expected_push(self.WEIRD + self.pprof, raw2)
        assert got == want, f"\n got  {got}\n want {want}"
        assert decode_push(b"") == []
        prof = pprof_samples(got[0]["samples"][0]["raw_profile"][len(self.WEIRD):])
        assert [s["values"] for s in prof] == [s["values"] for s in self.PPROF_SAMPLES]
        self.push_body = body

    def check_faults(self, rx):
        url = rx.url + PUSH_PATH
        ctype = {"Content-Type": "application/proto"}
        rx.clear()
        rx.fail_next(2, 500)
        answers = [post(url, self.push_body, ctype) for _ in range(3)]
        assert [a[0] for a in answers] == [500, 500, 200], [a[0] for a in answers]
        err = json.loads(answers[0][2])
        assert err["code"] == "internal" and err["message"], err
        assert answers[0][1]["Content-Type"] == "application/json"
        recs = rx.wait_for_requests(3, endpoint="push", timeout=2)
        assert recs == rx.wait_for(lambda rs: rx.requests(path=PUSH_PATH), timeout=2)
        assert [(r.status, r.injected) for r in recs] == [(500, True), (500, True), (200, False)]
        assert recs[0].monotonic <= recs[1].monotonic <= recs[2].monotonic

        rx.fail_next(1, 429, headers={"Retry-After": "3"})
        status, headers, resp = post(url, self.push_body, ctype)
        assert status == 429 and headers["Retry-After"] == "3", (status, dict(headers))
        assert json.loads(resp)["code"] == "resource_exhausted", resp

        rx.fail_next(1, 400, message="series 0: bad label")
        status, _, resp = post(url, self.push_body, ctype)
        assert (status, json.loads(resp)) == (400, {"code": "invalid_argument",
                                                     "message": "series 0: bad label"}), (status, resp)
        rx.fail_next(1, 503, body="overloaded")
        status, _, resp = post(rx.url + INGEST_PATH + "?name=a&from=1&until=2&format=pprof", self.pprof)
        assert (status, resp) == (503, b"overloaded"), (status, resp)

        status, headers, resp = post(url, self.push_body, {"Content-Type": "application/json"})
        assert (status, resp, headers["Accept-Post"]) == (415, b"", "application/proto"), (status, resp)
        status, _, _ = post(rx.url + "/nope", b"x")
        assert status == 404
        status, headers, _ = post(url, None, method="GET")
        assert status == 405 and headers["Allow"] == "POST"

        rx.delay(0.3)
        rx.clear()
        t = time.monotonic()
        slow = threading.Thread(target=lambda: setattr(self, "slow", post(url, self.push_body, ctype)))
        slow.start()
        held = rx.wait_for_requests(1, answered=False, timeout=2)
        assert held[0].status is None, "a held request is recorded before its answer"
        slow.join()
        took = time.monotonic() - t
        rx.delay(0)
        assert self.slow[0] == 200 and took >= 0.3, (self.slow[0], took)
        assert rx.requests()[0].answered_at - rx.requests()[0].time >= 0.3
        try:
            rx.wait_for(lambda rs: len(rs) > 5, timeout=0.1)
        except TimeoutError:
            pass
        else:
            raise AssertionError("wait_for did not time out")

        rx.required_authorization = "Basic dTpw"
        status, _, resp = post(url, self.push_body, ctype)
        assert status == 401 and json.loads(resp)["code"] == "unauthenticated", (status, resp)
        status, _, _ = post(url, self.push_body, {**ctype, "Authorization": "Basic dTpw"})
        rx.required_authorization = None
        assert status == 200, status
        return f"{len(rx.requests())} requests recorded"

    def check_down_up(self, rx):
        url, port = rx.url + PUSH_PATH, rx.port
        ctype = {"Content-Type": "application/proto"}
        kept = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        kept.request("POST", PUSH_PATH, self.push_body, ctype)
        assert kept.getresponse().read() == b""
        kept.request("POST", PUSH_PATH, self.push_body, ctype)
        resp = kept.getresponse()
        resp.read()
        assert resp.status == 200
        conns = {r.connection for r in rx.requests()[-2:]}
        assert len(conns) == 1, "keep-alive connection not reused"
        before = len(rx.requests())
        rx.go_down()
        try:
            post(url, self.push_body, ctype)
        except ConnectionRefusedError:
            pass
        else:
            raise AssertionError("a request got through while the receiver was down")
        try:
            kept.request("POST", PUSH_PATH, self.push_body, ctype)
            kept.getresponse()
        except (OSError, http.client.HTTPException):
            pass
        else:
            raise AssertionError("the kept-alive connection still answered while down")
        assert len(rx.requests()) == before, "recorded a request while down"
        rx.come_up()
        assert rx.port == port
        status, _, _ = post(url, self.push_body, ctype)
        assert status == 200
        return f"refused while down, back on port {port}"

    def check_ingest(self, rx):
        q = urllib.parse.urlencode({"name": "my.app{service_name=db,host=h1}", "from": "1700000000",
                                    "until": "1700000060", "format": "pprof", "spyName": "offcpud"})
        status, _, _ = post(f"{rx.url}{INGEST_PATH}?{q}", self.pprof,
                            {"Content-Type": "application/octet-stream"})
        assert status == 200
        got = decode_ingest(rx.requests(path=INGEST_PATH)[-1])
        assert (got["app"], got["labels"], got["from"], got["until"], got["format"]) == \
            ("my.app", {"service_name": "db", "host": "h1"}, 1700000000, 1700000060, "pprof"), got
        assert [s["values"] for s in got["profile"]] == [s["values"] for s in self.PPROF_SAMPLES]

    def otlp_text(self):
        # string_table: 0 "", 1 cpu?, ... built by index by hand.
        strings = ["", "off_cpu", "nanoseconds", "blocks", "count", "main", "io_wait", "inlined",
                   "schedule", "thread.name", "proc \"x\"\n", "process.pid", "offcpu.kind", "ms",
                   "offcpu.window", "wakeup"]
        st = "\n".join(f"  string_table: {text_escape(s.encode())}" for s in strings)
        return f"""
resource_profiles {{
  resource {{
    attributes {{ key: "service.name" value {{ string_value: "offcpud" }} }}
    attributes {{ key: "host.id" value {{ int_value: -7 }} }}
    attributes {{ key_strindex: 15 value {{ bool_value: true }} }}
  }}
  scope_profiles {{
    scope {{ name: "offcpud" version: "1.2" }}
    profiles {{
      sample_type {{ type_strindex: 1 unit_strindex: 2 }}
      period_type {{ type_strindex: 1 unit_strindex: 2 }}
      period: 1
      time_unix_nano: 1700000000123456789
      duration_nano: 60000000000
      profile_id: {text_escape(bytes([0, 0xFF, 0x22, 0x5C, 10, 0x80]) + bytes(range(10)))}
      attribute_indices: 4
      samples {{ stack_index: 1 values: 3000 attribute_indices: 1 attribute_indices: 2
                 timestamps_unix_nano: 1700000000200000000 }}
      samples {{ stack_index: 2 values: 5 link_index: 1 }}
    }}
    profiles {{
      sample_type {{ type_strindex: 3 unit_strindex: 4 }}
      samples {{ stack_index: 1 values: 1 attribute_indices: 3 }}
    }}
  }}
}}
dictionary {{
  mapping_table {{ }}
  location_table {{ }}
  location_table {{ lines {{ function_index: 3 }} lines {{ function_index: 2 }} }}
  location_table {{ lines {{ function_index: 1 }} }}
  location_table {{ address: 4096 }}
  location_table {{ lines {{ function_index: 4 }} }}
  function_table {{ }}
  function_table {{ name_strindex: 5 }}
  function_table {{ name_strindex: 6 }}
  function_table {{ name_strindex: 7 }}
  function_table {{ name_strindex: 8 }}
  link_table {{ }}
  link_table {{ trace_id: "0123456789abcdef" span_id: "\\001\\002\\003\\004\\005\\006\\007\\010" }}
{st}
  attribute_table {{ }}
  attribute_table {{ key_strindex: 9 value {{ string_value_strindex: 10 }} }}
  attribute_table {{ key_strindex: 11 value {{ int_value: 4242 }} }}
  attribute_table {{ key_strindex: 12 value {{ array_value {{ values {{ string_value: "a" }} values {{ double_value: 2.5 }} }} }} unit_strindex: 13 }}
  attribute_table {{ key_strindex: 14 value {{ kvlist_value {{ values {{ key: "k" value {{ bytes_value: "\\000\\377" }} }} }} }} }}
  stack_table {{ }}
  stack_table {{ location_indices: 4 location_indices: 1 location_indices: 2 }}
  stack_table {{ location_indices: 3 }}
}}
"""

    def expected_otlp(self):
        resource = {"service.name": "offcpud", "host.id": -7, "wakeup": True}
        base = {"resource": resource, "scope": "offcpud", "scope_version": "1.2",
                "original_payload_format": ""}
        return [
            {**base, "sample_type": ("off_cpu", "nanoseconds"), "period_type": ("off_cpu", "nanoseconds"),
             "period": 1, "time_unix_nano": 1700000000123456789, "duration_nano": 60000000000,
             "profile_id": bytes([0, 0xFF, 0x22, 0x5C, 10, 0x80]) + bytes(range(10)),
             "attributes": {"offcpu.window": {"k": b"\x00\xff"}}, "attribute_units": {},
             "samples": [
                 {"values": [3000], "timestamps_unix_nano": [1700000000200000000],
                  "stack": ["schedule", "inlined", "io_wait", "main"],
                  "attributes": {"thread.name": 'proc "x"\n', "process.pid": 4242},
                  "attribute_units": {}, "link": None},
                 {"values": [5], "timestamps_unix_nano": [], "stack": ["0x1000"], "attributes": {},
                  "attribute_units": {},
                  "link": {"trace_id": b"0123456789abcdef", "span_id": bytes(range(1, 9))}}]},
            {**base, "sample_type": ("blocks", "count"), "period_type": ("", ""), "period": 0,
             "time_unix_nano": 0, "duration_nano": 0, "profile_id": b"", "attributes": {},
             "attribute_units": {},
             "samples": [{"values": [1], "timestamps_unix_nano": [],
                          "stack": ["schedule", "inlined", "io_wait", "main"],
                          "attributes": {"offcpu.kind": ["a", 2.5]}, "attribute_units": {"offcpu.kind": "ms"},
                          "link": None}]}]

    def check_otlp(self, rx):
        if not os.path.exists(os.path.join(self.otlp_dir, OTLP_SERVICE_PROTO)):
            return f"skipped: no {OTLP_SERVICE_PROTO} under {self.otlp_dir} (use --otlp-dir)"
        body = protoc_encode(self.otlp_text(), OTLP_REQUEST, self.otlp_dir, OTLP_SERVICE_PROTO)
        status, headers, resp = post(rx.url + OTLP_PATH, body, {"Content-Type": "application/x-protobuf"})
        assert (status, resp, headers["Content-Type"]) == (200, b"", "application/x-protobuf")
        got = decode_otlp(rx.requests(path=OTLP_PATH)[-1], self.otlp_dir)
        want = self.expected_otlp()
        assert got == want, f"\n got  {got}\n want {want}"
        rx.fail_next(1, 503, headers={"Retry-After": "2"})
        status, headers, resp = post(rx.url + OTLP_PATH, body, {"Content-Type": "application/x-protobuf"})
        assert status == 503 and headers["Retry-After"] == "2", status
        assert resp.startswith(b"\x08\x0e\x12"), resp  # google.rpc.Status{code: 14 UNAVAILABLE, message}
        # strict: a dictionary without its zero entries is refused.
        bad = protoc_encode('dictionary { string_table: "x" }', OTLP_REQUEST, self.otlp_dir, OTLP_SERVICE_PROTO)
        try:
            decode_otlp(bad, self.otlp_dir)
        except DecodeError as e:
            assert "string_table[0]" in str(e), e
        else:
            raise AssertionError("decode_otlp accepted a dictionary without zero entries")
        return f"read with {self.otlp_dir}"

    def check_tool_missing(self):
        saved = os.environ["PATH"]
        os.environ["PATH"] = self.tmp
        try:
            for fn in (lambda: decode_push(b""), lambda: pprof_samples(b"")):
                try:
                    fn()
                except ToolMissing:
                    continue
                raise AssertionError("no ToolMissing without protoc/go on PATH")
        finally:
            os.environ["PATH"] = saved


def post(url, body, headers=None, method="POST"):
    """(status, headers, body) of one request; errors are answers too.
    ConnectionRefusedError when nothing listens."""
    req = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()
    except urllib.error.URLError as e:
        if isinstance(e.reason, ConnectionRefusedError):
            raise e.reason from None
        raise


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--otlp-dir", default=OTLP_PROTO_DIR,
                    help="include dir of opentelemetry-proto v1.11.0's .proto files (default: %(default)s)")
    args = ap.parse_args(argv)
    for tool in ("protoc", "go"):
        if not shutil.which(tool):
            print(f"skipped: {tool} is not installed (scripts/setup-tests.sh)")
            return 77
    check = _SelfCheck(args.otlp_dir)
    started = time.monotonic()
    try:
        check.run("text format parser", check.check_text_format)
        check.run("pprof via go tool pprof -raw", check.check_pprof)
        if not hasattr(check, "pprof"):
            print("FAIL: no test profile, stopping")
            return 1
        check.run("offcpuctl's pprof via go tool pprof -raw", check.check_offcpuctl_pprof)
        with Receiver() as rx:
            check.run("push round trip (protoc --decode)", lambda: check.check_push(rx))
            if hasattr(check, "push_body"):
                check.run("fault injection", lambda: check.check_faults(rx))
                check.run("go_down/come_up", lambda: check.check_down_up(rx))
            check.run("legacy ingest", lambda: check.check_ingest(rx))
            check.run("OTLP round trip", lambda: check.check_otlp(rx))
        check.run("ToolMissing", check.check_tool_missing)
    finally:
        shutil.rmtree(check.tmp, ignore_errors=True)
    took = time.monotonic() - started
    if check.failures:
        print(f"push_receiver self-check: {check.failures} FAILED ({took:.1f} s)")
        return 1
    print(f"push_receiver self-check: all passed ({took:.1f} s)")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
