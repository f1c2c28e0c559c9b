"""A whole cluster behind one bootstrap list: discovery, one connection per node, cluster questions.

``async with kafkacompat.connect("h1:9092,h2:9092") as cluster:`` tries the
bootstrap addresses in order (each round retried with exponential backoff and
jitter, for transport errors and timeouts only), negotiates on the first that
answers, asks it for Metadata at the version that connection negotiated, and
from then on knows the brokers by node id.  Connections to them are opened on
demand, one per node, each with its own ApiVersions handshake, and all owned by
the nursery the context manager runs; leaving the block closes them.

Failing to connect is reported as one of three different things, never as an
opaque "no brokers available":

- *unreachable*: every bootstrap address refused, timed out or could not be
  resolved.  ``NoBrokerReachableError`` (a ``TransportError``) lists each
  address with its reason.
- *handshake failed*: an address answered, but not as a Kafka broker (HTTP,
  TLS, a broker that closes on every ApiVersions...).  The handshake's own
  ``NegotiationError`` is raised, transcript attached; the other addresses'
  outcomes are added as notes.
- *incompatible*: the broker negotiated, but no Metadata version is allowed by
  it, the codec and the version policy.  ``UnsupportedVersionError``, with the
  reasons and the transcript.

KRaft controllers (KIP-919): ``connect(..., controllers=True)`` takes the
addresses for controllers, as Kafka's ``bootstrap.controllers`` and
``--bootstrap-controller`` do, and finds the quorum through DescribeCluster
(``controller_discovery``); a bootstrap address that turns out to be a
controller is treated the same way without being asked.  Then ``brokers``
holds the controllers and ``metadata.node_kind`` is ``"controller"``.  A
broker reached with ``controllers=True`` raises ``WrongEndpointError``.

The layer itself is written once (``cluster_core``) over a small backend
(``cluster_backend``); this module runs it on trio, ``kafkacompat.aio`` on
asyncio, with the same methods.

A connection that broke is negotiated again on its next use (a broker may have
been upgraded or downgraded in between); what changed is recorded and shown
by ``cluster.changes``.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import trio

from kafkacompat.cluster.backend import Job
from kafkacompat.cluster.core import ClusterCore
from kafkacompat.cluster.discovery import BrokerAddress, ClusterMetadata, parse_bootstrap
from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.errors import KafkaTimeoutError
from kafkacompat.transport.connection import BrokerConnection
from kafkacompat.transport.seam import raise_lone

__all__ = [
    "BrokerAddress",
    "Cluster",
    "ClusterMetadata",
    "TrioBackend",
    "connect",
    "parse_bootstrap",
]

_CLOSE_TIMEOUT = 5.0


class TrioBackend:
    """The cluster layer on trio: connections' tasks in ``nursery``, trio's clock and primitives."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def connection(
        self, host: str, port: int, config: ConnectionConfig, node_id: int | None
    ) -> BrokerConnection:
        return BrokerConnection(host, port, config, node_id=node_id)

    async def open(self, conn: BrokerConnection) -> None:
        if conn.capabilities is not None:
            await conn.reconnect(self._nursery)
        else:
            await conn.open(self._nursery)

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    def clock(self) -> float:
        return trio.current_time()

    def lock(self) -> AbstractAsyncContextManager[object]:
        return trio.Lock()

    @asynccontextmanager
    async def deadline(self, at: float, what: str) -> AsyncIterator[None]:
        with trio.CancelScope(deadline=at) as scope:
            yield
        if scope.cancelled_caught:
            raise KafkaTimeoutError(f"timed out {what}")

    async def run_all(self, jobs: Sequence[Job], *, limit: int | None = None) -> None:
        limiter = trio.CapacityLimiter(limit if limit is not None else math.inf)

        async def limited(job: Job) -> None:
            async with limiter:
                await job()

        async with trio.open_nursery() as nursery:
            for job in jobs:
                nursery.start_soon(limited, job)


class Cluster(ClusterCore[BrokerConnection]):
    """Brokers discovered from a bootstrap list, one negotiated connection per node (trio).

    Made by ``connect``; every method must be called from the trio run that
    entered it.  The methods are ``ClusterCore``'s.
    """

    def __init__(
        self,
        bootstrap: Sequence[tuple[str, int]],
        config: ConnectionConfig,
        nursery: trio.Nursery,
        *,
        controllers: bool = False,
    ) -> None:
        super().__init__(bootstrap, config, TrioBackend(nursery), controllers=controllers)


@asynccontextmanager
async def connect(
    bootstrap: str | Iterable[str | tuple[str, int]],
    config: ConnectionConfig | None = None,
    *,
    controllers: bool = False,
) -> AsyncIterator[Cluster]:
    """``async with connect("host:9092") as cluster:`` discovered, then closed on exit.

    Everything about the connections, the version policy included, comes from
    ``config`` (``ConnectionConfig(policy=...)``).  ``controllers=True``: the
    addresses are KRaft controllers (Kafka's ``bootstrap.controllers``); a
    broker among them raises ``WrongEndpointError``.  Raises
    ``NoBrokerReachableError``, the handshake's ``NegotiationError`` or
    ``UnsupportedVersionError`` (see the module documentation).
    """
    addresses = parse_bootstrap(bootstrap)
    settings = config or DEFAULT_CONFIG
    try:
        async with trio.open_nursery() as nursery:
            cluster = Cluster(addresses, settings, nursery, controllers=controllers)
            try:
                await cluster._bootstrap()
                yield cluster
            finally:
                with trio.move_on_after(_CLOSE_TIMEOUT) as closing:
                    closing.shield = True
                    await cluster.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise_lone(group)
