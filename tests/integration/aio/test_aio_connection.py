"""The asyncio driver against real brokers, the emulator's eras, TLS, SASL and injected faults.

These tests are plain functions that run their own asyncio loop: the suite's
async tests belong to trio (pytest-trio), and this driver must work without it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from kafkacompat.aio import BrokerConnection, open_connection
from kafkacompat.blocking.probe import probe_broker
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig as ClientSasl
from kafkacompat.connection.security import TlsConfig
from kafkacompat.errors import (
    AuthenticationError,
    BrokerTooOldError,
    KafkaCompatError,
    KafkaTimeoutError,
    ProtocolError,
    TransportError,
)
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.protocol import messages
from kafkacompat.testing.emulator import Fault, SaslConfig, ThreadedCluster
from kafkacompat.testing.tansu import TansuBroker
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.support.fault_proxy import Fault as ProxyFault
from tests.support.fault_proxy import fault_proxy
from tests.support.tls_terminator import TlsFiles, make_tls_files, terminate_tls_for
from tests.support.trio_thread import in_trio_thread

T = TypeVar("T")
QUICK = ConnectionConfig(connect_timeout=5, request_timeout=5)
ROOT = Path(__file__).resolve().parents[3]


def run(factory: Callable[[], Awaitable[T]], limit: float = 30) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(limit):
            return await factory()

    return asyncio.run(bounded())


def ranges(caps: object) -> dict[int, tuple[int, int]]:
    return {k: (r.lowest, r.highest) for k, r in caps.api_ranges.items()}  # type: ignore[attr-defined]


async def metadata(host: str, port: int, config: ConnectionConfig = QUICK) -> messages.MetadataResponse:
    async with open_connection(host, port, config) as conn:
        response = await conn.request(messages.MetadataRequest(topics=[]))
    assert isinstance(response, messages.MetadataResponse)
    return response


async def failure(host: str, port: int, config: ConnectionConfig = QUICK) -> KafkaCompatError:
    try:
        async with open_connection(host, port, config):
            pass
    except KafkaCompatError as exc:
        return exc
    raise AssertionError("the connection opened")


@pytest.mark.broker
def test_tansu_negotiates_as_the_probe_does_and_answers(tansu: TansuBroker) -> None:
    async def body() -> tuple[object, list[int], int]:
        async with open_connection(tansu.host, tansu.port, QUICK) as conn:
            assert conn.is_ready and conn.capabilities is not None
            answers = await asyncio.gather(
                *(conn.request(messages.MetadataRequest(topics=[])) for _ in range(100))
            )
            ports = [b.port for a in answers for b in a.brokers]  # type: ignore[attr-defined]
            return conn.capabilities, ports, conn.in_flight

    caps, ports, in_flight = run(body)
    assert ranges(caps) == ranges(probe_broker(tansu.host, tansu.port, QUICK))
    assert ports == [tansu.port] * 100 and in_flight == 0


@pytest.mark.broker
def test_the_librdkafka_mock_negotiates_and_answers(librdkafka_mock: LibrdkafkaMockCluster) -> None:
    response = run(lambda: metadata(librdkafka_mock.host, librdkafka_mock.port))
    assert {b.port for b in response.brokers} >= {librdkafka_mock.port}


@pytest.mark.parametrize("release", ["0.10.0", "1.1", "2.3", "2.8", "3.9", "4.0", "4.2"])
def test_emulated_eras(release: str) -> None:
    with ThreadedCluster(release) as cluster:
        broker = cluster.brokers[0]
        caps = run(lambda: _capabilities(broker.host, broker.port, QUICK))
        assert ranges(caps) == {k: (r.lowest, r.highest) for k, r in broker.profile.apis.items()}
        if 3 in broker.profile.apis:
            response = run(lambda: metadata(broker.host, broker.port))
            assert [b.node_id for b in response.brokers] == [broker.node_id]


@pytest.mark.parametrize("release", ["0.8.2", "0.9.0"])
def test_a_pre_0_10_broker_is_named_and_a_fallback_overrides(release: str) -> None:
    with ThreadedCluster(release) as cluster:
        broker = cluster.brokers[0]
        caps = run(lambda: _capabilities(broker.host, broker.port, QUICK))
        assert caps.fallback_release == release  # type: ignore[attr-defined]
        assert ranges(caps) == {k: (r.lowest, r.highest) for k, r in broker.profile.apis.items()}
        response = run(lambda: metadata(broker.host, broker.port))
        assert [b.node_id for b in response.brokers] == [broker.node_id]
        override = ConnectionConfig(
            connect_timeout=5, request_timeout=5, handshake=HandshakeConfig(fallback_release="0.8.0")
        )
        caps = run(lambda: _capabilities(broker.host, broker.port, override))
        assert caps.fallback_release == "0.8.0"  # type: ignore[attr-defined]


def test_a_port_that_closes_everything_is_too_old_or_not_kafka() -> None:
    with ThreadedCluster("0.8.2", faults=[Fault.close()]) as cluster:
        broker = cluster.brokers[0]
        error = run(lambda: failure(broker.host, broker.port))
        assert isinstance(error, BrokerTooOldError) and error.transcript is not None


async def _capabilities(host: str, port: int, config: ConnectionConfig) -> object:
    async with open_connection(host, port, config) as conn:
        return conn.capabilities


@pytest.mark.parametrize(("release", "mechanism"), [("0.10.0", "PLAIN"), ("3.9", "SCRAM-SHA-512")])
def test_sasl_against_the_emulator(release: str, mechanism: str) -> None:
    with ThreadedCluster(release, sasl=SaslConfig({"alice": "secret"})) as cluster:
        broker = cluster.brokers[0]
        good = ConnectionConfig(request_timeout=5, sasl=ClientSasl(mechanism, "alice", "secret"))  # type: ignore[arg-type]
        response = run(lambda: metadata(broker.host, broker.port, good))
        assert [b.node_id for b in response.brokers] == [broker.node_id]
        bad = ConnectionConfig(request_timeout=5, sasl=ClientSasl(mechanism, "alice", "hunter2"))  # type: ignore[arg-type]
        error = run(lambda: failure(broker.host, broker.port, bad))
        assert isinstance(error, AuthenticationError) and "hunter2" not in str(error)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("aio-tls"))


@pytest.mark.broker
def test_tls_to_tansu_and_an_unknown_ca(tansu: TansuBroker, tls_files: TlsFiles) -> None:
    with in_trio_thread(lambda: terminate_tls_for((tansu.host, tansu.port), tls_files)) as running:
        term = running.value
        trusted = ConnectionConfig(request_timeout=5, tls=TlsConfig(ca_file=tls_files.ca_file))
        response = run(lambda: metadata("localhost", term.port, trusted))
        assert [b.port for b in response.brokers] == [tansu.port]
        stranger = ConnectionConfig(request_timeout=5, tls=TlsConfig(ca_file=tls_files.other_ca_file))
        error = run(lambda: failure("localhost", term.port, stranger))
    assert isinstance(error, AuthenticationError) and "certificate verification failed" in str(error)


def test_refused_and_silent_brokers_are_typed() -> None:
    error = run(lambda: failure("127.0.0.1", 1))
    assert isinstance(error, TransportError) and "refused" in str(error)
    with ThreadedCluster("3.9", faults=[Fault.stall(18)]) as cluster:
        broker = cluster.brokers[0]
        quick = ConnectionConfig(connect_timeout=2, request_timeout=0.5)
        started = time.monotonic()
        error = run(lambda: failure(broker.host, broker.port, quick))
        assert isinstance(error, KafkaTimeoutError) and time.monotonic() - started < 3


@pytest.mark.broker
def test_an_answer_out_of_turn_fails_every_caller(tansu: TansuBroker) -> None:
    proxy_faults = [ProxyFault.rewrite_correlation_id(2, lambda cid: cid + 1000)]
    with in_trio_thread(lambda: fault_proxy((tansu.host, tansu.port), to_client=proxy_faults)) as running:
        proxy = running.value

        async def body() -> list[BaseException | object]:
            async with open_connection(proxy.host, proxy.port, QUICK) as conn:
                calls = [conn.request(messages.MetadataRequest(topics=[])) for _ in range(3)]
                return await asyncio.gather(*calls, return_exceptions=True)

        outcomes = run(body)
    assert all(isinstance(o, ProtocolError) for o in outcomes), outcomes


@pytest.mark.broker
def test_timeouts_and_cancellation_give_requests_back(tansu: TansuBroker) -> None:
    async def body() -> tuple[bool, int]:
        async with open_connection(tansu.host, tansu.port, QUICK) as conn:
            slow = asyncio.create_task(conn.request(messages.MetadataRequest(topics=[])))
            await asyncio.sleep(0)
            slow.cancel()
            with pytest.raises(asyncio.CancelledError):
                await slow
            with pytest.raises(KafkaTimeoutError):
                await conn.request(messages.MetadataRequest(topics=[]), request_timeout=1e-6)
            # The connection goes on: the late answers are dropped, new requests answered.
            await conn.request(messages.MetadataRequest(topics=[]))
            return conn.is_ready, conn.in_flight

    assert run(body) == (True, 0)


@pytest.mark.broker
def test_the_asyncio_path_imports_no_trio(tansu: TansuBroker) -> None:
    code = (
        "import asyncio, sys\n"
        "from kafkacompat.aio import open_connection\n"
        "from kafkacompat.protocol.messages import MetadataRequest\n"
        "async def main():\n"
        f"    async with open_connection('{tansu.host}', {tansu.port}) as conn:\n"
        "        await conn.request(MetadataRequest(topics=[]))\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('trio', 'tenacity')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_connection_is_reusable_after_reconnect() -> None:
    with ThreadedCluster("3.9") as cluster:
        broker = cluster.brokers[0]

        async def body() -> tuple[int, int]:
            conn = BrokerConnection(broker.host, broker.port, QUICK)
            await conn.open()
            await conn.reconnect()
            response = await conn.request(messages.MetadataRequest(topics=[]))
            await conn.aclose()
            return len(response.brokers), len(conn.changes)  # type: ignore[attr-defined]

        assert run(body) == (1, 0)


def test_requests_past_the_in_flight_bound_wait_in_the_connection_within_their_deadline() -> None:
    """Two slots, both held by answers the broker delays: a third request times out still
    waiting for a slot (and says so), a fourth goes out when a slot frees; never three out."""
    config = ConnectionConfig(connect_timeout=5, request_timeout=10, max_in_flight=2)
    with ThreadedCluster("3.9", faults=[Fault.delay(0.5, 3, times=2)]) as cluster:
        broker = cluster.brokers[0]

        async def body() -> tuple[list[object], int]:
            async with open_connection(broker.host, broker.port, config) as conn:
                peak = 0

                async def ask(limit: float) -> object:
                    try:
                        return await conn.request(messages.MetadataRequest(topics=[]), request_timeout=limit)
                    except KafkaTimeoutError as exc:
                        return exc

                async def watch() -> None:
                    nonlocal peak
                    while True:
                        peak = max(peak, conn.in_flight)
                        await asyncio.sleep(0.01)

                watcher = asyncio.create_task(watch())
                held = [asyncio.create_task(ask(10)) for _ in range(2)]
                await asyncio.sleep(0.05)  # both written: the broker sits on them
                outcomes = await asyncio.gather(*held, ask(0.2), ask(10))
                watcher.cancel()
                return list(outcomes), peak

        outcomes, peak = run(body)
    assert all(isinstance(o, messages.MetadataResponse) for o in (outcomes[0], outcomes[1], outcomes[3]))
    assert isinstance(outcomes[2], KafkaTimeoutError) and "in-flight slots" in str(outcomes[2])
    assert peak == 2


def test_a_slot_freed_alone_goes_to_a_waiting_request_after_the_refill_delay() -> None:
    """Eight slots: one answered at once, seven held by answers the broker delays (it answers
    in order, 0.5 s each).  The ninth request waits for a slot; the one freed (under a quarter
    of eight) is put off for company, then a loop timer hands it over, long before the next
    answer would have freed more."""
    config = ConnectionConfig(connect_timeout=5, request_timeout=30, max_in_flight=8)
    find_coordinator = messages.FindCoordinatorRequest(key_type=0, coordinator_keys=["g"])
    with ThreadedCluster("3.9", faults=[Fault.delay(0.5, 3, times=7)]) as cluster:
        broker = cluster.brokers[0]

        async def body() -> tuple[float, float]:
            loop = asyncio.get_running_loop()
            async with open_connection(broker.host, broker.port, config) as conn:
                started = loop.time()
                fast = asyncio.create_task(conn.request(find_coordinator))
                metadata = [conn.request(messages.MetadataRequest(topics=[])) for _ in range(8)]
                slow = [asyncio.create_task(call) for call in metadata]  # the last is the ninth
                await fast
                answered = loop.time()
                for _ in range(1000):  # a second at most: then the assertion below says so
                    if conn.in_flight == 8:  # the ninth took the freed slot
                        break
                    await asyncio.sleep(0.001)
                took_slot = loop.time()
                await asyncio.gather(*slow)
                return took_slot - answered, loop.time() - started

        handed_over, all_answered = run(body)
    assert handed_over < 0.25 and all_answered > 3.5  # not held until the first slow answer (0.5 s)
