"""The command-line battery Tansu gets, against real Apache Kafka: 2.8 (ZooKeeper), 3.9, 4.0 and 4.4 (KRaft).

inspect in text and JSON, ``--all-brokers``, ``--bootstrap-controller``, the
coordinators of 1000 groups (batched and one key per request), snapshot and
features describe.  What differs between the releases is in ``EXPECTED``, and
every entry there was read from the real release (docs/testing.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.pipeline.snapshot_format import parse_snapshot_line
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import API_NAMES
from kafkacompat.testing import ApacheKafka
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

GROUPS = 1000


@dataclass(frozen=True)
class Expected:
    api_versions: str  # the ApiVersions range the broker advertises
    guess: str  # the release guess, as inspect names it
    find_coordinator: int  # the FindCoordinator version picked
    batched: bool  # FindCoordinator v4+ (KIP-699)
    metadata_version: str | None  # SupportedMaxVersion of metadata.version; None: no features at all
    controller_guess: str | None  # the release guess of the controller; None: ZooKeeper mode


EXPECTED = {
    "2.8.2-zookeeper": Expected("0-3", "Kafka 2.8 (zk-broker)", 3, False, None, None),
    "3.9.2-kraft-combined": Expected(
        "0-4", "Kafka 3.9 (kraft-broker)", 6, True, "3.9-IV0", "Kafka 3.9 (kraft-controller)"
    ),
    "4.0.2-kraft-split": Expected(
        "0-4", "Kafka 4.0 (kraft-broker)", 6, True, "4.0-IV3", "Kafka 4.0 (kraft-controller)"
    ),
    "4.4.0-kraft-split": Expected(
        "0-5", "Kafka 4.4 (kraft-broker)", 6, True, "4.4-IV2", "Kafka 4.4 (kraft-controller)"
    ),
}


def _expected(kafka: ApacheKafka) -> Expected:
    return EXPECTED[f"{kafka.release}-{kafka.mode}"]


def _brokers(kafka: ApacheKafka) -> list[str]:
    return [f"{host}:{port}" for _, host, port in kafka.broker_endpoints]


def _evidence_cites_advertised(node: dict[str, Any]) -> None:
    ranges = {
        a["api_key"]: VersionRange(a["broker_min"], a["broker_max"])
        for a in node["apis"]
        if a["broker_min"] is not None
    }
    labels = {f"{name}({key})": key for key, name in API_NAMES.items()}
    for line in node["release_guess"]["evidence"]:
        label = line.split(" ", 1)[0].rstrip(":")
        key = labels.get(label)
        if key is not None and key in ranges:
            assert line.startswith((f"{label}: {ranges[key]} here", f"{label} {ranges[key]} ")), line


def test_every_ci_cluster_has_expectations(apache_cluster: ApacheKafka) -> None:
    assert f"{apache_cluster.release}-{apache_cluster.mode}" in EXPECTED
    assert apache_cluster.startup_seconds is not None and apache_cluster.startup_seconds > 0
    assert all(host == "127.0.0.1" for _, host, _ in apache_cluster.broker_endpoints)


async def test_inspect_text(apache_cluster: ApacheKafka, cli: Runner) -> None:
    expected = _expected(apache_cluster)
    result = await cli("inspect", apache_cluster.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    node_id = apache_cluster.broker_endpoints[0][0]
    # Kafka's own node format for the release: kafka-broker-api-versions prints isFenced from 4.0.
    fenced = " isFenced: false" if int(apache_cluster.release.split(".")[0]) >= 4 else ""
    assert lines[0] == f"{apache_cluster.bootstrap} (id: {node_id} rack: null{fenced}) -> ("
    low, high = expected.api_versions.split("-")
    assert f"\tApiVersions(18): {low} to {high} [usable: {high}]," in lines
    assert f"Release guess: {expected.guess} (exact)" in lines, result.stdout
    assert any(line.startswith("Handshake: ApiVersions v") for line in lines)


async def test_inspect_json(apache_cluster: ApacheKafka, cli: Runner) -> None:
    result = await cli("inspect", "--bootstrap-server", apache_cluster.bootstrap, "--format", "json", *FAST)
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["node_kind"] == "broker"
    assert document["cluster_id"] == apache_cluster.cluster_id
    (node,) = document["brokers"]
    assert f"{node['host']}:{node['port']}" == apache_cluster.bootstrap
    _evidence_cites_advertised(node)
    assert node["release_guess"]["text"] == _expected(apache_cluster).guess


async def test_all_brokers(apache_cluster: ApacheKafka, cli: Runner) -> None:
    result = await cli("inspect", apache_cluster.bootstrap, "--all-brokers", "--format", "json", *FAST)
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert [f"{b['host']}:{b['port']}" for b in document["brokers"]] == _brokers(apache_cluster)
    assert all(b["error"] is None for b in document["brokers"])
    if len(document["brokers"]) > 1:
        assert document["cluster"]["skew"] == []  # the same release on every node


async def test_bootstrap_controller(apache_cluster: ApacheKafka, cli: Runner) -> None:
    expected = _expected(apache_cluster)
    if apache_cluster.bootstrap_controller is None:  # ZooKeeper mode: no controller to ask
        assert expected.controller_guess is None and apache_cluster.controller_endpoints == []
        return
    result = await cli("inspect", "--bootstrap-controller", apache_cluster.bootstrap_controller, *FAST)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "\tMetadata(3): UNSUPPORTED," in lines
    assert any(line.startswith("\tVote(52): ") for line in lines)
    assert f"Release guess: {expected.controller_guess} (exact)" in lines, result.stdout
    every = await cli(
        "inspect", "--bootstrap-controller", apache_cluster.bootstrap_controller, "--all-brokers",
        "--format", "json", *FAST,
    )  # fmt: skip
    assert every.code == 0, every.stderr
    nodes = json.loads(every.stdout)["brokers"]
    controllers = [f"{host}:{port}" for _, host, port in apache_cluster.controller_endpoints]
    assert [f"{n['host']}:{n['port']}" for n in nodes] == controllers


async def test_coordinators_of_1000_groups_batched(
    apache_cluster: ApacheKafka, cli: Runner, tmp_path: Path
) -> None:
    expected = _expected(apache_cluster)
    groups = tmp_path / "groups.txt"
    groups.write_text("".join(f"group-{n}\n" for n in range(GROUPS)), encoding="utf-8")
    result = await cli(
        "coordinators", apache_cluster.bootstrap, "--groups-file", str(groups), "--format", "json", *FAST
    )
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["versions"] == [expected.find_coordinator]
    assert document["batched"] is expected.batched
    assert document["requests"] < GROUPS if expected.batched else document["requests"] == GROUPS
    entries = document["coordinators"]
    assert [e["key"] for e in entries] == [f"group-{n}" for n in range(GROUPS)]
    assert all(e["error"] is None for e in entries)
    assert {f"{e['host']}:{e['port']}" for e in entries} == set(_brokers(apache_cluster))


async def test_coordinators_of_1000_groups_one_key_per_request(
    apache_cluster: ApacheKafka, cli: Runner, tmp_path: Path
) -> None:
    groups = tmp_path / "groups.txt"
    groups.write_text("".join(f"group-{n}\n" for n in range(GROUPS)), encoding="utf-8")
    result = await cli(
        "coordinators", apache_cluster.bootstrap, "--groups-file", str(groups), "--cap", "FindCoordinator=3",
        "--format", "json", *FAST,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["versions"], document["batched"], document["requests"]) == ([3], False, GROUPS)
    assert all(e["error"] is None for e in document["coordinators"])


async def test_snapshot(apache_cluster: ApacheKafka, cli: Runner) -> None:
    result = await cli("snapshot", apache_cluster.bootstrap, "--all-brokers", "--out", "-", *FAST)
    assert result.code == 0, result.stderr
    parsed = [parse_snapshot_line(line) for line in result.stdout.splitlines()]
    assert all(problems == [] for _, problems in parsed), parsed
    lines = [line for line, _ in parsed if line is not None]
    assert [line["endpoint"] for line in lines] == _brokers(apache_cluster)
    assert {line["cluster_id"] for line in lines} == {apache_cluster.cluster_id}
    assert all(line["release_guess"]["text"] == _expected(apache_cluster).guess for line in lines)
    if apache_cluster.mode == "zookeeper":
        assert all(line["finalized_features"] == [] for line in lines)
    else:  # KRaft finalizes metadata.version at format
        assert all(line["finalized_features_epoch"] > 0 for line in lines)
        assert all("metadata.version" in {f["name"] for f in line["finalized_features"]} for line in lines)


async def test_features_describe(apache_cluster: ApacheKafka, cli: Runner) -> None:
    expected = _expected(apache_cluster)
    result = await cli("features", "describe", apache_cluster.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    count = len(apache_cluster.broker_endpoints)
    if expected.metadata_version is None:
        assert f"Checked on {count} broker(s): finalized epoch" in result.stdout
        assert "Feature: metadata.version" not in result.stdout
        return
    mv = next(line for line in result.stdout.splitlines() if line.startswith("Feature: metadata.version\t"))
    fields = dict(part.split(": ", 1) for part in mv.split("\t"))
    assert fields["SupportedMaxVersion"] == expected.metadata_version
    assert fields["FinalizedVersionLevel"] == expected.metadata_version  # format finalizes the latest
    assert f"Checked on {count} broker(s): finalized epoch " in result.stdout
    assert "UNKNOWN" not in result.stdout


async def test_upgrade_dry_run_to_the_finalized_level(apache_cluster: ApacheKafka, cli: Runner) -> None:
    expected = _expected(apache_cluster)
    result = await cli(
        "features", "upgrade", apache_cluster.bootstrap, "--release-version",
        expected.metadata_version or "3.3-IV3", "--dry-run", *FAST,
    )  # fmt: skip
    if expected.metadata_version is None:  # a ZooKeeper cluster finalizes nothing it can move
        assert result.code == 1
        assert "metadata.version" in result.stdout
        return
    assert result.code == 0, result.output
    assert result.stdout.startswith("metadata.version can be upgraded to ")
