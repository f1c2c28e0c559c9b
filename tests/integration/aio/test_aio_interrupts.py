"""An asyncio task cancelled at any step of ``request()`` leaves a usable or a closed connection.

The request runs as a task cancelled after N loop iterations, for every N until
the answer comes first (Ctrl-C under ``asyncio.run`` cancels the main task the
same way).  The next requests must be answered (or fail with a clear
closed-connection error), never with a ``ProtocolError`` blaming the broker for
the late answer of the cancelled one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from kafkacompat.aio import BrokerConnection, open_connection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import ProtocolError, TransportError
from kafkacompat.protocol import messages
from kafkacompat.testing.emulator import ThreadedCluster

QUICK = ConnectionConfig(connect_timeout=5, request_timeout=5)
MAX_STEPS = 5000


@pytest.fixture(scope="module")
def cluster() -> Iterator[ThreadedCluster]:
    with ThreadedCluster("4.0") as running:
        yield running


async def metadata(conn: BrokerConnection) -> messages.MetadataResponse:
    response = await conn.request(messages.MetadataRequest(topics=[]))
    assert isinstance(response, messages.MetadataResponse)
    return response


async def cancelled_after(steps: int, conn: BrokerConnection) -> bool:
    """Run a request, cancelled after ``steps`` loop iterations; whether it was cancelled."""
    task = asyncio.create_task(metadata(conn))
    for _ in range(steps):
        if task.done():
            break
        await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False


async def interrupt_at_every_step(host: str, port: int, node_id: int) -> tuple[int, int]:
    usable = 0
    for steps in range(MAX_STEPS):
        async with open_connection(host, port, QUICK) as conn:
            await metadata(conn)  # the reader is running
            if not await cancelled_after(steps, conn):
                return steps, usable  # answered before the cancel: every step was cancelled
            for _ in range(3):
                try:
                    response = await metadata(conn)
                except ProtocolError as exc:
                    pytest.fail(f"cancelled after {steps} steps: the broker is blamed: {exc}")
                except TransportError as exc:
                    assert "closed" in str(exc) and not conn.is_ready, exc
                else:
                    assert [b.node_id for b in response.brokers] == [node_id]
                    usable += 1
    pytest.fail(f"a request took more than {MAX_STEPS} loop iterations")


def test_a_cancel_at_any_step_leaves_a_usable_or_a_closed_connection(cluster: ThreadedCluster) -> None:
    broker = cluster.brokers[0]
    steps, usable = asyncio.run(interrupt_at_every_step(broker.host, broker.port, broker.node_id))
    assert steps > 2, "the cancel never reached the answer's way back"
    assert usable > 0
