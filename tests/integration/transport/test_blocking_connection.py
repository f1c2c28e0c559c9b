"""The blocking driver against real brokers, the emulator's eras, TLS, SASL and injected faults.

Plain functions, no event loop: the driver is for scripts and threads.  The trio
servers it talks to (TLS terminator, SASL listener, fault proxy) run in a thread
of their own (``in_trio_thread``).  Every connection has short timeouts, so a
hang is a failure.
"""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import trio

from kafkacompat.blocking.connection import BlockingConnection, open_blocking_connection
from kafkacompat.blocking.probe import probe_broker
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig as ClientSasl
from kafkacompat.connection.security import Secret, TlsConfig
from kafkacompat.errors import (
    AuthenticationError,
    BrokerTooOldError,
    KafkaCompatError,
    KafkaTimeoutError,
    ProtocolError,
    TransportError,
    VersionRemovedError,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.protocol import messages
from kafkacompat.testing.emulator import Fault, SaslConfig, ThreadedCluster
from kafkacompat.testing.tansu import TansuBroker
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.support.fault_proxy import Fault as ProxyFault
from tests.support.fault_proxy import fault_proxy
from tests.support.sasl_server import run_sasl_server
from tests.support.tls_terminator import TlsFiles, make_tls_files, terminate_tls_for
from tests.support.trio_thread import in_trio_thread

QUICK = ConnectionConfig(connect_timeout=5, request_timeout=5)
ROOT = Path(__file__).resolve().parents[3]


def ranges(caps: BrokerCapabilities) -> dict[int, tuple[int, int]]:
    return {k: (r.lowest, r.highest) for k, r in caps.api_ranges.items()}


def metadata(host: str, port: int, config: ConnectionConfig = QUICK) -> messages.MetadataResponse:
    with open_blocking_connection(host, port, config, timeout=30) as conn:
        response = conn.request(messages.MetadataRequest(topics=[]))
    assert isinstance(response, messages.MetadataResponse)
    return response


def failure(host: str, port: int, config: ConnectionConfig = QUICK) -> KafkaCompatError:
    with pytest.raises(KafkaCompatError) as caught:
        open_blocking_connection(host, port, config, timeout=30).close()
    error = caught.value
    assert error.node == f"{host}:{port}"
    assert isinstance(error.transcript, HandshakeTranscript)
    return error


@pytest.mark.broker
def test_tansu_negotiates_as_the_probe_does_and_answers_from_many_threads(tansu: TansuBroker) -> None:
    with open_blocking_connection(tansu.host, tansu.port, QUICK) as conn:
        assert conn.is_ready and conn.capabilities is not None
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: conn.request(messages.MetadataRequest(topics=[])), range(80)))
        caps = conn.capabilities
    assert not conn.is_ready
    assert ranges(caps) == ranges(probe_broker(tansu.host, tansu.port, QUICK))
    assert [b.port for a in answers for b in a.brokers] == [tansu.port] * 80  # type: ignore[attr-defined]


@pytest.mark.broker
def test_the_librdkafka_mock_negotiates_and_answers(librdkafka_mock: LibrdkafkaMockCluster) -> None:
    response = metadata(librdkafka_mock.host, librdkafka_mock.port)
    assert {b.port for b in response.brokers} >= {librdkafka_mock.port}


@pytest.mark.parametrize("release", ["0.10.0", "1.1", "2.3", "2.8", "3.9", "4.0", "4.2"])
def test_emulated_eras(release: str) -> None:
    with ThreadedCluster(release) as cluster:
        broker = cluster.brokers[0]
        with open_blocking_connection(broker.host, broker.port, QUICK) as conn:
            assert conn.capabilities is not None
            advertised = {k: (r.lowest, r.highest) for k, r in broker.profile.apis.items()}
            assert ranges(conn.capabilities) == advertised
            response = conn.request(messages.MetadataRequest(topics=[]))
        assert [b.node_id for b in response.brokers] == [broker.node_id]  # type: ignore[attr-defined]


@pytest.mark.parametrize("release", ["0.8.2", "0.9.0"])
def test_a_pre_0_10_broker_falls_back_then_answers_on_a_fresh_connection(release: str) -> None:
    with ThreadedCluster(release) as cluster:
        broker = cluster.brokers[0]
        with open_blocking_connection(broker.host, broker.port, QUICK) as conn:
            assert conn.capabilities is not None and conn.capabilities.fallback_release == release
            response = conn.request(messages.MetadataRequest(topics=[]))
        assert [b.node_id for b in response.brokers] == [broker.node_id]  # type: ignore[attr-defined]
        override = ConnectionConfig(
            connect_timeout=5, request_timeout=5, handshake=HandshakeConfig(fallback_release="0.8.0")
        )
        with open_blocking_connection(broker.host, broker.port, override) as conn:
            assert conn.capabilities is not None and conn.capabilities.fallback_release == "0.8.0"


def test_a_port_that_closes_everything_is_too_old_or_not_kafka() -> None:
    with ThreadedCluster("0.8.2", faults=[Fault.close()]) as cluster:
        broker = cluster.brokers[0]
        assert isinstance(failure(broker.host, broker.port), BrokerTooOldError)


def test_a_version_kafka_4_removed_is_named_when_the_broker_closes() -> None:
    with ThreadedCluster("4.0") as cluster:
        broker = cluster.brokers[0]
        with open_blocking_connection(broker.host, broker.port, QUICK) as conn:
            with pytest.raises(VersionRemovedError, match="Fetch v3"):
                conn.request(messages.FetchRequest(), version=3)
            assert not conn.is_ready
            with pytest.raises(TransportError):  # the connection stays failed
                conn.request(messages.MetadataRequest(topics=[]))


def test_acks0_produce_ends_once_written_and_the_connection_goes_on() -> None:
    with ThreadedCluster("3.9") as cluster:
        broker = cluster.brokers[0]
        with open_blocking_connection(broker.host, broker.port, QUICK) as conn:
            assert conn.request(messages.ProduceRequest(acks=0, timeout_ms=1000)) is None
            response = conn.request(messages.MetadataRequest(topics=[]))
        assert [b.node_id for b in response.brokers] == [broker.node_id]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("release", "mechanism"), [("0.10.0", "PLAIN"), ("3.9", "SCRAM-SHA-512")])
def test_sasl_against_the_emulator(release: str, mechanism: str) -> None:
    with ThreadedCluster(release, sasl=SaslConfig({"alice": "secret"})) as cluster:
        broker = cluster.brokers[0]
        good = ConnectionConfig(request_timeout=5, sasl=ClientSasl(mechanism, "alice", "secret"))  # type: ignore[arg-type]
        response = metadata(broker.host, broker.port, good)
        assert [b.node_id for b in response.brokers] == [broker.node_id]
        bad = ConnectionConfig(request_timeout=5, sasl=ClientSasl(mechanism, "alice", "hunter2"))  # type: ignore[arg-type]
        error = failure(broker.host, broker.port, bad)
        assert isinstance(error, AuthenticationError) and "hunter2" not in str(error)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_against_the_scramp_listener(mechanism: str) -> None:
    with in_trio_thread(lambda: run_sasl_server({"alice": "Wonderland"})) as running:
        server = running.value
        good = ConnectionConfig(request_timeout=5, sasl=ClientSasl(mechanism, "alice", Secret("Wonderland")))  # type: ignore[arg-type]
        assert [b.node_id for b in metadata(server.host, server.port, good).brokers] == [1]
        bad = ConnectionConfig(request_timeout=5, sasl=ClientSasl(mechanism, "alice", Secret("Glass")))  # type: ignore[arg-type]
        error = failure(server.host, server.port, bad)
    assert isinstance(error, AuthenticationError) and "SASL_AUTHENTICATION_FAILED" in str(error)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("blocking-tls"))


@pytest.mark.broker
def test_tls_to_tansu_and_an_unknown_ca(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    with in_trio_thread(lambda: terminate_tls_for((tansu.host, tansu.port), tls_files)) as running:
        term = running.value
        trusted = ConnectionConfig(request_timeout=5, tls=TlsConfig(ca_file=tls_files.ca_file))
        assert [b.port for b in metadata("localhost", term.port, trusted).brokers] == [tansu.port]
        stranger = ConnectionConfig(request_timeout=5, tls=TlsConfig(ca_file=tls_files.other_ca_file))
        error = failure("localhost", term.port, stranger)
    assert isinstance(error, AuthenticationError) and "certificate verification failed" in str(error)


def test_refused_and_silent_brokers_are_typed_and_bounded() -> None:
    error = failure("127.0.0.1", 1)
    assert isinstance(error, TransportError) and "refused" in str(error)
    with ThreadedCluster("3.9", faults=[Fault.stall(18)]) as cluster:
        broker = cluster.brokers[0]
        started = time.monotonic()
        error = failure(broker.host, broker.port, ConnectionConfig(connect_timeout=2, request_timeout=0.5))
        assert isinstance(error, KafkaTimeoutError) and time.monotonic() - started < 3


@pytest.mark.broker
def test_an_answer_out_of_turn_fails_the_request_and_the_connection(tansu: TansuBroker) -> None:
    proxy_faults = [ProxyFault.rewrite_correlation_id(3, lambda cid: cid + 1000)]
    with in_trio_thread(lambda: fault_proxy((tansu.host, tansu.port), to_client=proxy_faults)) as running:
        proxy = running.value
        with open_blocking_connection(proxy.host, proxy.port, QUICK) as conn:
            conn.request(messages.MetadataRequest(topics=[]))  # the proxy's frame 1: untouched
            with pytest.raises(ProtocolError, match="correlation id"):
                conn.request(messages.MetadataRequest(topics=[]))
            assert not conn.is_ready


def test_a_timed_out_request_is_given_up_and_its_late_answer_dropped() -> None:
    with ThreadedCluster("3.9", faults=[Fault.delay(1.0, 3, times=1)]) as cluster:
        broker = cluster.brokers[0]
        with open_blocking_connection(broker.host, broker.port, QUICK) as conn:
            with pytest.raises(KafkaTimeoutError, match="no response to MetadataRequest v12"):
                conn.request(messages.MetadataRequest(topics=[]), request_timeout=0.3)
            with pytest.raises(KafkaTimeoutError, match="before sending"):
                conn.request(messages.MetadataRequest(topics=[]), request_timeout=1e-9)
            # The late answer comes first on the stream and is dropped; the next request gets its own.
            for _ in range(3):
                response = conn.request(messages.MetadataRequest(topics=[]))
                assert [b.node_id for b in response.brokers] == [broker.node_id]  # type: ignore[attr-defined]
            assert conn.is_ready


def test_a_connection_opens_again_after_close() -> None:
    with ThreadedCluster("3.9") as cluster:
        broker = cluster.brokers[0]
        conn = BlockingConnection(broker.host, broker.port, QUICK)
        first = conn.open()
        conn.close()
        with pytest.raises(TransportError, match="closed"):
            conn.request(messages.MetadataRequest(topics=[]))
        assert conn.open(timeout=10) == first
        assert isinstance(conn.request(messages.MetadataRequest(topics=[])), messages.MetadataResponse)
        conn.close()


@pytest.mark.broker
def test_the_blocking_path_imports_no_trio_tenacity_or_asyncio(tansu: TansuBroker) -> None:
    code = (
        "import sys\n"
        "from kafkacompat.blocking.connection import open_blocking_connection\n"
        "from kafkacompat.protocol.messages import MetadataRequest\n"
        f"with open_blocking_connection('{tansu.host}', {tansu.port}) as conn:\n"
        "    conn.request(MetadataRequest(topics=[]))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('trio', 'tenacity', 'asyncio', 'ssl')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_reconnect_records_what_the_broker_changed_as_every_driver_does() -> None:
    with ThreadedCluster("3.9") as cluster:
        broker = cluster.brokers[0]
        with open_blocking_connection(broker.host, broker.port, QUICK) as conn:
            first = conn.capabilities
            assert first is not None
            conn.reconnect()  # the same broker: nothing changed
            assert conn.changes == []
            trio.from_thread.run_sync(cluster.upgrade, broker.node_id, "2.8", trio_token=cluster._token)
            second = conn.reconnect()
            (change,) = conn.changes
            assert change.node == conn.node and conn.capabilities is second
            assert change.changed
            for key, ranges in change.changed.items():
                assert ranges == (first.broker_range(key), second.broker_range(key))
