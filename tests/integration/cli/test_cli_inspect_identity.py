"""``kafkacompat inspect`` and KIP-1242: whether the broker confirmed who it is, ``--expect-cluster-id``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

CLUSTER = "kafkacompat-emulated"  # the emulator's cluster id


async def test_a_44_broker_confirms_its_identity(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["4.4/kraft-broker"])
    result = await cli("inspect", cluster.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    line = f"Identity: the broker confirmed it is node 1 of cluster {CLUSTER} (ApiVersions v5, KIP-1242)"
    assert line in result.stdout
    result = await cli("inspect", cluster.bootstrap, "--format", "json", *FAST)
    document = json.loads(result.stdout)
    (broker,) = document["brokers"]
    assert broker["identity"]["status"] == "confirmed"
    assert broker["identity"]["sent"] == {"cluster_id": CLUSTER, "node_id": 1}
    assert document["expected_cluster_id"] is None


async def test_a_43_broker_cannot_confirm(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["4.3/kraft-broker"])
    result = await cli("inspect", cluster.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    assert "Identity: not confirmed: the broker speaks ApiVersions up to v4" in result.stdout


async def test_the_expected_cluster_is_checked(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["4.4/kraft-broker"])
    result = await cli("inspect", cluster.bootstrap, "--expect-cluster-id", CLUSTER, *FAST)
    assert result.code == 0, result.stderr
    assert f"Cluster: {CLUSTER}, as expected" in result.stdout
    expecting = ("--expect-cluster-id", CLUSTER)
    result = await cli("inspect", cluster.bootstrap, *expecting, "--format", "json", *FAST)
    assert json.loads(result.stdout)["expected_cluster_id"] == CLUSTER


@pytest.mark.parametrize("release", ["4.4/kraft-broker", "3.9"])
async def test_another_cluster_is_a_one_line_error(emulated_cluster: Any, cli: Runner, release: str) -> None:
    cluster = await emulated_cluster([release])
    result = await cli("inspect", cluster.bootstrap, "--expect-cluster-id", "someone-else", *FAST)
    assert result.code != 0 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "wrong cluster" in line and "someone-else" in line and CLUSTER in line
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("release", "status", "checked_by"),
    [("4.4/kraft-broker", "confirmed", "broker"), ("4.3/kraft-broker", "client-checked", "client")],
)
async def test_an_expected_cluster_is_checked_by_the_broker_or_by_the_client(
    emulated_cluster: Any, cli: Runner, release: str, status: str, checked_by: str
) -> None:
    cluster = await emulated_cluster([release, release])
    expecting = ("--expect-cluster-id", CLUSTER, "--all-brokers", "--quiet")
    result = await cli("inspect", cluster.brokers[0].address, *expecting, "--format", "json", *FAST)
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["expected_cluster_id"] == CLUSTER
    identities = [broker["identity"] for broker in document["brokers"]]
    assert [(i["status"], i["checked_by"]) for i in identities] == [(status, checked_by)] * 2
    result = await cli("inspect", cluster.brokers[0].address, *expecting, *FAST)
    if checked_by == "client":
        line = (
            f"Identity: checked by the client: Metadata read on this connection names this node of cluster "
            f"{CLUSTER} at this address (the broker speaks ApiVersions up to v4: it cannot confirm itself)"
        )
        assert result.stdout.count(line) == 2, result.stdout
    else:
        assert result.stdout.count("Identity: the broker confirmed it is node ") == 2, result.stdout


@pytest.mark.parametrize(
    ("release", "checked_by"), [("4.4/kraft-broker", "broker"), ("4.3/kraft-broker", "client")]
)
async def test_a_broker_named_at_another_clusters_address_fails_alone(
    emulated_cluster: Any, cli: Runner, release: str, checked_by: str
) -> None:
    """Node 2's advertised address is another cluster's broker: a 4.4 one refuses the identity
    (REBOOTSTRAP_REQUIRED), a 4.3 one is caught by the client's Metadata check; node 1 is fine."""
    cluster = await emulated_cluster([release, release])
    other = await emulated_cluster([release], cluster_id="someone-else", first_node_id=7)
    stray = cluster.state.nodes[2]
    stray.host, stray.port = other.brokers[0].host, other.brokers[0].port
    expecting = ("--expect-cluster-id", CLUSTER, "--all-brokers", "--quiet")
    result = await cli("inspect", cluster.brokers[0].address, *expecting, *FAST)
    assert result.code == 1, result.output
    (note,) = result.stderr.strip().splitlines()
    assert note.startswith("kafkacompat inspect: 1 of 2 broker(s) could not be inspected: node 2 at "), note
    if checked_by == "broker":
        assert "REBOOTSTRAP_REQUIRED" in note and f"node 2 of cluster {CLUSTER}" in note, note
    else:
        assert "belongs to cluster someone-else" in note and CLUSTER in note, note
    assert "Traceback" not in result.output
    answered = [r for r in other.requests if r.api_key == 18]
    assert answered, "node 2's connection reached the other cluster's broker"
