"""What the ApiVersions handshake hands out: actions, its result, its errors.

All plain, frozen data, so that a driver can match on actions and the code
that builds broker capabilities can read a result without knowing the machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkacompat.errors import (
    BrokerRejectedError,
    HandshakeStateError,
    InvalidRequestError,
    KafkaCompatError,
)
from kafkacompat.negotiation.transcript import HandshakeTranscript
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "Action",
    "BrokerRejectedError",
    "Connect",
    "Done",
    "Fail",
    "HandshakeResult",
    "HandshakeStateError",
    "InvalidRequestError",
    "ReceiveReply",
    "SendProbe",
    "SendRequest",
]


@dataclass(frozen=True, slots=True)
class Connect:
    """Open connection number ``connection``; ApiVersions v``version`` goes first on it."""

    version: int
    connection: int


@dataclass(frozen=True, slots=True)
class SendRequest:
    """Write ``frame`` (size prefix, header, body): ``request`` at ``version``."""

    version: int
    correlation_id: int
    request: ApiVersionsRequest
    frame: bytes


@dataclass(frozen=True, slots=True)
class SendProbe:
    """Write ``frame``: the Metadata v0 probe, on the connection ApiVersions went quiet on."""

    correlation_id: int
    frame: bytes


@dataclass(frozen=True, slots=True)
class ReceiveReply:
    """Read one response frame; it must carry ``correlation_id``.

    ``quiet_period``: when not None, report ``quiet()`` if no frame has come
    after that many seconds (the request's own deadline still applies).
    """

    version: int
    correlation_id: int
    quiet_period: float | None = None


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    """What the broker answered (or, with ``fallback_release``, what stands in for it).

    ``reply`` (and ``response``, the reply decoded) is None only for a fallback,
    where the broker sent nothing.
    ``fallback_release`` names the release whose table stands in (configured,
    or the one ``detected_release`` names from the broker's behaviour).
    ``api_versions_version`` is the version the accepted reply was read at.
    The mappings are read-only: api key -> versions, feature name -> versions
    (supported) or min..max level (finalized).
    """

    reply: bytes | None  # the accepted answer's body (after the correlation id)
    api_versions_version: int | None
    api_ranges: Mapping[int, VersionRange]
    supported_features: Mapping[str, VersionRange]
    finalized_features: Mapping[str, VersionRange]
    finalized_features_epoch: int
    throttle_time_ms: int
    transcript: HandshakeTranscript
    fallback_release: str | None = None
    node: str | None = None
    detected_release: str | None = None
    _response: list[ApiVersionsResponse] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def response(self) -> ApiVersionsResponse | None:
        """The accepted answer, decoded on first use: a connection needs only the tables
        above, which the handshake read already; the inspector and callers may want it all."""
        if self.reply is None or self.api_versions_version is None:
            return None
        if not self._response:
            self._response.append(ApiVersionsResponse.decode(self.reply, self.api_versions_version))
        return self._response[0]

    @property
    def used_fallback(self) -> bool:
        return self.fallback_release is not None

    @property
    def flags(self) -> tuple[str, ...]:
        return self.transcript.flags


@dataclass(frozen=True, slots=True)
class Done:
    """The handshake succeeded.

    ``needs_new_connection``: the connection it used is gone (a fallback), so
    open another before sending anything, and send no ApiVersions on it.
    """

    result: HandshakeResult
    needs_new_connection: bool = False


@dataclass(frozen=True, slots=True)
class Fail:
    """The handshake failed; close the connection when ``close_connection``."""

    error: KafkaCompatError
    close_connection: bool


Action = Connect | SendRequest | SendProbe | ReceiveReply | Done | Fail
