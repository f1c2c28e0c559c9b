"""The cluster layer notices a misrouted connection and bootstraps again (KIP-1242), on every driver.

Brokers that moved are emulated by two brokers trading node ids
(``EmulatedCluster.swap_node_ids``): each keeps its address and release, so a
client that read Metadata before sends node 1's traffic to the broker that is
now node 2.  A 4.4 broker refuses the identity (REBOOTSTRAP_REQUIRED); an older
one cannot tell, so the cluster layer checks itself: wherever it reads Metadata
anyway, and, with ``misrouting_check="every-connection"``, on each new
connection that its broker did not confirm.  Either way it then resolves the
bootstrap addresses and reads Metadata again, and finds node 1 at its new
address, instead of retrying the old one.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

import kafkacompat
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import ClusterMismatchError, ConfigError
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.protocol.messages import MetadataRequest
from kafkacompat.testing.emulator import ThreadedCluster
from tests.support.cluster_drivers import Driver, Side, driver

__all__ = ["driver"]

CONFIG = ConnectionConfig(connect_timeout=5, request_timeout=5)
EVERY = ConnectionConfig(connect_timeout=5, request_timeout=5, misrouting_check="every-connection")
API_VERSIONS, METADATA = 18, 3


def addresses(cluster: Any) -> dict[int, tuple[str, int]]:
    return {node_id: (b.host, b.port) for node_id, b in cluster.brokers.items()}


def metadata_requests(emulated: Any) -> int:
    return sum(1 for r in emulated.requests if r.api_key == METADATA)


async def _open_both(cluster: Any) -> dict[int, tuple[str, int]]:
    for node_id in sorted(cluster.brokers):
        await cluster.connection(node_id)
    return addresses(cluster)


@pytest.mark.parametrize("release", ["4.3/kraft-broker", "3.9"])
async def test_a_metadata_refresh_through_a_misrouted_connection_bootstraps_again(
    emulated_cluster: Any, driver: Driver, release: str
) -> None:
    emulated = await emulated_cluster([release, release])
    first = emulated.brokers[0]

    async def body(side: Side) -> None:
        async with side.connect(first.address, CONFIG) as cluster:
            before = await _open_both(cluster)
            accepted = first.connections_accepted
            await side.in_trio(_swap(emulated))
            # Node 1's open connection now reaches the broker that is node 2: Metadata read on it
            # names node 2 at that address, and the cluster reads Metadata again from the bootstrap.
            metadata = await cluster.refresh_metadata()
            assert addresses(cluster) == {1: before[2], 2: before[1]}
            assert {n: (b.host, b.port) for n, b in metadata.brokers.items()} == addresses(cluster)
            assert first.connections_accepted == accepted + 1  # one bootstrap round, nothing retried
            conn = await cluster.connection(1)
            assert (conn.host, conn.port) == before[2]

    with trio.fail_after(30):
        await driver.run(body)


def _swap(emulated: Any) -> Any:
    async def swap() -> None:
        emulated.swap_node_ids(1, 2)

    return swap


async def _close_all(cluster: Any) -> None:
    for conn in list(cluster.connected().values()):
        await conn.aclose()


async def _node_1_after_a_swap(side: Side, emulated: Any, config: ConnectionConfig) -> Any:
    """Open both nodes, swap their ids, reconnect node 1: it must be found at node 2's old address."""
    async with side.connect(emulated.brokers[0].address, config) as cluster:
        before = await _open_both(cluster)
        await side.in_trio(_swap(emulated))
        await _close_all(cluster)
        conn = await cluster.connection(1)
        assert (conn.host, conn.port) == before[2]
        assert addresses(cluster) == {1: before[2], 2: before[1]}
        await cluster.request(1, MetadataRequest(topics=[]))
        return conn


async def test_every_connection_checks_a_broker_that_cannot_and_finds_the_node_again(
    emulated_cluster: Any, driver: Driver
) -> None:
    emulated = await emulated_cluster(["4.3/kraft-broker", "4.3/kraft-broker"])
    with trio.fail_after(30):
        await driver.run(lambda side: _node_1_after_a_swap(side, emulated, EVERY))
    misrouted = [r for r in emulated.brokers[0].requests if r.api_key == METADATA and r.node_id == 2]
    assert misrouted, "the connection meant for node 1 read Metadata from the broker now node 2"


async def test_the_default_check_costs_no_round_trip_on_a_new_connection(emulated_cluster: Any) -> None:
    emulated = await emulated_cluster(["4.3/kraft-broker", "4.3/kraft-broker"])
    with trio.fail_after(30):
        async with kafkacompat.connect(emulated.brokers[0].address, CONFIG) as cluster:
            await _open_both(cluster)
            before = metadata_requests(emulated)
            await _close_all(cluster)
            await _open_both(cluster)
            assert metadata_requests(emulated) == before  # ApiVersions only, as before KIP-1242
        async with kafkacompat.connect(emulated.brokers[0].address, EVERY) as cluster:
            await _open_both(cluster)
            before = metadata_requests(emulated)
            await _close_all(cluster)
            await _open_both(cluster)
            assert metadata_requests(emulated) == before + 2  # one Metadata per 4.3 connection


async def test_every_connection_costs_nothing_on_a_broker_that_confirms(emulated_cluster: Any) -> None:
    emulated = await emulated_cluster(["4.4/kraft-broker", "4.4/kraft-broker"])
    with trio.fail_after(30):
        async with kafkacompat.connect(emulated.brokers[0].address, EVERY) as cluster:
            await _open_both(cluster)
            before = metadata_requests(emulated)
            await _close_all(cluster)
            opened = [await cluster.connection(n) for n in sorted(cluster.brokers)]
            assert all(c.handshake.transcript.identity_sent is not None for c in opened)
            assert metadata_requests(emulated) == before  # the broker confirmed at v5


async def test_a_44_broker_refuses_the_old_identity_and_the_node_is_found_again(
    emulated_cluster: Any, driver: Driver
) -> None:
    emulated = await emulated_cluster(["4.4/kraft-broker", "4.4/kraft-broker"])
    with trio.fail_after(30):
        conn = await driver.run(lambda side: _node_1_after_a_swap(side, emulated, CONFIG))
    assert conn.handshake.transcript.identity_sent.node_id == 1
    refused = [r for r in emulated.brokers[0].requests if r.api_key == API_VERSIONS and "129" in r.outcome]
    assert refused, [r.outcome for r in emulated.brokers[0].requests if r.api_key == API_VERSIONS]


async def test_another_cluster_at_the_address_is_followed_unless_one_was_expected(
    emulated_cluster: Any,
) -> None:
    emulated = await emulated_cluster(["3.9", "3.9"])
    with trio.fail_after(30):
        async with kafkacompat.connect(emulated.bootstrap, CONFIG) as cluster:
            await _open_both(cluster)
            emulated.state.cluster_id = "recreated"  # the same addresses, another cluster now
            await cluster.refresh_metadata()
            # The bootstrap list is what the user named: without an expectation its cluster is taken.
            assert cluster.cluster_id == "recreated"
        emulated.state.cluster_id = "kafkacompat-emulated"
        expecting = ConnectionConfig(
            connect_timeout=5, request_timeout=5,
            handshake=HandshakeConfig(expected_cluster_id="kafkacompat-emulated"),
        )
        async with kafkacompat.connect(emulated.bootstrap, expecting) as cluster:
            await _open_both(cluster)
            emulated.state.cluster_id = "recreated"
            with pytest.raises(ClusterMismatchError) as caught:
                await cluster.refresh_metadata()
    error = caught.value
    assert (error.expected_cluster_id, error.found_cluster_id) == ("kafkacompat-emulated", "recreated")
    assert "\n" not in str(error)


async def test_the_check_can_be_turned_off(emulated_cluster: Any) -> None:
    emulated = await emulated_cluster(["4.3/kraft-broker", "4.3/kraft-broker"])
    off = ConnectionConfig(connect_timeout=5, request_timeout=5, misrouting_check="off")
    with trio.fail_after(30):
        async with kafkacompat.connect(emulated.brokers[0].address, off) as cluster:
            before = await _open_both(cluster)
            accepted = emulated.brokers[0].connections_accepted
            emulated.swap_node_ids(1, 2)
            await cluster.refresh_metadata()  # taken from the misrouted connection as it is
            assert emulated.brokers[0].connections_accepted == accepted
            assert addresses(cluster) == {1: before[2], 2: before[1]}


def test_the_blocking_cluster_bootstraps_again_too() -> None:
    with ThreadedCluster(["4.3/kraft-broker", "4.3/kraft-broker"]) as emulated:
        first = emulated.brokers[0]
        with kafkacompat.connect_sync(first.address, EVERY) as cluster:
            before = {n: (b.host, b.port) for n, b in cluster.brokers.items()}
            cluster.request(2, MetadataRequest(topics=[]))
            trio.from_thread.run_sync(emulated.swap_node_ids, 1, 2, trio_token=emulated._token)
            accepted = first.connections_accepted
            metadata = cluster.refresh_metadata()  # through node 1's connection, now node 2's broker
            assert first.connections_accepted == accepted + 1  # a bootstrap round
            assert {n: (b.host, b.port) for n, b in metadata.brokers.items()} == {1: before[2], 2: before[1]}
            cluster.request(1, MetadataRequest(topics=[]))


def test_an_unknown_check_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="misrouting_check must be one of"):
        ConnectionConfig(misrouting_check="sometimes")  # type: ignore[arg-type]
