"""Verdicts: for each API a client uses, what it would send to each broker and whether that works."""

from __future__ import annotations

from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.negotiation.verdicts import (
    BrokerSide,
    ClientEntry,
    ClientSide,
    client_side,
    judge,
    removed_in_4,
    worst,
)
from kafkacompat.protocol.versions import VersionRange


def broker(release: str, kind: str = "kraft-broker", **levels: int) -> BrokerSide:
    finalized = {name.replace("_", "."): level for name, level in levels.items()}
    return BrokerSide(f"Kafka {release}", dict(known_api_ranges(release, kind)), release, finalized)


def client(*entries: ClientEntry, obeys: bool = False) -> ClientSide:
    return ClientSide("app", "1.0", {e.api_key: e for e in entries}, obeys)


def entry(api_key: int, low: int, high: int, **kw: object) -> ClientEntry:
    return ClientEntry(api_key, VersionRange(low, high), required=True, **kw)  # type: ignore[arg-type]


def test_removals_come_from_the_codecs_kip_896_facts() -> None:
    kafka_40, kafka_39 = broker("4.0"), broker("3.9", "zk-broker")
    assert removed_in_4(kafka_40, 1, 3) == ("Fetch v3: removed in 4.0 (KIP-896)", False, "KIP-896")
    assert removed_in_4(kafka_40, 0, 2) is not None and removed_in_4(kafka_40, 0, 2)[1:] == (  # type: ignore[index]
        True,
        "KIP-896, KAFKA-18659",
    )
    assert removed_in_4(kafka_40, 1, 4) is None and removed_in_4(kafka_39, 1, 3) is None
    assert (
        removed_in_4(kafka_40, 78, 0) is None and removed_in_4(broker("4.1"), 78, 0) is not None
    )  # KAFKA-19057
    unknown = BrokerSide("node", kafka_40.apis, None, {})  # release unknown: told by its ranges
    assert removed_in_4(unknown, 1, 3) is not None


def test_a_fixed_version_4_0_removed_breaks_and_says_which_rule() -> None:
    verdict = judge(client(entry(1, 3, 3, pick="fixed")), [broker("4.0")])
    (finding,) = verdict.findings
    assert (verdict.status, verdict.exit_code) == ("breaks", 1)
    assert (finding.rule, finding.source, finding.version) == ("removed-in-4", "KIP-896", 3)
    assert finding.client_range == VersionRange(3, 3) and finding.broker_range == VersionRange(4, 17)
    assert "Fetch v3: removed in 4.0 (KIP-896)" in finding.message


def test_produce_v0_to_2_is_advertised_but_refused_on_4x_only() -> None:
    old_producer = client(entry(0, 0, 2))
    refused = judge(old_producer, [broker("4.0")])
    assert [(f.rule, f.version, f.source) for f in refused.findings] == [
        ("advertised-but-refused", 2, "KIP-896, KAFKA-18659")
    ]
    assert judge(old_producer, [broker("3.9")]).status == "works"


def test_transactional_produce_v12_needs_transaction_version_2() -> None:
    producer = client(entry(0, 3, 12), entry(26, 0, 5), entry(24, 0, 5))
    gated = judge(producer, [broker("4.0", transaction_version=1)])
    assert {(f.api_name, f.rule, f.version) for f in gated.findings} == {
        ("Produce", "feature-gated", 12),
        ("EndTxn", "feature-gated", 5),
    }
    assert all("transaction.version >= 2" in f.message and "KIP-890" in f.source for f in gated.findings)
    assert judge(producer, [broker("4.0", transaction_version=2)]).status == "works"
    obeying = client(entry(0, 3, 12), entry(26, 0, 5), obeys=True)
    verdict = judge(obeying, [broker("4.0", transaction_version=1)])
    assert verdict.status == "works" and verdict.picks["Kafka 4.0"] == {0: 11, 26: 4}


def test_produce_outside_a_transaction_is_not_gated() -> None:
    assert judge(client(entry(0, 3, 12)), [broker("4.0", transaction_version=0)]).status == "works"


def test_a_kip848_api_with_its_classic_fallback_only_warns() -> None:
    with_fallback = client(entry(69, 0, 0), entry(15, 0, 5))
    verdict = judge(with_fallback, [broker("3.9")])  # 3.9: group.version not finalized
    assert verdict.status == "works" and [f.severity for f in verdict.findings] == ["warns"]
    alone = judge(client(entry(68, 0, 1)), [broker("4.0", group_version=0)])
    assert alone.status == "breaks" and alone.findings[0].source.startswith("KIP-848; Kafka 4.0 KafkaApis")


def test_unknown_finalized_features_make_a_gated_verdict_unknown() -> None:
    unknown = BrokerSide("node 1", dict(known_api_ranges("4.0", "kraft-broker")), "4.0", None)
    verdict = judge(client(entry(28, 0, 5)), [unknown])
    assert (verdict.status, verdict.exit_code) == ("unknown", 2)


def test_a_recorded_minimum_is_a_bound_so_older_brokers_are_unknown_not_broken() -> None:
    recorded = client_side(
        {
            "client": "c",
            "version": "1",
            "api_versions": [{"api_key": 0, "min": 7, "max": 7, "required": True, "min_exact": False}],
        }
    )
    verdict = judge(recorded, [broker("1.0", "zk-broker")])  # Produce 0-5
    assert verdict.status == "unknown" and verdict.findings[0].rule == "no-common-version"
    typed = client(entry(0, 7, 7))
    assert judge(typed, [broker("1.0", "zk-broker")]).status == "breaks"


def test_a_rolling_upgrade_is_judged_node_by_node() -> None:
    fixed = client(entry(1, 3, 3, pick="fixed"))
    verdict = judge(fixed, [broker("3.9", "zk-broker"), broker("4.0")], "mixed")
    assert verdict.status == "breaks"
    assert [f.broker for f in verdict.findings] == ["Kafka 4.0"]
    assert verdict.picks == {"Kafka 3.9": {1: 3}, "Kafka 4.0": {1: 3}}


def test_a_new_client_against_an_old_broker_misses_apis() -> None:
    admin = client(entry(60, 0, 1))
    (finding,) = judge(admin, [broker("2.3", "zk-broker")]).findings
    assert (finding.rule, finding.severity, finding.broker_range) == ("api-missing", "breaks", None)
    optional = ClientEntry(60, VersionRange(0, 1))
    assert judge(client(optional), [broker("2.3", "zk-broker")]).status == "works"


def test_worst_orders_breaks_over_unknown_over_works() -> None:
    works = judge(client(entry(3, 0, 12)), [broker("3.9", "zk-broker")])
    breaks = judge(client(entry(1, 3, 3, pick="fixed")), [broker("4.0")])
    unknown = judge(client(entry(28, 0, 5)), [BrokerSide("n", {28: VersionRange(0, 5)}, "4.0", None)])
    assert worst([works]) == 0 and worst([works, unknown]) == 2 and worst([unknown, breaks, works]) == 1
    assert breaks.findings[0].to_dict()["client_range"] == [3, 3]
