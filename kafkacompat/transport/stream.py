"""A byte stream over trio: TCP, optionally TLS, for the trio driver.

The stream only moves bytes: splitting them into frames, and every limit on
a frame's size, belong to the sans-I/O ``ClientConnection`` the driver feeds.
On plain TCP a reply's body can be read straight into the buffer the
connection holds for it (``receive_into``).  Every low-level failure goes
through ``translate``; end of stream is an empty read.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Callable
from typing import TypeVar

import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.tls import tls_context
from kafkacompat.negotiation.addresses import check_address, literal_version
from kafkacompat.transport.seam import translate

__all__ = [
    "ByteStream",
    "open_byte_stream",
]

CHUNK = 65536
_Into = TypeVar("_Into", int, memoryview)  # what a read is given: a size, or a buffer
_Read = TypeVar("_Read", bytes, int)  # what it returns: the bytes, or their count
#: Reads in a row tried without waiting, after a read that filled its buffer (see ``ByteStream``).
EAGER_READS = 16
_LOW_LEVEL = (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError)


class ByteStream:
    """Bytes out, bytes in, on a connected trio socket or a TLS stream.

    Plain TCP talks to the trio socket itself: a ``SocketStream`` would add a
    conflict detector per call, a second socket option and a scheduling
    round trip on close, which together cost a loopback handshake about a
    tenth of its time.  TLS goes through ``trio.SSLStream``.

    Given the standard-library socket under the trio one (``raw``), a send is
    first tried on it directly: a request fits the kernel's send buffer
    almost always, and trio's own ``send`` would spend a scheduling round
    trip on that success (a checkpoint after the call), a quarter of a
    loopback handshake's task steps.  The read that follows a request always
    waits, so the task still yields once per exchange; only a send the
    kernel cannot take at once falls back to trio's waiting ``send``.

    Reads go to that socket too, waiting with ``wait_readable`` and then
    reading: trio's ``recv`` tries first and yields again after a read that
    succeeded at once, and a pipelined connection mostly reads faster than its
    broker answers, so the try would mostly fail (a system call and an
    exception).  Only after a read that filled its buffer, when more is likely
    there, is the next read tried at once; and after ``EAGER_READS`` of those
    in a row the reader waits (yields) even so, so that a broker streaming
    without pause cannot keep it from yielding.  A reader can ask to be called
    back (``before_waiting``) just before it waits: the trio driver writes the
    requests its answers made room for there, in one write.
    """

    def __init__(
        self,
        node: str,
        *,
        sock: trio.socket.SocketType | None = None,
        stream: trio.abc.Stream | None = None,
        raw: socket.socket | None = None,
    ) -> None:
        if (sock is None) == (stream is None):
            raise ValueError("a ByteStream wraps either a socket or a stream")
        if raw is not None and (sock is None or raw.fileno() != sock.fileno()):
            raise ValueError("raw must be the standard-library socket under sock")
        self._sock = sock
        self._raw = raw
        self._stream = stream
        self.node = node
        self.closed = False
        self._eager = 0  # reads in a row that filled their buffer, tried without waiting

    @property
    def reads_into(self) -> bool:
        """Whether ``receive_into`` can fill a caller's buffer directly (plain TCP)."""
        return self._sock is not None

    def send_now(self, data: bytes) -> memoryview | None:
        """Send what the kernel takes at once, without waiting; what is left to send with
        ``send_all`` (empty: all sent), or None when this stream cannot send without waiting."""
        if self._raw is None:
            return None
        view = memoryview(data)
        try:
            return view[self._raw.send(view) :]
        except BlockingIOError:
            return view
        except OSError as exc:
            raise translate(exc, self.node, "sending a request") from None

    async def send_all(self, data: bytes | memoryview) -> None:
        try:
            if self._sock is not None:
                view = memoryview(data)
                if self._raw is not None and view:
                    await trio.lowlevel.checkpoint_if_cancelled()  # never yields unless cancelled
                    with contextlib.suppress(BlockingIOError):
                        view = view[self._raw.send(view) :]
                while view:  # each send takes at least one byte, or raises
                    view = view[await self._sock.send(view) :]
            else:
                assert self._stream is not None
                await self._stream.send_all(data)
        except _LOW_LEVEL as exc:
            raise translate(exc, self.node, "sending a request") from None

    async def receive_some(self, before_waiting: Callable[[], None] | None = None) -> bytes:
        """What arrived (at least one byte), or ``b""`` at the end of the stream.

        ``before_waiting`` is called before the task yields to wait for data.
        """
        try:
            raw = self._raw
            if raw is not None:
                return await self._read_raw(raw, raw.recv, CHUNK, before_waiting)
            if before_waiting is not None:
                before_waiting()
            if self._sock is not None:
                return await self._sock.recv(CHUNK)
            assert self._stream is not None
            return bytes(await self._stream.receive_some(CHUNK))
        except _LOW_LEVEL as exc:
            raise translate(exc, self.node, "reading a response") from None

    async def receive_into(self, buffer: memoryview, before_waiting: Callable[[], None] | None = None) -> int:
        """Plain TCP only: read into ``buffer``; 0 at the end of the stream."""
        assert self._sock is not None
        try:
            raw = self._raw
            if raw is not None:
                return await self._read_raw(raw, raw.recv_into, buffer, before_waiting)
            if before_waiting is not None:
                before_waiting()
            return await self._sock.recv_into(buffer)
        except _LOW_LEVEL as exc:
            raise translate(exc, self.node, "reading a response") from None

    async def _read_raw(
        self,
        raw: socket.socket,
        read: Callable[[_Into], _Read],
        into: _Into,
        before_waiting: Callable[[], None] | None,
    ) -> _Read:
        """``read(into)`` on the standard-library socket, waiting for data first unless the
        last read filled its buffer (then more is likely there: up to ``EAGER_READS``
        reads in a row are tried at once).  A pipelined connection mostly reads faster
        than its broker answers, so a read tried at once would mostly fail, at the cost
        of a system call and an exception."""
        if 0 < self._eager <= EAGER_READS:  # the last read filled its buffer: more is likely there
            await trio.lowlevel.checkpoint_if_cancelled()  # never yields unless cancelled
            try:
                result = read(into)
            except BlockingIOError:
                pass
            else:
                self._eager = self._eager + 1 if _filled(result, into) else 0
                return result
        if before_waiting is not None:
            before_waiting()
        while True:
            await trio.lowlevel.wait_readable(raw)
            try:
                result = read(into)
            except BlockingIOError:  # woken for nothing: wait again
                continue
            self._eager = 1 if _filled(result, into) else 0
            return result

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
            with contextlib.suppress(*_LOW_LEVEL):
                await self._stream.aclose()


def _filled(result: bytes | int, into: int | memoryview) -> bool:
    """Whether a read filled what it was given (a size, or a buffer)."""
    if isinstance(result, int):
        return isinstance(into, memoryview) and result == len(into)
    return len(result) == into


async def _open_tcp(host: str, port: int) -> tuple[trio.socket.SocketType, socket.socket | None]:
    """A connected TCP socket, and the standard-library one under it when this module made it.

    A numeric address skips name resolution and happy eyeballs.
    """
    version = literal_version(host)
    if version is None:
        return (await trio.open_tcp_stream(host, port)).socket, None  # TCP_NODELAY already set
    raw = socket.socket(socket.AF_INET6 if version == 6 else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock = trio.socket.from_stdlib_socket(raw)  # makes it non-blocking
        await sock.connect((host, port))
        # Requests are small and answered one by one: Nagle would hold them back.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except BaseException:
        raw.close()
        raise
    return sock, raw


async def open_byte_stream(host: str, port: int, config: ConnectionConfig) -> ByteStream:
    """Connect (and run the TLS handshake); the caller's cancel scope bounds the time."""
    host, port = check_address(host, port, source="the caller")  # before any socket call sees it
    node = f"{host}:{port}"
    doing = "connecting"
    try:
        sock, raw = await _open_tcp(host, port)
        if config.tls is None:
            return ByteStream(node, sock=sock, raw=raw)
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
        return ByteStream(node, stream=ssl_stream)
    except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
        raise translate(exc, node, doing) from None
