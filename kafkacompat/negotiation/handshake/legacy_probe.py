"""Telling a pre-0.10 broker from a slow one: the Metadata v0 probe of the handshake.

Theory
======
Before KIP-35 (Kafka 0.10) there is no ApiVersions.  What a broker does with
one is behaviour, not data, and it differs by release:

- 0.9.x reads the request, finds no handler for key 18 and sends nothing back,
  then serves the connection's next request as usual (observed on a real
  0.9.0.1: ApiVersions of any version gets no reply; ApiVersions v0 and
  Metadata v0 written back to back get one reply, the Metadata one, within
  milliseconds).
- 0.8.x cannot parse a request with an unknown key and closes the connection
  (its socket server fails while reading the request), so it looks like any
  other close at v0.

Silence alone cannot tell 0.9 from a slow modern broker.  The order of replies
can: Kafka answers one connection's requests in the order they were written.
So after a quiet period the handshake writes a Metadata v0 request (every
Kafka release from 0.8.0 to 4.2 serves v0, and it changes nothing on the
broker: an empty topic list asks about every topic, and creates none).  If
the first reply to come back carries the probe's correlation id, the
ApiVersions request before it was skipped: a broker that skips it and serves
on is 0.9.  If the ApiVersions reply comes first, the broker is just slow; the
probe's reply is read and dropped.  The decision rests on what was answered,
never on the time waited.

A broker that closes even on ApiVersions v0 is checked on fresh connections
(``LegacyCheck``): Metadata v0, which every Kafka release answers, tells a
0.8.x broker from a TLS listener or a port that is not Kafka; then the api
keys each 0.8 release added tell them apart, read in their source (tags 0.8.0
to 0.8.2.2: an unknown key closes, a known one is parsed): Heartbeat (key 12,
0.8.2 parses it and, having no handler, answers an error; no side effect),
else OffsetFetch v0 (key 9, 0.8.1; an empty request reads no offsets), else
0.8.0.  Closed on Metadata v0 too, a plaintext connection asks once more, with
a TLS ClientHello (``peer_kind``): a TLS listener that drops plaintext without
a word (Python's ``ssl`` does) answers it with a TLS record, which names it;
anything else is no Kafka broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kafkacompat.errors import DecodeError
from kafkacompat.negotiation.handshake.reply import Verdict
from kafkacompat.protocol.framing import RequestHeaders
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)

__all__ = [
    "NOT_KAFKA",
    "NOT_KAFKA_OVER_TLS",
    "SKIPPING_RELEASE",
    "CheckStep",
    "LegacyCheck",
    "judge_probe_reply",
    "probe_frame",
    "skipped_note",
]

#: The release whose behaviour "skips ApiVersions and serves on" names (0.9.0.0 and 0.9.0.1).
SKIPPING_RELEASE: Final = "0.9.0"
_METADATA_V0: Final = 0
#: Why a peer that closed on ApiVersions, on Metadata v0 and on a TLS ClientHello is no Kafka broker.
NOT_KAFKA: Final = (
    "not a Kafka broker nor a TLS listener: the peer closed on ApiVersions (every version), Metadata v0 "
    "(every Kafka answers it) and a TLS ClientHello; set fallback_release if it is Kafka"
)
#: The same, over TLS: the TLS handshake succeeded, so the peer does speak TLS.
NOT_KAFKA_OVER_TLS: Final = (
    "not a Kafka broker: the peer closed on ApiVersions (every version) and Metadata v0 (every Kafka "
    "answers it), over TLS; set fallback_release if it is Kafka all the same"
)


@dataclass(frozen=True, slots=True)
class CheckStep:
    """One step of the 0.8.x check: the request, and what its answer or a close means.

    ``answered`` / ``closed``: the release that settles it (None: go on, or for
    Metadata v0 closed, the TLS question; no Kafka at all after it).  ``asks``
    names the request in a sentence.  The TLS question's request is no Kafka
    request (``request`` None): its bytes are ``peer_kind.TLS_CLIENT_HELLO``.
    """

    name: str
    asks: str
    request: KafkaMessage | None
    version: int
    answered: str | None
    closed: str | None
    evidence_answered: str
    evidence_closed: str


_STEPS: Final = (
    CheckStep(
        "metadata", "Metadata v0", MetadataRequest(topics=[]), 0, None, None,
        "Metadata v0 was answered: a Kafka broker older than 0.10 that closes on ApiVersions (0.8.x)",
        "Metadata v0 closed the connection too: no Kafka broker answers so",
    ),
    CheckStep(
        "heartbeat", "Heartbeat v0",
        HeartbeatRequest(group_id="kafkacompat-probe", generation_id=-1, member_id=""), 0, "0.8.2", None,
        "Heartbeat (key 12) was answered: 0.8.2 parses it (0.8.0 and 0.8.1 close on it)",
        "Heartbeat (key 12) closed the connection: older than 0.8.2",
    ),
    CheckStep(
        "offset-fetch", "OffsetFetch v0",
        OffsetFetchRequest(group_id="kafkacompat-probe", topics=[]), 0, "0.8.1", "0.8.0",
        "OffsetFetch v0 (key 9) was answered: 0.8.1 (0.8.0 closes on it)",
        "OffsetFetch v0 (key 9) closed the connection: 0.8.0",
    ),
)
_TLS_QUESTION: Final = CheckStep(
    "tls", "TLS ClientHello", None, 0, None, None,
    "a TLS ClientHello was answered with a Kafka frame: neither TLS nor Kafka",
    "a TLS ClientHello closed the connection too: no TLS listener either",
)
_REPLIES: Final[dict[str, type[KafkaMessage]]] = {
    "metadata": MetadataResponse, "heartbeat": HeartbeatResponse, "offset-fetch": OffsetFetchResponse,
}


class LegacyCheck:
    """Which 0.8.x release closes on ApiVersions: one request per step, in order (see Theory).

    ``plaintext``: the connection has no TLS of its own, so a peer closing on Metadata
    v0 is asked with a TLS ClientHello before it is called no Kafka broker.
    """

    def __init__(self, plaintext: bool = True) -> None:
        self._index = 0
        self._plaintext = plaintext
        self.evidence: list[str] = []

    @property
    def step(self) -> CheckStep:
        return _TLS_QUESTION if self._index < 0 else _STEPS[self._index]

    @property
    def asking_tls(self) -> bool:
        """The TLS question is on the wire: a peer that closed on every Kafka request."""
        return self._index < 0

    def frame(self, correlation_id: int, headers: RequestHeaders) -> bytes:
        step = self.step
        if step.request is None:
            from kafkacompat.negotiation.peer_kind import TLS_CLIENT_HELLO  # a peer that closes on Kafka only

            return TLS_CLIENT_HELLO
        return headers.request(step.request, step.version, correlation_id)

    def answered(self, body: bytes) -> tuple[str | None, DecodeError | None]:
        """(the release named, or None to go on with the next step; a reply that cannot be read)."""
        step = self.step
        if step.request is None:  # a Kafka frame in answer to a ClientHello: nothing to read in it
            self.evidence.append(step.evidence_answered)
            return None, DecodeError("a Kafka frame in answer to a TLS ClientHello", what="TLS answer")
        try:
            _REPLIES[step.name].decode(body, step.version)
        except DecodeError as exc:
            return None, exc
        self.evidence.append(step.evidence_answered)
        if step.answered is None:
            self._index += 1
        return step.answered, None

    def closed(self) -> tuple[str | None, bool]:
        """(the release named, whether the check goes on on a new connection)."""
        step = self.step
        self.evidence.append(step.evidence_closed)
        if step.name == "metadata":
            if self._plaintext:
                self._index = -1  # the TLS question, on a new connection
            return None, self._plaintext
        if step.name == "tls":
            return None, False
        if step.closed is None:
            self._index += 1
            return None, True
        return step.closed, False


def probe_frame(correlation_id: int, headers: RequestHeaders) -> bytes:
    """The Metadata v0 probe: size prefix, the connection's header and an empty topic list."""
    return headers.request(MetadataRequest(topics=[]), _METADATA_V0, correlation_id)


def judge_probe_reply(body: bytes, api_versions_version: int, correlation_id: int) -> Verdict:
    """The probe's reply came before any ApiVersions reply: readable, it proves a skip."""
    try:
        response = MetadataResponse.decode(body, _METADATA_V0)
    except DecodeError as exc:
        return Verdict(
            "unreadable",
            f"the reply to the Metadata v0 probe cannot be read: {exc}",
            error_type=DecodeError,
            message=f"the first reply after ApiVersions v{api_versions_version} answers the "
            f"Metadata v0 probe (correlation id {correlation_id}) but cannot be read as one: {exc}",
            error_fields={"what": "MetadataResponse", "version": _METADATA_V0, "offset": exc.offset},
        )
    return Verdict(
        "skipped-api-versions",
        f"no ApiVersions reply; the Metadata v0 probe written after it (correlation id "
        f"{correlation_id}) was answered first, listing {len(response.brokers)} broker(s)",
        flags=("api-versions-skipped",),
    )


def skipped_note(version: int, stand_in: str, configured: bool) -> str:
    """The transcript's note on a broker seen skipping ApiVersions."""
    whose = (
        f"the configured fallback release {stand_in} stands in (the behaviour names {SKIPPING_RELEASE})"
        if configured
        else f"Kafka {stand_in}'s API table stands in"
    )
    return (
        f"the broker skipped ApiVersions v{version} and answered the request after it: it predates "
        f"Kafka 0.10 and behaves as {SKIPPING_RELEASE} does (0.8.x would have closed the "
        f"connection); {whose}"
    )
