"""One negotiated, pipelined connection to one broker: the trio driver.

Opening a ``BrokerConnection`` connects (TCP, TLS), runs the ApiVersions
handshake, authenticates with SASL where configured (its versions picked from
the handshake's answer), and only then lets requests through: a request made
before the connection is ready waits for it.  The capabilities learned belong
to this connection and die with it; ``reconnect`` negotiates again, replaces
them, and records what changed (a broker upgraded or downgraded in between).

Every protocol decision is the sans-I/O ``ClientConnection``'s (and, once
ready, its ``RequestPipeline``'s): correlation ids, the in-flight bound,
matching answers to requests (an answer out of turn fails every request in
flight and the connection closes), acks=0 Produce, requests given up, each
answer's size ceiling, and a close that answers a removed version.  This
module moves bytes between it and a trio socket, keeps the deadlines on
trio's clock, and wakes the callers its events name.

Three tasks start with the first request (a connection opened only to read
the capabilities never needs them): a writer that sends whatever requests
queued while its last write was going out, in one write, a reader that feeds
what arrives to the connection, and the deadline keeper.  Requests waiting for
an in-flight slot are sent by the reader itself, in one write just before it
waits for more (waking the writer would cost a scheduling step per wave), and
in waves of a quarter of the slots (``_refill_due``, ``REFILL_DELAY``): a
broker that answers one request at a time would otherwise cost a write per
answer.  They run in the
nursery given to ``open``, else (``open_connection`` gives none) as system
tasks the connection owns: a nursery per connect cost a fifth of a bare
``trio.socket`` round trip (its exit is a schedule point), and the connection
has what one would give, its own cancel scopes for the tasks and one place
for their failures (the waiting requests).  A system task must never raise
(the run would end in ``TrioInternalError``), so each turns any exception
into the connection's failure; it runs in a copy of the opener's context
variables, and trio leaves KeyboardInterrupt to the application's task.

A caller that times out or is cancelled takes its request back as far as it
can: still queued, it is never written; already written, its late answer is
read and dropped; cut off half-way through being written, the connection
fails, since the stream would be corrupt.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import outcome  # trio's own dependency: what wakes a task
import trio

from kafkacompat.connection.client_connection import ClientConnection, require_request
from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.connection.sasl import log_authenticated
from kafkacompat.errors import (
    KafkaCompatError,
    KafkaTimeoutError,
    TransportError,
    attach_context,
)
from kafkacompat.negotiation.addresses import check_address
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake_identity import ApiVersionsMemory, BrokerIdentity
from kafkacompat.negotiation.handshake_types import HandshakeResult
from kafkacompat.negotiation.pipeline_events import (
    ConnectionFailed,
    PipelineEvent,
    RequestFailed,
    ResponseReceived,
    Ticket,
)
from kafkacompat.protocol.message import KafkaMessage, KafkaRequest, ResponseT
from kafkacompat.transport.connection_tasks import ConnectionTasks, Scopes
from kafkacompat.transport.deadlines import DeadlineKeeper
from kafkacompat.transport.negotiate import set_up
from kafkacompat.transport.stream import ByteStream

if TYPE_CHECKING:  # a first negotiation has nothing to compare with: loaded on a reconnect
    from kafkacompat.negotiation.capability_changes import CapabilityChange

__all__ = ["BrokerConnection", "open_connection"]

log = logging.getLogger("kafkacompat.transport")

#: Slots freed by answers are refilled in waves of a quarter of max_in_flight (see
#: ``_refill_due``), but a request never waits longer than this for a slot that is free.
REFILL_DELAY = 0.001


class _Failed:
    """What wakes a caller whose request did not end with an answer: ``error``, or None
    when its deadline passed (waiting for a slot or an answer, or an answer decoded too
    late).  An answer wakes its caller as itself: the common case costs no wrapper."""

    __slots__ = ("error",)

    def __init__(self, error: KafkaCompatError | None) -> None:
        self.error = error


_LATE = _Failed(None)
#: What a caller is woken with: the answer (None for acks=0), or why there is none.
_Outcome = KafkaMessage | None | _Failed


class _Call:
    """One caller of ``request``, asleep until its request ends.

    A bare task and ``reschedule`` cost a fraction of an Event per request, and a
    caller waiting for an in-flight slot is not woken to send: its request goes
    out on its behalf as soon as a slot frees, so it wakes once, with the answer.
    """

    __slots__ = ("deadline", "ended", "message", "task", "ticket", "version")

    def __init__(
        self, task: trio.lowlevel.Task, message: KafkaMessage, version: int, deadline: float
    ) -> None:
        self.task = task
        self.message = message
        self.version = version
        self.deadline = deadline
        self.ticket: Ticket | None = None
        self.ended = False

    def abort(self, raise_cancel: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        """Cancelled while asleep: nobody may wake it now; ``_give_up`` takes what is left of
        its request.  A method, not a closure made per request."""
        self.ended = True
        return trio.lowlevel.Abort.SUCCEEDED


class BrokerConnection(ConnectionTasks):
    """A connection to ``host:port`` that negotiates by itself before carrying requests."""

    def __init__(
        self, host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
    ) -> None:
        self.host, self.port = check_address(host, port, source="the caller")  # as every driver: here
        self.node_id = node_id
        self.config = config or DEFAULT_CONFIG
        self.capabilities: BrokerCapabilities | None = None
        self.handshake: HandshakeResult | None = None
        # KIP-1242: the broker this connection means to reach (None: a bootstrap connection)
        # and the cluster's memory of advertised ApiVersions maxima; the cluster layer sets both.
        self.identity: BrokerIdentity | None = None
        self.api_versions_memory: ApiVersionsMemory | None = None
        self.changes: list[CapabilityChange] = []
        self._protocol: ClientConnection | None = None
        self._stream: ByteStream | None = None
        self._ready = trio.Event()
        self._failure: KafkaCompatError | None = None  # why the connection could not be used
        # The task waiting for each request's end; a bare task and reschedule cost a
        # fraction of an Event per request, which counts at thousands a second.
        self._callers: dict[Ticket, _Call] = {}
        self._backlog: deque[_Call] = deque()  # callers waiting for an in-flight slot, oldest first
        self._writer: trio.lowlevel.Task | None = None  # the writer, while it waits for work
        self._writing_now = False  # _write_now is sending, on the writer's behalf
        self._reading = False  # the reader is dispatching what it read: it writes, before waiting
        self._write_due_flag = False  # the reader has requests to write before it waits
        self._unsent: memoryview | None = None  # the rest of a write _write_now began
        self._nursery: trio.Nursery | None = None
        self._io_scopes: Scopes | None = None
        self._deadlines: DeadlineKeeper[_Call] = DeadlineKeeper(self._expire)
        self._refill_put_off = False  # the keeper's alarm will fill the slots, REFILL_DELAY after
        self._closed = False
        # The run's clock, read directly (``trio.current_time`` looks it up on every call);
        # bound in ``open``, which runs in the run this connection lives in.
        self._now: Callable[[], float] = trio.current_time

    @property
    def is_ready(self) -> bool:
        protocol = self._protocol
        return protocol is not None and protocol.is_ready and self._failure is None and not self._closed

    @property
    def in_flight(self) -> int:
        protocol = self._protocol
        return protocol.in_flight if protocol is not None and protocol.is_ready else 0

    def __repr__(self) -> str:
        state = "ready" if self.is_ready else ("closed" if self._closed else "not ready")
        return f"<BrokerConnection {self.node} {state}>"

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self, nursery: trio.Nursery | None = None) -> BrokerCapabilities:
        """Connect, negotiate and authenticate.

        The reader, writer and deadline tasks run in ``nursery`` when one is
        given, else as system tasks this connection owns (see the module's doc).
        """
        if self._stream is not None:
            raise TransportError("this connection is already open", node=self.node)
        self._closed = False
        config = self.config
        protocol = ClientConnection(
            config,
            node=self.node,
            node_id=self.node_id,
            identity=self.identity,
            api_versions_memory=self.api_versions_memory,
        )
        try:
            stream, ready = await set_up(protocol, self.host, self.port, config)
        except KafkaCompatError as exc:
            self._fail_setup(attach_context(exc, node=self.node))
            raise
        if ready.authenticated is not None:
            log_authenticated(self.node, config, ready.authenticated)
        if self.capabilities is not None:  # a reconnect: what did the broker change in between?
            from kafkacompat.negotiation.capability_changes import note_change  # reconnects only

            note_change(self.changes, self.node, self.capabilities, ready.capabilities, log)
        self._protocol, self._stream = protocol, stream
        self.handshake, self.capabilities = ready.handshake, ready.capabilities
        self._failure = None
        # The reader and writer start with the first request: a connection opened to
        # learn the broker's capabilities and closed again never needs them.
        self._nursery, self._io_scopes = nursery, None
        self._deadlines = DeadlineKeeper(self._expire)
        self._refill_put_off = False
        self._now = trio.lowlevel.current_clock().current_time
        self._ready.set()
        return ready.capabilities

    async def reconnect(self, nursery: trio.Nursery | None = None) -> BrokerCapabilities:
        """Close and negotiate again; the new capabilities replace the old ones."""
        await self.aclose()
        self._stream = None
        self._protocol = None
        self._ready = trio.Event()
        return await self.open(nursery)

    async def aclose(self) -> None:
        """Close; every request still in flight fails with a TransportError."""
        if not self._closed:
            self._closed = True
            if self._protocol is not None:
                self._dispatch(self._protocol.closed())
            else:
                self._fail_setup(TransportError("the connection was closed", node=self.node))
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
        deadline = self._now() + limit
        api_key = require_request(message)
        protocol = self._protocol
        if protocol is None or self._failure is not None:  # not open yet, or it failed
            protocol = await self._usable(deadline)
        if version is None:
            version = self.pick_version(api_key)
        call = _Call(trio.lowlevel.current_task(), message, version, deadline)
        if self._io_scopes is None:
            self._start_io()
        if self._backlog or not protocol.has_capacity:
            if protocol.failure is not None:
                raise protocol.failure.with_traceback(None)
            self._backlog.append(call)  # sent on its behalf when a slot frees, in turn
        else:
            self._send(protocol, call)  # an encoding error is raised here, to this caller
            self._wake_writer()  # the callers of this scheduling round go out in one write
        # The deadline covers the wait for an in-flight slot as well.  It is kept by the
        # connection's deadline keeper, not a cancel scope per call (see deadlines.py).
        self._deadlines.add(deadline, call, len(self._callers) + len(self._backlog))
        try:
            result: _Outcome = await trio.lowlevel.wait_task_rescheduled(call.abort)
        except BaseException:
            self._give_up(protocol, call)
            raise
        if result.__class__ is not _Failed:
            return result  # type: ignore[return-value]  # None only for acks=0
        assert isinstance(result, _Failed)
        if result.error is not None:
            raise result.error.with_traceback(None)  # shared by every failed caller: no pile-up
        # Past the deadline, reading the answer included: a deadline covers the whole call.
        self._give_up(protocol, call)
        if call.ticket is None:
            raise KafkaTimeoutError(
                f"timed out waiting for one of the {self.config.max_in_flight} in-flight slots "
                f"to send {message.NAME} v{version}",
                node=self.node,
            )
        raise KafkaTimeoutError(
            f"no response to {message.NAME} v{version} within the timeout", node=self.node
        )

    async def _usable(self, deadline: float) -> ClientConnection:
        """The negotiated protocol once the connection is ready (waiting for it until
        ``deadline``), or the error that says why it cannot be used."""
        if not self._ready.is_set():
            with trio.move_on_at(deadline):
                await self._ready.wait()
            if not self._ready.is_set():
                raise KafkaTimeoutError("timed out waiting for the connection to be ready", node=self.node)
        protocol = self._protocol
        if self._failure is not None or protocol is None:
            failure = self._failure or TransportError("the connection was closed", node=self.node)
            raise failure.with_traceback(None)
        return protocol

    def _send(self, protocol: ClientConnection, call: _Call) -> None:
        call.ticket = ticket = protocol.send(call.message, call.version)
        self._callers[ticket] = call

    def _refill_due(self) -> bool:
        """Whether enough in-flight slots are free to send the waiting requests into.

        Slots freed by answers are refilled in waves of a quarter of
        ``max_in_flight``, not one by one: a broker that answers one request at a
        time would otherwise cost a write (a system call and a scheduling step) per
        answer, while it still has three quarters of the bound queued.  A refill put
        off is due ``REFILL_DELAY`` later at the latest (the deadline keeper's alarm
        sees to it), so requests behind slow ones (a long-polling Fetch) are not held back.
        """
        protocol = self._protocol
        if protocol is None or not protocol.is_ready:
            return True  # _fill knows what to do
        bound = protocol.max_in_flight
        free = bound - protocol.in_flight
        return free >= max(1, bound // 4) or free == bound

    def _fill(self) -> None:
        """Send what waits for a slot, oldest first, while there are slots; the callers sleep on."""
        if self._refill_put_off:  # whatever was put off goes now
            self._refill_put_off = False
            self._deadlines.clear_alarm()
        protocol, backlog = self._protocol, self._backlog
        if protocol is None or not protocol.is_ready:
            return
        while backlog and protocol.has_capacity:
            call = backlog.popleft()
            try:
                self._send(protocol, call)
            except KafkaCompatError as exc:  # this caller's message cannot be encoded
                self._wake(call, _Failed(exc))
        if self._writer is None or self._writing_now:
            return  # the writer is busy: it takes what queued when its write is done
        if self._reading:
            self._write_due_flag = True  # the reader sends it before it next waits (see _write_now)
        else:
            self._write_now(protocol)

    def _give_up(self, protocol: ClientConnection, call: _Call) -> None:
        """A caller gave up (timeout, cancellation): its request is taken back as far as it can be."""
        call.ended = True
        ticket = call.ticket
        if ticket is None:
            with contextlib.suppress(ValueError):
                self._backlog.remove(call)
            return
        self._callers.pop(ticket, None)
        if protocol.is_ready:
            self._dispatch(protocol.abandon(ticket))
            self._fill()  # its slot, if it held one

    # -- waking callers -----------------------------------------------------------------

    def _dispatch(self, events: list[PipelineEvent]) -> None:
        if not events:
            return
        now = self._now()  # after decoding: a deadline covers reading the answer
        freed = False
        for event in events:
            if isinstance(event, ResponseReceived):
                self._settle(event.ticket, event.response, now)
            elif isinstance(event, ConnectionFailed):
                for ticket in event.failed:
                    self._settle(ticket, _Failed(event.error_of(ticket)), now)
                backlog, self._backlog = self._backlog, deque()
                failed = _Failed(event.error)
                for call in backlog:  # waiting for a slot: they see the failure
                    self._wake(call, failed)
                if self._protocol is not None and not self._protocol.is_ready:
                    self._stop_io()  # the reader closes the socket
                return
            elif isinstance(event, RequestFailed):
                self._settle(event.ticket, _Failed(event.error), now)
            else:  # SentWithoutReply: an acks=0 Produce ends once written
                self._settle(event.ticket, None, now)
            freed = True
        if freed and self._backlog:
            if self._refill_due():
                self._fill()
            elif not self._refill_put_off:
                self._refill_put_off = True
                self._deadlines.set_alarm(now + REFILL_DELAY, self._fill)

    def _settle(self, ticket: Ticket, result: _Outcome, now: float) -> None:
        call = self._callers.pop(ticket, None)
        if call is not None:
            self._wake(call, _LATE if now > call.deadline else result)

    def _expire(self, call: _Call) -> None:
        self._wake(call, _LATE)

    @staticmethod
    def _wake(call: _Call, result: _Outcome) -> None:
        if not call.ended:
            call.ended = True
            trio.lowlevel.reschedule(call.task, outcome.Value(result))

    def _fail_setup(self, error: KafkaCompatError) -> None:
        attach_context(error, node=self.node)
        if self._failure is None:
            self._failure = error
        self._ready.set()  # wake anyone waiting to send: they will see the failure


def open_connection(
    host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
) -> contextlib.AbstractAsyncContextManager[BrokerConnection]:
    """``async with open_connection(host, port) as conn:`` negotiated, then closed.

    No nursery: the connection's tasks are its own (see the module's doc), so
    errors come out as themselves, never in an exception group.
    """
    return _Opened(BrokerConnection(host, port, config, node_id=node_id))


class _Opened(contextlib.AbstractAsyncContextManager[BrokerConnection]):
    """``open_connection``'s context: a class, since an async generator costs a connect
    trio's generator hooks and a frame more than these two calls."""

    __slots__ = ("_connection",)

    def __init__(self, connection: BrokerConnection) -> None:
        self._connection = connection

    async def __aenter__(self) -> BrokerConnection:
        await self._connection.open()
        return self._connection

    async def __aexit__(self, *exc_info: object) -> None:
        await self._connection.aclose()
