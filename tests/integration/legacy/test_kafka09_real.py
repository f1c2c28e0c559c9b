"""A real Apache Kafka 0.9.0.1, with no configuration: every entry point knows it as 0.9.0.

The handshake writes ApiVersions v5, hears nothing for its quiet period, writes
a Metadata v0 probe, and gets the probe's reply first: the broker skipped
ApiVersions.  Kafka 0.9.0's table from the release table stands in, so version
picking, coordinators and snapshots work on the same connection.
"""

from __future__ import annotations

import json
from typing import Any

import trio

from kafkacompat.blocking.probe import probe_broker
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.config import HandshakeConfig, release_ranges
from kafkacompat.protocol.messages import MetadataRequest, MetadataResponse
from kafkacompat.testing.kafka09 import Kafka09Broker
from kafkacompat.transport import ConnectionConfig, connect, open_connection
from tests.integration.cli.cli_runner import Runner

FIND_COORDINATOR, METADATA = 10, 3
KAFKA_0_9 = dict(release_ranges("0.9.0"))


def assert_known_as_0_9(caps: BrokerCapabilities) -> None:
    assert caps.fallback_release == "0.9.0" and dict(caps.api_ranges) == KAFKA_0_9
    assert caps.transcript is not None and caps.transcript.detected_release == "0.9.0"
    (attempt,) = caps.transcript.attempts
    assert (attempt.version, attempt.outcome) == (5, "skipped-api-versions")
    assert caps.transcript.connections == 1  # no reconnect: the broker served on
    guess = caps.release_guess
    assert guess.releases == ("0.9.0",) and "older than 0.10" in guess.text
    assert caps.pick_version(METADATA) == 0 and caps.pick_version(FIND_COORDINATOR) == 0


def test_probe_broker_knows_the_real_0_9_0_1(kafka09: Kafka09Broker) -> None:
    assert_known_as_0_9(probe_broker(kafka09.host, kafka09.port))


def test_a_configured_fallback_release_is_honoured(kafka09: Kafka09Broker) -> None:
    config = ConnectionConfig(handshake=HandshakeConfig(fallback_release="0.8.2"))
    caps = probe_broker(kafka09.host, kafka09.port, config)
    assert caps.fallback_release == "0.8.2" and dict(caps.api_ranges) == dict(release_ranges("0.8.2"))
    assert caps.transcript is not None and caps.transcript.detected_release == "0.9.0"
    assert caps.release_guess.releases == ("0.9.0",)  # what it did still names it


async def test_open_connection_serves_on_after_the_probe(kafka09: Kafka09Broker) -> None:
    with trio.fail_after(20):
        async with open_connection(kafka09.host, kafka09.port) as conn:
            assert conn.capabilities is not None
            assert_known_as_0_9(conn.capabilities)
            reply = await conn.request(MetadataRequest(topics=[]))
    assert isinstance(reply, MetadataResponse)
    assert [(b.host, b.port) for b in reply.brokers] == [(kafka09.host, kafka09.port)]


async def test_connect_finds_the_broker_its_capabilities_and_coordinators(kafka09: Kafka09Broker) -> None:
    with trio.fail_after(60):
        async with connect(kafka09.bootstrap) as cluster:
            (caps,) = (await cluster.capabilities()).values()
            assert_known_as_0_9(caps)
            lookup = await cluster.find_coordinators([f"legacy-{n}" for n in range(20)])
    assert lookup.ok and not lookup.batched
    assert set(lookup.versions) == {0}  # FindCoordinator v0: 0.9's GroupCoordinator
    assert lookup.batched_requests == 0 and lookup.requests >= 20  # one key per request
    assert set(lookup.by_coordinator()) == {0}


def broker_json(result: Any) -> dict[str, Any]:
    document = json.loads(result.stdout)
    (broker,) = document["brokers"]
    return dict(broker)


async def test_inspect_text_and_json(run_cli: Runner, kafka09: Kafka09Broker) -> None:
    text = await run_cli("inspect", kafka09.bootstrap)
    assert text.code == 0, text.stderr
    assert "Release guess: Kafka 0.9.0 (zk-broker), older than 0.10 (exact)" in text.stdout
    assert "the broker skipped ApiVersions (KIP-35, Kafka 0.10) and served on" in text.stdout
    assert "1. ApiVersions v5 on connection 1: skipped-api-versions" in text.stdout
    assert "\tMetadata(3): 0 [usable: 0]" in text.stdout
    assert "\tFindCoordinator(10): 0 [usable: 0]" in text.stdout
    assert "\tApiVersions(18): UNSUPPORTED" in text.stdout
    as_json = await run_cli("inspect", kafka09.bootstrap, "--format", "json")
    assert as_json.code == 0, as_json.stderr
    broker = broker_json(as_json)
    assert broker["fallback_release"] == "0.9.0" and broker["error"] is None
    assert broker["handshake"]["detected_release"] == "0.9.0"
    assert broker["release_guess"]["releases"] == ["0.9.0"]
    listed = {a["api_key"]: (a["broker_min"], a["broker_max"]) for a in broker["apis"]}
    assert {key: span for key, span in listed.items() if span[0] is not None} == {
        key: (r.lowest, r.highest) for key, r in KAFKA_0_9.items()
    }


async def test_inspect_with_a_fallback_release_uses_it(run_cli: Runner, kafka09: Kafka09Broker) -> None:
    result = await run_cli("inspect", kafka09.bootstrap, "--fallback-release", "0.8.2")
    assert result.code == 0, result.stderr
    assert "the 0.8.2 table was configured to stand in" in result.stdout
    assert "\tMetadata(3): 0 [usable: 0]" in result.stdout and "\tFindCoordinator(10): 0" in result.stdout
    assert "\tLeaveGroup(13): UNSUPPORTED" in result.stdout  # 0.8.2's table stops at key 12


async def test_coordinators_one_key_per_request(run_cli: Runner, kafka09: Kafka09Broker) -> None:
    groups = [f"cli-legacy-{n}" for n in range(5)]
    args = [arg for group in groups for arg in ("--group", group)]
    result = await run_cli("coordinators", kafka09.bootstrap, *args, "--format", "json")
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    found = document["coordinators"]
    assert sorted(k["key"] for k in found) == groups
    assert all(k["node_id"] == 0 and k["error"] is None for k in found)
    assert document["versions"] == [0] and not document["batched"] and document["requests"] >= 5


async def test_snapshot_of_the_real_0_9_0_1(run_cli: Runner, kafka09: Kafka09Broker) -> None:
    result = await run_cli("snapshot", kafka09.bootstrap, "--cluster-id", "legacy-09", "--out", "-")
    assert result.code == 0, result.stderr
    (line,) = [json.loads(raw) for raw in result.stdout.splitlines() if raw.strip()]
    assert line["cluster_id"] == "legacy-09" and line["node_id"] == 0
    assert line["release_guess"]["text"] == "Kafka 0.9.0 (zk-broker), older than 0.10"
    assert {a["api_key"]: (a["min"], a["max"]) for a in line["api_versions"]} == {
        key: (r.lowest, r.highest) for key, r in KAFKA_0_9.items()
    }
    # Without --cluster-id it says why (Metadata v0 carries no cluster id), in one sentence.
    unnamed = await run_cli("snapshot", kafka09.bootstrap, "--out", "-")
    assert unnamed.code == 1 and "name it with --cluster-id" in unnamed.stderr
