"""One battery for every real third-party broker here: Tansu 0.6, noida-db 0.2.3, librdkafka 2.0.2's mock.

The same commands run against each (inspect in text and JSON, ``--all-brokers``,
the coordinators of 1000 groups, snapshot, features describe); what differs
between the brokers is in ``PEERS``, and every entry there was observed on the
real binary.
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
from kafkacompat.testing.process import BrokerProcess
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

GROUPS = 1000


@dataclass(frozen=True)
class Peer:
    fixture: str
    api_versions: str  # the ApiVersions range it advertises
    handshake: str  # the handshake summary line
    find_coordinator: int  # the FindCoordinator version picked
    batched: bool  # FindCoordinator v4+ takes many keys per request (KIP-699)


PEERS = {
    "tansu": Peer(
        "tansu", "0-4", "ApiVersions v5 accepted; 1 attempt(s), 1 round trip(s), 1 connection(s)", 6, True
    ),
    # v4 refused with UNSUPPORTED_VERSION in the v0 layout, listing 0-3: retried at v3 on the same connection
    "noida": Peer(
        "noida", "0-3", "ApiVersions v3 accepted; 2 attempt(s), 2 round trip(s), 1 connection(s)", 4, True
    ),
    # v4 refused with a zero-count array followed by one entry (0-2): retried at v2, not v0
    "old_librdkafka_mock": Peer(
        "old_librdkafka_mock",
        "0-2",
        "ApiVersions v2 accepted; 2 attempt(s), 2 round trip(s), 1 connection(s)",
        2,
        False,
    ),
}


@pytest.fixture(params=sorted(PEERS))
def peer(request: pytest.FixtureRequest) -> tuple[Peer, BrokerProcess]:
    expected = PEERS[request.param]
    broker: BrokerProcess = request.getfixturevalue(expected.fixture)
    return expected, broker


def _nodes(broker: BrokerProcess) -> list[str]:
    """Every broker address of the peer (the mock runs several), by node id."""
    brokers: dict[int, tuple[str, int]] = getattr(broker, "brokers", {}) or {}
    return [f"{host}:{port}" for _, (host, port) in sorted(brokers.items())] or [broker.bootstrap]


def _evidence_cites_advertised(document: dict[str, Any]) -> None:
    ranges = {
        a["api_key"]: VersionRange(a["broker_min"], a["broker_max"])
        for a in document["apis"]
        if a["broker_min"] is not None
    }
    labels = {f"{name}({key})": key for key, name in API_NAMES.items()}
    for line in document["release_guess"]["evidence"]:
        label = line.split(" ", 1)[0].rstrip(":")
        key = labels.get(label)
        if key is not None and key in ranges:
            assert line.startswith((f"{label}: {ranges[key]} here", f"{label} {ranges[key]} ")), line


async def test_inspect_text(peer: tuple[Peer, BrokerProcess], cli: Runner) -> None:
    expected, broker = peer
    result = await cli("inspect", broker.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{broker.bootstrap} (id: ") and lines[0].endswith(" rack: null) -> (")
    low, high = expected.api_versions.split("-")
    assert f"\tApiVersions(18): {low} to {high} [usable: {high}]," in lines
    assert f"Handshake: {expected.handshake}" in lines
    assert any(line.startswith("Release guess: at least Kafka ") for line in lines)
    assert "Cluster " not in result.stdout  # one broker inspected: no cluster section


async def test_inspect_json(peer: tuple[Peer, BrokerProcess], cli: Runner) -> None:
    expected, broker = peer
    result = await cli("inspect", "--bootstrap-server", broker.bootstrap, "--format", "json", *FAST)
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["node_kind"] == "broker" and document["cluster_id"]
    (node,) = document["brokers"]
    assert f"{node['host']}:{node['port']}" == broker.bootstrap
    (api_versions,) = [a for a in node["apis"] if a["api_key"] == 18]
    assert f"{api_versions['broker_min']}-{api_versions['broker_max']}" == expected.api_versions
    _evidence_cites_advertised(node)
    assert len(node["handshake"]["attempts"]) == (1 if expected.api_versions == "0-4" else 2)


async def test_all_brokers(peer: tuple[Peer, BrokerProcess], cli: Runner) -> None:
    _, broker = peer
    result = await cli("inspect", broker.bootstrap, "--all-brokers", "--format", "json", *FAST)
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert [f"{b['host']}:{b['port']}" for b in document["brokers"]] == _nodes(broker)
    assert all(b["error"] is None for b in document["brokers"])
    if len(document["brokers"]) > 1:
        assert document["cluster"]["skew"] == []  # the same software on every node


async def test_coordinators_of_1000_groups(
    peer: tuple[Peer, BrokerProcess], cli: Runner, tmp_path: Path
) -> None:
    expected, broker = peer
    groups = tmp_path / "groups.txt"
    groups.write_text("".join(f"group-{n}\n" for n in range(GROUPS)), encoding="utf-8")
    result = await cli(
        "coordinators", broker.bootstrap, "--groups-file", str(groups), "--format", "json", *FAST
    )
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["versions"] == [expected.find_coordinator]
    assert document["batched"] is expected.batched
    assert document["requests"] < GROUPS if expected.batched else document["requests"] == GROUPS
    entries = document["coordinators"]
    assert [e["key"] for e in entries] == [f"group-{n}" for n in range(GROUPS)]
    assert all(e["error"] is None for e in entries)
    assert {f"{e['host']}:{e['port']}" for e in entries} <= set(_nodes(broker))


async def test_snapshot(peer: tuple[Peer, BrokerProcess], cli: Runner) -> None:
    _, broker = peer
    result = await cli("snapshot", broker.bootstrap, "--all-brokers", "--out", "-", *FAST)
    assert result.code == 0, result.stderr
    parsed = [parse_snapshot_line(line) for line in result.stdout.splitlines()]
    assert len(parsed) == len(_nodes(broker))
    assert all(problems == [] for _, problems in parsed), parsed
    lines = [line for line, _ in parsed if line is not None]
    assert [line["endpoint"] for line in lines] == _nodes(broker)
    assert len({line["cluster_id"] for line in lines}) == 1
    assert all(line["finalized_features_epoch"] == -1 for line in lines)  # none of them has features


async def test_features_describe(peer: tuple[Peer, BrokerProcess], cli: Runner) -> None:
    _, broker = peer
    result = await cli("features", "describe", broker.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    count = len(_nodes(broker))
    assert f"Checked on {count} broker(s): no broker supports or finalizes any feature" in result.stdout
    assert "finalized epoch -" not in result.stdout
