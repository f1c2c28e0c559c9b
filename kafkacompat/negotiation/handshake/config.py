"""What an ApiVersions handshake is allowed to do, checked once, when configured.

Everything that can be wrong with a configuration is found here, before any
byte is sent: a version the codec cannot write, a fallback release the
reference table does not know, a connection budget below one.  Client
software fields that Kafka's broker would refuse (KIP-511 pattern) are not an
error: the user may be talking to a broker that does not check them, so they
give a ``ClientSoftwareWarning`` and a note in every transcript instead.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kafkacompat._version import __version__
from kafkacompat.errors import ClientSoftwareWarning, EncodeError, HandshakeConfigError, NegotiationError
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from kafkacompat.protocol.versions import VersionRange

if TYPE_CHECKING:  # an identity is the cluster layer's (KIP-1242): a plain connection never loads it
    from kafkacompat.negotiation.handshake.identity import BrokerIdentity

__all__ = [
    "CODEC_MAX_VERSION",
    "DEFAULT_QUIET_PERIOD",
    "FIRST_SOFTWARE_FIELDS_VERSION",
    "IDENTITY_VERSION",
    "SOFTWARE_FIELD_PATTERN",
    "HandshakeConfig",
    "check_correlation_id",
    "release_ranges",
    "software_field_problems",
]

# Both halves must be known: a version we can send but not read back is useless.
CODEC_MAX_VERSION: Final[int] = min(
    ApiVersionsRequest.VALID_VERSIONS.highest, ApiVersionsResponse.VALID_VERSIONS.highest
)

# KIP-511 added ClientSoftwareName/Version in v3; below it they are not on the wire.
FIRST_SOFTWARE_FIELDS_VERSION: Final[int] = 3

#: KIP-1242: the first ApiVersions version that carries ClusterId and NodeId.
IDENTITY_VERSION: Final = 5

# The pattern Kafka brokers validate both software fields against (KIP-511).
SOFTWARE_FIELD_PATTERN: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

# Seconds of silence on an ApiVersions request before the Metadata v0 probe is written
# (``legacy_probe``).  Brokers answer ApiVersions in milliseconds on a LAN; a slower one
# only costs a probe whose reply is dropped, and a 0.9 broker is known a moment later.
DEFAULT_QUIET_PERIOD: Final = 0.25

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def release_ranges(release: str, kind: str = "zk-broker") -> Mapping[int, VersionRange]:
    """The API ranges Kafka ``release`` answers as a ``kind`` broker, as a config error if unknown."""
    from kafkacompat.negotiation.release_guess import known_api_ranges  # the release table, on first use

    try:
        return known_api_ranges(release, kind)
    except NegotiationError as exc:
        raise HandshakeConfigError(str(exc)) from None


def software_field_problems(name: str, version: str) -> tuple[str, ...]:
    """Why a broker would refuse these KIP-511 fields; empty when it would not."""
    return tuple(
        f"client software {label} {value!r} does not match Kafka's pattern "
        f"{SOFTWARE_FIELD_PATTERN.pattern}: brokers that check it answer INVALID_REQUEST"
        for label, value in (("name", name), ("version", version))
        if SOFTWARE_FIELD_PATTERN.fullmatch(value) is None
    )


def _require_int(name: str, value: object) -> int:
    # bool is an int to Python but never a meaningful version or count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise HandshakeConfigError(f"{name} must be an int, not {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class HandshakeConfig:
    """How one ApiVersions handshake behaves.

    ``max_version``: the first version tried; defaults to the highest the
    codec can write and read, and may not exceed it.
    ``client_software_name`` / ``client_software_version``: sent at v3+.  (The
    request header's client id is ``ConnectionConfig.client_id``: it is every
    request's, not the handshake's alone.)
    ``max_connections``: connections the handshake may open; the default 3
    allows, after a close at v4, one reconnect at v3 and a last one at v0
    (2: straight to v0; 1: no reconnect).
    ``fallback_release`` / ``fallback_kind``: the release whose API table
    stands in when the broker does not answer ApiVersions (pre-0.10): it
    closes even at v0 (0.8.x), or it skips the request (0.9, whose own table
    stands in when no fallback is configured).
    ``expected_cluster_id``: the cluster the user means to reach.  A connection
    to a known node sends it at v5 (KIP-1242) when Metadata named no cluster id,
    and a Metadata cluster id that differs from it is a ``ClusterMismatchError``
    (``identity``).  A bootstrap connection never sends it: the broker
    would refuse a ClusterId without a NodeId.
    ``quiet_period``: seconds without a reply to ApiVersions after which a
    Metadata v0 probe is written on the same connection, once per connection,
    to tell a pre-0.10 broker (the probe is answered first) from a slow one
    (ApiVersions is answered first); None never probes, so a 0.9 broker times out.
    A broker slower than this gets the probe too, and its all-topics answer is
    read and dropped: raise it above a distant broker's round trip.
    """

    max_version: int = CODEC_MAX_VERSION
    client_software_name: str = "kafkacompat"
    client_software_version: str = __version__
    max_connections: int = 3
    fallback_release: str | None = None
    fallback_kind: str = "zk-broker"
    quiet_period: float | None = DEFAULT_QUIET_PERIOD
    expected_cluster_id: str | None = None
    fallback_ranges: Mapping[int, VersionRange] | None = field(
        init=False, repr=False, compare=False, default=None
    )
    # Problems of the software fields, when the versions tried will send them;
    # worked out once here, since every handshake copies them into its notes.
    software_problems: tuple[str, ...] = field(init=False, repr=False, compare=False, default=())
    # The request body per version, encoded once (see ``request_body``).
    _bodies: dict[int, bytes] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        version = _require_int("max_version", self.max_version)
        if version not in VersionRange(0, CODEC_MAX_VERSION):
            raise HandshakeConfigError(
                f"max_version {version} is outside the ApiVersions versions this client can "
                f"write and read (0-{CODEC_MAX_VERSION})"
            )
        if _require_int("max_connections", self.max_connections) < 1:
            raise HandshakeConfigError(f"max_connections must be at least 1, not {self.max_connections}")
        for label in ("client_software_name", "client_software_version"):
            if not isinstance(getattr(self, label), str):
                raise HandshakeConfigError(f"{label} must be a str")
        quiet = self.quiet_period
        if quiet is not None and (
            isinstance(quiet, bool) or not isinstance(quiet, int | float) or not 0 < quiet < math.inf
        ):
            raise HandshakeConfigError(f"quiet_period must be positive seconds or None, not {quiet!r}")
        expected = self.expected_cluster_id
        if expected is not None and (not isinstance(expected, str) or not expected):
            raise HandshakeConfigError(f"expected_cluster_id must be a non-empty str or None: {expected!r}")
        try:  # a field that cannot be written should fail here, not mid-handshake
            self.request_body(self.max_version)
        except EncodeError as exc:
            raise HandshakeConfigError(f"the ApiVersions request cannot be written: {exc}") from None
        if self.fallback_release is not None:
            ranges = release_ranges(self.fallback_release, self.fallback_kind)
            object.__setattr__(self, "fallback_ranges", ranges)
        if self.max_version >= FIRST_SOFTWARE_FIELDS_VERSION:
            problems = software_field_problems(self.client_software_name, self.client_software_version)
            object.__setattr__(self, "software_problems", problems)
        # stacklevel 3 points the warning at the caller of HandshakeConfig(...).
        for problem in self.software_problems:
            warnings.warn(problem, ClientSoftwareWarning, stacklevel=3)

    def request(self, version: int, identity: BrokerIdentity | None = None) -> ApiVersionsRequest:
        """The ApiVersions request at ``version``: the software fields only where they exist,
        the identity (both halves, never one) only from v5 on."""
        if version < FIRST_SOFTWARE_FIELDS_VERSION:
            return ApiVersionsRequest()
        if identity is not None and version >= IDENTITY_VERSION:
            return ApiVersionsRequest(
                client_software_name=self.client_software_name,
                client_software_version=self.client_software_version,
                cluster_id=identity.cluster_id,
                node_id=identity.node_id,
            )
        return ApiVersionsRequest(
            client_software_name=self.client_software_name,
            client_software_version=self.client_software_version,
        )

    def request_body(self, version: int, identity: BrokerIdentity | None = None) -> bytes:
        """``request(version, identity)`` encoded: once per version (an identity is per
        connection, so a body carrying one is not kept); every handshake with this config
        sends the same body, behind its connection's header."""
        if identity is not None and version >= IDENTITY_VERSION:
            return self.request(version, identity).encode(version)
        body = self._bodies.get(version)
        if body is None:
            body = self._bodies[version] = self.request(version).encode(version)
        return body


def check_correlation_id(value: int) -> int:
    """A correlation id must fit Kafka's int32."""
    if not _INT32_MIN <= _require_int("first_correlation_id", value) <= _INT32_MAX:
        raise HandshakeConfigError(f"correlation id {value} does not fit in an int32")
    return value
