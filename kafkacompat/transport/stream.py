"""A framed byte stream over trio: TCP, optionally TLS, size-prefixed frames.

Bytes are read into a ``FrameSplitter``, which refuses a bad size prefix
(negative, above the ceiling for the reply expected, or the start of a TLS or
HTTP reply) before buffering anything it announces, and gives each frame one
buffer of exactly its size; on plain TCP the socket reads straight into it.
A frame is read with the ceiling the caller passes (the connection: the one
for the request answered); without one, the ceiling for ApiVersions, the
first reply on every connection (the handshake and SASL read that way).  End of stream is a
``TransportError``; every other low-level failure goes through ``translate``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
from collections.abc import Callable

import trio

from kafkacompat.errors import PeerClosedError
from kafkacompat.negotiation.addresses import check_address
from kafkacompat.protocol.framing import FrameSplitter
from kafkacompat.transport.config import ConnectionConfig
from kafkacompat.transport.seam import translate
from kafkacompat.transport.tls import tls_context

__all__ = ["FramedStream", "PeerClosedError", "open_framed_stream"]

_CHUNK = 65536
#: What the next frame answers, asked when it starts: (its size ceiling, the request's name).
Expectation = Callable[[], tuple[int, str | None]]


class FramedStream:
    """Whole Kafka frames (without their size prefix) in, whole frames out.

    Plain TCP talks to the trio socket itself: a ``SocketStream`` would add a
    conflict detector per call, a second socket option and a scheduling
    round trip on close, which together cost a loopback handshake about a
    tenth of its time.  TLS goes through ``trio.SSLStream``.
    """

    def __init__(
        self,
        node: str,
        max_frame_size: int,
        *,
        sock: trio.socket.SocketType | None = None,
        stream: trio.abc.Stream | None = None,
        default_limit: int | None = None,
    ) -> None:
        if (sock is None) == (stream is None):
            raise ValueError("a FramedStream wraps either a socket or a stream")
        self._sock = sock
        self._stream = stream
        self.node = node
        self._splitter = FrameSplitter(max_frame_size)
        self.default_limit = max_frame_size if default_limit is None else default_limit
        self.closed = False

    async def send(self, frame: bytes) -> None:
        try:
            if self._sock is not None:
                view = memoryview(frame)
                while view:  # each send takes at least one byte, or raises
                    view = view[await self._sock.send(view) :]
            else:
                assert self._stream is not None
                await self._stream.send_all(frame)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError) as exc:
            raise translate(exc, self.node, "sending a request") from None

    async def receive_frame(
        self, limit: int | None = None, what: str | None = None, *, expect: Expectation | None = None
    ) -> bytes:
        """The next frame, held to ``limit`` bytes (default ``default_limit``); ``what`` it answers.

        ``expect`` instead gives both when asked, just before the size prefix is
        read: a pipelined reader learns what it awaits only as requests go out.
        """
        ceiling = self.default_limit if limit is None else limit
        splitter = self._splitter
        while True:
            if expect is not None:
                ceiling, what = expect()
            frame = splitter.next_frame(ceiling, what=what)  # may raise on a bad size prefix
            if frame is not None:
                return frame
            room = splitter.body_room() if self._sock is not None else None
            try:
                if room is not None:  # plain TCP, a body under way: straight into its buffer
                    count = await self._sock.recv_into(room)  # type: ignore[union-attr]
                    del room
                    if count:
                        splitter.body_filled(count)
                        continue
                    chunk: bytes | bytearray = b""
                elif self._sock is not None:
                    chunk = await self._sock.recv(_CHUNK)
                else:
                    assert self._stream is not None
                    chunk = await self._stream.receive_some(_CHUNK)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError) as exc:
                raise translate(exc, self.node, "reading a response") from None
            if not chunk:
                raise PeerClosedError("the broker closed the connection", node=self.node)
            splitter.push(chunk)

    def unconsumed(self) -> bytes:
        """The head of what arrived but was not taken as a frame (after a refused prefix)."""
        return self._splitter.unconsumed()

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._sock is not None:
            self._sock.close()  # wakes any task blocked on it with ClosedResourceError
            return
        assert self._stream is not None
        # Closing TLS sends close_notify, which can fail again on a broken stream:
        # nobody is left to tell, so it is suppressed; the shield lets a cancelled
        # caller still release the socket.
        with trio.move_on_after(1) as scope:
            scope.shield = True
            with contextlib.suppress(
                OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError
            ):
                await self._stream.aclose()


async def _open_tcp(host: str, port: int) -> trio.socket.SocketType:
    """A connected TCP socket; a numeric address skips name resolution and happy eyeballs."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return (await trio.open_tcp_stream(host, port)).socket  # TCP_NODELAY already set
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((host, port))
        # Requests are small and answered one by one: Nagle would hold them back.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except BaseException:
        sock.close()
        raise
    return sock


async def open_framed_stream(host: str, port: int, config: ConnectionConfig) -> FramedStream:
    """Connect (and run the TLS handshake) within the connect timeout."""
    host, port = check_address(host, port, source="the caller")  # before any socket call sees it
    node = f"{host}:{port}"
    limit = min(config.reply_limits.handshake, config.max_frame_size)
    doing = "connecting"
    try:
        with trio.fail_after(config.connect_timeout):
            sock = await _open_tcp(host, port)
            if config.tls is None:
                return FramedStream(node, config.max_frame_size, sock=sock, default_limit=limit)
            doing = "running the TLS handshake"
            tcp = trio.SocketStream(sock)
            ssl_stream = trio.SSLStream(
                tcp, tls_context(config.tls), server_hostname=config.tls.server_hostname or host
            )
            try:
                await ssl_stream.do_handshake()
            except BaseException:
                await trio.aclose_forcefully(tcp)
                raise
            return FramedStream(node, config.max_frame_size, stream=ssl_stream, default_limit=limit)
    except (OSError, trio.TooSlowError, trio.BrokenResourceError, ssl.SSLError) as exc:
        raise translate(exc, node, doing) from None
