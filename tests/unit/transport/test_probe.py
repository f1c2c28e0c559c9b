"""The blocking probe against tiny scripted servers on 127.0.0.1.

Each server is one thread that accepts a bounded number of connections and
plays a script on each: read the ApiVersions request, then answer with
whatever the case needs (a bad size prefix, HTTP, a TLS alert, half a frame,
silence, a real reply).  Every wait is bounded, and every case must end in
capabilities or a typed kafkacompat error carrying the node and the transcript.
"""

from __future__ import annotations

import errno
import math
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import pytest

from kafkacompat.blocking import connection as blocking_module
from kafkacompat.blocking.probe import probe_address, probe_broker
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.os_errors import translate_os_error
from kafkacompat.connection.security import TlsConfig
from kafkacompat.errors import (
    BrokerTooOldError,
    ConfigError,
    InvalidAddressError,
    KafkaCompatError,
    KafkaTimeoutError,
    NegotiationError,
    ProtocolError,
    ReplyTooLargeError,
    SilentPeerError,
    TransportError,
    WrongProtocolError,
)
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.negotiation.peer_kind import TLS_CLIENT_HELLO
from kafkacompat.protocol.broker_framing import RequestFrame, decode_request, encode_response
from kafkacompat.protocol.messages import ApiVersionsResponse
from kafkacompat.protocol.versions import VersionRange

LOOPBACK = "127.0.0.1"
LIMIT = 5.0  # seconds any server-side wait may take
QUICK = ConnectionConfig(connect_timeout=2.0, request_timeout=2.0)

HTTP_REPLY = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
TLS_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])
TLS_HELLO = bytes([0x16, 0x03, 0x01, 0x00, 0xA5, 0x01, 0x00, 0x00, 0xA1])

Script = Callable[[socket.socket, int, "Peer"], None]


@dataclass
class Peer:
    host: str
    port: int
    connections: int = 0
    requests: list[RequestFrame] = field(default_factory=list)
    client_closed: list[bool] = field(default_factory=list)  # per connection that waited for it

    @property
    def node(self) -> str:
        return f"{self.host}:{self.port}"


def recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    for _ in range(size):  # at least one byte per round, so at most ``size`` rounds
        if len(data) == size:
            break
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"the client closed after {len(data)} of {size} bytes")
        data += chunk
    return data


def read_request(conn: socket.socket, peer: Peer) -> RequestFrame:
    (size,) = struct.unpack(">i", recv_exact(conn, 4))
    assert 0 < size < 4096
    request = decode_request(recv_exact(conn, size))
    peer.requests.append(request)
    return request


def api_versions_reply(request: RequestFrame, *, keys: dict[int, tuple[int, int]] | None = None) -> bytes:
    table = keys if keys is not None else {18: (0, 3), 3: (0, 12)}
    api_keys = [
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
        for key, (low, high) in table.items()
    ]
    body = ApiVersionsResponse(api_keys=api_keys)
    version = request.header.request_api_version
    return encode_response(body, version, request.header.correlation_id)


def wait_for_client(conn: socket.socket, peer: Peer) -> None:
    """Hold the connection open; record whether the client closed it within LIMIT."""
    conn.settimeout(LIMIT)
    closed = False
    try:
        for _ in range(1000):  # bounded reads
            if not conn.recv(4096):
                closed = True
                break
    except TimeoutError:
        pass
    except OSError:
        closed = True  # a reset is a close too
    peer.client_closed.append(closed)


@contextmanager
def serve(script: Script, *, connections: int = 4) -> Iterator[Peer]:
    """A server that plays ``script(conn, index, peer)`` on up to ``connections`` connections."""
    listener = socket.create_server((LOOPBACK, 0))
    listener.settimeout(0.05)
    peer = Peer(LOOPBACK, listener.getsockname()[1])
    stop = threading.Event()

    def run() -> None:
        index = 0
        deadline = time.monotonic() + 4 * LIMIT
        while index < connections and not stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(LIMIT)
                peer.connections += 1
                # The client may go away first: what it saw is what the test checks.
                with suppress(OSError):
                    script(conn, index, peer)
            index += 1

    thread = threading.Thread(target=run, name="probe-test-peer", daemon=True)
    thread.start()
    try:
        yield peer
    finally:
        stop.set()
        thread.join(4 * LIMIT + 1)
        listener.close()
        assert not thread.is_alive()


def failure(peer: Peer, config: ConnectionConfig = QUICK, **options: Any) -> KafkaCompatError:
    """The typed error of probing ``peer``, checked for its node and transcript."""
    with pytest.raises(KafkaCompatError) as caught:
        probe_broker(peer.host, peer.port, config, **options)
    error = caught.value
    assert error.node == peer.node
    assert isinstance(error.transcript, HandshakeTranscript)
    return error


# -- bad replies ------------------------------------------------------------------------------


def answer_with(data: bytes, *, then_wait: bool = False) -> Script:
    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        read_request(conn, peer)
        conn.sendall(data)
        if then_wait:
            wait_for_client(conn, peer)

    return script


def replying(data: bytes, *, then_wait: bool = True) -> Any:
    return serve(answer_with(data, then_wait=then_wait))


@pytest.mark.parametrize(
    ("prefix", "words"),
    [
        (struct.pack(">i", -16), "negative"),
        (struct.pack(">i", 0x7FFFFFFF), "exceeds the maximum"),
        (struct.pack(">i", QUICK.max_frame_size + 1), "exceeds the maximum"),
    ],
)
def test_bad_size_prefix_is_refused_before_reading_the_frame(prefix: bytes, words: str) -> None:
    with replying(prefix + b"\x00" * 12) as peer:
        start = time.monotonic()
        error = failure(peer)
        took = time.monotonic() - start
    assert isinstance(error, ProtocolError) and words in str(error)
    assert took < 1.0  # refused at once, not after waiting for the announced bytes
    assert peer.connections == 1 and peer.client_closed == [True]


def test_a_size_above_a_small_max_frame_size_is_refused() -> None:
    config = ConnectionConfig(connect_timeout=2.0, request_timeout=2.0, max_frame_size=64)
    with replying(struct.pack(">i", 65) + b"\x00" * 65) as peer:
        error = failure(peer, config)
    assert isinstance(error, ReplyTooLargeError) and "maximum of 64 bytes" in str(error)


@pytest.mark.parametrize(
    ("reply", "kind", "hint"),
    [
        (HTTP_REPLY, "http", "the peer answered in HTTP (HTTP/1.1 400 Bad Request)"),
        (TLS_ALERT, "tls", "TLS listener: the peer answered with a TLS record"),
        (TLS_HELLO, "tls", "TLS listener: the peer answered with a TLS record"),
        (b"SSH-2.0-x\r\n", "ssh", "the peer is an SSH server (SSH-2.0-x)"),
    ],
)
def test_another_protocols_reply_is_a_wrong_protocol_error(reply: bytes, kind: str, hint: str) -> None:
    with replying(reply) as peer:
        error = failure(peer)
    assert isinstance(error, WrongProtocolError) and hint in str(error) and error.kind == kind
    # The machine judged the foreign bytes (one round trip), and did not retry on them.
    assert error.transcript.round_trips == 1 and peer.connections == 1
    assert peer.client_closed == [True]


def test_peer_closing_mid_frame_on_everything_is_no_kafka() -> None:
    half_frame = struct.pack(">i", 100) + b"\x00" * 10
    hellos: list[bytes] = []

    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        if index < 4:
            read_request(conn, peer)
            conn.sendall(half_frame)
        else:  # the TLS question: a record header, closed on as well
            hellos.append(recv_exact(conn, 5))

    with serve(script, connections=5) as peer:
        error = failure(peer)
    assert isinstance(error, BrokerTooOldError) and "Metadata v0" in str(error)
    # One flexible version lower first (the software name still goes out), then v0, then the
    # Metadata v0 every Kafka answers, on a fourth connection, and a TLS ClientHello on a fifth.
    assert error.transcript.versions_tried == (5, 3, 0) and error.transcript.connections == 5
    assert [(r.header.request_api_key, r.header.request_api_version) for r in peer.requests] == [
        (18, 5), (18, 3), (18, 0), (3, 0)
    ]
    assert hellos == [TLS_CLIENT_HELLO[:5]] and "nor a TLS listener" in str(error)


def test_peer_closing_mid_frame_without_a_second_connection_allowed() -> None:
    config = ConnectionConfig(
        connect_timeout=2.0, request_timeout=2.0, handshake=HandshakeConfig(max_connections=1)
    )
    with replying(struct.pack(">i", 100) + b"\x00" * 10, then_wait=False) as peer:
        error = failure(peer, config)
    assert type(error) is TransportError and "max_connections (1)" in str(error)
    assert peer.connections == 1


def test_peer_closing_mid_frame_then_answering_v3_on_a_new_connection() -> None:
    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        request = read_request(conn, peer)
        reply = api_versions_reply(request)
        conn.sendall(reply[: len(reply) // 2] if index == 0 else reply)
        if index == 1:
            wait_for_client(conn, peer)

    with serve(script) as peer:
        caps = probe_broker(peer.host, peer.port, QUICK, node_id=7)
    assert caps.node == peer.node and caps.node_id == 7
    assert dict(caps.api_ranges) == {3: VersionRange(0, 12), 18: VersionRange(0, 3)}
    assert caps.transcript is not None and caps.transcript.versions_tried == (5, 3)
    assert [a.outcome for a in caps.transcript.attempts] == ["closed-step-down", "ok"]
    assert peer.client_closed == [True]  # the probe closed its socket before returning


def test_silent_peer_is_named_silent_on_the_request_timeout() -> None:
    config = ConnectionConfig(connect_timeout=1.0, request_timeout=0.3)
    with serve(answer_with(b"", then_wait=True), connections=1) as peer:
        start = time.monotonic()
        error = failure(peer, config)
        took = time.monotonic() - start
    assert type(error) is SilentPeerError and "answered nothing in 0.3 s" in str(error)
    assert 0.3 <= took < 1.5 and peer.connections == 1  # silence is never a downgrade


def test_a_trickling_peer_does_not_move_the_deadline() -> None:
    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        read_request(conn, peer)
        conn.sendall(struct.pack(">i", 1000))
        for _ in range(100):  # one byte every 50 ms: 5 s if nobody stopped it
            conn.sendall(b"\x00")
            time.sleep(0.05)

    config = ConnectionConfig(connect_timeout=1.0, request_timeout=0.5)
    with serve(script, connections=1) as peer:
        start = time.monotonic()
        error = failure(peer, config)
        took = time.monotonic() - start
    assert isinstance(error, KafkaTimeoutError)
    assert 0.5 <= took < 1.5


def test_the_overall_timeout_bounds_the_whole_probe() -> None:
    config = ConnectionConfig(connect_timeout=5.0, request_timeout=5.0)
    with serve(answer_with(b"", then_wait=True), connections=1) as peer:
        start = time.monotonic()
        error = failure(peer, config, timeout=0.4)
        took = time.monotonic() - start
    assert isinstance(error, KafkaTimeoutError)
    assert 0.4 <= took < 1.5


def test_closed_port_is_a_transport_error_with_the_transcript() -> None:
    with socket.create_server((LOOPBACK, 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(TransportError) as caught:
        probe_broker(LOOPBACK, port, QUICK)
    error = caught.value
    assert "connection refused while connecting" in str(error)
    assert error.node == f"{LOOPBACK}:{port}"
    assert [a.outcome for a in error.transcript.attempts] == ["connect-failed"]


@pytest.mark.parametrize("host", ["a" * 64 + ".example", "a..b", "a\x00b", "a" * 10_000])
def test_a_host_name_that_cannot_be_encoded_is_refused_before_any_socket_call(host: str) -> None:
    with pytest.raises(InvalidAddressError, match="given by the caller of probe_broker") as caught:
        probe_broker(host, 9092, QUICK)
    assert len(str(caught.value)) < 300  # a 10 KB name is not echoed whole


def test_a_runaway_machine_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocking_module, "_MAX_SETUP_STEPS", 2)  # connect, send: never the reply

    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        read_request(conn, peer)

    with serve(script, connections=1) as peer:
        error = failure(peer)
    assert type(error) is NegotiationError and "2 steps" in str(error)


# -- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("", 9092),
        (None, 9092),
        (LOOPBACK, 0),
        (LOOPBACK, 65536),
        (LOOPBACK, -1),
        (LOOPBACK, True),
        (LOOPBACK, "9092"),
        (LOOPBACK, 9092.0),
    ],
)
def test_bad_host_or_port(host: Any, port: Any) -> None:
    with pytest.raises(ConfigError):
        probe_broker(host, port)


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, True, "1"])
def test_bad_timeout(timeout: Any) -> None:
    with pytest.raises(ConfigError, match="timeout"):
        probe_broker(LOOPBACK, 9092, timeout=timeout)


def test_bad_config_type() -> None:
    with pytest.raises(ConfigError, match="ConnectionConfig"):
        probe_broker(LOOPBACK, 9092, {"connect_timeout": 1})  # type: ignore[arg-type]


def test_a_server_name_ssl_refuses_is_a_config_error() -> None:
    tls = TlsConfig(server_hostname=".leading-dot", verify=False)
    config = ConnectionConfig(connect_timeout=1.0, request_timeout=1.0, tls=tls)

    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        pass

    with serve(script, connections=1) as peer, pytest.raises(ConfigError, match="TLS settings") as caught:
        probe_broker(peer.host, peer.port, config)
    assert caught.value.node == peer.node and peer.connections == 0  # refused before connecting


def test_config_errors_are_kafkacompat_errors_and_value_errors() -> None:
    with pytest.raises(ConfigError) as caught:
        probe_address("no-port")
    assert isinstance(caught.value, KafkaCompatError) and isinstance(caught.value, ValueError)


@pytest.mark.parametrize("address", ["no-port", "host:", ":9092", "host:abc", "host:-1", "", 9092])
def test_bad_address(address: Any) -> None:
    with pytest.raises(ConfigError):
        probe_address(address)


@pytest.mark.parametrize("form", ["{host}:{port}", " {host}:{port} ", "[{host}]:{port}"])
def test_address_forms(form: str) -> None:
    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        conn.sendall(api_versions_reply(read_request(conn, peer)))
        wait_for_client(conn, peer)

    with serve(script, connections=1) as peer:
        caps = probe_address(form.format(host=peer.host, port=peer.port), QUICK)
    assert caps.node == peer.node and caps.lists_api(3)


def test_sasl_is_ignored() -> None:
    """Kafka answers ApiVersions before authentication: the probe sends nothing else."""
    from kafkacompat.connection.security import SaslConfig, Secret

    config = ConnectionConfig(sasl=SaslConfig("PLAIN", "alice", Secret("x")), request_timeout=2.0)

    def script(conn: socket.socket, index: int, peer: Peer) -> None:
        conn.sendall(api_versions_reply(read_request(conn, peer)))
        wait_for_client(conn, peer)

    with serve(script, connections=1) as peer:
        caps = probe_broker(peer.host, peer.port, config)
    assert caps.lists_api(18)
    assert [r.header.request_api_key for r in peer.requests] == [18]
    assert peer.client_closed == [True]


# -- the translation seam ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "kind", "words"),
    [
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), TransportError, "connection refused while x"),
        (ConnectionResetError(errno.ECONNRESET, "reset"), TransportError, "connection reset by the peer"),
        (BrokenPipeError(errno.EPIPE, "pipe"), TransportError, "the connection broke while x"),
        (TimeoutError("timed out"), KafkaTimeoutError, "timed out while x"),
        (OSError(errno.EHOSTUNREACH, "no route"), TransportError, "host unreachable while x"),
        (socket.gaierror(-2, "Name or service not known"), TransportError, "cannot resolve the host"),
        (OSError(errno.EACCES, "Permission denied"), TransportError, "Permission denied while x"),
    ],
)
def test_translate(exc: OSError, kind: type[KafkaCompatError], words: str) -> None:
    error = translate_os_error(exc, "n:1", "x")
    assert type(error) is kind and words in str(error) and error.node == "n:1"


def test_translate_a_reset_during_the_tls_handshake() -> None:
    error = translate_os_error(ConnectionResetError(), "n:1", "running the TLS handshake")
    assert type(error).__name__ == "AuthenticationError" and "the peer reset" in str(error)
