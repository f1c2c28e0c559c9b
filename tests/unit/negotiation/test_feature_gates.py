"""Feature-gated versions: advertised, but usable only at some finalized feature level."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacompat.errors import UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.feature_gates import FEATURE_GATES, gates_for, level_of
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.negotiation.version_policy import VersionChoice
from kafkacompat.protocol.versions import VersionRange


def pick_version(api_key: int, capabilities: BrokerCapabilities, *args: Any, **kwargs: Any) -> int:
    """The one door, spelled with the capabilities second as these cases read best."""
    return capabilities.pick_version(api_key, *args, **kwargs)


def explain(api_key: int, capabilities: BrokerCapabilities, *args: Any, **kwargs: Any) -> VersionChoice:
    return capabilities.explain(api_key, *args, **kwargs)


KAFKA_40 = known_api_ranges("4.0", "kraft-broker")


def caps(**levels: int) -> BrokerCapabilities:
    return BrokerCapabilities.from_ranges(
        "b:9092",
        KAFKA_40,
        finalized_features={name.replace("_", "."): (lv, lv) for name, lv in levels.items()},
    )


def test_end_txn_v5_needs_transaction_version_2() -> None:
    assert pick_version(26, caps(transaction_version=1)) == 4
    assert pick_version(26, caps(transaction_version=2)) == 5
    choice = explain(26, caps())
    assert choice.chosen == 4 and [s.kind for s in choice.steps] == ["feature-gate"]
    assert "transaction.version >= 2, the cluster has 0" in choice.steps[0].rule
    assert "KIP-890" in choice.steps[0].rule


def test_produce_is_gated_only_inside_a_transaction() -> None:
    tv1, tv2 = caps(transaction_version=1), caps(transaction_version=2)
    assert pick_version(0, tv1) == 12
    assert pick_version(0, tv1, in_transaction=True) == 11
    assert pick_version(0, tv2, in_transaction=True) == 12


def test_a_modelled_client_picks_the_plain_intersection_unless_asked() -> None:
    writes_12 = {0: VersionRange(3, 12), 26: VersionRange(0, 5)}
    assert pick_version(26, caps(), client_ranges=writes_12) == 5  # another client need not obey
    assert pick_version(26, caps(), client_ranges=writes_12, feature_gates=True) == 4
    assert pick_version(26, caps(), feature_gates=False) == 5


def test_consumer_group_heartbeat_is_unusable_without_group_version_and_says_why() -> None:
    with pytest.raises(
        UnsupportedVersionError,
        match=r"client and b:9092, but the feature gates leave none.*group\.version >= 1.*KIP-848",
    ):
        pick_version(68, caps())
    assert pick_version(68, caps(group_version=1)) == KAFKA_40[68].highest



KAFKA_42 = known_api_ranges("4.2", "kraft-broker")


def test_share_apis_need_share_version_from_their_first_stable_version() -> None:
    closed = BrokerCapabilities.from_ranges("b:9092", KAFKA_42, finalized_features={"share.version": (0, 0)})
    opened = BrokerCapabilities.from_ranges("b:9092", KAFKA_42, finalized_features={"share.version": (1, 1)})
    for key in (76, 77, 78, 79, 90, 91, 92):  # the heartbeat, describe, fetch, acknowledge, offsets admin
        writes = {key: KAFKA_42[key]}  # a client writing what 4.2 serves
        assert explain(key, closed, client_ranges=writes, feature_gates=True).chosen is None, key
        assert explain(key, opened, client_ranges=writes, feature_gates=True).chosen == writes[key].highest
    # The early-access v0 (Kafka 4.0) predates share.version: the gate starts at v1.
    early = BrokerCapabilities.from_ranges("b:9092", {**KAFKA_40, 78: VersionRange(0, 0)})
    assert explain(78, early, client_ranges={78: VersionRange(0, 0)}, feature_gates=True).chosen == 0


def test_the_share_state_apis_brokers_send_each_other_are_not_gated() -> None:
    assert [gates_for(key) for key in (83, 84, 85, 86, 87)] == [()] * 5


def test_every_gate_cites_kafka_itself() -> None:
    for gate in FEATURE_GATES:
        assert gate.source.startswith("KIP-") and "; Kafka 4." in gate.source, gate


def test_every_gate_is_found_by_its_api_and_levels_read_either_spelling() -> None:
    for gate in FEATURE_GATES:
        assert gate in gates_for(gate.api_key, in_transaction=True)
    assert gates_for(0) == ()
    assert level_of({"group.version": 1}, "group.version") == 1
    assert level_of({"group.version": VersionRange(1, 1)}, "group.version") == 1
    assert level_of({}, "share.version") == 0
