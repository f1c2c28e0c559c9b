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
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
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


def flexible_exchange(
    peer: Peer, request: KafkaMessage, version: int, response_cls: type[KafkaMessage]
) -> tuple[KafkaMessage, bytes]:
    """Send at a flexible version; return the decoded reply and its raw body (after the header)."""
    frame = framing.encode_request(request, version, 77, client_id="kafkacompat-tests")
    reply = exchange(peer.host, peer.port, frame[4:])
    assert reply[:5] == b"\x00\x00\x00\x4d\x00"  # correlation id 77, no header tags
    body = reply[5:]
    return response_cls.decode(body, version, allow_trailing=True), body


# The librdkafka mock (2.16) ends its Metadata and ShareGroupHeartbeat answers with
# one zero byte more than the spec has; Kafka's parser ignores trailing bytes, and
# so does the codec when asked (allow_trailing). Everything before it must re-encode
# byte for byte.
MOCK_TRAILING_ZERO = b"\x00"


def test_librdkafka_mock_metadata_v13(librdkafka_mock: LibrdkafkaMockCluster) -> None:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="codec-t1")])
    response, body = flexible_exchange(librdkafka_mock, request, 13, MetadataResponse)
    assert isinstance(response, MetadataResponse)
    assert response.error_code == 0  # the top-level ErrorCode of v13
    assert [t.name for t in response.topics] == ["codec-t1"]
    assert response.encode(13) + MOCK_TRAILING_ZERO == body


def test_librdkafka_mock_share_apis_v1(librdkafka_mock: LibrdkafkaMockCluster) -> None:
    """ShareGroupHeartbeat, ShareFetch and ShareAcknowledge v1: the derived layouts the codec uses."""
    metadata, _ = flexible_exchange(
        librdkafka_mock,
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="codec-share")]),
        12,
        MetadataResponse,
    )
    assert isinstance(metadata, MetadataResponse)
    topic_id = metadata.topics[0].topic_id
    partitions = sorted(p.partition_index for p in metadata.topics[0].partitions)

    heartbeat = ShareGroupHeartbeatRequest(
        group_id="codec-share-group",
        member_id="codec-member-0000000001",
        member_epoch=0,
        subscribed_topic_names=["codec-share"],
    )
    joined, body = flexible_exchange(librdkafka_mock, heartbeat, 1, ShareGroupHeartbeatResponse)
    assert isinstance(joined, ShareGroupHeartbeatResponse)
    assert joined.error_code == 0 and joined.member_epoch > 0 and joined.member_id
    assert joined.assignment is not None
    assigned = {(t.topic_id, p) for t in joined.assignment.topic_partitions for p in t.partitions}
    assert assigned == {(topic_id, p) for p in partitions}
    assert joined.encode(1) + MOCK_TRAILING_ZERO == body

    fetch = ShareFetchRequest(
        group_id="codec-share-group",
        member_id=joined.member_id,
        share_session_epoch=0,
        max_wait_ms=50,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=10,
        batch_size=10,
        topics=[
            ShareFetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[ShareFetchRequest.FetchPartition(partition_index=p) for p in partitions],
            )
        ],
    )
    fetched, body = flexible_exchange(librdkafka_mock, fetch, 1, ShareFetchResponse)
    assert isinstance(fetched, ShareFetchResponse)
    assert fetched.error_code == 0 and fetched.acquisition_lock_timeout_ms > 0
    assert [r.topic_id for r in fetched.responses] == [topic_id]
    assert sorted(p.partition_index for p in fetched.responses[0].partitions) == partitions
    assert fetched.encode(1) == body  # exact: this answer follows the spec to the byte

    acknowledge = ShareAcknowledgeRequest(
        group_id="codec-share-group",
        member_id=joined.member_id,
        share_session_epoch=1,
        topics=[
            ShareAcknowledgeRequest.AcknowledgeTopic(
                topic_id=topic_id,
                partitions=[ShareAcknowledgeRequest.AcknowledgePartition(partition_index=partitions[0])],
            )
        ],
    )
    acknowledged, body = flexible_exchange(librdkafka_mock, acknowledge, 1, ShareAcknowledgeResponse)
    assert isinstance(acknowledged, ShareAcknowledgeResponse)
    assert acknowledged.encode(1) == body
