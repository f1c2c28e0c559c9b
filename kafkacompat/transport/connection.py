"""One negotiated, pipelined connection to one broker.

Opening a ``BrokerConnection`` connects (TCP, TLS), runs the ApiVersions
handshake, authenticates with SASL where configured (its versions picked from
the handshake's answer), and only then lets requests through: a request made
before the connection is ready waits for it.  The capabilities learned belong
to this connection and die with it; ``reconnect`` negotiates again, replaces
them, and records what changed (a broker upgraded or downgraded in between).

Requests are pipelined up to ``max_in_flight``.  Two tasks start with the
first request (a connection opened only to read the capabilities never needs
them): a writer that sends whatever requests queued while its last write was
going out, in one write, and a reader that matches responses to callers by
correlation id.  Kafka answers the requests of one connection in the order
they were written, so a response must carry the id of the oldest request
still awaiting one; any other id (one nobody asked for, or another caller's,
out of turn) means the stream can no longer be trusted: the connection closes
and every caller in flight gets the error, so nothing is ever handed to the
wrong caller.  (Apache Kafka never answers a Produce with ``acks=0``; Tansu
and librdkafka's mock broker do: such an answer is dropped.)

A caller that times out or is cancelled takes its request back as far as it
can: still queued, it is never written; already written, its correlation id
is left behind as abandoned, so its late answer is dropped quietly; cut off
half-way through being written, the connection closes, since the stream
would be corrupt.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from kafkacompat.errors import (
    DecodeError,
    KafkaCompatError,
    KafkaTimeoutError,
    ProtocolError,
    TransportError,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.capability_changes import CapabilityChange, capability_change
from kafkacompat.negotiation.handshake_types import HandshakeResult
from kafkacompat.protocol import framing, messages
from kafkacompat.protocol.message import KafkaMessage, KafkaRequest, ResponseT
from kafkacompat.protocol.removals import removed_version_error
from kafkacompat.transport.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.transport.negotiate import negotiate
from kafkacompat.transport.seam import raise_lone
from kafkacompat.transport.stream import FramedStream

__all__ = ["BrokerConnection", "CapabilityChange", "open_connection"]

log = logging.getLogger("kafkacompat.transport")

_INT32_MAX = 0x7FFFFFFF
PRODUCE = int(messages.ApiKey.PRODUCE)  # a plain int: compared for every request
_ACKS0_MEMORY = 1024  # acks=0 ids remembered, in case the broker answers them anyway


_QUEUED, _WRITING, _WRITTEN = range(3)  # where a request's frame is


@dataclass(slots=True)
class _Pending:
    response_cls: type[KafkaMessage]
    version: int
    correlation_id: int
    frame: bytes
    expects_reply: bool
    reply_limit: int = framing.DEFAULT_MAX_FRAME_SIZE  # the ceiling for its answer's size
    state: int = _QUEUED
    done: trio.Event = field(default_factory=trio.Event)
    response: KafkaMessage | None = None
    error: KafkaCompatError | None = None

    def resolve(self, response: KafkaMessage | None = None, error: KafkaCompatError | None = None) -> None:
        if not self.done.is_set():
            self.response, self.error = response, error
            self.done.set()


class BrokerConnection:
    """A connection to ``host:port`` that negotiates by itself before carrying requests."""

    def __init__(
        self, host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.config = config or DEFAULT_CONFIG
        self.capabilities: BrokerCapabilities | None = None
        self.handshake: HandshakeResult | None = None
        self.changes: list[CapabilityChange] = []
        self._stream: FramedStream | None = None
        self._ready = trio.Event()
        self._failure: KafkaCompatError | None = None
        self._pending: dict[int, _Pending] = {}
        self._abandoned: set[int] = set()
        self._awaiting: deque[int] = deque()  # ids written that expect an answer, oldest first
        self._reply_limits: dict[int, tuple[int, str]] = {}  # awaited id -> (ceiling, request name)
        self._acks0_ids: dict[int, None] = {}  # recent acks=0 ids, oldest first
        self._outbox: dict[int, _Pending] = {}  # frames not yet handed to the socket, in order
        self._outbox_filled = trio.Event()
        self._slots = trio.Semaphore(self.config.max_in_flight)
        self._correlation_ids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self._io_scopes: tuple[trio.CancelScope, trio.CancelScope] | None = None  # reader, writer
        self._closed = False

    @property
    def node(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def is_ready(self) -> bool:
        return self._ready.is_set() and self._failure is None and not self._closed

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def __repr__(self) -> str:
        state = "ready" if self.is_ready else ("closed" if self._closed else "not ready")
        return f"<BrokerConnection {self.node} {state}>"

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self, nursery: trio.Nursery) -> BrokerCapabilities:
        """Connect, negotiate and authenticate; the reader task runs in ``nursery``."""
        if self._stream is not None:
            raise TransportError("this connection is already open", node=self.node)
        self._closed = False
        try:
            stream, result = await negotiate(self.host, self.port, self.config)
        except KafkaCompatError as exc:
            self._fail_everything(exc)
            raise
        capabilities = BrokerCapabilities.from_handshake(result, node=self.node, node_id=self.node_id)
        self._correlation_ids = itertools.count(_next_id(result))
        self._awaiting.clear()
        self._reply_limits.clear()
        self._acks0_ids.clear()
        if self.config.sasl is not None:
            from kafkacompat.transport.sasl import authenticate

            try:
                await authenticate(stream, capabilities, self.config, self._next_correlation_id)
            except BaseException as exc:
                await stream.aclose()
                if isinstance(exc, KafkaCompatError):
                    exc.transcript = exc.transcript or result.transcript
                    self._fail_everything(exc)
                raise
        self._note_change(capabilities)
        self._stream, self.handshake, self.capabilities = stream, result, capabilities
        self._failure = None
        # The reader and writer start with the first request: a connection opened to
        # learn the broker's capabilities and closed again never needs them.
        self._nursery, self._io_scopes = nursery, None
        self._ready.set()
        return capabilities

    async def reconnect(self, nursery: trio.Nursery) -> BrokerCapabilities:
        """Close and negotiate again; the new capabilities replace the old ones."""
        await self.aclose()
        self._stream = None
        self._ready = trio.Event()
        self._slots = trio.Semaphore(self.config.max_in_flight)
        self._abandoned.clear()
        return await self.open(nursery)

    async def aclose(self) -> None:
        """Close; every request still in flight fails with a TransportError."""
        if not self._closed:
            self._closed = True
            self._fail_everything(TransportError("the connection was closed", node=self.node))
            self._stop_io()
        if self._stream is not None:  # even when already marked closed: closing twice is harmless
            await self._stream.aclose()

    # -- requests ----------------------------------------------------------------------

    def pick_version(self, api_key: int) -> int:
        if self.capabilities is None:
            raise TransportError("the connection has not negotiated yet", node=self.node)
        return self.capabilities.pick_version(api_key, self.config.policy)

    async def request(
        self,
        message: KafkaRequest[ResponseT],
        *,
        version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT:
        """Send ``message`` at the picked (or given) version; return the decoded response.

        ``request_timeout`` overrides the configured one for this call; when it
        passes, the request is abandoned (its late answer is dropped) and
        ``KafkaTimeoutError`` is raised.  Cancelling the caller works as well.

        A Produce request with ``acks=0`` gets no response from Kafka: it
        returns once written, with None.
        """
        limit = request_timeout if request_timeout is not None else self.config.request_timeout
        deadline = trio.current_time() + limit
        if message.MESSAGE_TYPE != "request" or message.API_KEY is None:
            raise ProtocolError(f"{message.NAME} is not a request")
        if not self._ready.is_set():
            with trio.move_on_at(deadline):
                await self._ready.wait()
            if not self._ready.is_set():
                raise KafkaTimeoutError("timed out waiting for the connection to be ready", node=self.node)
        if self._failure is not None:
            raise self._failure.with_traceback(None)
        assert self._stream is not None and self.capabilities is not None
        api_key = message.API_KEY
        if version is None:
            version = self.pick_version(api_key)
        response_cls: type[KafkaMessage] = getattr(messages, messages.CLASS_BY_KEY[(api_key, "response")])
        expects_reply = not (api_key == PRODUCE and getattr(message, "acks", 1) == 0)
        pending: _Pending | None = None
        # The deadline covers the wait for an in-flight slot as well.  A bare scope
        # costs a third of fail_at's, which counts at thousands of requests a second.
        scope = trio.CancelScope(deadline=deadline)
        try:
            with scope:
                async with self._slots:
                    if self._failure is not None:  # the connection failed while this request queued
                        raise self._failure.with_traceback(None)
                    correlation_id = self._next_correlation_id()
                    frame = framing.encode_request(message, version, correlation_id, self.config.client_id)
                    limit = self.config.reply_limits.limit_for(
                        api_key, self.config.max_frame_size, message, version
                    )
                    pending = _Pending(response_cls, version, correlation_id, frame, expects_reply, limit)
                    self._enqueue(pending)
                    await pending.done.wait()
        except BaseException:
            if pending is not None:
                self._withdraw(pending)
            raise
        if scope.cancelled_caught or (pending is not None and trio.current_time() > deadline):
            # Past the deadline, reading the answer included: a deadline covers the whole call.
            if pending is None:
                raise KafkaTimeoutError(
                    f"timed out waiting for one of the {self.config.max_in_flight} in-flight slots "
                    f"to send {message.NAME} v{version}",
                    node=self.node,
                )
            self._withdraw(pending)
            raise KafkaTimeoutError(
                f"no response to {message.NAME} v{version} within the timeout", node=self.node
            )
        assert pending is not None
        if pending.error is not None:
            raise pending.error.with_traceback(None)  # shared by every failed caller: no pile-up
        return pending.response  # type: ignore[return-value]  # None only for acks=0

    def _next_correlation_id(self) -> int:
        value = next(self._correlation_ids)
        if value > _INT32_MAX:
            self._correlation_ids = itertools.count(2)
            value = 1
        return value

    # -- the writer -------------------------------------------------------------------

    def _enqueue(self, pending: _Pending) -> None:
        if self._io_scopes is None:
            self._start_io()
        if pending.expects_reply:
            self._pending[pending.correlation_id] = pending
        self._outbox[pending.correlation_id] = pending
        self._outbox_filled.set()

    def _start_io(self) -> None:
        assert self._nursery is not None and self._stream is not None
        # The scopes exist before the tasks run, so an early aclose() can cancel them;
        # start_soon spares the scheduling round trip nursery.start would cost.
        self._io_scopes = (trio.CancelScope(), trio.CancelScope())
        self._nursery.start_soon(self._read_loop, self._stream, self._io_scopes[0])
        self._nursery.start_soon(self._write_loop, self._stream, self._io_scopes[1])

    def _stop_io(self) -> None:
        if self._io_scopes is not None:
            for scope in self._io_scopes:
                scope.cancel()

    async def _write_loop(self, stream: FramedStream, scope: trio.CancelScope) -> None:
        """Write whatever requests queued while the last write was going out, in one send.

        Coalescing matters when many requests are in flight (a per-key lookup of
        a thousand groups): one system call and one scheduling round trip per
        wave instead of per request.
        """
        with scope:
            while True:
                if not self._outbox:
                    self._outbox_filled = trio.Event()
                    await self._outbox_filled.wait()
                    continue
                batch = list(self._outbox.values())
                self._outbox.clear()
                for item in batch:
                    item.state = _WRITING
                    # Recorded before the first byte goes out (the answer may come back at
                    # once); a write that does not complete closes the connection.
                    if item.expects_reply:
                        self._awaiting.append(item.correlation_id)
                        what = item.response_cls.NAME.removesuffix("Response")
                        self._reply_limits[item.correlation_id] = (item.reply_limit, what)
                    else:
                        self._acks0_ids[item.correlation_id] = None
                        if len(self._acks0_ids) > _ACKS0_MEMORY:
                            del self._acks0_ids[next(iter(self._acks0_ids))]
                data = batch[0].frame if len(batch) == 1 else b"".join(item.frame for item in batch)
                try:
                    await stream.send(data)
                except KafkaCompatError as exc:
                    self._fail_everything(exc)
                    self._close_soon()
                    return
                for item in batch:
                    item.state, item.frame = _WRITTEN, b""
                    if not item.expects_reply:
                        item.resolve()

    def _withdraw(self, pending: _Pending) -> None:
        """A caller gave up (timeout, cancellation): take its request back as far as it can be."""
        if pending.state == _QUEUED:  # never written: as if never asked
            self._outbox.pop(pending.correlation_id, None)
            self._pending.pop(pending.correlation_id, None)
        elif pending.state == _WRITING:  # cut off half-way: the stream cannot be trusted any more
            error = TransportError("a request was interrupted while being written", node=self.node)
            self._fail_everything(error)
            self._close_soon()
        elif self._pending.pop(pending.correlation_id, None) is not None:
            self._abandoned.add(pending.correlation_id)  # its late answer is dropped quietly

    # -- the reader -------------------------------------------------------------------

    async def _read_loop(self, stream: FramedStream, scope: trio.CancelScope) -> None:
        with scope:
            try:
                while True:
                    frame = await stream.receive_frame(expect=self._next_reply_limit)
                    self._deliver(frame)
            except KafkaCompatError as exc:
                if not self._closed:
                    log.debug("connection %s failed: %s", self.node, exc)
                self._fail_everything(exc)
            finally:
                # However the reader ends (a failure, aclose, a write cut off half-way and
                # _close_soon), the writer and the socket go with it.
                self._stop_io()
                await stream.aclose()

    def _next_reply_limit(self) -> tuple[int, str | None]:
        """The ceiling for the next frame: the one for the oldest request awaiting an answer."""
        if self._awaiting:
            return self._reply_limits.get(self._awaiting[0], (self.config.max_frame_size, None))
        if self._acks0_ids:  # a broker that answers acks=0 Produce anyway
            return self.config.max_frame_size, "Produce"
        return self.config.reply_limits.handshake, None  # nothing asked: whatever comes is refused

    def _deliver(self, frame: bytes) -> None:
        correlation_id = framing.peek_correlation_id(frame)
        if self._awaiting and self._awaiting[0] == correlation_id:
            self._awaiting.popleft()
            self._reply_limits.pop(correlation_id, None)
        elif correlation_id in self._acks0_ids:  # a broker that answers acks=0 anyway
            del self._acks0_ids[correlation_id]
            return
        else:
            expected = self._awaiting[0] if self._awaiting else None
            raise ProtocolError(
                f"the broker answered correlation id {correlation_id} where the oldest request "
                f"awaiting an answer has {expected}; closing the connection"
            )
        pending = self._pending.pop(correlation_id, None)
        if pending is None:
            if correlation_id in self._abandoned:
                self._abandoned.discard(correlation_id)
                return
            raise ProtocolError(
                f"the broker answered correlation id {correlation_id}, which no request in flight has; "
                "closing the connection"
            )
        try:
            # Trailing bytes are tolerated, as Kafka's Java client tolerates them.
            _, response = framing.decode_response(
                frame, pending.response_cls, pending.version, allow_trailing=True
            )
        except DecodeError as exc:
            exc.node = self.node
            pending.resolve(error=exc)
        else:
            pending.resolve(response)

    def _fail_everything(self, error: KafkaCompatError) -> None:
        if error.node is None:
            error.node = self.node
        if self._failure is None:
            self._failure = error
        pending, self._pending = self._pending, {}
        queued, self._outbox = self._outbox, {}
        for item in pending.values():  # sent: a close may be the broker refusing a removed version
            ranges = self.capabilities.api_ranges if self.capabilities else None
            removed = removed_version_error(error, item.response_cls.API_KEY, item.version, ranges)
            item.resolve(error=removed or error)
        for item in queued.values():
            item.resolve(error=error)
        self._ready.set()  # wake anyone waiting to send: they will see the failure

    def _close_soon(self) -> None:
        self._closed = True
        self._stop_io()

    def _note_change(self, capabilities: BrokerCapabilities) -> None:
        change = capability_change(self.node, self.capabilities, capabilities)
        if change is not None:
            self.changes.append(change)
            log.warning("%s", change.describe())


def _next_id(result: HandshakeResult) -> int:
    attempts = len(result.transcript.attempts)
    return attempts + 1


@asynccontextmanager
async def open_connection(
    host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
) -> AsyncIterator[BrokerConnection]:
    """``async with open_connection(host, port) as conn:`` negotiated, then closed.

    Errors come out as themselves (a ``KafkaCompatError`` from opening, or
    whatever the body raised), not wrapped in the nursery's exception group.
    """
    try:
        async with trio.open_nursery() as nursery:
            connection = BrokerConnection(host, port, config, node_id=node_id)
            try:
                await connection.open(nursery)
                yield connection
            finally:
                await connection.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise_lone(group)
