"""The codec against real brokers: decode what they send, re-encode to equal values.

Requests are written by kafkacompat's codec, replies come from Tansu 0.6.0 and
from the librdkafka mock cluster, both started by the test session on 127.0.0.1.
"""

from __future__ import annotations

import pytest

from kafkacompat.protocol import framing
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafkacompat.testing.tansu import TansuBroker
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.brokers.raw import exchange

pytestmark = pytest.mark.broker

Peer = TansuBroker | LibrdkafkaMockCluster


def round_trip(
    peer: Peer, request: KafkaMessage, version: int, response_cls: type[KafkaMessage]
) -> KafkaMessage:
    correlation_id = 1000 + version
    frame = framing.encode_request(request, version, correlation_id, client_id="kafkacompat-tests")
    reply = exchange(peer.host, peer.port, frame[4:])
    got_id, response = framing.decode_response(reply, response_cls, version)
    assert got_id == correlation_id
    # Lossless: what we decoded writes back to bytes that decode to the same value.
    assert response_cls.decode(response.encode(version), version) == response
    return response


@pytest.mark.parametrize("version", range(5))
def test_tansu_api_versions(tansu: TansuBroker, version: int) -> None:
    request = ApiVersionsRequest(client_software_name="kafkacompat", client_software_version="0.1.0")
    response = round_trip(tansu, request, version, ApiVersionsResponse)
    assert isinstance(response, ApiVersionsResponse)
    assert response.error_code == 0
    own = response.api_keys.find(18)  # type: ignore[attr-defined]
    assert (own.min_version, own.max_version) == (0, 4)
    assert {k.api_key for k in response.api_keys} >= {0, 1, 3, 10, 18}


@pytest.mark.parametrize("version", range(13))
def test_tansu_metadata(tansu: TansuBroker, version: int) -> None:
    request = MetadataRequest(topics=[] if version == 0 else None)
    response = round_trip(tansu, request, version, MetadataResponse)
    assert isinstance(response, MetadataResponse)
    assert [(b.host, b.port) for b in response.brokers] == [(tansu.host, tansu.port)]


@pytest.mark.parametrize("version", range(7))
def test_tansu_find_coordinator(tansu: TansuBroker, version: int) -> None:
    if version < 4:
        request = FindCoordinatorRequest(key="group-a")
    else:
        request = FindCoordinatorRequest(coordinator_keys=["group-a", "group-b", "group-c"])
    response = round_trip(tansu, request, version, FindCoordinatorResponse)
    assert isinstance(response, FindCoordinatorResponse)
    if version < 4:
        assert (response.error_code, response.host, response.port) == (0, tansu.host, tansu.port)
    else:
        assert [c.key for c in response.coordinators] == ["group-a", "group-b", "group-c"]
        assert {(c.error_code, c.host, c.port) for c in response.coordinators} == {
            (0, tansu.host, tansu.port)
        }


@pytest.mark.parametrize("version", range(3))
def test_librdkafka_mock_api_versions(librdkafka_mock: LibrdkafkaMockCluster, version: int) -> None:
    response = round_trip(librdkafka_mock, ApiVersionsRequest(), version, ApiVersionsResponse)
    assert isinstance(response, ApiVersionsResponse)
    assert response.error_code == 0
    own = response.api_keys.find(18)  # type: ignore[attr-defined]
    assert own.max_version == 2


@pytest.mark.parametrize("version", range(4))
def test_librdkafka_mock_find_coordinator(librdkafka_mock: LibrdkafkaMockCluster, version: int) -> None:
    response = round_trip(
        librdkafka_mock, FindCoordinatorRequest(key="group-a"), version, FindCoordinatorResponse
    )
    assert isinstance(response, FindCoordinatorResponse)
    assert response.error_code == 0
    assert (response.host, response.port) == (librdkafka_mock.host, librdkafka_mock.port)
