"""A deliberately tiny raw-socket Kafka client, for the broker smoke tests only.

It frames one request (int32 size prefix), sends it to 127.0.0.1, and reads one
size-prefixed response, all under a single deadline.  The request bytes are
written by hand from the wire format so that these tests do not depend on the
library's codec.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

__all__ = [
    "API_VERSIONS",
    "FIND_COORDINATOR",
    "ApiVersionsReply",
    "ConnectionClosed",
    "Reader",
    "api_versions_request",
    "exchange",
    "find_coordinator_request",
    "parse_api_versions",
    "request_header",
]

API_VERSIONS = 18
FIND_COORDINATOR = 10
MAX_RESPONSE = 16 * 1024 * 1024


class ConnectionClosed(Exception):
    """The peer closed the connection before a whole response arrived."""

    def __init__(self, received: bytes) -> None:
        super().__init__(f"connection closed after {len(received)} bytes: {received.hex()}")
        self.received = received


def _nullable_string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _compact_string(value: str) -> bytes:
    raw = value.encode()
    return _uvarint(len(raw) + 1) + raw


def request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, *, flexible: bool
) -> bytes:
    """Request header v1 (``flexible=False``) or v2 (v1 plus an empty tag buffer)."""
    head = struct.pack(">hhi", api_key, api_version, correlation_id) + _nullable_string(client_id)
    return head + (b"\x00" if flexible else b"")


def api_versions_request(
    version: int,
    correlation_id: int,
    client_id: str | None = "kafkacompat-tests",
    software_name: str = "kafkacompat-tests",
    software_version: str = "0.1.0",
) -> bytes:
    """An ApiVersions request (header and body, without the size prefix)."""
    if version < 3:
        return request_header(API_VERSIONS, version, correlation_id, client_id, flexible=False)
    body = _compact_string(software_name) + _compact_string(software_version) + b"\x00"
    return request_header(API_VERSIONS, version, correlation_id, client_id, flexible=True) + body


def find_coordinator_request(
    version: int, correlation_id: int, key: str, client_id: str | None = "kafkacompat-tests"
) -> bytes:
    """A FindCoordinator request for a group key, v0-v2 (classic) or v3+ (flexible)."""
    if version < 3:
        body = _nullable_string(key)
        if version >= 1:
            body += b"\x00"  # key_type 0 = group
        return request_header(FIND_COORDINATOR, version, correlation_id, client_id, flexible=False) + body
    if version == 3:
        body = _compact_string(key) + b"\x00" + b"\x00"  # key, key_type, tags
    else:
        body = b"\x00" + _uvarint(2) + _compact_string(key) + b"\x00"  # key_type, [keys], tags
    return request_header(FIND_COORDINATOR, version, correlation_id, client_id, flexible=True) + body


def _recv_exactly(sock: socket.socket, count: int, deadline: float, got: bytearray) -> None:
    target = len(got) + count
    while len(got) < target:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no complete response in time; got {bytes(got).hex()}")
        sock.settimeout(remaining)
        chunk = sock.recv(min(65536, target - len(got)))
        if not chunk:
            raise ConnectionClosed(bytes(got))
        got += chunk


def exchange(host: str, port: int, payload: bytes, timeout: float = 5.0) -> bytes:
    """Send one size-prefixed request and return one response (without its size prefix)."""
    if host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"the smoke tests only talk to 127.0.0.1, not {host!r}")
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        got = bytearray()
        _recv_exactly(sock, 4, deadline, got)
        (size,) = struct.unpack(">i", bytes(got))
        if not 0 <= size <= MAX_RESPONSE:
            raise ValueError(f"implausible response size {size}")
        got.clear()
        _recv_exactly(sock, size, deadline, got)
        return bytes(got)


class Reader:
    """Reads big-endian Kafka primitives from a buffer."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def int8(self) -> int:
        return self._take(">b")

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            size = self.uvarint()
            self.pos += size

    def at_end(self) -> bool:
        return self.pos == len(self.data)


@dataclass(frozen=True)
class ApiVersionsReply:
    """The parts of an ApiVersions response the smoke tests look at."""

    correlation_id: int
    error_code: int
    api_keys: dict[int, tuple[int, int]]
    throttle_time_ms: int | None
    fully_read: bool


def parse_api_versions(response: bytes, version: int) -> ApiVersionsReply:
    """Parse an ApiVersions response read as ``version`` (the header is always v0)."""
    r = Reader(response)
    correlation_id = r.int32()
    error_code = r.int16()
    flexible = version >= 3
    count = r.uvarint() - 1 if flexible else r.int32()
    keys: dict[int, tuple[int, int]] = {}
    for _ in range(max(count, 0)):
        key, lo, hi = r.int16(), r.int16(), r.int16()
        keys[key] = (lo, hi)
        if flexible:
            r.skip_tags()
    throttle = r.int32() if version >= 1 else None
    if flexible:
        r.skip_tags()
    return ApiVersionsReply(correlation_id, error_code, keys, throttle, r.at_end())
