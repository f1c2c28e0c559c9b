"""A whole cluster from asyncio: ``async with kafkacompat.aio.connect(...) as cluster:``.

The same cluster layer as the trio ``kafkacompat.connect`` (``ClusterCore``:
discovery, one negotiated connection per node, capabilities, coordinators,
features, controllers, the fan-out bounds, one retry mechanism), run on the
asyncio loop it is entered from by ``AsyncioBackend``: the asyncio
``BrokerConnection``, ``asyncio.sleep``, the loop's clock, ``asyncio.Lock``
and a ``TaskGroup`` bounded by a semaphore.  No trio is imported and no
thread is started.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from kafkacompat.aio.connection import BrokerConnection
from kafkacompat.cluster.backend import Job
from kafkacompat.cluster.core import ClusterCore
from kafkacompat.cluster.discovery import parse_bootstrap
from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.errors import KafkaTimeoutError

__all__ = ["AsyncioBackend", "Cluster", "connect"]

_CLOSE_TIMEOUT = 5.0


class AsyncioBackend:
    """The cluster layer on the running asyncio loop."""

    def connection(
        self, host: str, port: int, config: ConnectionConfig, node_id: int | None
    ) -> BrokerConnection:
        return BrokerConnection(host, port, config, node_id=node_id)

    async def open(self, conn: BrokerConnection) -> None:
        if conn.capabilities is not None:
            await conn.reconnect()
        else:
            await conn.open()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def clock(self) -> float:
        return asyncio.get_running_loop().time()

    def lock(self) -> AbstractAsyncContextManager[object]:
        return asyncio.Lock()

    @asynccontextmanager
    async def deadline(self, at: float, what: str) -> AsyncIterator[None]:
        scope = asyncio.timeout_at(at)
        try:
            async with scope:
                yield
        except TimeoutError:
            if not scope.expired():
                raise  # a timeout of its own
            raise KafkaTimeoutError(f"timed out {what}") from None

    async def run_all(self, jobs: Sequence[Job], *, limit: int | None = None) -> None:
        slots = asyncio.Semaphore(limit if limit is not None else max(1, len(jobs)))

        async def limited(job: Job) -> None:
            async with slots:
                await job()

        async with asyncio.TaskGroup() as group:
            for job in jobs:
                group.create_task(limited(job))


class Cluster(ClusterCore[BrokerConnection]):
    """Brokers discovered from a bootstrap list, one negotiated connection per node (asyncio).

    Made by ``connect``; every method must be called from the asyncio loop
    that entered it.  The methods are ``ClusterCore``'s, as for the trio
    ``kafkacompat.transport.Cluster``.
    """

    def __init__(
        self,
        bootstrap: Sequence[tuple[str, int]],
        config: ConnectionConfig,
        *,
        controllers: bool = False,
    ) -> None:
        super().__init__(bootstrap, config, AsyncioBackend(), controllers=controllers)


@asynccontextmanager
async def connect(
    bootstrap: str | Iterable[str | tuple[str, int]],
    config: ConnectionConfig | None = None,
    *,
    controllers: bool = False,
) -> AsyncIterator[Cluster]:
    """``async with connect("host:9092") as cluster:`` discovered, then closed on exit.

    As ``kafkacompat.connect`` (same arguments, same errors), on asyncio.
    """
    cluster = Cluster(parse_bootstrap(bootstrap), config or DEFAULT_CONFIG, controllers=controllers)
    try:
        await cluster._bootstrap()
        yield cluster
    finally:
        # Also when the block was cancelled: the connections are closed, within a bound.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_CLOSE_TIMEOUT):
                await cluster.aclose()
