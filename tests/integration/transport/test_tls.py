"""TLS through ``open_connection``, with a TLS terminator in front of Tansu.

Tansu 0.6.0 cannot serve TLS itself, so ``tests.support.tls_terminator``
terminates TLS on 127.0.0.1 (certificates by trustme for ``localhost`` and
``127.0.0.1``) and forwards the plaintext to the session's Tansu.  A success
is the ApiVersions handshake plus a Metadata request through the tunnel; each
failure must be a typed error, quickly, never a hang.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig, Secret, TlsConfig
from kafkacompat.errors import (
    AuthenticationError,
    KafkaCompatError,
    KafkaTimeoutError,
    WrongProtocolError,
)
from kafkacompat.protocol.messages import MetadataRequest, MetadataResponse
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.connection import open_connection
from tests.support.sasl_server import run_sasl_server
from tests.support.tls_terminator import (
    TlsFiles,
    make_tls_files,
    serve_tls_terminator,
    server_context,
    terminate_tls_for,
)

pytestmark = pytest.mark.broker

DEADLINE = 15


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))



def tls(files: TlsFiles, ca_file: Path | None = None, **options: object) -> ConnectionConfig:
    settings = TlsConfig(ca_file=ca_file or files.ca_file, **options)  # type: ignore[arg-type]
    return ConnectionConfig(connect_timeout=3, request_timeout=3, tls=settings)


def unwrap(exc: BaseException) -> BaseException:
    # open_connection runs in a nursery, so its errors may arrive in an ExceptionGroup.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def metadata(host: str, port: int, cfg: ConnectionConfig) -> MetadataResponse:
    with trio.fail_after(DEADLINE):
        async with open_connection(host, port, cfg) as conn:
            assert conn.capabilities is not None and conn.capabilities.lists_api(3)
            response = await conn.request(MetadataRequest(topics=[]))
    assert isinstance(response, MetadataResponse)
    return response


async def failure(host: str, port: int, cfg: ConnectionConfig) -> tuple[KafkaCompatError, float]:
    """The typed error of a connection attempt, and how long it took."""
    start = trio.current_time()
    try:
        await metadata(host, port, cfg)
    except Exception as exc:  # unwrapped and checked just below
        error = unwrap(exc)
        assert isinstance(error, KafkaCompatError), repr(error)
        assert error.node == f"{host}:{port}"
        return error, trio.current_time() - start
    pytest.fail("the connection succeeded")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_tls_success(tansu: TansuBroker, tls_files: TlsFiles, host: str) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        response = await metadata(host, term.port, tls(tls_files))
        assert term.forwarded == 1 and term.handshake_failures == []
    assert [broker.port for broker in response.brokers] == [tansu.port]


async def test_unknown_ca(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        error, took = await failure(term.host, term.port, tls(tls_files, tls_files.other_ca_file))
        assert term.forwarded == 0
    assert isinstance(error, AuthenticationError)
    assert "certificate verification failed" in str(error) and "issuer" in str(error)
    assert took < 3


async def test_wrong_host_name(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        cfg = tls(tls_files, server_hostname="kafka.example.com")
        error, took = await failure(term.host, term.port, cfg)
        assert term.forwarded == 0
    assert isinstance(error, AuthenticationError)
    assert "kafka.example.com" in str(error) and "certificate verification failed" in str(error)
    assert took < 3


async def test_hostname_check_can_be_turned_off(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        cfg = tls(tls_files, server_hostname="kafka.example.com", check_hostname=False)
        await metadata(term.host, term.port, cfg)


async def test_plaintext_client_to_the_tls_port(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    """The terminator drops a non-TLS hello without an alert, like Kafka's SSL listener.

    The client sees the connection close before any ApiVersions reply, at v5,
    v3 and again at v0, then asks a TLS ClientHello on a fresh connection,
    which the terminator answers: the peer is named a TLS listener, at once.
    """
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        cfg = ConnectionConfig(connect_timeout=3, request_timeout=3)
        error, took = await failure(term.host, term.port, cfg)
        assert term.forwarded == 0
        assert any("WRONG_VERSION_NUMBER" in failure for failure in term.handshake_failures)
    assert isinstance(error, WrongProtocolError) and error.kind == "tls", repr(error)
    assert "connect with TLS" in str(error)
    assert took < 3


async def test_tls_client_to_plaintext_tansu(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    """Tansu reads the ClientHello as the size of a huge frame and waits for it.

    The client's TLS handshake therefore never completes; the connect
    timeout ends it with a KafkaTimeoutError.
    """
    cfg = tls(tls_files)
    error, took = await failure(tansu.host, tansu.port, cfg)
    assert isinstance(error, KafkaTimeoutError)
    assert "connecting" in str(error)
    assert cfg.connect_timeout <= took < cfg.connect_timeout + 2


async def test_mutual_tls(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files, mutual=True) as term:
        cfg = tls(tls_files, cert_file=tls_files.client_cert, key_file=tls_files.client_key)
        await metadata(term.host, term.port, cfg)
        assert term.forwarded == 1


async def test_mutual_tls_without_a_client_certificate(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    """Under TLS 1.3 the client finishes its handshake first; the refusal shows on the first read."""
    async with terminate_tls_for((tansu.host, tansu.port), tls_files, mutual=True) as term:
        error, took = await failure(term.host, term.port, tls(tls_files))
        assert term.forwarded == 0
        assert any("CERTIFICATE" in failure for failure in term.handshake_failures)
    assert isinstance(error, AuthenticationError)
    assert "TLS" in str(error)
    assert took < 3


async def test_terminator_is_bounded_and_stops(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    context = server_context(tls_files)
    with trio.fail_after(DEADLINE):
        async with serve_tls_terminator((tansu.host, tansu.port), context, max_connections=1) as term:
            await metadata(term.host, term.port, tls(tls_files))
            # The second connection is closed at once: mid-handshake, a TLS failure.
            error, _ = await failure(term.host, term.port, tls(tls_files))
            assert (term.accepted, term.forwarded) == (2, 1)
            port = term.port
    assert isinstance(error, AuthenticationError) and "TLS handshake" in str(error)
    with pytest.raises(OSError):
        await trio.open_tcp_stream("127.0.0.1", port)


async def test_sasl_over_tls(tls_files: TlsFiles) -> None:
    """SASL_SSL: SCRAM through the terminator, in front of the in-test SASL server."""
    context = server_context(tls_files)
    with trio.fail_after(DEADLINE):
        async with (
            run_sasl_server({"alice": "over-tls"}) as server,
            serve_tls_terminator((server.host, server.port), context) as term,
        ):
            cfg = ConnectionConfig(
                tls=TlsConfig(ca_file=tls_files.ca_file),
                sasl=SaslConfig("SCRAM-SHA-512", "alice", Secret("over-tls")),
            )
            response = await metadata(term.host, term.port, cfg)
            assert server.logins == [("SCRAM-SHA-512", "alice")] and term.forwarded == 1
    assert [broker.node_id for broker in response.brokers] == [1]
