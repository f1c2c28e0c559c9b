"""The rules of the spec format, one behaviour per test."""

from __future__ import annotations

import time
import uuid

import pytest

from kafkacompat.errors import DecodeError, EncodeError, ProtocolError, WrongProtocolError
from kafkacompat.protocol import broker_framing, framing, messages
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataResponse,
    RequestHeader,
)
from kafkacompat.reference import API_NAMES

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")

# -- nullability and versions -------------------------------------------------


def test_non_nullable_field_set_to_none_is_an_encode_error() -> None:
    with pytest.raises(EncodeError, match="host"):
        FindCoordinatorResponse(host=None).encode(0)  # type: ignore[arg-type]


def test_nullable_field_accepts_none_at_nullable_versions_only() -> None:
    msg = FindCoordinatorResponse(error_message=None)
    assert FindCoordinatorResponse.decode(msg.encode(1), 1).error_message is None
    # error_message does not exist at v0 and is ignorable: dropped, not an error.
    assert (
        FindCoordinatorResponse.decode(FindCoordinatorResponse(error_message="x").encode(0), 0).error_message
        == ""
    )


def test_non_ignorable_field_missing_at_version_is_an_error() -> None:
    # KeyType is not ignorable and does not exist at v0: writing a transactional id lookup fails.
    with pytest.raises(EncodeError, match="key_type"):
        FindCoordinatorRequest(key="t", key_type=1).encode(0)
    # Key does not exist at v4 (batched): a non-default value is refused.
    with pytest.raises(EncodeError, match="key"):
        FindCoordinatorRequest(key="g", coordinator_keys=["g"]).encode(4)


def test_ignorable_field_missing_at_version_is_dropped() -> None:
    req = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    assert req.encode(2) == b""


def test_unknown_version_is_a_typed_error_both_ways() -> None:
    with pytest.raises(EncodeError, match="no version 99"):
        ApiVersionsRequest().encode(99)
    with pytest.raises(DecodeError) as info:
        ApiVersionsResponse.decode(b"", 99)
    assert info.value.version == 99


def test_out_of_range_integer_is_an_encode_error() -> None:
    with pytest.raises(EncodeError, match="ApiVersion"):
        ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=70000)]).encode(0)


# -- tagged fields --------------------------------------------------------------


def test_tagged_fields_written_only_when_not_default() -> None:
    plain = ApiVersionsResponse().encode(3)
    assert plain.endswith(b"\x00")  # empty tagged section
    with_epoch = ApiVersionsResponse(finalized_features_epoch=3).encode(3)
    assert len(with_epoch) == len(plain) + 1 + 1 + 8  # tag, size, int64


def test_tagged_fields_present_at_their_default_values_are_read() -> None:
    # Some brokers (Tansu among them) send every tagged field, defaults included.
    body = bytes.fromhex(
        "0000"
        "01"
        "00000000"  # no error, no keys, throttle 0
        "04"  # four tagged fields
        "000101"  # supported_features: empty compact array
        "0108ffffffffffffffff"  # finalized_features_epoch: -1
        "020101"  # finalized_features: empty
        "030100"  # zk_migration_ready: false
    )
    decoded = ApiVersionsResponse.decode(body, 3)
    assert decoded == ApiVersionsResponse()
    assert decoded.finalized_features_epoch == -1


def test_unknown_tagged_fields_survive_a_round_trip() -> None:
    body = bytes.fromhex("00000100000000020108000000000000000c2a03616263")
    decoded = ApiVersionsResponse.decode(body, 3)
    assert decoded.finalized_features_epoch == 12
    assert decoded.unknown_tagged_fields == ((42, b"abc"),)
    assert decoded.encode(3) == body
    assert ApiVersionsResponse.from_dict(decoded.to_dict()) == decoded


def test_tagged_field_that_does_not_fill_its_size_is_a_decode_error() -> None:
    body = bytes.fromhex("00000100000000010109000000000000000c00")
    with pytest.raises(DecodeError, match="tagged field 1"):
        ApiVersionsResponse.decode(body, 3)


def test_tagged_struct_field_round_trips() -> None:
    partition = FetchResponse.PartitionData(
        partition_index=0, current_leader=FetchResponse.LeaderIdAndEpoch(leader_id=3, leader_epoch=7)
    )
    msg = FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic_id=uuid.uuid4(), partitions=[partition])]
    )
    assert FetchResponse.decode(msg.encode(16), 16) == msg


# -- hostile input ----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        bytes.fromhex("00007fffffff0000"),  # array count 2^31-1 in a 10-byte body
        bytes.fromhex("0000fffffffe"),  # negative count other than -1
        bytes.fromhex("0000000000010012"),  # truncated element
    ],
)
def test_hostile_counts_fail_fast(body: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(DecodeError) as info:
        ApiVersionsResponse.decode(body, 0)
    assert time.perf_counter() - started < 1.0  # not a timing target: a hang guard
    assert info.value.offset is not None


def test_hostile_compact_count_and_string_length() -> None:
    with pytest.raises(DecodeError, match="exceeds"):
        ApiVersionsResponse.decode(bytes.fromhex("0000ffffffff070000000000"), 3)
    with pytest.raises(DecodeError, match="past the end"):
        FindCoordinatorResponse.decode(bytes.fromhex("0000000000017fff41"), 0)


def test_overlong_varint_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="varint"):
        ApiVersionsRequest.decode(b"\xff\xff\xff\xff\xff\xff", 3)


def test_decode_error_names_message_version_and_offset() -> None:
    with pytest.raises(DecodeError) as info:
        MetadataResponse.decode(b"\x00\x00\x00\x01\x00", 0)
    err = info.value
    assert (err.what, err.version) == ("MetadataResponse", 0)
    assert err.offset == 4
    assert "MetadataResponse v0" in str(err) and "offset 4" in str(err)


def test_trailing_bytes_are_refused_unless_allowed() -> None:
    body = ApiVersionsResponse().encode(0) + b"\x01"
    with pytest.raises(DecodeError, match="left over"):
        ApiVersionsResponse.decode(body, 0)
    assert ApiVersionsResponse.decode(body, 0, allow_trailing=True) == ApiVersionsResponse()


# -- dict form, equality, keyed lists ----------------------------------------------


def test_dict_round_trip_with_uuid_and_nested_structs() -> None:
    topic_id = uuid.UUID(int=5)
    msg = MetadataResponse(
        topics=[MetadataResponse.MetadataResponseTopic(name="t", topic_id=topic_id)], cluster_id=None
    )
    data = msg.to_dict()
    assert data["topics"][0]["topic_id"] == "AAAAAAAAAAAAAAAAAAAABQ"  # Kafka's text form
    assert MetadataResponse.from_dict(data) == msg


def test_from_dict_refuses_unknown_keys() -> None:
    with pytest.raises(EncodeError, match="no field 'nope'"):
        ApiVersionsRequest.from_dict({"nope": 1})


def test_equality_is_by_value_and_type() -> None:
    assert ApiVersionsRequest(client_software_name="a") == ApiVersionsRequest(client_software_name="a")
    assert ApiVersionsRequest(client_software_name="a") != ApiVersionsRequest(client_software_name="b")
    assert ApiVersionsRequest() != ApiVersionsResponse()


def test_map_key_lists_find_by_key() -> None:
    body = ApiVersionsResponse(
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=k, max_version=k) for k in (0, 18, 3)]
    ).encode(3)
    keys = ApiVersionsResponse.decode(body, 3).api_keys
    found = keys.find(18)  # type: ignore[attr-defined]
    assert found is not None and found.max_version == 18
    assert keys.find(99) is None  # type: ignore[attr-defined]


def test_class_facts_and_registry() -> None:
    assert ApiVersionsRequest.API_KEY == 18
    assert str(ApiVersionsRequest.VALID_VERSIONS) == "0-5"  # v5: KIP-1242, Kafka 4.4
    assert str(ApiVersionsRequest.FLEXIBLE_VERSIONS) == "3+"
    assert messages.CLASS_BY_KEY[(10, "response")] == "FindCoordinatorResponse"
    assert API_NAMES[18] == "ApiVersions"
    assert messages.REQUEST_VERSIONS[10] == (0, 6)
    assert getattr(messages, messages.CLASS_BY_KEY[(0, "metadata")]).NAME == "RegisterBrokerRecord"
    with pytest.raises(AttributeError):
        _ = messages.NoSuchMessage  # type: ignore[attr-defined]


# -- headers and framing -----------------------------------------------------------


@pytest.mark.parametrize(
    ("api_key", "version", "request_header", "response_header"),
    [
        (18, 0, 1, 0),
        (18, 3, 2, 0),  # ApiVersions responses always use header v0
        (18, 4, 2, 0),
        (7, 0, 0, 0),  # ControlledShutdown v0: no client id
        (7, 1, 1, 0),
        (3, 8, 1, 0),
        (3, 9, 2, 1),  # Metadata turns flexible at v9
        (10, 3, 2, 1),
    ],
)
def test_header_versions(api_key: int, version: int, request_header: int, response_header: int) -> None:
    assert framing.request_header_version(api_key, version) == request_header
    assert framing.response_header_version(api_key, version) == response_header


def test_request_frame_round_trip_and_client_id_stays_classic() -> None:
    frame = framing.encode_request(ApiVersionsRequest(), 3, correlation_id=5, client_id="cid")
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    # Header v2 keeps the classic int16 client id length (so old brokers can read it).
    assert frame[4:18] == bytes.fromhex("00120003000000050003") + b"cid" + b"\x00"
    decoded = broker_framing.decode_request(frame[4:])
    assert decoded.header == RequestHeader(
        request_api_key=18, request_api_version=3, correlation_id=5, client_id="cid"
    )
    assert decoded.body == ApiVersionsRequest()


def test_response_frame_round_trip() -> None:
    frame = broker_framing.encode_response(FindCoordinatorResponse(host="h"), 3, correlation_id=77)
    correlation_id, body = framing.decode_response(frame[4:], FindCoordinatorResponse, 3)
    assert correlation_id == 77 and body == FindCoordinatorResponse(host="h")
    assert framing.peek_correlation_id(frame[4:]) == 77


@pytest.mark.parametrize(
    ("prefix", "error", "text"),
    [
        (b"\x7f\xff\xff\xff", ProtocolError, "exceeds the maximum"),
        (b"\xff\xff\xff\xff", ProtocolError, "negative"),
        (b"\x15\x03\x03\x00", WrongProtocolError, "TLS"),
        (b"\x16\x03\x01\x02", WrongProtocolError, "TLS"),
        (b"HTTP", WrongProtocolError, "HTTP"),
    ],
)
def test_frame_size_checks(prefix: bytes, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        framing.check_frame_size(prefix)


def test_frame_splitter_reassembles_and_refuses_before_buffering() -> None:
    splitter = framing.FrameSplitter(max_size=16)
    stream = b"\x00\x00\x00\x02ab" + b"\x00\x00\x00\x01c"
    frames = [f for byte in stream for f in splitter.feed(bytes([byte]))]
    assert frames == [b"ab", b"c"] and splitter.pending == 0
    with pytest.raises(ProtocolError):
        splitter.feed(b"\x00\x00\x01\x00")  # 256 > 16: refused on the prefix alone


def test_frame_splitter_hands_over_good_frames_before_a_bad_prefix() -> None:
    splitter = framing.FrameSplitter(max_size=16)
    assert splitter.feed(b"\x00\x00\x00\x01a" + b"HTTP/1.1 400") == [b"a"]
    with pytest.raises(WrongProtocolError):
        splitter.feed(b"")
