"""The one trio driver of the sans-I/O ApiVersions handshake.

It does exactly what the machine's actions say (connect, send, read) and
reports each outcome as the matching event; every decision stays in
``kafkacompat.negotiation.handshake``.  The one clock it keeps: each
ApiVersions request has ``request_timeout`` from its write for every reply
awaited after it (the probe's included); a quiet period the machine hands
over ends the wait early with ``quiet()``, only while that deadline is ahead.
"""

from __future__ import annotations

import trio

from kafkacompat.errors import (
    KafkaCompatError,
    KafkaTimeoutError,
    ProtocolError,
    TransportError,
    WrongProtocolError,
)
from kafkacompat.negotiation.handshake import ApiVersionsHandshake
from kafkacompat.negotiation.handshake_types import (
    Connect,
    Done,
    Fail,
    HandshakeResult,
    ReceiveReply,
    SendProbe,
    SendRequest,
)
from kafkacompat.transport.config import ConnectionConfig
from kafkacompat.transport.stream import FramedStream, PeerClosedError, open_framed_stream

__all__ = ["negotiate"]


async def negotiate(host: str, port: int, config: ConnectionConfig) -> tuple[FramedStream, HandshakeResult]:
    """Open a connection and run the handshake on it (and on reconnections it asks for).

    Returns the stream the handshake ended on, ready for requests, with the
    result.  Failures raise the machine's typed error, transcript attached.
    """
    node = f"{host}:{port}"
    machine = ApiVersionsHandshake(config.handshake, node=node)
    stream: FramedStream | None = None
    deadline = trio.current_time() + config.request_timeout
    try:
        while True:
            action = machine.next_action()
            if isinstance(action, Connect):
                stream = await _reconnect(stream, host, port, config, machine)
            elif isinstance(action, SendRequest | SendProbe):
                assert stream is not None
                if isinstance(action, SendRequest):
                    deadline = trio.current_time() + config.request_timeout
                try:
                    await stream.send(action.frame)
                except TransportError:
                    machine.connection_closed()
                else:
                    machine.request_sent()
            elif isinstance(action, ReceiveReply):
                assert stream is not None
                await _receive(stream, action, deadline, machine, config)
            elif isinstance(action, Done):
                if action.needs_new_connection:
                    stream = await _open_after_fallback(stream, host, port, config)
                assert stream is not None
                return stream, action.result
            elif isinstance(action, Fail):
                raise action.error
    except BaseException:
        if stream is not None:
            await stream.aclose()
        raise


async def _reconnect(
    old: FramedStream | None, host: str, port: int, config: ConnectionConfig, machine: ApiVersionsHandshake
) -> FramedStream | None:
    if old is not None:
        await old.aclose()
    try:
        stream = await open_framed_stream(host, port, config)
    except TransportError as exc:
        machine.connect_failed(str(exc))
        return None
    except KafkaTimeoutError:
        machine.timed_out()
        return None
    except KafkaCompatError as exc:  # TLS verification and the like: not a handshake matter
        exc.transcript = machine.transcript
        raise
    machine.connected()
    return stream


async def _receive(
    stream: FramedStream,
    action: ReceiveReply,
    deadline: float,
    machine: ApiVersionsHandshake,
    config: ConnectionConfig,
) -> None:
    limit, what = machine.reply_ceiling(config.reply_limits, config.max_frame_size)
    quiet_until = deadline
    if action.quiet_period is not None:
        quiet_until = min(deadline, trio.current_time() + action.quiet_period)
    try:
        # Cancelling mid-frame loses nothing: the bytes read so far stay in the stream's splitter.
        with trio.fail_after(max(quiet_until - trio.current_time(), 0)):
            frame = await stream.receive_frame(limit, what)
    except trio.TooSlowError:
        if quiet_until < deadline:
            machine.quiet()
        else:
            machine.timed_out()
    except PeerClosedError:
        machine.connection_closed()
    except WrongProtocolError:
        machine.foreign_bytes(stream.unconsumed())
    except ProtocolError as exc:
        # A size prefix that is negative or above max_frame_size, but not another protocol's
        # bytes: foreign_bytes is only for WrongProtocolError (the machine's contract), and
        # "wrong port or security protocol" would mislead.  Reported as it is.
        exc.node = exc.node or machine.node
        exc.transcript = machine.transcript
        raise
    except TransportError:
        machine.connection_closed()  # a reset is a close for the handshake's purposes
    else:
        machine.received_frame(frame)  # decodes it: the deadline covers that too
        if trio.current_time() > deadline:
            message = "timed out while reading the ApiVersions reply"
            raise KafkaTimeoutError(message, node=machine.node, transcript=machine.transcript)


async def _open_after_fallback(
    old: FramedStream | None, host: str, port: int, config: ConnectionConfig
) -> FramedStream:
    if old is not None:
        await old.aclose()
    return await open_framed_stream(host, port, config)
