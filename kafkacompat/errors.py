"""The one error taxonomy of kafkacompat.

Every failure the library reports is a ``KafkaCompatError``.  Below it sit five
families, and callers are expected to catch a family rather than a leaf:

    KafkaCompatError
      ProtocolError        bytes that do not follow the wire format (ours or theirs)
        DecodeError          received bytes that cannot be read
          ProtocolViolationError  readable, but breaking the protocol's own invariants
        EncodeError          a message that cannot be written at the asked version
        ReplyTooLargeError   a reply announced as larger than its request's ceiling
      NegotiationError     the two sides cannot agree on how to talk
        UnsupportedVersionError  no version both sides and the policy allow
        BrokerTooOldError        no Kafka answer at all: closed on ApiVersions and on Metadata v0
        WrongProtocolError       the peer speaks TLS, HTTP, SSH, text or something else
        WrongEndpointError       a broker where a KRaft controller was asked for, or the reverse
      TransportError       the connection itself failed (refused, reset, closed)
      KafkaTimeoutError    a deadline passed; silence is never a downgrade signal
        SilentPeerError      the peer accepted the connection and answered nothing at all
      AuthenticationError  TLS verification or SASL failed
      ConfigError          a configuration value or argument that cannot work (also a ValueError)
        InvalidAddressError  a host or port (typed by the user or named by a broker) that cannot be used
        HandshakeConfigError a handshake configuration (also a NegotiationError, as before)
        EmulatorConfigError  an emulator configuration (testing kit)
      FanOutLimitError     connections a broker asked for beyond the configured limit, not opened
      PipelineStateError   a call a connection's request pipeline cannot take in its state
      BrokerStartError     a test broker (testing kit) that could not be started
        ReleaseDownloadError   its release's files could not be fetched

Leaves that belong to one family: NoBrokerReachableError, BrokersUnavailableError,
UnknownBrokerError and PeerClosedError are TransportErrors; FeatureError (and
FeatureUpdateBlockedError), HandshakeStateError and BrokerRejectedError (and
InvalidRequestError) are NegotiationErrors.  Every public exception class of the
package is defined here; the modules that raise them re-export them under their
old names.

Errors from trio, ssl and the OS are translated into these at the transport
seam.  Each error carries the node it concerns (when known) and, for anything
that happened during a handshake, the handshake transcript, so that a report
of a failure always shows what was tried.  Both are attached with
``attach_context``, by the code that knows them (the connection's driver),
never overwriting what a closer layer already said.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from kafkacompat.negotiation.features import FinalizeVerdict
    from kafkacompat.negotiation.handshake.table import Event, State

__all__ = [
    "AuthenticationError",
    "BrokerRejectedError",
    "BrokerStartError",
    "BrokerTooOldError",
    "BrokersUnavailableError",
    "ClientSoftwareWarning",
    "ClusterMismatchError",
    "ConfigError",
    "DecodeError",
    "EmulatorConfigError",
    "EncodeError",
    "FanOutLimitError",
    "FeatureError",
    "FeatureUpdateBlockedError",
    "HandshakeConfigError",
    "HandshakeStateError",
    "IdentityRefusedError",
    "InstallError",
    "InvalidAddressError",
    "InvalidRequestError",
    "KafkaCompatError",
    "KafkaTimeoutError",
    "NegotiationError",
    "NoBrokerReachableError",
    "PeerClosedError",
    "PipelineStateError",
    "ProtocolError",
    "ProtocolViolationError",
    "RebootstrapRequiredError",
    "ReleaseDownloadError",
    "ReplyTooLargeError",
    "SilentPeerError",
    "TransportError",
    "UnknownBrokerError",
    "UnsupportedVersionError",
    "UsageError",
    "VersionRemovedError",
    "WrongEndpointError",
    "WrongProtocolError",
    "attach_context",
    "describe_failure",
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
    """The peer answered with bytes of another protocol (TLS, HTTP, SSH, text, ...).

    ``kind`` names what answered (``"tls"``, ``"http"``, ``"ssh"``, ``"text"``;
    ``"other"`` when it is not recognised); ``first_bytes`` holds the first
    bytes it sent (at most 64), for a report's details.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "other",
        first_bytes: bytes = b"",
        node: str | None = None,
        transcript: Any = None,
    ) -> None:
        super().__init__(message, node=node, transcript=transcript)
        self.kind = kind
        self.first_bytes = first_bytes


class WrongEndpointError(NegotiationError):
    """A broker answered where a KRaft controller was asked for, or the reverse (MISMATCHED_ENDPOINT_TYPE)."""


class TransportError(KafkaCompatError):
    """The connection failed: refused, reset, closed, unreachable."""


class VersionRemovedError(TransportError):
    """The broker closed the connection on a request at a version Kafka 4.x removed.

    A 4.x broker does not answer such a request; it closes the socket (KIP-896,
    and Produce v0-2 even though it still advertises them, KAFKA-18659).
    ``api_key`` and ``version`` name the request that was sent.
    """

    def __init__(self, message: str, *, api_key: int, version: int, node: str | None = None) -> None:
        super().__init__(message, node=node)
        self.api_key = api_key
        self.version = version


class KafkaTimeoutError(KafkaCompatError):
    """A deadline passed before the broker answered."""


class SilentPeerError(KafkaTimeoutError):
    """The peer accepted the connection and sent not one byte back, by its deadline.

    A running Kafka broker of any release answers the first requests of a
    connection (ApiVersions, or the Metadata v0 written after it) at once; a
    peer that stays silent is no Kafka listener, or a broker that is starting
    up or stalled.  ``waited`` is how long it was given (seconds), when known.
    """

    def __init__(
        self, message: str, *, waited: float | None = None, node: str | None = None, transcript: Any = None
    ) -> None:
        super().__init__(message, node=node, transcript=transcript)
        self.waited = waited


class AuthenticationError(KafkaCompatError):
    """TLS verification or SASL authentication failed."""


class ProtocolViolationError(DecodeError):
    """A reply that reads, but says what Kafka never says (a range whose minimum is above
    its maximum, an epoch below -1, a negative count): refused rather than acted upon."""


class ReplyTooLargeError(ProtocolError):
    """A size prefix above the ceiling for the request it answers, refused before allocating.

    ``size`` is what the prefix announced, ``limit`` the ceiling and ``what`` the
    request answered.  Ceilings are set in ``ConnectionConfig.reply_limits``.
    """

    def __init__(self, message: str, *, size: int, limit: int, what: str | None = None,
                 node: str | None = None) -> None:
        self.size, self.limit, self.what = size, limit, what
        super().__init__(message, node=node)


class ConfigError(KafkaCompatError, ValueError):
    """A configuration value that cannot work (also importable from ``kafkacompat.connection.config``)."""


class InvalidAddressError(ConfigError):
    """A host or port that cannot be connected to, refused before any use.

    A configuration error wherever it comes from: the user's, or the broker's
    advertised listeners when a broker named it.

    ``source`` says who gave it: the user, or the broker (and reply) that named it;
    ``node`` is that broker's address when a broker named it.
    """

    def __init__(self, message: str, *, source: str | None = None, node: str | None = None) -> None:
        self.source = source
        super().__init__(message, node=node)


class FanOutLimitError(KafkaCompatError):
    """A connection a broker's answer asked for, not opened: the fan-out limit was reached.

    ``limit`` is the configured number of connections (``ConnectionConfig.max_fanout``).
    """

    def __init__(self, message: str, *, limit: int, node: str | None = None) -> None:
        self.limit = limit
        super().__init__(message, node=node)


class HandshakeConfigError(ConfigError, NegotiationError):
    """A handshake configuration that cannot work; raised when it is built.

    A ``ConfigError`` (and so a ``ValueError``); still a ``NegotiationError``, as
    it was before the configuration family existed, so older handlers keep working.
    """


class EmulatorConfigError(ConfigError):
    """An emulator configuration that cannot work (unknown release, bad range, non-loopback bind)."""


class UsageError(ConfigError):
    """A command line that cannot be read: an unknown command or option, a missing or malformed value.

    The command line prints it as one line and exits with status 2.  ``prog`` is
    the command it concerns (``kafkacompat inspect``) when the parser knows it.
    """

    def __init__(self, message: str, *, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class ClientSoftwareWarning(UserWarning):
    """A client software name or version that Kafka brokers reject with INVALID_REQUEST."""


class PipelineStateError(KafkaCompatError):
    """A call the pipeline cannot take in its state (full, failed, or a ticket it does not know)."""


class BrokerStartError(KafkaCompatError):
    """A test broker could not be started, or did not answer in time."""


class ReleaseDownloadError(BrokerStartError):
    """A broker release (testing kit) whose files could not be fetched: the message names the artifact."""


class InstallError(KafkaCompatError):
    """A client release could not be installed into the cache (``kafkacompat.profiles.installs``)."""


# -- transport leaves -----------------------------------------------------------------------


def describe_failure(exc: KafkaCompatError, label: str) -> str:
    """``"TypeName: message"`` for one address's failure, without repeating the address."""
    text = exc.message
    for suffix in (f" (node {label})", f" to {label}"):
        text = text.replace(suffix, "")
    return f"{type(exc).__name__}: {text}"


class NoBrokerReachableError(TransportError):
    """No address could be reached; ``reasons`` maps each address tried to why it failed."""

    def __init__(self, reasons: Mapping[str, KafkaCompatError], *, what: str = "bootstrap address",
                 rounds: int = 1) -> None:
        self.reasons: Mapping[str, KafkaCompatError] = MappingProxyType(dict(reasons))
        self.rounds = rounds
        listed = "; ".join(f"{label}: {describe_failure(exc, label)}" for label, exc in self.reasons.items())
        tries = f" (tried {rounds} time(s))" if rounds > 1 else ""
        super().__init__(f"no {what} could be reached{tries}: {listed or 'none given'}")


class BrokersUnavailableError(TransportError):
    """Some brokers the metadata names could not be connected to; ``reasons`` by node id."""

    def __init__(self, reasons: Mapping[int, KafkaCompatError], labels: Mapping[int, str]) -> None:
        self.reasons: Mapping[int, KafkaCompatError] = MappingProxyType(dict(reasons))
        listed = "; ".join(
            f"node {node_id} at {labels.get(node_id, '?')}: {describe_failure(exc, labels.get(node_id, ''))}"
            for node_id, exc in self.reasons.items()
        )
        super().__init__(f"{len(self.reasons)} broker(s) could not be reached: {listed}")


class UnknownBrokerError(TransportError, LookupError):
    """A node id the cluster metadata does not name."""


class PeerClosedError(TransportError):
    """The peer closed the connection (end of stream)."""


# -- negotiation leaves ---------------------------------------------------------------------


class FeatureError(NegotiationError):
    """A feature name, level or version string that cannot be used."""


class FeatureUpdateBlockedError(FeatureError):
    """The levels cannot be finalized here; ``verdict`` names the blocking brokers and dependencies."""

    def __init__(self, verdict: FinalizeVerdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict

    @property
    def blocking_brokers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.node for b in self.verdict.blocking_brokers))


class HandshakeStateError(NegotiationError):
    """The driver reported an event the handshake does not expect now."""

    def __init__(
        self,
        message: str,
        *,
        state: State,
        event: Event,
        node: str | None = None,
        transcript: Any = None,
    ) -> None:
        super().__init__(message, node=node, transcript=transcript)
        self.state = state
        self.event = event


class BrokerRejectedError(NegotiationError):
    """The broker answered ApiVersions with an error code; ``error_name`` is Kafka's."""

    def __init__(
        self, message: str, *, error_code: int, error_name: str, node: str | None = None,
        transcript: Any = None,
    ) -> None:
        super().__init__(message, node=node, transcript=transcript)
        self.error_code = error_code
        self.error_name = error_name  # the raiser reads it from the codec's table: errors.py imports nothing


class InvalidRequestError(BrokerRejectedError):
    """INVALID_REQUEST: the broker could not accept the request as written."""


def _expected(cluster_id: str | None, node_id: int | None) -> str:
    if cluster_id is None:
        return "no identity"
    return f"node {node_id} of cluster {cluster_id}" if node_id is not None else f"cluster {cluster_id}"


class RebootstrapRequiredError(BrokerRejectedError):
    """REBOOTSTRAP_REQUIRED (129): the broker at that address is not the one the client meant
    to reach (KIP-1242); ``expected_cluster_id``/``expected_node_id`` name the one meant.
    The remedy is to resolve the bootstrap addresses and read Metadata again."""

    def __init__(
        self,
        message: str,
        *,
        error_code: int = 129,
        error_name: str = "REBOOTSTRAP_REQUIRED",
        expected_cluster_id: str | None = None,
        expected_node_id: int | None = None,
        node: str | None = None,
        transcript: Any = None,
    ) -> None:
        super().__init__(
            message, error_code=error_code, error_name=error_name, node=node, transcript=transcript
        )
        self.expected_cluster_id = expected_cluster_id
        self.expected_node_id = expected_node_id

    @property
    def expected(self) -> str:
        return _expected(self.expected_cluster_id, self.expected_node_id)


class IdentityRefusedError(InvalidRequestError):
    """INVALID_REQUEST to ApiVersions v5 that carried an identity: the broker refused the
    ClusterId/NodeId pair itself (KIP-1242 requires both or neither)."""

    def __init__(
        self,
        message: str,
        *,
        error_code: int = 42,
        error_name: str = "INVALID_REQUEST",
        expected_cluster_id: str | None = None,
        expected_node_id: int | None = None,
        node: str | None = None,
        transcript: Any = None,
    ) -> None:
        super().__init__(
            message, error_code=error_code, error_name=error_name, node=node, transcript=transcript
        )
        self.expected_cluster_id = expected_cluster_id
        self.expected_node_id = expected_node_id


class ClusterMismatchError(NegotiationError):
    """The cluster (or node) found at an address is not the one expected: the client-side
    misrouting check, for brokers that cannot check it themselves (before Kafka 4.4)."""

    def __init__(
        self,
        message: str,
        *,
        expected_cluster_id: str | None,
        found_cluster_id: str | None,
        expected_node_id: int | None = None,
        found_node_id: int | None = None,
        node: str | None = None,
        transcript: Any = None,
    ) -> None:
        super().__init__(message, node=node, transcript=transcript)
        self.expected_cluster_id = expected_cluster_id
        self.found_cluster_id = found_cluster_id
        self.expected_node_id = expected_node_id
        self.found_node_id = found_node_id

    @property
    def expected(self) -> str:
        return _expected(self.expected_cluster_id, self.expected_node_id)


# -- context --------------------------------------------------------------------------------

E = TypeVar("E", bound=KafkaCompatError)


def attach_context(error: E, *, node: str | None = None, transcript: Any = None) -> E:
    """Give ``error`` the node and transcript it concerns, unless it already names them.

    The one way a driver (or the sans-I/O layer that knows the node) attaches
    context: the layer closest to the failure has the better answer, so what an
    error already carries is never overwritten.  Returns ``error``, to be raised.
    """
    if error.node is None and node is not None:
        error.node = node
    if error.transcript is None and transcript is not None:
        error.transcript = transcript
    return error
