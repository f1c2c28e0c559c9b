"""``kafkacompat features`` against emulated controllers and Tansu: Kafka's sentences and exit codes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafkacompat.testing.tansu import TansuBroker
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

MV = "metadata.version"


async def test_describe_on_tansu(tansu: TansuBroker, cli: Runner) -> None:
    result = await cli("features", "describe", tansu.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    assert result.stdout == "Checked on 1 broker(s): no broker supports or finalizes any feature\n"


async def test_describe_a_kraft_cluster(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9/kraft-broker", "3.9/kraft-broker"])
    result = await cli("features", "describe", cluster.bootstrap, *FAST)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    mv = next(line for line in lines if line.startswith(f"Feature: {MV}\t"))
    fields = dict(part.split(": ", 1) for part in mv.split("\t"))
    assert fields["SupportedMinVersion"] == "3.0-IV1" and fields["SupportedMaxVersion"] == "3.9-IV0"
    assert fields["Epoch"] != "-"
    assert any(line.startswith("Checked on 2 broker(s): finalized epoch ") for line in lines)
    brief = await cli("features", "describe", cluster.bootstrap, "--brief", *FAST)
    assert all(line.startswith("Feature: ") for line in brief.stdout.splitlines())
    document = json.loads(
        (await cli("features", "describe", cluster.bootstrap, "--format", "json", *FAST)).stdout
    )
    assert document["_command"] == "features describe"
    assert [b["node_id"] for b in document["brokers"]] == [1, 2]


async def test_upgrade_dry_run_then_for_real(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9/kraft-broker"], finalized_features={MV: 20}, finalized_epoch=3)
    dry = await cli(
        "features", "upgrade", cluster.bootstrap, "--release-version", "3.9-IV0", "--dry-run", *FAST
    )
    assert (dry.code, dry.stdout) == (0, "metadata.version can be upgraded to 21.\n"), dry.stderr
    assert cluster.state.finalized[MV] == 20
    real = await cli("features", "upgrade", cluster.bootstrap, "--feature", f"{MV}=21", *FAST)
    assert (real.code, real.stdout) == (0, "metadata.version was upgraded to 21.\n"), real.stderr
    assert cluster.state.finalized[MV] == 21
    after = await cli("features", "describe", cluster.bootstrap, "--brief", *FAST)
    assert (
        f"Feature: {MV}\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.9-IV0\t"
        f"FinalizedVersionLevel: 3.9-IV0\tEpoch: 4" in after.stdout
    )


async def test_downgrade_checks_dependencies_and_format_changes(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(
        ["3.9/kraft-broker"], finalized_features={MV: 21, "kraft.version": 1}, finalized_epoch=7
    )
    blocked = await cli("features", "downgrade", cluster.bootstrap, "--release-version", "3.6-IV2", *FAST)
    assert blocked.code == 1
    assert blocked.stdout == (
        "Could not downgrade metadata.version to 14. Refused before sending, by the check on every broker: "
        "kraft.version 1 requires metadata.version 21 (3.9-IV0) or higher, but metadata.version would be at "
        "14 (3.6-IV2).\n"
    )
    assert blocked.stderr == "1 out of 1 operation(s) failed.\n"
    wrong_way = await cli("features", "upgrade", cluster.bootstrap, "--feature", f"{MV}=20", *FAST)
    assert wrong_way.code == 1
    assert wrong_way.stdout == (
        "Could not upgrade metadata.version to 20. It is finalized at metadata.version 21 (3.9-IV0): "
        "an upgrade cannot lower it; use downgrade.\n"
    )
    same = await cli(
        "features", "downgrade", cluster.bootstrap, "--release-version", "3.9-IV0", "--dry-run", *FAST
    )
    assert (same.code, same.stdout) == (0, "metadata.version can be downgraded to 21.\n"), same.stderr


async def test_unsafe_downgrade_and_disable(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9/kraft-broker"], finalized_features={MV: 21, "kraft.version": 1})
    disabled = await cli("features", "disable", cluster.bootstrap, "--feature", "kraft.version", *FAST)
    assert (disabled.code, disabled.stdout) == (0, "kraft.version was disabled.\n"), disabled.stderr
    assert "kraft.version" not in cluster.state.finalized
    unsafe = await cli("features", "downgrade", cluster.bootstrap, "--release-version", "3.6-IV2", *FAST)
    assert unsafe.code == 1
    assert unsafe.stdout.startswith(
        "Could not downgrade metadata.version to 14. Downgrading metadata.version from 21 to 14 crosses "
        "metadata format changes"
    )
    forced = await cli(
        "features",
        "downgrade",
        cluster.bootstrap,
        "--release-version",
        "3.6-IV2",
        "--unsafe",
        "--dry-run",
        *FAST,
    )
    # Sent (--unsafe skips our format check); the controller's own refusal is the sentence's reason.
    assert forced.code == 1
    assert forced.stdout.startswith("Can not downgrade metadata.version to 14. ")
    assert "unsafe metadata.version downgrades are not supported" in forced.stdout
    assert cluster.state.finalized[MV] == 21


async def test_check_on_every_broker_names_the_blocking_broker(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9/kraft-broker", "3.8/kraft-broker"], finalized_features={MV: 20})
    result = await cli("features", "upgrade", cluster.bootstrap, "--release-version", "3.9-IV0", *FAST)
    assert result.code == 1
    assert result.stdout == (
        "Could not upgrade metadata.version to 21. Refused before sending, by the check on every broker: "
        f"node 2 at {cluster.broker(2).address} supports metadata.version 1-20 (3.0-IV1 to 3.8-IV0) only.\n"
    )
    assert result.stderr.strip() == "1 out of 1 operation(s) failed."
    dry = await cli(
        "features", "upgrade", cluster.bootstrap, "--release-version", "3.9-IV0", "--dry-run", *FAST
    )
    assert dry.stdout.startswith("Can not upgrade metadata.version to 21. Refused before sending")
    assert not any(r.api_key == 57 for r in cluster.requests)  # nothing was sent: UpdateFeatures is key 57


async def test_argument_errors_are_kafkas(emulated_cluster: Any, cli: Runner) -> None:
    cluster = await emulated_cluster(["3.9/kraft-broker"])
    none = await cli("features", "upgrade", cluster.bootstrap)
    assert (none.code, none.stderr.strip()) == (
        1,
        "kafkacompat features upgrade: You must specify at least one feature to upgrade",
    )
    bad = await cli("features", "downgrade", cluster.bootstrap, "--feature", "kraft.version")
    assert bad.stderr.strip().endswith(
        "Can't parse feature=level string kraft.version: equals sign not found."
    )
