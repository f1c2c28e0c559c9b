"""Golden bytes, written by hand from the wire format (not produced by the codec).

Each row is (message, version, hex).  Both directions are checked: encoding
the message gives exactly these bytes, and decoding the bytes gives the
message back.  The hex is grouped by field, with the field named beside it.
"""

from __future__ import annotations

import uuid

import pytest

from kafkacompat.protocol import metadata_records
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FeatureLevelRecord,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    RequestHeader,
    ResponseHeader,
    TopicRecord,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")


def h(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


AV = ApiVersionsResponse.ApiVersion
SF = ApiVersionsResponse.SupportedFeatureKey
FF = ApiVersionsResponse.FinalizedFeatureKey
KEYS = [AV(api_key=0, min_version=0, max_version=9), AV(api_key=18, min_version=0, max_version=4)]
API_VERSIONS_V3 = ApiVersionsResponse(
    error_code=0,
    api_keys=KEYS,
    throttle_time_ms=100,
    supported_features=[SF(name="metadata.version", min_version=1, max_version=21)],
    finalized_features_epoch=5,
    finalized_features=[FF(name="metadata.version", max_version_level=21, min_version_level=1)],
)
MV = "116d657461646174612e76657273696f6e"  # compact string "metadata.version" (16 + 1)

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
FC = FindCoordinatorResponse.Coordinator

# fmt: off
GOLDEN: list[tuple[str, KafkaMessage, int, bytes]] = [
    # ---- ApiVersions request: empty body before v3, then two compact strings and tags
    *[("ApiVersionsRequest", ApiVersionsRequest(), v, b"") for v in (0, 1, 2)],
    *[
        (
            "ApiVersionsRequest",
            ApiVersionsRequest(client_software_name="kafkacompat", client_software_version="0.1.0"),
            v,
            h("0c", "6b61666b61636f6d706174", "06", "302e312e30", "00"),
        )
        for v in (3, 4)
    ],
    # ---- ApiVersions response
    (
        "ApiVersionsResponse",
        ApiVersionsResponse(error_code=0, api_keys=KEYS),
        0,
        h("0000", "00000002", "0000" "0000" "0009", "0012" "0000" "0004"),
    ),
    *[
        (
            "ApiVersionsResponse",
            ApiVersionsResponse(error_code=35, api_keys=KEYS, throttle_time_ms=100),
            v,
            h("0023", "00000002", "000000000009", "001200000004", "00000064"),
        )
        for v in (1, 2)
    ],
    *[
        (
            "ApiVersionsResponse",
            API_VERSIONS_V3,
            v,
            h(
                "0000",  # error_code
                "03",  # compact array of 2
                "000000000009" "00",  # key 0: 0-9, no tags
                "001200000004" "00",  # key 18: 0-4, no tags
                "00000064",  # throttle_time_ms
                "03",  # three tagged fields
                "00" "17" "02" + MV + "0001" "0015" "00",  # tag 0 supported_features
                "01" "08" "0000000000000005",  # tag 1 finalized_features_epoch
                "02" "17" "02" + MV + "0015" "0001" "00",  # tag 2 finalized_features
            ),
        )
        for v in (3, 4)
    ],
    # ---- FindCoordinator request
    ("FindCoordinatorRequest", FindCoordinatorRequest(key="grp"), 0, h("0003", "677270")),
    *[
        ("FindCoordinatorRequest", FindCoordinatorRequest(key="txn", key_type=1), v,
         h("0003", "74786e", "01"))
        for v in (1, 2)
    ],
    ("FindCoordinatorRequest", FindCoordinatorRequest(key="grp"), 3, h("04", "677270", "00", "00")),
    *[
        (
            "FindCoordinatorRequest",
            FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]),
            v,
            h("00", "03", "036731", "036732", "00"),
        )
        for v in (4, 5, 6)
    ],
    # ---- FindCoordinator response
    (
        "FindCoordinatorResponse",
        FindCoordinatorResponse(error_code=0, node_id=1, host="b1", port=9092),
        0,
        h("0000", "00000001", "0002", "6231", "00002384"),
    ),
    *[
        (
            "FindCoordinatorResponse",
            FindCoordinatorResponse(
                throttle_time_ms=0, error_code=15, error_message=None, node_id=-1, host="", port=-1
            ),
            v,
            h("00000000", "000f", "ffff", "ffffffff", "0000", "ffffffff"),
        )
        for v in (1, 2)
    ],
    (
        "FindCoordinatorResponse",
        FindCoordinatorResponse(error_code=0, error_message="NONE", node_id=2, host="b2", port=9093),
        3,
        h("00000000", "0000", "05", "4e4f4e45", "00000002", "03", "6232", "00002385", "00"),
    ),
    *[
        (
            "FindCoordinatorResponse",
            FindCoordinatorResponse(
                throttle_time_ms=7,
                coordinators=[
                    FC(key="g1", node_id=1, host="b1", port=9092, error_code=0, error_message=None),
                    FC(key="g2", node_id=-1, host="", port=-1, error_code=14, error_message="loading"),
                ],
            ),
            v,
            h(
                "00000007",
                "03",
                "036731", "00000001", "036231", "00002384", "0000", "00", "00",
                "036732", "ffffffff", "01", "ffffffff", "000e", "08" "6c6f6164696e67", "00",
                "00",
            ),
        )
        for v in (4, 5, 6)
    ],
    # ---- Metadata v0 (classic) and v12 (flexible, topic ids)
    (
        "MetadataRequest",
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]),
        0,
        h("00000001", "0001", "74"),
    ),
    (
        "MetadataRequest",
        MetadataRequest(
            topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=True
        ),
        12,
        h("00", "00", "01", "00"),
    ),
    (
        "MetadataResponse",
        MetadataResponse(
            brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092)],
            topics=[
                MetadataResponse.MetadataResponseTopic(
                    error_code=0,
                    name="t",
                    partitions=[
                        MetadataResponse.MetadataResponsePartition(
                            error_code=0, partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1]
                        )
                    ],
                )
            ],
        ),
        0,
        h(
            "00000001", "00000001", "0001", "68", "00002384",  # brokers
            "00000001", "0000", "0001", "74",  # one topic "t"
            "00000001", "0000", "00000000", "00000001", "00000001" "00000001", "00000001" "00000001",
        ),
    ),
    (
        "MetadataResponse",
        MetadataResponse(
            throttle_time_ms=0,
            brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092, rack=None)],
            cluster_id="c",
            controller_id=1,
            topics=[
                MetadataResponse.MetadataResponseTopic(
                    error_code=0, name="t", topic_id=TOPIC_ID, is_internal=False, partitions=[],
                    topic_authorized_operations=-2147483648,
                )
            ],
        ),
        12,
        h(
            "00000000",  # throttle
            "02", "00000001", "0268", "00002384", "00", "00",  # brokers: id, host, port, rack null, tags
            "0263",  # cluster_id "c"
            "00000001",  # controller_id
            "02", "0000", "0274", "00112233445566778899aabbccddeeff", "00", "01",
            "80000000", "00",  # topic: error, name, id, internal, no partitions, ops, tags
            "00",
        ),
    ),
    # ---- UpdateFeatures: v0 has AllowDowngrade, v1+ UpgradeType and ValidateOnly
    (
        "UpdateFeaturesRequest",
        UpdateFeaturesRequest(
            timeout_ms=60000,
            feature_updates=[
                UpdateFeaturesRequest.FeatureUpdateKey(
                    feature="metadata.version", max_version_level=21, allow_downgrade=True
                )
            ],
        ),
        0,
        h("0000ea60", "02", MV, "0015", "01", "00", "00"),
    ),
    (
        "UpdateFeaturesRequest",
        UpdateFeaturesRequest(
            timeout_ms=1000,
            feature_updates=[
                UpdateFeaturesRequest.FeatureUpdateKey(
                    feature="kraft.version", max_version_level=1, upgrade_type=2
                )
            ],
            validate_only=True,
        ),
        1,
        h("000003e8", "02", "0e6b726166742e76657273696f6e", "0001", "02", "00", "01", "00"),
    ),
    (
        "UpdateFeaturesResponse",
        UpdateFeaturesResponse(
            throttle_time_ms=0,
            error_code=0,
            error_message=None,
            results=[
                UpdateFeaturesResponse.UpdatableFeatureResult(
                    feature="kraft.version", error_code=0, error_message=None
                )
            ],
        ),
        1,
        h("00000000", "0000", "00", "02", "0e6b726166742e76657273696f6e", "0000", "00", "00", "00"),
    ),
    (
        "UpdateFeaturesResponse",
        UpdateFeaturesResponse(throttle_time_ms=0, error_code=0, error_message=None),
        2,
        h("00000000", "0000", "00", "00"),
    ),
    # ---- headers
    (
        "RequestHeader",
        RequestHeader(request_api_key=7, request_api_version=0, correlation_id=1),
        0,
        h("0007", "0000", "00000001"),
    ),
    (
        "RequestHeader",
        RequestHeader(request_api_key=18, request_api_version=3, correlation_id=2, client_id="c"),
        2,
        h("0012", "0003", "00000002", "0001", "63", "00"),
    ),
    ("ResponseHeader", ResponseHeader(correlation_id=9), 1, h("00000009", "00")),
]
# fmt: on


@pytest.mark.parametrize(
    ("name", "message", "version", "wire"), GOLDEN, ids=[f"{g[0]}-v{g[2]}-{i}" for i, g in enumerate(GOLDEN)]
)
def test_golden_bytes(name: str, message: KafkaMessage, version: int, wire: bytes) -> None:
    assert name == message.NAME
    assert message.encode(version).hex() == wire.hex()
    assert type(message).decode(wire, version) == message


RECORDS = [
    (
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        0,
        h("01", "0c", "00", MV, "0015", "00"),  # frame v1, type 12, version 0, body
    ),
    (
        TopicRecord(name="t", topic_id=TOPIC_ID),
        0,
        h("01", "02", "00", "0274", "00112233445566778899aabbccddeeff", "00"),
    ),
]


@pytest.mark.parametrize(("record", "version", "wire"), RECORDS, ids=[r[0].NAME for r in RECORDS])
def test_metadata_record_golden(record: KafkaMessage, version: int, wire: bytes) -> None:
    assert metadata_records.encode_record(record, version).hex() == wire.hex()
    assert metadata_records.decode_record(wire) == (record, version)
