"""A TCP proxy on 127.0.0.1, run inside a test, that damages traffic on purpose.

``FaultProxy`` sits between a client and a real broker and forwards bytes in
both directions.  Each direction (``to_client``: broker -> client, and
``to_broker``: client -> broker) carries a tuple of ``Fault`` rules:

==========================================  ===================================================
rule                                        effect
==========================================  ===================================================
``Fault.passthrough()``                     nothing (the same as no rule)
``Fault.close_after(n)``                    forward ``n`` bytes, then close both sides (FIN)
``Fault.reset_after(n)``                    forward ``n`` bytes, then reset the client (RST,
                                            via SO_LINGER 0) and close the broker side
``Fault.stall_after(n)``                    forward ``n`` bytes, then forward (and read) nothing
                                            more until ``FaultProxy.release()``; the sockets
                                            stay open
``Fault.corrupt_at(n, xor)``                flip bits of the byte at offset ``n``
``Fault.rewrite_size(k, prefix)``           replace the 4-byte size prefix of frame ``k``
``Fault.rewrite_correlation_id(k, new)``    replace the correlation id of frame ``k`` (an int,
                                            or a function of the original id)
==========================================  ===================================================

Byte offsets count one direction of one connection from 0, or, with
``frame=k``, from the start of frame ``k`` (``n >= 0``) or back from its end
(``n < 0``: -1 is its last byte).  A close, reset or stall at offset ``n``
fires when the byte at ``n`` arrives, so ``close_after(0)`` lets the request
through and closes before the first byte of the reply.  Frames are numbered
from 1 and found by parsing the size prefixes of the *original* stream, so the
frame boundaries stay right after a prefix was rewritten.  A rule applies to
every connection, or only to the connection numbers (from 1) in
``connections``.

Bounded: the proxy accepts at most ``max_connections`` connections and then
closes its listener (later attempts are refused); each copying loop handles
at most ``_MAX_CHUNKS`` reads; the whole proxy stops after ``max_lifetime``
seconds.  Its tasks live in the nursery it was started in, so cancelling that
nursery stops it and closes every socket.  ``fault_proxy()`` is the async
context manager that does all of this.  What the proxy saw is kept per
connection in ``ConnectionRecord``: bytes each way, frames with their
correlation ids (and the request headers), the most requests outstanding at
the broker at once, and events for "the client closed its side" and "this
connection is finished".
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

__all__ = [
    "LOOPBACK",
    "PREFIX_HTTP",
    "PREFIX_INT32_MAX",
    "PREFIX_MINUS_ONE",
    "PREFIX_TLS",
    "ConnectionRecord",
    "DirectionRecord",
    "Fault",
    "FaultProxy",
    "fault_proxy",
    "rewrite_offline",
]

LOOPBACK = "127.0.0.1"
_CHUNK = 65536
_MAX_CHUNKS = 100_000  # per direction and connection: a bound on every copying loop

# Size prefixes a broken or foreign peer might send instead of a Kafka frame size.
PREFIX_INT32_MAX = b"\x7f\xff\xff\xff"
PREFIX_MINUS_ONE = b"\xff\xff\xff\xff"
PREFIX_TLS = b"\x16\x03\x01\x00"  # a TLS handshake record header
PREFIX_HTTP = b"HTTP"

_BYTE_KINDS = ("close", "reset", "stall", "corrupt")
_FRAME_KINDS = ("size", "correlation_id")


@dataclass(frozen=True, slots=True)
class Fault:
    """One rule for one direction; build it with the class methods.

    Byte rules (close, reset, stall, corrupt) act at a byte offset: counted
    from the start of the direction, or, with ``frame=k``, from the start of
    the k-th frame (``at >= 0``) or back from its end (``at < 0``: -1 is its
    last byte).  Frame rules (size, correlation_id) act on frame ``frame``.
    """

    kind: str
    at: int = 0
    frame: int | None = None
    prefix: bytes = b""
    xor: int = 0xFF
    new_id: int | Callable[[int], int] | None = None
    connections: frozenset[int] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("pass", *_BYTE_KINDS, *_FRAME_KINDS):
            raise ValueError(f"unknown fault kind {self.kind!r}")
        if self.frame is not None and self.frame < 1:
            raise ValueError("frames are numbered from 1")
        if self.kind in _FRAME_KINDS and self.frame is None:
            raise ValueError(f"a {self.kind} fault needs a frame")
        if self.frame is None and self.at < 0:
            raise ValueError("a negative offset needs a frame to count back from")
        if self.kind == "size" and len(self.prefix) != 4:
            raise ValueError("a size prefix has 4 bytes")
        if self.kind == "corrupt" and not 0 < self.xor < 256:
            raise ValueError("the xor mask must change the byte")

    @classmethod
    def passthrough(cls) -> Fault:
        return cls("pass")

    @classmethod
    def close_after(
        cls, n: int, *, frame: int | None = None, connections: Sequence[int] | None = None
    ) -> Fault:
        return cls("close", n, frame, connections=_numbers(connections))

    @classmethod
    def reset_after(
        cls, n: int, *, frame: int | None = None, connections: Sequence[int] | None = None
    ) -> Fault:
        return cls("reset", n, frame, connections=_numbers(connections))

    @classmethod
    def stall_after(
        cls, n: int, *, frame: int | None = None, connections: Sequence[int] | None = None
    ) -> Fault:
        return cls("stall", n, frame, connections=_numbers(connections))

    @classmethod
    def corrupt_at(
        cls, n: int, xor: int = 0xFF, *, frame: int | None = None, connections: Sequence[int] | None = None
    ) -> Fault:
        return cls("corrupt", n, frame, xor=xor, connections=_numbers(connections))

    @classmethod
    def rewrite_size(cls, frame: int, prefix: bytes, *, connections: Sequence[int] | None = None) -> Fault:
        return cls("size", 0, frame, prefix=bytes(prefix), connections=_numbers(connections))

    @classmethod
    def rewrite_correlation_id(
        cls, frame: int, new_id: int | Callable[[int], int], *, connections: Sequence[int] | None = None
    ) -> Fault:
        return cls("correlation_id", 0, frame, new_id=new_id, connections=_numbers(connections))

    def applies_to(self, connection: int) -> bool:
        return self.kind != "pass" and (self.connections is None or connection in self.connections)

    def __str__(self) -> str:
        if self.kind == "pass":
            return "pass"
        if self.kind == "size":
            return f"size[frame {self.frame}]={self.prefix.hex()}"
        if self.kind == "correlation_id":
            return f"correlation_id[frame {self.frame}]"
        where = f"byte {self.at}" if self.frame is None else f"frame {self.frame} byte {self.at}"
        return f"{self.kind}@{where}"


def _numbers(connections: Sequence[int] | None) -> frozenset[int] | None:
    return None if connections is None else frozenset(connections)


@dataclass(slots=True)
class _Patch:
    """Bytes to write over [start, end) of a direction, maybe computed from the originals."""

    start: int
    end: int
    compute: Callable[[bytes], bytes]
    needs_original: bool


@dataclass(slots=True)
class DirectionRecord:
    """What passed one way on one connection."""

    bytes_forwarded: int = 0
    frames_started: int = 0
    frames_completed: int = 0
    correlation_ids: list[int] = field(default_factory=list)  # of complete frames, as sent by the peer
    headers: list[tuple[int, int, int]] = field(default_factory=list)  # requests: (api key, version, id)
    stalled: trio.Event = field(default_factory=trio.Event)


@dataclass(slots=True)
class ConnectionRecord:
    """What the proxy saw of one connection (numbered from 1, in accept order)."""

    number: int
    upstream: tuple[str, int]
    to_client: DirectionRecord = field(default_factory=DirectionRecord)
    to_broker: DirectionRecord = field(default_factory=DirectionRecord)
    peak_outstanding: int = 0  # most requests started at the broker and not yet answered
    cut: str | None = None  # "close" or "reset" when a fault ended the connection
    client_closed: trio.Event = field(default_factory=trio.Event)  # EOF or error reading the client
    finished: trio.Event = field(default_factory=trio.Event)

    @property
    def outstanding(self) -> int:
        return self.to_broker.frames_started - self.to_client.frames_completed


class _FrameCursor:
    """Follows the size-prefixed frames of one direction, over the original bytes."""

    def __init__(self) -> None:
        self.index = 1  # the frame being read
        self.pos = 0  # original bytes consumed
        self.frame_start = 0
        self.prefix = bytearray()
        self.frame_end: int | None = None
        self.head = bytearray()  # the first bytes of the body (header fields)

    def feed(self, data: bytes) -> list[tuple[str, int, int, bytes]]:
        """Events, in stream order: ("start", index, offset, b""), ("sized", index, end, b"")
        when the size prefix is complete, and ("end", index, end, head) when the frame is."""
        events: list[tuple[str, int, int, bytes]] = []
        i = 0
        while i < len(data):
            if self.frame_end is None:
                if not self.prefix:
                    events.append(("start", self.index, self.pos, b""))
                take = min(4 - len(self.prefix), len(data) - i)
                self.prefix += data[i : i + take]
                i += take
                self.pos += take
                if len(self.prefix) == 4:
                    size = max(0, int.from_bytes(self.prefix, "big", signed=True))
                    self.frame_end = self.frame_start + 4 + size
                    events.append(("sized", self.index, self.frame_end, b""))
            else:
                take = min(self.frame_end - self.pos, len(data) - i)
                if len(self.head) < 8:
                    self.head += data[i : i + min(take, 8 - len(self.head))]
                i += take
                self.pos += take
            if self.frame_end is not None and self.pos == self.frame_end:
                events.append(("end", self.index, self.pos, bytes(self.head)))
                self.index += 1
                self.frame_start = self.pos
                self.prefix = bytearray()
                self.frame_end = None
                self.head = bytearray()
        return events


class _Direction:
    """One direction of one connection: its rules, its cursor, bytes held back.

    Every byte is rewritten (patches, corruption) exactly once, when it is
    received; forwarding then only decides how far to go and what to do at
    the offset of a close, reset or stall.
    """

    def __init__(self, name: str, faults: Sequence[Fault], record: DirectionRecord) -> None:
        self.name = name
        self.faults = tuple(faults)
        self.record = record
        self.cursor = _FrameCursor()
        self.fed = 0  # original bytes received from the source
        self.sent = 0  # bytes forwarded
        self.held = bytearray()  # bytes [sent, fed): received, not yet forwarded
        self.patches: list[_Patch] = []
        self.fired: set[int] = set()  # byte actions done (by rule index)
        # Absolute offsets of the byte rules, known at once or when their frame is reached.
        self.targets = {
            n: f.at for n, f in enumerate(self.faults) if f.kind in _BYTE_KINDS and f.frame is None
        }

    def receive(self, data: bytes, on_event: Callable[[str, int, bytes], None]) -> None:
        for kind, index, offset, head in self.cursor.feed(data):
            if kind == "start":
                self._plan_frame(index, offset)
            elif kind == "sized":
                self._place(index, offset, from_end=True)
            on_event(kind, index, head)
        before = self.fed
        self.held += data
        self.fed += len(data)
        for patch in list(self.patches):
            if patch.needs_original:
                if self.fed < patch.end:
                    continue  # wait for the whole original (ready_end holds it back)
                lo, hi = patch.start, patch.end
            else:
                lo, hi = max(patch.start, before), min(patch.end, self.fed)
            original = b""
            if patch.needs_original:  # all of it is held: ready_end kept it back
                original = bytes(self.held[patch.start - self.sent : patch.end - self.sent])
            replacement = patch.compute(original)
            for offset in range(lo, hi):
                self.held[offset - self.sent] = replacement[offset - patch.start]
            if self.fed >= patch.end:
                self.patches.remove(patch)
        for number, fault in enumerate(self.faults):
            target = self.targets.get(number)
            if fault.kind == "corrupt" and target is not None and before <= target < self.fed:
                self.held[target - self.sent] ^= fault.xor

    def _place(self, index: int, offset: int, *, from_end: bool) -> None:
        for number, fault in enumerate(self.faults):
            if fault.kind in _BYTE_KINDS and fault.frame == index and (fault.at < 0) == from_end:
                self.targets[number] = offset + fault.at

    def _plan_frame(self, index: int, offset: int) -> None:
        self._place(index, offset, from_end=False)
        for fault in self.faults:
            if fault.frame != index:
                continue
            if fault.kind == "size":
                self.patches.append(_Patch(offset, offset + 4, _const(fault.prefix), False))
            elif fault.kind == "correlation_id":
                new_id = fault.new_id
                if callable(new_id):
                    patch = _Patch(offset + 4, offset + 8, _computed_id(new_id), True)
                else:
                    assert new_id is not None
                    patch = _Patch(offset + 4, offset + 8, _const(_id_bytes(new_id)), False)
                self.patches.append(patch)

    def ready_end(self) -> int:
        """How far the held bytes may be forwarded: not into a patch still missing its originals."""
        end = self.fed
        for patch in self.patches:
            if patch.needs_original and patch.start < end:
                end = patch.start
        return max(end, self.sent)

    def next_action(self, end: int) -> tuple[int, int] | None:
        """(offset, rule index) of the first close, reset or stall whose offset lies in [sent, end)."""
        best: tuple[int, int] | None = None
        for number, fault in enumerate(self.faults):
            target = self.targets.get(number)
            if (
                fault.kind in ("close", "reset", "stall")
                and number not in self.fired
                and target is not None
                and self.sent <= target < end
                and (best is None or target < best[0])
            ):
                best = (target, number)
        return best


def _computed_id(function: Callable[[int], int]) -> Callable[[bytes], bytes]:
    return lambda old: _id_bytes(function(_int32(old)))


def _const(value: bytes) -> Callable[[bytes], bytes]:
    return lambda _old: value


def _id_bytes(value: int) -> bytes:
    return struct.pack(">i", value if value < 2**31 else value - 2**32)


def _int32(data: bytes) -> int:
    return int(struct.unpack(">i", data)[0])


class FaultProxy:
    """A bounded fault-injecting TCP proxy; see the module docstring."""

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        to_client: Sequence[Fault] = (),
        to_broker: Sequence[Fault] = (),
        max_connections: int = 8,
        connect_timeout: float = 5.0,
        max_lifetime: float = 120.0,
    ) -> None:
        if upstream[0] != LOOPBACK:
            raise ValueError("the fault proxy only talks to 127.0.0.1")
        self.upstream = upstream  # may be changed: later connections go to the new address
        self.to_client = tuple(to_client)
        self.to_broker = tuple(to_broker)
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout
        self.max_lifetime = max_lifetime  # the proxy stops by itself after this, whatever happens
        self.host = LOOPBACK
        self.port = 0
        self.connections: list[ConnectionRecord] = []
        self.accepting = False
        self._released = trio.Event()
        self._any_stall = trio.Event()

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def release(self) -> None:
        """End every stall, now and later: held bytes flow again."""
        self._released.set()

    async def wait_stalled(self) -> None:
        """Wait until some direction of some connection has stalled."""
        await self._any_stall.wait()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen, then serve up to ``max_connections`` connections; started with ``nursery.start``."""
        listeners = await trio.open_tcp_listeners(0, host=LOOPBACK)
        listener = listeners[0]
        for extra in listeners[1:]:
            await trio.aclose_forcefully(extra)
        self.port = listener.socket.getsockname()[1]
        with trio.move_on_after(self.max_lifetime):
            async with trio.open_nursery() as nursery:
                self.accepting = True
                task_status.started(self)
                try:
                    while len(self.connections) < self.max_connections:
                        client = await listener.accept()
                        record = ConnectionRecord(len(self.connections) + 1, self.upstream)
                        self.connections.append(record)
                        nursery.start_soon(self._serve, client, record)
                finally:
                    self.accepting = False
                    await trio.aclose_forcefully(listener)

    async def _serve(self, client: trio.SocketStream, record: ConnectionRecord) -> None:
        upstream: trio.SocketStream | None = None
        try:
            try:
                with trio.fail_after(self.connect_timeout):
                    upstream = await trio.open_tcp_stream(*record.upstream)
            except (OSError, trio.TooSlowError):
                return
            c2b = _Direction("to_broker", _for(self.to_broker, record.number), record.to_broker)
            b2c = _Direction("to_client", _for(self.to_client, record.number), record.to_client)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, client, upstream, c2b, record, client, nursery.cancel_scope)
                nursery.start_soon(self._pump, upstream, client, b2c, record, client, nursery.cancel_scope)
        finally:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(client)
                if upstream is not None:
                    await trio.aclose_forcefully(upstream)
            record.finished.set()

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        direction: _Direction,
        record: ConnectionRecord,
        client: trio.SocketStream,
        scope: trio.CancelScope,
    ) -> None:
        """Copy one direction until either side ends or a fault cuts the connection."""
        from_client = direction.name == "to_broker"

        def on_event(kind: str, index: int, head: bytes) -> None:
            stats = direction.record
            if kind == "start":
                stats.frames_started += 1
                if from_client:
                    record.peak_outstanding = max(record.peak_outstanding, record.outstanding)
            elif kind == "end":
                stats.frames_completed += 1
                # Requests: api key, api version, correlation id; responses: correlation id.
                if from_client and len(head) >= 8:
                    api_key, api_version, correlation_id = struct.unpack(">hhi", head[:8])
                    stats.headers.append((api_key, api_version, correlation_id))
                    stats.correlation_ids.append(correlation_id)
                elif not from_client and len(head) >= 4:
                    stats.correlation_ids.append(_int32(head[:4]))

        try:
            for _ in range(_MAX_CHUNKS):
                try:
                    data = await source.receive_some(_CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                if not data:
                    if from_client:
                        record.client_closed.set()
                    await self._forward(sink, direction, direction.fed)  # whatever was held back
                    return
                direction.receive(data, on_event)
                cut = await self._forward(sink, direction, direction.ready_end())
                if cut is not None:
                    record.cut = cut
                    if cut == "reset":
                        _arm_reset(client)
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            scope.cancel()  # one side gone or cut: the connection is over

    async def _forward(self, sink: trio.SocketStream, direction: _Direction, end: int) -> str | None:
        """Forward held bytes up to ``end``; the kind of cut ("close", "reset") if one fired."""
        while direction.sent < end:
            action = direction.next_action(end)
            stop = end if action is None else action[0]
            if stop > direction.sent:
                chunk = bytes(direction.held[: stop - direction.sent])
                await sink.send_all(chunk)
                del direction.held[: stop - direction.sent]
                direction.sent = stop
                direction.record.bytes_forwarded = stop
            if action is None:
                continue
            _, number = action
            fault = direction.faults[number]
            direction.fired.add(number)
            if fault.kind != "stall":
                return fault.kind
            if not self._released.is_set():
                direction.record.stalled.set()
                self._any_stall.set()
                await self._released.wait()
        return None


def rewrite_offline(faults: Sequence[Fault], pieces: Sequence[bytes]) -> bytes:
    """What one direction would forward of ``pieces`` (as they would arrive), without sockets.

    Rewrites and corruption only: a close, reset or stall changes when bytes
    flow, not which, and is ignored here.  For checking the proxy itself.
    """
    direction = _Direction("to_client", [f for f in faults if f.kind != "pass"], DirectionRecord())
    out = bytearray()
    for piece in pieces:
        direction.receive(piece, lambda *_: None)
        end = direction.ready_end()
        out += direction.held[: end - direction.sent]
        del direction.held[: end - direction.sent]
        direction.sent = end
    out += direction.held  # end of stream: whatever was held back
    return bytes(out)


def _for(faults: Sequence[Fault], number: int) -> tuple[Fault, ...]:
    return tuple(f for f in faults if f.applies_to(number))


def _arm_reset(stream: trio.SocketStream) -> None:
    """Make the coming close send RST rather than FIN."""
    with contextlib.suppress(OSError):  # already closed by the peer: nothing to reset
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@asynccontextmanager
async def fault_proxy(
    upstream: tuple[str, int],
    *,
    to_client: Sequence[Fault] = (),
    to_broker: Sequence[Fault] = (),
    max_connections: int = 8,
) -> AsyncIterator[FaultProxy]:
    """``async with fault_proxy((host, port), to_client=[...]) as proxy:``; stops on exit."""
    proxy = FaultProxy(upstream, to_client=to_client, to_broker=to_broker, max_connections=max_connections)
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.run)
        try:
            yield proxy
        finally:
            proxy.release()
            nursery.cancel_scope.cancel()
