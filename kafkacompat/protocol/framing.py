"""Headers and size-prefixed frames: what goes around a message body on the wire.

A request frame is ``int32 size | request header | body`` and a response frame
``int32 size | response header | body``.  The header version follows from the
API and its version: flexible versions use request header v2 and response
header v1, older ones v1 and v0, with two exceptions kept by Kafka for
compatibility: ControlledShutdown v0 uses request header v0 (no client id),
and an ApiVersions response always uses response header v0, so that a client
that does not yet know the broker's versions can always read the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkacompat.errors import DecodeError, KafkaCompatError, ProtocolError, WrongProtocolError
from kafkacompat.protocol import _wire, messages
from kafkacompat.protocol.message import KafkaMessage, decode_at
from kafkacompat.protocol.messages import RequestHeader, ResponseHeader

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameSplitter",
    "RequestFrame",
    "check_frame_size",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "request_header_version",
    "response_header_version",
    "sniff_foreign_protocol",
]

DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7


def _first_flexible(api_key: int) -> int:
    try:
        return messages.FIRST_FLEXIBLE[api_key]
    except KeyError:
        raise ProtocolError(f"unknown API key {api_key}") from None


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if api_version >= _first_flexible(api_key) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS:
        return 0
    return 1 if api_version >= _first_flexible(api_key) else 0


def _frame(*parts: bytes) -> bytes:
    size = sum(len(p) for p in parts)
    return b"".join((_wire.INT32.pack(size), *parts))


def encode_request(message: KafkaMessage, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """A whole request frame: size prefix, request header, body."""
    if message.MESSAGE_TYPE != "request" or message.API_KEY is None:
        raise ProtocolError(f"{message.NAME} is not a request")
    body = message.encode(version)
    header = RequestHeader(
        request_api_key=message.API_KEY,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    header_version = request_header_version(message.API_KEY, version)
    return _frame(header.encode(header_version), body)


def encode_response(message: KafkaMessage, version: int, correlation_id: int) -> bytes:
    """A whole response frame (used by the emulator and the tests)."""
    if message.MESSAGE_TYPE != "response" or message.API_KEY is None:
        raise ProtocolError(f"{message.NAME} is not a response")
    header_version = response_header_version(message.API_KEY, version)
    header = ResponseHeader(correlation_id=correlation_id).encode(header_version)
    return _frame(header, message.encode(version))


def decode_response(
    frame: bytes | bytearray | memoryview,
    response_cls: type[KafkaMessage],
    version: int,
    *,
    allow_trailing: bool = False,
) -> tuple[int, KafkaMessage]:
    """Read a response frame *without* its size prefix: (correlation id, body).

    ``allow_trailing`` accepts bytes after the body, as Kafka's own client does
    (librdkafka's mock broker, for one, ends flexible Metadata replies with an
    extra empty tag section).
    """
    assert response_cls.API_KEY is not None
    header_version = response_header_version(response_cls.API_KEY, version)
    header_reader = ResponseHeader._READERS[header_version]
    header, offset = decode_at("ResponseHeader", header_reader, frame, 0, header_version)
    body = memoryview(frame)[offset:]
    return header.correlation_id, response_cls.decode(body, version, allow_trailing=allow_trailing)


def peek_correlation_id(frame: bytes | bytearray | memoryview) -> int:
    """The correlation id, which every response header starts with."""
    if len(frame) < 4:
        raise DecodeError("response shorter than its correlation id", what="ResponseHeader", offset=0)
    (correlation_id,) = _wire.INT32.unpack_from(frame, 0)
    return int(correlation_id)


@dataclass(frozen=True, slots=True)
class RequestFrame:
    """A decoded request: its header, header version, and body (None when unknown)."""

    header: RequestHeader
    header_version: int
    body: KafkaMessage | None
    body_bytes: bytes


def decode_request(frame: bytes | bytearray | memoryview, *, decode_body: bool = True) -> RequestFrame:
    """Read a request frame without its size prefix (the broker's side)."""
    if len(frame) < 4:
        raise DecodeError("request shorter than its api key and version", what="RequestHeader", offset=0)
    api_key, api_version = _wire.INT16.unpack_from(frame, 0)[0], _wire.INT16.unpack_from(frame, 2)[0]
    name = messages.CLASS_BY_KEY.get((api_key, "request"))
    # An unknown API still has a readable classic header (v1): enough to answer it.
    header_version = 1 if name is None else request_header_version(api_key, api_version)
    reader = RequestHeader._READERS[header_version]
    header, offset = decode_at("RequestHeader", reader, frame, 0, header_version)
    body_bytes = bytes(memoryview(frame)[offset:])
    body = None
    if decode_body and name is not None:
        request_cls: type[KafkaMessage] = getattr(messages, name)
        if api_version in request_cls.VALID_VERSIONS:
            body = request_cls.decode(body_bytes, api_version)
    return RequestFrame(header, header_version, body, body_bytes)


# ---------------------------------------------------------------- frames --


def sniff_foreign_protocol(data: bytes | bytearray | memoryview) -> str | None:
    """A hint when bytes that should be a Kafka frame look like another protocol."""
    head = bytes(data[:8])
    if len(head) >= 2 and head[0] in (0x15, 0x16) and head[1] == 0x03:
        kind = "a TLS alert" if head[0] == 0x15 else "a TLS handshake"
        return (
            f"the peer answered with {kind}: the listener expects TLS "
            "(security.protocol SSL or SASL_SSL), or the port is wrong"
        )
    if head.startswith((b"HTTP", b"<!DOC", b"<html", b"<HTML")):
        return "the peer answered in HTTP: this port is a web server, not a Kafka listener"
    if head.startswith(b"SSH-"):
        return "the peer is an SSH server, not a Kafka listener"
    return None


def check_frame_size(prefix: bytes | bytearray | memoryview, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> int:
    """Validate a 4-byte size prefix before anything is allocated for the frame."""
    (size,) = _wire.INT32.unpack_from(prefix, 0)
    if 0 <= size <= max_size:
        return int(size)
    hint = sniff_foreign_protocol(prefix)
    if hint is not None:
        raise WrongProtocolError(hint)
    if size < 0:
        raise ProtocolError(f"frame size prefix is negative ({size}): the stream is corrupt")
    raise ProtocolError(
        f"frame of {size} bytes exceeds the maximum of {max_size} bytes; "
        "the stream is corrupt or the peer is not Kafka"
    )


class FrameSplitter:
    """Sans-I/O reassembly of size-prefixed frames from a byte stream.

    ``feed`` takes whatever arrived and returns the complete frames (without
    their prefixes).  A bad size prefix raises at once, before buffering the
    body it announces.
    """

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_size = max_size
        self._buffer = bytearray()
        self._expected: int | None = None
        self._error: KafkaCompatError | None = None

    def unconsumed(self, limit: int = 16) -> bytes:
        """The first bytes not yet taken as a frame (what a refused prefix started with)."""
        return bytes(self._buffer[:limit])

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """The frames completed by ``data``.

        A bad size prefix raises; when good frames came before it in the same
        chunk, they are returned first and the error is raised by the next call.
        """
        if self._error is not None:
            raise self._error
        self._buffer += data
        frames: list[bytes] = []
        while True:
            if self._expected is None:
                if len(self._buffer) < 4:
                    return frames
                try:
                    self._expected = check_frame_size(self._buffer[:4], self.max_size)
                except KafkaCompatError as exc:
                    if not frames:
                        raise
                    self._error = exc
                    return frames
                del self._buffer[:4]
            if len(self._buffer) < self._expected:
                return frames
            frames.append(bytes(self._buffer[: self._expected]))
            del self._buffer[: self._expected]
            self._expected = None
