"""The trio driver of a connection's setup: the handshake and SASL, up to ``Ready``.

Every decision is the sans-I/O ``ClientConnection``'s (which ApiVersions
version, a retry on a new connection, the pre-0.10 probe, SASL's versions and
round trips); this module does what its actions say (open, write, read) and
reports each outcome as the matching event.  The clock it keeps is trio's:
each request written has ``request_timeout`` for itself and every reply
awaited after it (the pre-0.10 probe shares ApiVersions' deadline); a quiet
period the connection hands over ends the wait early with ``quiet()``, only
while that deadline is ahead.
"""

from __future__ import annotations

import trio

from kafkacompat.connection.client_connection import (
    ClientConnection,
    OpenSocket,
    Read,
    Ready,
    SetupFailed,
    Write,
)
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError, TransportError, attach_context
from kafkacompat.transport.stream import ByteStream, open_byte_stream

__all__ = ["set_up"]


async def set_up(
    protocol: ClientConnection, host: str, port: int, config: ConnectionConfig
) -> tuple[ByteStream, Ready]:
    """Drive ``protocol`` through its setup; the stream it ended on, ready for requests.

    Failures raise the connection's typed error (transcript attached); the
    stream is closed on every way out but success.
    """
    stream: ByteStream | None = None
    deadline = trio.current_time() + config.request_timeout
    try:
        while True:
            # One cancel scope for every step that ends in time, its deadline moved from
            # step to step: entering and leaving a scope is a sixth of a loopback connect's
            # bytecodes, moving its deadline a quarter of that.  A step that runs out ends
            # the scope (a cancelled scope stays cancelled): the connection is told which
            # wait ran out, and its next step opens a new scope.
            waiting: OpenSocket | Write | Read | None = None
            quiet = False  # the wait that ran out was a quiet period, not the deadline
            with trio.CancelScope() as scope:
                while not scope.cancel_called:
                    action = protocol.next_action()
                    waiting = action if isinstance(action, (OpenSocket, Write, Read)) else None
                    if isinstance(action, OpenSocket):
                        if stream is not None:
                            old, stream = stream, None
                            await old.aclose()
                        scope.deadline = trio.current_time() + config.connect_timeout
                        stream = await _open(protocol, host, port, config)
                    elif isinstance(action, Write):
                        assert stream is not None
                        if action.fresh_deadline:  # a request and its answer share one deadline
                            deadline = trio.current_time() + config.request_timeout
                        await _write(protocol, stream, action, scope, deadline)
                    elif isinstance(action, Read):
                        assert stream is not None
                        until = deadline
                        if action.quiet_period is not None:  # quiet only while the deadline is ahead
                            until = min(deadline, trio.current_time() + action.quiet_period)
                        quiet = until < deadline
                        scope.deadline = until
                        await _read(protocol, stream, action, deadline)
                    elif isinstance(action, SetupFailed):
                        raise action.error
                    else:
                        assert isinstance(action, Ready) and stream is not None
                        return stream, action
            if not scope.cancelled_caught:
                # The deadline passed after the wait it bounded had ended (in the same turn
                # of trio's loop): nothing ran out, but the scope is spent.  A fresh one.
                continue
            if isinstance(waiting, Read) and quiet:
                protocol.quiet()
            else:
                protocol.timed_out()
    except BaseException:
        if stream is not None:
            await stream.aclose()
        raise


async def _open(
    protocol: ClientConnection, host: str, port: int, config: ConnectionConfig
) -> ByteStream | None:
    try:
        stream = await open_byte_stream(host, port, config)
    except KafkaTimeoutError:  # the system's own connect timeout
        protocol.timed_out()
        return None
    except TransportError as exc:
        protocol.connect_failed(str(exc))
        return None
    except KafkaCompatError as exc:  # TLS verification and the like: not a handshake matter
        attach_context(exc, transcript=protocol.transcript)
        raise
    protocol.connected()
    return stream


async def _write(
    protocol: ClientConnection, stream: ByteStream, action: Write, scope: trio.CancelScope, deadline: float
) -> None:
    # A request the kernel takes at once (nearly always) needs no deadline: nothing in it
    # can wait, or time out.
    try:
        left = stream.send_now(action.data)
        if left is None or left:
            scope.deadline = deadline
            await stream.send_all(action.data if left is None else left)
    except TransportError:
        protocol.closed()  # a reset is a close for the handshake's purposes
        return
    protocol.written()


async def _read(protocol: ClientConnection, stream: ByteStream, action: Read, deadline: float) -> None:
    """One read within the caller's scope (its deadline already set for this wait)."""
    try:
        data = await stream.receive_some()
    except TransportError:
        protocol.closed()  # a reset is a close for the handshake's purposes
        return
    if not data:
        protocol.closed()
        return
    protocol.receive_data(data)  # decodes what completed: the deadline covers that too
    if trio.current_time() > deadline:
        raise KafkaTimeoutError(
            f"timed out while reading {action.what}", node=protocol.node, transcript=protocol.transcript
        )
