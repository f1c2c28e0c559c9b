"""A framed byte stream over trio: TCP, optionally TLS, size-prefixed frames.

Bytes are read in chunks into a ``FrameSplitter``, which refuses a bad size
prefix (negative, above the maximum, or the start of a TLS or HTTP reply)
before buffering anything it announces.  End of stream is a
``TransportError``; every other low-level failure goes through ``translate``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
from collections import deque

import trio

from kafkacompat.errors import TransportError
from kafkacompat.protocol.framing import FrameSplitter
from kafkacompat.transport.config import ConnectionConfig, TlsConfig
from kafkacompat.transport.seam import translate

__all__ = ["FramedStream", "PeerClosedError", "open_framed_stream", "tls_context"]

_CHUNK = 65536


class PeerClosedError(TransportError):
    """The peer closed the connection (end of stream)."""


def tls_context(tls: TlsConfig) -> ssl.SSLContext:
    """An SSLContext from the config: verification and hostname checks on by default."""
    context = ssl.create_default_context(cafile=str(tls.ca_file) if tls.ca_file else None)
    if not tls.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = tls.check_hostname
    if tls.cert_file is not None:
        password = tls.key_password.reveal() if tls.key_password else None
        context.load_cert_chain(
            str(tls.cert_file), str(tls.key_file) if tls.key_file else None, password=password
        )
    return context


class FramedStream:
    """Whole Kafka frames (without their size prefix) in, whole frames out."""

    def __init__(self, stream: trio.abc.Stream, node: str, max_frame_size: int) -> None:
        self._stream = stream
        self.node = node
        self._splitter = FrameSplitter(max_frame_size)
        self._frames: deque[bytes] = deque()
        self.closed = False

    async def send(self, frame: bytes) -> None:
        try:
            await self._stream.send_all(frame)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError) as exc:
            raise translate(exc, self.node, "sending a request") from None

    async def receive_frame(self) -> bytes:
        while not self._frames:
            try:
                chunk = await self._stream.receive_some(_CHUNK)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError) as exc:
                raise translate(exc, self.node, "reading a response") from None
            if not chunk:
                raise PeerClosedError("the broker closed the connection", node=self.node)
            self._frames.extend(self._splitter.feed(chunk))  # may raise on a bad size prefix
        return self._frames.popleft()

    def unconsumed(self) -> bytes:
        """The head of what arrived but was not taken as a frame (after a refused prefix)."""
        return self._splitter.unconsumed()

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        # Closing a broken stream can fail again: nobody is left to tell, so it is
        # suppressed; the shield lets a cancelled caller still release the socket.
        with trio.move_on_after(1) as scope:
            scope.shield = True
            with contextlib.suppress(
                OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError
            ):
                await self._stream.aclose()


async def _open_tcp(host: str, port: int) -> trio.SocketStream:
    """TCP to ``host:port``; a numeric address skips name resolution and happy eyeballs."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return await trio.open_tcp_stream(host, port)
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


async def open_framed_stream(host: str, port: int, config: ConnectionConfig) -> FramedStream:
    """Connect (and run the TLS handshake) within the connect timeout."""
    node = f"{host}:{port}"
    doing = "connecting"
    try:
        with trio.fail_after(config.connect_timeout):
            stream: trio.abc.Stream = await _open_tcp(host, port)
            if config.tls is not None:
                doing = "running the TLS handshake"
                ssl_stream = trio.SSLStream(
                    stream,
                    tls_context(config.tls),
                    server_hostname=config.tls.server_hostname or host,
                )
                try:
                    await ssl_stream.do_handshake()
                except BaseException:
                    await trio.aclose_forcefully(stream)
                    raise
                stream = ssl_stream
    except (OSError, trio.TooSlowError, trio.BrokenResourceError, ssl.SSLError) as exc:
        raise translate(exc, node, doing) from None
    return FramedStream(stream, node, config.max_frame_size)
