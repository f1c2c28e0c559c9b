"""How a connection is set up: timeouts, limits, TLS, SASL, retries, version policy.

All frozen data.  The TLS and SASL settings, and the ``Secret`` that holds a
password, live in ``security``: a connection without them never loads their
classes (each frozen dataclass costs a process some 20 KiB to define).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from kafkacompat.errors import ConfigError, EncodeError
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.protocol.framing import DEFAULT_CLIENT_ID, DEFAULT_MAX_FRAME_SIZE, RequestHeaders
from kafkacompat.protocol.messages.api_key_numbers import API_VERSIONS
from kafkacompat.protocol.reply_limits import ReplyLimits

if TYPE_CHECKING:
    from kafkacompat.connection.security import SaslConfig, TlsConfig

    # Annotations only: a connection that picks no version (a bare handshake) does not load the picker.
    from kafkacompat.negotiation.version_policy import VersionPolicy

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_MAX_IN_FLIGHT",
    "ConnectionConfig",
    "MisroutingCheck",
    "ReplyLimits",
    "RetryPolicy",
]

@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter, bounded; used for transport and retriable errors.

    ``retry_silent_peers``: a peer that accepted the connection and answered nothing within
    ``first_contact_timeout`` (``SilentPeerError``) is tried again.  Real Kafka binds its
    listener before it serves requests (while it joins its cluster and catches up), so a
    broker starting up is silent exactly as a wrong port is; an application waits for it,
    as Kafka's own clients do.  A diagnostic tool that wants the answer now sets it False
    (the CLI does).
    """

    attempts: int = 5
    initial_backoff: float = 0.05
    max_backoff: float = 1.0
    jitter: float = 0.05
    retry_silent_peers: bool = True

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigError("retry attempts must be at least 1")
        if self.initial_backoff < 0 or self.max_backoff < self.initial_backoff:
            raise ConfigError("backoff bounds must satisfy 0 <= initial <= max")


#: When the cluster layer checks, itself, that a broker is the one it meant (KIP-1242 done client
#: side, for brokers that cannot check: before Kafka 4.4, look-alikes, controllers).
MisroutingCheck = Literal["metadata", "every-connection", "off"]

#: Requests sent and not answered, per connection: the one default, the pipeline's too.
DEFAULT_MAX_IN_FLIGHT = 32


@dataclass(frozen=True, slots=True)
class ConnectionConfig:
    """Everything about how connections are made; one object shared by every driver.

    Bounds against brokers nobody vouches for (see docs/hostile.md):
    ``max_frame_size`` caps any frame and ``reply_limits`` caps each reply by
    the request it answers, both checked from the size prefix before
    allocating; ``max_fanout`` caps how many connections one operation opens
    because a broker's answer named them (the rest are reported as
    ``FanOutLimitError``), ``fanout_concurrency`` how many of those are being
    opened at once.

    ``client_id`` is the request header's client id on every request of a
    connection, the handshake's, the pre-0.10 probe's and SASL's included: this
    is its one home.  ``request_headers`` (made from it, not set) writes every
    header of a connection made with this config.

    ``misrouting_check`` is the cluster layer's own check that the broker at an
    address is the one it meant (the cluster id and the node Metadata names at
    the address dialled; see ``cluster.misrouting``): ``"metadata"`` (the
    default) wherever it reads Metadata anyway, at no extra round trip;
    ``"every-connection"`` also on each new connection to a known node whose
    broker did not confirm its identity itself (ApiVersions v5, Kafka 4.4), at
    the cost of one Metadata round trip there; ``"off"`` never.
    """

    connect_timeout: float = 10.0
    request_timeout: float = 30.0
    #: The deadline of a cluster call that names no ``request_timeout`` of its own: waiting
    #: for a node, connecting, retrying and the requests together (Kafka's default.api.timeout.ms).
    call_timeout: float = 60.0
    #: The seconds a peer that accepted a connection may say nothing at all to its first
    #: requests (ApiVersions, and the Metadata v0 written after it for brokers before 0.10)
    #: before it is named silent (``SilentPeerError``; see ``RetryPolicy``): a Kafka broker that is up
    #: answers at once, and a wrong port should not cost a whole ``request_timeout``.  Raise it
    #: to wait for a broker that may be starting up or stalled; None: ``request_timeout`` alone.
    first_contact_timeout: float | None = 5.0
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    client_id: str | None = DEFAULT_CLIENT_ID
    handshake: HandshakeConfig = field(default_factory=HandshakeConfig)
    policy: VersionPolicy | None = None
    tls: TlsConfig | None = None
    sasl: SaslConfig | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    reply_limits: ReplyLimits = field(default_factory=ReplyLimits)
    max_fanout: int = 256
    fanout_concurrency: int = 16
    misrouting_check: MisroutingCheck = "metadata"
    request_headers: RequestHeaders = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.misrouting_check not in get_args(MisroutingCheck):
            choices = ", ".join(repr(choice) for choice in get_args(MisroutingCheck))
            raise ConfigError(f"misrouting_check must be one of {choices}, not {self.misrouting_check!r}")
        if isinstance(self.max_fanout, bool) or not isinstance(self.max_fanout, int) or self.max_fanout < 1:
            raise ConfigError(f"max_fanout must be an int of at least 1, not {self.max_fanout!r}")
        if (
            isinstance(self.fanout_concurrency, bool)
            or not isinstance(self.fanout_concurrency, int)
            or self.fanout_concurrency < 1
        ):
            raise ConfigError(
                f"fanout_concurrency must be an int of at least 1, not {self.fanout_concurrency!r}"
            )
        if not isinstance(self.reply_limits, ReplyLimits):
            raise ConfigError(f"reply_limits must be a ReplyLimits, not {type(self.reply_limits).__name__}")
        if self.max_in_flight < 1:
            raise ConfigError("max_in_flight must be at least 1")
        if not 0 < self.max_frame_size <= 0x7FFFFFFF:
            raise ConfigError("max_frame_size must be between 1 and 2**31-1")
        if self.connect_timeout <= 0 or self.request_timeout <= 0 or self.call_timeout <= 0:
            raise ConfigError("timeouts must be positive")
        first_contact = self.first_contact_timeout
        if first_contact is not None and (
            isinstance(first_contact, bool)
            or not isinstance(first_contact, int | float)
            or not 0 < first_contact < math.inf
        ):
            raise ConfigError(
                f"first_contact_timeout must be positive seconds or None, not {first_contact!r}"
            )
        if self.client_id is not None and not isinstance(self.client_id, str):
            raise ConfigError(f"client_id must be a str or None, not {type(self.client_id).__name__}")
        headers = RequestHeaders(self.client_id)
        try:  # a client id the header cannot carry fails here, not on the first connect
            headers.around_id(API_VERSIONS, self.handshake.max_version)
        except EncodeError as exc:
            raise ConfigError(f"client_id cannot be written in a request header: {exc}") from None
        object.__setattr__(self, "request_headers", headers)


# Built once: building a config checks and encodes the ApiVersions request and its
# header, which a connection opened with the defaults should not pay for every time.
DEFAULT_CONFIG = ConnectionConfig()
