"""Release profiles: API tables, ApiVersions eras and KIP-584 feature defaults per release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.releases import RELEASES, ReleaseProfile
from kafkacompat.testing.emulator import (
    ApiVersionsEra,
    custom_profile,
    default_features,
    parse_profile_spec,
    profile_for,
    release_profiles,
)
from kafkacompat.testing.emulator.profile import EMULATOR_CATALOG, latest_metadata_level, parse_release

R = VersionRange


@pytest.mark.parametrize("fact", RELEASES, ids=lambda p: f"{p.release}-{p.kind}")
def test_every_release_of_the_table_has_a_profile_with_its_exact_table(fact: ReleaseProfile) -> None:
    release, kind, apis = fact
    profile = profile_for(release, kind)
    assert {key: (r.lowest, r.highest) for key, r in profile.apis.items()} == dict(apis)
    own = apis.get(18)
    if own is None:
        assert parse_release(release) < (0, 10)
        # 0.9 drops what it cannot handle and keeps serving (a real 0.9.0.1 does); 0.8 closes.
        dropping = parse_release(release) >= (0, 9)
        assert profile.api_versions_era is (ApiVersionsEra.DROPPED if dropping else ApiVersionsEra.ABSENT)
    elif parse_release(release) < (2, 4):
        assert profile.api_versions_era is ApiVersionsEra.EMPTY_ON_UNSUPPORTED
    else:
        assert profile.api_versions_era is ApiVersionsEra.KIP_511


def test_release_profiles_cover_the_whole_table() -> None:
    assert len(release_profiles()) == len(RELEASES) == 61


@pytest.mark.parametrize(
    ("release", "era"),
    [
        ("0.8.0", "absent"),
        ("0.8.2", "absent"),
        ("0.9.0", "dropped"),
        ("0.10.0", "empty-on-unsupported"),
        ("2.3", "empty-on-unsupported"),
        ("2.4", "kip-511"),
        ("3.9", "kip-511"),
    ],
)
def test_era_boundaries(release: str, era: str) -> None:
    assert profile_for(release).api_versions_era == era


def test_kind_defaults_to_zookeeper_where_it_exists_and_kraft_after() -> None:
    assert profile_for("3.9").kind == "zk-broker"
    assert profile_for("4.0").kind == "kraft-broker"
    assert profile_for("2.8", "kraft-controller").is_controller


def test_unknown_release_or_kind_is_a_configuration_error() -> None:
    with pytest.raises(EmulatorConfigError, match="known zk-broker releases"):
        profile_for("9.9", "zk-broker")
    with pytest.raises(EmulatorConfigError):
        profile_for("2.3", "kraft-broker")  # KRaft starts at 2.8
    with pytest.raises(EmulatorConfigError):
        profile_for("3.9", "toaster")
    with pytest.raises(EmulatorConfigError):
        parse_release("three")


def test_spec_strings() -> None:
    assert parse_profile_spec("3.9/kraft-controller").kind == "kraft-controller"
    assert parse_profile_spec("3.9", "kraft-broker").kind == "kraft-broker"
    with pytest.raises(EmulatorConfigError, match="names kind"):
        parse_profile_spec("3.9/kraft-broker", "zk-broker")
    profile = profile_for("2.3")
    assert parse_profile_spec(profile) is profile


def test_latest_metadata_version_per_release() -> None:
    expected = {
        "3.3": 7,
        "3.4": 8,
        "3.5": 11,
        "3.6": 14,
        "3.7": 19,
        "3.8": 20,
        "3.9": 21,
        "4.0": 25,
        "4.1": 27,
        "4.2": 29,
    }
    assert {release: latest_metadata_level(release) for release in expected} == expected
    assert latest_metadata_level("3.2") is None  # metadata.version became a feature in 3.3 (KIP-778)
    assert EMULATOR_CATALOG.metadata_version_name(29) == "4.2-IV1"


def test_a_39_kraft_broker_supports_metadata_version_1_to_21_and_kraft_version_0_to_1() -> None:
    profile = profile_for("3.9", "kraft-broker")
    assert dict(profile.supported_features) == {"metadata.version": R(1, 21), "kraft.version": R(0, 1)}
    assert dict(profile.default_finalized) == {"metadata.version": 21}  # kraft.version 0: static quorum


def test_40_raises_the_lowest_metadata_version_and_adds_group_and_transaction_versions() -> None:
    supported, finalized, reports = default_features("4.0", "kraft-broker")
    assert supported == {
        "metadata.version": R(7, 25),
        "group.version": R(0, 1),
        "kraft.version": R(0, 1),
        "transaction.version": R(0, 2),
        "eligible.leader.replicas.version": R(0, 1),  # supported, not bootstrapped (real 4.0.2)
    }
    assert finalized == {"metadata.version": 25, "group.version": 1, "transaction.version": 2}
    assert reports


def test_41_and_42_features() -> None:
    assert default_features("4.1", "kraft-broker")[0]["eligible.leader.replicas.version"] == R(0, 1)
    supported, finalized, _ = default_features("4.1", "kraft-broker")
    assert supported["share.version"] == R(0, 1) and "share.version" not in finalized  # real 4.1.2
    supported = default_features("4.2", "kraft-controller")[0]
    assert supported["metadata.version"] == R(7, 29)
    assert supported["share.version"] == R(0, 1)
    assert supported["streams.version"] == R(0, 1)


def test_releases_before_33_list_no_features_and_zookeeper_finalizes_nothing() -> None:
    # As the real releases answer (tests/data/real_kafka): epoch -1 means "reports nothing".
    assert default_features("3.2", "kraft-broker") == ({}, {}, False)
    assert default_features("2.6", "zk-broker") == ({}, {}, False)  # no KIP-584 before 2.7
    assert default_features("2.7", "zk-broker") == ({}, {}, True)
    assert default_features("3.9", "zk-broker") == ({}, {}, True)  # no metadata.version either
    assert default_features("3.5", "kraft-controller")[2] is False
    assert default_features("3.6", "kraft-controller")[2] is True


def test_custom_profiles() -> None:
    profile = custom_profile({18: (0, 2), 3: (0, 5)}, kind="zk-broker")
    assert profile.release is None and profile.label == "custom broker (zk-broker)"
    assert profile.api_versions_era is ApiVersionsEra.EMPTY_ON_UNSUPPORTED
    assert custom_profile({3: (0, 1)}).api_versions_era is ApiVersionsEra.ABSENT
    assert custom_profile({18: (0, 4)}, era="absent").api_versions_era is ApiVersionsEra.ABSENT
    widened = profile.with_apis({18: (0, 4), 3: None})
    assert widened.api_versions_era is ApiVersionsEra.KIP_511 and 3 not in widened.apis
    with pytest.raises(EmulatorConfigError):
        custom_profile({3: (5, 1)})
    with pytest.raises(EmulatorConfigError):
        custom_profile({3: "0-1"})  # type: ignore[dict-item]


def test_profiles_are_immutable() -> None:
    profile = profile_for("3.9")
    with pytest.raises(TypeError):
        profile.apis[3] = R(0, 0)  # type: ignore[index]
    assert profile.supports(3, 12) and not profile.supports(3, 13) and not profile.supports(99, 0)
    assert profile.at_least("3.9") and not profile.at_least("4.0")


# -- 4.3 and 4.4: held to what real nodes answered ------------------------------------------

_REAL_ANSWERS = json.loads(
    (Path(__file__).resolve().parents[2] / "data" / "apache_4_3_4_4_api_versions.json").read_text()
)["answers"]


@pytest.mark.parametrize("answer", _REAL_ANSWERS, ids=lambda a: f"{a['release']}-{a['kind']}")
def test_the_4_3_and_4_4_profiles_answer_what_the_real_node_answered(answer: dict[str, Any]) -> None:
    release = answer["release"].rsplit(".", 1)[0]
    profile = profile_for(release, answer["kind"])
    real_apis = {int(key): VersionRange(low, high) for key, (low, high) in answer["apis"].items()}
    assert dict(profile.apis) == real_apis
    supported, finalized, reports = default_features(release, answer["kind"])
    assert reports
    assert {name: (r.lowest, r.highest) for name, r in supported.items()} == {
        name: tuple(r) for name, r in answer["supported_features"].items()
    }
    # kraft.version: the real node was formatted --standalone (a dynamic quorum, level 1);
    # the emulator's clusters model a static quorum, which finalizes no kraft.version.
    real_finalized = {name: high for name, (_, high) in answer["finalized_features"].items()}
    assert real_finalized.pop("kraft.version") == 1
    assert finalized == real_finalized


def test_the_4_4_defaults_are_kafkas_own() -> None:
    from kafkacompat.reference.features import FEATURE_DEFAULTS

    assert FEATURE_DEFAULTS["4.4"]["metadata.version"] == 33
    assert FEATURE_DEFAULTS["4.4"]["share.version"] == 2
    assert FEATURE_DEFAULTS["4.3"]["metadata.version"] == 30
    for release in ("4.3", "4.4"):
        _, finalized, _ = default_features(release, "kraft-broker")
        expected = {k: v for k, v in FEATURE_DEFAULTS[release].items() if k != "kraft.version"}
        assert finalized == expected
