"""Which request versions a Kafka 4.x broker refuses, from the generated removal facts.

Theory.  Kafka 4.0 removed old versions of many APIs (KIP-896); a request at
such a version makes the broker close the connection without an error
response, since it cannot parse it.  Produce v0-2 are a special case: gone
from the specs but still advertised by every 4.x broker, which closes the
connection when they are used (KAFKA-18659).  The Share APIs' v0 was early
access in 4.0 and dropped in 4.1 (KAFKA-19057).  The facts live in
``kafkacompat.reference.removals`` (generated); this module only answers
questions about them, so the emulator and the client agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkacompat.errors import KafkaCompatError, TransportError, VersionRemovedError
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.removals import REMOVAL_KINDS, REMOVALS, RemovalFact

__all__ = ["describe_removal", "follows_kip_896", "refused_by", "release_order", "removed_version_error"]


def release_order(release: str) -> tuple[int, ...]:
    """``"4.1"`` -> ``(4, 1)``; anything that is not a release number sorts first."""
    try:
        return tuple(int(part) for part in release.split("."))
    except ValueError:
        return ()


def refused_by(release: str | None, api_key: int, version: int) -> RemovalFact | None:
    """The removal that makes a broker of ``release`` refuse this request, if one does.

    ``release`` None means "some 4.x broker, release unknown": the removal applies
    from the release it names on (4.0 for most, 4.1 for the Share APIs' v0).
    """
    fact = REMOVALS.get(api_key)
    if fact is None or not fact.covers(version):
        return None
    if release is not None and release_order(release) < release_order(fact.since):
        return None
    return fact


def describe_removal(fact: RemovalFact, version: int) -> str:
    """``Fetch v3 was removed in Kafka 4.0 (KIP-896)``, and the like."""
    return f"{fact.api} v{version}: {REMOVAL_KINDS[fact.kind]}"


def follows_kip_896(advertised: Mapping[int, VersionRange]) -> bool:
    """Whether a broker's ApiVersions answer leaves out versions KIP-896 removed (a 4.x broker)."""
    return any(
        fact.kind == "kip-896" and key in advertised and advertised[key].lowest > fact.highest
        for key, fact in REMOVALS.items()
    )


def removed_version_error(
    error: KafkaCompatError, api_key: int | None, version: int, advertised: Mapping[int, VersionRange] | None
) -> VersionRemovedError | None:
    """The error to give a caller whose request at ``version`` met a closed connection.

    A ``VersionRemovedError`` when Kafka 4.x removed that version and the broker
    did not advertise it, or advertises it yet refuses it as a 4.x broker does
    with Produce v0-2; ``None`` (keep ``error``) when the close has another cause.
    """
    if api_key is None or not isinstance(error, TransportError) or isinstance(error, VersionRemovedError):
        return None
    fact = refused_by(None, api_key, version)
    if fact is None:
        return None
    ranges = advertised or {}
    advertised_here = api_key in ranges and version in ranges[api_key]
    if advertised_here and (fact.kind != "advertised-rejected" or not follows_kip_896(ranges)):
        return None  # a broker that advertises the version and should accept it
    return VersionRemovedError(
        f"the broker closed the connection on {describe_removal(fact, version)}: "
        f"this broker removed that version ({error.message})",
        api_key=api_key,
        version=version,
        node=error.node,
    )
