"""The cluster layer and ApiVersions v5 (KIP-1242), against emulated 4.3 and 4.4 brokers.

The emulated 4.4 nodes check identities as a real 4.4.0 did (test_emulator_identity).
"""

from __future__ import annotations

import dataclasses

import pytest
import trio

from kafkacompat.blocking.connection import BlockingConnection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import ClusterMismatchError
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
from kafkacompat.testing.emulator import ThreadedCluster
from kafkacompat.transport.cluster import connect

CONFIG = ConnectionConfig(connect_timeout=5, request_timeout=5)


def attempts(conn: object) -> list[tuple[int, str]]:
    handshake = conn.handshake  # type: ignore[attr-defined]
    return [(a.version, a.outcome) for a in handshake.transcript.attempts]


async def test_a_44_broker_confirms_the_identity_of_every_known_node(emulated_cluster: object) -> None:
    emulated = await emulated_cluster(["4.4/kraft-broker", "4.4/kraft-broker"])  # type: ignore[operator]
    with trio.fail_after(15):
        async with connect(emulated.bootstrap.split(",")[0], CONFIG) as cluster:
            confirmed = 0
            for node_id in sorted(cluster.brokers):
                conn = await cluster.connection(node_id)
                transcript = conn.handshake.transcript
                if transcript.identity is None:  # the bootstrap connection, adopted: no identity
                    continue
                assert transcript.identity_sent is not None
                assert (transcript.identity.cluster_id, transcript.identity.node_id) == (
                    cluster.cluster_id,
                    node_id,
                )
                assert attempts(conn) == [(5, "ok")]
                confirmed += 1
            assert confirmed == 1  # node 2: node 1's connection is the bootstrap one
    v5 = [r for b in emulated.brokers for r in b.requests if r.api_key == 18]
    assert v5 and all(r.api_version == 5 and "answered" in r.outcome for r in v5)


async def test_a_43_broker_costs_its_extra_round_trip_once(emulated_cluster: object) -> None:
    emulated = await emulated_cluster(["4.3/kraft-broker", "4.3/kraft-broker"])  # type: ignore[operator]
    with trio.fail_after(15):
        async with connect(emulated.bootstrap, CONFIG) as cluster:
            opened = [await cluster.connection(node_id) for node_id in sorted(cluster.brokers)]
            first = [attempts(conn) for conn in opened]
            # A reconnect to each: the memory of the cluster starts it at v4.
            for conn in opened:
                await conn.aclose()
            again = [attempts(await cluster.connection(node_id)) for node_id in sorted(cluster.brokers)]
    # Two addresses, each met for the first time: one extra round trip each, once.
    assert first == [[(5, "unsupported-version"), (4, "ok")]] * 2
    assert again == [[(4, "ok")], [(4, "ok")]]


async def test_an_unexpected_cluster_id_is_refused_before_any_node_is_used(emulated_cluster: object) -> None:
    emulated = await emulated_cluster("3.9")  # type: ignore[operator]
    config = ConnectionConfig(
        connect_timeout=5, request_timeout=5, handshake=HandshakeConfig(expected_cluster_id="another-cluster")
    )
    with trio.fail_after(15), pytest.raises(ClusterMismatchError, match="not to the expected cluster"):
        async with connect(emulated.bootstrap, config):
            pass


async def test_rebootstrap_required_reads_metadata_again_and_finds_the_node(emulated_cluster: object) -> None:
    emulated = await emulated_cluster(["4.4/kraft-broker", "4.4/kraft-broker"])  # type: ignore[operator]
    with trio.fail_after(15):
        async with connect(emulated.bootstrap.split(",")[0], CONFIG) as cluster:
            right = cluster.brokers[2]
            # Stale metadata: node 2 is believed to be where node 1 listens (a moved broker).
            stale = dataclasses.replace(right, host=cluster.brokers[1].host, port=cluster.brokers[1].port)
            cluster._metadata = dataclasses.replace(  # type: ignore[attr-defined]
                cluster.metadata, brokers={**cluster.metadata.brokers, 2: stale}
            )
            conn = await cluster.connection(2)
            assert (conn.host, conn.port) == (right.host, right.port)
            assert cluster.brokers[2].address == right.address  # Metadata was read again
            assert conn.handshake is not None and conn.handshake.transcript.identity_sent is not None
    refused = [r for r in emulated.brokers[0].requests if r.api_key == 18 and r.api_version == 5]
    outcomes = [r.outcome for r in refused]
    assert any("129" in outcome or "REBOOTSTRAP" in outcome for outcome in outcomes), outcomes


def test_a_blocking_connection_takes_an_identity_and_the_memory_as_the_others_do() -> None:
    memory = ApiVersionsMemory()
    with ThreadedCluster(["4.3/kraft-broker", "4.4/kraft-broker"]) as emulated:
        seen = []
        for broker in emulated.brokers * 2:
            conn = BlockingConnection(broker.host, broker.port, CONFIG, node_id=broker.node_id)
            conn.identity = BrokerIdentity("kafkacompat-emulated", broker.node_id)
            conn.api_versions_memory = memory
            with conn:
                conn.open()
                assert conn.handshake is not None
                seen.append((attempts(conn), conn.handshake.transcript.identity_sent))
    old, new = [(5, "unsupported-version"), (4, "ok")], [(5, "ok")]
    assert seen == [
        (old, None), (new, BrokerIdentity("kafkacompat-emulated", 2)),  # first meetings
        ([(4, "ok")], None), (new, BrokerIdentity("kafkacompat-emulated", 2)),  # the 4.3 one remembered
    ]
