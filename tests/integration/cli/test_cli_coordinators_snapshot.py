"""``kafkacompat coordinators`` and ``kafkacompat snapshot`` against Tansu and emulated brokers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.pipeline.snapshot_format import parse_snapshot_line
from kafkacompat.testing.tansu import TansuBroker
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

COORDINATOR_NOT_AVAILABLE = 15


def groups_file(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "groups.txt"
    path.write_text("# consumer groups\n" + "".join(f"group-{n}\n" for n in range(count)), encoding="utf-8")
    return path


async def test_a_few_hundred_groups_in_one_batched_request(
    emulated_cluster: Any, cli: Runner, tmp_path: Path
) -> None:
    cluster = await emulated_cluster(["3.9", "3.9", "3.9"])
    result = await cli(
        "coordinators",
        cluster.bootstrap,
        "--groups-file",
        str(groups_file(tmp_path, 300)),
        "--format",
        "json",
        *FAST,
    )
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["_command"], document["requests"], document["batched"], document["round_trips"]) == (
        "coordinators",
        1,
        True,
        1,
    )
    assert document["versions"] == [6]
    entries = document["coordinators"]
    assert [e["key"] for e in entries] == [f"group-{n}" for n in range(300)]
    assert {e["node_id"] for e in entries} == {1, 2, 3}
    assert all(e["error"] is None and e["host"] == "127.0.0.1" for e in entries)


async def test_single_key_requests_on_an_010_broker(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["0.10.0"])
    result = await cli(
        "coordinators", cluster.bootstrap, "--group", "a", "--group", "b", "--group", "a", *FAST
    )
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["KEY", "TYPE", "COORDINATOR", "(ID)"]
    assert [line.split()[0] for line in lines[1:3]] == ["a", "b"]  # duplicates asked once
    assert lines[-1] == (
        "2 group key(s): 2 found, 0 failed; "
        "FindCoordinator v0, 2 single-key request(s), 1 round trip(s), 1 round(s)"
    )


async def test_groups_and_transactional_ids_with_an_error(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9"], coordinator_errors={"broken": COORDINATOR_NOT_AVAILABLE})
    result = await cli(
        "coordinators",
        cluster.bootstrap,
        "--group",
        "ok",
        "--group",
        "broken",
        "--transactional-id",
        "tx-1",
        "--format",
        "json",
        *FAST,
    )
    assert result.code == 1
    entries = {(e["key_type"], e["key"]): e for e in json.loads(result.stdout)["coordinators"]}
    assert entries[("group", "ok")]["node_id"] == 1
    assert entries[("transaction", "tx-1")]["node_id"] == 1
    assert entries[("group", "broken")]["node_id"] is None
    assert entries[("group", "broken")]["error"].startswith("COORDINATOR_NOT_AVAILABLE")
    assert result.stderr.strip() == "kafkacompat coordinators: 1 of 3 key(s) have no coordinator"


async def test_coordinators_on_tansu_from_stdin(tansu: TansuBroker, run_cli: Runner) -> None:
    result = await run_cli("coordinators", tansu.bootstrap, "--groups-file", "-", *FAST, stdin=b"g1\ng2\n")
    assert result.code == 0, result.stderr
    assert "2 group key(s): 2 found, 0 failed; FindCoordinator v6, 1 batched request(s)" in result.stdout


async def test_coordinators_needs_a_key(cli: Runner) -> None:
    result = await cli("coordinators", "127.0.0.1:9")
    assert (result.code, result.stderr.strip()) == (
        2,  # a command line that cannot be used as typed
        "kafkacompat coordinators: no key given: use --group, --groups-file or --transactional-id",
    )


async def test_snapshot_appends_valid_schema_1_lines(
    emulated_cluster: Any, cli: Runner, tmp_path: Path
) -> None:
    cluster = await emulated_cluster(["3.9", "3.8"])
    out = tmp_path / "fleet.jsonl"
    for _ in range(2):
        result = await cli("snapshot", cluster.bootstrap, "--all-brokers", "--out", str(out), *FAST)
        assert result.code == 0, result.stderr
        assert f"appended 2 line(s) to {out}" in result.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    parsed = [parse_snapshot_line(line) for line in lines]
    assert all(problems == [] for _, problems in parsed)
    first = parsed[0][0]
    assert first is not None
    assert (first["schema"], first["cluster_id"], first["node_id"]) == (1, "kafkacompat-emulated", 1)
    assert first["endpoint"] == cluster.broker(1).address
    assert first["observed_at"].endswith("Z")
    assert first["release_guess"]["text"] == "Kafka 3.9 (zk-broker)"
    assert {"api_key": 1, "min": 0, "max": 17} in first["api_versions"]
    assert first["handshake"]["round_trips"] == 2  # v5 refused by 3.9, then its own max


async def test_snapshot_of_an_old_broker_needs_a_cluster_id(
    emulated_cluster: Any, cli: Runner, tmp_path: Path
) -> None:
    cluster = await emulated_cluster(["0.10.0"])
    out = tmp_path / "old.jsonl"
    refused = await cli("snapshot", cluster.bootstrap, "--out", str(out), *FAST)
    assert refused.code == 1
    assert "name it with --cluster-id" in refused.stderr
    named = await cli("snapshot", cluster.bootstrap, "--out", "-", "--cluster-id", "legacy", *FAST)
    assert named.code == 0, named.stderr
    line, problems = parse_snapshot_line(named.stdout.strip())
    assert problems == [] and line is not None
    assert line["cluster_id"] == "legacy"
    assert [a["version"] for a in line["handshake"]["attempts"]] == [5, 0]


async def test_snapshot_of_tansu(tansu: TansuBroker, cli: Runner) -> None:
    result = await cli("snapshot", tansu.bootstrap, "--out", "-", *FAST)
    assert result.code == 0, result.stderr
    line, problems = parse_snapshot_line(result.stdout.strip())
    assert problems == [] and line is not None
    assert line["cluster_id"] == "kafkacompat-tests"
    assert line["finalized_features_epoch"] == -1
