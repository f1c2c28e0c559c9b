"""The trio driver's deadlines run on trio's clock: an autojump MockClock drives them here.

The broker is the emulator's sans-I/O connection served by a trio listener on
127.0.0.1 in the test's own run loop, so a stall or a delay costs virtual
time only, and a deadline read from any other clock would hang the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from kafkacompat.errors import EncodeError, KafkaTimeoutError, TransportError
from kafkacompat.negotiation.client_connection import ClientConnection
from kafkacompat.protocol import messages as m
from kafkacompat.testing.emulator import ClusterState, Connection, Fault, FaultPlan, Node
from kafkacompat.testing.emulator.faults import Close, Send, Sleep, Stall
from kafkacompat.testing.emulator.profile import profile_for
from kafkacompat.transport.config import ConnectionConfig
from kafkacompat.transport.connection import BrokerConnection, open_connection

METADATA, API_VERSIONS, FIND_COORDINATOR = 3, 18, 10
CONFIG = ConnectionConfig(connect_timeout=10, request_timeout=30)


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


@asynccontextmanager
async def emulated_broker(*faults: Fault) -> AsyncIterator[tuple[str, int]]:
    """An emulated Kafka 4.1 broker in this run loop, with ``faults``; its address."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    host, port = listeners[0].socket.getsockname()[:2]
    state = ClusterState([Node(1, profile_for("4.1"), port=port)])
    plan = FaultPlan(faults)

    async def serve(stream: trio.SocketStream) -> None:
        broker = Connection(state.nodes[1], state, plan, lambda record: None)
        async with stream:
            while data := await stream.receive_some(65536):
                for action in broker.receive(data):
                    if isinstance(action, Send):
                        await stream.send_all(action.data)
                    elif isinstance(action, Sleep):
                        await trio.sleep(action.seconds)
                    elif isinstance(action, Stall):
                        await trio.sleep_forever()
                    elif isinstance(action, Close):
                        return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, serve, listeners)
        yield host, port
        nursery.cancel_scope.cancel()


async def test_a_silent_broker_times_the_handshake_out_in_virtual_time(clock: trio.testing.MockClock) -> None:
    with trio.fail_after(1000):
        async with emulated_broker(Fault.stall(API_VERSIONS)) as (host, port), trio.open_nursery() as nursery:
            start = trio.current_time()
            conn = BrokerConnection(host, port, CONFIG)
            with pytest.raises(KafkaTimeoutError) as caught:
                await conn.open(nursery)
            elapsed = trio.current_time() - start
    assert caught.value.node == f"{host}:{port}" and caught.value.transcript is not None
    assert elapsed >= CONFIG.request_timeout  # the request timeout passed on trio's clock, not before


async def test_a_late_answer_is_dropped_and_the_next_request_gets_its_own(
    clock: trio.testing.MockClock,
) -> None:
    slow = Fault.delay(100, METADATA, times=1)  # the broker answers the first Metadata after 100 s
    with trio.fail_after(1000):
        async with emulated_broker(slow) as (host, port), open_connection(host, port, CONFIG) as conn:
            start = trio.current_time()
            with pytest.raises(KafkaTimeoutError, match="no response to MetadataRequest"):
                await conn.request(m.MetadataRequest(topics=[]), request_timeout=5)
            assert 5 <= trio.current_time() - start < 100 and conn.is_ready
            reply = await conn.request(m.MetadataRequest(topics=[]), request_timeout=200)
            elapsed = trio.current_time() - start
            assert conn.is_ready and conn.in_flight == 0
    assert isinstance(reply, m.MetadataResponse) and [b.node_id for b in reply.brokers] == [1]
    assert elapsed >= 100  # answered after the abandoned request's late answer, which was dropped


async def test_waiting_for_an_in_flight_slot_counts_against_the_deadline(
    clock: trio.testing.MockClock,
) -> None:
    config = ConnectionConfig(connect_timeout=10, request_timeout=30, max_in_flight=2)
    slow = Fault.delay(100, METADATA, times=2)
    outcomes: dict[str, object] = {}
    with trio.fail_after(1000):
        async with emulated_broker(slow) as (host, port), open_connection(host, port, config) as conn:

            async def ask(name: str, limit: float) -> None:
                try:
                    outcomes[name] = await conn.request(m.MetadataRequest(topics=[]), request_timeout=limit)
                except KafkaTimeoutError as exc:
                    outcomes[name] = exc

            async with trio.open_nursery() as askers:
                askers.start_soon(ask, "first", 300)
                askers.start_soon(ask, "second", 300)
                await trio.testing.wait_all_tasks_blocked()
                askers.start_soon(ask, "waits for a slot", 10)
                askers.start_soon(ask, "waits longer", 400)
    assert isinstance(outcomes["first"], m.MetadataResponse)
    assert isinstance(outcomes["second"], m.MetadataResponse)
    late = outcomes["waits for a slot"]
    assert isinstance(late, KafkaTimeoutError) and "in-flight slots" in str(late)
    assert isinstance(outcomes["waits longer"], m.MetadataResponse)  # sent when a slot freed


async def test_a_request_sent_on_its_callers_behalf_that_cannot_be_encoded_fails_once(
    clock: trio.testing.MockClock,
) -> None:
    """Waiting for a slot, its request is encoded only when a slot frees: the error goes to it alone."""
    config = ConnectionConfig(connect_timeout=10, request_timeout=30, max_in_flight=1)
    slow = Fault.delay(20, METADATA, times=1)
    outcomes: dict[str, object] = {}
    with trio.fail_after(1000):
        async with emulated_broker(slow) as (host, port), open_connection(host, port, config) as conn:

            async def ask(name: str, version: int | None, limit: float) -> None:
                try:
                    outcomes[name] = await conn.request(
                        m.MetadataRequest(topics=[]), version=version, request_timeout=limit
                    )
                except (EncodeError, KafkaTimeoutError) as exc:
                    outcomes[name] = exc

            async with trio.open_nursery() as askers:
                askers.start_soon(ask, "holds the slot", None, 100)
                await trio.testing.wait_all_tasks_blocked()
                askers.start_soon(ask, "cannot be encoded", 99, 25)
                askers.start_soon(ask, "after it", None, 100)
            await trio.sleep(50)  # past the failed one's deadline: nothing may wake it again
            assert conn.is_ready and conn.in_flight == 0
    assert isinstance(outcomes["holds the slot"], m.MetadataResponse)
    assert isinstance(outcomes["cannot be encoded"], EncodeError)
    assert isinstance(outcomes["after it"], m.MetadataResponse)


def _connection_tasks() -> list[trio.lowlevel.Task]:
    """The system tasks a nursery-less connection started (named after it)."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    return [
        task
        for nursery in root.child_nurseries
        for task in nursery.child_tasks
        if task.name.startswith("kafkacompat ")
    ]


async def test_open_connection_runs_its_tasks_itself_and_ends_them_on_close(
    clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(1000):
        async with emulated_broker() as (host, port):
            async with open_connection(host, port, CONFIG) as conn:
                assert _connection_tasks() == []  # a bare connect starts none
                await conn.request(m.MetadataRequest(topics=[]))
                names = sorted(task.name.split()[1] for task in _connection_tasks())
                assert names == ["deadlines", "reader", "writer"]
            await trio.testing.wait_all_tasks_blocked()
            assert _connection_tasks() == []


async def test_a_bug_in_a_connection_task_fails_the_connection_not_the_run(
    clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A system task's exception would end trio.run as TrioInternalError: it becomes the
    connection's failure instead, seen by the waiting caller."""
    with trio.fail_after(1000):
        async with emulated_broker() as (host, port), open_connection(host, port, CONFIG) as conn:

            def broken(self: object, *args: object) -> list[object]:
                raise RuntimeError("a bug in the core")

            monkeypatch.setattr(ClientConnection, "receive_data", broken)
            monkeypatch.setattr(ClientConnection, "body_filled", broken)
            with pytest.raises(TransportError, match="reader task failed: RuntimeError"):
                await conn.request(m.MetadataRequest(topics=[]))
            assert not conn.is_ready
            with pytest.raises(TransportError):
                await conn.request(m.MetadataRequest(topics=[]))
