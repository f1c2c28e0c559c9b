"""UpdateFeatures requests at every version, and their results read back per feature."""

from __future__ import annotations

import pytest

from kafkacompat.errors import FeatureError, UnsupportedVersionError
from kafkacompat.negotiation.feature_updates import (
    FeatureUpdate,
    UpgradeType,
    build_update_features,
    plan_feature_updates,
    read_update_features,
)
from kafkacompat.protocol.messages import UpdateFeaturesRequest, UpdateFeaturesResponse


def test_plan_classifies_upgrades_and_downgrades() -> None:
    updates = plan_feature_updates(
        {"metadata.version": 21, "group.version": 0, "kraft.version": 1},
        {"metadata.version": 20, "group.version": 1},
    )
    by_name = {u.feature: u for u in updates}
    assert by_name["metadata.version"].upgrade_type is UpgradeType.UPGRADE
    assert by_name["kraft.version"].upgrade_type is UpgradeType.UPGRADE
    assert by_name["group.version"].upgrade_type is UpgradeType.SAFE_DOWNGRADE
    assert by_name["group.version"].verb == "disable"


def test_metadata_downgrade_across_format_changes_needs_unsafe() -> None:
    with pytest.raises(FeatureError, match="unsafe"):
        plan_feature_updates({"metadata.version": 7}, {"metadata.version": 21})
    (update,) = plan_feature_updates({"metadata.version": 7}, {"metadata.version": 21}, unsafe=True)
    assert update.upgrade_type is UpgradeType.UNSAFE_DOWNGRADE


def test_v0_uses_allow_downgrade_and_refuses_what_it_cannot_say() -> None:
    safe = FeatureUpdate("group.version", 0, UpgradeType.SAFE_DOWNGRADE, current=1)
    request = build_update_features([safe], 0)
    assert request.feature_updates[0].allow_downgrade is True
    assert UpdateFeaturesRequest.decode(request.encode(0), 0) == request
    with pytest.raises(UnsupportedVersionError, match="dry run"):
        build_update_features([safe], 0, validate_only=True)
    unsafe = FeatureUpdate("metadata.version", 7, UpgradeType.UNSAFE_DOWNGRADE, current=21)
    with pytest.raises(UnsupportedVersionError, match="unsafe"):
        build_update_features([unsafe], 0)


@pytest.mark.parametrize("version", [1, 2])
def test_v1_plus_use_upgrade_type_and_validate_only(version: int) -> None:
    unsafe = FeatureUpdate("metadata.version", 7, UpgradeType.UNSAFE_DOWNGRADE, current=21)
    request = build_update_features([unsafe], version, validate_only=True)
    key = request.feature_updates[0]
    assert (key.upgrade_type, request.validate_only, key.allow_downgrade) == (3, True, False)
    assert UpdateFeaturesRequest.decode(request.encode(version), version) == request


def test_results_per_feature_before_v2_and_from_top_level_at_v2() -> None:
    updates = plan_feature_updates({"metadata.version": 21, "kraft.version": 1}, {"metadata.version": 20})
    v1 = UpdateFeaturesResponse(
        results=[
            UpdateFeaturesResponse.UpdatableFeatureResult(feature="kraft.version", error_code=0),
            UpdateFeaturesResponse.UpdatableFeatureResult(
                feature="metadata.version", error_code=95, error_message="not supported by broker 2"
            ),
        ]
    )
    results = {r.update.feature: r for r in read_update_features(v1, 1, updates)}
    assert results["kraft.version"].sentence() == "kraft.version was upgraded to 1."
    assert results["metadata.version"].sentence() == (
        "Could not upgrade metadata.version to 21. not supported by broker 2"
    )
    assert results["metadata.version"].error_name == "INVALID_UPDATE_VERSION"

    v2 = UpdateFeaturesResponse(error_code=0)
    assert all(r.ok for r in read_update_features(v2, 2, updates, validate_only=True))
    assert (
        read_update_features(v2, 2, updates, validate_only=True)[0]
        .sentence()
        .endswith("can be upgraded to 1.")
    )
    refused = read_update_features(
        UpdateFeaturesResponse(error_code=96, error_message="no"), 2, updates, validate_only=True
    )
    assert refused[0].sentence() == "Can not upgrade kraft.version to 1. no"  # a dry run, as Kafka says it
    failed = UpdateFeaturesResponse(error_code=96, error_message="controller said no")
    assert [r.ok for r in read_update_features(failed, 1, updates)] == [False, False]


def test_a_feature_left_unanswered_is_reported() -> None:
    updates = plan_feature_updates({"kraft.version": 1}, {})
    (result,) = read_update_features(UpdateFeaturesResponse(results=[]), 0, updates)
    assert not result.ok and "did not answer" in result.sentence()


def test_disable_sentence() -> None:
    (update,) = plan_feature_updates({"group.version": 0}, {"group.version": 1})
    result = read_update_features(UpdateFeaturesResponse(), 2, [update])[0]
    assert result.sentence() == "group.version was disabled."
