"""ApiVersions v5 (KIP-1242) against real Apache Kafka 4.4.0 and 4.3.1 (``ApacheKafka``).

- 4.4.0's broker accepts the right identity at v5, and answers a wrong cluster id or a
  wrong node id with REBOOTSTRAP_REQUIRED, which the handshake turns into the typed
  ``RebootstrapRequiredError`` naming the identity expected;
- its controller accepts any identity without checking;
- one half of an identity alone is refused (INVALID_REQUEST): why the client never sends one;
- a 4.3 broker costs one extra round trip on the first connection only, when the
  connections share an ``ApiVersionsMemory`` (the cluster layer's is shared by its nodes);
- the cluster layer sends each known node its identity and gets it confirmed.

The test functions take the started cluster as their argument, so the same checks can be
run on a cluster started some other way.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import RebootstrapRequiredError
from kafkacompat.negotiation.handshake import Done, Fail
from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
from kafkacompat.protocol.framing import encode_request
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from kafkacompat.testing import ApacheKafka
from kafkacompat.transport.cluster import connect
from tests.support.blocking_handshake import handshake

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def kafka_44() -> Iterator[Any]:
    with ApacheKafka("4.4.0", mode="kraft-split", brokers=1) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def kafka_43() -> Iterator[Any]:
    with ApacheKafka("4.3.1", mode="kraft-split", brokers=1) as kafka:
        yield kafka


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


def test_a_43_broker_costs_one_extra_round_trip_ever(kafka_43: Any) -> None:
    check_a_43_broker_costs_one_extra_round_trip_ever(kafka_43)
