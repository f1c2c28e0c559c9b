"""The trio driver of a connection's setup: the handshake and SASL, up to ``Ready``.

Every decision is the sans-I/O ``ClientConnection``'s, its deadlines included
(``next_step``: each step carries the instant it must end by and what to report
then).  This module opens, writes and reads within those instants on trio's
clock, and reports what happened.
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
from kafkacompat.errors import KafkaCompatError, TransportError
from kafkacompat.transport.stream import ByteStream, open_byte_stream

__all__ = ["set_up"]


async def set_up(
    protocol: ClientConnection, host: str, port: int, config: ConnectionConfig, overall: float
) -> tuple[ByteStream, Ready]:
    """Drive ``protocol`` through its setup, all of it by ``overall`` (trio's clock); the
    stream it ended on, ready for requests.

    Failures raise the connection's typed error (transcript attached); the
    stream is closed on every way out but success.
    """
    stream: ByteStream | None = None
    now = trio.lowlevel.current_clock().current_time
    try:
        while True:
            # One cancel scope for every step that ends in time, its deadline moved from
            # step to step: entering and leaving a scope is a sixth of a loopback connect's
            # bytecodes, moving its deadline a quarter of that.  A step that runs out ends
            # the scope (a cancelled scope stays cancelled); the next step opens a new one.
            with trio.CancelScope() as scope:
                while not scope.cancel_called:
                    step = protocol.next_step(now(), overall=overall)
                    action = step.action
                    if isinstance(action, Read):
                        assert stream is not None
                        scope.deadline = step.ends_by
                        try:
                            data = await stream.receive_some()
                        except TransportError:
                            data = b""  # a reset is a close, for the handshake
                        if data:
                            protocol.receive_data(data)
                        else:
                            protocol.closed()
                    elif isinstance(action, Write):
                        assert stream is not None
                        try:
                            # A request the kernel takes at once (nearly always) needs no
                            # deadline: nothing in it can wait, or time out.
                            left = stream.send_now(action.data)
                            if left is None or left:
                                scope.deadline = step.ends_by
                                await stream.send_all(action.data if left is None else left)
                        except TransportError:
                            protocol.closed()  # a reset is a close, for the handshake
                        else:
                            protocol.written()
                    elif isinstance(action, OpenSocket):
                        if stream is not None:
                            old, stream = stream, None
                            await old.aclose()
                        scope.deadline = step.ends_by
                        try:
                            stream = await open_byte_stream(host, port, config)
                        except KafkaCompatError as exc:
                            protocol.open_failed(exc)
                        else:
                            protocol.connected()
                    elif isinstance(action, SetupFailed):
                        raise action.error
                    else:
                        assert isinstance(action, Ready) and stream is not None
                        return stream, action
            if scope.cancelled_caught:  # else it ran out just after its wait ended: nothing to say
                protocol.step_expired()
    except BaseException:
        if stream is not None:
            await stream.aclose()
        raise
