"""The trio ByteStream's send and read paths: at once on the standard-library socket, or waiting.

A connected pair of sockets on 127.0.0.1 stands in for a broker: the test's own
end reads (or does not read) what the stream sends.
"""

from __future__ import annotations

import functools
import socket

import pytest
import trio

from kafkacompat.errors import TransportError
from kafkacompat.transport.stream import EAGER_READS, ByteStream


def _pair() -> tuple[socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    with listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    return client, server


def test_raw_must_be_the_socket_under_sock() -> None:
    client, server = _pair()
    other, other_server = _pair()
    with client, server, other, other_server, pytest.raises(ValueError, match="under sock"):
        ByteStream("n", sock=trio.socket.from_stdlib_socket(client), raw=other)


def test_a_small_request_is_sent_at_once_without_yielding() -> None:
    async def main() -> None:
        client, server = _pair()
        with server:
            stream = ByteStream("n", sock=trio.socket.from_stdlib_socket(client), raw=client)
            left = stream.send_now(b"request")
            assert left is not None and not left
            assert server.recv(100) == b"request"
            await stream.aclose()

    trio.run(main)


def test_what_the_kernel_cannot_take_is_left_and_sent_once_the_peer_reads() -> None:
    async def main() -> None:
        client, server = _pair()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        data = bytes(range(256)) * 32768  # 8 MiB: far more than both buffers hold
        with server:
            stream = ByteStream("n", sock=trio.socket.from_stdlib_socket(client), raw=client)
            left = stream.send_now(data)
            assert left is not None and 0 < len(left) < len(data)
            received = bytearray()  # the peer reads the whole stream, what went at once first

            async def drain() -> None:
                server.setblocking(False)
                while len(received) < len(data):
                    await trio.lowlevel.wait_readable(server)
                    received.extend(server.recv(1 << 20))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain)
                await stream.send_all(left)
            assert bytes(received) == data
            await stream.aclose()

    trio.run(main)


def test_a_send_on_a_reset_connection_is_a_transport_error() -> None:
    async def main() -> None:
        client, server = _pair()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        server.close()  # linger 0: a reset
        stream = ByteStream("n", sock=trio.socket.from_stdlib_socket(client), raw=client)
        with pytest.raises(TransportError), trio.fail_after(10):
            while True:  # until the reset has arrived: a send before it may still be taken
                stream.send_now(b"x" * 1024)
                await stream.send_all(b"x" * 1024)
                await trio.sleep(0.01)
        await stream.aclose()

    trio.run(main)


def test_a_read_waits_for_data_after_the_callback_it_was_given() -> None:
    """Nothing tried at first: ``before_waiting`` runs, then the read waits for the peer."""

    async def main() -> None:
        client, server = _pair()
        with server:
            stream = ByteStream("n", sock=trio.socket.from_stdlib_socket(client), raw=client)
            calls: list[str] = []

            def before_waiting() -> None:
                calls.append("before")
                server.sendall(b"answer")  # what the stream waits for arrives after the callback

            assert await stream.receive_some(before_waiting) == b"answer"
            assert calls == ["before"]
            await stream.aclose()

    trio.run(main)


def test_a_read_that_filled_its_buffer_is_followed_by_reads_tried_at_once() -> None:
    """More is likely there: up to EAGER_READS reads in a row skip the callback and the wait."""

    async def main() -> None:
        client, server = _pair()
        with server:
            stream = ByteStream("n", sock=trio.socket.from_stdlib_socket(client), raw=client)
            server.sendall(bytes(range(256)) * 64)  # 16 KiB, read 8 bytes at a time
            await trio.sleep(0.05)  # all of it in the client's receive buffer
            calls: list[int] = []
            buffer = bytearray(8)
            for read in range(EAGER_READS + 2):
                noted = functools.partial(calls.append, read)
                assert await stream.receive_into(memoryview(buffer), noted) == 8
            # The first read and the one after EAGER_READS eager ones went through the wait.
            assert calls == [0, EAGER_READS + 1]
            await stream.aclose()

    trio.run(main)


def test_a_read_on_a_closed_peer_returns_the_end_of_the_stream() -> None:
    async def main() -> None:
        client, server = _pair()
        server.close()
        stream = ByteStream("n", sock=trio.socket.from_stdlib_socket(client), raw=client)
        with trio.fail_after(5):
            assert await stream.receive_some() == b""
        await stream.aclose()

    trio.run(main)
