"""The blocking probe against real peers, TLS, the release emulator, and in a fresh process.

Tansu 0.6.0 and librdkafka's mock cluster must give the probe exactly the
capabilities the trio transport learns from them; librdkafka takes the
downgrade path (UNSUPPORTED_VERSION on the first ApiVersions, then v0).  TLS
goes through ``tests.support.tls_terminator`` in front of Tansu, as in
``test_tls``.  The emulator stands in for every release from 0.8.2 (pre-0.10:
a configured fallback) to 4.2, and for a broker that never answers.  A child
process shows what a probe imports: no trio, tenacity or asyncio, and ssl only
for a TLS probe.  Every probe runs with short timeouts, so a hang is a failure.
"""

from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import trio

from kafkacompat.blocking.probe import probe_address, probe_broker
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import TlsConfig
from kafkacompat.errors import (
    AuthenticationError,
    KafkaCompatError,
    KafkaTimeoutError,
    TransportError,
    WrongProtocolError,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.config import HandshakeConfig, release_ranges
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.testing import Fault, ThreadedCluster, profile_for
from kafkacompat.testing.ports import free_port
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.connection import open_connection
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.support.tls_terminator import (
    TlsFiles,
    make_tls_files,
    terminate_tls_for,
)

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[3]
DEADLINE = 15.0
QUICK = ConnectionConfig(connect_timeout=2.0, request_timeout=2.0)
Peer = TansuBroker | LibrdkafkaMockCluster


async def in_thread(
    host: str, port: int, config: ConnectionConfig = QUICK, **options: Any
) -> BrokerCapabilities:
    """Probe from a worker thread, as an event-loop program would; bounded by DEADLINE."""
    with trio.fail_after(DEADLINE):
        return await trio.to_thread.run_sync(functools.partial(probe_broker, host, port, config, **options))


async def probe_failure(host: str, port: int, config: ConnectionConfig) -> tuple[KafkaCompatError, float]:
    start = time.monotonic()
    try:
        await in_thread(host, port, config)
    except KafkaCompatError as exc:
        assert exc.node == f"{host}:{port}"
        assert isinstance(exc.transcript, HandshakeTranscript)
        return exc, time.monotonic() - start
    pytest.fail("the probe succeeded")


async def trio_capabilities(host: str, port: int) -> BrokerCapabilities:
    with trio.fail_after(DEADLINE):
        async with open_connection(host, port, QUICK) as conn:
            assert conn.capabilities is not None
            return conn.capabilities


# -- real peers: the same answer as the trio transport -----------------------------------------


@pytest.mark.parametrize("name", ["tansu", "librdkafka_mock"])
async def test_same_capabilities_as_the_trio_transport(name: str, request: pytest.FixtureRequest) -> None:
    peer: Peer = request.getfixturevalue(name)
    probed = await in_thread(peer.host, peer.port, node_id=1)
    learned = await trio_capabilities(peer.host, peer.port)
    assert probed.node == learned.node == f"{peer.host}:{peer.port}" and probed.node_id == 1
    assert probed.api_ranges == learned.api_ranges and len(probed.api_ranges) > 10
    assert probed.supported_features == learned.supported_features
    assert probed.finalized_features == learned.finalized_features
    assert probed.finalized_features_epoch == learned.finalized_features_epoch
    assert probed.release_guess.text == learned.release_guess.text
    assert probed.transcript is not None and learned.transcript is not None
    assert probed.transcript.attempts == learned.transcript.attempts


async def test_tansu_answers_the_first_version(tansu: TansuBroker) -> None:
    caps = await in_thread(tansu.host, tansu.port)
    assert caps.transcript is not None
    assert [(a.version, a.outcome) for a in caps.transcript.attempts] == [(5, "ok")]
    assert caps.transcript.connections == 1 and "Kafka 3.9" in caps.release_guess.text


async def test_librdkafka_mock_takes_the_downgrade_path(librdkafka_mock: LibrdkafkaMockCluster) -> None:
    caps = await in_thread(librdkafka_mock.host, librdkafka_mock.port)
    transcript = caps.transcript
    assert transcript is not None
    assert [(a.version, a.outcome) for a in transcript.attempts] == [(5, "unsupported-version"), (2, "ok")]
    assert "UNSUPPORTED_VERSION" in transcript.attempts[0].detail
    # The downgrade happens on the same connection: one connection, two round trips.
    assert (transcript.connections, transcript.round_trips, transcript.api_versions_version) == (1, 2, 2)


async def test_the_address_form(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        caps = await trio.to_thread.run_sync(probe_address, tansu.bootstrap, QUICK)
    assert caps.node == f"{tansu.host}:{tansu.port}" and caps.lists_api(18)


def test_from_threads_and_from_asyncio(tansu: TansuBroker) -> None:
    expected = probe_broker(tansu.host, tansu.port, QUICK)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(probe_broker, tansu.host, tansu.port, QUICK) for _ in range(8)]
        results = [future.result(timeout=DEADLINE) for future in futures]
    assert all(caps == expected for caps in results)

    async def main() -> BrokerCapabilities:
        return await asyncio.wait_for(
            asyncio.to_thread(probe_broker, tansu.host, tansu.port, QUICK), DEADLINE
        )

    assert asyncio.run(main()) == expected


# -- TLS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("probe-tls"))



def tls(files: TlsFiles, ca_file: Path | None = None, **options: Any) -> ConnectionConfig:
    settings = TlsConfig(ca_file=ca_file or files.ca_file, **options)
    return ConnectionConfig(connect_timeout=1.0, request_timeout=2.0, tls=settings)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_tls_success(tansu: TansuBroker, tls_files: TlsFiles, host: str) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        caps = await in_thread(host, term.port, tls(tls_files))
        assert term.forwarded == 1 and term.handshake_failures == []
    plain = await in_thread(tansu.host, tansu.port)
    assert caps.node == f"{host}:{term.port}"
    assert caps.api_ranges == plain.api_ranges and caps.release_guess.text == plain.release_guess.text


async def test_tls_unknown_ca(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        error, took = await probe_failure(term.host, term.port, tls(tls_files, tls_files.other_ca_file))
        assert term.forwarded == 0
    assert isinstance(error, AuthenticationError)
    assert "TLS certificate verification failed while running the TLS handshake" in str(error)
    assert "issuer" in str(error) and took < 1.0


async def test_tls_wrong_host_name(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        cfg = tls(tls_files, server_hostname="kafka.example.com")
        error, took = await probe_failure(term.host, term.port, cfg)
        assert term.forwarded == 0
    assert isinstance(error, AuthenticationError)
    assert "kafka.example.com" in str(error) and "certificate verification failed" in str(error)
    assert took < 1.0


async def test_tls_hostname_check_can_be_turned_off(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        cfg = tls(tls_files, server_hostname="kafka.example.com", check_hostname=False)
        caps = await in_thread(term.host, term.port, cfg)
    assert caps.lists_api(3)


async def test_mutual_tls(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files, mutual=True) as term:
        cfg = tls(tls_files, cert_file=tls_files.client_cert, key_file=tls_files.client_key)
        caps = await in_thread(term.host, term.port, cfg)
        assert term.forwarded == 1
    assert caps.lists_api(3)


async def test_mutual_tls_without_a_client_certificate(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    """Under TLS 1.3 the client finishes its handshake first; the refusal shows on the first read."""
    async with terminate_tls_for((tansu.host, tansu.port), tls_files, mutual=True) as term:
        error, took = await probe_failure(term.host, term.port, tls(tls_files))
        assert term.forwarded == 0
    assert isinstance(error, AuthenticationError)
    assert "TLS failed while reading the answer to ApiVersions" in str(error) and took < 1.0
    assert error.transcript.connections == 1  # a TLS failure, not a close to downgrade on


async def test_plaintext_probe_to_the_tls_port(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    """The terminator drops a plaintext hello without a word, at v5, v3 and again at v0; the
    TLS ClientHello asked last is answered, so the peer is named a TLS listener."""
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        error, took = await probe_failure(term.host, term.port, QUICK)
        assert term.forwarded == 0
    assert isinstance(error, WrongProtocolError) and error.kind == "tls", repr(error)
    assert str(error).startswith("TLS listener: the peer answered with a TLS record")
    assert error.transcript.versions_tried == (5, 3, 0) and took < 2.0


async def test_tls_probe_to_the_plaintext_port(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    """Tansu reads the ClientHello as the size of a huge frame and waits: the connect timeout ends it."""
    cfg = tls(tls_files)
    error, took = await probe_failure(tansu.host, tansu.port, cfg)
    assert isinstance(error, KafkaTimeoutError) and "connecting" in str(error)
    assert cfg.connect_timeout <= took < cfg.connect_timeout + 1.5


# -- the emulator: every era, and a silent broker ----------------------------------------------


def emulated(release: str, **options: Any) -> ThreadedCluster:
    return ThreadedCluster(release, **options)


@pytest.mark.parametrize("release", ["0.10.0", "2.3", "2.8", "3.9", "4.0", "4.2"])
def test_emulated_releases(release: str) -> None:
    profile = profile_for(release)
    with emulated(release) as cluster:
        broker = cluster.broker(1)
        caps = probe_broker(broker.host, broker.port, QUICK, node_id=1)
    assert caps.api_ranges == profile.apis
    assert caps.supported_features == profile.supported_features
    assert release in caps.release_guess.releases
    assert caps.fallback_release is None and caps.transcript is not None
    assert caps.transcript.connections == 1


def test_pre_010_broker_with_a_fallback_release() -> None:
    config = ConnectionConfig(
        connect_timeout=2.0, request_timeout=2.0, handshake=HandshakeConfig(fallback_release="0.8.2")
    )
    with emulated("0.8.2") as cluster:
        broker = cluster.broker(1)
        caps = probe_broker(broker.host, broker.port, config)
        # v4, v3 and v0 each on a connection the broker closed, then a fresh one, ready for
        # requests, under the fallback's table.  The emulator counts a connection when its
        # loop gets to accept it, which may be after probe_broker returned: wait for that.
        deadline = time.monotonic() + 5.0
        while broker.connections_accepted < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert broker.connections_accepted == 4
    assert caps.fallback_release == "0.8.2" and caps.api_ranges == release_ranges("0.8.2")
    assert "0.8.2" in caps.release_guess.text
    assert caps.transcript is not None
    assert [a.outcome for a in caps.transcript.attempts] == [
        "closed-step-down", "closed", "closed-at-v0-fallback"
    ]


def test_pre_010_broker_without_a_fallback_release() -> None:
    with emulated("0.8.2") as cluster:
        broker = cluster.broker(1)
        caps = probe_broker(broker.host, broker.port, QUICK)
    # Closed on ApiVersions v4, v3, v0; Metadata v0 and Heartbeat answered: 0.8.2 (rule 10).
    assert caps.fallback_release == "0.8.2" and caps.api_ranges == release_ranges("0.8.2")
    assert caps.transcript is not None and caps.transcript.versions_tried == (5, 3, 0)
    assert caps.transcript.detected_release == "0.8.2" and caps.transcript.connections == 4


def test_silent_broker_times_out_before_a_short_deadline() -> None:
    config = ConnectionConfig(connect_timeout=1.0, request_timeout=0.5)
    with emulated("3.9", faults=[Fault.stall(18)]) as cluster:
        broker = cluster.broker(1)
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError) as caught:
            probe_broker(broker.host, broker.port, config)
        took = time.monotonic() - start
    assert 0.5 <= took < 1.5
    assert caught.value.node == broker.address and caught.value.transcript.versions_tried == (5,)


def test_closed_port_is_a_transport_error() -> None:
    port = free_port()
    start = time.monotonic()
    with pytest.raises(TransportError) as caught:
        probe_broker("127.0.0.1", port, QUICK)
    assert "connection refused while connecting" in str(caught.value)
    assert caught.value.node == f"127.0.0.1:{port}" and time.monotonic() - start < 1.0


# -- what a probe imports ----------------------------------------------------------------------

CHILD = """
import json, resource, sys
import kafkacompat
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import TlsConfig
tls = TlsConfig(ca_file=sys.argv[3]) if len(sys.argv) > 3 else None
config = ConnectionConfig(connect_timeout=3, request_timeout=3, tls=tls)
before = sorted(m for m in ("ssl", "_ssl") if m in sys.modules)
caps = kafkacompat.probe_broker(sys.argv[1], int(sys.argv[2]), config)
watched = ("trio", "tenacity", "asyncio", "ssl", "_ssl", "kafkacompat.transport.seam")
print(json.dumps({
    "apis": len(caps.api_ranges),
    "before": before,
    "loaded": sorted(m for m in watched if m in sys.modules),
    "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}))
"""


def child_probe(host: str, port: int, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, host, str(port), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_plaintext_probe_imports_no_trio_tenacity_asyncio_or_ssl(tansu: TansuBroker) -> None:
    result = child_probe(tansu.host, tansu.port)
    assert result["apis"] > 10
    assert result["loaded"] == []


async def test_a_tls_probe_imports_ssl_but_no_trio(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
        with trio.fail_after(60):
            result = await trio.to_thread.run_sync(child_probe, term.host, term.port, str(tls_files.ca_file))
    assert result["apis"] > 10
    assert result["before"] == []  # not even a TLS config loads ssl before it is used
    assert result["loaded"] == ["_ssl", "ssl"]
