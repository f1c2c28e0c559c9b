"""``kafkacompat inspect`` against Tansu 0.6.0 and emulated brokers, text and JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafkacompat.testing.emulator import FeatureSnapshot
from kafkacompat.testing.tansu import TansuBroker
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker


async def test_inspect_tansu_text(tansu: TansuBroker, cli: Runner) -> None:
    result = await cli("inspect", tansu.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{tansu.host}:{tansu.port} (id: ") and lines[0].endswith(" rack: null) -> (")
    assert any(line.startswith("\tApiVersions(18): 0 to 4 [usable: 4]") for line in lines)
    assert "\tDescribeQuorum(55): UNSUPPORTED," in lines  # Tansu implements part of the protocol
    assert ")" in lines
    assert any(line.startswith("Release guess: at least Kafka") for line in lines)
    # Tansu answers v5, above its advertised 0-4, with the body every version from v3 shares
    assert "Handshake: ApiVersions v5 accepted; 1 attempt(s), 1 round trip(s), 1 connection(s)" in lines
    assert "Features:\n\tnone advertised" in result.stdout
    assert "Cluster " not in result.stdout  # one broker: no cluster section


async def test_inspect_tansu_json(tansu: TansuBroker, cli: Runner) -> None:
    result = await cli("inspect", "--bootstrap-server", tansu.bootstrap, "--format", "json", *FAST)
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["_command"], document["_version"]) == ("inspect", 1)
    (broker,) = document["brokers"]
    assert (broker["host"], broker["port"]) == (tansu.host, tansu.port)
    assert broker["release_guess"]["kind"] == "kraft-broker"
    assert broker["handshake"]["round_trips"] == 1
    assert broker["handshake"]["attempts"][0]["version"] == 5
    assert broker["finalized_features_epoch"] == -1
    apis = {api["api_key"]: api for api in broker["apis"]}
    assert apis[18]["usable"] == 4 and apis[18]["broker_max"] == 4
    assert apis[55]["usable"] is None and apis[55]["reason"] == "the broker does not list DescribeQuorum"
    assert document["cluster"]["usable"]["18"] == 4


async def test_inspect_brief_is_exactly_kafkas_block(tansu: TansuBroker, cli: Runner) -> None:
    result = await cli("inspect", tansu.bootstrap, "--brief", *FAST)
    assert result.code == 0
    lines = result.stdout.splitlines()
    assert lines[0].endswith("-> (") and lines[-1] == ")"
    assert all(line.startswith("\t") and "{" not in line for line in lines[1:-1])


async def test_inspect_all_brokers_of_a_rolling_upgrade(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(
        ["3.9", "3.8", "3.9"], finalized_features={"metadata.version": 20}, finalized_epoch=5
    )
    cluster.broker(3).node.held_features = FeatureSnapshot(4, {"metadata.version": 19})
    result = await cli("inspect", cluster.bootstrap.split(",")[0], "--all-brokers", *FAST)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert out.count(" -> (") == 3
    assert "Cluster kafkacompat-emulated: 3 of 3 broker(s) answered, controller 1" in out
    assert "\tFetch(1): 16\n" in out
    assert "\tFetch(1): 17 on nodes 1, 3; 16 on node 2 -> 16 everywhere" in out
    assert "\tKafka 3.8 (zk-broker): node 2" in out
    assert "Finalized features: epoch 5 from nodes 1, 2" in out
    assert "\tnode 3 is behind: it answered epoch 4" in out
    assert "Handshake: ApiVersions v3 accepted; 2 attempt(s), 2 round trip(s), 1 connection(s)" in out
    # Progress went to stderr, one line per broker.
    assert "negotiating: 3 broker(s)" in result.stderr
    assert result.stderr.count(": ok") == 3


async def test_inspect_all_brokers_json(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9", "3.8"])
    result = await cli("inspect", cluster.bootstrap, "--all-brokers", "--format", "json", "--quiet", *FAST)
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert [b["node_id"] for b in document["brokers"]] == [1, 2]
    assert document["cluster"]["usable"]["1"] == 16
    skew = {s["name"]: s for s in document["cluster"]["skew"]}
    assert skew["Fetch"]["by_node"] == {"1": 17, "2": 16}
    assert skew["Fetch"]["everywhere"] == 16
    assert {r["guess"] for r in document["cluster"]["releases"]} == {
        "Kafka 3.9 (zk-broker)",
        "Kafka 3.8 (zk-broker)",
    }


async def test_inspect_shows_the_downgrade_to_v0_on_a_010_broker(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["0.10.0"])
    result = await cli("inspect", cluster.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "Release guess: Kafka 0.10.0 (zk-broker) (exact)" in out
    assert "Handshake: ApiVersions v0 accepted; 2 attempt(s), 2 round trip(s), 1 connection(s)" in out
    assert "\t1. ApiVersions v5 on connection 1: unsupported-version" in out
    assert "\t2. ApiVersions v0 on connection 1: ok" in out
    assert "\tFindCoordinator(10): 0 [usable: 0]," in out  # 4.x still serves v0


async def test_inspect_marks_the_version_policy(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9"])
    result = await cli(
        "inspect",
        cluster.bootstrap,
        "--cap",
        "Fetch=12",
        "--block",
        "Fetch=11-12",
        "--deprecate",
        "Produce=8-11",
        "--block",
        "DescribeConfigs=0-4",
        *FAST,
    )
    assert result.code == 0, result.stderr
    out = result.stdout
    assert (
        "\tFetch(1): 0 to 17 [usable: 10] {policy: cap <= 12; blocked 11-12 excluded, "
        "4.x refuses 0-3: removed in 4.0 (KIP-896)}," in out
    )
    assert (
        "\tProduce(0): 0 to 11 [usable: 7] {policy: deprecated 8-11 excluded, "
        "4.x refuses 0-2: still advertised by 4.x but refused (KAFKA-18659)}," in out
    )
    assert (
        "\tDescribeConfigs(32): 0 to 4 [unusable: policy leaves none: blocked 0-4 excluded] "
        "{4.x refuses 0: removed in 4.0 (KIP-896)}," in out
    )


async def test_inspect_pre_010_broker_through_a_fallback_release(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["0.8.2"])
    result = await cli("inspect", cluster.bootstrap, "--fallback-release", "0.8.1", *FAST)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "the broker sent no ApiVersions answer: the 0.8.1 table was configured to stand in" in out
    assert "\tConsumerMetadata" not in out and "\tFindCoordinator(10): UNSUPPORTED," in out


async def test_inspect_reports_a_broker_that_fails_after_the_bootstrap(
    emulated_cluster: Any, cli: Runner
) -> None:
    cluster = await emulated_cluster(["3.9", "3.9"])
    cluster.broker(2).stop()
    result = await cli("inspect", cluster.broker(1).address, "--all-brokers", "--format", "json", *FAST)
    assert result.code == 1
    document = json.loads(result.stdout)
    failed = document["brokers"][1]
    assert failed["node_id"] == 2 and failed["error"] and failed["error_type"]
    assert "1 of 2 broker(s) could not be inspected: node 2 at" in result.stderr
    text = await cli("inspect", cluster.broker(1).address, "--all-brokers", *FAST)
    assert text.code == 1
    assert f"{cluster.broker(2).address} (id: 2 rack: null) -> ERROR: " in text.stdout
