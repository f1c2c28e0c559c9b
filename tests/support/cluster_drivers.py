"""Run one test body on either cluster driver: trio (``kafkacompat.connect``) or asyncio.

The cluster tests are trio tests (pytest-trio), and their peers (the fake
cluster, the emulator) are trio servers in the test's loop.  A body written
against ``Side`` runs unchanged on both drivers: on trio in the test's own
loop, on asyncio in ``asyncio.run`` on a worker thread, while the test's trio
loop goes on serving the peers.  The body reaches back into the trio loop
(to stop an emulated broker, say) with ``side.in_trio``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
import trio

import kafkacompat
import kafkacompat.aio

__all__ = ["DRIVERS", "Driver", "Side"]

T = TypeVar("T")
_ASYNCIO_LIMIT = 120.0  # the asyncio body's own bound: trio cannot cancel a thread


@dataclass(frozen=True)
class Side:
    """What a body may use, on its driver's loop."""

    driver: str
    connect: Callable[..., AbstractAsyncContextManager[Any]]
    sleep: Callable[[float], Awaitable[None]]
    _trio_token: trio.lowlevel.TrioToken

    async def in_trio(self, function: Callable[[], Awaitable[T]]) -> T:
        """Run ``function`` in the test's trio loop and wait for it."""
        if self.driver == "trio":
            return await function()
        token = self._trio_token
        return await asyncio.to_thread(trio.from_thread.run, function, trio_token=token)

    async def wait_until_broken(self, cluster: Any, node_id: int) -> None:
        """Bounded wait until the connection's reader has seen the peer go away."""
        for _ in range(500):
            if cluster.connected().get(node_id) is None:
                return
            await self.sleep(0.01)
        raise AssertionError(f"the connection to node {node_id} still looks ready")


@dataclass(frozen=True)
class Driver:
    name: str

    async def run(self, body: Callable[[Side], Awaitable[T]]) -> T:
        token = trio.lowlevel.current_trio_token()
        if self.name == "trio":
            return await body(Side("trio", kafkacompat.connect, trio.sleep, token))
        side = Side("asyncio", kafkacompat.aio.connect, asyncio.sleep, token)

        async def bounded() -> T:
            async with asyncio.timeout(_ASYNCIO_LIMIT):
                return await body(side)

        return await trio.to_thread.run_sync(asyncio.run, bounded())

    def __str__(self) -> str:
        return self.name


DRIVERS = [Driver("trio"), Driver("asyncio")]


@pytest.fixture(params=DRIVERS, ids=str)
def driver(request: pytest.FixtureRequest) -> Driver:
    """Each cluster driver in turn."""
    driver: Driver = request.param
    return driver
