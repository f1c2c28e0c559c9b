"""Held-out frames: what real clients and real brokers exchanged, decoded and re-encoded.

tests/data/held_out_frames.json was recorded by ``python -m tests.support.record_frames``:
confluent-kafka, kafka-python and aiokafka producing, consuming in a group and
calling admin APIs against Tansu 0.6.0 and the librdkafka 2.16 mock cluster,
through a recording proxy.  No byte of it was written by kafkacompat.

Every frame's version is defined by the codec now; each decodes, and re-encodes
to the very same bytes, except where the sender did not follow the spec
(``DEVIATIONS``: the bytes it added, which Kafka's parser ignores too).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.handshake.reply import judge_reply
from kafkacompat.protocol import broker_framing, framing, messages
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import RequestHeader, ResponseHeader

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")

REPO = Path(__file__).resolve().parents[3]
FRAMES: list[dict[str, Any]] = json.loads((REPO / "tests" / "data" / "held_out_frames.json").read_text())[
    "frames"
]

# (sender, direction, api key) -> the bytes that sender adds after some flexible
# bodies. The sender is the client for requests and the peer for responses.
TRAILING: dict[tuple[str, str, int], bytes] = {
    # librdkafka (confluent-kafka) ends a Metadata v12+ request for all topics
    # (null Topics) with 3 bytes more.
    ("confluent-kafka", "request", 3): b"\x01\x00\x00",
    # The librdkafka mock ends flexible Metadata answers with one more zero byte.
    ("librdkafka mock", "response", 3): b"\x00",
}
# Tansu writes every tagged field of its ApiVersions answer, even at its default
# (Kafka writes a tagged field only when it differs from its default): such a
# frame decodes, and re-encodes to the same value in fewer bytes.
DEFAULT_TAGS_WRITTEN = {("tansu", "response", 18)}
# The librdkafka mock answers an ApiVersions version it does not support (v3+)
# with a body no layout can read (a compact ApiKeys count of 0 followed by one
# entry). The handshake recognises that exact shape and reads the one entry,
# ApiVersions' own range, so that it retries at v2 rather than v0.
UNREADABLE_UNSUPPORTED = {("librdkafka mock", "response", 18)}


def _class(row: dict[str, Any]) -> type[KafkaMessage]:
    cls: type[KafkaMessage] = getattr(messages, messages.CLASS_BY_KEY[(row["api_key"], row["direction"])])
    return cls


def _sender(row: dict[str, Any]) -> tuple[str, str, int]:
    who = row["client"] if row["direction"] == "request" else row["peer"]
    name = who.rsplit(" ", 1)[0]  # without the version
    return name, row["direction"], row["api_key"]


def _extra(row: dict[str, Any], version: int) -> bytes:
    flexible = version in _class(row).FLEXIBLE_VERSIONS
    return TRAILING.get(_sender(row), b"") if flexible else b""


def _split(row: dict[str, Any]) -> tuple[bytes, bytes]:
    """(header bytes, body bytes) of a recorded frame."""
    frame = bytes.fromhex(row["hex"])
    key, version = row["api_key"], row["version"]
    if row["direction"] == "request":
        parsed = broker_framing.decode_request(frame, decode_body=False)
        return frame[: len(frame) - len(parsed.body_bytes)], parsed.body_bytes
    header_version = framing.response_header_version(key, version)
    _, end = ResponseHeader._READERS[header_version](frame, 0)
    return frame[:end], frame[end:]


IDS = [
    f"{r['peer']}|{r['client']}|{r['direction']}|{r['api_key']}v{r['version']}|{n}"
    for n, r in enumerate(FRAMES)
]


@pytest.mark.parametrize("row", FRAMES, ids=IDS)
def test_every_frame_decodes_and_re_encodes_to_its_bytes(row: dict[str, Any]) -> None:
    cls, version = _class(row), row["version"]
    assert version in cls.VALID_VERSIONS
    header, body = _split(row)
    if _sender(row) in UNREADABLE_UNSUPPORTED and body[:2] == b"\x00\x23":
        verdict = judge_reply(body, version, HandshakeConfig())
        assert verdict.outcome == "unsupported-version" and verdict.flags == (
            "zero-count-unsupported-version-reply",
        )
        assert verdict.next_version == 2
        return
    extra = _extra(row, version)
    decoded = cls.decode(body, version, allow_trailing=bool(extra))
    if extra and len(decoded.encode(version)) == len(body):
        extra = b""  # this one followed the spec
    flexible = version in cls.FLEXIBLE_VERSIONS
    if _sender(row) in DEFAULT_TAGS_WRITTEN and flexible:
        shorter = decoded.encode(version)
        assert len(shorter) < len(body) and cls.decode(shorter, version) == decoded
    else:
        assert decoded.encode(version) + extra == body
    if row["direction"] == "request":
        header_version = framing.request_header_version(row["api_key"], version)
        assert RequestHeader.decode(header, header_version).encode(header_version) == header


def _oct2024_valid(direction: str, api_key: int) -> range:
    """The versions the October 2024 specs define (the codec before the 4.3 generation)."""
    for path in (REPO / "vendor" / "kafka-protocol" / "spec" / "message").glob(f"*{direction.title()}.json"):
        text = path.read_text()
        if re.search(rf'"apiKey":\s*{api_key}\b', text):
            low, _, high = re.search(r'"validVersions":\s*"([^"]+)"', text).group(1).partition("-")  # type: ignore[union-attr]
            return range(int(low), int(high or low) + 1)
    return range(0)


def test_the_data_covers_every_client_and_peer_and_versions_only_the_newer_specs_define() -> None:
    assert {r["client"].split()[0] for r in FRAMES} == {"confluent-kafka", "kafka-python", "aiokafka"}
    assert {r["peer"].split()[0] for r in FRAMES} == {"tansu", "librdkafka"}
    newer = [r for r in FRAMES if r["version"] not in _oct2024_valid(r["direction"], r["api_key"])]
    # librdkafka 2.16 sends Metadata v13, which the October 2024 specs do not define.
    assert {(r["api_key"], r["version"]) for r in newer} >= {(3, 13)}
