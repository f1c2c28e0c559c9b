"""Real Apache Kafka clusters for the integration battery: one started cluster per release, shared.

``apache_cluster`` is module-scoped and parametrized over ``CI_SET``: pytest
groups the tests by cluster, so each release starts once per module and only
one runs at a time.  Each cluster is warmed up before use: the offsets topic
is created (a first FindCoordinator does that) and every one of its partitions
has a leader, so the battery sees a settled cluster, as a user's would be.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kafkacompat.errors import BrokerStartError, KafkaCompatError
from kafkacompat.protocol import framing
from kafkacompat.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from kafkacompat.testing import ApacheKafka
from tests.integration.cli.conftest import cli, run_cli

__all__ = ["CI_SET", "ClusterSpec", "apache_cluster", "cli", "run_cli", "started", "warm_up"]

OFFSETS_PARTITIONS = 4  # offsets.topic.num.partitions the launcher sets
_WARM_UP_SECONDS = 60.0


@dataclass(frozen=True)
class ClusterSpec:
    release: str
    mode: str
    brokers: int = 1

    @property
    def label(self) -> str:
        return f"{self.release}-{self.mode}"


# The representative set: a ZooKeeper-mode 2.x broker, 3.9 KRaft combined, 4.0 (three brokers)
# and 4.4 with a separate controller.
CI_SET = (
    ClusterSpec("2.8.2", "zookeeper"),
    ClusterSpec("3.9.2", "kraft-combined"),
    ClusterSpec("4.0.2", "kraft-split", brokers=3),
    ClusterSpec("4.4.0", "kraft-split"),
)


def started(kafka: ApacheKafka) -> Iterator[ApacheKafka]:
    """Start ``kafka`` (a failure fails the test, never skips it), warm it up, stop it afterwards."""
    try:
        kafka.start()
    except BrokerStartError as exc:
        pytest.fail(f"could not start Apache Kafka {kafka.release} ({kafka.mode}): {exc}", pytrace=False)
    try:
        warm_up(kafka)
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="module", params=CI_SET, ids=lambda spec: spec.label)
def apache_cluster(request: pytest.FixtureRequest) -> Iterator[ApacheKafka]:
    spec: ClusterSpec = request.param
    yield from started(ApacheKafka(spec.release, mode=spec.mode, brokers=spec.brokers))


def _java_hash(text: str) -> int:
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value


def _one_key_per_offsets_partition() -> list[str]:
    """Group ids whose offsets partition (Java hashCode, non-negative, modulo the count) covers them all."""
    found: dict[int, str] = {}
    index = 0
    while len(found) < OFFSETS_PARTITIONS:
        key = f"warm-up-{index}"
        found.setdefault((_java_hash(key) & 0x7FFFFFFF) % OFFSETS_PARTITIONS, key)
        index += 1
    return list(found.values())


def _find_coordinator_error(host: str, port: int, key: str, correlation_id: int) -> int:
    """FindCoordinator v1 (every release from 0.11 to 4.x reads it) for one group: its error code."""
    import socket

    frame = framing.encode_request(FindCoordinatorRequest(key=key), 1, correlation_id, "kafkacompat-warm-up")
    with socket.create_connection((host, port), timeout=5.0) as sock:
        sock.sendall(frame)
        splitter = framing.FrameSplitter()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed during FindCoordinator")
            frames = splitter.feed(chunk)
            if frames:
                _, response = framing.decode_response(frames[0], FindCoordinatorResponse, 1)
                return response.error_code


def warm_up(kafka: ApacheKafka) -> None:
    """Until every offsets partition has a coordinator (bounded)."""
    _, host, port = kafka.broker_endpoints[0]
    pending = _one_key_per_offsets_partition()
    deadline = time.monotonic() + _WARM_UP_SECONDS
    correlation = 0
    while pending and time.monotonic() < deadline:
        correlation += 1
        try:
            if _find_coordinator_error(host, port, pending[0], correlation) == 0:
                pending.pop(0)
                continue
        except (OSError, KafkaCompatError):
            pass
        time.sleep(0.5)
    if pending:
        pytest.fail(f"Apache Kafka {kafka.release}: no coordinator for {pending} in {_WARM_UP_SECONDS:.0f}s")
