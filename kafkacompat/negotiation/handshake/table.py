"""The rules of the ApiVersions handshake (KIP-35, KIP-511, KIP-1242), and its transition table.

Theory
======
KIP-35 (Kafka 0.10) made ApiVersions the first request on a connection: the
broker answers, per API key, the versions it accepts.  Brokers before 0.10 do
not know the request.  A real 0.9.0.1 answers nothing to it and keeps serving
the connection (its request handler skips what it cannot handle); 0.8.x closes
the connection (its socket server cannot parse the request).  KIP-511 (Kafka
2.4, v3) made the request flexible and added ClientSoftwareName/Version, which
brokers check against a pattern and refuse with INVALID_REQUEST.  A broker
asked for a version it does not know cannot read the request, so it answers
UNSUPPORTED_VERSION in the v0 layout: from 2.4 on with its own ApiVersions
(key 18) range in ApiKeys, before that (0.10-2.3) with ApiKeys empty.

The rules the handshake follows (the groups of rows in ``TRANSITIONS``):

1. Start at the highest version the codec and the config allow (v5 since
   Kafka 4.4), or, when the broker at that address advertised a lower
   ApiVersions max before, at that max (rule 12).
2. UNSUPPORTED_VERSION with a key-18 range: retry on the same connection at
   its max, only if strictly lower than the version sent; a broker refusing a
   version it still advertises would loop us, so that fails.  Without key 18:
   retry at v0.  At v0 there is nothing lower: fail.
3. A reply unreadable at the version sent is read again as v0, the layout of
   every UNSUPPORTED_VERSION answer.  Unreadable both ways but starting with
   error code 35 (the error code leads every layout) is still
   UNSUPPORTED_VERSION; anything else unreadable fails.
4. A close before any reply: reconnect and step down.  A Kafka broker never
   closes on ApiVersions it cannot read (0.10+ answers UNSUPPORTED_VERSION,
   0.9 nothing); a proxy or a service that resets on flexible versions does
   (Azure Event Hubs closes on v4).  So a close at a flexible version (v3+)
   retries one flexible version lower (from v4 or v5, at v3: what v4 and v5
   add, a fix and the identity, no such peer needs) while a connection is left for a last
   try at v0, so that the software name is still sent and features still read
   wherever a flexible version is accepted; below v3 it retries at v0 (v1 and
   v2 add only ThrottleTimeMs).  A close at v0 means the broker predates
   ApiVersions and closes on it (0.8.x), is no Kafka broker, or expects TLS:
   the configured fallback release's table stands in, or rule 10 finds out.
   A close at v0 after the broker did answer ApiVersions is a transport failure.
5. Silence (a timeout) fails with KafkaTimeoutError: slowness is not age, and
   silence alone never makes the handshake send a lower ApiVersions.  A peer
   that sent not one byte on the connection by the deadline of a reply is
   named silent (SilentPeerError, with what it was asked and for how long):
   a Kafka broker that is up answers ApiVersions, or the Metadata v0 after it,
   at once.
6. Bytes of another protocol fail with WrongProtocolError naming it (TLS,
   HTTP, SSH, text: ``peer_kind``): wrong port or protocol.
7. INVALID_REQUEST fails and the connection must be closed; at v3+ the likely
   cause is the client software fields.  Other error codes fail by name.
8. An OK reply is accepted even when key 18's advertised range leaves out the
   version sent (Tansu answers any version); the transcript flags it.
9. Quiet for ``quiet_period`` on an ApiVersions request (a number the driver
   is handed; the machine reads no clock): write a Metadata v0 probe on the
   same connection, once per connection.  Kafka answers a connection's
   requests in order, so what comes back first decides, not the silence: the
   probe's reply with no ApiVersions reply before it proves the broker skipped
   ApiVersions and serves on (0.9): its release's table stands in (or the
   configured fallback's) and the connection is used as it is.  A slow broker
   answers ApiVersions first; the handshake goes on as usual and the probe's
   reply, when it comes, is read and dropped (a close or silence instead only
   costs the connection, not the answer).
10. Closed even at v0, nothing answered, no fallback configured: check on new
    connections, one request at a time (``legacy_probe.LegacyCheck``).  Metadata
    v0 closed too: no Kafka answers so; over plaintext a last connection asks
    with a TLS ClientHello, and a TLS record back fails with WrongProtocolError
    (a TLS listener, which drops plaintext without a word); closed or
    unanswered, BrokerTooOldError (not Kafka).  Metadata v0 answered: 0.8.x;
    then Heartbeat answered names 0.8.2, else OffsetFetch v0 answered names
    0.8.1, else 0.8.0 (the keys each release added; its table stands in).  At
    most two connections beyond ``max_connections``.

11. KIP-1242 (v5): a connection that knows which broker it meant to reach
    (node id and cluster id, ``identity``) sends both; one without
    the other is never sent, and a bootstrap connection sends neither.
    REBOOTSTRAP_REQUIRED fails with ``RebootstrapRequiredError``, naming the
    identity expected: the address is someone else's broker now.
    INVALID_REQUEST to a v5 request with an identity fails with
    ``IdentityRefusedError``: the broker refused the identity itself.
    Controllers do not check; their OK is not a confirmation.
12. The broker's advertised ApiVersions max is remembered per address
    (``ApiVersionsMemory``, when the driver gives one): a pre-4.4 broker
    costs one extra round trip (UNSUPPORTED_VERSION to v5) once, not on every
    connection.  A close at the remembered version forgets it.

Every new attempt is at a strictly lower version than the one before, so a
handshake ends after at most ``max_version + 1`` requests, one probe per
connection and ``max_connections`` connections, plus the three requests and
two connections of rule 10.

The table is the whole state machine: the handshake only decides *which*
outcome an event has; where that leads is looked up here, and an event with no
row for the current state is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final, NamedTuple

__all__ = [
    "EVENTS_BY_STATE",
    "PROGRESS_EVENTS",
    "PROGRESS_OUTCOMES",
    "TRANSITIONS",
    "Event",
    "State",
    "Transition",
]


class State(StrEnum):
    CONNECT = "connect"  # a connection is needed
    SEND = "send"  # a request is ready to write
    RECEIVE = "receive"  # a reply is awaited
    PROBE = "probe"  # the Metadata v0 probe is ready to write (rule 9)
    DRAIN = "drain"  # ApiVersions answered; the probe's reply is read and dropped
    DONE = "done"
    FAILED = "failed"


class Event(StrEnum):
    CONNECTED = "connected"
    CONNECT_FAILED = "connect_failed"
    REQUEST_SENT = "request_sent"
    RECEIVED = "received"
    CONNECTION_CLOSED = "connection_closed"
    TIMED_OUT = "timed_out"
    FOREIGN_BYTES = "foreign_bytes"
    QUIET = "quiet"  # no reply within the quiet period the action named


class Transition(NamedTuple):
    """On ``event`` in ``source``, when the handshake judges ``outcome``, go to ``target``.

    ``outcome`` is the token the transcript records; ``next_step`` is what it
    says was decided (``{version}`` is the next version tried).  A named tuple: a table
    row every connection loads, which a frozen dataclass would cost 20 KiB to define.
    """

    source: State
    event: Event
    outcome: str
    target: State
    next_step: str


_T = Transition
_C, _S, _R, _D, _F = State.CONNECT, State.SEND, State.RECEIVE, State.DONE, State.FAILED
_P, _DR = State.PROBE, State.DRAIN
_E = Event
_RETRY = "retry at v{version} on the same connection"
_RECONNECT = "reconnect and retry at v{version}"
_STEP_DOWN = "reconnect one flexible version lower, at v{version}"
_CHECK = "reconnect and ask Metadata v0: Kafka older than 0.10?"
_NEXT_CHECK = "write the next check request"
_NOT_KAFKA = "fail: no Kafka answer at all (not Kafka, nor TLS)"
_STAND_IN = "use the fallback release's table"
_BROKE = "fail: the connection broke"
_SILENCE = "fail: silence is not a downgrade signal"
_FOREIGN = "fail and close: wrong port or security protocol"

# fmt: off
TRANSITIONS: Final[tuple[Transition, ...]] = (
    # 1: connect, send the highest version, read the answer
    _T(_C, _E.CONNECTED,         "connected",                 _S, "send ApiVersions v{version}"),
    _T(_S, _E.REQUEST_SENT,      "sent",                      _R, "read the reply"),
    _T(_R, _E.RECEIVED,          "ok",                        _D, "use this answer"),
    # 2, 3: UNSUPPORTED_VERSION; replies that cannot be read
    _T(_R, _E.RECEIVED,          "unsupported-version",       _S, _RETRY),
    _T(_R, _E.RECEIVED,          "no-lower-version",          _F, "fail and close: nothing lower to try"),
    _T(_R, _E.RECEIVED,          "unreadable",                _F, "fail and close: not an ApiVersions reply"),
    _T(_R, _E.RECEIVED,          "correlation-mismatch",      _F, "fail and close: reply to another request"),
    # 4: the connection closes, while we write (ApiVersions or the probe) or while we read
    _T(_S, _E.CONNECTION_CLOSED, "closed",                    _C, _RECONNECT),
    _T(_R, _E.CONNECTION_CLOSED, "closed",                    _C, _RECONNECT),
    _T(_P, _E.CONNECTION_CLOSED, "closed",                    _C, _RECONNECT),
    _T(_S, _E.CONNECTION_CLOSED, "closed-step-down",          _C, _STEP_DOWN),
    _T(_R, _E.CONNECTION_CLOSED, "closed-step-down",          _C, _STEP_DOWN),
    _T(_P, _E.CONNECTION_CLOSED, "closed-step-down",          _C, _STEP_DOWN),
    _T(_S, _E.CONNECTION_CLOSED, "closed-no-connection-left", _F, "fail: max_connections reached"),
    _T(_R, _E.CONNECTION_CLOSED, "closed-no-connection-left", _F, "fail: max_connections reached"),
    _T(_P, _E.CONNECTION_CLOSED, "closed-no-connection-left", _F, "fail: max_connections reached"),
    _T(_S, _E.CONNECTION_CLOSED, "closed-at-v0",              _C, _CHECK),
    _T(_R, _E.CONNECTION_CLOSED, "closed-at-v0",              _C, _CHECK),
    _T(_P, _E.CONNECTION_CLOSED, "closed-at-v0",              _C, _CHECK),
    _T(_S, _E.CONNECTION_CLOSED, "closed-at-v0-fallback",     _D, _STAND_IN),
    _T(_R, _E.CONNECTION_CLOSED, "closed-at-v0-fallback",     _D, _STAND_IN),
    _T(_P, _E.CONNECTION_CLOSED, "closed-at-v0-fallback",     _D, _STAND_IN),
    _T(_S, _E.CONNECTION_CLOSED, "closed-after-reply",        _F, _BROKE),
    _T(_R, _E.CONNECTION_CLOSED, "closed-after-reply",        _F, _BROKE),
    _T(_P, _E.CONNECTION_CLOSED, "closed-after-reply",        _F, _BROKE),
    _T(_C, _E.CONNECT_FAILED,    "connect-failed",            _F, "fail: the broker cannot be reached"),
    # 5: silence
    _T(_C, _E.TIMED_OUT,         "timeout",                   _F, _SILENCE),
    _T(_S, _E.TIMED_OUT,         "timeout",                   _F, _SILENCE),
    _T(_R, _E.TIMED_OUT,         "timeout",                   _F, _SILENCE),
    _T(_P, _E.TIMED_OUT,         "timeout",                   _F, _SILENCE),
    _T(_R, _E.TIMED_OUT,         "silent",                    _F, "fail: the peer said nothing at all"),
    # 6: another protocol answers
    _T(_R, _E.FOREIGN_BYTES,     "foreign-protocol",          _F, _FOREIGN),
    _T(_R, _E.RECEIVED,          "foreign-protocol",          _F, _FOREIGN),
    # 7: the broker refuses the request
    _T(_R, _E.RECEIVED,          "invalid-request",           _F, "fail and close the connection"),
    _T(_R, _E.RECEIVED,          "broker-error",              _F, "fail and close the connection"),
    # 11: KIP-1242: the broker is someone else, or refused the identity sent
    _T(_R, _E.RECEIVED,          "rebootstrap-required",      _F, "fail and close: rebootstrap"),
    _T(_R, _E.RECEIVED,          "identity-refused",          _F, "fail and close: the identity was refused"),
    # 9: quiet: probe with Metadata v0; the order of the replies decides
    _T(_R, _E.QUIET,             "quiet",                     _P, "write a Metadata v0 probe here"),
    _T(_P, _E.REQUEST_SENT,      "probe-sent",                _R, "read on: the first reply decides"),
    _T(_R, _E.RECEIVED,          "skipped-api-versions",      _D, "use the table of the release it names"),
    _T(_R, _E.RECEIVED,          "probe-reply-dropped",       _R, "read on for the ApiVersions reply"),
    _T(_R, _E.RECEIVED,          "ok-probe-pending",          _DR, "read and drop the probe's reply"),
    _T(_DR, _E.RECEIVED,         "probe-reply-dropped",       _D, "use the ApiVersions answer"),
    _T(_DR, _E.CONNECTION_CLOSED, "closed-after-answer",      _D, "use the answer; reconnect"),
    _T(_DR, _E.TIMED_OUT,        "probe-unanswered",          _D, "use the answer; reconnect"),
    _T(_DR, _E.RECEIVED,         "correlation-mismatch",      _F, "fail and close: reply to another request"),
    _T(_DR, _E.FOREIGN_BYTES,    "foreign-protocol",          _F, _FOREIGN),
    # 10: closed even at v0: which 0.8.x, if Kafka at all (one request per step, in order)
    _T(_C, _E.CONNECTED,         "connected-to-check",        _P, _NEXT_CHECK),
    _T(_R, _E.RECEIVED,          "check-answered",            _P, _NEXT_CHECK),
    _T(_R, _E.RECEIVED,          "check-named",               _D, "use the table of the release it names"),
    _T(_R, _E.CONNECTION_CLOSED, "check-closed",              _C, "reconnect for the next check request"),
    _T(_P, _E.CONNECTION_CLOSED, "check-closed",              _C, "reconnect for the next check request"),
    _T(_R, _E.CONNECTION_CLOSED, "check-named-on-close",      _D, "use the table of the release it names"),
    _T(_P, _E.CONNECTION_CLOSED, "check-named-on-close",      _D, "use the table of the release it names"),
    _T(_R, _E.CONNECTION_CLOSED, "not-kafka",                 _F, _NOT_KAFKA),
    _T(_P, _E.CONNECTION_CLOSED, "not-kafka",                 _F, _NOT_KAFKA),
    _T(_R, _E.TIMED_OUT,         "not-kafka",                 _F, _NOT_KAFKA),
)
# fmt: on

BY_KEY: Final[Mapping[tuple[State, Event, str], Transition]] = MappingProxyType(
    {(t.source, t.event, t.outcome): t for t in TRANSITIONS}
)
EVENTS_BY_STATE: Final[Mapping[State, frozenset[Event]]] = MappingProxyType(
    {s: frozenset(t.event for t in TRANSITIONS if t.source is s) for s in State}
)
# Events that move the exchange along without concluding an attempt.
PROGRESS_EVENTS: Final[frozenset[Event]] = frozenset({Event.CONNECTED, Event.REQUEST_SENT})
# Outcomes that conclude no attempt either: the quiet period and the probe's reply belong
# to the attempt whose ApiVersions request they follow (its outcome, detail and flags
# say what they showed), so the versions of the attempts still strictly decrease.
PROGRESS_OUTCOMES: Final[frozenset[str]] = frozenset({
    "quiet", "probe-reply-dropped", "closed-after-answer", "probe-unanswered",
    # the 0.8.x check follows the last attempt (closed-at-v0); its notes say what it found
    "check-answered", "check-named", "check-closed", "check-named-on-close", "not-kafka",
})
