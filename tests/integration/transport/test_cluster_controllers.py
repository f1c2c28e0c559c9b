"""``connect`` against KRaft controllers: found by themselves, or asked for (``controllers=True``).

Emulated controllers of every release from 3.0: 3.7 and later describe their
quorum through DescribeCluster, older ones are the node alone.  The typed
errors are the same as for brokers: unreachable, wrong endpoint, no usable
version.  Each async test runs on both cluster drivers (trio and asyncio).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import trio

import kafkacompat
from kafkacompat.cluster.controller_discovery import UNKNOWN_NODE_ID
from kafkacompat.connection.config import ConnectionConfig, RetryPolicy
from kafkacompat.errors import (
    KafkaCompatError,
    NegotiationError,
    NoBrokerReachableError,
    UnsupportedVersionError,
    WrongEndpointError,
)
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.error_codes import CLUSTER_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import DescribeClusterResponse
from kafkacompat.testing.emulator import EmulatedCluster, ThreadedCluster
from kafkacompat.testing.emulator.handlers import Request
from tests.support.cluster_drivers import Driver, Side

pytestmark = pytest.mark.broker

MV = "metadata.version"
FAST = ConnectionConfig(connect_timeout=3, request_timeout=3, retry=RetryPolicy(attempts=1))


async def _connect_error(
    side: Side, bootstrap: str, config: ConnectionConfig, **options: Any
) -> BaseException:
    try:
        async with side.connect(bootstrap, config, **options):
            pass
    except KafkaCompatError as exc:
        return exc
    raise AssertionError("connected")


@pytest.mark.parametrize("controllers", [False, True], ids=["found", "asked-for"])
async def test_a_quorum_is_described(controllers: bool, driver: Driver) -> None:
    async def body(side: Side) -> None:
        async with side.connect(address, FAST, controllers=controllers) as cluster:
            metadata = cluster.metadata
            assert (metadata.node_kind, metadata.source) == ("controller", "DescribeCluster")
            assert {n: b.address for n, b in cluster.brokers.items()} == {
                n: emulated.broker(n).address for n in (1, 2, 3)
            }
            assert cluster.controller_id == 1 and cluster.cluster_id == "kafkacompat-emulated"
            capabilities = await cluster.capabilities()
            assert sorted(capabilities) == [1, 2, 3]
            assert all(c.release_guess.kind == "kraft-controller" for c in capabilities.values())
            features = await cluster.describe_features()
            assert "metadata.version" in features.finalized.features and features.finalized.epoch >= 0
            again = await cluster.refresh_metadata()
            assert again.node_kind == "controller" and sorted(again.brokers) == [1, 2, 3]

    async with EmulatedCluster(["4.1"] * 3, kind="kraft-controller") as emulated:
        address = emulated.broker(2).address
        with trio.fail_after(30):
            await driver.run(body)


async def test_a_controller_without_describe_cluster_is_the_node_alone(driver: Driver) -> None:
    async def body(side: Side) -> None:
        async with side.connect(address, FAST) as cluster:
            assert cluster.metadata.node_kind == "controller"
            assert list(cluster.brokers) == [UNKNOWN_NODE_ID]
            assert cluster.brokers[UNKNOWN_NODE_ID].address == address
            assert cluster.cluster_id is None and cluster.controller_id is None
            conn = await cluster.connection(UNKNOWN_NODE_ID)
            assert conn.capabilities is not None and conn.capabilities.release_guess.releases == ("3.6",)

    async with EmulatedCluster(["3.6"] * 2, kind="kraft-controller") as emulated:
        address = emulated.broker(1).address
        with trio.fail_after(30):
            await driver.run(body)
        assert [r.api_key for r in emulated.broker(1).requests] == [18, 18]  # v4 refused, then v3


async def test_a_broker_asked_for_as_a_controller_is_a_wrong_endpoint(driver: Driver) -> None:
    async with EmulatedCluster("4.2") as emulated:
        with trio.fail_after(30):
            error = await driver.run(
                lambda side: _connect_error(side, emulated.bootstrap, FAST, controllers=True)
            )
    assert isinstance(error, WrongEndpointError) and "is a broker, not a KRaft" in str(error)
    assert error.transcript is not None
    assert isinstance(error, NegotiationError)


async def test_a_controller_refusing_describe_cluster_is_a_typed_error(driver: Driver) -> None:
    """A DescribeCluster error from a controller comes back as the negotiation error it is."""
    policy = VersionPolicy(pins={"DescribeCluster": 0})  # v0 asks for brokers: never sent
    config = dataclasses.replace(FAST, policy=policy)
    async with EmulatedCluster(["3.9"], kind="kraft-controller") as emulated:
        with trio.fail_after(30):
            error = await driver.run(lambda side: _connect_error(side, emulated.bootstrap, config))
        assert isinstance(error, NegotiationError) and "EndpointType arrived in v1" in str(error)
        assert all(r.api_key != 60 for r in emulated.broker(1).requests)


async def test_no_usable_describe_cluster_version_is_unsupported(driver: Driver) -> None:
    config = dataclasses.replace(FAST, policy=VersionPolicy(blocked={"DescribeCluster": ["0", "1", "2"]}))
    async with EmulatedCluster(["4.0"], kind="kraft-controller") as emulated:
        with trio.fail_after(30):
            error = await driver.run(lambda side: _connect_error(side, emulated.bootstrap, config))
    assert isinstance(error, UnsupportedVersionError) and "DescribeCluster" in str(error)
    assert error.transcript is not None


async def test_unreachable_controllers_are_named(driver: Driver) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with trio.fail_after(30):
        address = f"127.0.0.1:{port}"
        error = await driver.run(lambda side: _connect_error(side, address, FAST, controllers=True))
    assert isinstance(error, NoBrokerReachableError) and f"127.0.0.1:{port}" in str(error)


def test_the_sync_facade_takes_controllers_too() -> None:
    with ThreadedCluster(["3.8"] * 2, kind="kraft-controller") as emulated:
        address = emulated.bootstrap.split(",")[0]
        with kafkacompat.connect_sync(address, FAST, controllers=True) as cluster:
            assert cluster.metadata.node_kind == "controller" and sorted(cluster.brokers) == [1, 2]


async def test_a_controller_below_metadata_version_3_7_is_inspected_alone(driver: Driver) -> None:
    """Kafka's controllers refuse DescribeCluster (UNSUPPORTED_VERSION) before 3.7-IV0 (level 15)."""

    async def body(side: Side) -> None:
        async with side.connect(emulated.broker(2).address, FAST, controllers=True) as cluster:
            assert list(cluster.brokers) == [UNKNOWN_NODE_ID] and cluster.cluster_id is None
            note = cluster.metadata.note
            assert note.startswith("DescribeCluster v1 answered UNSUPPORTED_VERSION: ")
            assert note.endswith("the controller is inspected alone")
            assert note in cluster.metadata.describe()

    async with EmulatedCluster(["3.9"] * 2, kind="kraft-controller", finalized_features={MV: 14}) as emulated:
        with trio.fail_after(30):
            await driver.run(body)
        # ApiVersions twice: v5 refused (UNSUPPORTED_VERSION naming 0-4), then v4; then DescribeCluster
        assert [r.api_key for r in emulated.broker(2).requests] == [18, 18, 60]


async def test_a_principal_without_alter_on_the_cluster_still_inspects_the_controller(driver: Driver) -> None:
    def refuse(request: Request) -> KafkaMessage:
        return DescribeClusterResponse(error_code=CLUSTER_AUTHORIZATION_FAILED, error_message="no ALTER")

    async def body(side: Side) -> None:
        async with side.connect(emulated.bootstrap, FAST) as cluster:
            assert list(cluster.brokers) == [UNKNOWN_NODE_ID]
            assert "CLUSTER_AUTHORIZATION_FAILED: no ALTER" in cluster.metadata.note

    async with EmulatedCluster(["4.0"], kind="kraft-controller", handlers={60: refuse}) as emulated:
        with trio.fail_after(30):
            await driver.run(body)


async def test_another_describe_cluster_error_is_a_negotiation_error(driver: Driver) -> None:
    def broken(request: Request) -> KafkaMessage:
        return DescribeClusterResponse(error_code=UNKNOWN_SERVER_ERROR, error_message="boom")

    async with EmulatedCluster(["4.0"], kind="kraft-controller", handlers={60: broken}) as emulated:
        with trio.fail_after(30):
            error = await driver.run(lambda side: _connect_error(side, emulated.bootstrap, FAST))
    assert isinstance(error, NegotiationError) and "UNKNOWN_SERVER_ERROR: boom" in str(error)
