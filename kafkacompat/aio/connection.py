"""The asyncio driver of one negotiated connection, on the loop's sockets or asyncio streams.

Every decision is made by the sans-I/O ``ClientConnection`` (handshake, SASL,
correlation ids, the in-flight bound, response matching, requests given up);
this module only moves bytes between it and a channel (``channel.py``: a bare
socket on the loop for plain TCP, asyncio streams for TLS), applies the
deadlines, and wakes the callers its events name.  It imports no trio and
starts no thread.

Setup runs in the caller's task, each step within the instant the connection
gives it (``next_step``).  Once the connection is ready, a reader task feeds
what arrives to the connection; requests are written once the loop's current
turn is over, everything due meanwhile in one write (handed to the channel
whole, so no write is ever cut off half-way).  Requests past the in-flight
bound wait inside the connection, which says when a write is due
(``write_due_at``).  One timer of the loop serves the connection: it rings at
the earliest request deadline (``next_deadline``), when the connection ends
the requests whose deadline passed (``expire``), or at a write put off.  A
caller that times out or is cancelled loses its request: not written, it
never is; written, its late answer is read and dropped.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from kafkacompat.aio.channel import Channel, SocketChannel, StreamChannel
from kafkacompat.connection.client_connection import (
    ClientConnection,
    OpenSocket,
    Read,
    Ready,
    SetupFailed,
    Write,
    require_request,
    setup_budget,
)
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.driven import DrivenConnection
from kafkacompat.connection.os_errors import translate_os_error
from kafkacompat.errors import (
    KafkaCompatError,
    KafkaTimeoutError,
    TransportError,
)
from kafkacompat.negotiation.addresses import literal_version
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.pipeline_events import PipelineEvent, Ticket
from kafkacompat.protocol.message import KafkaMessage, KafkaRequest, ResponseT

__all__ = ["BrokerConnection", "open_connection"]


class BrokerConnection(DrivenConnection):
    """A connection to ``host:port`` that negotiates by itself before carrying requests."""

    _log = logging.getLogger("kafkacompat.aio")

    def __init__(
        self, host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
    ) -> None:
        super().__init__(host, port, config, node_id=node_id)
        self._channel: Channel | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._waiters: dict[int, asyncio.Future[KafkaMessage | None]] = {}  # id(ticket) -> its caller
        self._flush_scheduled = False
        self._timer: asyncio.TimerHandle | None = None  # the one timer: a deadline, a write put off
        self._timer_at = math.inf
        self._closed = False

    @property
    def is_ready(self) -> bool:
        p = self._protocol
        return p is not None and not self._closed and p.capabilities is not None and p.is_ready

    def __repr__(self) -> str:
        state = "ready" if self.is_ready else ("closed" if self._closed else "not ready")
        return f"<aio.BrokerConnection {self.node} {state}>"

    # -- lifecycle ----------------------------------------------------------------------

    # ASYNC109: the bound is the connection's own (next_step's overall), so that running out ends
    # the step with the typed error that names it; a cancel scope around open() would not.
    async def open(self, *, timeout: float | None = None) -> BrokerCapabilities:  # noqa: ASYNC109
        """Connect, negotiate and authenticate, all of it within ``timeout`` seconds (default:
        the config's ``call_timeout``); each step has its own bound too."""
        if self._protocol is not None and not self._closed:
            raise TransportError("this connection is already open", node=self.node)
        overall = asyncio.get_running_loop().time() + setup_budget(self.config, timeout)
        self._closed = False
        protocol = self._new_protocol()
        ready = await self._set_up(protocol, overall)
        channel = self._channel
        if isinstance(channel, SocketChannel):  # a write it finishes later may fail with nobody waiting
            channel.on_failure = functools.partial(self._write_failed, protocol)
        # The reader starts with the first request: a connection opened only to learn
        # the broker's capabilities never needs it.
        self._read_task = None
        return self._negotiated(protocol, ready)

    async def reconnect(self, *, timeout: float | None = None) -> BrokerCapabilities:  # noqa: ASYNC109
        """Close and negotiate again, within ``timeout`` as ``open``; the new capabilities
        replace the old ones."""
        await self.aclose()
        return await self.open(timeout=timeout)

    async def aclose(self) -> None:
        """Close; every request still in flight fails with a TransportError."""
        if self._closed:
            return
        self._closed = True
        if self._protocol is not None:
            self._dispatch(self._protocol.closed())
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, math.inf
        task, self._read_task = self._read_task, None
        try:
            if task is not None and task is not asyncio.current_task() and not task.done():
                task.cancel()
                await asyncio.wait({task})  # nothing may wait on the socket when it closes
        finally:
            await self._close_socket()

    # -- requests ----------------------------------------------------------------------

    async def request(
        self,
        message: KafkaRequest[ResponseT],
        *,
        version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT:
        """Send ``message`` at ``version`` (default: ``capabilities.pick_version``); return the answer.

        ``request_timeout`` overrides the configured one; when it passes, the
        connection gives the request up (its late answer is dropped) and
        ``KafkaTimeoutError`` is raised; the deadline covers waiting for an
        in-flight slot and decoding the answer.  A Produce with ``acks=0``
        returns None once written.
        """
        protocol = self._protocol
        if protocol is None or self.capabilities is None:
            raise TransportError("the connection has not negotiated yet", node=self.node)
        require_request(message)
        loop = asyncio.get_running_loop()
        limit = request_timeout if request_timeout is not None else self.config.request_timeout
        deadline = loop.time() + limit
        if self._closed and protocol.failure is None:
            raise TransportError("the connection was closed", node=self.node)
        ticket = protocol.send(message, version, deadline)  # past the bound, it waits for a slot in there
        waiter: asyncio.Future[KafkaMessage | None] = loop.create_future()
        self._waiters[id(ticket)] = waiter
        if self._read_task is None:
            reading = self._read_loop(protocol)
            self._read_task = loop.create_task(reading, name=f"kafkacompat reader {self.node}")
        self._schedule_flush(protocol)
        self._ring_by(deadline, protocol)
        try:
            return cast(ResponseT, await waiter)  # None only for an acks=0 Produce
        except BaseException:  # cancelled: the request is taken back as far as it can be
            self._give_up(protocol, ticket)
            raise

    # -- driving the sans-I/O connection ------------------------------------------------

    async def _set_up(self, protocol: ClientConnection, overall: float) -> Ready:
        """Drive ``protocol`` through its setup, each step within the instant it gives, all of
        it by ``overall`` (the loop's clock)."""
        now = asyncio.get_running_loop().time
        try:
            while True:
                # One timeout scope for the whole setup, moved at each step (a scope per step
                # cost a tenth of the driver's own time): a step that runs out ends the scope,
                # the connection is told, and the next step opens a new one.
                try:
                    async with asyncio.timeout(None) as scope:
                        while True:
                            step = protocol.next_step(now(), overall=overall)
                            action = step.action
                            if isinstance(action, Read):
                                assert self._channel is not None
                                scope.reschedule(step.ends_by)
                                try:
                                    data = await self._channel.read()
                                except (OSError, ssl.SSLError):
                                    data = b""  # a reset is a close, for the handshake
                                if data:
                                    protocol.receive_data(data)
                                else:
                                    protocol.closed()
                            elif isinstance(action, Write):
                                assert self._channel is not None
                                try:
                                    self._channel.write(action.data)
                                    # A request the socket took at once needs no deadline (moving
                                    # the scope's costs a timer handle made and one cancelled).
                                    if not self._channel.flushed:
                                        scope.reschedule(step.ends_by)
                                        await self._channel.drain()
                                except (OSError, ssl.SSLError):
                                    protocol.closed()  # a reset is a close, for the handshake
                                else:
                                    protocol.written()
                            elif isinstance(action, OpenSocket):
                                scope.reschedule(step.ends_by)
                                await self._open_socket(protocol)
                            elif isinstance(action, SetupFailed):
                                raise action.error
                            else:
                                assert isinstance(action, Ready)
                                return action
                except TimeoutError:
                    if not scope.expired():
                        raise
                    protocol.step_expired()
        except BaseException:
            await self._close_socket()
            raise

    async def _open_socket(self, protocol: ClientConnection) -> None:
        await self._close_socket()
        tls = self.config.tls
        doing = f"connecting{' (TLS handshake)' if tls is not None else ''} to {self.node}"
        try:
            version = literal_version(self.host) if tls is None else None
            if version is not None:
                family = socket.AF_INET6 if version == 6 else socket.AF_INET
                self._channel = await SocketChannel.connect(self.host, self.port, family)
            else:
                context = None
                if tls is not None:
                    from kafkacompat.connection.tls import tls_context  # TLS only: aio's RSS target

                    context = tls_context(tls)
                server_hostname = (tls.server_hostname or self.host) if tls is not None else None
                self._channel = await StreamChannel.connect(self.host, self.port, context, server_hostname)
        except TimeoutError:  # the system's own connect timeout
            protocol.open_failed(KafkaTimeoutError(f"timed out while {doing}", node=self.node))
        except (OSError, ssl.SSLError) as exc:
            protocol.open_failed(translate_os_error(exc, self.node, doing))
        else:
            protocol.connected()

    async def _read_loop(self, protocol: ClientConnection) -> None:
        channel = self._channel
        assert channel is not None
        error: KafkaCompatError | None = None
        try:
            while protocol.is_ready:
                data = await channel.read()
                if not data or not protocol.is_ready:  # closed meanwhile (a failed write): nothing to read
                    break
                self._dispatch(protocol.receive_data(data))
        except (OSError, ssl.SSLError) as exc:
            error = translate_os_error(exc, self.node, "reading a response")
        finally:
            if protocol.is_ready:
                self._dispatch(protocol.closed(error))
            if not self._closed:
                self._closed = True
                await self._close_socket()

    def _schedule_flush(self, protocol: ClientConnection) -> None:
        """Write what is due once this turn of the loop is over: the requests made in the
        meantime (a gather of a thousand, say) go out together, in one write."""
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush, protocol)

    def _flush(self, protocol: ClientConnection) -> None:
        self._flush_scheduled = False
        channel = self._channel
        if channel is None or not protocol.is_ready:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        due = protocol.write_due_at(now)
        if due > now:
            self._ring_by(due, protocol)  # a write put off
            return
        data = protocol.bytes_to_send()
        try:
            # Handed to the channel, the bytes go out whole (it keeps what the socket does
            # not take yet; the in-flight bound bounds that): the write is done.
            channel.write(data)
        except (OSError, ssl.SSLError) as exc:
            self._dispatch(protocol.closed(translate_os_error(exc, self.node, "writing a request")))
            return
        self._dispatch(protocol.write_done())

    def _ring_by(self, at: float, protocol: ClientConnection) -> None:
        """The one timer rings by ``at`` (it is moved when it was set later)."""
        if at < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = at
            self._timer = asyncio.get_running_loop().call_at(at, self._timer_rang, protocol)

    def _timer_rang(self, protocol: ClientConnection) -> None:
        """End the requests whose deadline passed, make a write put off, and set the timer for
        the next instant (asyncio may run a timer a clock tick early: it rings again then)."""
        self._timer, self._timer_at = None, math.inf
        if not protocol.is_ready:
            return
        self._dispatch(protocol.expire(asyncio.get_running_loop().time()))
        self._flush(protocol)
        if protocol.is_ready:
            self._ring_by(protocol.next_deadline(), protocol)

    def _write_failed(self, protocol: ClientConnection, exc: OSError) -> None:
        if protocol.is_ready:
            self._dispatch(protocol.closed(translate_os_error(exc, self.node, "writing a request")))

    def _give_up(self, protocol: ClientConnection, ticket: Ticket) -> None:
        waiter = self._waiters.pop(id(ticket), None)
        if waiter is not None and not waiter.done():
            waiter.cancel()
        if protocol.is_ready:
            self._dispatch(protocol.abandon(ticket))
            self._schedule_flush(protocol)  # its slot may go to a request waiting for one

    def _dispatch(self, events: list[PipelineEvent]) -> None:
        protocol = self._protocol
        if not events or protocol is None:
            return
        for ticket, response, error in protocol.endings(events, asyncio.get_running_loop().time()):
            waiter = self._waiters.pop(id(ticket), None)
            if waiter is None or waiter.done():
                continue
            if error is not None:
                waiter.set_exception(error.with_traceback(None))
            else:
                waiter.set_result(response)
        if protocol.is_ready:
            self._schedule_flush(protocol)  # the slots they freed may go to waiting requests

    async def _close_socket(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()


@asynccontextmanager
async def open_connection(
    host: str,
    port: int,
    config: ConnectionConfig | None = None,
    *,
    node_id: int | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 (the connection's own bound: see open)
) -> AsyncIterator[BrokerConnection]:
    """``async with open_connection(host, port) as conn:`` negotiated, then closed.

    ``timeout`` bounds connecting, negotiating and authenticating together (default: the
    config's ``call_timeout``).
    """
    connection = BrokerConnection(host, port, config, node_id=node_id)
    await connection.open(timeout=timeout)
    try:
        yield connection
    finally:
        await connection.aclose()
