"""The asyncio driver's bare-socket channel: sends at once, a remainder sent in order, failures.

Each test is a plain function running its own asyncio loop against a
listening socket on 127.0.0.1 (pytest runs the project's async tests on trio).
"""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from kafkacompat.aio.channel import SocketChannel

BIG = 16 * 1024 * 1024  # far more than loopback's socket buffers take at once


async def _pair() -> tuple[SocketChannel, socket.socket]:
    """A channel connected to a peer socket that reads only when the test says so."""
    loop = asyncio.get_running_loop()
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        host, port = server.getsockname()[:2]
        accepting = loop.create_task(loop.sock_accept(server))
        channel = await SocketChannel.connect(host, port, socket.AF_INET)
        peer, _ = await accepting
    return channel, peer


async def _read_all(peer: socket.socket, count: int) -> bytes:
    loop = asyncio.get_running_loop()
    got = bytearray()
    while len(got) < count:
        chunk = await loop.sock_recv(peer, 1 << 20)
        assert chunk, "the channel closed early"
        got += chunk
    return bytes(got)


def test_a_write_the_kernel_takes_at_once_needs_no_sender() -> None:
    async def main() -> None:
        channel, peer = await _pair()
        with peer:
            channel.write(b"hello")
            assert channel._sender is None
            await channel.drain()
            assert await _read_all(peer, 5) == b"hello"
            await channel.close()

    asyncio.run(main())


def test_what_the_kernel_does_not_take_goes_out_later_before_anything_written_after_it() -> None:
    async def main() -> None:
        channel, peer = await _pair()
        with peer:
            first = bytes(range(256)) * (BIG // 256)
            channel.write(first)
            assert channel._sender is not None  # the kernel took part of it
            channel.write(b"second")  # queued behind the rest of the first
            received, _ = await asyncio.gather(_read_all(peer, len(first) + 6), channel.drain())
            assert received == first + b"second"
            channel.write(b"third")  # the backlog is empty again: straight to the socket
            assert await _read_all(peer, 5) == b"third"
            await channel.close()

    asyncio.run(main())


def test_a_reset_while_a_remainder_waits_is_reported_to_on_failure_and_to_drain() -> None:
    async def main() -> None:
        channel, peer = await _pair()
        failures: list[OSError] = []
        channel.on_failure = failures.append
        channel.write(b"x" * BIG)
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()  # a reset, with the remainder still unsent
        with pytest.raises(OSError):
            await channel.drain()
        assert len(failures) == 1 and isinstance(failures[0], OSError)
        with pytest.raises(OSError):
            channel.write(b"more")  # the channel stays failed
        await channel.close()

    asyncio.run(main())


def test_close_ends_a_pending_remainder_and_the_socket() -> None:
    async def main() -> None:
        channel, peer = await _pair()
        with peer:
            channel.write(b"x" * BIG)
            sender = channel._sender
            assert sender is not None and not sender.done()
            await channel.close()
            assert sender.cancelled()
            assert channel._sock.fileno() == -1

    asyncio.run(main())


def test_a_read_cancelled_as_its_bytes_arrive_leaves_them_for_the_next_read() -> None:
    """A timeout that cancels a read in the very turn of the loop its reply arrives in (the
    handshake's quiet period ending as ApiVersions is answered) must not drop the reply: the
    next read gets it.  With ``loop.sock_recv`` the bytes were taken and lost, and the
    handshake then saw the Metadata probe answered first and took a starting 3.0 broker for 0.9."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for _ in range(20):
            channel, peer = await _pair()
            with peer:
                reading = loop.create_task(channel.read())
                await asyncio.sleep(0)  # the read now waits for the socket
                await asyncio.sleep(0)
                peer.sendall(b"the reply")
                # Due at once: the loop runs it in the same turn as the socket's readiness.
                loop.call_at(loop.time(), reading.cancel)
                with pytest.raises(asyncio.CancelledError):
                    await reading
                async with asyncio.timeout(5):
                    assert await channel.read() == b"the reply"
                await channel.close()

    asyncio.run(main())
