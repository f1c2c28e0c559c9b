"""The trio ByteStream's send paths: at once on the standard-library socket, or waiting on trio's.

A connected pair of sockets on 127.0.0.1 stands in for a broker: the test's own
end reads (or does not read) what the stream sends.
"""

from __future__ import annotations

import socket

import pytest
import trio

from kafkacompat.errors import TransportError
from kafkacompat.transport.stream import ByteStream


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
