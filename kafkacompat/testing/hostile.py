"""A hostile broker: a Kafka listener on 127.0.0.1 that answers whatever it is told to.

Theory.  A client pointed at a broker nobody vouches for (a wrong port, a
proxy, a broken third-party broker, an attacker) must stay bounded whatever
comes back: every failure typed, every call over by its deadline, memory set by
what was asked rather than by what the peer claims, nothing handed to the wrong
caller.  The emulator models brokers that follow the protocol; the fault proxy
(``tests/support/fault_proxy.py``) damages bytes in flight.  ``HostileBroker``
is the third tool: it reads each request frame and lets a *script* decide the
answer, byte for byte.

A script is a function of the ``Request`` (API key, version, correlation id,
connection and request numbers, raw bytes) returning a ``Reply``: bytes to
write (size prefix included, so a prefix can lie), and what to do next
(``"continue"``, ``"close"``, or ``"stall"``: keep the socket open and say
nothing more).  ``scripted({api_key: script})`` picks a script per API key;
``answer`` and ``raw_answer`` build well-formed replies; ``relay`` asks a real
(or emulated) broker and returns its reply, and ``mutating`` wraps any script
to damage what it returns, drawn from a seeded ``random.Random``: bit flips,
truncation at a random offset, size-prefix rewrites, inflated counts.  The
built-in hostile answers (``huge_api_versions``, ``metadata_naming``, ...)
are the cases of docs/hostile.md.

The broker runs in a thread with blocking sockets, so blocking, trio and
subprocess clients can all talk to it; it serves at most ``max_connections``
connections for at most ``lifetime`` seconds and keeps the last
``max_recorded`` requests in ``requests``.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from kafkacompat.protocol import broker_framing, framing
from kafkacompat.protocol._wire import uvarint
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import ApiKey

__all__ = [
    "MUTATIONS",
    "HostileBroker",
    "Reply",
    "Request",
    "Script",
    "answer",
    "api_versions",
    "huge_api_versions",
    "metadata_naming",
    "mutating",
    "raw_answer",
    "relay",
    "scripted",
    "unsupported_version",
]

LOOPBACK = "127.0.0.1"
_CHUNK = 65536
_MAX_REQUEST = 1 << 20  # a client's request is small: anything larger ends the connection


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the hostile broker read it."""

    api_key: int
    api_version: int
    correlation_id: int
    connection: int  # from 1, in accept order
    index: int  # from 1, within its connection
    frame: bytes  # without the size prefix


@dataclass(frozen=True, slots=True)
class Reply:
    """Bytes to write as they are (size prefix included), then what to do."""

    data: bytes = b""
    after: Literal["continue", "close", "stall"] = "continue"
    label: str = ""  # what the reply is, for counts (the mutation applied)


Script = Callable[[Request], "Reply | bytes"]


# -- building answers ---------------------------------------------------------------------------


def answer(request: Request, message: KafkaMessage, version: int | None = None) -> bytes:
    """A well-formed reply frame carrying ``message`` at ``version`` (default: the request's)."""
    return broker_framing.encode_response(message, request.api_version if version is None else version,
                                   request.correlation_id)


def raw_answer(request: Request, body: bytes, *, version: int | None = None) -> bytes:
    """A frame with the right header for ``request`` around ``body`` (which may be anything)."""
    header_version = framing.response_header_version(request.api_key, request.api_version
                                                     if version is None else version)
    header = struct.pack(">i", request.correlation_id) + (b"\x00" if header_version >= 1 else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


#: What ``api_versions`` advertises by default: enough for Metadata, FindCoordinator, DescribeCluster.
PLAIN_APIS: tuple[tuple[int, int, int], ...] = (
    (ApiKey.METADATA, 0, 12), (ApiKey.FIND_COORDINATOR, 0, 4), (ApiKey.API_VERSIONS, 0, 4),
    (ApiKey.DESCRIBE_CLUSTER, 0, 1),
)


def api_versions(apis: Iterable[tuple[int, int, int]] = PLAIN_APIS, *, epoch: int = -1) -> Script:
    """A well-formed ApiVersions reply at the version asked, advertising ``apis``, with ``epoch``."""
    from kafkacompat.protocol.messages import ApiVersionsResponse

    rows = list(apis)

    def script(request: Request) -> Reply:
        entry = ApiVersionsResponse.ApiVersion
        response = ApiVersionsResponse(
            api_keys=[entry(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in rows]
        )
        version = min(request.api_version, 4)
        if version >= 3:
            response.finalized_features_epoch = epoch
        return Reply(answer(request, response, version), label="ApiVersions")

    return script


def unsupported_version(lowest: int, highest: int) -> Script:
    """UNSUPPORTED_VERSION in the v0 layout, advertising ApiVersions ``lowest``-``highest``."""

    def script(request: Request) -> Reply:
        body = struct.pack(">hi", 35, 1) + struct.pack(">hhh", ApiKey.API_VERSIONS, lowest, highest)
        return Reply(raw_answer(request, body, version=0), label=f"UNSUPPORTED_VERSION {lowest}-{highest}")

    return script


def huge_api_versions(entries: int) -> Script:
    """A well-formed ApiVersions reply with ``entries`` rows, at the version asked.

    From v3 on a row takes 7 bytes (key, min, max, an empty tag section): ten
    million rows make the 70 MB reply of docs/hostile.md; below v3, 6 bytes.
    """

    def script(request: Request) -> Reply:
        version = min(request.api_version, 4)
        if version >= 3:
            rows = struct.pack(">hhhB", ApiKey.API_VERSIONS, 0, 4, 0) * entries
            body = struct.pack(">h", 0) + uvarint(entries + 1) + rows + struct.pack(">i", 0) + b"\x00"
        else:
            rows = struct.pack(">hhh", ApiKey.API_VERSIONS, 0, 3) * entries
            body = struct.pack(">hi", 0, entries) + rows + (struct.pack(">i", 0) if version >= 1 else b"")
        return Reply(raw_answer(request, body, version=version), label=f"ApiVersions of {entries} rows")

    return script


def metadata_naming(brokers: Iterable[tuple[int, str, int]]) -> Script:
    """A Metadata reply (at the version asked) naming ``brokers`` as (node id, host, port).

    Hosts and ports go on the wire as given, so they can be anything the
    format holds: an empty label, a NUL byte, a port of -1 or 70000.
    """
    listed = list(brokers)

    def script(request: Request) -> Reply:
        version = request.api_version
        flexible = version >= 9
        out = bytearray()
        if version >= 3:
            out += struct.pack(">i", 0)  # throttle
        out += uvarint(len(listed) + 1) if flexible else struct.pack(">i", len(listed))
        for node_id, host, port in listed:
            data = host.encode("utf-8", "surrogatepass")
            out += struct.pack(">i", node_id)
            out += uvarint(len(data) + 1) if flexible else struct.pack(">h", len(data))
            out += data
            out += struct.pack(">i", port if -(2**31) <= port < 2**31 else -1)
            if version >= 1:
                out += b"\x00" if flexible else b"\xff\xff"  # rack: null
            if flexible:
                out += b"\x00"
        if version >= 2:
            out += b"\x00" if flexible else b"\xff\xff"  # cluster id: null
        if version >= 1:
            out += struct.pack(">i", listed[0][0] if listed else -1)  # controller
        out += b"\x01" if flexible else struct.pack(">i", 0)  # no topics
        if 8 <= version <= 10:
            out += struct.pack(">i", -2147483648)  # cluster authorized operations
        if flexible:
            out += b"\x00"
        return Reply(raw_answer(request, bytes(out)), label=f"Metadata naming {len(listed)} broker(s)")

    return script


def scripted(scripts: Mapping[int, Script], default: Script | None = None) -> Script:
    """One script per API key; ``default`` (or closing the connection) for the others."""

    def script(request: Request) -> Reply | bytes:
        chosen = scripts.get(request.api_key, default)
        if chosen is None:
            return Reply(after="close", label="unscripted: closed")
        return chosen(request)

    return script


def relay(host: str, port: int, *, timeout: float = 10.0) -> Script:
    """Forward each request to a real (or emulated) broker and answer with its reply.

    One upstream connection per hostile connection, so a handshake's requests
    and their replies stay on one connection as they would without us.
    """
    upstream: dict[int, socket.socket] = {}
    lock = threading.Lock()

    def script(request: Request) -> Reply:
        with lock:
            sock = upstream.get(request.connection)
            if sock is None:
                sock = upstream[request.connection] = socket.create_connection((host, port), timeout)
        try:
            sock.sendall(struct.pack(">i", len(request.frame)) + request.frame)
            data = _read_frame(sock, 100 << 20)
        except OSError:
            return Reply(after="close", label="upstream failed")
        if data is None:
            return Reply(after="close", label="upstream closed")
        return Reply(struct.pack(">i", len(data)) + data, label="relayed")

    return script


# -- mutations --------------------------------------------------------------------------------

_INTERESTING_SIZES = (-1, -(2**31), 0, 1, 3, 2**31 - 1, 100 << 20, (100 << 20) - 1, 70_000_000, 65_537)


def _flip(rng: random.Random, frame: bytes) -> tuple[str, bytes, str]:
    data = bytearray(frame)
    for _ in range(rng.choice((1, 1, 2, 8))):
        data[rng.randrange(4, len(data))] ^= 1 << rng.randrange(8)
    return "bit flips", bytes(data), "continue"


def _truncate(rng: random.Random, frame: bytes) -> tuple[str, bytes, str]:
    cut = rng.randrange(0, len(frame))
    return "truncated, then closed", frame[:cut], rng.choice(("close", "stall"))


def _resize(rng: random.Random, frame: bytes) -> tuple[str, bytes, str]:
    size = rng.choice((*_INTERESTING_SIZES, rng.randrange(0, 2 * len(frame) + 8)))
    return "size prefix rewritten", struct.pack(">i", size) + frame[4:], "continue"


def _inflate(rng: random.Random, frame: bytes) -> tuple[str, bytes, str]:
    data = bytearray(frame)
    at = rng.randrange(8, max(9, len(data) - 3)) if len(data) > 9 else 4
    if rng.random() < 0.5:
        data[at : at + 4] = struct.pack(">i", rng.choice((2**31 - 1, 1_000_001, 10_000_000, -2)))
    else:
        data[at : at + 5] = b"\xff\xff\xff\xff\x0f"  # the largest uvarint: a compact count of 2**32-2
    return "count inflated", bytes(data[: len(frame)]), "continue"


MUTATIONS: Mapping[str, Callable[[random.Random, bytes], tuple[str, bytes, str]]] = {
    "flip": _flip,
    "truncate": _truncate,
    "resize": _resize,
    "inflate": _inflate,
}


def mutating(base: Script, rng: random.Random, *, rate: float = 1.0,
             kinds: Iterable[str] = tuple(MUTATIONS)) -> Script:
    """``base``'s replies, each damaged (with probability ``rate``) by one mutation drawn from ``rng``."""
    chosen = [MUTATIONS[kind] for kind in kinds]

    def script(request: Request) -> Reply:
        reply = base(request)
        reply = reply if isinstance(reply, Reply) else Reply(reply)
        if len(reply.data) <= 8 or rng.random() >= rate:
            return reply
        label, data, after = rng.choice(chosen)(rng, reply.data)
        return Reply(data, after if reply.after == "continue" else reply.after, label)  # type: ignore[arg-type]

    return script


# -- the listener -----------------------------------------------------------------------------


class HostileBroker:
    """``with HostileBroker(script) as broker:`` a listener at ``broker.address`` until the block ends."""

    def __init__(self, script: Script, *, max_connections: int = 10_000, lifetime: float = 300.0,
                 max_recorded: int = 1000) -> None:
        self.script = script
        self.max_connections = max_connections
        self.lifetime = lifetime
        self.requests: deque[Request] = deque(maxlen=max_recorded)
        self.labels: deque[str] = deque(maxlen=max_recorded)  # what each recent reply was
        self.label_counts: Counter[str] = Counter()  # what every reply was, counted
        self.connections = 0
        self.most_open = 0  # the most connections open at once
        self._listener = socket.create_server((LOOPBACK, 0))
        self._listener.settimeout(0.2)
        self._port = int(self._listener.getsockname()[1])
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def __enter__(self) -> HostileBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> HostileBroker:
        thread = threading.Thread(target=self._accept, name="hostile-broker", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            for sock in list(self._sockets):
                _close(sock)
        for thread in list(self._threads):
            thread.join(5)
        self._listener.close()

    def _accept(self) -> None:
        timer = threading.Timer(self.lifetime, self._stopping.set)
        timer.daemon = True
        timer.start()
        try:
            while not self._stopping.is_set() and self.connections < self.max_connections:
                try:
                    conn, _ = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                self.connections += 1
                with self._lock:
                    self._sockets.add(conn)
                    self.most_open = max(self.most_open, len(self._sockets))
                thread = threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True)
                thread.start()
                self._threads.append(thread)
        finally:
            timer.cancel()

    def _serve(self, conn: socket.socket, number: int) -> None:
        conn.settimeout(0.5)
        index = 0
        try:
            while not self._stopping.is_set():
                try:
                    frame = _read_frame(conn, _MAX_REQUEST, self._stopping)
                except OSError:
                    return
                if frame is None or len(frame) < 8:
                    return
                index += 1
                api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame)
                request = Request(api_key, api_version, correlation_id, number, index, frame)
                self.requests.append(request)
                reply = self.script(request)
                reply = reply if isinstance(reply, Reply) else Reply(reply)
                self.labels.append(reply.label)
                self.label_counts[reply.label or "unlabelled"] += 1
                try:
                    conn.settimeout(30)
                    conn.sendall(reply.data)
                    conn.settimeout(0.5)
                except OSError:
                    return
                if reply.after == "close":
                    return
                if reply.after == "stall":
                    self._stopping.wait()
                    return
        finally:
            with self._lock:
                self._sockets.discard(conn)
            _close(conn)


def _read_frame(sock: socket.socket, limit: int, stopping: threading.Event | None = None) -> bytes | None:
    """One size-prefixed frame (without its prefix), None on a clean close or a bad prefix."""
    head = _read_exactly(sock, 4, stopping)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    if not 0 <= size <= limit:
        return None
    return _read_exactly(sock, size, stopping)


def _read_exactly(sock: socket.socket, count: int, stopping: threading.Event | None) -> bytes | None:
    data = bytearray()
    while len(data) < count:
        try:
            chunk = sock.recv(min(_CHUNK, count - len(data)))
        except TimeoutError:
            if stopping is not None and stopping.is_set():
                return None
            continue
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
