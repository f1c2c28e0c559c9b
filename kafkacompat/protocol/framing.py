"""Headers and size-prefixed frames: what goes around a message body on the wire.

A request frame is ``int32 size | request header | body`` and a response frame
``int32 size | response header | body``.  The header version follows from the
API and its version: flexible versions use request header v2 and response
header v1, older ones v1 and v0, with two exceptions kept by Kafka for
compatibility: ControlledShutdown v0 uses request header v0 (no client id),
and an ApiVersions response always uses response header v0, so that a client
that does not yet know the broker's versions can always read the answer.

The broker's side (reading a request frame, writing a response frame) is
``broker_framing``: a client never loads it.
"""

from __future__ import annotations

from typing import Final, TypeVar

from kafkacompat.errors import (
    DecodeError,
    KafkaCompatError,
    ProtocolError,
    ReplyTooLargeError,
    WrongProtocolError,
)
from kafkacompat.protocol import _wire, messages
from kafkacompat.protocol.message import KafkaMessage, decode_at
from kafkacompat.protocol.messages import RequestHeader, ResponseHeader
from kafkacompat.protocol.messages.api_key_numbers import API_VERSIONS, CONTROLLED_SHUTDOWN

__all__ = [
    "DEFAULT_CLIENT_ID",
    "DEFAULT_HEADERS",
    "DEFAULT_MAX_FRAME_SIZE",
    "FOREIGN_BYTES_KEPT",
    "FrameSplitter",
    "RequestHeaders",
    "check_frame_size",
    "decode_response",
    "encode_request",
    "foreign_kind",
    "request_header_version",
    "response_header_version",
    "size_prefixed",
    "sniff_foreign_protocol",
]

DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024
# Plain ints from the enum: compared on every frame, where an enum attribute costs ~0.2 us.
_API_VERSIONS: Final = API_VERSIONS
_CONTROLLED_SHUTDOWN: Final = CONTROLLED_SHUTDOWN
_Response = TypeVar("_Response", bound=KafkaMessage)
_SMALL_FRAME: Final = 4096  # bytes: below this a frame leaves the splitter by slicing, not a view
_LARGE_FRAME: Final = 1 << 20  # bytes: from this size a frame read into its buffer leaves in it, uncopied


def _first_flexible(api_key: int) -> int:
    try:
        return messages.FIRST_FLEXIBLE[api_key]
    except KeyError:
        raise ProtocolError(f"unknown API key {api_key}") from None


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == _CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if api_version >= _first_flexible(api_key) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == _API_VERSIONS:
        return 0
    return 1 if api_version >= _first_flexible(api_key) else 0


def size_prefixed(*parts: bytes) -> bytes:
    """``parts`` as one frame: their total size (int32), then themselves."""
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
    return size_prefixed(header.encode(header_version), body)


def decode_response(
    frame: bytes | bytearray | memoryview,
    response_cls: type[_Response],
    version: int,
    *,
    allow_trailing: bool = False,
) -> tuple[int, _Response]:
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


def short_response_error() -> DecodeError:
    """A response frame too short to hold a correlation id."""
    return DecodeError("response shorter than its correlation id", what="ResponseHeader", offset=0)


def peek_correlation_id(frame: bytes | bytearray | memoryview) -> int:
    """The correlation id, which every response header starts with."""
    if len(frame) < 4:
        raise short_response_error()
    (correlation_id,) = _wire.INT32.unpack_from(frame, 0)
    return int(correlation_id)


# ---------------------------------------------------------------- frames --


#: Bytes of another protocol's answer kept to name it and for a report's details (its first line).
FOREIGN_BYTES_KEPT: Final = 64


def foreign_kind(data: bytes | bytearray | memoryview) -> str | None:
    """What another protocol's first bytes are: ``"tls"``, ``"http"``, ``"ssh"``, or None.

    A TLS record starts with its content type (21 alert, 22 handshake) and major
    version 3; a web server's answer with its status line or an HTML page; an SSH
    server's with its banner.
    """
    head = bytes(data[:8])
    if len(head) >= 2 and head[0] in (0x15, 0x16) and head[1] == 0x03:
        return "tls"
    if head.startswith(b"HTTP") or head[:5].lower() in (b"<!doc", b"<html"):
        return "http"
    if head.startswith(b"SSH-"):
        return "ssh"
    return None


def sniff_foreign_protocol(data: bytes | bytearray | memoryview) -> str | None:
    """A hint when bytes that should be a Kafka frame look like another protocol."""
    kind = foreign_kind(data)
    if kind == "tls":
        alert = data[0] == 0x15
        return (
            f"the peer answered with {'a TLS alert' if alert else 'a TLS handshake'}: the listener "
            "expects TLS (security.protocol SSL or SASL_SSL), or the port is wrong"
        )
    if kind == "http":
        return "the peer answered in HTTP: this port is a web server, not a Kafka listener"
    if kind == "ssh":
        return "the peer is an SSH server, not a Kafka listener"
    return None


def check_frame_size(
    prefix: bytes | bytearray | memoryview, max_size: int = DEFAULT_MAX_FRAME_SIZE, *, what: str | None = None
) -> int:
    """Validate a 4-byte size prefix before anything is allocated for the frame.

    ``what`` names the request the frame answers, for the message of a
    ``ReplyTooLargeError`` (a size above ``max_size``, the ceiling for it).
    """
    (size,) = _wire.INT32.unpack_from(prefix, 0)
    if 0 <= size <= max_size:
        return int(size)
    hint = sniff_foreign_protocol(prefix)
    if hint is not None:
        raise WrongProtocolError(hint, kind=foreign_kind(prefix) or "other", first_bytes=bytes(prefix[:4]))
    if size < 0:
        raise ProtocolError(f"frame size prefix is negative ({size}): the stream is corrupt")
    subject = f"reply to {what}" if what else "frame"
    raise ReplyTooLargeError(
        f"{subject} of {size} bytes exceeds the maximum of {max_size} bytes; "
        "the stream is corrupt or the peer is not Kafka (a larger reply can be allowed in "
        "ConnectionConfig.reply_limits / max_frame_size)",
        size=size,
        limit=max_size,
        what=what,
    )


class FrameSplitter:
    """Sans-I/O reassembly of size-prefixed frames from a byte stream, one buffer per frame.

    Bytes are ``push``-ed as they arrive; ``next_frame(limit)`` returns the next
    whole frame (without its prefix) once it is complete.  The size prefix is
    checked against ``limit`` (the ceiling for the reply expected next) before
    anything is allocated for the body; the body then gets one buffer of
    exactly its size, filled in place (``body_room`` lets a socket read straight
    into it), and leaves as ``bytes``: the frame is held once while it arrives
    and copied once when it is handed over (a frame under 4 KiB that came
    whole is sliced out instead: two small copies, less work).  A frame of
    1 MiB or more that was read into its buffer leaves as that ``bytearray``,
    uncopied: two copies of a 60 MiB reply would cost 120 MiB at the peak.

    ``feed`` is the older interface: push, then every frame now complete, each
    held to ``max_size``.
    """

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_size = max_size
        self._staged = bytearray()  # bytes not yet taken (from _start): a prefix, what follows a body
        self._start = 0  # taken bytes are skipped, not moved, until the buffer is drained or half used
        self._body: bytearray | None = None  # the frame being filled, exactly its size
        self._filled = 0
        self._error: KafkaCompatError | None = None

    def unconsumed(self, limit: int = 16) -> bytes:
        """The first bytes not yet taken as a frame (what a refused prefix started with)."""
        return bytes(self._staged[self._start : self._start + limit])

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._staged) - self._start + self._filled

    def push(self, data: bytes | bytearray | memoryview) -> None:
        """Take bytes as they arrived; the body being filled gets them first."""
        if self._body is not None and self._filled < len(self._body):
            view = memoryview(data)
            take = min(len(self._body) - self._filled, len(view))
            self._body[self._filled : self._filled + take] = view[:take]
            self._filled += take
            data = view[take:]
        if data:
            if self._start and self._start == len(self._staged):
                self._staged.clear()
                self._start = 0
            self._staged += data

    def body_room(self) -> memoryview | None:
        """The unfilled part of the body being read (for ``recv_into``), or None between frames."""
        if self._body is None or self._filled == len(self._body) or len(self._staged) > self._start:
            return None
        return memoryview(self._body)[self._filled :]

    def body_filled(self, count: int) -> None:
        """``count`` bytes were written into ``body_room()``."""
        self._filled += count

    def next_frame(self, limit: int | None = None, *, what: str | None = None) -> bytes | bytearray | None:
        """The next whole frame, or None until more bytes come; a bad prefix raises.

        ``limit`` (default ``max_size``, never above it) is the ceiling for this
        frame, ``what`` the request it answers (for the error message).
        """
        if self._body is None:
            staged, start = self._staged, self._start
            if len(staged) - start < 4:
                return None
            ceiling = self.max_size if limit is None else min(limit, self.max_size)
            (size,) = _wire.INT32.unpack_from(staged, start)
            if not 0 <= size <= ceiling:
                check_frame_size(bytes(staged[start : start + 4]), ceiling, what=what)  # raises
            end = start + 4 + size
            if end <= len(staged) and size <= _SMALL_FRAME:
                # All here, and small (a handshake reply, most responses): slicing copies it
                # twice yet costs half of making and releasing a view.
                frame = bytes(staged[start + 4 : end])
                taken = -1
            else:
                view = memoryview(staged)
                try:
                    if end <= len(staged):  # all here already: one copy out
                        frame = bytes(view[start + 4 : end])
                        taken = -1
                    else:  # the body gets a buffer of its size; the rest of it is read into that
                        taken = len(staged) - start - 4
                        self._body = bytearray(size)
                        self._body[:taken] = view[start + 4 :]
                        self._filled = taken
                        end = len(staged)
                finally:
                    view.release()
            self._start = end
            if end == len(staged) or end > len(staged) // 2:
                del staged[:end]  # drained, or half used: drop what was taken
                self._start = 0
            if taken < 0:
                return frame
        assert self._body is not None
        if self._filled < len(self._body):
            return None
        body, self._body, self._filled = self._body, None, 0
        if len(body) >= _LARGE_FRAME:
            return body  # no second copy of a large frame: it leaves in the buffer it was read into
        frame = bytes(body)
        del body  # the one copy: the buffer goes as the frame leaves
        return frame

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """The frames completed by ``data``, each held to ``max_size``.

        A bad size prefix raises; when good frames came before it in the same
        chunk, they are returned first and the error is raised by the next call.
        """
        if self._error is not None:
            raise self._error
        self.push(data)
        frames: list[bytes] = []
        while True:
            try:
                frame = self.next_frame()
            except KafkaCompatError as exc:
                if not frames:
                    raise
                self._error = exc
                return frames
            if frame is None:
                return frames
            frames.append(bytes(frame) if isinstance(frame, bytearray) else frame)  # feed's frames are bytes


# -- a connection's request headers --------------------------------------------------------
#
# On one connection everything in a request header but the correlation id (the API key, its
# version, the client id; tagged fields in v2) is the same for every request of one API at one
# version, and the correlation id sits at the same offset in every header version.  So a
# connection's header is encoded once per API and version, split around the correlation id,
# and each request costs its size prefix, its correlation id and its body.  Every phase of a
# connection (the handshake, the pre-0.10 probe, SASL, requests) writes through the one
# ``RequestHeaders`` its ``ConnectionConfig`` made from ``client_id``: a connection cannot send
# two client ids.

#: The client id a connection sends unless its config names another.
DEFAULT_CLIENT_ID: Final = "kafkacompat"


class RequestHeaders:
    """Request frames with ``client_id`` in their header, made once per API and version."""

    __slots__ = ("_around", "client_id")

    def __init__(self, client_id: str | None = DEFAULT_CLIENT_ID) -> None:
        self.client_id = client_id
        self._around: dict[tuple[int, int], tuple[bytes, bytes]] = {}

    def around_id(self, api_key: int, version: int) -> tuple[bytes, bytes]:
        """The header's bytes before and after its correlation id (raises ``EncodeError``
        for a client id the header cannot carry)."""
        known = self._around.get((api_key, version))
        if known is None:
            client_id = self.client_id
            fields = RequestHeader(
                request_api_key=api_key, request_api_version=version, correlation_id=0, client_id=client_id
            )
            header = fields.encode(request_header_version(api_key, version))
            known = self._around[(api_key, version)] = (header[:4], header[8:])
        return known

    def frame(self, api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
        """A whole request frame: size prefix, this connection's header, ``body``."""
        before, after = self.around_id(api_key, version)
        size = len(before) + 4 + len(after) + len(body)
        return b"".join((_wire.INT32.pack(size), before, _wire.INT32.pack(correlation_id), after, body))

    def request(self, message: KafkaMessage, version: int, correlation_id: int) -> bytes:
        """``message`` at ``version`` as a whole request frame."""
        api_key = message.API_KEY
        if message.MESSAGE_TYPE != "request" or api_key is None:
            raise ProtocolError(f"{message.NAME} is not a request")
        return self.frame(api_key, version, correlation_id, message.encode(version))


#: The headers of a handshake or a probe run on its own, outside a ``ConnectionConfig``.
DEFAULT_HEADERS: Final = RequestHeaders()
