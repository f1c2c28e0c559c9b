"""Bytes in and out for the asyncio driver: a bare socket on the loop, or asyncio streams.

A plain TCP connection to an address literal (the common case: a broker's
advertised listener) talks to a non-blocking socket through the loop's
``sock_*`` calls.  ``asyncio.open_connection`` would build a transport, a
protocol, a StreamReader and a StreamWriter, and its connect, its first
write's ``drain`` and its ``wait_closed`` each cost the loop a turn: eight
polls per loopback connect and handshake, against three here (connect, the
reply, nothing to wait for on close), which is most of what the driver added
over the floor.  A send is tried on the socket at once (a request almost
always fits the kernel's buffer); what it does not take is sent by a task of
the channel, in order, before anything written later.

TLS and host names (which need resolving and happy eyeballs) keep asyncio's
streams.  Either way the channel only moves bytes: frames and their limits
belong to the sans-I/O connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections import deque
from collections.abc import Callable
from typing import Protocol

__all__ = ["Channel", "SocketChannel", "StreamChannel"]

CHUNK = 65536
_CLOSE_TIMEOUT = 1.0  # seconds to wait for a closing stream (a TLS close_notify, say)


class Channel(Protocol):
    """What the driver needs of a connection's bytes; OSError and ssl.SSLError are its failures."""

    def write(self, data: bytes) -> None:
        """Hand ``data`` over whole: it goes out after everything written before it."""

    @property
    def flushed(self) -> bool:
        """Whether everything written has left already (``drain`` would not wait)."""

    async def drain(self) -> None:
        """Wait until what was written left (or raise why it cannot)."""

    async def read(self) -> bytes:
        """What arrived (at least one byte), or ``b""`` at the end of the stream."""

    async def close(self) -> None: ...


class SocketChannel:
    """A connected non-blocking TCP socket, driven by the loop's ``sock_*`` calls.

    Nothing may still wait on the socket when it closes (a read the loop
    would finish on a recycled descriptor): the driver ends its reader first,
    and ``close`` ends the channel's own sender.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        self._loop = loop
        self._sock = sock
        self._backlog: deque[bytes | memoryview] = deque()  # what the kernel has not taken yet
        self._sender: asyncio.Task[None] | None = None
        self._failure: OSError | None = None
        #: Told when the sender fails after ``write`` returned: nobody awaits it then.
        self.on_failure: Callable[[OSError], None] | None = None

    @classmethod
    async def connect(cls, host: str, port: int, family: socket.AddressFamily) -> SocketChannel:
        loop = asyncio.get_running_loop()
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            # Requests are small and answered one by one: Nagle would hold them back.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, (host, port))
        except BaseException:
            sock.close()
            raise
        return cls(loop, sock)

    def write(self, data: bytes) -> None:
        if self._failure is not None:
            raise self._failure
        if self._backlog:  # behind what the sender still holds
            self._backlog.append(data)
            return
        try:
            sent = self._sock.send(data)
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            self._backlog.append(memoryview(data)[sent:])
            self._sender = self._loop.create_task(self._send_backlog())

    @property
    def flushed(self) -> bool:
        return not self._backlog and self._failure is None

    async def _send_backlog(self) -> None:
        backlog = self._backlog
        try:
            while backlog:
                await self._loop.sock_sendall(self._sock, backlog[0])
                backlog.popleft()
        except OSError as exc:
            backlog.clear()
            self._failure = exc
            if self.on_failure is not None:
                self.on_failure(exc)

    async def drain(self) -> None:
        sender = self._sender
        if sender is not None and not sender.done():
            await asyncio.shield(sender)
        if self._failure is not None:
            raise self._failure

    async def read(self) -> bytes:
        """Cancel-safe: bytes leave the kernel only once this call is sure to return them.

        ``loop.sock_recv`` is not: its callback takes the bytes from the socket and sets its
        future, and a timeout that cancels the caller in the same turn of the loop (a
        handshake's quiet period ending just as the reply arrives) drops them.  So wait for
        the socket to be readable, with nothing taken, and read only once awake.
        """
        sock = self._sock
        while True:
            try:
                return sock.recv(CHUNK)
            except (BlockingIOError, InterruptedError):
                pass
            readable = self._loop.create_future()
            fd = sock.fileno()
            self._loop.add_reader(fd, _wake, readable)
            try:
                await readable
            finally:
                self._loop.remove_reader(fd)

    async def close(self) -> None:
        sender, self._sender = self._sender, None
        try:
            if sender is not None and not sender.done():
                sender.cancel()
                await asyncio.wait({sender})  # its registration with the loop goes first
        finally:
            self._sock.close()


def _wake(readable: asyncio.Future[None]) -> None:
    if not readable.done():
        readable.set_result(None)


class StreamChannel:
    """asyncio's streams: TLS, or a host name to resolve."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def connect(
        cls, host: str, port: int, context: ssl.SSLContext | None, server_hostname: str | None
    ) -> StreamChannel:
        reader, writer = await asyncio.open_connection(
            host, port, ssl=context, server_hostname=server_hostname, limit=CHUNK
        )
        return cls(reader, writer)

    @property
    def flushed(self) -> bool:
        return False  # the transport's buffer is not ours to see: drain decides

    def write(self, data: bytes) -> None:
        # Handed to the transport, the bytes go out whole (it buffers what the socket
        # does not take yet; the in-flight bound bounds that buffer).
        self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()

    async def read(self) -> bytes:
        return await self._reader.read(CHUNK)

    async def close(self) -> None:
        writer = self._writer
        writer.close()
        # Closing a broken socket can fail too: there is nothing more to learn from it.
        with contextlib.suppress(OSError, ssl.SSLError, TimeoutError):
            async with asyncio.timeout(_CLOSE_TIMEOUT):
                await writer.wait_closed()
