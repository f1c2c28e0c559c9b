"""What kind of peer listens on a port: Kafka, or a web, TLS, SSH or text server, or silence.

Theory.  A Kafka client that reaches the wrong port learns little from the
handshake alone: a web server (Python's ``http.server``, for one) waits for the
end of a request line before it answers, and a Kafka request has none, so the
client waits its whole timeout, then retries.  The first-contact request here
is two valid Kafka requests written back to back, ApiVersions v0 and Metadata
v0 (the one every release since 0.8 answers; 0.9 answers it and not
ApiVersions), whose correlation ids end in the bytes ``\\r\\n``: a server that
reads text by lines sees a line end at once and answers, while a broker reads
two ordinary requests.  ``classify`` reads the first bytes that come back and
names what answered, in one sentence under 200 characters.  Sans-I/O: the
caller writes ``first_contact_request()`` and feeds what it read (or that it
read nothing) to ``classify``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafkacompat.protocol.framing import DEFAULT_HEADERS, RequestHeaders
from kafkacompat.protocol.messages import ApiVersionsRequest, MetadataRequest

__all__ = [
    "FIRST_CONTACT_CORRELATION_ID",
    "TLS_LISTENER",
    "PeerKind",
    "PeerVerdict",
    "classify",
    "first_contact_request",
]

# 0x00000D0A: its last two bytes are CR LF, the end of a text line; the Metadata v0 after it takes
# the next id.
FIRST_CONTACT_CORRELATION_ID = 0x0D0A
_QUOTE_AT_MOST = 40
TLS_LISTENER = "TLS listener: the peer answered with a TLS record; add --tls (security.protocol=SSL)"


class PeerKind(enum.Enum):
    KAFKA = "kafka"
    HTTP = "http"
    TLS = "tls"
    SSH = "ssh"
    TEXT = "text"
    OTHER = "other"  # bytes, but not a Kafka reply nor anything recognised
    CLOSED = "closed"  # closed without a byte: an 0.8 broker, a TLS listener, or anything else
    SILENT = "silent"


@dataclass(frozen=True)
class PeerVerdict:
    kind: PeerKind
    sentence: str  # one sentence for a person; empty for KAFKA and CLOSED (nothing to say yet)
    detail: str = ""  # what was read, escaped, for --debug and JSON

    @property
    def is_kafka(self) -> bool:
        return self.kind is PeerKind.KAFKA


def first_contact_request(headers: RequestHeaders = DEFAULT_HEADERS) -> bytes:
    """ApiVersions v0 then Metadata v0, correlation ids ``FIRST_CONTACT_CORRELATION_ID`` and the
    next, behind ``headers`` (a connection config's ``request_headers``: its client id)."""
    api_versions = headers.request(ApiVersionsRequest(), 0, FIRST_CONTACT_CORRELATION_ID)
    metadata = headers.request(MetadataRequest(topics=[]), 0, FIRST_CONTACT_CORRELATION_ID + 1)
    return api_versions + metadata


def _quoted(data: bytes) -> str:
    line = data.split(b"\n", 1)[0].rstrip(b"\r")[:_QUOTE_AT_MOST]
    text = "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}" for b in line)
    return text + ("..." if len(line) == _QUOTE_AT_MOST else "")


def _is_text(data: bytes) -> bool:
    head = data[:64]
    return bool(head) and all(0x20 <= b < 0x7F or b in (0x09, 0x0A, 0x0D) for b in head)


def classify(data: bytes, *, closed: bool = False, waited: float | None = None) -> PeerVerdict:
    """What answered ``first_contact_request()`` with ``data`` (then closed, if ``closed``).

    ``waited`` is how long nothing came, when ``data`` is empty and the peer
    did not close: silence.
    """
    detail = data[:64].hex()
    if len(data) >= 8:
        correlation_id = int.from_bytes(data[4:8], "big", signed=True)
        size = int.from_bytes(data[:4], "big", signed=True)
        if correlation_id in (FIRST_CONTACT_CORRELATION_ID, FIRST_CONTACT_CORRELATION_ID + 1) and size >= 4:
            return PeerVerdict(PeerKind.KAFKA, "", detail)
    if len(data) >= 2 and data[0] in (0x15, 0x16) and data[1] == 0x03:
        return PeerVerdict(PeerKind.TLS, TLS_LISTENER, detail)
    if data.startswith(b"HTTP/") or data[:16].lower().startswith((b"<!doctype", b"<html")):
        return PeerVerdict(
            PeerKind.HTTP, f"not a Kafka broker: the peer answered in HTTP ({_quoted(data)})", detail
        )
    if data.startswith(b"SSH-"):
        sentence = f"not a Kafka broker: the peer is an SSH server ({_quoted(data)})"
        return PeerVerdict(PeerKind.SSH, sentence, detail)
    if _is_text(data):
        sentence = f'not a Kafka broker: the peer answered in text ("{_quoted(data)}")'
        return PeerVerdict(PeerKind.TEXT, sentence, detail)
    if data:
        return PeerVerdict(
            PeerKind.OTHER,
            f"not a Kafka broker: the peer answered {len(data)} byte(s) that are not a Kafka reply",
            detail,
        )
    if closed:
        return PeerVerdict(PeerKind.CLOSED, "", "")
    seconds = f" in {waited:.0f} s" if waited is not None else ""
    return PeerVerdict(
        PeerKind.SILENT,
        f"no answer: the peer accepted the connection but answered nothing{seconds} to ApiVersions or "
        "Metadata v0, which every Kafka answers",
        "",
    )
