"""One negotiated, pipelined connection to one broker: the trio driver.

Opening a ``BrokerConnection`` connects (TCP, TLS), runs the ApiVersions
handshake, authenticates with SASL where configured, and only then lets
requests through: a request made before the connection is ready waits for it.
The capabilities learned belong to this connection and die with it;
``reconnect`` negotiates again, replaces them, and records what changed (a
broker upgraded or downgraded in between).

Every protocol decision is the sans-I/O ``ClientConnection``'s: the setup and
its deadlines (``negotiate``), correlation ids, the in-flight bound and the
requests waiting past it, when a write is due, matching answers to requests,
acks=0 Produce, requests given up, each answer's size ceiling, and each
request's deadline (``expire``).  This module puts callers to sleep and wakes
the ones the events name; ``connection_tasks`` moves the bytes and keeps the
one timer.

A caller sleeps on a bare ``wait_task_rescheduled`` (a fraction of an Event's
cost, which counts at thousands of requests a second), with no cancel scope of
its own.  One that times out (the connection ends its request) or is cancelled
(it takes its request back) loses it as far as it can be taken: not written
yet, it never is; written, its late answer is read and dropped; cut off
half-way through being written, the connection fails.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import outcome  # trio's own dependency: what wakes a task
import trio

from kafkacompat.connection.client_connection import ClientConnection, require_request, setup_budget
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.driven import DrivenConnection
from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError, TransportError, attach_context
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.pipeline_events import PipelineEvent, Ticket
from kafkacompat.protocol.message import KafkaMessage, KafkaRequest, ResponseT
from kafkacompat.transport.connection_tasks import ConnectionTasks
from kafkacompat.transport.negotiate import set_up

__all__ = ["BrokerConnection", "open_connection"]


class _Failed:
    """What wakes a caller whose request did not end with an answer: why.  An answer
    wakes its caller as itself: the common case costs no wrapper."""

    __slots__ = ("error",)

    def __init__(self, error: KafkaCompatError) -> None:
        self.error = error


#: What a caller is woken with: the answer (None for acks=0), or why there is none.
_Outcome = KafkaMessage | None | _Failed


class _Call:
    """One caller of ``request``, asleep until its request ends."""

    __slots__ = ("ended", "task")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.ended = False

    def abort(self, raise_cancel: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        """Cancelled while asleep: nobody may wake it now; the caller takes its request back."""
        self.ended = True
        return trio.lowlevel.Abort.SUCCEEDED


class BrokerConnection(DrivenConnection):
    """A connection to ``host:port`` that negotiates by itself before carrying requests."""

    _log = logging.getLogger("kafkacompat.transport")

    def __init__(
        self, host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
    ) -> None:
        super().__init__(host, port, config, node_id=node_id)
        self._tasks: ConnectionTasks | None = None
        self._ready = trio.Event()
        self._failure: KafkaCompatError | None = None  # why the connection could not be used
        self._callers: dict[Ticket, _Call] = {}
        self._closed = False
        # The run's clock, read directly (``trio.current_time`` looks it up on every call);
        # bound in ``open``, which runs in the run this connection lives in.
        self._now: Callable[[], float] = trio.current_time

    @property
    def is_ready(self) -> bool:
        protocol = self._protocol
        return protocol is not None and protocol.is_ready and self._failure is None and not self._closed

    def __repr__(self) -> str:
        state = "ready" if self.is_ready else ("closed" if self._closed else "not ready")
        return f"<BrokerConnection {self.node} {state}>"

    # -- lifecycle ----------------------------------------------------------------------

    # ASYNC109: the bound is the connection's own (next_step's overall), so that running out ends
    # the step with the typed error that names it; a cancel scope around open() would not.
    async def open(
        self, nursery: trio.Nursery | None = None, *, timeout: float | None = None  # noqa: ASYNC109
    ) -> BrokerCapabilities:
        """Connect, negotiate and authenticate, all of it within ``timeout`` seconds (default:
        the config's ``call_timeout``); each step has its own bound too.

        The reader, writer and timer tasks run in ``nursery`` when one is
        given, else as system tasks this connection owns (see ``connection_tasks``).
        """
        if self._tasks is not None:
            raise TransportError("this connection is already open", node=self.node)
        overall = trio.current_time() + setup_budget(self.config, timeout)
        self._closed = False
        protocol = self._new_protocol()
        try:
            stream, ready = await set_up(protocol, self.host, self.port, self.config, overall)
        except KafkaCompatError as exc:
            self._fail_setup(attach_context(exc, node=self.node))
            raise
        capabilities = self._negotiated(protocol, ready)
        self._failure = None
        self._now = trio.lowlevel.current_clock().current_time
        self._tasks = ConnectionTasks(protocol, stream, self._dispatch, nursery, self.node)
        self._ready.set()
        return capabilities

    async def reconnect(
        self, nursery: trio.Nursery | None = None, *, timeout: float | None = None  # noqa: ASYNC109
    ) -> BrokerCapabilities:
        """Close and negotiate again, within ``timeout`` as ``open``; the new capabilities
        replace the old ones."""
        await self.aclose()
        self._tasks, self._protocol = None, None
        self._ready = trio.Event()
        return await self.open(nursery, timeout=timeout)

    async def aclose(self) -> None:
        """Close; every request still in flight fails with a TransportError."""
        if not self._closed:
            self._closed = True
            if self._protocol is not None:
                self._dispatch(self._protocol.closed())
            else:
                self._fail_setup(TransportError("the connection was closed", node=self.node))
            if self._tasks is not None:
                self._tasks.stop()
        if self._tasks is not None:  # even when already marked closed: closing twice is harmless
            await self._tasks.stream.aclose()

    # -- requests ----------------------------------------------------------------------

    async def request(
        self,
        message: KafkaRequest[ResponseT],
        *,
        version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT:
        """Send ``message`` at ``version`` (default: ``capabilities.pick_version``); return the answer.

        ``request_timeout`` overrides the configured one for this call; when it
        passes, the connection gives the request up (its late answer is dropped) and
        ``KafkaTimeoutError`` is raised.  Cancelling the caller works as well.
        The deadline covers waiting for an in-flight slot and decoding the answer.

        A Produce request with ``acks=0`` gets no response from Kafka: it
        returns once written, with None.
        """
        limit = request_timeout if request_timeout is not None else self.config.request_timeout
        deadline = self._now() + limit
        require_request(message)
        protocol, tasks = self._protocol, self._tasks
        if protocol is None or tasks is None or self._failure is not None:  # not open yet, or it failed
            protocol, tasks = await self._usable(deadline)
        ticket = protocol.send(message, version, deadline)  # past the bound, it waits for a slot in there
        call = self._callers[ticket] = _Call(trio.lowlevel.current_task())
        tasks.queued(deadline)  # the callers of this scheduling round go out in one write
        try:
            result: _Outcome = await trio.lowlevel.wait_task_rescheduled(call.abort)
        except BaseException:
            self._give_up(protocol, ticket)
            raise
        if result.__class__ is not _Failed:
            return result  # type: ignore[return-value]  # None only for acks=0
        assert isinstance(result, _Failed)
        raise result.error.with_traceback(None)  # shared by every failed caller: no pile-up

    async def _usable(self, deadline: float) -> tuple[ClientConnection, ConnectionTasks]:
        """The negotiated protocol and its tasks once the connection is ready (waiting for it
        until ``deadline``), or the error that says why it cannot be used."""
        if not self._ready.is_set():
            with trio.move_on_at(deadline):
                await self._ready.wait()
            if not self._ready.is_set():
                raise KafkaTimeoutError("timed out waiting for the connection to be ready", node=self.node)
        protocol, tasks = self._protocol, self._tasks
        if self._failure is not None or protocol is None or tasks is None:
            failure = self._failure or TransportError("the connection was closed", node=self.node)
            raise failure.with_traceback(None)
        return protocol, tasks

    def _give_up(self, protocol: ClientConnection, ticket: Ticket) -> None:
        """A caller gave up (timeout, cancellation): its request is taken back as far as it can be."""
        call = self._callers.pop(ticket, None)
        if call is not None:
            call.ended = True
        if protocol.is_ready:
            self._dispatch(protocol.abandon(ticket))
            if self._tasks is not None and protocol is self._tasks.protocol:
                self._tasks.slots_may_be_free()

    # -- waking callers -----------------------------------------------------------------

    def _dispatch(self, events: list[PipelineEvent]) -> None:
        protocol = self._protocol
        if not events or protocol is None:
            return
        callers = self._callers
        for ticket, response, error in protocol.endings(events, self._now()):
            call = callers.pop(ticket, None)
            if call is not None:
                self._wake(call, response if error is None else _Failed(error))
        tasks = self._tasks
        if tasks is not None:
            if tasks.protocol.is_ready:
                tasks.slots_may_be_free()
            else:
                tasks.stop()  # the connection failed: the reader closes the socket

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
    host: str,
    port: int,
    config: ConnectionConfig | None = None,
    *,
    node_id: int | None = None,
    timeout: float | None = None,
) -> contextlib.AbstractAsyncContextManager[BrokerConnection]:
    """``async with open_connection(host, port) as conn:`` negotiated, then closed.

    ``timeout`` bounds connecting, negotiating and authenticating together (default: the
    config's ``call_timeout``).  No nursery: the connection's tasks are its own (see
    ``connection_tasks``), so errors come out as themselves, never in an exception group.
    """
    return _Opened(BrokerConnection(host, port, config, node_id=node_id), timeout)


class _Opened(contextlib.AbstractAsyncContextManager[BrokerConnection]):
    """``open_connection``'s context: a class, since an async generator costs a connect
    trio's generator hooks and a frame more than these two calls."""

    __slots__ = ("_connection", "_timeout")

    def __init__(self, connection: BrokerConnection, timeout: float | None) -> None:
        self._connection = connection
        self._timeout = timeout

    async def __aenter__(self) -> BrokerConnection:
        await self._connection.open(timeout=self._timeout)
        return self._connection

    async def __aexit__(self, *exc_info: object) -> None:
        await self._connection.aclose()
