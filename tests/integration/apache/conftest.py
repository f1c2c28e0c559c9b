"""Real Apache Kafka clusters for the integration battery: one started cluster per release, shared.

``apache_cluster`` is package-scoped and parametrized over ``CI_SET``: pytest
groups every test of this folder that uses it, across modules, by cluster, so
each release starts once per run (and the last one stops when the folder's
tests are done), and a cluster is stopped before the one after the
next is started.  While the tests use one cluster, the next one the session
will use is started (and warmed up) in a background thread: a JVM start is mostly waiting,
so the two overlap even on two cores.  Each cluster is warmed up before use:
the offsets topic is created (a first FindCoordinator does that) and every one
of its partitions has a leader, so the battery sees a settled cluster, as a
user's would be.

The clusters one module changes (the scratch cluster of the feature upgrade,
the rolling upgrades' clusters: ``MODULE_CLUSTERS``) come from the same pool,
so they too start in the background while the tests before them run.

Every cluster of the set also has the secured listeners: SASL_PLAINTEXT with
PLAIN and SCRAM users (``USERS``; SCRAM users created through ZooKeeper on
2.8, by ``format --add-scram`` on KRaft) and SSL with a CA made for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from kafkacompat.errors import BrokerStartError, KafkaCompatError
from kafkacompat.protocol import framing
from kafkacompat.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from kafkacompat.testing import ApacheKafka
from tests.integration.cli.conftest import cli, run_cli

__all__ = [
    "CI_SET",
    "MODULE_CLUSTERS",
    "USERS",
    "ClusterSpec",
    "apache_cluster",
    "cli",
    "kraft",
    "run_cli",
    "scratch",
    "started",
    "warm_up",
    "zookeeper",
]

OFFSETS_PARTITIONS = 4  # offsets.topic.num.partitions the launcher sets
_WARM_UP_SECONDS = 60.0


@dataclass(frozen=True)
class ClusterSpec:
    release: str
    mode: str
    brokers: int = 1
    secured: bool = True  # the SASL (PLAIN and SCRAM) and SSL listeners
    features: tuple[tuple[str, int], ...] = ()  # KRaft format levels
    broker_config: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return f"{self.release}-{self.mode}"

    def cluster(self) -> ApacheKafka:
        users = USERS if self.secured else None
        return ApacheKafka(
            self.release,
            mode=self.mode,
            brokers=self.brokers,
            features=dict(self.features),
            broker_config=dict(self.broker_config),
            sasl_plain_users=users,
            sasl_scram_users=users,
            ssl=self.secured,
        )


#: The users of the SASL listener of every cluster of CI_SET: both PLAIN and SCRAM know them.
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


# The representative set: a ZooKeeper-mode 2.x broker, 3.9 KRaft combined, 4.0 (three brokers)
# and 4.4 with a separate controller.
CI_SET = (
    ClusterSpec("2.8.2", "zookeeper"),
    ClusterSpec("3.9.2", "kraft-combined"),
    ClusterSpec("4.0.2", "kraft-split", brokers=3),
    ClusterSpec("4.4.0", "kraft-split"),
)


# The clusters one module uses alone (each changes its cluster), by the name of its fixture.
SCRATCH = ClusterSpec(
    "4.0.2", "kraft-combined", secured=False, features=(("transaction.version", 0), ("group.version", 0))
)
ROLLING_KRAFT = ClusterSpec("3.9.2", "kraft-split", brokers=3, secured=False)
ROLLING_ZOOKEEPER = ClusterSpec(
    "2.8.2",
    "zookeeper",
    brokers=3,
    secured=False,
    broker_config=(("inter.broker.protocol.version", "2.8"), ("log.message.format.version", "2.8")),
)
MODULE_CLUSTERS = {"scratch": SCRATCH, "kraft": ROLLING_KRAFT, "zookeeper": ROLLING_ZOOKEEPER}


def started(kafka: ApacheKafka) -> Iterator[ApacheKafka]:
    """Start ``kafka`` (a failure fails the test, never skips it), warm it up, stop it afterwards."""
    try:
        _start_and_warm_up(kafka)
    except BrokerStartError as exc:
        pytest.fail(f"could not start Apache Kafka {kafka.release} ({kafka.mode}): {exc}", pytrace=False)
    try:
        yield kafka
    finally:
        kafka.stop()


class _ClusterPool:
    """The folder's clusters, each started once; the next one starts while the current one serves."""

    def __init__(self, order: list[ClusterSpec]) -> None:
        self._order = order  # the clusters the session's tests use, in the order they run
        self._pending: dict[ClusterSpec, Future[ApacheKafka]] = {}
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="apache-cluster")

    def _start(self, spec: ClusterSpec) -> Future[ApacheKafka]:
        if spec not in self._pending:
            self._pending[spec] = self._starter.submit(_start_and_warm_up, spec.cluster())
        return self._pending[spec]

    def take(self, spec: ClusterSpec) -> ApacheKafka:
        """The started cluster of ``spec``; the one the tests use after it begins starting."""
        started_one = self._start(spec)
        following = self._order.index(spec) + 1 if spec in self._order else len(self._order)
        if following < len(self._order):
            self._start(self._order[following])
        try:
            return started_one.result()
        except BrokerStartError as exc:
            pytest.fail(f"could not start Apache Kafka {spec.release} ({spec.mode}): {exc}", pytrace=False)

    def close(self) -> None:
        """Stop what was started ahead and never taken (a run that selected only some clusters)."""
        self._starter.shutdown(wait=True)
        for future in self._pending.values():
            if future.exception() is None:
                future.result().stop()


def _start_and_warm_up(kafka: ApacheKafka) -> ApacheKafka:
    kafka.start()
    try:
        warm_up(kafka)
    except BaseException:
        kafka.stop()
        raise
    return kafka


def _session_order(session: pytest.Session) -> list[ClusterSpec]:
    """The clusters the selected tests use, in the order pytest (which groups them) will run them."""
    order: list[ClusterSpec] = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        used = [None if callspec is None else callspec.params.get("apache_cluster")]
        used += [MODULE_CLUSTERS.get(name) for name in getattr(item, "fixturenames", ())]
        for spec in used:
            if isinstance(spec, ClusterSpec) and spec not in order:
                order.append(spec)
    return order


@pytest.fixture(scope="package")
def _apache_pool(request: pytest.FixtureRequest) -> Iterator[_ClusterPool]:
    pool = _ClusterPool(_session_order(request.session))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="package", params=CI_SET, ids=lambda spec: spec.label)
def apache_cluster(request: pytest.FixtureRequest, _apache_pool: _ClusterPool) -> Iterator[ApacheKafka]:
    kafka = _apache_pool.take(request.param)
    try:
        yield kafka
    finally:
        kafka.stop()


def _pooled(pool: _ClusterPool, spec: ClusterSpec) -> Iterator[ApacheKafka]:
    kafka = pool.take(spec)
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="module")
def scratch(_apache_pool: _ClusterPool) -> Iterator[ApacheKafka]:
    """A 4.0.2 formatted at transaction.version 0 and group.version 0, for a real upgrade."""
    yield from _pooled(_apache_pool, SCRATCH)


@pytest.fixture(scope="module")
def kraft(_apache_pool: _ClusterPool) -> Iterator[ApacheKafka]:
    """Three brokers and a controller of 3.9.2, to roll to 4.0.2."""
    yield from _pooled(_apache_pool, ROLLING_KRAFT)


@pytest.fixture(scope="module")
def zookeeper(_apache_pool: _ClusterPool) -> Iterator[ApacheKafka]:
    """Three ZooKeeper-mode brokers of 2.8.2 (inter-broker protocol pinned at 2.8), to roll to 3.0.2."""
    yield from _pooled(_apache_pool, ROLLING_ZOOKEEPER)


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
        raise BrokerStartError(
            f"Apache Kafka {kafka.release}: no coordinator for {pending} in {_WARM_UP_SECONDS:.0f}s"
        )
