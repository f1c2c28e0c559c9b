"""Tagged sections are held to Kafka's limit before they are read, and read in linear time."""

from __future__ import annotations

import pytest

from kafkacompat.errors import DecodeError
from kafkacompat.protocol import _wire
from kafkacompat.protocol.messages import ApiVersionsResponse

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def with_unknown_tags(count: int) -> bytes:
    body = ApiVersionsResponse().encode(3)
    assert body[-1] == 0  # the top-level tagged section: no fields
    fields = b"".join(uvarint(1000 + n) + b"\x00" for n in range(count))  # tag, empty value
    return body[:-1] + uvarint(count) + fields


def test_unknown_tags_up_to_the_limit_are_kept_in_order() -> None:
    count = _wire.MAX_TAGGED_FIELDS
    decoded = ApiVersionsResponse.decode(with_unknown_tags(count), 3)
    unknown = decoded.unknown_tagged_fields  # kept, so that a re-encode is faithful
    assert len(unknown) == count and unknown[0] == (1000, b"") and unknown[-1] == (1000 + count - 1, b"")
    assert decoded.encode(3) == with_unknown_tags(count)


def test_a_section_over_the_limit_is_refused_before_it_is_read() -> None:
    with pytest.raises(DecodeError, match="above the limit of 10000"):
        ApiVersionsResponse.decode(with_unknown_tags(_wire.MAX_TAGGED_FIELDS + 1), 3)
