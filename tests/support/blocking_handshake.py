"""A small blocking driver of the sans-I/O ApiVersions handshake, for tests against real brokers.

It does what the handshake module's docstring shows: one socket per Connect,
each action carried out, each outcome reported.  Closes and timeouts become
the handshake's events; the result is the handshake's Done or Fail action.
"""

from __future__ import annotations

import socket

from kafkacompat.negotiation.handshake import (
    ApiVersionsHandshake,
    Connect,
    Done,
    Fail,
    HandshakeConfig,
    ReceiveReply,
    SendProbe,
    SendRequest,
)
from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
from kafkacompat.protocol.framing import FrameSplitter

__all__ = ["handshake"]


def handshake(
    host: str,
    port: int,
    *,
    identity: BrokerIdentity | None = None,
    memory: ApiVersionsMemory | None = None,
    config: HandshakeConfig | None = None,
    timeout: float = 10.0,
) -> Done | Fail:
    """Run one handshake with ``host:port``; the final action (Done or Fail)."""
    hs = ApiVersionsHandshake(config, node=f"{host}:{port}", identity=identity, memory=memory)
    sock: socket.socket | None = None
    frames = FrameSplitter()
    pending: list[bytes] = []
    try:
        while True:
            action = hs.next_action()
            if isinstance(action, Done | Fail):
                return action
            if isinstance(action, Connect):
                if sock is not None:
                    sock.close()
                frames, pending = FrameSplitter(), []
                try:
                    sock = socket.create_connection((host, port), timeout=timeout)
                except OSError as exc:
                    hs.connect_failed(str(exc))
                    continue
                hs.connected()
            elif isinstance(action, SendRequest | SendProbe):
                assert sock is not None
                try:
                    sock.sendall(action.frame)
                except OSError:
                    hs.connection_closed()
                    continue
                hs.request_sent()
            elif isinstance(action, ReceiveReply):
                assert sock is not None
                while not pending:
                    try:
                        data = sock.recv(65536)
                    except TimeoutError:
                        hs.timed_out()
                        break
                    except OSError:
                        data = b""
                    if not data:
                        hs.connection_closed()
                        break
                    pending.extend(frames.feed(data))
                else:
                    hs.received_frame(pending.pop(0))
    finally:
        if sock is not None:
            sock.close()
