"""Connecting for the commands: one negotiated connection per broker inspected.

``probe`` bootstraps (errors there are the command's failure: unreachable,
not Kafka, TLS, authentication, too old), then negotiates with the broker the
bootstrap answered from, or with every broker Metadata names
(``all_brokers``), concurrently, reporting each outcome to a ``Progress``.  A
broker that fails after the bootstrap does not stop the others: its error is
kept in its ``BrokerProbe``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

import trio

from kafkacompat.cli.connection_options import ConnectionOptions
from kafkacompat.cli.failures import CommandFailed, as_failure
from kafkacompat.cli.inspect_model import BrokerProbe, ProbeReport
from kafkacompat.cli.output import Progress
from kafkacompat.cluster.backend import NodeConnection
from kafkacompat.cluster.misrouting import confirmed_by_broker
from kafkacompat.errors import ConfigError, KafkaCompatError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.fanout import fanout_error, fanout_split
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.transport.cluster import BrokerAddress, Cluster, connect
from kafkacompat.transport.connection import BrokerConnection

__all__ = ["execute", "probe", "probe_cluster", "run_async", "with_cluster"]

T = TypeVar("T")


def run_async(fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn`` in a fresh trio loop; a lone error out of a nursery comes out alone."""
    try:
        return trio.run(fn)
    except BaseExceptionGroup as group:
        while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
            inner = group.exceptions[0]
            if not isinstance(inner, BaseExceptionGroup):
                raise inner from inner.__cause__
            group = inner
        raise


def execute(options: ConnectionOptions, fn: Callable[[Cluster], Awaitable[T]]) -> T:
    """Connect, run ``fn`` on the cluster, close: a failure becomes one sentence, secrets masked."""
    with options.redactor.scrubbing():
        try:
            return run_async(lambda: with_cluster(options, fn))
        except (ConfigError, CommandFailed):
            raise
        except KafkaCompatError as exc:
            raise as_failure(exc, options.config, options.bootstrap) from exc


async def with_cluster(options: ConnectionOptions, fn: Callable[[Cluster], Awaitable[T]]) -> T:
    """Bootstrap and run ``fn``.  A wrong peer (a web, TLS, SSH or text server, a silent port) is
    named by the connection's own first contact, within a few seconds and without retries."""
    async with connect(options.bootstrap, options.config, controllers=options.controllers) as cluster:
        return await fn(cluster)


async def _first_broker(cluster: Cluster) -> BrokerAddress:
    ready = cluster.connected()
    if ready:
        return cluster.brokers[next(iter(ready))]
    conn = await cluster.any_connection()
    if conn.node_id is None or conn.node_id not in cluster.brokers:  # pragma: no cover - defensive
        return next(iter(cluster.brokers.values()))
    return cluster.brokers[conn.node_id]


def _failed_probe(broker: BrokerAddress, exc: KafkaCompatError) -> BrokerProbe:
    return BrokerProbe(
        broker.node_id, broker.host, broker.port, broker.rack, error=str(exc), error_type=type(exc).__name__
    )


async def _probe_one(cluster: Cluster, broker: BrokerAddress) -> BrokerProbe:
    try:
        conn = await cluster.connection(broker.node_id)
    except KafkaCompatError as exc:
        return _failed_probe(broker, exc)
    capabilities = conn.capabilities
    if capabilities is not None and _may_confirm(cluster, conn, capabilities):
        # The bootstrap connection knew no node id, so it sent no identity (KIP-1242): the
        # node's own connection does, and says whether the broker confirms who it is.
        await conn.aclose()
        try:
            conn = await cluster.connection(broker.node_id)
        except KafkaCompatError as exc:
            return _failed_probe(broker, exc)
        capabilities = conn.capabilities
    if capabilities is None:  # pragma: no cover - a ready connection has capabilities
        return BrokerProbe(broker.node_id, broker.host, broker.port, broker.rack, error="not negotiated")
    if capabilities.node_id is None:
        capabilities = dataclasses.replace(capabilities, node_id=broker.node_id)
    return BrokerProbe(
        broker.node_id, broker.host, broker.port, broker.rack, capabilities,
        client_checked_cluster=_client_checked_cluster(cluster, conn),
    )


def _client_checked_cluster(cluster: Cluster, conn: BrokerConnection) -> str | None:
    """The cluster id the client itself checked ``conn`` against (KIP-1242 client side), or None.

    Only an expected cluster id makes it worth saying: the bootstrap connection's
    Metadata was compared with it, and with ``misrouting_check="every-connection"`` (what
    ``--expect-cluster-id`` sets) every other connection the broker did not confirm.
    """
    if cluster.config.handshake.expected_cluster_id is None or confirmed_by_broker(conn):
        return None
    return cluster.checked_by_client(conn)


def _may_confirm(cluster: Cluster, conn: NodeConnection, capabilities: BrokerCapabilities) -> bool:
    """An inspected connection sent no identity, yet the broker speaks v5 and one is known."""
    own = capabilities.api_ranges.get(ApiKey.API_VERSIONS)
    return (
        getattr(conn, "identity", None) is None
        and own is not None
        and own.highest >= 5
        and cluster.cluster_id is not None
    )


async def probe_cluster(
    cluster: Cluster, bootstrap: str, *, all_brokers: bool, progress: Progress | None = None
) -> ProbeReport:
    """Negotiate with the brokers to inspect on an open cluster."""
    targets = list(cluster.brokers.values()) if all_brokers else [await _first_broker(cluster)]
    # The brokers come from a broker's answer: as many and as fast as the fan-out limits allow.
    limit = cluster.config.max_fanout
    chosen, skipped = fanout_split([b.node_id for b in targets], set(cluster.connected()), limit)
    targets = [cluster.brokers[node_id] for node_id in chosen]
    limiter = trio.CapacityLimiter(cluster.config.fanout_concurrency)
    results: dict[int, BrokerProbe] = {}
    if progress is not None:
        progress.total = len(targets)
        progress.start()

    async def one(broker: BrokerAddress) -> None:
        async with limiter:
            result = await _probe_one(cluster, broker)
        results[broker.node_id] = result
        if progress is not None:
            progress.step(f"node {broker.node_id} at {result.endpoint}", result.error)

    async with trio.open_nursery() as nursery:
        for broker in targets:
            nursery.start_soon(one, broker)
    if progress is not None:
        progress.finish()
    metadata = cluster.metadata
    return ProbeReport(
        bootstrap=bootstrap,
        cluster_id=metadata.cluster_id,
        controller_id=metadata.controller_id,
        brokers=tuple(results[node_id] for node_id in sorted(chosen)),  # shown by node id
        policy=cluster.config.policy,
        observed_at=datetime.now(UTC),
        all_brokers=all_brokers,
        known_brokers=len(metadata.brokers),
        node_kind=metadata.node_kind,
        note=metadata.note,
        not_contacted=fanout_error(len(skipped), len(metadata.brokers), limit).message if skipped else None,
        expected_cluster_id=cluster.config.handshake.expected_cluster_id,
    )


def probe(options: ConnectionOptions, *, all_brokers: bool, progress: Progress | None = None) -> ProbeReport:
    """Bootstrap, then negotiate with one broker or all of them (see ``execute``)."""

    async def run(cluster: Cluster) -> ProbeReport:
        return await probe_cluster(cluster, options.bootstrap, all_brokers=all_brokers, progress=progress)

    return execute(options, run)
