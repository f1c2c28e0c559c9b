"""Every script in examples/ runs against a real broker (Tansu) and says what it should."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkacompat.testing.tansu import TansuBroker

pytestmark = pytest.mark.broker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TIMEOUT = 60.0


def run_example(name: str, bootstrap: str, *args: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--bootstrap", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert completed.returncode == 0, f"{name} failed:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


def test_inspect_capabilities(tansu: TansuBroker) -> None:
    out = run_example("inspect_capabilities.py", tansu.bootstrap)
    assert "cluster kafkacompat-tests: 1 broker(s)" in out
    assert f"at {tansu.bootstrap}: at least Kafka" in out
    assert "1 broker(s): " + tansu.bootstrap in out


def test_embedded_client(tansu: TansuBroker) -> None:
    out = run_example("embedded_client.py", tansu.bootstrap, "--topic", "examples-embedded")
    assert "would send {'Metadata': 12, 'ListOffsets': 9}" in out
    assert "Metadata v12: examples-embedded[0] is led by node" in out
    assert "ListOffsets v9 (highest common): examples-embedded[0] latest offset 0 (error 0)" in out


def test_admin_groups_describe_and_delete(tansu: TansuBroker) -> None:
    out = run_example("admin_groups.py", tansu.bootstrap, "--groups", "600", "--prefix", "examples-admin")
    assert "lookup: 600 found, 0 failed; 2 batched request(s) at v6 in 1 round(s)" in out
    assert "one DescribeGroups for 600 group(s)" in out
    out = run_example("admin_groups.py", tansu.bootstrap, "--groups", "5", "--prefix", "examples-gone",
                      "--delete")
    assert "one DeleteGroups for 5 group(s): {'deleted': 5}" in out


def test_blocking_script(tansu: TansuBroker) -> None:
    out = run_example("blocking_script.py", tansu.bootstrap)
    assert "Metadata answered by the cluster kafkacompat-tests: 1 broker(s)" in out
    assert "coordinators: 10 found, 0 failed; 1 batched request(s) at v6" in out
    assert "finalized epoch -1" in out
    assert "dry run refused: FeatureUpdateBlockedError: metadata.version 21" in out


def test_asyncio_beside_aiokafka(tansu: TansuBroker) -> None:
    out = run_example("asyncio_beside_aiokafka.py", tansu.bootstrap, "--topic", "examples-aio")
    assert f"broker {tansu.bootstrap}: at least Kafka" in out
    assert "  Produce v11: the highest of 0-11" in out and "  Metadata v12: the highest of 0-12" in out
    assert "cluster kafkacompat-tests: 1 broker(s)" in out
    assert "aiokafka produced to examples-aio[" in out and "at offset 0" in out


def test_asyncio_cluster(tansu: TansuBroker) -> None:
    out = run_example("asyncio_cluster.py", tansu.bootstrap)
    assert out.startswith(f"cluster kafkacompat-tests: 1 broker(s) [111@{tansu.bootstrap}]")
    assert "Metadata answered by the cluster kafkacompat-tests: 1 broker(s)" in out
    assert "coordinators: 10 found, 0 failed; 1 batched request(s) at v6" in out
    assert "finalized epoch -1 (1 broker(s) answered)" in out


def test_asyncio_cluster_names_an_unreachable_bootstrap() -> None:
    from kafkacompat.testing.ports import free_port

    address = f"127.0.0.1:{free_port()}"
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "asyncio_cluster.py"), "--bootstrap", address],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert completed.returncode == 1 and "Traceback" not in completed.stderr
    assert f"cannot use {address}: NoBrokerReachableError" in completed.stdout
    assert "refused" in completed.stdout


# -- off the happy path: each example says what it needs, checks it, and ends in one line -------------

def run_raw(name: str, bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--bootstrap", bootstrap, *args],
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )


def one_line_failure(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    last = (done.stderr or done.stdout).strip().splitlines()
    assert len(last) >= 1
    return last[-1]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_every_example_says_what_it_needs_and_fails_in_one_line(name: str) -> None:
    assert "Needs:" in (EXAMPLES / name).read_text(), f"{name} does not say which broker it needs"
    from kafkacompat.testing.ports import free_port

    address = f"127.0.0.1:{free_port()}"
    line = one_line_failure(run_raw(name, address))
    assert address in line and "refused" in line


@pytest.mark.parametrize("name", ["inspect_capabilities.py", "blocking_script.py", "asyncio_cluster.py"])
def test_the_examples_that_need_any_broker_run_on_the_emulator(name: str) -> None:
    from kafkacompat.testing import ThreadedCluster

    with ThreadedCluster(["3.9"]) as cluster:
        done = run_raw(name, cluster.bootstrap)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Kafka 3.9" in done.stdout


def test_admin_groups_runs_on_the_emulator_and_checks_delete_groups_first() -> None:
    from kafkacompat.testing import ThreadedCluster

    with ThreadedCluster(["0.9.0"]) as cluster:  # the oldest it names: groups, no DeleteGroups
        described = run_raw("admin_groups.py", cluster.bootstrap, "--groups", "5")
        deleting = run_raw("admin_groups.py", cluster.bootstrap, "--groups", "5", "--delete")
    assert described.returncode == 0, described.stdout + described.stderr
    assert "node 1: one DescribeGroups for 5 group(s): {'Dead': 5}" in described.stdout
    line = one_line_failure(deleting)
    assert line.startswith("node 1 (Kafka 0.9.0") and line.endswith(
        "cannot delete groups: --delete needs DeleteGroups, Kafka 1.1 or later"
    ), line
    assert "lookup:" not in deleting.stdout  # checked before anything was looked up
    with ThreadedCluster(["2.0"]) as cluster:
        deleted = run_raw("admin_groups.py", cluster.bootstrap, "--groups", "5", "--delete")
    assert "one DeleteGroups for 5 group(s): {'GROUP_ID_NOT_FOUND': 5}" in deleted.stdout


def test_the_embedded_client_refuses_a_broker_without_create_topics() -> None:
    from kafkacompat.testing import ThreadedCluster

    with ThreadedCluster(["0.9.0"]) as cluster:
        line = one_line_failure(run_raw("embedded_client.py", cluster.bootstrap))
    assert "cannot create topics: this example needs Kafka 0.10.1 or later" in line


def test_asyncio_beside_aiokafka_gives_up_on_a_broker_that_stores_nothing() -> None:
    from kafkacompat.testing import ThreadedCluster

    with ThreadedCluster(["3.9"]) as cluster:
        done = run_raw("asyncio_beside_aiokafka.py", cluster.bootstrap)
    line = one_line_failure(done)
    assert line.startswith("aiokafka could not produce to kafkacompat-aio-example within 15 s")
