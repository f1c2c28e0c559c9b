"""The broker's side of framing: reading a request frame, writing a response frame.

Only a broker needs it (the emulator, the recorder's proxy, the tests' peers):
the client's side, and what both share (header versions, the frame splitter),
is ``framing``, which every connection loads; this module is not.
"""

from __future__ import annotations

from typing import NamedTuple

from kafkacompat.errors import DecodeError, ProtocolError
from kafkacompat.protocol import _wire, messages
from kafkacompat.protocol.framing import request_header_version, response_header_version, size_prefixed
from kafkacompat.protocol.message import KafkaMessage, decode_at
from kafkacompat.protocol.messages import RequestHeader, ResponseHeader

__all__ = ["RequestFrame", "decode_request", "encode_response"]


def encode_response(message: KafkaMessage, version: int, correlation_id: int) -> bytes:
    """A whole response frame (used by the emulator and the tests)."""
    if message.MESSAGE_TYPE != "response" or message.API_KEY is None:
        raise ProtocolError(f"{message.NAME} is not a response")
    header_version = response_header_version(message.API_KEY, version)
    header = ResponseHeader(correlation_id=correlation_id).encode(header_version)
    return size_prefixed(header, message.encode(version))



class RequestFrame(NamedTuple):
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
