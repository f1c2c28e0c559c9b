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
