"""UpdateFeatures with controller semantics, per era."""

from __future__ import annotations

from kafkacompat.protocol.messages import ApiVersionsRequest, UpdateFeaturesRequest
from tests.unit.testing.emulator_harness import Harness, cluster

U = UpdateFeaturesRequest.FeatureUpdateKey
UPGRADE, SAFE, UNSAFE = 1, 2, 3


def request(*updates: tuple[str, int, int], validate_only: bool = False) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(
        feature_updates=[U(feature=f, max_version_level=lv, upgrade_type=t) for f, lv, t in updates],
        validate_only=validate_only,
    )


def finalized(harness_state: object, node_id: int = 1) -> tuple[int, dict[str, int]]:
    harness = Harness(harness_state, node_id)  # type: ignore[arg-type]
    reply = harness.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    return reply.finalized_features_epoch, {f.name: f.max_version_level for f in reply.finalized_features}


def test_an_upgrade_every_node_supports_is_applied_and_bumps_the_epoch() -> None:
    state = cluster("3.9/kraft-controller", "3.9/kraft-broker", "3.9/kraft-broker")
    assert finalized(state, 2) == (1, {"metadata.version": 21})
    reply = Harness(state, 2).call(request(("kraft.version", 1, UPGRADE)), 1)  # forwarded by a broker
    assert reply.error_code == 0
    assert [(r.feature, r.error_code) for r in reply.results] == [("kraft.version", 0)]
    assert finalized(state, 3) == (2, {"metadata.version": 21, "kraft.version": 1})


def test_one_old_broker_blocks_the_upgrade() -> None:
    state = cluster(
        "3.9/kraft-broker",
        "3.9/kraft-broker",
        "3.8/kraft-broker",
        finalized_features={"metadata.version": 20},
    )
    reply = Harness(state).call(request(("metadata.version", 21, UPGRADE)), 1)
    (result,) = reply.results
    assert result.error_code == 95 and "broker 3 supports versions 1-20 only" in result.error_message
    assert state.finalized == {"metadata.version": 20} and state.finalized_epoch == 1


def test_a_broker_that_does_not_list_a_feature_supports_level_0_only() -> None:
    state = cluster("3.9/kraft-broker", "3.2/kraft-broker", finalized_features={"metadata.version": 1})
    (result,) = Harness(state).call(request(("kraft.version", 1, UPGRADE)), 1).results
    assert result.error_code == 95 and "broker 2 does not support this feature" in result.error_message


def test_validate_only_judges_without_applying() -> None:
    state = cluster("3.9/kraft-broker")
    reply = Harness(state).call(request(("kraft.version", 1, UPGRADE), validate_only=True), 1)
    assert reply.error_code == 0 and reply.results[0].error_code == 0
    assert state.finalized == {"metadata.version": 21} and state.finalized_epoch == 1


def test_v0_needs_allow_downgrade_and_v1_a_downgrade_type() -> None:
    state = cluster("4.0/kraft-controller", controller_id=1)
    lower = UpdateFeaturesRequest(feature_updates=[U(feature="group.version", max_version_level=0)])
    assert Harness(state).call(lower, 0).error_code == 95  # 4.0: a top-level refusal
    lower.feature_updates[0].allow_downgrade = True
    assert Harness(state).call(lower, 0).error_code == 0
    assert "group.version" not in state.finalized
    assert Harness(state).call(request(("transaction.version", 1, UPGRADE)), 1).error_code == 95
    assert Harness(state).call(request(("transaction.version", 1, SAFE)), 1).error_code == 0
    assert state.finalized["transaction.version"] == 1


def test_metadata_version_downgrades() -> None:
    state = cluster("3.9/kraft-broker")  # finalized 21 (3.9-IV0)
    harness = Harness(state)
    (unsafe,) = harness.call(request(("metadata.version", 20, UNSAFE)), 1).results
    assert unsafe.error_code == 95 and "unsafe" in unsafe.error_message
    (lossy,) = Harness(state).call(request(("metadata.version", 16, SAFE)), 1).results
    assert lossy.error_code == 95 and "level 17" in lossy.error_message  # 3.7-IV2 changed the format
    (safe,) = Harness(state).call(request(("metadata.version", 18, SAFE)), 1).results
    assert safe.error_code == 0 and state.finalized["metadata.version"] == 18
    (removed,) = Harness(state).call(request(("metadata.version", 0, SAFE)), 1).results
    assert removed.error_code == 95 and "cannot be removed" in removed.error_message


def test_dependencies_are_checked_both_ways() -> None:
    state = cluster("3.9/kraft-broker", finalized_features={"metadata.version": 20})
    (needs,) = Harness(state).call(request(("kraft.version", 1, UPGRADE)), 1).results
    assert needs.error_code == 95 and "metadata.version at level 21" in needs.error_message
    both = Harness(state).call(request(("metadata.version", 21, UPGRADE), ("kraft.version", 1, UPGRADE)), 1)
    assert [r.error_code for r in both.results] == [0, 0]
    (dependent,) = Harness(state).call(request(("metadata.version", 20, SAFE)), 1).results
    assert dependent.error_code == 95 and "kraft.version 1 needs metadata.version" in dependent.error_message


def test_before_40_each_feature_stands_alone_and_from_40_the_request_is_all_or_nothing() -> None:
    old = cluster("3.9/kraft-broker")
    reply = Harness(old).call(request(("kraft.version", 1, UPGRADE), ("group.version", 1, UPGRADE)), 1)
    assert reply.error_code == 0
    assert {r.feature: r.error_code for r in reply.results} == {"kraft.version": 0, "group.version": 95}
    assert old.finalized.get("kraft.version") == 1  # the good one was applied
    new = cluster("4.0/kraft-broker", finalized_features={"metadata.version": 25})
    for version in (1, 2):
        reply = Harness(new).call(
            request(("group.version", 1, UPGRADE), ("share.version", 1, UPGRADE)), version
        )
        assert reply.error_code == 95 and "share.version" in reply.error_message
        assert list(reply.results) == []
    assert "group.version" not in new.finalized
    ok = Harness(new).call(request(("group.version", 1, UPGRADE)), 2)
    assert (ok.error_code, list(ok.results)) == (0, [])  # v2 carries no results
    assert new.finalized["group.version"] == 1


def test_only_the_controller_decides() -> None:
    zk = cluster("3.0", "3.0")  # ZooKeeper: broker 1 is the controller
    assert Harness(zk, 2).call(request(("metadata.version", 1, UPGRADE)), 0).error_code == 41
    assert Harness(zk, 1).call(request(("metadata.version", 1, UPGRADE)), 0).error_code == 0
    kraft = cluster("3.9/kraft-controller", "3.9/kraft-controller", "3.9/kraft-broker")
    assert Harness(kraft, 2).call(request(("kraft.version", 1, UPGRADE)), 1).error_code == 41
    assert Harness(kraft, 3).call(request(("kraft.version", 1, UPGRADE)), 1).error_code == 0


def test_malformed_update_lists() -> None:
    state = cluster("3.9/kraft-broker")
    assert Harness(state).call(UpdateFeaturesRequest(), 1).error_code == 42
    twice = request(("kraft.version", 1, UPGRADE), ("kraft.version", 0, SAFE))
    assert Harness(state).call(twice, 1).error_code == 42
    (odd,) = Harness(state).call(request(("kraft.version", 1, 9)), 1).results
    assert odd.error_code == 95 and "upgrade type" in odd.error_message


def test_a_held_broker_keeps_reporting_the_old_features() -> None:
    from kafkacompat.testing.emulator import FeatureSnapshot

    state = cluster("3.9/kraft-broker", "3.9/kraft-broker")
    state.nodes[2].held_features = FeatureSnapshot(1, {"metadata.version": 21})
    Harness(state).call(request(("kraft.version", 1, UPGRADE)), 1)
    assert finalized(state, 1) == (2, {"metadata.version": 21, "kraft.version": 1})
    assert finalized(state, 2) == (1, {"metadata.version": 21})
