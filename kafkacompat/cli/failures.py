"""Expected failures as one sentence: what kind of failure, what happened, and what to try.

The transport's errors say precisely what happened; a person at a terminal
also wants to know which of the usual suspects it is (unreachable, not Kafka,
TLS, authentication, too old) and, where the evidence points somewhere, what
to try.  ``CommandFailed`` carries that sentence; the transport's error stays
attached as its cause (shown with ``--debug``).
"""

from __future__ import annotations

import re

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
    SilentPeerError,
    TransportError,
    UnsupportedVersionError,
    WrongEndpointError,
    WrongProtocolError,
)

__all__ = ["LINE", "CommandFailed", "as_failure", "explain_failure"]

_TLS_ADD = "add --tls (security.protocol=SSL)"
_SASL_HINT = (
    "it may require SASL: --sasl-mechanism, --sasl-username, --sasl-password-env "
    "(or sasl.* in --command-config)"
)
_ENDPOINT_HINT = "use --bootstrap-server (or HOST:PORT) for a broker"
_OLD_HINT = "--fallback-release 0.8.2 if it is Kafka all the same"
_PLAINTEXT_HINT = "if this listener is plaintext, drop --tls (security.protocol=PLAINTEXT)"
_ADVERTISED_HINT = (
    "the bootstrap address answered, but this is the address the cluster advertises for the broker; "
    "check its advertised.listeners"
)


class CommandFailed(KafkaCompatError):
    """An expected failure of a command, in one sentence; the transport's error is the cause.

    ``hint`` (what to try) is kept apart from what happened, so that ``line``
    can shorten what happened, never the hint, to keep the line under ``LINE``
    characters: the whole account is the cause, shown with ``--debug``.
    """

    def __init__(self, what: str, hint: str | None = None) -> None:
        super().__init__(_with_hint(what, hint))
        self.what = what
        self.hint = hint

    def line(self, prog: str) -> str:
        """``PROG: what happened[; hint]``, what happened cut (and the cut said) to fit."""
        room = LINE - len(prog) - 2 - (len(self.hint) + 2 if self.hint else 0)
        what = self.what
        if len(what) > room:
            what = what[: max(room - len(_CUT), 20)].rstrip() + _CUT
        return f"{prog}: {_with_hint(what, self.hint)}"


LINE = 199  # the characters a failure's line may take, "kafkacompat COMMAND: " included
_CUT = " ... (--debug for more)"


def _reasons(exc: KafkaCompatError) -> list[KafkaCompatError]:
    if isinstance(exc, NoBrokerReachableError | BrokersUnavailableError):
        return list(exc.reasons.values())
    return [exc]


# Words the transport puts around an address's failure that the sentence says once already.
_CONNECTING = re.compile(
    r"^could not connect to the broker for the ApiVersions handshake: |\s*while connecting"
)
_SHOWN_ADDRESSES = 3


def _each_address(exc: NoBrokerReachableError | BrokersUnavailableError) -> str:
    """``ADDRESS: what happened`` for the first addresses (the rest counted); the tries once."""
    parts = []
    for key, reason in list(exc.reasons.items())[:_SHOWN_ADDRESSES]:
        at = f" at {reason.node}" if reason.node else ""
        label = key if isinstance(key, str) else f"node {key}{at}"
        text = reason.message.replace(f" (node {reason.node})", "") if reason.node else reason.message
        text = _CONNECTING.sub("", text)
        closed = "the broker closed the connection"
        if isinstance(reason, PeerClosedError) and text.startswith(closed):  # the kind says the rest
            parts.append(f"by {label}{text.removeprefix(closed)}")
        else:
            parts.append(f"{label}: {text}")
    more = len(exc.reasons) - _SHOWN_ADDRESSES
    listed = "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
    rounds = getattr(exc, "rounds", 1)
    return f"{listed} ({rounds} tries)" if rounds > 1 else listed


def _with_hint(text: str, hint: str | None) -> str:
    return f"{text}; {hint}" if hint else text


def _category(exc: KafkaCompatError, config: ConnectionConfig, bootstrap: str) -> tuple[str, str | None]:
    tls, sasl = config.tls is not None, config.sasl is not None
    reasons = _reasons(exc)
    if isinstance(exc, NoBrokerReachableError | BrokersUnavailableError):
        # No TLS hint for silence: a TLS listener answers plaintext, or closes (and is asked).
        if reasons and all(isinstance(r, KafkaTimeoutError) for r in reasons):
            return "no answer", None
        if any(isinstance(r, PeerClosedError) for r in reasons):
            return "connection closed", None if sasl else _SASL_HINT
        return "unreachable", None
    if isinstance(exc, WrongProtocolError):
        if exc.kind == "tls" and not tls:  # a TLS record came back: the listener is TLS
            return "TLS listener", _TLS_ADD
        return "not a Kafka broker", None
    if isinstance(exc, SilentPeerError):
        return "no answer", None
    if isinstance(exc, BrokerTooOldError):  # closed even on Metadata v0 (and a TLS ClientHello)
        return "not a Kafka broker", _OLD_HINT
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


def _tls_failure(exc: AuthenticationError) -> str:
    """``NODE: what failed in the TLS handshake``, without the words the kind already says."""
    text = exc.message.replace(f" (node {exc.node})", "") if exc.node else exc.message
    text = text.replace("TLS certificate verification failed while running the TLS handshake: ",
                        "certificate verification failed: ")
    if text.startswith(_TLS_FAILED):
        reason = text.removeprefix(_TLS_FAILED)
        text = "the peer closed the connection during the TLS handshake" if "EOF" in reason else reason
    return f"{exc.node}: {text}" if exc.node else text


_TLS_FAILED = "TLS failed while running the TLS handshake: "
_REFUSED = re.compile(
    r"^(?P<mechanism>\S+) authentication as (?P<user>'[^']*') failed: "
    r"(?P<code>[A-Z_]+) \(\d+\): (?P<detail>.*)$"
)


def explain_failure(exc: KafkaCompatError, config: ConnectionConfig, bootstrap: str = "") -> str:
    """``<kind>: <what happened>[; <what to try>]`` (a configuration error is shown as it is)."""
    if isinstance(exc, ConfigError | CommandFailed):
        return str(exc)
    return str(as_failure(exc, config, bootstrap))


def as_failure(exc: KafkaCompatError, config: ConnectionConfig, bootstrap: str = "") -> CommandFailed:
    """``exc`` as a command's failure: ``<kind>: <what happened>``, and what to try apart."""
    kind, hint = _category(exc, config, bootstrap)
    text = f"{kind}: {exc}" if kind else str(exc)
    if isinstance(exc, NoBrokerReachableError | BrokersUnavailableError) and exc.reasons:
        text = f"{kind}: {_each_address(exc)}"  # the details, and every try, are the cause (--debug)
    if isinstance(exc, AuthenticationError) and kind == "TLS failed":
        text = f"{kind}: {_tls_failure(exc)}"
    elif isinstance(exc, AuthenticationError) and exc.node:
        said = exc.message.replace(f" (node {exc.node})", "")
        refused = _REFUSED.match(said)  # the SASL exchange's words: the broker said no to these credentials
        if refused:
            said = f"{exc.node} refused {refused['mechanism']} as {refused['user']} ({refused['code']}): "
            text = f"{kind}: {said}{refused['detail']}"
        else:
            text = f"{kind}: {exc.node}: {said}"
    if isinstance(exc, WrongProtocolError | SilentPeerError):  # the first contact's own sentence
        said = exc.message  # it starts with what the peer is; the address is the one typed
        if kind == "TLS listener":
            said = "TLS listener: the peer answered with a TLS record"  # the hint says what to do
        text = said if said.startswith(("not a Kafka broker", "TLS listener")) else f"{kind}: {said}"
    if isinstance(exc, BrokerTooOldError):  # in short: the handshake's long account is the cause (--debug)
        asked = "ApiVersions, Metadata v0 (every Kafka answers it)"
        asked += " and a TLS ClientHello" if config.tls is None else ", over TLS"
        text = f"{kind}: the peer closed on {asked}"
    failure = CommandFailed(text, hint)
    for note in _details(exc):  # shown with --debug, under the one line
        failure.add_note(note)
    return failure


def _details(exc: KafkaCompatError) -> list[str]:
    """What the first contact saw, for ``--debug``: the peer's first bytes, and every attempt."""
    notes = []
    first_bytes = getattr(exc, "first_bytes", b"")
    if first_bytes:
        notes.append(f"the peer's first bytes: {first_bytes.hex(' ')}")
    describe = getattr(exc.transcript, "describe", None)
    if isinstance(exc, WrongProtocolError | SilentPeerError | BrokerTooOldError) and callable(describe):
        notes.append(str(describe()))
    return notes
