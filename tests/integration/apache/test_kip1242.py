"""ApiVersions v5 (KIP-1242) against real Apache Kafka: a 4.4.0 cluster, and a mixed 4.3.1/4.4.0 one.

On 4.4.0 (a broker and a controller):

- the broker accepts the right identity at v5, and answers a wrong cluster id or a
  wrong node id with REBOOTSTRAP_REQUIRED, which the handshake turns into the typed
  ``RebootstrapRequiredError`` naming the identity expected;
- its controller accepts any identity without checking;
- one half of an identity alone is refused (INVALID_REQUEST): why the client never sends one;
- the cluster layer sends each known node its identity and gets it confirmed.

On a mixed cluster (``mixed``: started as 4.3.1 with three brokers and a controller, then
brokers 2 and 3 restarted as 4.4.0; broker 1 and the controller stay 4.3.1), every count
taken from the wire by a ``CountingProxy`` in front of the brokers, never from the client:

- a 4.3 broker costs one extra round trip, once, ever (the memory of advertised maxima),
  and the 4.4 brokers confirm their identity at v5, on the trio and asyncio clusters;
- a node believed at another 4.4 broker's address gets REBOOTSTRAP_REQUIRED there, and the
  trio, asyncio and blocking clusters bootstrap again and find it, without trying that
  address again; a call still ends by its deadline when bootstrapping again cannot succeed;
- where the broker cannot check (4.3), the client does: a node believed at a 4.3 broker's
  address (``misrouting_check="every-connection"``), and another cluster's 4.3 broker met
  by a Metadata refresh (the default check), both lead to a new bootstrap;
- ``kafkacompat inspect --expect-cluster-id`` says who checked each broker, and a wrong
  expectation is one line and exit 1 on 4.4 and on 4.3.

The check functions take the started clusters as their arguments, so the same checks can be
run on clusters started some other way.  A stale client (one whose Metadata is out of date) is
made by ``believe``: real brokers cannot be moved, so the client is made to remember them
where they are not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import trio

import kafkacompat
import kafkacompat.aio
from kafkacompat.connection.config import ConnectionConfig, RetryPolicy
from kafkacompat.errors import (
    KafkaCompatError,
    KafkaTimeoutError,
    NoBrokerReachableError,
    RebootstrapRequiredError,
)
from kafkacompat.negotiation.handshake import Done, Fail
from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
from kafkacompat.protocol.framing import encode_request
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafkacompat.testing import ApacheKafka
from kafkacompat.testing.counting_proxy import Connection, CountingProxy
from kafkacompat.transport.cluster import connect
from tests.support.blocking_handshake import handshake

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ConnectionConfig(connect_timeout=10, request_timeout=10)
EVERY = dataclasses.replace(CONFIG, misrouting_check="every-connection")
UNSUPPORTED_VERSION, REBOOTSTRAP_REQUIRED = 35, 129
API_VERSIONS, METADATA = 18, 3
#: The mixed cluster: which nodes run which release once the fixture has restarted some.
MIXED_44 = (2, 3)
MIXED_43 = (1,)
DRIVERS = ("trio", "asyncio", "blocking")


@pytest.fixture(scope="module")
def kafka_44() -> Iterator[Any]:
    with ApacheKafka("4.4.0", mode="kraft-split", brokers=1) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def mixed() -> Iterator[Any]:
    """4.3.1 with three brokers and a controller, brokers 2 and 3 then restarted as 4.4.0.

    The cluster keeps 4.3's metadata.version, as in a rolling upgrade that has not been
    finalized: a 4.3 node would refuse to join a cluster finalized at 4.4's.
    """
    with ApacheKafka("4.3.1", mode="kraft-split", brokers=3) as kafka:
        for node_id in MIXED_44:
            kafka.stop_node(node_id)
            kafka.start_node(node_id, release="4.4.0")
        yield kafka


@pytest.fixture(scope="module")
def proxy(mixed: Any) -> Iterator[CountingProxy]:
    """A counting proxy in front of every broker of the mixed cluster."""
    with CountingProxy([f"{host}:{port}" for _, host, port in mixed.broker_endpoints]) as counting:
        yield counting


def _broker(kafka: Any) -> tuple[int, str, int]:
    node_id, host, port = kafka.broker_endpoints[0]
    return int(node_id), str(host), int(port)


def _attempts(final: Done | Fail) -> list[tuple[int, str]]:
    transcript = final.result.transcript if isinstance(final, Done) else final.error.transcript
    return [(a.version, a.outcome) for a in transcript.attempts]


def check_the_right_identity_is_accepted_at_v5(kafka: Any) -> None:
    node_id, host, port = _broker(kafka)
    final = handshake(host, port, identity=BrokerIdentity(kafka.cluster_id, node_id))
    assert isinstance(final, Done), final
    assert _attempts(final) == [(5, "ok")]
    assert final.result.transcript.identity_sent == BrokerIdentity(kafka.cluster_id, node_id)


def check_a_wrong_cluster_id_gets_rebootstrap_required(kafka: Any) -> None:
    node_id, host, port = _broker(kafka)
    wrong = BrokerIdentity("AAAAAAAAAAAAAAAAAAAAAA", node_id)
    final = handshake(host, port, identity=wrong)
    assert isinstance(final, Fail) and isinstance(final.error, RebootstrapRequiredError)
    assert (final.error.error_code, final.error.expected_cluster_id) == (129, wrong.cluster_id)
    assert _attempts(final) == [(5, "rebootstrap-required")]


def check_a_wrong_node_id_gets_rebootstrap_required(kafka: Any) -> None:
    node_id, host, port = _broker(kafka)
    final = handshake(host, port, identity=BrokerIdentity(kafka.cluster_id, node_id + 1000))
    assert isinstance(final, Fail) and isinstance(final.error, RebootstrapRequiredError)
    assert final.error.expected_node_id == node_id + 1000


def check_a_controller_accepts_any_identity(kafka: Any) -> None:
    node_id, host, port = kafka.controller_endpoints[0]
    for identity in (
        BrokerIdentity(kafka.cluster_id, int(node_id)),
        BrokerIdentity("AAAAAAAAAAAAAAAAAAAAAA", int(node_id) + 1000),
    ):
        final = handshake(str(host), int(port), identity=identity)
        assert isinstance(final, Done), final
        assert _attempts(final) == [(5, "ok")]


def _raw_v5(host: str, port: int, cluster_id: str | None, node_id: int) -> int:
    request = ApiVersionsRequest(
        client_software_name="kafkacompat",
        client_software_version="1.0",
        cluster_id=cluster_id,
        node_id=node_id,
    )
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(encode_request(request, 5, 1, "kip1242-test"))
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, "the broker closed the connection"
            data += chunk
    return ApiVersionsResponse.decode(data[8:], 5).error_code


def check_one_half_of_an_identity_is_refused(kafka: Any) -> None:
    node_id, host, port = _broker(kafka)
    assert _raw_v5(host, port, None, node_id) == 42
    assert _raw_v5(host, port, kafka.cluster_id, -1) == 42
    _, chost, cport = kafka.controller_endpoints[0]
    assert _raw_v5(str(chost), int(cport), None, node_id) == 42  # checked on controllers too


def check_a_43_broker_costs_one_extra_round_trip_ever(kafka: Any) -> None:
    node_id, host, port = _broker(kafka)
    memory = ApiVersionsMemory()
    identity = BrokerIdentity(kafka.cluster_id, node_id)
    first = handshake(host, port, identity=identity, memory=memory)
    assert isinstance(first, Done) and _attempts(first) == [(5, "unsupported-version"), (4, "ok")]
    for _ in range(5):
        later = handshake(host, port, identity=identity, memory=memory)
        assert isinstance(later, Done) and _attempts(later) == [(4, "ok")]
        assert later.result.transcript.round_trips == 1


def check_the_cluster_layer_gets_every_node_confirmed(kafka: Any) -> None:
    async def run() -> None:
        config = ConnectionConfig(connect_timeout=10, request_timeout=10)
        async with connect(kafka.bootstrap, config) as cluster:
            assert cluster.cluster_id == kafka.cluster_id
            for node_id in sorted(cluster.brokers):
                conn = await cluster.connection(node_id)
                await conn.aclose()  # the bootstrap connection knew no node: open the node's own
                conn = await cluster.connection(node_id)
                assert conn.handshake is not None
                assert conn.handshake.transcript.identity_sent == BrokerIdentity(kafka.cluster_id, node_id)

    trio.run(run)


# -- the mixed cluster, counted from the wire ----------------------------------------------------


def upstream(kafka: Any, node_id: int) -> str:
    """The broker's own "host:port" (the counting proxy's name for it)."""
    (address,) = [f"{host}:{port}" for n, host, port in kafka.broker_endpoints if n == node_id]
    return address


async def believe(cluster: Any, node_id: int, address: str) -> None:
    """The cluster takes a stale answer: ``node_id`` listens at ``address`` (its connection goes)."""
    host, _, port = address.rpartition(":")
    metadata = cluster.metadata
    moved = dataclasses.replace(metadata.brokers[node_id], host=host, port=int(port))
    brokers = MappingProxyType({**metadata.brokers, node_id: moved})
    await cluster._apply(dataclasses.replace(metadata, brokers=brokers))  # as a refresh would


def run_cluster(
    driver: str, bootstrap: str, config: ConnectionConfig, scenario: Callable[[Any], Awaitable[Any]]
) -> Any:
    """``scenario(cluster)`` on the trio or the asyncio cluster layer."""

    async def main() -> Any:
        opening = kafkacompat.connect if driver == "trio" else kafkacompat.aio.connect
        async with opening(bootstrap, config) as cluster:
            return await scenario(cluster)

    return trio.run(main) if driver == "trio" else asyncio.run(main())


def request_stale(
    driver: str,
    bootstrap: str,
    config: ConnectionConfig,
    node_id: int,
    believed_at: str,
    *,
    timeout: float,
    meanwhile: Callable[[], None] = lambda: None,
) -> tuple[object, float]:
    """Believe ``node_id`` is at ``believed_at``, run ``meanwhile`` (blocking), then ask the node
    for Metadata within ``timeout``: (the answer or the error, seconds the call took)."""
    ask = MetadataRequest(topics=[])
    if driver == "blocking":
        with kafkacompat.connect_sync(bootstrap, config) as sync:
            sync._call(lambda: believe(sync.cluster, node_id, believed_at))
            meanwhile()
            started = time.monotonic()
            try:
                answer: object = sync.request(node_id, ask, request_timeout=timeout)
            except KafkaCompatError as exc:
                answer = exc
            return answer, time.monotonic() - started

    async def scenario(cluster: Any) -> tuple[object, float]:
        await believe(cluster, node_id, believed_at)
        if driver == "trio":
            await trio.to_thread.run_sync(meanwhile)
        else:
            await asyncio.to_thread(meanwhile)
        started = time.monotonic()
        try:
            return await cluster.request(node_id, ask, request_timeout=timeout), time.monotonic() - started
        except KafkaCompatError as exc:
            return exc, time.monotonic() - started

    result: tuple[object, float] = run_cluster(driver, bootstrap, config, scenario)
    return result


def shake(connection: Connection) -> list[tuple[int, int | None]]:
    return [(e.version, e.error_code) for e in connection.handshake]


def check_a_mixed_cluster_costs_one_extra_round_trip_per_43_broker_ever(
    kafka: Any, proxy: CountingProxy, driver: str
) -> None:
    proxy.clear()

    async def scenario(cluster: Any) -> None:
        for _ in range(3):  # every broker opened, then every connection closed: three times
            opened, failed = await cluster.open_all()
            assert not failed and sorted(opened) == [1, 2, 3], failed
            for conn in opened.values():
                await conn.aclose()
        await cluster.refresh_metadata()
        await cluster.capabilities()

    run_cluster(driver, proxy.address(upstream(kafka, 1)), CONFIG, scenario)
    everything = proxy.connections()
    for node_id, _, _ in kafka.broker_endpoints:
        seen = proxy.connections(upstream(kafka, node_id))
        assert len(seen) >= 4, [shake(c) for c in seen]  # the first connection and three more
        if node_id in MIXED_43:  # v5 refused once, on the first connection; v4 at once ever after
            assert shake(seen[0]) == [(5, UNSUPPORTED_VERSION), (4, 0)]
            assert all(shake(c) == [(4, 0)] for c in seen[1:]), [shake(c) for c in seen]
        else:  # 4.4: v5 at once, and every node connection's identity confirmed
            assert all(shake(c) == [(5, 0)] for c in seen), [shake(c) for c in seen]
            sent = [e.identity for c in seen for e in c.handshake]
            assert sent == [(kafka.cluster_id, node_id)] * len(seen)
    attempts = sum(len(c.handshake) for c in everything)
    assert attempts == len(everything) + len(MIXED_43)  # one round trip each, plus one per 4.3 broker


def check_every_driver_recovers_from_rebootstrap_required(
    kafka: Any, proxy: CountingProxy, driver: str
) -> None:
    """Node 3 believed where node 2 (4.4) listens: refused there once, found again by a new bootstrap."""
    proxy.clear()
    first, second, third = (upstream(kafka, n) for n in (1, 2, 3))
    answer, _ = request_stale(driver, proxy.address(first), CONFIG, 3, proxy.address(second), timeout=60)
    assert not isinstance(answer, BaseException), answer
    meant = (kafka.cluster_id, 3)
    refused = [e for c in proxy.connections(second) for e in c.exchanges if e.identity == meant]
    assert [(e.version, e.error_code) for e in refused] == [(5, REBOOTSTRAP_REQUIRED)]  # never retried
    refused_at = refused[0].answered_at
    assert refused_at is not None
    again = [
        c
        for c in proxy.connections(first)
        if c.opened_at > refused_at and any(e.api_key == METADATA for e in c.exchanges)
    ]
    assert len(again) == 1  # one new bootstrap round: Metadata read again
    found = [e for c in proxy.connections(third) for e in c.handshake if e.identity == meant]
    assert [(e.version, e.error_code) for e in found] == [(5, 0)]


def check_a_call_ends_by_its_deadline_when_bootstrapping_again_fails(kafka: Any, driver: str) -> None:
    """The only bootstrap address is closed after connecting: the new bootstrap REBOOTSTRAP_REQUIRED
    asks for cannot succeed, and its retries (patient ones) are cut by the call's deadline."""
    deadline, slack = 3.0, 2.0  # a loaded machine's scheduling, and the trio loop's thread start
    patient = dataclasses.replace(
        CONFIG, retry=RetryPolicy(attempts=50, initial_backoff=0.5, max_backoff=2.0)
    )
    with CountingProxy([upstream(kafka, 1)]) as door:
        answer, took = request_stale(
            driver,
            door.address(upstream(kafka, 1)),
            patient,
            3,
            upstream(kafka, 2),
            timeout=deadline,
            meanwhile=door.stop,
        )
    # Either the deadline cut the last attempt, or the retries stopped before an attempt that
    # could not finish in time (cluster/retries.py) and the refusal itself is the answer.
    assert isinstance(answer, KafkaTimeoutError | NoBrokerReachableError), answer
    if isinstance(answer, NoBrokerReachableError):
        assert door.address(upstream(kafka, 1)) in str(answer), answer
    assert took <= deadline + slack, took


def check_a_43_broker_at_a_nodes_address_is_caught_by_the_client(kafka: Any, proxy: CountingProxy) -> None:
    """Node 2 believed where node 1 (4.3) listens: 4.3 cannot check, so with every-connection the
    client reads Metadata on that connection, finds node 1 there, and bootstraps again."""
    proxy.clear()
    first, second = upstream(kafka, 1), upstream(kafka, 2)
    answer, _ = request_stale("trio", proxy.address(first), EVERY, 2, proxy.address(first), timeout=60)
    assert not isinstance(answer, BaseException), answer
    _bootstrap, misrouted, again = proxy.connections(first)  # and no other connection there
    assert [e.api_key for e in misrouted.exchanges] == [API_VERSIONS, METADATA]  # checked
    checked_at = misrouted.exchanges[-1].answered_at  # the proxy's close and accept may race: not those
    assert misrouted.closed_at is not None and checked_at is not None and again.opened_at > checked_at
    assert [e.api_key for e in again.exchanges] == [API_VERSIONS, METADATA]  # a new bootstrap round
    (node,) = proxy.connections(second)
    assert shake(node) == [(5, 0)] and node.handshake[0].identity == (kafka.cluster_id, 2)
    assert [e.api_key for e in node.exchanges] == [API_VERSIONS, METADATA]  # the call's: 4.4 confirmed


def check_another_clusters_43_broker_is_caught_by_a_metadata_refresh(kafka: Any, other: Any) -> None:
    """Node 1 believed at the other cluster's 4.3 broker: the default check compares the cluster id
    of the Metadata refresh read there, and the cluster bootstraps again, into its own cluster."""
    _, host, port = _broker(kafka)

    async def scenario(cluster: Any) -> Any:
        await believe(cluster, 1, upstream(other, 1))
        return await cluster.refresh_metadata()

    metadata = run_cluster("trio", kafka.bootstrap, CONFIG, scenario)
    assert metadata.cluster_id == kafka.cluster_id != other.cluster_id
    assert (metadata.brokers[1].host, metadata.brokers[1].port) == (host, port)


# -- kafkacompat inspect -------------------------------------------------------------------------


def inspect(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kafkacompat.cli", "inspect", *argv, "--timeout", "10", "--retries", "1"]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KAFKACOMPAT")}
    environment["PYTHONPATH"] = str(ROOT)
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=environment)


def check_inspect_says_who_checked_each_broker(kafka: Any) -> None:
    expecting = ("--expect-cluster-id", kafka.cluster_id)
    done = inspect(kafka.bootstrap, "--all-brokers", "--quiet", *expecting, "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    identities = {broker["node_id"]: broker["identity"] for broker in document["brokers"]}
    checked = {node_id: (i["status"], i["checked_by"]) for node_id, i in identities.items()}
    expected = {n: ("client-checked", "client") for n in MIXED_43}
    expected |= {n: ("confirmed", "broker") for n in MIXED_44}
    assert checked == expected
    assert document["expected_cluster_id"] == document["cluster_id"] == kafka.cluster_id


def check_a_wrong_expectation_is_one_line(kafka: Any) -> None:
    done = inspect(kafka.bootstrap, "--expect-cluster-id", "AAAAAAAAAAAAAAAAAAAAAA")
    assert (done.returncode, done.stdout) == (1, "")
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("kafkacompat inspect: wrong cluster: ") and kafka.cluster_id in line, line
    assert "AAAAAAAAAAAAAAAAAAAAAA" in line


def test_the_right_identity_is_accepted_at_v5(kafka_44: Any) -> None:
    check_the_right_identity_is_accepted_at_v5(kafka_44)


def test_a_wrong_cluster_id_gets_rebootstrap_required(kafka_44: Any) -> None:
    check_a_wrong_cluster_id_gets_rebootstrap_required(kafka_44)


def test_a_wrong_node_id_gets_rebootstrap_required(kafka_44: Any) -> None:
    check_a_wrong_node_id_gets_rebootstrap_required(kafka_44)


def test_a_controller_accepts_any_identity(kafka_44: Any) -> None:
    check_a_controller_accepts_any_identity(kafka_44)


def test_one_half_of_an_identity_is_refused(kafka_44: Any) -> None:
    check_one_half_of_an_identity_is_refused(kafka_44)


def test_the_cluster_layer_gets_every_node_confirmed(kafka_44: Any) -> None:
    check_the_cluster_layer_gets_every_node_confirmed(kafka_44)


def test_a_43_broker_costs_one_extra_round_trip_ever(mixed: Any) -> None:
    check_a_43_broker_costs_one_extra_round_trip_ever(mixed)  # broker 1 of the mixed cluster: 4.3.1


@pytest.mark.parametrize("driver", ["trio", "asyncio"])
def test_a_mixed_cluster_costs_one_extra_round_trip_per_43_broker_ever(
    mixed: Any, proxy: CountingProxy, driver: str
) -> None:
    check_a_mixed_cluster_costs_one_extra_round_trip_per_43_broker_ever(mixed, proxy, driver)


@pytest.mark.parametrize("driver", DRIVERS)
def test_every_driver_recovers_from_rebootstrap_required(
    mixed: Any, proxy: CountingProxy, driver: str
) -> None:
    check_every_driver_recovers_from_rebootstrap_required(mixed, proxy, driver)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_call_ends_by_its_deadline_when_bootstrapping_again_fails(mixed: Any, driver: str) -> None:
    check_a_call_ends_by_its_deadline_when_bootstrapping_again_fails(mixed, driver)


def test_a_43_broker_at_a_nodes_address_is_caught_by_the_client(mixed: Any, proxy: CountingProxy) -> None:
    check_a_43_broker_at_a_nodes_address_is_caught_by_the_client(mixed, proxy)


def test_another_clusters_43_broker_is_caught_by_a_metadata_refresh(kafka_44: Any, mixed: Any) -> None:
    check_another_clusters_43_broker_is_caught_by_a_metadata_refresh(kafka_44, mixed)


def test_inspect_says_who_checked_each_broker(mixed: Any) -> None:
    check_inspect_says_who_checked_each_broker(mixed)


@pytest.mark.parametrize("which", ["4.4", "4.3"])
def test_a_wrong_expectation_is_one_line(kafka_44: Any, mixed: Any, which: str) -> None:
    check_a_wrong_expectation_is_one_line(kafka_44 if which == "4.4" else mixed)
