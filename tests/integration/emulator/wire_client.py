"""A raw codec client over trio for the emulator tests: frames out, frames in, nothing more.

Every read is bounded by the caller's ``trio.fail_after``; ``recv_frame``
returns None when the peer closed or reset the connection.
"""

from __future__ import annotations

from typing import Any

import trio

from kafkacompat.protocol import framing, messages
from kafkacompat.protocol.message import KafkaMessage

CLIENT_ID = "emulator-tests"


def response_class(api_key: int) -> type[KafkaMessage]:
    cls: type[KafkaMessage] = getattr(messages, messages.CLASS_BY_KEY[(api_key, "response")])
    return cls


def host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    assert host in ("127.0.0.1", "localhost"), address
    return host, int(port)


class WireClient:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.splitter = framing.FrameSplitter()
        self.pending: list[bytes] = []
        self.correlation_id = 0
        self.raw: bytearray = bytearray()

    @classmethod
    async def connect(cls, address: str) -> WireClient:
        host, port = host_port(address)
        return cls(await trio.open_tcp_stream(host, port))

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> WireClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await trio.aclose_forcefully(self.stream)

    async def send(self, request: KafkaMessage, version: int, correlation_id: int | None = None) -> int:
        if correlation_id is None:
            self.correlation_id += 1
            correlation_id = self.correlation_id
        await self.stream.send_all(framing.encode_request(request, version, correlation_id, CLIENT_ID))
        return correlation_id

    async def send_bytes(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def recv_bytes(self) -> bytes:
        """Everything until the peer closes (or resets); for faults that send non-frames."""
        got = bytearray()
        try:
            while True:
                chunk = await self.stream.receive_some(65536)
                if not chunk:
                    return bytes(got)
                got += chunk
        except trio.BrokenResourceError:
            return bytes(got)

    async def recv_frame(self) -> bytes | None:
        while not self.pending:
            try:
                chunk = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return None
            if not chunk:
                return None
            self.raw += chunk
            self.pending.extend(self.splitter.feed(chunk))
        return self.pending.pop(0)

    async def request(
        self, request: KafkaMessage, version: int, *, read_as: int | None = None
    ) -> tuple[int, Any]:
        """Send and read one reply: (correlation id, decoded body); the body is read at ``read_as``."""
        assert request.API_KEY is not None
        await self.send(request, version)
        frame = await self.recv_frame()
        assert frame is not None, f"connection closed instead of a reply to {request.NAME} v{version}"
        read_version = version if read_as is None else read_as
        return framing.decode_response(frame, response_class(request.API_KEY), read_version)

    async def is_closed(self) -> bool:
        """True once the peer closed or reset (waits for it)."""
        return await self.recv_frame() is None
