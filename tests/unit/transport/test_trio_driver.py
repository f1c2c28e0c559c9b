"""The trio driver's deadlines run on trio's clock: an autojump MockClock drives them here.

The broker is the emulator's sans-I/O connection served by a trio listener on
127.0.0.1 in the test's own run loop, so a stall or a delay costs virtual
time only, and a deadline read from any other clock would hang the test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from kafkacompat.connection._request_pipeline import REFILL_DELAY
from kafkacompat.connection.client_connection import ClientConnection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import EncodeError, KafkaTimeoutError, SilentPeerError, TransportError
from kafkacompat.protocol import messages as m
from kafkacompat.testing.emulator import ClusterState, Connection, Fault, FaultPlan, Node
from kafkacompat.testing.emulator.faults import Close, Send, Sleep, Stall
from kafkacompat.testing.emulator.profile import profile_for
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


@pytest.mark.parametrize("first_contact", [CONFIG.first_contact_timeout, None])
async def test_a_silent_broker_is_named_silent_in_virtual_time(
    clock: trio.testing.MockClock, first_contact: float | None
) -> None:
    config = dataclasses.replace(CONFIG, first_contact_timeout=first_contact)
    with trio.fail_after(1000):
        async with emulated_broker(Fault.stall(API_VERSIONS)) as (host, port), trio.open_nursery() as nursery:
            start = trio.current_time()
            conn = BrokerConnection(host, port, config)
            with pytest.raises(SilentPeerError) as caught:
                await conn.open(nursery)
            elapsed = trio.current_time() - start
    assert caught.value.node == f"{host}:{port}" and caught.value.transcript is not None
    # Its first contact's deadline passed on trio's clock, not before (the request's, without one).
    assert elapsed == pytest.approx(first_contact or CONFIG.request_timeout, abs=0.01)


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
                assert names == ["reader", "timer", "writer"]
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


async def _slot_refill_delay(fast_first: int) -> tuple[float, float]:
    """8 in-flight slots, all taken: ``fast_first`` quick answers, then a Metadata the broker
    answers after 100 s, then quick ones behind it; a ninth request waits for a slot.  How
    long after the last quick answer the ninth took its slot, and when it was answered."""
    config = ConnectionConfig(connect_timeout=10, request_timeout=300, max_in_flight=8)
    answered: dict[str, float] = {}
    fast_answered = trio.Event()
    # The broker holds its first answer for a second, so that all nine are asked first.
    gate, slow = Fault.delay(1, FIND_COORDINATOR, times=1), Fault.delay(100, METADATA, times=1)
    async with emulated_broker(gate, slow) as (host, port), open_connection(host, port, config) as conn:

        async def ask(name: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            task_status.started()  # the request is queued before this task first yields
            if name == "slow":
                await conn.request(m.MetadataRequest(topics=[]))
            else:
                await conn.request(m.FindCoordinatorRequest(key_type=0, coordinator_keys=[name]))
            answered[name] = trio.current_time()
            if len(answered) == fast_first:
                fast_answered.set()

        async with trio.open_nursery() as askers:
            names = [f"fast {i}" for i in range(fast_first)] + ["slow"]
            names += [f"behind {i}" for i in range(8 - len(names))] + ["ninth"]
            for name in names:  # in this order (trio runs tasks started together in any order)
                await askers.start(ask, name)
            assert conn.in_flight == 8 and not answered
            await fast_answered.wait()
            start = max(answered.values())
            for _ in range(100_000):  # polled on the virtual clock, a tenth of REFILL_DELAY apart
                if conn.in_flight == 9 - fast_first:  # the ninth took a slot the fast answers freed
                    break
                await trio.sleep(REFILL_DELAY / 10)
            took_slot = trio.current_time() - start
    return took_slot, answered["ninth"] - start


async def test_a_freed_slot_waits_at_most_the_refill_delay_for_company(clock: trio.testing.MockClock) -> None:
    """One answer frees one slot of eight: the request waiting for it is sent REFILL_DELAY
    later (in case more answers come to share the write), not held until the slow answer."""
    with trio.fail_after(1000):
        took_slot, answered = await _slot_refill_delay(fast_first=1)
    assert REFILL_DELAY - 1e-9 <= took_slot < REFILL_DELAY * 1.5  # floats on the virtual clock
    assert answered >= 100  # it queued behind the slow answer at the broker, as sent requests do


async def test_a_quarter_of_the_slots_freed_are_refilled_at_once(clock: trio.testing.MockClock) -> None:
    with trio.fail_after(1000):
        took_slot, answered = await _slot_refill_delay(fast_first=2)
    assert took_slot < REFILL_DELAY / 2  # at once, not when the alarm rings
    assert answered >= 100
