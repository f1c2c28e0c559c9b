"""KIP-584 features: names, dependencies, finalize checks and change classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkacompat._codegen.release_inputs import load_features
from kafkacompat.errors import FeatureError, NegotiationError
from kafkacompat.negotiation.features import (
    CATALOG,
    BlockingBroker,
    BlockingDependency,
    BrokerFeatures,
    ChangeKind,
    FinalizedObservation,
    FinalizedView,
    StaleObservation,
    can_finalize,
    can_finalize_all,
    classify_change,
    max_safe_level,
    merge_finalized,
)
from kafkacompat.protocol.versions import VersionRange

SHARED = Path(__file__).resolve().parents[3] / "vendor" / "kafka-protocol"
MV, KRAFT, GROUP, TXN = "metadata.version", "kraft.version", "group.version", "transaction.version"


def _features_json() -> dict[str, list[dict[str, object]]]:
    data = load_features(SHARED)  # features.json and features-4.4.json
    return {name: body["levels"] for name, body in data["features"].items()}


def broker(node: str, **ranges: str) -> BrokerFeatures:
    """``broker("b1", metadata_version="1-21")``: underscores stand for dots."""
    return BrokerFeatures(
        node, {name.replace("_", "."): VersionRange.parse(r) for name, r in ranges.items()}
    )


# -- catalog --------------------------------------------------------------------------------


def test_catalog_matches_features_json() -> None:
    for feature, levels in _features_json().items():
        known = CATALOG.levels(feature)
        assert [lv.level for lv in known] == [entry["level"] for entry in levels]
        for entry, level in zip(levels, known, strict=True):
            assert dict(level.requires) == entry.get("requires", {})
            assert level.bootstrap_metadata_version == entry.get("bootstrap_metadata_version")
            if feature == MV:
                assert level.version_name == f"{entry['release']}-{entry['iv']}"
                assert level.metadata_changed == entry["metadata_changed"]


def test_metadata_version_names_both_ways() -> None:
    assert CATALOG.metadata_version_name(21) == "3.9-IV0"
    assert CATALOG.metadata_version_level("3.9-IV0") == 21
    assert CATALOG.metadata_version_name(1) == "3.0-IV1"
    assert CATALOG.metadata_version_level(" 21 ") == 21
    for level in CATALOG.levels(MV):
        assert CATALOG.metadata_version_level(CATALOG.metadata_version_name(level.level)) == level.level


@pytest.mark.parametrize(
    ("release", "level"), [("3.0", 1), ("3.3", 7), ("3.7", 19), ("3.8", 20), ("3.9", 21), ("4.0", 25)]
)
def test_a_bare_release_means_its_latest_iv(release: str, level: int) -> None:
    assert CATALOG.metadata_version_level(release) == level


@pytest.mark.parametrize("name", ["2.8", "3.9-IV9", "IBP_3_9_IV0", "99", "", "latest"])
def test_unknown_metadata_versions_are_refused(name: str) -> None:
    with pytest.raises(FeatureError, match=r"3\.0-IV1 to 4\.4-IV2"):
        CATALOG.metadata_version_level(name)


def test_unknown_lookups() -> None:
    with pytest.raises(FeatureError):
        CATALOG.metadata_version_name(0)
    with pytest.raises(FeatureError, match=r"known: eligible\.leader\.replicas\.version"):
        CATALOG.levels("test.feature.version")
    assert CATALOG.get("test.feature.version", 1) is None
    assert dict(CATALOG.dependencies("test.feature.version", 1)) == {}
    assert CATALOG.describe("test.feature.version", 1) == "test.feature.version 1"
    assert issubclass(FeatureError, NegotiationError)


def test_dependencies_and_descriptions() -> None:
    assert dict(CATALOG.dependencies(KRAFT, 1)) == {MV: 21}
    assert dict(CATALOG.dependencies(KRAFT, 0)) == {}
    assert dict(CATALOG.dependencies(GROUP, 1)) == {}
    assert CATALOG.describe(MV, 21) == "metadata.version 21 (3.9-IV0)"
    assert CATALOG.describe(MV, 99) == "metadata.version 99"
    assert CATALOG.describe(KRAFT, 1) == "kraft.version 1"
    assert CATALOG.get(GROUP, 1) is not None
    assert CATALOG.get(GROUP, 1).bootstrap_metadata_version == 22  # type: ignore[union-attr]


# -- can_finalize -----------------------------------------------------------------------------


def test_every_broker_supports_the_level() -> None:
    cluster = [broker("b1", metadata_version="1-21"), broker("b2", metadata_version="1-25")]
    verdict = can_finalize(MV, 21, cluster, finalized={MV: 20})
    assert verdict.ok and verdict
    assert verdict.blocking_brokers == () and verdict.blocking_dependencies == ()
    assert verdict.reason.startswith("metadata.version 21 (3.9-IV0) can be finalized")


def test_a_broker_with_a_lower_range_blocks() -> None:
    cluster = [broker("b1", metadata_version="1-21"), broker("b2", metadata_version="1-20")]
    verdict = can_finalize(MV, 21, cluster, finalized={MV: 20})
    assert not verdict
    assert verdict.blocking_brokers == (BlockingBroker("b2", MV, 21, VersionRange(1, 20), True),)
    assert "broker b2 supports metadata.version 1-20 (3.0-IV1 to 3.8-IV0) only" in verdict.reason


def test_a_broker_lacking_the_feature_supports_level_zero_only() -> None:
    cluster = [broker("b1", group_version="0-1"), broker("old")]
    verdict = can_finalize(GROUP, 1, cluster)
    assert verdict.blocking_brokers == (BlockingBroker("old", GROUP, 1, VersionRange(0, 0), False),)
    assert "broker old does not list group.version" in verdict.reason
    assert can_finalize(GROUP, 0, cluster).ok  # disabling never needs support


def test_kraft_version_1_needs_metadata_version_21() -> None:
    cluster = [broker(f"b{i}", metadata_version="1-25", kraft_version="0-1") for i in range(3)]
    verdict = can_finalize(KRAFT, 1, cluster, finalized={MV: 20})
    assert not verdict.ok
    assert verdict.blocking_brokers == ()
    assert verdict.blocking_dependencies == (BlockingDependency(MV, 21, 20, KRAFT, 1),)
    assert verdict.reason == (
        "kraft.version 1 cannot be finalized: kraft.version 1 requires metadata.version 21"
        " (3.9-IV0) or higher, but metadata.version would be 20 (3.8-IV0)."
    )
    assert can_finalize(KRAFT, 1, cluster, finalized={MV: 21}).ok
    assert can_finalize(KRAFT, 1, cluster, finalized={MV: 25}).ok
    # Nothing finalized at all: metadata.version counts as level 0.
    unset = can_finalize(KRAFT, 1, cluster)
    assert unset.blocking_dependencies == (BlockingDependency(MV, 21, 0, KRAFT, 1),)
    assert "metadata.version would not be finalized (level 0)" in unset.reason


def test_finalizing_the_dependency_in_the_same_request_meets_it() -> None:
    cluster = [broker("b1", metadata_version="1-25", kraft_version="0-1")]
    verdict = can_finalize_all({KRAFT: 1, MV: 21}, cluster, finalized={MV: 20})
    assert verdict.ok
    assert verdict.reason.startswith("kraft.version 1 and metadata.version 21 (3.9-IV0) can be")
    too_low = can_finalize_all({KRAFT: 1, MV: 20}, cluster, finalized={MV: 19})
    assert too_low.blocking_dependencies == (BlockingDependency(MV, 21, 20, KRAFT, 1),)


def test_lowering_a_dependency_below_a_finalized_dependent_blocks() -> None:
    cluster = [broker("b1", metadata_version="1-25", kraft_version="0-1")]
    verdict = can_finalize(MV, 20, cluster, finalized={MV: 21, KRAFT: 1})
    assert verdict.blocking_dependencies == (BlockingDependency(MV, 21, 20, KRAFT, 1),)
    # An unrelated change does not trip over an (odd) existing state.
    assert can_finalize(GROUP, 0, [broker("b1")], finalized={MV: 20, KRAFT: 1}).ok


def test_the_reason_names_every_blocker() -> None:
    cluster = [
        broker("b1", metadata_version="1-25", kraft_version="0-1"),
        broker("b2", metadata_version="1-20"),
        broker("b3", metadata_version="1-19", kraft_version="0-0"),
    ]
    verdict = can_finalize_all({KRAFT: 1, MV: 20}, cluster, finalized={MV: 18})
    assert [b.node for b in verdict.blocking_brokers] == ["b2", "b3", "b3"]
    assert len(verdict.blocking_dependencies) == 1
    for fragment in (
        "broker b2 does not list kraft.version",
        "broker b3 supports kraft.version 0 only",
        "broker b3 supports metadata.version 1-19 (3.0-IV1 to 3.7-IV4) only",
        "kraft.version 1 requires metadata.version 21 (3.9-IV0) or higher",
    ):
        assert fragment in verdict.reason


@pytest.mark.parametrize(
    ("targets", "brokers"),
    [
        ({}, [broker("b1")]),
        ({GROUP: 1}, []),
        ({GROUP: -1}, [broker("b1")]),
        ({MV: 0}, [broker("b1", metadata_version="1-25")]),
    ],
)
def test_bad_requests_are_refused(targets: dict[str, int], brokers: list[BrokerFeatures]) -> None:
    with pytest.raises(FeatureError):
        can_finalize_all(targets, brokers)


def test_max_safe_level() -> None:
    cluster = [
        broker("b1", metadata_version="1-25", kraft_version="0-1"),
        broker("b2", metadata_version="1-22", kraft_version="0-1"),
    ]
    assert max_safe_level(MV, cluster) == 22
    assert max_safe_level(KRAFT, cluster, {MV: 21}) == 1
    assert max_safe_level(KRAFT, cluster, {MV: 20}) == 0  # 1 would need metadata.version 21
    assert max_safe_level(GROUP, cluster) == 0  # nobody lists it
    disjoint = [broker("b1", metadata_version="1-5"), broker("b2", metadata_version="9-12")]
    assert max_safe_level(MV, disjoint) is None
    assert max_safe_level(MV, [broker("b1")]) is None  # metadata.version cannot be 0
    with pytest.raises(FeatureError):
        max_safe_level(MV, [])


# -- change classification -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("feature", "current", "target", "kind", "upgrade_type", "format_changes"),
    [
        (MV, 21, 21, ChangeKind.UNCHANGED, 1, ()),
        (MV, 20, 21, ChangeKind.UPGRADE, 1, ()),
        (MV, 0, 21, ChangeKind.UPGRADE, 1, ()),
        (MV, 21, 19, ChangeKind.SAFE_DOWNGRADE, 2, ()),  # 20 and 21 changed no metadata
        (MV, 23, 22, ChangeKind.UNSAFE_DOWNGRADE, 3, (23,)),
        (MV, 25, 20, ChangeKind.UNSAFE_DOWNGRADE, 3, (23,)),
        (MV, 29, 25, ChangeKind.SAFE_DOWNGRADE, 2, ()),  # 4.1 and 4.2 changed no metadata (4.4.0 jar)
        (MV, 33, 29, ChangeKind.UNSAFE_DOWNGRADE, 3, (30, 32, 33)),
        (MV, 35, 33, ChangeKind.UNSAFE_DOWNGRADE, 3, (34, 35)),  # unknown levels: no vouching
        (TXN, 2, 1, ChangeKind.SAFE_DOWNGRADE, 2, ()),
        (GROUP, 1, 0, ChangeKind.DISABLE, 2, ()),
        (KRAFT, 0, 1, ChangeKind.UPGRADE, 1, ()),
    ],
)
def test_classify_change(
    feature: str,
    current: int,
    target: int,
    kind: ChangeKind,
    upgrade_type: int,
    format_changes: tuple[int, ...],
) -> None:
    change = classify_change(feature, current, target)
    assert (change.kind, change.upgrade_type, change.format_changes) == (
        kind,
        upgrade_type,
        format_changes,
    )


def test_classify_refuses_nonsense() -> None:
    with pytest.raises(FeatureError):
        classify_change(MV, 21, 0)
    with pytest.raises(FeatureError):
        classify_change(GROUP, -1, 1)


# -- merge, by example (properties live in tests/property/test_features_merge.py) ----------------


def test_merge_keeps_the_newest_epoch_and_reports_stale_nodes() -> None:
    mv = {MV: VersionRange(21, 21)}
    view = merge_finalized(
        [
            FinalizedObservation("b1", 7, {MV: VersionRange(22, 22)}),
            FinalizedObservation("b2", 5, mv),
            FinalizedObservation("b3", -1),
            FinalizedObservation("b1", 3, mv),  # late answer from b1: older, ignored
        ]
    )
    assert (view.epoch, view.levels, view.sources) == (7, {MV: 22}, ("b1",))
    assert view.stale == (StaleObservation("b2", 5, 7),)
    assert view.unknown_epoch == ("b3",)
    assert view.level(MV) == 22 and view.level(KRAFT) == 0
    assert merge_finalized([]) == FinalizedView()


def test_observations_validate_and_freeze() -> None:
    with pytest.raises(FeatureError):
        FinalizedObservation("b1", -2)
    with pytest.raises(FeatureError):
        FinalizedObservation("b1", 1, {MV: 21})  # type: ignore[dict-item]
    source = {MV: VersionRange(21, 21)}
    observation = FinalizedObservation("b1", 1, source)
    source[KRAFT] = VersionRange(1, 1)
    assert KRAFT not in observation.features
