"""The counting proxy sees every request of a cluster's clients, and keeps them talking through it."""

from __future__ import annotations

from typing import Any

import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.testing.counting_proxy import CountingProxy
from kafkacompat.transport.cluster import connect

CONFIG = ConnectionConfig(connect_timeout=5, request_timeout=5)


async def test_it_counts_each_connections_exchanges_and_rewrites_the_brokers_addresses(
    emulated_cluster: Any,
) -> None:
    emulated = await emulated_cluster(["4.3/kraft-broker", "4.4/kraft-broker"])
    old, new = (b.address for b in emulated.brokers)
    proxy = await trio.to_thread.run_sync(CountingProxy([old, new]).__enter__)
    try:
        with trio.fail_after(20):
            async with connect(proxy.address(old), CONFIG) as cluster:
                proxied = {n: f"{b.host}:{b.port}" for n, b in cluster.brokers.items()}
                assert proxied == {1: proxy.address(old), 2: proxy.address(new)}
                await cluster.connection(2)
        seen = await trio.to_thread.run_sync(proxy.connections)
        assert [c.upstream for c in seen] == [old, new]
        bootstrap, node = seen
        handshake = [(e.api_key, e.version, e.error_code) for e in bootstrap.exchanges[:2]]
        assert handshake == [(18, 5, 35), (18, 4, 0)]
        assert bootstrap.exchanges[2].api_key == 3 and bootstrap.round_trips == 3
        assert [(e.version, e.error_code, e.identity) for e in node.handshake] == [
            (5, 0, ("kafkacompat-emulated", 2))
        ]
        assert node.handshake_seconds is not None and node.handshake_seconds >= 0
        # The cluster closed them on leaving; the proxy process sees each close a moment later.
        for _ in range(500):
            if all(c.closed_at is not None for c in await trio.to_thread.run_sync(proxy.connections)):
                break
            await trio.sleep(0.01)
        else:
            raise AssertionError("the proxy never saw the cluster's connections close")
        await trio.to_thread.run_sync(proxy.clear)
        assert await trio.to_thread.run_sync(proxy.connections) == []
    finally:
        await trio.to_thread.run_sync(proxy.stop)
