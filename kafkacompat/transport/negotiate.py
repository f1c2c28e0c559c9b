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

from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError, TransportError, attach_context
from kafkacompat.negotiation.client_connection import (
    ClientConnection,
    OpenSocket,
    Read,
    Ready,
    SetupFailed,
    Write,
)
from kafkacompat.transport.config import ConnectionConfig
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
            action = protocol.next_action()
            if isinstance(action, OpenSocket):
                if stream is not None:
                    await stream.aclose()
                stream = await _open(protocol, host, port, config)
            elif isinstance(action, Write):
                assert stream is not None
                if action.fresh_deadline:  # a request and its answer share one deadline
                    deadline = trio.current_time() + config.request_timeout
                await _write(protocol, stream, action, deadline)
            elif isinstance(action, Read):
                assert stream is not None
                await _read(protocol, stream, action, deadline)
            elif isinstance(action, SetupFailed):
                raise action.error
            else:
                assert isinstance(action, Ready) and stream is not None
                return stream, action
    except BaseException:
        if stream is not None:
            await stream.aclose()
        raise


async def _open(
    protocol: ClientConnection, host: str, port: int, config: ConnectionConfig
) -> ByteStream | None:
    try:
        stream = await open_byte_stream(host, port, config, trio.current_time() + config.connect_timeout)
    except KafkaTimeoutError:
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


async def _write(protocol: ClientConnection, stream: ByteStream, action: Write, deadline: float) -> None:
    # Bare cancel scopes: fail_at's context manager and exception cost a loopback
    # handshake a few percent, twice per request.  A request the kernel takes at once
    # (nearly always) needs no scope at all: nothing in it can wait, or time out.
    try:
        left = stream.send_now(action.data)
        if left is not None and not left:
            protocol.written()
            return
        with trio.CancelScope(deadline=deadline) as scope:
            await stream.send_all(action.data if left is None else left)
    except TransportError:
        protocol.closed()  # a reset is a close for the handshake's purposes
        return
    if scope.cancelled_caught:
        protocol.timed_out()
    else:
        protocol.written()


async def _read(protocol: ClientConnection, stream: ByteStream, action: Read, deadline: float) -> None:
    until = deadline
    if action.quiet_period is not None:  # quiet only while the request's deadline is ahead
        until = min(deadline, trio.current_time() + action.quiet_period)
    data = b""
    try:
        with trio.CancelScope(deadline=until) as scope:
            data = await stream.receive_some()
    except TransportError:
        protocol.closed()  # a reset is a close for the handshake's purposes
        return
    if scope.cancelled_caught:
        if until < deadline:
            protocol.quiet()
        else:
            protocol.timed_out()
        return
    if not data:
        protocol.closed()
        return
    protocol.receive_data(data)  # decodes what completed: the deadline covers that too
    if trio.current_time() > deadline:
        raise KafkaTimeoutError(
            f"timed out while reading {action.what}", node=protocol.node, transcript=protocol.transcript
        )
