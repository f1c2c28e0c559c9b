"""Features below ApiVersions v4: a partial list said so, and min 0 or min 1 meaning the same."""

from __future__ import annotations

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.features import BrokerFeatures, can_finalize, max_safe_level, supported_levels
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import RELEASES


def _table(release: str, kind: str = "kraft-broker") -> dict[int, tuple[int, int]]:
    return dict(next(p.apis for p in RELEASES if p.release == release and p.kind == kind))


def _caps(release: str, accepted: int | None) -> BrokerCapabilities:
    transcript = HandshakeTranscript(api_versions_version=accepted)
    return BrokerCapabilities.from_ranges("b:9092", _table(release), transcript=transcript)


def test_partial_below_v4_on_a_broker_that_has_v4() -> None:
    note = _caps("4.0", 3).features_partial
    assert note is not None and note.startswith("partial: ApiVersions was answered at v3")
    assert "KAFKA-17492" in note
    assert _caps("4.0", 4).features_partial is None


def test_partial_on_3_7_and_3_8_which_answer_v3_at_most() -> None:
    for release in ("3.7", "3.8"):
        note = _caps(release, 3).features_partial
        assert note is not None and note.startswith("may be partial") and "KAFKA-17011" in note


def test_whole_before_3_7_and_without_a_handshake() -> None:
    assert _caps("3.6", 3).features_partial is None
    assert _caps("4.0", None).features_partial is None


def test_min_1_is_read_as_min_0_except_for_metadata_version() -> None:
    assert supported_levels("group.version", VersionRange(1, 1)) == VersionRange(0, 1)
    assert supported_levels("group.version", VersionRange(0, 1)) == VersionRange(0, 1)
    assert supported_levels("metadata.version", VersionRange(1, 25)) == VersionRange(1, 25)
    assert supported_levels("group.version", None) == VersionRange(0, 0)


def test_a_broker_listing_min_1_can_still_have_the_feature_disabled() -> None:
    rewritten = BrokerFeatures("b1", {"transaction.version": VersionRange(1, 2)})
    plain = BrokerFeatures("b2", {"transaction.version": VersionRange(0, 2)})
    assert can_finalize("transaction.version", 0, [rewritten, plain]).ok
    assert max_safe_level("transaction.version", [rewritten, plain]) == 2
