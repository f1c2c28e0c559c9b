"""Properties of the sans-I/O bounds against hostile input: addresses, frames, counts, replies."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacompat.errors import DecodeError, InvalidAddressError, ProtocolViolationError, ReplyTooLargeError
from kafkacompat.negotiation.addresses import MAX_HOST_LENGTH, check_address, display_host, split_host_port
from kafkacompat.negotiation.fanout import fanout_error, fanout_split
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.handshake.reply import judge_reply
from kafkacompat.protocol import _wire
from kafkacompat.protocol.framing import FrameSplitter
from kafkacompat.protocol.reply_limits import DEFAULT_CEILINGS, ReplyLimits

HOST_TEXT = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="ab-_.0:[]\x00\x1b\u00fc", max_size=80),
    st.from_regex(r"[a-z0-9-]{0,70}(\.[a-z0-9-]{0,70}){0,4}", fullmatch=True),
    st.ip_addresses().map(str),
)
PORTS = st.one_of(
    st.integers(-(2**40), 2**40), st.integers(0, 70000), st.booleans(), st.none(), st.text(max_size=3)
)


# -- addresses ----------------------------------------------------------------------------------


@given(HOST_TEXT, PORTS)
def test_an_address_is_accepted_usable_or_refused_typed(host: object, port: object) -> None:
    try:
        checked_host, checked_port = check_address(host, port, source="a property")
    except InvalidAddressError as exc:
        assert "a property" in str(exc) and len(str(exc)) < 400
        assert all(c.isprintable() for c in str(exc))
        return
    assert 0 < checked_port < 65536 and not isinstance(port, bool)
    assert checked_host.isprintable()
    try:
        ipaddress.ip_address(checked_host)
    except ValueError:  # a name: the socket layer can encode it, and it fits DNS
        encoded = checked_host.rstrip(".").encode("idna")
        assert len(encoded) <= MAX_HOST_LENGTH and all(0 < len(label) <= 63 for label in encoded.split(b"."))


@given(st.text(max_size=120))
def test_a_typed_address_is_split_or_refused_typed(text: str) -> None:
    try:
        host, port = split_host_port(text, default_port=9092)
    except InvalidAddressError:
        return
    assert check_address(host, port) == (host, port)


@given(st.text(max_size=20_000))
def test_display_host_is_short_and_printable(host: str) -> None:
    shown = display_host(host)
    assert len(shown) < 400 and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown)


# -- frames -------------------------------------------------------------------------------------


@given(st.lists(st.binary(max_size=300), max_size=8), st.lists(st.integers(1, 64), min_size=1, max_size=20))
def test_frames_come_out_whole_however_the_bytes_are_cut(frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    splitter, got, position, turn = FrameSplitter(max_size=1024), [], 0, 0
    while position < len(stream):
        room = splitter.body_room()
        size = cuts[turn % len(cuts)]
        turn += 1
        if room is not None and turn % 2:  # as a socket reading straight into the body
            count = min(size, len(room), len(stream) - position)
            room[:count] = stream[position : position + count]
            del room
            splitter.body_filled(count)
        else:
            splitter.push(stream[position : position + size])
            count = min(size, len(stream) - position)
        position += count
        while (frame := splitter.next_frame()) is not None:
            got.append(frame)
    assert got == frames and splitter.pending == 0


@given(st.integers(65, 2**31 - 1), st.integers(1, 64))
def test_a_prefix_above_the_ceiling_is_refused_before_the_body_is_buffered(size: int, limit: int) -> None:
    splitter = FrameSplitter()
    splitter.push(struct.pack(">i", size) + b"\x00" * 8)
    with pytest.raises(ReplyTooLargeError) as caught:
        splitter.next_frame(limit, what="ApiVersions")
    assert caught.value.size == size and caught.value.limit == limit and splitter.body_room() is None


@given(st.integers(0, 0x7FFFFFFF), st.integers(0, 60), st.one_of(st.none(), st.lists(st.text(max_size=3))))
def test_no_ceiling_is_above_the_frame_limit(max_frame: int, api_key: int, topics: list[str] | None) -> None:
    class Request:
        pass

    request = Request()
    request.topics = topics  # type: ignore[attr-defined]
    limit = ReplyLimits().limit_for(api_key, max(max_frame, 1), request, 1)
    assert 0 < limit <= max(max_frame, 1)
    if api_key in DEFAULT_CEILINGS and (api_key != 3 or topics == []):
        assert limit <= DEFAULT_CEILINGS[api_key]
    if api_key == 3 and topics != []:  # Metadata naming topics: grows with the cluster, to a ceiling
        assert limit <= ReplyLimits().topic_metadata


# -- fan-out ----------------------------------------------------------------------------------


@given(st.sets(st.integers(-5, 500)), st.data(), st.integers(1, 50))
def test_fan_out_takes_the_connected_first_and_reports_every_other(
    nodes: set[int], data: st.DataObject, limit: int
) -> None:
    connected = data.draw(st.sets(st.sampled_from(sorted(nodes)))) if nodes else set()
    chosen, skipped = fanout_split(list(nodes), connected, limit)
    assert len(chosen) == min(limit, len(nodes)) and sorted(chosen + skipped) == sorted(nodes)
    assert set(chosen) >= set(sorted(connected)[:limit])
    if skipped:
        error = fanout_error(len(skipped), len(nodes), limit)
        assert f"{len(skipped)} of the {len(nodes)} brokers" in str(error) and error.limit == limit


# -- counts -------------------------------------------------------------------------------------


def test_counts_above_kafkas_limits_are_refused_before_allocating() -> None:
    room = b"\x00" * (_wire.MAX_ARRAY_ELEMENTS + 8)
    with pytest.raises(DecodeError, match="above the limit of 1000000"):
        _wire.read_array_count(struct.pack(">i", _wire.MAX_ARRAY_ELEMENTS + 1) + room, 0)
    with pytest.raises(DecodeError, match="above the limit of 1000000"):
        _wire.read_compact_array_count(_wire.uvarint(_wire.MAX_ARRAY_ELEMENTS + 2) + room, 0)
    assert _wire.read_array_count(struct.pack(">i", _wire.MAX_ARRAY_ELEMENTS) + room, 0)[0] == 1_000_000
    with pytest.raises(DecodeError, match="above the limit of 10000"):
        _wire.read_tag_count(_wire.uvarint(_wire.MAX_TAGGED_FIELDS + 1) + room, 0)
    assert _wire.read_tag_count(_wire.uvarint(_wire.MAX_TAGGED_FIELDS) + room, 0)[0] == 10_000


@given(st.integers(0, 2**32 - 2), st.binary(max_size=64))
def test_a_tag_count_is_held_to_the_bytes_left(count: int, rest: bytes) -> None:
    data = _wire.uvarint(count) + rest
    try:
        read, _ = _wire.read_tag_count(data, 0)
    except DecodeError:
        assert count > _wire.MAX_TAGGED_FIELDS or 2 * count > len(rest)
    else:
        assert read == count and 2 * count <= len(rest)


# -- replies that break the protocol's invariants ------------------------------------------------


@given(st.integers(0, 2**15 - 1), st.integers(-(2**15), 2**15 - 1), st.integers(1, 4))
@settings(max_examples=200)
def test_an_impossible_advertised_range_is_never_retried(lowest: int, highest: int, sent: int) -> None:
    body = struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, lowest, highest)
    verdict = judge_reply(body, sent, HandshakeConfig())
    if lowest > highest:
        assert verdict.next_version is None and verdict.error_type is ProtocolViolationError
    if verdict.next_version is not None:
        assert verdict.next_version < sent
