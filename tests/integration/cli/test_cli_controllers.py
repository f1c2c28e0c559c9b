"""KRaft controllers through the command line: every emulated controller release from 3.0 to 4.2.

A controller serves no Metadata.  ``inspect`` of its address finds that out by
itself; ``--bootstrap-controller`` (Kafka's flag since KIP-919) says so up
front and, with ``--all-brokers``, finds the other controllers through
DescribeCluster (EndpointType 2) where the controller has it (3.7 on).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafkacompat.pipeline.snapshot_format import capabilities_from_snapshot, parse_snapshot_line
from kafkacompat.reference import RELEASES
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

CONTROLLER_RELEASES = [
    p.release
    for p in RELEASES
    if p.kind == "kraft-controller" and tuple(map(int, p.release.split("."))) >= (3, 0)
]
_TWINS = {"3.7": "3.7 or 3.8", "3.8": "3.7 or 3.8"}  # one table, told apart by nothing on the wire


def _has_describe_cluster(release: str) -> bool:
    return tuple(map(int, release.split("."))) >= (3, 7)


def test_every_controller_release_from_3_0_to_4_4_is_covered() -> None:
    assert CONTROLLER_RELEASES[0] == "3.0" and CONTROLLER_RELEASES[-1] == "4.4"
    assert len(CONTROLLER_RELEASES) == 15


@pytest.mark.parametrize("release", CONTROLLER_RELEASES)
async def test_inspect_a_controller_address(emulated_cluster: Any, cli: Runner, release: str) -> None:
    cluster = await emulated_cluster([release] * 3, kind="kraft-controller")
    address = cluster.broker(2).address
    result = await cli("inspect", address, *FAST)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    node_id = 2 if _has_describe_cluster(release) else -1
    fenced = " isFenced: false" if release.startswith("4.") else ""  # Kafka 4's Node prints it
    assert lines[0] == f"{address} (id: {node_id} rack: null{fenced}) -> ("
    assert "\tMetadata(3): UNSUPPORTED," in lines
    assert any(line.startswith("\tVote(52): ") for line in lines)
    guess = f"Release guess: Kafka {_TWINS.get(release, release)} (kraft-controller) (exact)"
    assert guess in lines, result.stdout
    assert "\nFeatures:\n" in result.stdout
    if tuple(map(int, release.split("."))) >= (3, 3):  # metadata.version arrived in 3.3 (KIP-778)
        assert "Feature: metadata.version\t" in result.stdout


@pytest.mark.parametrize("release", CONTROLLER_RELEASES)
async def test_bootstrap_controller_all_brokers(emulated_cluster: Any, cli: Runner, release: str) -> None:
    cluster = await emulated_cluster([release] * 3, kind="kraft-controller")
    result = await cli(
        "inspect", "--bootstrap-controller", cluster.broker(3).address, "--all-brokers",
        "--format", "json", *FAST,
    )
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["node_kind"] == "controller"
    nodes = [(b["node_id"], f"{b['host']}:{b['port']}") for b in document["brokers"]]
    if _has_describe_cluster(release):  # DescribeCluster v1+ names the quorum and its leader
        assert nodes == [(n, cluster.broker(n).address) for n in (1, 2, 3)]
        assert document["cluster_id"] == "kafkacompat-emulated"
        assert document["controller_id"] == 1
        requests = [(r.api_key, r.api_version) for r in cluster.broker(3).requests]
        assert any(key == 60 and version >= 1 for key, version in requests), requests  # v0: brokers only
    else:  # no DescribeCluster: the node alone, id and cluster unknown
        assert nodes == [(-1, cluster.broker(3).address)]
        assert document["cluster_id"] is None and document["controller_id"] is None
        assert not any(r.api_key in (3, 60) for r in cluster.broker(3).requests)
    assert all(b["release_guess"]["kind"] == "kraft-controller" for b in document["brokers"])


async def test_text_names_the_quorum_and_its_leader(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["4.2"] * 3, kind="kraft-controller")
    result = await cli("inspect", "--bootstrap-controller", cluster.broker(1).address, "--all-brokers", *FAST)
    assert result.code == 0, result.stderr
    assert "Cluster kafkacompat-emulated: 3 of 3 controller(s) answered, active controller 1" in result.stdout


async def test_a_quorum_below_metadata_version_3_7_is_inspected_node_by_node(
    emulated_cluster: Any, cli: Runner
) -> None:
    below = {"metadata.version": 14}  # 3.6-IV2: controllers do not register their endpoints yet
    cluster = await emulated_cluster(["3.8"] * 3, kind="kraft-controller", finalized_features=below)
    address = cluster.broker(1).address
    result = await cli("inspect", "--bootstrap-controller", address, "--all-brokers", *FAST)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"{address} (id: -1 rack: null) -> ("
    assert lines[-1].startswith("Note: DescribeCluster v1 answered UNSUPPORTED_VERSION: ")
    assert lines[-1].endswith("; the controller is inspected alone")


async def test_bootstrap_controller_at_a_broker_is_a_wrong_endpoint(
    emulated_cluster: Any, run_cli: Runner
) -> None:
    cluster = await emulated_cluster(["4.2"])
    result = await run_cli("inspect", "--bootstrap-controller", cluster.bootstrap, *FAST)
    assert result.code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("kafkacompat inspect: wrong endpoint: ")
    assert "is a broker, not a KRaft controller" in line and "--bootstrap-server" in line


async def test_bootstrap_controller_and_a_broker_address_are_exclusive(run_cli: Runner) -> None:
    result = await run_cli("inspect", "127.0.0.1:1", "--bootstrap-controller", "127.0.0.1:2", *FAST)
    assert result.code == 2  # a command line that cannot be used as typed
    assert "give either brokers (--bootstrap-server, HOST:PORT) or --bootstrap-controller" in result.stderr


async def test_snapshot_of_a_controller_quorum(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["4.0"] * 3, kind="kraft-controller")
    result = await cli(
        "snapshot", "--bootstrap-controller", cluster.broker(1).address, "--all-brokers", "--out", "-", *FAST
    )
    assert result.code == 0, result.stderr
    parsed = [parse_snapshot_line(line) for line in result.stdout.splitlines()]
    assert [problems for _, problems in parsed] == [[], [], []]
    lines = [obj for obj, _ in parsed if obj is not None]
    assert [line["node_id"] for line in lines] == [1, 2, 3]
    assert {line["release_guess"]["kind"] for line in lines} == {"kraft-controller"}
    capabilities = capabilities_from_snapshot(lines[0])  # what the pipeline reads back
    assert not capabilities.lists_api(3) and capabilities.lists_api(52)


async def test_snapshot_of_a_controller_before_3_7_needs_its_ids(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.5"], kind="kraft-controller")
    address = cluster.broker(1).address
    no_ids = await cli("snapshot", address, "--out", "-", *FAST)
    assert no_ids.code == 1 and no_ids.stdout == ""
    assert "no DescribeCluster, which came in Kafka 3.7); name it with --cluster-id" in no_ids.stderr
    no_node = await cli("snapshot", address, "--out", "-", "--cluster-id", "c1", *FAST)
    assert no_node.code == 1 and "did not say its node id" in no_node.stderr
    named = await cli("snapshot", address, "--out", "-", "--cluster-id", "c1", "--node-id", "7", *FAST)
    assert named.code == 0, named.stderr
    obj, problems = parse_snapshot_line(named.stdout.strip())
    assert problems == [] and obj is not None
    assert (obj["cluster_id"], obj["node_id"], obj["endpoint"]) == ("c1", 7, address)


async def test_features_describe_on_a_controller(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9"] * 3, kind="kraft-controller")
    result = await cli("features", "describe", "--bootstrap-controller", cluster.broker(1).address, *FAST)
    assert result.code == 0, result.stderr
    expected = "Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.9-IV0"
    assert expected in result.stdout
