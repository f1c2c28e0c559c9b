"""A cluster call's own ``request_timeout`` is a deadline while the cluster layer reconnects.

N callers ask the same node at once while its broker refuses connections, or
accepts them and never answers the handshake.  Each call must end by its own
deadline plus a small slack, not queue behind the others' whole retry loops
(each with the config's 30 s handshake timeout).  Trio's autojump clock makes
the waits instant and the durations exact; asyncio runs on its real clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import trio
import trio.testing

import kafkacompat.aio
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest
from kafkacompat.testing.emulator import EmulatedCluster, Fault, ThreadedCluster
from kafkacompat.transport.cluster import connect

CALLERS = 30
DEADLINE = 1.0
SLACK = 0.05  # on the autojump clock, the only slack is the scheduling of the last step
CONFIG = ConnectionConfig()  # the defaults: 30 s request timeout, 5 attempts with backoff
API_VERSIONS = 18


def black_hole(broker: object) -> None:
    broker.faults.add(Fault.stall(API_VERSIONS))  # type: ignore[attr-defined]


def refuse(broker: object) -> None:
    broker.stop()  # type: ignore[attr-defined]


FAULTS: dict[str, Callable[[object], None]] = {"black hole": black_hole, "refused": refuse}


@pytest.mark.parametrize("fault", FAULTS)
async def test_every_trio_caller_ends_by_its_own_deadline(
    fault: str, autojump_clock: trio.testing.MockClock
) -> None:
    durations: list[float] = []
    outcomes: list[str] = []
    async with EmulatedCluster("4.0") as emulated, connect(emulated.bootstrap, CONFIG) as cluster:
        broker = emulated.brokers[0]
        node_id = broker.node_id
        await cluster.request(node_id, MetadataRequest(topics=[]))
        FAULTS[fault](broker)
        for conn in cluster.connected().values():  # the next calls must connect again
            await conn.aclose()

        async def call() -> None:
            start = trio.current_time()
            try:
                await cluster.request(node_id, MetadataRequest(topics=[]), request_timeout=DEADLINE)
                outcomes.append("answered")
            except KafkaCompatError as exc:
                outcomes.append(type(exc).__name__)
            durations.append(trio.current_time() - start)

        async with trio.open_nursery() as nursery:
            for _ in range(CALLERS):
                nursery.start_soon(call)
    assert len(durations) == CALLERS and "answered" not in outcomes
    assert max(durations) <= DEADLINE + SLACK, (fault, sorted(durations), outcomes)


@pytest.mark.parametrize("fault", FAULTS)
def test_every_asyncio_caller_ends_by_its_own_deadline(fault: str) -> None:
    deadline, slack = 0.5, 0.25  # a real clock: the slack covers a loaded machine's scheduling

    async def scenario(emulated: ThreadedCluster) -> list[float]:
        loop = asyncio.get_running_loop()
        broker = emulated.brokers[0]
        async with kafkacompat.aio.connect(emulated.bootstrap, CONFIG) as cluster:
            await cluster.request(broker.node_id, MetadataRequest(topics=[]))
            trio.from_thread.run_sync(FAULTS[fault], broker, trio_token=emulated._token)
            for conn in cluster.connected().values():  # the next calls must connect again
                await conn.aclose()

            async def call() -> float:
                start = loop.time()
                with pytest.raises(KafkaCompatError):
                    await cluster.request(
                        broker.node_id, MetadataRequest(topics=[]), request_timeout=deadline
                    )
                return loop.time() - start

            return list(await asyncio.gather(*(call() for _ in range(CALLERS))))

    with ThreadedCluster("4.0") as emulated:
        durations = asyncio.run(scenario(emulated))
    assert max(durations) <= deadline + slack, (fault, sorted(durations))


async def test_callers_waiting_for_a_node_share_its_failed_attempt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durations: list[float] = []
    errors: list[KafkaCompatError] = []
    async with EmulatedCluster("4.0") as emulated, connect(emulated.bootstrap, CONFIG) as cluster:
        broker = emulated.brokers[0]
        await cluster.request(broker.node_id, MetadataRequest(topics=[]))
        refuse(broker)
        for conn in cluster.connected().values():
            await conn.aclose()

        async def call() -> None:
            start = trio.current_time()
            try:
                await cluster.request(broker.node_id, MetadataRequest(topics=[]), request_timeout=600)
            except KafkaCompatError as exc:
                errors.append(exc)
            durations.append(trio.current_time() - start)

        async with trio.open_nursery() as nursery:
            for _ in range(CALLERS):
                nursery.start_soon(call)
    # One retry loop ran: every caller failed when it did, not after the others' loops in turn.
    assert len(errors) == CALLERS and max(durations) <= min(durations) + SLACK, sorted(durations)
    assert len({str(error) for error in errors}) == 1
