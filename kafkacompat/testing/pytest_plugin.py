"""pytest fixtures for the broker-release emulator.

Register the plugin in a ``conftest.py`` (``pytest_plugins =
["kafkacompat.testing.pytest_plugin"]`` at the top level, or import the
fixtures into a nested conftest), then:

``emulated_cluster``          (trio tests, pytest-trio) a factory:
                              ``cluster = await emulated_cluster(["2.3", "3.9"], topics={"t": 3})``
``threaded_emulated_cluster`` (plain tests, blocking clients) a factory:
                              ``cluster = threaded_emulated_cluster("2.3")``

Both take the arguments of ``EmulatedCluster``, start the brokers on
127.0.0.1 before returning, and stop every cluster they made when the test
ends.  The trio factory runs the brokers in a nursery owned by the fixture,
so the test may start several clusters and needs no ``async with``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
import trio

from kafkacompat.testing.emulator.cluster import EmulatedCluster, ThreadedCluster

__all__ = ["emulated_cluster", "threaded_emulated_cluster"]

ClusterFactory = Callable[..., Awaitable[EmulatedCluster]]
ThreadedClusterFactory = Callable[..., ThreadedCluster]
_START_TIMEOUT = 10.0


@pytest.fixture
async def emulated_cluster() -> AsyncIterator[ClusterFactory]:
    """A factory of emulated clusters, stopped when the test ends."""
    started: list[EmulatedCluster] = []
    async with trio.open_nursery() as nursery:

        async def factory(*args: Any, **kwargs: Any) -> EmulatedCluster:
            cluster = EmulatedCluster(*args, **kwargs)
            started.append(cluster)
            with trio.fail_after(_START_TIMEOUT):
                return await cluster.start(nursery)

        try:
            yield factory
        finally:
            for cluster in started:
                cluster.stop()
            nursery.cancel_scope.cancel()


@pytest.fixture
def threaded_emulated_cluster() -> Iterator[ThreadedClusterFactory]:
    """A factory of emulated clusters run in background threads, for synchronous tests."""
    started: list[ThreadedCluster] = []

    def factory(*args: Any, **kwargs: Any) -> ThreadedCluster:
        cluster = ThreadedCluster(*args, **kwargs)
        started.append(cluster)
        return cluster.start()

    try:
        yield factory
    finally:
        for cluster in started:
            cluster.close()
