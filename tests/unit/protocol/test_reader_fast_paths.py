"""The readers' inline paths (short number arrays, strings, UUIDs) agree with the checked ones.

Each inline path has a general one behind it (long arrays, varint counts, nulls,
long strings); these cases sit on both sides of every switch-over and check that
decoding gives back what was encoded, and that every truncation is a DecodeError.
"""

from __future__ import annotations

import uuid

import pytest

from kafkacompat.errors import DecodeError
from kafkacompat.protocol.messages import FindCoordinatorResponse, MetadataResponse

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")

# Around the inline limits: 31 numbers (count byte 32) and 127-byte compact lengths.
ARRAY_SIZES = [0, 1, 3, 30, 31, 32, 33, 200]
STRINGS = ["", "a", "x" * 125, "x" * 126, "x" * 127, "x" * 300, "é" * 70]


def metadata(size: int, host: str, rack: str | None) -> MetadataResponse:
    cls = MetadataResponse
    replicas = list(range(size))
    return cls(
        brokers=[cls.MetadataResponseBroker(node_id=1, host=host, port=9092, rack=rack)],
        cluster_id=None,
        controller_id=1,
        topics=[
            cls.MetadataResponseTopic(
                name=host or "t",
                topic_id=uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF),
                partitions=[
                    cls.MetadataResponsePartition(
                        partition_index=p,
                        leader_id=1,
                        replica_nodes=replicas,
                        isr_nodes=replicas[:1],
                        offline_replicas=[],
                    )
                    for p in range(2)
                ],
            )
        ],
    )


@pytest.mark.parametrize("version", [1, 8, 9, 12])
@pytest.mark.parametrize("size", ARRAY_SIZES)
def test_number_arrays_round_trip_on_both_sides_of_the_inline_limit(version: int, size: int) -> None:
    message = metadata(size, "broker-1", "rack-a")
    data = message.encode(version)
    decoded = MetadataResponse.decode(data, version)
    assert [p.replica_nodes for p in decoded.topics[0].partitions] == [list(range(size))] * 2
    assert decoded.encode(version) == data


@pytest.mark.parametrize("version", [1, 8, 9, 12])
@pytest.mark.parametrize("text", STRINGS)
@pytest.mark.parametrize("rack_is_null", [True, False])
def test_strings_round_trip_inline_and_through_the_checked_readers(
    version: int, text: str, rack_is_null: bool
) -> None:
    message = metadata(3, text, None if rack_is_null else text)
    decoded = MetadataResponse.decode(message.encode(version), version)
    broker = decoded.brokers[0]
    assert (broker.host, broker.rack) == (text, None if rack_is_null else text)
    assert decoded.topics[0].name == (text or "t")
    if version >= 10:
        assert decoded.topics[0].topic_id == message.topics[0].topic_id
        assert decoded.topics[0].topic_id.is_safe == uuid.UUID(int=1).is_safe


@pytest.mark.parametrize("version", [8, 12])
def test_every_truncation_is_a_decode_error(version: int) -> None:
    data = metadata(31, "broker-1", None).encode(version)
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            MetadataResponse.decode(data[:cut], version)


def test_a_null_error_message_is_read_inline_and_an_empty_one_stays_empty() -> None:
    cls = FindCoordinatorResponse
    message = cls(
        coordinators=[
            cls.Coordinator(key="g1", node_id=1, host="h", port=1, error_code=0, error_message=None),
            cls.Coordinator(key="g2", node_id=2, host="h", port=2, error_code=15, error_message=""),
        ]
    )
    decoded = cls.decode(message.encode(4), 4)
    assert [c.error_message for c in decoded.coordinators] == [None, ""]


def test_a_null_where_the_spec_forbids_it_is_refused() -> None:
    data = bytearray(metadata(1, "broker-1", None).encode(12))
    host_at = data.index(b"broker-1") - 1  # the compact length byte of the first host
    data[host_at : host_at + 9] = b"\x00"  # a null host
    with pytest.raises(DecodeError, match="host"):
        MetadataResponse.decode(bytes(data), 12)
