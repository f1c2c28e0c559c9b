"""The removal facts (generated from vendor/kafka-protocol) and the questions asked of them."""

from __future__ import annotations

import json
from pathlib import Path

from kafkacompat.errors import KafkaTimeoutError, TransportError, VersionRemovedError
from kafkacompat.protocol import messages
from kafkacompat.protocol.removals import follows_kip_896, refused_by, removed_version_error
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import RELEASES, REMOVALS

VENDORED = Path(__file__).resolve().parents[3] / "vendor" / "kafka-protocol"


def test_the_facts_are_the_vendored_data() -> None:
    entries = json.loads((VENDORED / "spec-4.3" / "removed-versions.json").read_text())
    expected = {e["apiKey"]: (min(e["removed"]), max(e["removed"])) for e in entries if e["removed"]}
    assert {key: (f.lowest, f.highest) for key, f in REMOVALS.items()} == expected


def test_the_kinds() -> None:
    assert REMOVALS[0].kind == "advertised-rejected" and REMOVALS[0].since == "4.0"
    assert REMOVALS[1].kind == "kip-896"
    assert {REMOVALS[k].kind for k in (76, 77, 78, 79)} == {"early-access"}
    assert {REMOVALS[k].since for k in (76, 77, 78, 79)} == {"4.1"}
    assert {REMOVALS[k].kind for k in (4, 5, 6, 7)} == {"retired"}
    # Kafka 4.0 kept these deprecated versions: deprecation is not removal.
    for key, version in ((3, 0), (10, 0), (11, 0), (17, 0), (42, 0)):
        assert refused_by("4.2", key, version) is None


def test_no_4x_release_advertises_a_removed_version_except_produce() -> None:
    for profile in RELEASES:
        if not profile.release.startswith("4."):
            continue
        for key, (low, _high) in profile.apis.items():
            fact = refused_by(profile.release, key, low)
            assert fact is None or fact.kind == "advertised-rejected", (profile, key)
        assert profile.kind == "kraft-controller" or profile.apis[0][0] == 0  # Produce still from v0


def test_the_message_classes_carry_the_same_facts() -> None:
    for key, fact in REMOVALS.items():
        for kind in ("request", "response"):
            cls = getattr(messages, messages.CLASS_BY_KEY[(key, kind)])
            assert VersionRange(fact.lowest, fact.highest) == cls.REMOVED_VERSIONS
            assert fact.kind == cls.REMOVAL_KIND
            assert all(v in cls.VALID_VERSIONS for v in cls.REMOVED_VERSIONS)  # still readable here
    assert messages.MetadataRequest.REMOVED_VERSIONS.empty
    assert messages.MetadataRequest.defined_by_current_specs(0)


def test_refused_by_a_release() -> None:
    assert refused_by("3.9", 1, 3) is None
    assert refused_by("4.0", 1, 3) is not None
    assert refused_by("4.0", 78, 0) is None  # early access in 4.0
    assert refused_by("4.1", 78, 0) is not None
    assert refused_by("4.2", 1, 4) is None


BROKER_4X = {0: VersionRange(0, 13), 1: VersionRange(4, 18), 3: VersionRange(0, 13)}
BROKER_39 = {0: VersionRange(0, 11), 1: VersionRange(0, 17), 3: VersionRange(0, 12)}
CLOSED = TransportError("the broker closed the connection", node="b:9092")


def test_a_close_after_a_removed_version_is_reported_as_such() -> None:
    assert follows_kip_896(BROKER_4X) and not follows_kip_896(BROKER_39)
    error = removed_version_error(CLOSED, 1, 3, BROKER_4X)
    assert isinstance(error, VersionRemovedError) and error.node == "b:9092"
    assert str(error).startswith("the broker closed the connection on Fetch v3: removed in 4.0 (KIP-896)")
    produce = removed_version_error(CLOSED, 0, 2, BROKER_4X)
    assert produce is not None and "KAFKA-18659" in produce.message


def test_other_closes_are_left_alone() -> None:
    assert removed_version_error(CLOSED, 1, 3, BROKER_39) is None  # 3.9 advertises Fetch v3
    assert removed_version_error(CLOSED, 0, 2, BROKER_39) is None  # and Produce v2 works there
    assert removed_version_error(CLOSED, 1, 12, BROKER_4X) is None  # not a removed version
    assert removed_version_error(KafkaTimeoutError("late"), 1, 3, BROKER_4X) is None
    assert removed_version_error(CLOSED, None, 3, BROKER_4X) is None
