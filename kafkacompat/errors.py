"""The one error taxonomy of kafkacompat.

Every failure the library reports is a ``KafkaCompatError``.  Below it sit five
families, and callers are expected to catch a family rather than a leaf:

    KafkaCompatError
      ProtocolError        bytes that do not follow the wire format (ours or theirs)
        DecodeError          received bytes that cannot be read
        EncodeError          a message that cannot be written at the asked version
      NegotiationError     the two sides cannot agree on how to talk
        UnsupportedVersionError  no version both sides and the policy allow
        BrokerTooOldError        no Kafka answer at all: closed on ApiVersions and on Metadata v0
        WrongProtocolError       the peer speaks TLS, HTTP or something else
      TransportError       the connection itself failed (refused, reset, closed)
      KafkaTimeoutError    a deadline passed; silence is never a downgrade signal
      AuthenticationError  TLS verification or SASL failed

Errors from trio, ssl and the OS are translated into these at the transport
seam.  Each error carries the node it concerns (when known) and, for anything
that happened during a handshake, the handshake transcript, so that a report
of a failure always shows what was tried.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "BrokerTooOldError",
    "DecodeError",
    "EncodeError",
    "KafkaCompatError",
    "KafkaTimeoutError",
    "NegotiationError",
    "ProtocolError",
    "TransportError",
    "UnsupportedVersionError",
    "WrongProtocolError",
]


class KafkaCompatError(Exception):
    """Base of every error raised by kafkacompat.

    ``node`` names the broker concerned (``"host:port"`` or a node id) when it
    is known; ``transcript`` is the handshake transcript when the failure
    happened during or after a negotiation.
    """

    def __init__(self, message: str, *, node: str | None = None, transcript: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        self.transcript = transcript

    def __str__(self) -> str:
        if self.node is not None and self.node not in self.message:
            return f"{self.message} (node {self.node})"
        return self.message


class ProtocolError(KafkaCompatError):
    """Bytes that do not follow the Kafka wire format."""


class DecodeError(ProtocolError):
    """Bytes that cannot be read as the expected message at the expected version.

    ``what`` is the message or record being read, ``version`` its version and
    ``offset`` the byte offset (within the decoded buffer) of the item that
    could not be read.
    """

    def __init__(
        self,
        message: str,
        *,
        what: str | None = None,
        version: int | None = None,
        offset: int | None = None,
        node: str | None = None,
        transcript: Any = None,
    ) -> None:
        self.reason = message
        self.what = what
        self.version = version
        self.offset = offset
        parts = []
        if what is not None:
            parts.append(what if version is None else f"{what} v{version}")
        parts.append(message)
        text = ": ".join(parts)
        if offset is not None:
            text += f" (at byte offset {offset})"
        super().__init__(text, node=node, transcript=transcript)


class EncodeError(ProtocolError):
    """A message that cannot be written at the requested version."""


class NegotiationError(KafkaCompatError):
    """The client and the broker cannot agree on how to talk."""


class UnsupportedVersionError(NegotiationError):
    """No version is allowed by the client, the broker and the user's policy."""


class BrokerTooOldError(NegotiationError):
    """The peer closed on ApiVersions at every version and on Metadata v0, which every Kafka answers.

    Brokers older than 0.10 are recognised by what they do instead (0.9 skips
    ApiVersions, 0.8.x closes on it but answers Metadata v0); what is left is a
    TLS listener or not Kafka, unless ``fallback_release`` says otherwise.
    """


class WrongProtocolError(NegotiationError):
    """The peer answered with bytes of another protocol (TLS, HTTP, ...)."""


class TransportError(KafkaCompatError):
    """The connection failed: refused, reset, closed, unreachable."""


class KafkaTimeoutError(KafkaCompatError):
    """A deadline passed before the broker answered."""


class AuthenticationError(KafkaCompatError):
    """TLS verification or SASL authentication failed."""
