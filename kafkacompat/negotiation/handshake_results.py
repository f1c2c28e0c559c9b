"""The two kinds of handshake result: a broker's own answer, or a release's table in its place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kafkacompat.negotiation.handshake_reply import api_ranges_of, first_ranges
from kafkacompat.negotiation.handshake_types import HandshakeResult, quick
from kafkacompat.negotiation.transcript import HandshakeTranscript
from kafkacompat.protocol.messages import ApiVersionsResponse
from kafkacompat.protocol.versions import VersionRange

__all__ = ["accepted_result", "stand_in_result"]

_Result: Final = quick(HandshakeResult)  # once per connect: its quick twin builds it


def accepted_result(
    response: ApiVersionsResponse,
    layout: int | None,
    transcript: HandshakeTranscript,
    node: str | None,
    api_ranges: Mapping[int, VersionRange] | None,
    reply: bytes,
    *,
    supported_features: Mapping[str, VersionRange] | None = None,
    finalized_features: Mapping[str, VersionRange] | None = None,
) -> HandshakeResult:
    """What the broker answered, read at ``layout``; duplicate keys keep their first entry.

    ``api_ranges`` and the features: the response's, when the caller already read them
    (judging the reply did).
    ``reply``: the bytes ``response`` was read from; the result decodes its own copy from
    them when asked (``response`` may be shared: the memo of judged replies holds it).
    """
    return _Result(
        reply=reply,
        api_versions_version=layout,
        api_ranges=api_ranges if api_ranges is not None else api_ranges_of(response.api_keys),
        supported_features=supported_features
        if supported_features is not None
        else first_ranges((f.name, f.min_version, f.max_version) for f in response.supported_features),
        finalized_features=finalized_features
        if finalized_features is not None
        else first_ranges(
            (f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features
        ),
        finalized_features_epoch=response.finalized_features_epoch,
        throttle_time_ms=response.throttle_time_ms,
        transcript=transcript,
        node=node,
    )


def stand_in_result(
    release: str,
    ranges: Mapping[int, VersionRange],
    transcript: HandshakeTranscript,
    node: str | None,
    detected_release: str | None,
) -> HandshakeResult:
    """No ApiVersions answer: ``release``'s table stands in (pre-0.10 brokers list no features)."""
    return HandshakeResult(
        reply=None,
        api_versions_version=None,
        api_ranges=ranges,
        supported_features=first_ranges(()),
        finalized_features=first_ranges(()),
        finalized_features_epoch=-1,
        throttle_time_ms=0,
        transcript=transcript,
        fallback_release=release,
        node=node,
        detected_release=detected_release,
    )
