"""The cluster layer on both drivers against the emulator's eras, TLS, SASL and injected faults.

Complements ``test_cluster.py`` (Tansu, the librdkafka mock, the fake cluster,
rolling upgrades, features) and ``test_cluster_controllers.py`` (KRaft
controllers): every test here runs once on trio and once on asyncio (the
``driver`` fixture), with one body.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kafkacompat.cluster.coordinator_lookup import CoordinatorLookup
from kafkacompat.connection.config import ConnectionConfig, RetryPolicy
from kafkacompat.connection.security import SaslConfig as ClientSasl
from kafkacompat.connection.security import TlsConfig
from kafkacompat.errors import (
    AuthenticationError,
    KafkaCompatError,
    KafkaTimeoutError,
    NoBrokerReachableError,
)
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.testing import EmulatedCluster
from kafkacompat.testing.emulator import SaslConfig
from kafkacompat.testing.tansu import TansuBroker
from tests.support.cluster_drivers import Driver, Side
from tests.support.fault_proxy import Fault, fault_proxy
from tests.support.tls_terminator import TlsFiles, make_tls_files, terminate_tls_for

CONFIG = ConnectionConfig(
    connect_timeout=5.0,
    request_timeout=5.0,
    retry=RetryPolicy(attempts=3, initial_backoff=0.01, max_backoff=0.05, jitter=0.01),
)
METADATA, FIND_COORDINATOR = 3, 10
GROUPS = [f"group-{n}" for n in range(50)]
PRE_0_10 = ("0.8.2", "0.9.0")  # no ApiVersions: the release is a fallback


async def _connect_error(side: Side, bootstrap: str, config: ConnectionConfig) -> KafkaCompatError:
    try:
        async with side.connect(bootstrap, config):
            pass
    except KafkaCompatError as exc:
        return exc
    raise AssertionError("connected")


# -- the emulator's eras --------------------------------------------------------------------


@pytest.mark.parametrize("release", ["0.8.2", "0.9.0", "0.10.0", "1.1", "2.3", "2.8", "3.9", "4.2"])
async def test_every_era_is_discovered_and_answers(release: str, driver: Driver) -> None:
    async def body(side: Side) -> tuple[dict[int, Any], CoordinatorLookup | None, int]:
        async with side.connect(emu.bootstrap, CONFIG) as cluster:
            assert sorted(cluster.brokers) == [1, 2]
            assert {b.address for b in cluster.brokers.values()} == {emu.broker(n).address for n in (1, 2)}
            capabilities = await cluster.capabilities()
            lookup = None
            if all(caps.lists_api(FIND_COORDINATOR) for caps in capabilities.values()):
                lookup = await cluster.find_coordinators(GROUPS)
            return capabilities, lookup, cluster.metadata.metadata_version

    with trio.fail_after(60):
        async with EmulatedCluster(release, brokers=2) as emu:
            capabilities, lookup, metadata_version = await driver.run(body)
            expected = {k: (r.lowest, r.highest) for k, r in emu.broker(1).profile.apis.items()}
            expected_coordinators = {key: emu.state.coordinator_for(key) for key in GROUPS}
    assert metadata_version == expected[METADATA][1]  # the newest each era has, the codec has them all
    for caps in capabilities.values():
        assert {k: (r.lowest, r.highest) for k, r in caps.api_ranges.items()} == expected
        assert caps.fallback_release == (release if release in PRE_0_10 else None)
    if FIND_COORDINATOR in expected:
        assert lookup is not None and lookup.ok
        assert {k: f.node_id for k, f in lookup.found.items()} == {
            k: node.node_id for k, node in expected_coordinators.items() if node is not None
        }
    else:  # 0.8.2 had no group coordinators at all
        assert lookup is None


async def test_a_pre_0_10_fallback_is_taken_from_the_config(driver: Driver) -> None:
    config = ConnectionConfig(connect_timeout=5, request_timeout=5,
                              handshake=HandshakeConfig(fallback_release="0.8.0"))

    async def body(side: Side) -> set[str | None]:
        async with side.connect(emu.bootstrap, config) as cluster:
            return {caps.fallback_release for caps in (await cluster.capabilities()).values()}

    with trio.fail_after(30):
        async with EmulatedCluster("0.9.0", brokers=2) as emu:
            assert await driver.run(body) == {"0.8.0"}


# -- SASL and TLS ---------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "mechanism"), [("0.10.0", "PLAIN"), ("3.9", "SCRAM-SHA-512")])
async def test_sasl_on_every_connection(release: str, mechanism: str, driver: Driver) -> None:
    good = ConnectionConfig(request_timeout=5, sasl=ClientSasl(mechanism, "alice", "secret"))  # type: ignore[arg-type]
    bad = ConnectionConfig(request_timeout=5, retry=RetryPolicy(attempts=1),
                           sasl=ClientSasl(mechanism, "alice", "hunter2"))  # type: ignore[arg-type]

    async def body(side: Side) -> tuple[int, KafkaCompatError]:
        async with side.connect(emu.bootstrap, good) as cluster:
            answered = len(await cluster.capabilities())
        return answered, await _connect_error(side, emu.bootstrap, bad)

    with trio.fail_after(30):
        async with EmulatedCluster(release, brokers=2, sasl=SaslConfig({"alice": "secret"})) as emu:
            answered, error = await driver.run(body)
    assert answered == 2
    assert isinstance(error, AuthenticationError) and "hunter2" not in str(error)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("cluster-tls"))


@pytest.mark.broker
async def test_tls_bootstrap_to_tansu_and_an_unknown_ca(
    tansu: TansuBroker, tls_files: TlsFiles, driver: Driver
) -> None:
    trusted = ConnectionConfig(request_timeout=5, tls=TlsConfig(ca_file=tls_files.ca_file))
    stranger = ConnectionConfig(request_timeout=5, tls=TlsConfig(ca_file=tls_files.other_ca_file))

    async def body(side: Side) -> tuple[str | None, KafkaCompatError]:
        async with side.connect(f"localhost:{term.port}", trusted) as cluster:
            cluster_id = cluster.metadata.cluster_id
            assert [b.port for b in cluster.brokers.values()] == [tansu.port]
        return cluster_id, await _connect_error(side, f"localhost:{term.port}", stranger)

    with trio.fail_after(30):
        async with terminate_tls_for((tansu.host, tansu.port), tls_files) as term:
            cluster_id, error = await driver.run(body)
    assert cluster_id == "kafkacompat-tests"
    assert isinstance(error, AuthenticationError) and "certificate verification failed" in str(error)


# -- injected faults ------------------------------------------------------------------------


BREAKS = [Fault.reset_after(0, connections=[1]), Fault.close_after(0, connections=[1])]


@pytest.mark.parametrize("fault", BREAKS, ids=["reset", "close"])
async def test_a_bootstrap_connection_that_breaks_is_retried(fault: Fault, driver: Driver) -> None:
    async def body(side: Side) -> list[int]:
        async with side.connect(f"{proxy.host}:{proxy.port}", CONFIG) as cluster:
            return sorted(cluster.brokers)

    with trio.fail_after(30):
        async with EmulatedCluster("3.9", brokers=2) as emu:
            first = (emu.broker(1).host, emu.broker(1).port)
            async with fault_proxy(first, to_client=[fault]) as proxy:
                assert await driver.run(body) == [1, 2]
                assert len(proxy.connections) == 2  # the broken one, then the retry


async def test_a_broker_that_never_answers_times_out_on_every_round(driver: Driver) -> None:
    quick = ConnectionConfig(connect_timeout=2, request_timeout=0.3,
                             retry=RetryPolicy(attempts=2, initial_backoff=0.01, max_backoff=0.01, jitter=0))
    with trio.fail_after(30):
        async with EmulatedCluster("3.9") as emu:
            first = (emu.broker(1).host, emu.broker(1).port)
            async with fault_proxy(first, to_client=[Fault.stall_after(0)]) as proxy:
                address = f"{proxy.host}:{proxy.port}"
                error = await driver.run(lambda side: _connect_error(side, address, quick))
                assert len(proxy.connections) == 2
    assert isinstance(error, NoBrokerReachableError) and error.rounds == 2
    assert isinstance(error.reasons[address], KafkaTimeoutError)
