"""Several broker connections at once: versions usable everywhere, release and version skew."""

from __future__ import annotations

import random

import pytest

from kafkacompat.errors import UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.cluster_view import ClusterView, build_cluster_view
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.versions import VersionRange

FIND_COORDINATOR = 10
METADATA = 3
JOIN_GROUP = 11


def node(label: str, **by_key: str) -> BrokerCapabilities:
    table = {int(key[1:]): text for key, text in by_key.items()}
    return BrokerCapabilities.from_ranges(label, table)


def test_identical_brokers_agree_everywhere() -> None:
    brokers = [node(f"b{i}:9092", k10="0-4", k3="0-12") for i in range(3)]
    view = build_cluster_view(brokers)
    assert view.nodes == ("b0:9092", "b1:9092", "b2:9092")
    assert view.version_everywhere(FIND_COORDINATOR) == 4
    assert view.version_everywhere(METADATA) == 12
    assert view.version_skew == ()
    agreement = view.agreement(FIND_COORDINATOR)
    assert agreement.lacking == () and not agreement.skewed
    assert agreement.allowed_everywhere == (VersionRange(0, 4),)
    assert "accepted by all 3 broker(s)" in agreement.summary


def test_rolling_upgrade_shows_which_node_picks_what() -> None:
    old = node("old:9092", k10="0-3", k3="0-11")
    new = node("new:9092", k10="0-6", k3="0-12")
    mid = node("mid:9092", k10="0-4", k3="0-12")
    view = build_cluster_view([old, new, mid])
    assert view.version_everywhere(FIND_COORDINATOR) == 3
    assert view.version_everywhere(METADATA) == 11
    skewed = {a.api_key: a for a in view.version_skew}
    assert set(skewed) == {FIND_COORDINATOR, METADATA}
    assert dict(skewed[FIND_COORDINATOR].by_node) == {"mid:9092": 4, "new:9092": 6, "old:9092": 3}
    assert skewed[METADATA].nodes_at(12) == ("mid:9092", "new:9092")
    assert "FindCoordinator differs by node: mid:9092 v4, new:9092 v6, old:9092 v3" in view.describe()


def test_a_broker_lacking_the_api_is_named() -> None:
    view = build_cluster_view([node("a:1", k10="0-4", k11="0-9"), node("b:1", k10="0-4")])
    agreement = view.agreement(JOIN_GROUP)
    assert agreement.everywhere is None
    assert agreement.lacking == ("b:1",)
    assert "does not list JoinGroup" in agreement.reasons["b:1"]
    assert agreement.nodes_at(None) == ("b:1",)
    assert agreement.skewed
    with pytest.raises(UnsupportedVersionError, match="JoinGroup cannot be sent to b:1") as caught:
        view.pick_everywhere(JOIN_GROUP)
    assert caught.value.node == "b:1"
    assert view.pick_everywhere(FIND_COORDINATOR) == 4


def test_an_api_no_broker_lists() -> None:
    view = build_cluster_view([node("a:1", k10="0-4")])
    assert JOIN_GROUP not in view.apis
    assert view.version_everywhere(JOIN_GROUP) is None
    assert view.agreement(JOIN_GROUP).lacking == ("a:1",)
    with pytest.raises(UnsupportedVersionError, match="no broker lists JoinGroup"):
        view.pick_everywhere(JOIN_GROUP)


def test_usable_on_each_node_but_on_no_common_version() -> None:
    policy = VersionPolicy(blocked={FIND_COORDINATOR: "3"})
    view = build_cluster_view([node("a:1", k10="0-3"), node("b:1", k10="3-6")], policy)
    agreement = view.agreement(FIND_COORDINATOR)
    assert dict(agreement.by_node) == {"a:1": 2, "b:1": 6}
    assert agreement.everywhere is None and agreement.lacking == ()
    assert "no version is common to all" in agreement.summary
    assert "a:1 accepts 0-2" in agreement.summary and "b:1 accepts 4-6" in agreement.summary


def test_policy_applies_to_every_node() -> None:
    brokers = [node("a:1", k10="0-6"), node("b:1", k10="0-5")]
    view = build_cluster_view(brokers, VersionPolicy(caps={FIND_COORDINATOR: 4}))
    assert dict(view.agreement(FIND_COORDINATOR).by_node) == {"a:1": 4, "b:1": 4}
    assert view.version_skew == ()


def test_client_ranges_limit_the_apis_considered() -> None:
    view = build_cluster_view(
        [node("a:1", k10="0-6", k3="0-12")], client_ranges={METADATA: VersionRange(0, 9)}
    )
    assert list(view.apis) == [METADATA]
    assert view.version_everywhere(METADATA) == 9


def test_release_skew_groups_nodes_by_guess() -> None:
    brokers = [
        BrokerCapabilities.from_ranges("c:9092", known_api_ranges("3.0", "zk-broker")),
        BrokerCapabilities.from_ranges("a:9092", known_api_ranges("2.8", "zk-broker")),
        BrokerCapabilities.from_ranges("b:9092", known_api_ranges("3.0", "zk-broker")),
    ]
    view = build_cluster_view(brokers)
    assert view.release_skew
    assert [group.nodes for group in view.releases] == [("a:9092",), ("b:9092", "c:9092")]
    assert "2.8" in view.releases[0].guess and "3.0" in view.releases[1].guess
    assert view.version_everywhere(FIND_COORDINATOR) == 3  # 2.8 answers 0-3, 3.0 answers 0-4
    assert dict(view.agreement(FIND_COORDINATOR).by_node) == {
        "a:9092": 3, "b:9092": 4, "c:9092": 4,
    }


def test_same_release_means_no_release_skew() -> None:
    table = known_api_ranges("3.9", "zk-broker")
    view = build_cluster_view([BrokerCapabilities.from_ranges(f"n{i}:1", table) for i in range(2)])
    assert not view.release_skew and view.version_skew == ()


def test_view_is_deterministic_whatever_the_input_order() -> None:
    brokers = [node(f"n{i}:9092", k10=f"0-{i % 7}", k3=f"{i % 3}-12") for i in range(8)]
    first = build_cluster_view(brokers)
    shuffled = brokers[:]
    random.Random(7).shuffle(shuffled)
    second = ClusterView.build(shuffled)
    assert first == second
    assert first.describe() == second.describe()
    assert list(first.apis) == sorted(first.apis)


def test_each_node_keeps_its_own_ranges() -> None:
    a, b = node("a:1", k10="0-3"), node("b:1", k10="0-6")
    build_cluster_view([a, b])
    assert a.broker_range(FIND_COORDINATOR) == VersionRange(0, 3)
    assert b.broker_range(FIND_COORDINATOR) == VersionRange(0, 6)


def test_duplicate_labels_and_empty_clusters() -> None:
    with pytest.raises(ValueError, match="a:1"):
        build_cluster_view([node("a:1", k10="0-3"), node("a:1", k10="0-6")])
    empty = build_cluster_view([])
    assert empty.nodes == () and empty.apis == {} and not empty.release_skew
    assert empty.version_everywhere(FIND_COORDINATOR) is None
