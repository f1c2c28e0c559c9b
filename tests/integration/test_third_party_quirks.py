"""What noida-db 0.2.3 and librdkafka 2.0.2's mock put on the wire, byte by byte, and how we read it.

Hand-written requests (``tests.brokers.raw``), several on one connection, so
that "the connection stays open" is observed rather than assumed.  Then the
same bytes go through the handshake's judgement (``judge_reply``), which must
retry at the version the broker names.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.handshake.reply import judge_reply
from kafkacompat.testing.librdkafka_mock import LibrdkafkaMockBroker
from kafkacompat.testing.noida import NoidaBroker
from tests.brokers import LOOPBACK
from tests.brokers.raw import Reader, api_versions_request, find_coordinator_request, parse_api_versions

pytestmark = pytest.mark.broker

UNSUPPORTED_VERSION = 35
DEADLINE = 5.0


class Wire:
    """One connection to 127.0.0.1: requests written, replies read, in order."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=DEADLINE)

    def ask(self, payload: bytes) -> bytes:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        deadline = time.monotonic() + DEADLINE
        size = struct.unpack(">i", self._exactly(4, deadline))[0]
        assert 0 <= size < 1 << 20
        return self._exactly(size, deadline)

    def _exactly(self, count: int, deadline: float) -> bytes:
        got = b""
        while len(got) < count:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
            chunk = self.sock.recv(count - len(got))
            assert chunk, f"the connection closed after {got.hex()}"
            got += chunk
        return got

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("version", [4, 5])
def test_noida_refuses_v4_and_up_in_the_v0_layout_and_keeps_the_connection(
    noida: NoidaBroker, version: int
) -> None:
    wire = Wire(noida.port)
    try:
        refusal = wire.ask(api_versions_request(version, 7))
        reply = parse_api_versions(refusal, 0)  # v0: int32 count, no throttle time, no tags
        assert (reply.correlation_id, reply.error_code) == (7, UNSUPPORTED_VERSION)
        assert reply.api_keys == {18: (0, 3)}
        assert reply.fully_read
        verdict = judge_reply(refusal[4:], version, HandshakeConfig())
        assert (verdict.outcome, verdict.next_version) == ("unsupported-version", 3)
        accepted = parse_api_versions(wire.ask(api_versions_request(3, 8)), 3)  # same connection
        assert (accepted.correlation_id, accepted.error_code, accepted.fully_read) == (8, 0, True)
        assert accepted.api_keys[18] == (0, 3) and accepted.api_keys[10] == (0, 4)
    finally:
        wire.close()


def test_noida_batches_find_coordinator_at_v4(noida: NoidaBroker) -> None:
    wire = Wire(noida.port)
    try:
        r = Reader(wire.ask(find_coordinator_request(4, 9, "g1")))
        assert r.int32() == 9
        r.skip_tags()
        r.int32()  # throttle time
        assert r.uvarint() - 1 == 1  # one coordinator entry, for the one key
    finally:
        wire.close()


def test_old_mock_refuses_v4_with_a_zero_count_then_one_entry(
    old_librdkafka_mock: LibrdkafkaMockBroker,
) -> None:
    assert old_librdkafka_mock.librdkafka_version == "2.0.2"
    wire = Wire(old_librdkafka_mock.port)
    try:
        refusal = wire.ask(api_versions_request(4, 11))
        correlation_id, code, count = struct.unpack(">ihB", refusal[:7])
        assert (correlation_id, code, count) == (11, UNSUPPORTED_VERSION, 1)  # compact count 1 = zero entries
        assert struct.unpack(">hhh", refusal[7:13]) == (18, 0, 2)  # ... and yet one entry follows
        assert len(refusal) == 17
        verdict = judge_reply(refusal[4:], 4, HandshakeConfig())
        assert (verdict.outcome, verdict.next_version) == ("unsupported-version", 2)
        assert "zero-count-unsupported-version-reply" in verdict.flags
        accepted = parse_api_versions(wire.ask(api_versions_request(2, 12)), 2)  # same connection
        assert (accepted.correlation_id, accepted.error_code, accepted.fully_read) == (12, 0, True)
        assert accepted.api_keys[18] == (0, 2) and accepted.api_keys[10] == (0, 2)
    finally:
        wire.close()
