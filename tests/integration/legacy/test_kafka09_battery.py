"""One battery of raw probes against the real Kafka 0.9.0.1 and the emulated 0.9.0: same answers.

Each probe opens a connection, writes its frames back to back, then records
what can be observed from outside: the correlation ids of the replies, in
order, and whether the connection is closed or still serving (a Metadata v0
sent afterwards is answered).  Silence is read as "no reply" after a quiet
period far above either broker's answer time on loopback.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from kafkacompat.protocol import framing
from kafkacompat.protocol.messages import ApiVersionsRequest, MetadataRequest
from kafkacompat.testing.kafka09 import Kafka09Broker

QUIET = 0.6  # seconds without a byte: no (further) reply is coming
SOFTWARE = ApiVersionsRequest(client_software_name="kafkacompat-tests", client_software_version="1.0")


def api_versions(version: int, correlation_id: int) -> bytes:
    request = SOFTWARE if version >= 3 else ApiVersionsRequest()
    return framing.encode_request(request, version, correlation_id, "battery")


def metadata(correlation_id: int) -> bytes:
    return framing.encode_request(MetadataRequest(topics=[]), 0, correlation_id, "battery")


def unknown_key(correlation_id: int, api_key: int = 99) -> bytes:
    body = struct.pack(">hhih", api_key, 0, correlation_id, 7) + b"battery"
    return struct.pack(">i", len(body)) + body


BATTERY: dict[str, Callable[[], list[bytes]]] = {
    "ApiVersions v0": lambda: [api_versions(0, 1)],
    "ApiVersions v3": lambda: [api_versions(3, 1)],
    "ApiVersions v4": lambda: [api_versions(4, 1)],
    "Metadata v0": lambda: [metadata(1)],
    "ApiVersions v0 then Metadata v0": lambda: [api_versions(0, 1), metadata(2)],
    "ApiVersions v4 then Metadata v0": lambda: [api_versions(4, 1), metadata(2)],
    "Metadata v0 then ApiVersions v4": lambda: [metadata(1), api_versions(4, 2)],
    "unknown api key 99": lambda: [unknown_key(1)],
    "unknown api key 99 then Metadata v0": lambda: [unknown_key(1), metadata(2)],
}


@dataclass(frozen=True)
class Observed:
    reply_correlation_ids: tuple[int, ...]
    state: str  # "closed" or "serving"


def observe(host: str, port: int, frames: list[bytes]) -> Observed:
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(b"".join(frames))
        replies, closed = _read_until_quiet(sock)
        if closed:
            return Observed(replies, "closed")
        sock.sendall(metadata(100))
        after, closed = _read_until_quiet(sock)
        assert after == (100,) and not closed, "an open connection must go on serving Metadata v0"
        return Observed(replies, "serving")


def _read_until_quiet(sock: socket.socket) -> tuple[tuple[int, ...], bool]:
    splitter = framing.FrameSplitter()
    ids: list[int] = []
    sock.settimeout(QUIET)
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return tuple(ids), False
        except ConnectionResetError:
            return tuple(ids), True
        if not chunk:
            return tuple(ids), True
        ids += [framing.peek_correlation_id(frame) for frame in splitter.feed(chunk)]


def run_battery(host: str, port: int) -> dict[str, Observed]:
    return {name: observe(host, port, frames()) for name, frames in BATTERY.items()}


@pytest.fixture(scope="module")
def real_answers(kafka09: Kafka09Broker) -> dict[str, Observed]:
    return run_battery(kafka09.host, kafka09.port)


def test_the_real_broker_answers_what_the_issue_observed(real_answers: dict[str, Observed]) -> None:
    # The facts the emulator's 0.9 era is built on, checked on the real thing each run.
    assert real_answers["ApiVersions v4"] == Observed((), "serving")
    assert real_answers["ApiVersions v0 then Metadata v0"] == Observed((2,), "serving")
    assert real_answers["unknown api key 99"] == Observed((), "serving")


def test_the_emulated_0_9_0_answers_the_battery_as_the_real_0_9_0_1(
    real_answers: dict[str, Observed], threaded_emulated_cluster: Callable[..., object]
) -> None:
    cluster = threaded_emulated_cluster("0.9.0")
    broker = cluster.brokers[0]  # type: ignore[attr-defined]
    started = time.monotonic()
    emulated = run_battery(broker.host, broker.port)
    assert emulated == real_answers, f"emulated 0.9.0 differs (after {time.monotonic() - started:.1f}s)"


def test_the_emulated_0_8_2_closes_where_0_9_drops(threaded_emulated_cluster: Callable[..., object]) -> None:
    # 0.8.x cannot parse an unknown api key and closes (SocketServer's read fails), per its source.
    cluster = threaded_emulated_cluster("0.8.2")
    broker = cluster.brokers[0]  # type: ignore[attr-defined]
    assert observe(broker.host, broker.port, [api_versions(0, 1)]) == Observed((), "closed")
    assert observe(broker.host, broker.port, [metadata(1), api_versions(4, 2)]) == Observed((1,), "closed")
