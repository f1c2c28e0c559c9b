"""A trio caller cancelled at any checkpoint of ``request()`` leaves a usable or a closed connection.

The request runs in a cancel scope that another task cancels after N
scheduling steps, for every N until the answer comes first.  The emulator runs
in the same trio run, so each step moves the exchange on a little: the request
is cancelled before it is written, while it is written, while its answer is on
its way, and once it is read.  The next requests must be answered (or fail with
a clear closed-connection error), never with a ``ProtocolError`` blaming the
broker for the late answer of the cancelled one.
"""

from __future__ import annotations

import pytest
import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import ProtocolError, TransportError
from kafkacompat.protocol import messages
from kafkacompat.testing.emulator import EmulatedCluster
from kafkacompat.transport.connection import BrokerConnection, open_connection

QUICK = ConnectionConfig(connect_timeout=5, request_timeout=5)


async def metadata(conn: BrokerConnection) -> messages.MetadataResponse:
    response = await conn.request(messages.MetadataRequest(topics=[]))
    assert isinstance(response, messages.MetadataResponse)
    return response


async def cancelled_after(steps: int, conn: BrokerConnection) -> bool:
    """Run a request, cancelled after ``steps`` scheduling steps; whether it was cancelled."""
    answered = False
    async with trio.open_nursery() as nursery:
        scope = trio.CancelScope()

        async def ask() -> None:
            nonlocal answered
            with scope:
                await metadata(conn)
                answered = True
            nursery.cancel_scope.cancel()

        async def cancel() -> None:
            for _ in range(steps):
                await trio.lowlevel.checkpoint()
            scope.cancel()

        nursery.start_soon(ask)
        nursery.start_soon(cancel)
    return not answered


async def test_a_cancel_at_any_checkpoint_leaves_a_usable_or_a_closed_connection() -> None:
    usable = closed = 0
    async with EmulatedCluster("4.0") as cluster:
        broker = cluster.brokers[0]
        for steps in range(500):
            async with open_connection(broker.host, broker.port, QUICK) as conn:
                await metadata(conn)  # the reader and writer are running
                if not await cancelled_after(steps, conn):
                    break  # answered before the cancel: every step was cancelled once
                for _ in range(3):
                    try:
                        response = await metadata(conn)
                    except ProtocolError as exc:
                        pytest.fail(f"cancelled after {steps} steps: the broker is blamed: {exc}")
                    except TransportError as exc:
                        assert "closed" in str(exc) and not conn.is_ready, exc
                        closed += 1
                    else:
                        assert [b.node_id for b in response.brokers] == [broker.node_id]
                        usable += 1
        else:
            pytest.fail("a request took more than 500 scheduling steps")
    assert steps > 2, "the cancel never reached the answer's way back"
    assert usable > 0
