"""The first-contact request and the classification of what a peer sends back (sans-I/O)."""

from __future__ import annotations

import pytest

from kafkacompat.negotiation.peer_kind import (
    FIRST_CONTACT_CORRELATION_ID,
    PeerKind,
    classify,
    first_contact_request,
)
from kafkacompat.protocol.framing import decode_request, encode_response
from kafkacompat.protocol.messages import ApiVersionsResponse, MetadataResponse


def _frames(data: bytes) -> list[bytes]:
    frames = []
    while data:
        size = int.from_bytes(data[:4], "big")
        frames.append(data[4 : 4 + size])
        data = data[4 + size :]
    return frames


def test_the_first_request_is_two_valid_kafka_requests_and_ends_a_text_line_early() -> None:
    data = first_contact_request()
    first, second = (decode_request(frame) for frame in _frames(data))
    assert (first.header.request_api_key, first.header.request_api_version) == (18, 0)
    assert (second.header.request_api_key, second.header.request_api_version) == (3, 0)
    assert first.header.correlation_id == FIRST_CONTACT_CORRELATION_ID
    assert second.header.correlation_id == FIRST_CONTACT_CORRELATION_ID + 1
    assert data.index(b"\r\n") < 12  # in the first request's header: a line reader answers before the rest


@pytest.mark.parametrize(
    "reply",
    [
        encode_response(ApiVersionsResponse(error_code=35), 0, FIRST_CONTACT_CORRELATION_ID),
        encode_response(MetadataResponse(), 0, FIRST_CONTACT_CORRELATION_ID + 1),  # 0.9: no ApiVersions
    ],
)
def test_a_kafka_answer_is_kafka(reply: bytes) -> None:
    verdict = classify(reply)
    assert verdict.is_kafka and verdict.sentence == ""


@pytest.mark.parametrize(
    ("reply", "kind", "says"),
    [
        (b"HTTP/1.0 400 Bad request\r\n\r\n", PeerKind.HTTP, "the peer answered in HTTP (HTTP/1.0 400"),
        (b"<!DOCTYPE HTML>\n<html>", PeerKind.HTTP, "the peer answered in HTTP"),
        (b"\x15\x03\x03\x00\x02\x02\x32", PeerKind.TLS, "add --tls"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", PeerKind.SSH, "the peer is an SSH server (SSH-2.0-OpenSSH_9.6)"),
        (b"220 mail ESMTP ready\r\n", PeerKind.TEXT, 'the peer answered in text ("220 mail ESMTP ready")'),
        (b"\x01\x02\x03\xff", PeerKind.OTHER, "4 byte(s) that are not a Kafka reply"),
    ],
)
def test_other_peers_are_named_in_one_short_sentence(reply: bytes, kind: PeerKind, says: str) -> None:
    verdict = classify(reply)
    assert verdict.kind is kind and says in verdict.sentence
    assert len(verdict.sentence) < 200 and "\n" not in verdict.sentence


def test_silence_and_a_close_without_a_byte() -> None:
    assert classify(b"", closed=True).kind is PeerKind.CLOSED
    silent = classify(b"", waited=2.6)
    assert silent.kind is PeerKind.SILENT and "answered nothing in 3 s" in silent.sentence


def test_what_a_peer_sent_is_escaped_and_cut() -> None:
    verdict = classify(b"+" + b"\x1b[31m" * 30 + b"\r\n")
    assert "\x1b" not in verdict.sentence and len(verdict.sentence) < 200
