"""The inspect renderers from synthetic capabilities: Kafka's formats, our marks, cluster section, JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime

from kafkacompat.cli.feature_text import epoch_text, feature_lines, level_text
from kafkacompat.cli.inspect_model import BrokerProbe, ProbeReport, api_entries, cluster_summary
from kafkacompat.cli.render_inspect import broker_block, handshake_lines, render_report
from kafkacompat.cli.render_json import inspect_document
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.transcript import HandshakeAttempt, HandshakeTranscript
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.versions import VersionRange

WHEN = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
TRANSCRIPT = HandshakeTranscript(
    attempts=(
        HandshakeAttempt(
            4, 1, "unsupported-version", "UNSUPPORTED_VERSION", "retry at v0 on the same connection"
        ),
        HandshakeAttempt(0, 1, "ok", "19 APIs", "use this answer", ("some-flag",)),
    ),
    round_trips=2,
    connections=1,
    api_versions_version=0,
    notes=("a note",),
)


def caps(
    node: str,
    ranges: Mapping[int, VersionRange | tuple[int, int]],
    node_id: int,
    *,
    epoch: int | None = None,
    finalized: Mapping[str, tuple[int, int]] | None = None,
    supported: Mapping[str, tuple[int, int]] | None = None,
) -> BrokerCapabilities:
    return BrokerCapabilities.from_ranges(
        node,
        dict(ranges),
        node_id=node_id,
        finalized_features_epoch=epoch,
        finalized_features=finalized,
        supported_features=supported,
        transcript=TRANSCRIPT,
    )


def release(name: str) -> dict[int, VersionRange]:
    return dict(known_api_ranges(name, "zk-broker"))


def probe(capabilities: BrokerCapabilities, rack: str | None = None) -> BrokerProbe:
    host, port = capabilities.node.rsplit(":", 1)
    assert capabilities.node_id is not None
    return BrokerProbe(capabilities.node_id, host, int(port), rack, capabilities)


def report(*probes: BrokerProbe, policy: VersionPolicy | None = None) -> ProbeReport:
    return ProbeReport("h1:1", "cluster-x", 1, probes, policy, WHEN, all_brokers=len(probes) > 1)


def test_block_is_kafkas_shape() -> None:
    block = broker_block(probe(caps("h1:9092", release("3.9"), 7), rack="r1"))
    assert block[0] == "h1:9092 (id: 7 rack: r1) -> ("
    assert block[-1] == ")"
    body = block[1:-1]
    assert all(line.startswith("\t") for line in body)
    assert all(line.endswith(",") for line in body[:-1]) and not body[-1].endswith(",")
    assert (
        "\tProduce(0): 0 to 11 [usable: 11] {4.x refuses 0-2: "
        "still advertised by 4.x but refused (KAFKA-18659)}," in block
    )
    assert "\tHeartbeat(12): 0 to 4 [usable: 4]," in block
    assert "\tDescribeQuorum(55): UNSUPPORTED," in block  # a KRaft API a ZooKeeper broker does not serve


def test_a_4x_broker_is_printed_as_kafka_4_prints_a_node() -> None:
    kraft = dict(known_api_ranges("4.0", "kraft-broker"))
    header = broker_block(probe(caps("h2:9092", kraft, 2)))[0]
    assert header == "h2:9092 (id: 2 rack: null isFenced: false) -> ("
    assert broker_block(probe(caps("h2:9092", release("3.9"), 2)))[0] == "h2:9092 (id: 2 rack: null) -> ("


def test_rack_null_single_version_and_unknown_api() -> None:
    ranges: dict[int, VersionRange | tuple[int, int]] = {18: (0, 0), 3: (1, 1), 9999: (0, 3)}
    block = broker_block(probe(caps("h:1", ranges, 1)))
    assert block[0] == "h:1 (id: 1 rack: null) -> ("
    assert "\tApiVersions(18): 0 [usable: 0]," in block
    assert "\tMetadata(3): 1 [usable: 1]," in block  # deprecated in the specs, served by 4.x
    assert block[-2] == "\tUNKNOWN(9999): 0 to 3"


def test_unusable_apis_say_why() -> None:
    entries = {
        e.api_key: e
        for e in api_entries(
            caps("h:1", {0: (20, 25), 1: (0, 3), 3: (0, 12)}, 1),
            VersionPolicy(blocked={"Metadata": "0-12"}),
            {0: VersionRange(0, 11), 1: VersionRange(4, 17), 3: VersionRange(0, 12)},
        )
    }
    assert entries[0].kafka_text() == "Produce(0): 20 to 25 [unusable: node too new]"
    assert entries[1].kafka_text() == "Fetch(1): 0 to 3 [unusable: node too old]"
    assert (
        entries[3].kafka_text()
        == "Metadata(3): 0 to 12 [unusable: policy leaves none: blocked 0-12 excluded]"
    )
    assert entries[3].usable is None and "policy leaves none" in entries[3].reason
    assert entries[2].kafka_text() == "ListOffsets(2): UNSUPPORTED"  # not listed: Kafka's word
    assert entries[2].broker is None


def test_policy_marks_only_steps_that_changed_the_pick() -> None:
    policy = VersionPolicy(caps={"Fetch": 12, "Produce": 20}, blocked={"Fetch": "11-12"})
    entries = {e.api_key: e for e in api_entries(caps("h:1", release("3.9"), 1), policy)}
    fetch, produce = entries[1], entries[0]
    assert fetch.usable == 10
    assert fetch.kafka_text() + fetch.marks() == (
        "Fetch(1): 0 to 17 [usable: 10] {policy: cap <= 12; blocked 11-12 excluded, "
        "4.x refuses 0-3: removed in 4.0 (KIP-896)}"
    )
    assert produce.usable == 11 and produce.policy_marks == ()  # a cap above the range changes nothing


def test_brief_block_has_no_marks() -> None:
    block = broker_block(probe(caps("h:1", release("3.9"), 1)), marks=False)
    assert "\tProduce(0): 0 to 11 [usable: 11]," in block
    assert not any("{" in line for line in block)


def test_error_probe_is_one_line() -> None:
    failed = BrokerProbe(3, "h3", 9092, None, error="connection refused", error_type="TransportError")
    assert broker_block(failed) == ["h3:9092 (id: 3 rack: null) -> ERROR: connection refused"]


def test_feature_lines_are_kafka_features_describe() -> None:
    lines = feature_lines(
        {"metadata.version": VersionRange(1, 21), "kraft.version": VersionRange(0, 1)},
        {"metadata.version": VersionRange(21, 21), "group.version": VersionRange(1, 1)},
        5,
    )
    assert lines == [
        "Feature: group.version\tSupportedMinVersion: -\tSupportedMaxVersion: -\t"
        "FinalizedVersionLevel: 1\tEpoch: 5",
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
        "FinalizedVersionLevel: 0\tEpoch: 5",
        "Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.9-IV0\t"
        "FinalizedVersionLevel: 3.9-IV0\tEpoch: 5",
    ]
    assert level_text("metadata.version", 0) == "UNKNOWN 0"
    assert level_text("metadata.version", 999) == "UNKNOWN 999"
    assert epoch_text(-1) == epoch_text(None) == "-"


def test_handshake_lines_show_every_attempt() -> None:
    lines = handshake_lines(TRANSCRIPT)
    assert lines[0] == "Handshake: ApiVersions v0 accepted; 2 attempt(s), 2 round trip(s), 1 connection(s)"
    assert lines[1] == (
        "\t1. ApiVersions v4 on connection 1: unsupported-version (UNSUPPORTED_VERSION) "
        "-> retry at v0 on the same connection"
    )
    assert lines[2].endswith("-> use this answer [some-flag]")
    assert lines[3] == "\tnote: a note"
    assert handshake_lines(None) == ["Handshake: no transcript"]


def two_brokers() -> ProbeReport:
    new = caps(
        "h1:1",
        release("3.9"),
        1,
        epoch=5,
        finalized={"metadata.version": (21, 21)},
        supported={"metadata.version": (1, 21)},
    )
    old = caps(
        "h2:2",
        release("3.8"),
        2,
        epoch=4,
        finalized={"metadata.version": (20, 20)},
        supported={"metadata.version": (1, 20)},
    )
    return report(probe(new), probe(old))


def test_cluster_section_shows_common_versions_skew_releases_and_lagging_epochs() -> None:
    text = "\n".join(render_report(two_brokers()))
    assert "Cluster cluster-x: 2 of 2 broker(s) answered, controller 1" in text
    assert "\tFetch(1): 16\n" in text
    assert "\tFetch(1): 17 on node 1; 16 on node 2 -> 16 everywhere" in text
    assert "\tKafka 3.8 (zk-broker): node 2" in text
    assert "Finalized features: epoch 5 from node 1" in text
    assert "\tnode 2 is behind: it answered epoch 4" in text
    assert "Release guess: Kafka 3.9 (zk-broker) (exact)" in text


def test_single_broker_has_no_cluster_section() -> None:
    text = "\n".join(render_report(report(probe(caps("h:1", release("3.9"), 1)))))
    assert "Cluster " not in text
    assert "Features:\n\tnone advertised" in text
    assert not text.endswith("\n")


def test_json_document_shape() -> None:
    document = json.loads(json.dumps(inspect_document(two_brokers())))
    assert document["_command"] == "inspect" and document["_version"] == 1
    assert document["observed_at"] == "2024-05-01T12:00:00Z"
    broker = document["brokers"][0]
    assert {
        "node_id",
        "host",
        "port",
        "rack",
        "release_guess",
        "handshake",
        "apis",
        "supported_features",
        "finalized_features",
        "finalized_features_epoch",
    } <= set(broker)
    assert broker["release_guess"]["kind"] == "zk-broker"
    assert broker["handshake"]["round_trips"] == 2
    assert [a["version"] for a in broker["handshake"]["attempts"]] == [4, 0]
    assert broker["finalized_features"] == {"metadata.version": {"min": 21, "max": 21}}
    apis = {a["api_key"]: a for a in broker["apis"]}
    assert apis[0] == {
        "api_key": 0,
        "name": "Produce",
        "broker_min": 0,
        "broker_max": 11,
        "client_min": 0,
        "client_max": 13,
        "usable": 11,
        "reason": apis[0]["reason"],
        "policy": [],
        "deprecated": "0-6",
        "refused_by_4x": {"versions": "0-2", "why": "still advertised by 4.x but refused (KAFKA-18659)"},
    }
    assert apis[55]["usable"] is None and apis[55]["broker_min"] is None  # DescribeQuorum: not listed
    cluster = document["cluster"]
    assert cluster["usable"]["1"] == 16
    assert [s["api_key"] for s in cluster["skew"]][:2] == [1, 2]
    assert cluster["skew"][0]["by_node"] == {"1": 17, "2": 16}
    assert cluster["finalized_features"]["behind"] == [{"node_id": 2, "epoch": 4}]


def test_json_keeps_failed_brokers() -> None:
    failed = BrokerProbe(3, "h3", 9092, None, error="refused", error_type="TransportError")
    document = inspect_document(report(probe(caps("h:1", release("3.9"), 1)), failed))
    assert document["brokers"][1] == {
        "node_id": 3,
        "host": "h3",
        "port": 9092,
        "rack": None,
        "error": "refused",
        "error_type": "TransportError",
    }
    summary = cluster_summary(report(failed))
    assert summary is None
    assert inspect_document(report(failed))["cluster"]["usable"] == {}
