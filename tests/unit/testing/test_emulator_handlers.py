"""Metadata, FindCoordinator and DescribeCluster answers of the emulated brokers."""

from __future__ import annotations

import pytest

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.protocol.messages import (
    DescribeClusterRequest,
    FindCoordinatorRequest,
    MetadataRequest,
)
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.testing.emulator import profile_for
from kafkacompat.testing.emulator.state import java_string_hash
from tests.unit.testing.emulator_harness import Close, Harness, cluster

T = MetadataRequest.MetadataRequestTopic


def test_java_string_hash_matches_java() -> None:
    # Values of java.lang.String#hashCode.
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("consumer-group-1") == java_string_hash("consumer-group-1")
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00  # a surrogate pair: two units


# -- Metadata -----------------------------------------------------------------------------------


def test_metadata_lists_brokers_controller_cluster_id_and_topics() -> None:
    state = cluster("2.3", "2.3", "2.3", topics={"orders": 3, "audit": 1}, cluster_id="c-1")
    reply = Harness(state).call(MetadataRequest(topics=None), 8)
    assert [(b.node_id, b.host, b.port) for b in reply.brokers] == [
        (1, "127.0.0.1", 9000),
        (2, "127.0.0.1", 9001),
        (3, "127.0.0.1", 9002),
    ]
    assert reply.cluster_id == "c-1" and reply.controller_id == 1
    assert [t.name for t in reply.topics] == ["audit", "orders"]
    orders = reply.topics[1]
    leaders = [p.leader_id for p in orders.partitions]
    assert len(leaders) == 3 and set(leaders) == {1, 2, 3}
    assert all(p.replica_nodes == [p.leader_id] == p.isr_nodes for p in orders.partitions)


def test_metadata_v0_empty_list_means_all_and_v1_empty_list_means_none() -> None:
    state = cluster("2.3", topics={"t": 1})
    assert [t.name for t in Harness(state).call(MetadataRequest(topics=[]), 0).topics] == ["t"]
    assert Harness(state).call(MetadataRequest(topics=[]), 1).topics == []
    unknown = Harness(state).call(MetadataRequest(topics=[T(name="nope")]), 1).topics[0]
    assert unknown.error_code == 3 and unknown.name == "nope"


def test_metadata_topic_ids_from_v10_and_lookup_by_id() -> None:
    state = cluster("3.9", topics={"t": 1})
    topic = Harness(state).call(MetadataRequest(topics=None), 10).topics[0]
    assert topic.topic_id == state.topic_id("t") and topic.topic_id.int != 0
    by_id = Harness(state).call(MetadataRequest(topics=[T(topic_id=topic.topic_id, name=None)]), 12)
    assert by_id.topics[0].name == "t"
    assert Harness(state).call(MetadataRequest(topics=None), 9).topics[0].topic_id.int == 0


def test_kraft_brokers_name_a_broker_as_controller() -> None:
    state = cluster("3.9/kraft-controller", "3.9/kraft-broker", "3.9/kraft-broker")
    assert state.controller_id == 1
    reply = Harness(state, 2).call(MetadataRequest(topics=None), 12)
    assert [b.node_id for b in reply.brokers] == [2, 3]  # controllers are not brokers
    assert reply.controller_id == 2
    assert Harness(cluster("3.9", "3.9")).call(MetadataRequest(topics=None), 12).controller_id == 1


# -- FindCoordinator ----------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["0.8.2", "0.11.0", "2.3", "3.0", "3.9", "4.2"])
def test_find_coordinator_every_version_of_a_release_agrees(release: str) -> None:
    kind = "kraft-broker" if release == "4.2" else None
    spec = release if kind is None else f"{release}/{kind}"
    state = cluster(spec, spec, spec)
    versions: VersionRange = profile_for(release, kind).apis[10]
    expected = state.coordinator_for("group-a")
    assert expected is not None
    for version in range(versions.lowest, min(versions.highest, 6) + 1):
        harness = Harness(state, 2)
        if version >= 4:
            reply = harness.call(FindCoordinatorRequest(coordinator_keys=["group-a"]), version)
            (answer,) = reply.coordinators
            assert (answer.key, answer.error_code) == ("group-a", 0)
        else:
            answer = harness.call(FindCoordinatorRequest(key="group-a"), version)
            assert answer.error_code == 0
        assert (answer.node_id, answer.port) == (expected.node_id, expected.port)


def test_batched_lookups_answer_each_key_with_its_own_result() -> None:
    state = cluster("3.0", "3.0", "3.0", coordinator_errors={"loading": 14, "gone": 15})
    keys = [f"group-{i}" for i in range(12)] + ["loading", "gone"]
    reply = Harness(state).call(FindCoordinatorRequest(coordinator_keys=keys), 4)
    by_key = {c.key: c for c in reply.coordinators}
    assert list(by_key) == keys
    assert {c.node_id for k, c in by_key.items() if k.startswith("group-")} == {1, 2, 3}
    assert (by_key["loading"].error_code, by_key["loading"].node_id) == (14, -1)
    assert by_key["gone"].error_code == 15 and by_key["gone"].error_message
    single = Harness(state).call(FindCoordinatorRequest(key="loading"), 3)
    assert single.error_code == 14 and single.node_id == -1


def test_transactional_ids_use_the_same_placement_and_unknown_key_types_are_invalid() -> None:
    state = cluster("3.9", "3.9")
    txn = Harness(state).call(FindCoordinatorRequest(key="tx-1", key_type=1), 3)
    expected = state.coordinator_for("tx-1")
    assert expected is not None and txn.node_id == expected.node_id
    bad = Harness(state).call(FindCoordinatorRequest(coordinator_keys=["k"], key_type=7), 4)
    assert bad.coordinators[0].error_code == 42


def test_coordinators_are_deterministic_across_clusters_of_different_releases() -> None:
    old, new = cluster("2.8", "2.8", "2.8"), cluster("3.0", "3.0", "3.0")
    keys = [f"g{i}" for i in range(40)]
    placement_old = [getattr(old.coordinator_for(k), "node_id", None) for k in keys]
    placement_new = [getattr(new.coordinator_for(k), "node_id", None) for k in keys]
    assert placement_old == placement_new and len(set(placement_old)) == 3


# -- DescribeCluster ----------------------------------------------------------------------------


def test_describe_cluster_lists_brokers_or_controllers_by_endpoint() -> None:
    state = cluster("3.9/kraft-controller", "3.9/kraft-broker", "3.9/kraft-broker", cluster_id="abc")
    brokers = Harness(state, 2).call(DescribeClusterRequest(), 1)
    assert (brokers.error_code, brokers.endpoint_type, brokers.cluster_id) == (0, 1, "abc")
    assert [b.broker_id for b in brokers.brokers] == [2, 3] and brokers.controller_id == 2
    controllers = Harness(state, 1).call(DescribeClusterRequest(endpoint_type=2), 1)
    assert [b.broker_id for b in controllers.brokers] == [1] and controllers.controller_id == 1
    assert controllers.endpoint_type == 2


def test_describe_cluster_refuses_the_wrong_endpoint_type() -> None:
    state = cluster("3.9/kraft-controller", "3.9/kraft-broker")
    assert Harness(state, 2).call(DescribeClusterRequest(endpoint_type=2), 1).error_code == 114
    assert Harness(state, 1).call(DescribeClusterRequest(endpoint_type=1), 1).error_code == 114
    assert Harness(state, 2).call(DescribeClusterRequest(endpoint_type=9), 1).error_code == 115
    assert Harness(state, 1).call(DescribeClusterRequest(), 0).error_code == 42  # v0: INVALID_REQUEST


def test_describe_cluster_exists_only_where_the_release_has_it() -> None:
    assert Harness(cluster("2.7")).send(DescribeClusterRequest(), 0) == [Close()]
    assert Harness(cluster("2.8")).call(DescribeClusterRequest(), 0).error_code == 0


def test_cluster_state_validation() -> None:
    with pytest.raises(EmulatorConfigError):
        cluster("3.9", topics={"t": 0})
    with pytest.raises(EmulatorConfigError):
        cluster("3.9", controller_id=7)
