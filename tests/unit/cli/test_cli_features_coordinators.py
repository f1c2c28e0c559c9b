"""features (argument parsing, result sentences, describe) and coordinators rendering, without a broker."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from kafkacompat.cli.coordinators import coordinators_document, read_keys_file, render_text
from kafkacompat.cli.feature_updates import (
    Outcome,
    blocked_outcomes,
    parse_updates,
    refused_outcomes,
    result_sentence,
    wrong_direction,
)
from kafkacompat.cli.features_describe import describe_document, describe_lines, kafka_lines
from kafkacompat.cluster.coordinator_lookup import CoordinatorLookup
from kafkacompat.cluster.features_admin import ClusterFeatures, NodeFeatures
from kafkacompat.errors import FeatureError
from kafkacompat.negotiation.coordinators import CoordinatorFound, CoordinatorKeyType, KeyLookupFailure
from kafkacompat.negotiation.features import (
    BrokerFeatures,
    FinalizedObservation,
    can_finalize_all,
    merge_finalized,
)
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.transport.cluster import BrokerAddress

# -- parsing --------------------------------------------------------------------------------


def test_parse_feature_levels_and_release_version() -> None:
    assert parse_updates("upgrade", ["kraft.version=1"], "3.9-IV0") == {
        "metadata.version": 21,
        "kraft.version": 1,
    }
    assert parse_updates("upgrade", ["metadata.version=3.8-IV0"], None) == {"metadata.version": 20}
    assert parse_updates("downgrade", [" group.version = 0 "], None) == {"group.version": 0}
    assert parse_updates("disable", ["kraft.version", "group.version=0"], None) == {
        "kraft.version": 0,
        "group.version": 0,
    }


@pytest.mark.parametrize(
    ("op", "features", "release", "message"),
    [
        ("upgrade", [], None, "You must specify at least one feature to upgrade"),
        ("disable", [], None, "You must specify at least one feature to disable"),
        (
            "upgrade",
            ["kraft.version"],
            None,
            "Can't parse feature=level string kraft.version: equals sign not found.",
        ),
        (
            "upgrade",
            ["kraft.version=one"],
            None,
            "Can't parse feature=level string kraft.version=one: unable to parse one as a short.",
        ),
        ("upgrade", ["kraft.version=40000"], None, "unable to parse 40000 as a short."),
        ("upgrade", ["a=1", "a=2"], None, "Feature a was specified more than once."),
        (
            "upgrade",
            ["metadata.version=20"],
            "3.9-IV0",
            "Feature metadata.version was specified more than once.",
        ),
        ("upgrade", [], "9.9-IV9", "unknown metadata.version '9.9-IV9'"),
        ("disable", ["kraft.version=1"], None, "disable takes feature names only"),
    ],
)
def test_parse_errors_use_kafkas_sentences(
    op: str, features: list[str], release: str | None, message: str
) -> None:
    with pytest.raises(FeatureError) as caught:
        parse_updates(op, features, release)
    assert message in str(caught.value)


def test_result_sentences_are_kafkas() -> None:
    ok, bad = Outcome("metadata.version", 21), Outcome("kraft.version", 1, "Bad level.")
    assert result_sentence("upgrade", ok, dry_run=False) == "metadata.version was upgraded to 21."
    assert result_sentence("upgrade", ok, dry_run=True) == "metadata.version can be upgraded to 21."
    assert result_sentence("downgrade", ok, dry_run=False) == "metadata.version was downgraded to 21."
    assert (
        result_sentence("disable", Outcome("kraft.version", 0), dry_run=False)
        == "kraft.version was disabled."
    )
    assert (
        result_sentence("disable", Outcome("kraft.version", 0), dry_run=True)
        == "kraft.version can be disabled."
    )
    assert (
        result_sentence("upgrade", bad, dry_run=False) == "Could not upgrade kraft.version to 1. Bad level."
    )
    assert result_sentence("upgrade", bad, dry_run=True) == "Can not upgrade kraft.version to 1. Bad level."
    assert result_sentence("disable", Outcome("x", 0, "No."), dry_run=False) == "Could not disable x. No."


def test_wrong_direction() -> None:
    current = {"metadata.version": 21}
    assert (
        "use downgrade" in wrong_direction("upgrade", {"metadata.version": 20}, current)["metadata.version"]
    )
    assert "use upgrade" in wrong_direction("downgrade", {"kraft.version": 1}, current)["kraft.version"]
    assert wrong_direction("upgrade", {"metadata.version": 21, "kraft.version": 1}, current) == {}


class Brokers:
    brokers = MappingProxyType({1: BrokerAddress(1, "h1", 1), 2: BrokerAddress(2, "h2", 2)})


def test_blocked_outcomes_name_brokers_and_dependencies() -> None:
    brokers = [
        BrokerFeatures(
            "h1:1", {"metadata.version": VersionRange(1, 21), "kraft.version": VersionRange(0, 1)}
        ),
        BrokerFeatures("h2:2", {"metadata.version": VersionRange(1, 20)}),
    ]
    targets = {"metadata.version": 21, "kraft.version": 1, "group.version": 0}
    verdict = can_finalize_all(targets, brokers, finalized={"metadata.version": 20})
    outcomes = {o.feature: o.error for o in blocked_outcomes(targets, verdict, Brokers())}
    assert outcomes["metadata.version"] is not None
    assert (
        "node 2 at h2:2 supports metadata.version 1-20 (3.0-IV1 to 3.8-IV0) only"
        in outcomes["metadata.version"]
    )
    assert outcomes["kraft.version"] is not None
    assert (
        "node 2 at h2:2 does not list kraft.version, so it supports level 0 only" in outcomes["kraft.version"]
    )
    assert outcomes["group.version"] is not None and outcomes["group.version"].startswith("Not sent: ")


def test_refusal_goes_to_the_feature_it_names() -> None:
    outcomes = refused_outcomes(
        {"metadata.version": 14, "kraft.version": 0}, "downgrading metadata.version from 21 to 14 is unsafe"
    )
    assert [(o.feature, o.error) for o in outcomes] == [
        ("kraft.version", "Not sent: metadata.version in the same request was refused."),
        ("metadata.version", "Downgrading metadata.version from 21 to 14 is unsafe."),
    ]
    assert [o.error for o in refused_outcomes({"a": 1}, "nothing named")] == ["Nothing named."]


def test_describe_without_any_feature() -> None:
    empty = ClusterFeatures(
        MappingProxyType({1: NodeFeatures(1, "h1:1", {}, {}, -1, "handshake")}),
        merge_finalized([FinalizedObservation("h1:1", -1, {})]),
        MappingProxyType({}),
    )
    assert describe_lines(empty) == ["Checked on 1 broker(s): no broker supports or finalizes any feature"]


def test_describe_a_controller_that_gives_no_finalized_level_or_epoch() -> None:
    # What a real Kafka 3.5.2 controller answers (tests/data/real_kafka/3.5.2-kraft-split.json): no
    # DescribeCluster, so no node id; metadata.version 1-11 supported, nothing finalized, epoch -1.
    node = NodeFeatures(
        -1, "127.0.0.1:9093", {"metadata.version": VersionRange(1, 11)}, {}, -1, "ApiVersions v3"
    )
    features = ClusterFeatures(
        MappingProxyType({-1: node}),
        merge_finalized([FinalizedObservation(node.node, -1, {})]),
        MappingProxyType({}),
    )
    lines = describe_lines(features, kind="controller")
    # Kafka's spelling, as its FeatureCommand prints level 0 and an empty epoch (kafka-tools 4.0.2).
    assert lines[0] == (
        "Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.5-IV2\t"
        "FinalizedVersionLevel: UNKNOWN 0\tEpoch: -"
    )
    assert lines[2] == (
        "Checked on 1 controller(s): no answer gave a finalized level or an epoch; Kafka's controllers "
        "before 3.6 leave them out, a broker (--bootstrap-server) gives them"
    )
    assert lines[3:] == [
        "Highest level every controller supports, dependencies met:",
        "\tmetadata.version: 11 (3.5-IV2)",
    ]
    assert "-1" not in "\n".join(lines) and "node" not in "\n".join(lines)
    broker_lines = describe_lines(features)
    assert broker_lines[2] == "Checked on 1 broker(s): no answer gave a finalized level or an epoch"


def test_a_node_without_an_id_is_named_by_its_address() -> None:
    nodes = {
        -1: NodeFeatures(
            -1,
            "h1:1",
            {"metadata.version": VersionRange(1, 21)},
            {"metadata.version": VersionRange(21, 21)},
            7,
            "v4",
        ),
    }
    view = merge_finalized(FinalizedObservation(n.node, n.epoch, n.finalized) for n in nodes.values())
    features = ClusterFeatures(MappingProxyType(nodes), view, MappingProxyType({}))
    assert "Checked on 1 controller(s): finalized epoch 7 from h1:1" in describe_lines(
        features, kind="controller"
    )


# -- describe -------------------------------------------------------------------------------


def cluster_features() -> ClusterFeatures:
    nodes = {
        1: NodeFeatures(
            1,
            "h1:1",
            {"metadata.version": VersionRange(1, 21), "kraft.version": VersionRange(0, 1)},
            {"metadata.version": VersionRange(21, 21)},
            7,
            "ApiVersions v4",
        ),
        2: NodeFeatures(
            2,
            "h2:2",
            {"metadata.version": VersionRange(1, 20)},
            {"metadata.version": VersionRange(20, 20)},
            6,
            "ApiVersions v3",
        ),
    }
    view = merge_finalized(FinalizedObservation(n.node, n.epoch, n.finalized) for n in nodes.values())
    return ClusterFeatures(MappingProxyType(nodes), view, MappingProxyType({}))


def test_describe_kafka_lines_read_the_cluster_as_a_whole() -> None:
    assert kafka_lines(cluster_features()) == [
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 0\t"
        "FinalizedVersionLevel: 0\tEpoch: 7",
        "Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.8-IV0\t"
        "FinalizedVersionLevel: 3.9-IV0\tEpoch: 7",
    ]


def test_describe_adds_what_differs_by_broker() -> None:
    lines = describe_lines(cluster_features())
    text = "\n".join(lines)
    assert "Checked on 2 broker(s): finalized epoch 7 from node 1" in text
    assert "\tnode 2 is behind: it answered epoch 6" in text
    assert "\tkraft.version: node 1 supports 0 to 1; node 2 does not list it" in text
    assert "\tmetadata.version: 20 (3.8-IV0)" in text
    assert describe_lines(cluster_features(), brief=True) == kafka_lines(cluster_features())
    document = describe_document(cluster_features())
    assert document["finalized_features_epoch"] == 7
    assert document["behind"] == [{"node_id": 2, "epoch": 6}]
    assert {f["name"]: f["max_safe_level"] for f in document["features"]} == {
        "kraft.version": 0,
        "metadata.version": 20,
    }


# -- coordinators ---------------------------------------------------------------------------


def lookup(batched: bool) -> CoordinatorLookup:
    found = {"g1": CoordinatorFound("g1", 1, "h1", 9092, "h1:9092")}
    failed = {"g2": KeyLookupFailure("g2", 15, "COORDINATOR_NOT_AVAILABLE", "not yet", True, 3, "h1:9092")}
    return CoordinatorLookup(
        CoordinatorKeyType.GROUP,
        found,
        failed,
        3 if not batched else 1,
        1 if batched else 0,
        3,
        3,
        (4,) if batched else (0,),
        (),
        (),
        0.01,
    )


def test_coordinators_text_and_json() -> None:
    lines = render_text([("group", ["g1", "g2"], lookup(batched=True))])
    assert lines[0].split() == ["KEY", "TYPE", "COORDINATOR", "(ID)"]
    assert lines[1].split() == ["g1", "group", "h1:9092", "(1)"]
    assert lines[2].split(maxsplit=2) == ["g2", "group", "ERROR: COORDINATOR_NOT_AVAILABLE: not yet"]
    assert lines[-1] == (
        "2 group key(s): 1 found, 1 failed; "
        "FindCoordinator v4, 1 batched request(s), 3 round trip(s), 3 round(s)"
    )
    document = coordinators_document([("group", ["g1", "g2"], lookup(batched=False))])
    assert document["coordinators"] == [
        {"key": "g1", "key_type": "group", "node_id": 1, "host": "h1", "port": 9092, "error": None},
        {
            "key": "g2",
            "key_type": "group",
            "node_id": None,
            "host": None,
            "port": None,
            "error": "COORDINATOR_NOT_AVAILABLE: not yet",
        },
    ]
    assert (document["requests"], document["batched"], document["round_trips"]) == (3, False, 3)


def test_keys_file(tmp_path: Path) -> None:
    path = tmp_path / "groups.txt"
    path.write_text("# groups\n\ng1\n  g2  \n#g3\n", encoding="utf-8")
    assert read_keys_file(path) == ["g1", "g2"]
