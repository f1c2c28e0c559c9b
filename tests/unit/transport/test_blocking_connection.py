"""The blocking driver against tiny scripted peers on 127.0.0.1.

Each peer is one thread that answers ApiVersions and then plays a script for
the requests that follow (answer them, answer out of turn, answer with a size
no Metadata reply may have, close, say nothing).  Every wait is bounded; every
case ends in a response or a typed kafkacompat error.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import pytest

from kafkacompat.blocking.connection import BlockingConnection, open_blocking_connection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.first_contact import FIRST_CONTACT_CORRELATION_ID
from kafkacompat.errors import (
    ConfigError,
    KafkaTimeoutError,
    ProtocolError,
    ReplyTooLargeError,
    TransportError,
)
from kafkacompat.protocol.broker_framing import RequestFrame, decode_request, encode_response
from kafkacompat.protocol.messages import (
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)

LOOPBACK = "127.0.0.1"
LIMIT = 5.0
QUICK = ConnectionConfig(connect_timeout=2.0, request_timeout=2.0)
METADATA, PRODUCE = 3, 0
AFTER = FIRST_CONTACT_CORRELATION_ID + 1  # the first request's id: the handshake's counter goes on

# What the peer does with each request after the handshake: returns the bytes to send back.
Answer = Callable[[RequestFrame], bytes]


@dataclass
class Peer:
    host: str
    port: int
    requests: list[RequestFrame] = field(default_factory=list)
    closed_by_client: threading.Event = field(default_factory=threading.Event)


def recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the client closed")
        data += chunk
    return data


def read_request(conn: socket.socket) -> RequestFrame:
    (size,) = struct.unpack(">i", recv_exact(conn, 4))
    assert 0 < size < 65536
    return decode_request(recv_exact(conn, size))


def api_versions_reply(request: RequestFrame) -> bytes:
    keys = {18: (0, 3), METADATA: (0, 12), PRODUCE: (3, 9)}
    row = ApiVersionsResponse.ApiVersion
    rows = [row(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in keys.items()]
    body = ApiVersionsResponse(api_keys=rows)
    return encode_response(body, request.header.request_api_version, request.header.correlation_id)


def metadata_reply(request: RequestFrame, correlation_id: int | None = None) -> bytes:
    # node_id carries the request's correlation id: a misrouted answer shows.
    broker = MetadataResponse.MetadataResponseBroker(node_id=request.header.correlation_id, host="h", port=1)
    cid = request.header.correlation_id if correlation_id is None else correlation_id
    return encode_response(MetadataResponse(brokers=[broker]), request.header.request_api_version, cid)


@contextmanager
def serve(answer: Answer | None) -> Iterator[Peer]:
    """One connection: ApiVersions answered, then ``answer`` for each request (None: silence)."""
    listener = socket.create_server((LOOPBACK, 0))
    listener.settimeout(LIMIT)
    peer = Peer(LOOPBACK, listener.getsockname()[1])

    def run() -> None:
        with suppress(OSError), listener.accept()[0] as conn:
            conn.settimeout(LIMIT)
            conn.sendall(api_versions_reply(read_request(conn)))
            for _ in range(1000):
                request = read_request(conn)
                peer.requests.append(request)
                reply = answer(request) if answer is not None else b""
                if reply == b"close":
                    return
                conn.sendall(reply)
        peer.closed_by_client.set()

    thread = threading.Thread(target=run, name="blocking-test-peer", daemon=True)
    thread.start()
    try:
        yield peer
    finally:
        thread.join(2 * LIMIT)
        listener.close()
        assert not thread.is_alive()


def node_ids(response: Any) -> list[int]:
    assert isinstance(response, MetadataResponse)
    return [b.node_id for b in response.brokers]


def test_correlation_ids_continue_the_handshake_and_answers_reach_their_caller() -> None:
    with serve(metadata_reply) as peer, open_blocking_connection(peer.host, peer.port, QUICK) as conn:
        answers = [node_ids(conn.request(MetadataRequest(topics=[]))) for _ in range(3)]
    assert [r.header.correlation_id for r in peer.requests] == [AFTER, AFTER + 1, AFTER + 2]
    assert answers == [[AFTER], [AFTER + 1], [AFTER + 2]]
    assert [r.header.request_api_version for r in peer.requests] == [12, 12, 12]


def test_threads_sharing_a_connection_each_get_their_own_answer() -> None:
    with (
        serve(metadata_reply) as peer,
        open_blocking_connection(peer.host, peer.port, QUICK) as conn,
        ThreadPoolExecutor(4) as pool,
    ):
        answers = list(pool.map(lambda _: node_ids(conn.request(MetadataRequest(topics=[]))), range(40)))
    # One request at a time: every answer is a different request's, and every request got one.
    assert sorted(a for (a,) in answers) == list(range(AFTER, AFTER + 40))
    assert len(peer.requests) == 40


def test_an_answer_out_of_turn_fails_the_request_and_every_later_one() -> None:
    with serve(lambda r: metadata_reply(r, r.header.correlation_id + 7)) as peer:
        with open_blocking_connection(peer.host, peer.port, QUICK) as conn:
            with pytest.raises(ProtocolError, match=f"answered correlation id {AFTER + 7}") as caught:
                conn.request(MetadataRequest(topics=[]))
            assert caught.value.node == f"{peer.host}:{peer.port}"
            assert not conn.is_ready
            with pytest.raises(ProtocolError, match=f"correlation id {AFTER + 7}"):
                conn.request(MetadataRequest(topics=[]))
        assert peer.closed_by_client.wait(LIMIT)


def test_a_reply_above_its_ceiling_is_refused_from_its_prefix() -> None:
    # Only the size prefix is sent: refusing it must not wait for (or allocate) the body.
    prefix_only: Answer = lambda r: struct.pack(">i", 90 << 20)  # noqa: E731
    with serve(prefix_only) as peer, open_blocking_connection(peer.host, peer.port, QUICK) as conn:
        with pytest.raises(ReplyTooLargeError):
            conn.request(MetadataRequest(topics=[]))
        assert not conn.is_ready


def test_acks0_produce_ends_once_written() -> None:
    answer: Answer = lambda r: b"" if r.header.request_api_key == PRODUCE else metadata_reply(r)  # noqa: E731
    with serve(answer) as peer, open_blocking_connection(peer.host, peer.port, QUICK) as conn:
        assert conn.request(ProduceRequest(acks=0, timeout_ms=1)) is None
        assert node_ids(conn.request(MetadataRequest(topics=[]))) == [AFTER + 1]


def test_a_silent_peer_times_out_and_the_request_is_given_up() -> None:
    with serve(None) as peer, open_blocking_connection(peer.host, peer.port, QUICK) as conn:
        with pytest.raises(KafkaTimeoutError, match="no response to MetadataRequest v12"):
            conn.request(MetadataRequest(topics=[]), request_timeout=0.2)
        assert conn.is_ready  # given up, its late answer would be dropped


def test_a_close_after_a_request_is_a_transport_error() -> None:
    with serve(lambda r: b"close") as peer, open_blocking_connection(peer.host, peer.port, QUICK) as conn:
        with pytest.raises(TransportError, match="closed"):
            conn.request(MetadataRequest(topics=[]))
        assert not conn.is_ready


def test_misuse_is_typed() -> None:
    with pytest.raises(ConfigError):
        BlockingConnection(LOOPBACK, 9092, "not a config")  # type: ignore[arg-type]
    conn = BlockingConnection(LOOPBACK, 9092, QUICK)
    with pytest.raises(TransportError, match="not negotiated"):
        conn.request(MetadataRequest(topics=[]))
    with pytest.raises(ConfigError, match="timeout"):
        conn.open(timeout=-1)
    with serve(metadata_reply) as peer, open_blocking_connection(peer.host, peer.port, QUICK) as conn:
        with pytest.raises(ProtocolError, match="not a request"):
            conn.request(MetadataResponse())
        with pytest.raises(ConfigError, match="request_timeout"):
            conn.request(MetadataRequest(topics=[]), request_timeout=0)
        with pytest.raises(TransportError, match="already open"):
            conn.open()
        assert node_ids(conn.request(MetadataRequest(topics=[]))) == [AFTER]
