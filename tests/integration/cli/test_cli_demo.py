"""``make demo``: runs on this machine, shows every part, and stops what it started."""

from __future__ import annotations

import os
import sys

import pytest
import trio

from tests.integration.cli.cli_runner import DEADLINE, ROOT

pytestmark = pytest.mark.broker


async def test_demo_runs_every_part() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with trio.fail_after(DEADLINE * 2):
        done = await trio.run_process(
            [sys.executable, "-m", "kafkacompat.demo"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
            cwd=ROOT,
        )
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    for heading in (
        "1. A real broker: Tansu on 127.0.0.1, inspected",
        "2. The coordinators of 300 groups, in one batched request",
        "3. An emulated Kafka 0.10.0 broker: the handshake comes down to v0",
        "4. A real Apache Kafka 0.9.0.1: older than ApiVersions, known by its behaviour",
    ):
        assert f"{heading}\n{'=' * len(heading)}\n" in out
    # The coordinators command is shown as a user can run it (group ids on stdin, text output).
    assert "$ seq -f 'demo-group-%g' 0 299 | kafkacompat coordinators 127.0.0.1:" in out
    assert "--format json" not in out
    batched = "300 group key(s): 300 found, 0 failed; FindCoordinator v6, 1 batched request(s), 1 round trip"
    assert batched in out
    assert "300 group key(s): 300 found, 0 failed; FindCoordinator v0, 300 single-key request(s)" in out
    assert "\t2. ApiVersions v0 on connection 1: ok" in out
    assert "Release guess: Kafka 0.9.0 (zk-broker), older than 0.10 (exact)" in out
    assert "\t1. ApiVersions v5 on connection 1: skipped-api-versions" in out
    assert "Tansu stopped." in out and "The emulated broker stopped." in out
    assert "Kafka 0.9.0.1 stopped." in out
