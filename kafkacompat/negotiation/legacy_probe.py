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
"""

from __future__ import annotations

from typing import Final

from kafkacompat.errors import DecodeError
from kafkacompat.negotiation.handshake_reply import Verdict
from kafkacompat.protocol.framing import encode_request
from kafkacompat.protocol.messages import MetadataRequest, MetadataResponse

__all__ = [
    "CLOSED_AT_V0",
    "SKIPPING_RELEASE",
    "judge_probe_reply",
    "probe_frame",
    "skipped_note",
]

#: The release whose behaviour "skips ApiVersions and serves on" names (0.9.0.0 and 0.9.0.1).
SKIPPING_RELEASE: Final = "0.9.0"
_METADATA_V0: Final = 0
#: Why a broker closes even on ApiVersions v0, never having answered it.
CLOSED_AT_V0: Final = (
    "the broker is older than Kafka 0.10 and closes on requests it cannot read (as 0.8.x "
    "does; 0.9 would have skipped the request and answered the probe), it is not a Kafka "
    "broker, or the listener expects TLS (a TLS listener drops plaintext without a word); "
    "configure fallback_release (e.g. '0.8.2') to use a pre-0.10 broker"
)


def probe_frame(correlation_id: int, client_id: str | None) -> bytes:
    """The Metadata v0 probe: size prefix, header and an empty topic list."""
    return encode_request(MetadataRequest(topics=[]), _METADATA_V0, correlation_id, client_id)


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
