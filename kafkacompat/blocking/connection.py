"""The blocking driver: a negotiated connection on a plain socket, for scripts and threads.

Every decision is made by the sans-I/O ``ClientConnection``, as for the trio and
asyncio drivers: the handshake (with its retries and the pre-0.10 fallback),
SASL, correlation ids continuing the handshake's, each answer held to its
ceiling from its size prefix, acks=0, a late answer to a request given up, a
close on a version Kafka 4.x removed (``VersionRemovedError``).  This module
only moves bytes through a blocking socket (``blocking_socket.BlockingSocket``, TLS
included) and applies the deadlines.  It imports neither trio,
tenacity nor asyncio.

A blocking caller waits for its answer, so requests go one at a time: no
pipelining.  A lock makes that hold when several threads share a connection.
A request that times out is given up: sent whole, its late answer is read and
dropped before the next one's; cut off while being written, the stream is
corrupt and the connection fails.  After any failure the socket is closed and
every later request raises what ended it.  An interrupted request (Ctrl-C) is
taken back if none of it was written; otherwise the connection closes, as where
the interrupt landed (mid-write, or after ``recv`` returned bytes) cannot be known.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from types import TracebackType
from typing import cast

from kafkacompat.blocking.sockets import BlockingSocket
from kafkacompat.connection.client_connection import (
    ClientConnection,
    Read,
    Ready,
    SetupFailed,
    Write,
    require_request,
    setup_budget,
)
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.driven import DrivenConnection
from kafkacompat.errors import (
    ConfigError,
    KafkaCompatError,
    KafkaTimeoutError,
    NegotiationError,
    TransportError,
    attach_context,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.pipeline_events import PipelineEvent, Stage, Ticket, endings
from kafkacompat.protocol.message import KafkaRequest, ResponseT

__all__ = ["BlockingConnection", "open_blocking_connection"]

# Setup takes a handful of connects, writes and replies (the machines bound themselves),
# and each reply as many reads as it comes in pieces: a bound far above both.
_MAX_SETUP_STEPS = 4096


class BlockingConnection(DrivenConnection):
    """A connection to ``host:port`` on a blocking socket; ``open()`` negotiates it.

    ``with open_blocking_connection(host, port) as conn: conn.request(...)``.  Requests
    take turns on the socket: ``in_flight`` is at most one.
    """

    _log = logging.getLogger("kafkacompat.blocking")

    def __init__(
        self, host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
    ) -> None:
        super().__init__(host, port, config, node_id=node_id)
        self._wire = BlockingSocket(self.host, self.port, self.config)
        self._lock = threading.Lock()

    @property
    def is_ready(self) -> bool:
        protocol = self._protocol
        return protocol is not None and protocol.is_ready and self._wire.sock is not None

    def __repr__(self) -> str:
        return f"<BlockingConnection {self.node} {'ready' if self.is_ready else 'not ready'}>"

    def __enter__(self) -> BlockingConnection:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # -- lifecycle ----------------------------------------------------------------------

    def open(self, *, timeout: float | None = None) -> BrokerCapabilities:
        """Connect, negotiate and authenticate, all of it within ``timeout`` seconds (default:
        the config's ``call_timeout``); each step has its own bound too (connect_timeout,
        request_timeout)."""
        overall = time.monotonic() + setup_budget(self.config, timeout)
        with self._lock:
            if self.is_ready:
                raise TransportError("this connection is already open", node=self.node)
            self._close_locked()
            protocol = self._new_protocol()
            try:
                ready = self._set_up(protocol, overall)
            except KafkaCompatError as exc:
                attach_context(exc, node=self.node, transcript=protocol.transcript)
                self._wire.close()
                raise
            except BaseException:
                self._wire.close()
                raise
            return self._negotiated(protocol, ready)

    def reconnect(self, *, timeout: float | None = None) -> BrokerCapabilities:
        """Close and negotiate again, within ``timeout`` as ``open``; the new capabilities
        replace the old ones."""
        with self._lock:
            self._close_locked()
        return self.open(timeout=timeout)

    def close(self) -> None:
        """Close the socket (after a request another thread is running ends)."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._protocol is not None:
            self._protocol.closed()
        self._wire.close()

    # -- requests ----------------------------------------------------------------------

    def request(
        self,
        message: KafkaRequest[ResponseT],
        *,
        version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT:
        """Send ``message`` at ``version`` (default: ``capabilities.pick_version``); return the answer.

        ``request_timeout`` (default: the configured one) covers writing, waiting
        and decoding; past it the request is given up and ``KafkaTimeoutError``
        raised.  A Produce with ``acks=0`` returns None once written.
        """
        require_request(message, self.node)
        limit = self.config.request_timeout if request_timeout is None else request_timeout
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit < math.inf:
            raise ConfigError(f"request_timeout must be a positive number of seconds, not {limit!r}")
        with self._lock:
            protocol = self._protocol
            if protocol is None:
                raise TransportError("the connection has not negotiated yet", node=self.node)
            deadline = time.monotonic() + limit
            ticket: Ticket | None = None
            try:
                ticket = protocol.send(message, version)  # raises what ended a failed connection
                what = f"{message.NAME} v{ticket.version}"
                response = self._exchange(protocol, ticket, deadline, what)
            except KafkaCompatError:
                raise
            except BaseException as exc:  # Ctrl-C, or a signal handler's exception
                self._interrupted(protocol, ticket, exc)
                raise
            if time.monotonic() > deadline:  # decoding ran past it: a deadline covers the whole call
                raise KafkaTimeoutError(f"no response to {what} within the timeout", node=self.node)
            return cast(ResponseT, response)  # None only for an acks=0 Produce

    def _interrupted(self, protocol: ClientConnection, ticket: Ticket | None, exc: BaseException) -> None:
        """A request was interrupted: leave the connection usable, or closed, never wedged.

        Not yet written, the request is taken back and the connection lives on;
        answered, nothing is left of it.  Anywhere in between, the interrupt may have
        cut a write short or lost bytes ``recv`` returned: the stream cannot be
        trusted, and a late answer must not be blamed on the broker, so it closes.
        """
        if ticket is None:  # interrupted inside send: did it queue the request?
            if protocol.is_ready and protocol.in_flight == 0:
                return
        elif ticket.stage in (Stage.WAITING, Stage.QUEUED):
            protocol.abandon(ticket)  # nothing of it was written: never will be
            return
        elif ticket.stage is Stage.ENDED and protocol.is_ready:
            return
        reason = f"the connection was closed: a request on it was interrupted ({type(exc).__name__})"
        protocol.closed(TransportError(reason, node=self.node))
        self._wire.close()

    # -- driving the sans-I/O connection ------------------------------------------------

    def _set_up(self, protocol: ClientConnection, overall: float) -> Ready:
        """Drive ``protocol`` through its setup, each step within the instant it gives."""
        wire = self._wire
        for _ in range(_MAX_SETUP_STEPS):
            step = protocol.next_step(time.monotonic(), overall=overall)
            action = step.action
            if isinstance(action, Ready):
                return action
            if isinstance(action, SetupFailed):
                raise action.error
            try:
                if isinstance(action, Read):
                    data = wire.receive(step.ends_by, f"reading {action.what}")
                    if data:
                        protocol.receive_data(data)
                    else:
                        protocol.closed()
                elif isinstance(action, Write):
                    wire.write(action.data, step.ends_by)
                    protocol.written()
                else:
                    wire.close()
                    try:
                        wire.sock = wire.open_socket(step.ends_by)
                    except KafkaCompatError as exc:
                        protocol.open_failed(exc)
                    else:
                        protocol.connected()
            except KafkaTimeoutError:
                protocol.step_expired()
            except TransportError:
                protocol.closed()  # a reset is a close, for the handshake
        raise NegotiationError(f"the connection was not set up within {_MAX_SETUP_STEPS} steps")

    def _exchange(self, protocol: ClientConnection, ticket: Ticket, deadline: float, what: str) -> object:
        if time.monotonic() >= deadline:  # still queued: taken back as if never asked
            self._settled(ticket, protocol.abandon(ticket))
            raise KafkaTimeoutError(f"timed out before sending {what}", node=self.node)
        protocol.write_due_at(time.monotonic())  # one request at a time: its slot is free
        try:
            self._wire.write(protocol.bytes_to_send(), deadline)
        except KafkaTimeoutError:
            # Perhaps cut off half-way: the pipeline decides (the connection fails if so).
            self._settled(ticket, protocol.abandon(ticket))
            raise KafkaTimeoutError(f"timed out sending {what}", node=self.node) from None
        except TransportError as exc:
            events = protocol.closed(exc)
        else:
            events = protocol.write_done()
        while True:
            ended, response = self._settled(ticket, events)
            if ended:
                return response
            try:
                data = self._wire.receive(deadline, f"reading the answer to {what}")
            except KafkaTimeoutError:
                self._settled(ticket, protocol.abandon(ticket))  # its late answer is read and dropped
                raise KafkaTimeoutError(f"no response to {what} within the timeout", node=self.node) from None
            except TransportError as exc:
                events = protocol.closed(exc)
                continue
            events = protocol.receive_data(data) if data else protocol.closed()

    def _settled(self, ticket: Ticket, events: list[PipelineEvent]) -> tuple[bool, object]:
        """Whether ``events`` end ``ticket``, and its response; raises its error.  A failed
        connection's socket is closed here."""
        protocol = self._protocol
        if protocol is not None and not protocol.is_ready:
            self._wire.close()
        for ended, response, error in endings(events):
            if ended is ticket:
                if error is not None:
                    raise error.with_traceback(None)
                return True, response
        return False, None



def open_blocking_connection(
    host: str,
    port: int,
    config: ConnectionConfig | None = None,
    *,
    node_id: int | None = None,
    timeout: float | None = None,
) -> BlockingConnection:
    """A negotiated ``BlockingConnection``; use it as a context manager to close it.

    ``timeout`` bounds connecting, negotiating and authenticating together (default: the
    config's ``call_timeout``).
    """
    connection = BlockingConnection(host, port, config, node_id=node_id)
    connection.open(timeout=timeout)
    return connection
