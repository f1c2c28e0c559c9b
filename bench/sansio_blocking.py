"""kafkacompat's sans-I/O ApiVersions handshake driven over a plain blocking socket (no trio).

The transport benchmark uses it as a what-if: what one handshake costs, in
time and in memory, when the negotiation core runs without an event loop.  It
imports only the negotiation core and the standard library, so a fresh
process that imports it measures just that.  It is not a client: no TLS, no
SASL, no pipelining, and a handshake that needs a fallback connection (a
broker older than 0.10) is refused.
"""

from __future__ import annotations

import socket
import struct

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake import ApiVersionsHandshake
from kafkacompat.negotiation.handshake_types import Connect, Done, Fail, ReceiveReply, SendRequest

__all__ = ["handshake", "read_frame", "recv_exact"]

MAX_FRAME = 1 << 20  # an ApiVersions answer is a few hundred bytes
MAX_STEPS = 16  # actions the machine may ask for; it needs 4 (connect, send, receive, done)


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes, or ``ConnectionError`` when the peer closes first."""
    data = bytearray()
    while len(data) < size:  # each recv returns at least one byte or raises (socket timeout)
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"the peer closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> bytes:
    """One Kafka frame, without its size prefix."""
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    if not 0 < size <= MAX_FRAME:
        raise ConnectionError(f"frame size {size} out of range")
    return recv_exact(sock, size)


def handshake(host: str, port: int, timeout: float = 10.0) -> BrokerCapabilities:
    """Connect, negotiate ApiVersions, close; the broker's capabilities."""
    node = f"{host}:{port}"
    machine = ApiVersionsHandshake(node=node)
    sock: socket.socket | None = None
    try:
        for _ in range(MAX_STEPS):
            action = machine.next_action()
            if isinstance(action, Connect):
                if sock is not None:
                    sock.close()
                    sock = None
                try:
                    sock = socket.create_connection((host, port), timeout=timeout)
                except OSError as exc:
                    machine.connect_failed(str(exc))
                    continue
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                machine.connected()
            elif isinstance(action, SendRequest):
                assert sock is not None
                sock.sendall(action.frame)
                machine.request_sent()
            elif isinstance(action, ReceiveReply):
                assert sock is not None
                try:
                    frame = read_frame(sock)
                except TimeoutError:
                    machine.timed_out()
                except OSError:  # ConnectionError included: closed or reset
                    machine.connection_closed()
                else:
                    machine.received_frame(frame)
            elif isinstance(action, Done):
                if action.needs_new_connection:
                    raise RuntimeError(f"{node} needs the pre-0.10 fallback, which this driver does not do")
                return BrokerCapabilities.from_handshake(action.result, node=node)
            elif isinstance(action, Fail):
                raise action.error
        raise RuntimeError(f"the handshake with {node} did not finish in {MAX_STEPS} steps")
    finally:
        if sock is not None:
            sock.close()
