"""``kafkacompat emulate`` as a process: it starts, prints the bootstrap, answers, and stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from kafkacompat.protocol.messages import ApiVersionsRequest, MetadataRequest
from tests.integration.emulator.wire_client import WireClient

ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT = 20.0


def emulate(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "kafkacompat.cli", "emulate", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )


def bootstrap_of(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("bootstrap: "):
            return line.removeprefix("bootstrap: ").strip()
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"no bootstrap line; stderr: {process.communicate(timeout=5)[1]}")


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)
        raise


async def test_emulate_starts_answers_and_stops_on_sigterm() -> None:
    process = emulate("--release", "2.3", "--brokers", "2", "--topic", "orders:3")
    try:
        bootstrap = await trio.to_thread.run_sync(bootstrap_of, process)
        addresses = bootstrap.split(",")
        assert len(addresses) == 2 and all(a.startswith("127.0.0.1:") for a in addresses)
        with trio.fail_after(10):
            async with await WireClient.connect(addresses[1]) as client:
                _, versions = await client.request(ApiVersionsRequest(), 0)
                assert {k.api_key: k.max_version for k in versions.api_keys}[18] == 2
                _, metadata = await client.request(MetadataRequest(topics=None), 8)
                assert [t.name for t in metadata.topics] == ["orders"]
                assert [b.node_id for b in metadata.brokers] == [1, 2]
    finally:
        code = await trio.to_thread.run_sync(stop, process)
    assert code == 0


def test_emulate_with_a_duration_exits_by_itself() -> None:
    process = emulate("--release", "3.9/kraft-broker", "--duration", "0.5")
    out, err = process.communicate(timeout=STARTUP_TIMEOUT)
    assert process.returncode == 0, err
    assert out.startswith("bootstrap: 127.0.0.1:") and "Kafka 3.9 (kraft-broker)" in out


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1"])
def test_emulate_refuses_a_non_loopback_bind(host: str) -> None:
    process = emulate("--host", host, "--duration", "1")
    out, err = process.communicate(timeout=STARTUP_TIMEOUT)
    assert process.returncode == 2 and out == ""  # usage: the command line names the address
    assert f"--host {host} is not a loopback address" in err and "--allow-non-loopback" in err


def test_emulate_reports_an_unknown_release() -> None:
    process = emulate("--release", "0.7")
    _, err = process.communicate(timeout=STARTUP_TIMEOUT)
    # usage: nothing is close to 0.7, so the answer says how far the table goes
    assert process.returncode == 2 and "no Kafka 0.7 in the release table; the table has 0.8.0 to" in err
