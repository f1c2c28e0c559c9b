"""Expected failures as one sentence: what kind of failure, what happened, and what to try.

The transport's errors say precisely what happened; a person at a terminal
also wants to know which of the usual suspects it is (unreachable, not Kafka,
TLS, authentication, too old) and, where the evidence points somewhere, what
to try.  ``CommandFailed`` carries that sentence; the transport's error stays
attached as its cause (shown with ``--debug``).
"""

from __future__ import annotations

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import (
    AuthenticationError,
    BrokersUnavailableError,
    BrokerTooOldError,
    ClusterMismatchError,
    ConfigError,
    KafkaCompatError,
    KafkaTimeoutError,
    NoBrokerReachableError,
    PeerClosedError,
    RebootstrapRequiredError,
    TransportError,
    UnsupportedVersionError,
    WrongEndpointError,
    WrongProtocolError,
)

__all__ = ["CommandFailed", "explain_failure"]

_TLS_HINT = "if this listener uses TLS, add --tls (security.protocol=SSL)"
_SASL_HINT = (
    "it may require SASL: give --sasl-mechanism, --sasl-username and --sasl-password-env "
    "(or sasl.* in --command-config)"
)
_ENDPOINT_HINT = "use --bootstrap-server for brokers and --bootstrap-controller for KRaft controllers"
_OLD_HINT = "if it is Kafka all the same, give its release (--fallback-release 0.8.2)"
_PLAINTEXT_HINT = "if this listener is plaintext, drop --tls (security.protocol=PLAINTEXT)"
_ADVERTISED_HINT = (
    "the bootstrap address answered, but this is the address the cluster advertises for the broker; "
    "check its advertised.listeners"
)


class CommandFailed(KafkaCompatError):
    """An expected failure of a command, in one sentence; the transport's error is the cause."""


def _reasons(exc: KafkaCompatError) -> list[KafkaCompatError]:
    if isinstance(exc, NoBrokerReachableError | BrokersUnavailableError):
        return list(exc.reasons.values())
    return [exc]


def _with_hint(text: str, hint: str | None) -> str:
    return f"{text}; {hint}" if hint else text


def _category(exc: KafkaCompatError, config: ConnectionConfig, bootstrap: str) -> tuple[str, str | None]:
    tls, sasl = config.tls is not None, config.sasl is not None
    reasons = _reasons(exc)
    if isinstance(exc, NoBrokerReachableError | BrokersUnavailableError):
        if reasons and all(isinstance(r, KafkaTimeoutError) for r in reasons):
            return "no answer", None if tls else _TLS_HINT
        if any(isinstance(r, PeerClosedError) for r in reasons):
            return "connection closed", None if sasl else _SASL_HINT
        return "unreachable", None
    if isinstance(exc, WrongProtocolError):
        speaks_tls = "TLS" in exc.message
        return "not a Kafka broker", _TLS_HINT if speaks_tls and not tls else None
    if isinstance(exc, BrokerTooOldError):
        return "too old, or not Kafka", _OLD_HINT if tls else f"{_TLS_HINT}, or {_OLD_HINT}"
    if isinstance(exc, AuthenticationError):
        if "TLS" not in exc.message:
            return "authentication failed", None
        node_known = exc.node is None or exc.node in bootstrap
        if not node_known:
            return "TLS failed", _ADVERTISED_HINT
        return "TLS failed", _PLAINTEXT_HINT if "EOF" in exc.message else None
    if isinstance(exc, WrongEndpointError):
        return "wrong endpoint", _ENDPOINT_HINT
    if isinstance(exc, UnsupportedVersionError):
        return "no usable version", None
    if isinstance(exc, ClusterMismatchError | RebootstrapRequiredError):
        return "wrong cluster", None
    if isinstance(exc, KafkaTimeoutError):
        return "timed out", None
    if isinstance(exc, TransportError):
        return "connection failed", None
    return "", None


def explain_failure(exc: KafkaCompatError, config: ConnectionConfig, bootstrap: str = "") -> str:
    """``<kind>: <what happened>[; <what to try>]`` (a configuration error is shown as it is)."""
    if isinstance(exc, ConfigError | CommandFailed):
        return str(exc)
    kind, hint = _category(exc, config, bootstrap)
    text = f"{kind}: {exc}" if kind else str(exc)
    if isinstance(exc, BrokerTooOldError):  # in short: the handshake's long account is the cause (--debug)
        # A TLS listener closes so too; the command asks the peer with a ClientHello before it gets here.
        text = (
            f"{kind}: {exc.node or 'the peer'} closed on ApiVersions (every version) "
            "and on Metadata v0, which every Kafka answers"
        )
        hint = _OLD_HINT
    return _with_hint(text, hint)
