"""What answered a connection's first contact, when it is not Kafka: TLS, HTTP, SSH, text.

Theory.  A connection's first request makes a server of another protocol
answer at once (``connection.first_contact``: a correlation id that ends a
line).  This module names what came back where a Kafka reply was expected
(``name_peer``), in one sentence under 200 characters that quotes the peer's
first line.  A TLS listener that drops plaintext without a word (Python's
``ssl``) is found by the handshake's last check on a peer that closed on every
Kafka request: ``TLS_CLIENT_HELLO`` written on a fresh connection, which any
TLS server answers with a TLS record (a ServerHello, a HelloRetryRequest or an
alert).  Silence is the handshake's to name, when the deadline passes
(``silence_sentence``).  Pure functions: the connection reads and writes.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from kafkacompat.protocol.framing import FOREIGN_BYTES_KEPT, foreign_kind

__all__ = ["TLS_CLIENT_HELLO", "PeerName", "name_peer", "silence_sentence"]

_QUOTE_AT_MOST: Final = 40  # characters of the peer's first line quoted in a sentence


class PeerName(NamedTuple):
    """What answered: ``kind`` (``"tls"``, ``"http"``, ``"ssh"``, ``"text"``) and one sentence."""

    kind: str
    sentence: str
    first_bytes: bytes


def name_peer(data: bytes | bytearray | memoryview) -> PeerName | None:
    """The peer that sent ``data`` where a Kafka reply was expected; None when not recognised.

    Kafka's own bytes are never text: a reply starts with its size, whose first
    byte is 0 for anything under 16 MiB.
    """
    head = bytes(data[:FOREIGN_BYTES_KEPT])
    kind = foreign_kind(head)
    if kind == "tls":
        sentence = (
            "TLS listener: the peer answered with a TLS record; connect with TLS "
            "(security.protocol SSL or SASL_SSL)"
        )
    elif kind == "http":
        sentence = f"not a Kafka broker: the peer answered in HTTP ({_quoted(head)})"
    elif kind == "ssh":
        sentence = f"not a Kafka broker: the peer is an SSH server ({_quoted(head)})"
    elif _is_text(head):
        kind, sentence = "text", f'not a Kafka broker: the peer answered in text ("{_quoted(head)}")'
    else:
        return None
    return PeerName(kind, sentence, head)


def silence_sentence(waited: float | None, asked: str, every_release: bool) -> str:
    """The peer accepted the connection and said nothing to ``asked`` for ``waited`` seconds.

    ``every_release``: what was asked includes Metadata v0, which every Kafka
    release answers (0.9 does not answer ApiVersions).
    """
    during = f" in {format(round(waited, 2), 'g')} s" if waited is not None else ""
    which = "a Kafka broker" if every_release else "a Kafka broker 0.10 or later"
    said = f"the peer accepted the connection but answered nothing{during} ({asked})"
    return f"{said}; {which} that is up answers at once"


def _quoted(data: bytes) -> str:
    line = data.split(b"\n", 1)[0].rstrip(b"\r")[:_QUOTE_AT_MOST]
    text = "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}" for b in line)
    return text + ("..." if len(line) == _QUOTE_AT_MOST else "")


def _is_text(head: bytes) -> bool:
    return bool(head) and all(0x20 <= b < 0x7F or b in (0x09, 0x0A, 0x0D) for b in head)


# -- the TLS question ------------------------------------------------------------------------


def _u16s(values: tuple[int, ...]) -> bytes:
    """A TLS vector of 16-bit values: its length in bytes (2 bytes), then the values."""
    return struct.pack(f">H{len(values)}H", 2 * len(values), *values)


def _extension(kind: int, body: bytes) -> bytes:
    return struct.pack(">HH", kind, len(body)) + body


def _client_hello() -> bytes:
    """One TLS record holding a ClientHello that any TLS 1.2 or 1.3 server answers.

    It offers TLS 1.3 and 1.2 (supported_versions), the usual AEAD suites,
    the common groups and signature schemes, and an empty key_share: a 1.3
    server answers with a HelloRetryRequest, a 1.2 server with its
    ServerHello, one that likes nothing offered with an alert; each is a TLS
    record.  Nothing secret is in it (the random is zeros): no session follows.
    """
    suites = (0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8, 0x009C, 0x009D)
    extensions = b"".join((
        _extension(0x000A, _u16s((0x001D, 0x0017, 0x0018))),  # supported_groups: x25519, P-256, P-384
        _extension(0x000B, b"\x01\x00"),  # ec_point_formats: uncompressed
        _extension(0x000D, _u16s((0x0403, 0x0503, 0x0804, 0x0805, 0x0401, 0x0501))),  # signature schemes
        _extension(0x002B, b"\x04\x03\x04\x03\x03"),  # supported_versions: TLS 1.3, TLS 1.2
        _extension(0x0033, b"\x00\x00"),  # key_share: none (the server picks a group and asks)
    ))
    hello = b"".join((
        b"\x03\x03",  # legacy_version: TLS 1.2
        bytes(32),  # random
        b"\x00",  # no session id
        _u16s(suites),
        b"\x01\x00",  # compression: none
        struct.pack(">H", len(extensions)),
        extensions,
    ))
    handshake = b"\x01" + len(hello).to_bytes(3, "big") + hello  # ClientHello
    return b"\x16\x03\x01" + struct.pack(">H", len(handshake)) + handshake  # a handshake record


TLS_CLIENT_HELLO: Final = _client_hello()
