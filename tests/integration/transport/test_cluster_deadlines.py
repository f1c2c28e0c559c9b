"""Every cluster call ends by its own deadline, whatever the broker does.

Each public call of the cluster layer (``CALLS``, held to ``ClusterCore`` by
the first test) is made by several concurrent callers, some with a
``request_timeout`` of their own and some with none (the config's
``call_timeout``), against a broker put in each state of ``FAULTS``: refusing,
black-holed, silent, resetting in the handshake or mid-answer, frozen in the
handshake or mid-stream.  The config's own step timeouts (10 s connect, 30 s
request, 5 attempts) are far longer than any deadline here, so only the
deadline can end the calls in time.  Every call's duration is compared with
its deadline.

trio runs on its autojump clock (``MockClock``) and asyncio on a loop whose
clock jumps over idle waits (``tests.support.virtual_asyncio``): durations are
exact, and the slack allowed (``SLACK``) is below the backstop of a call
(``OVERRUN``), so a wait left unbounded anywhere fails the test rather than
being rescued by the backstop.  A hypothesis property mixes faults across a
three-broker cluster.  The blocking ``SyncCluster`` and probe run on the real
clock, with a slack for a loaded machine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import inspect
import threading
import time
from contextlib import ExitStack

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkacompat.aio
from kafkacompat.blocking.connection import open_blocking_connection
from kafkacompat.blocking.probe import probe_broker
from kafkacompat.cluster.call_deadline import OVERRUN
from kafkacompat.cluster.core import ClusterCore
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError
from kafkacompat.protocol.messages import MetadataRequest
from kafkacompat.testing.cluster_faults import (
    BLOCKING_CALLS,
    CALLS,
    FAULTS,
    TimedCall,
    time_asyncio_calls,
    time_blocking_calls,
    time_trio_calls,
)
from kafkacompat.testing.emulator import EmulatedCluster, Fault, ThreadedCluster
from kafkacompat.testing.emulator_process import EmulatorProcess
from kafkacompat.testing.kill_traffic import DRIVERS, kill_and_restart
from kafkacompat.transport.cluster import connect
from kafkacompat.transport.connection import open_connection
from kafkacompat.transport.sync import connect_sync
from tests.support.virtual_asyncio import run_virtual

CALL_TIMEOUT = 2.5  # the config's deadline, for the callers that name none
CONFIG = ConnectionConfig(call_timeout=CALL_TIMEOUT)  # steps: 10 s connect, 30 s request, 5 attempts
DEADLINES = (None, 0.4, 1.3)  # each call is made once with each
SLACK = 0.01  # virtual clocks: the scheduling of the last step only; below OVERRUN
assert SLACK < OVERRUN


def _check(calls: list[TimedCall], expected: int, slack: float, label: str) -> None:
    """Every call was made, ended by its deadline plus ``slack``, answered or raised a typed error."""
    assert len(calls) == expected, (label, len(calls))
    late = [c for c in calls if c.overshoot > slack]
    assert not late, (label, late)
    strange = [c for c in calls if not c.typed]
    assert not strange, (label, strange)


def test_the_calls_are_every_public_cluster_call() -> None:
    """A public coroutine method added to the cluster layer must be added to the deadline tests."""
    public = {
        name for name, member in inspect.getmembers(ClusterCore, inspect.iscoroutinefunction)
        if not name.startswith("_") and name != "aclose"
    }
    named = {name.split()[0] for name in CALLS}
    assert named == public
    for name in public:
        assert "request_timeout" in inspect.signature(getattr(ClusterCore, name)).parameters, name


# -- trio, on the autojump clock -------------------------------------------------------------


def _every_call() -> list[tuple[str, float | None]]:
    return [(name, limit) for name in CALLS for limit in DEADLINES]


@pytest.mark.parametrize("fault", FAULTS)
async def test_every_trio_call_ends_by_its_deadline(
    fault: str, autojump_clock: trio.testing.MockClock
) -> None:
    with ExitStack() as holes:
        async with EmulatedCluster("4.0") as emulated, connect(emulated.bootstrap, CONFIG) as cluster:
            broker = emulated.brokers[0]
            await FAULTS[fault](broker, holes)
            for conn in cluster.connected().values():  # the calls must connect again
                await conn.aclose()
            timed = await time_trio_calls(cluster, broker.node_id, _every_call())
    _check(timed, len(CALLS) * len(DEADLINES), SLACK, fault)
    # Not vacuous: against a broker that never answers, calls do run until their deadline.
    if fault in ("black hole", "silent", "freeze in handshake"):
        assert any(o.duration >= o.deadline - SLACK for o in timed), timed


def test_every_trio_call_without_the_deadline_scope_would_overrun(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule broken on purpose: with a node's opening no longer cut at the deadline, the
    backstop (OVERRUN past it) is what ends the calls, and the check above sees it."""
    from kafkacompat.cluster import core

    async def unbounded(self: ClusterCore[object], node_id: int, broker: object, deadline: float, what: str):  # type: ignore[no-untyped-def]
        async with self._lock(node_id):
            return await self._open_node(broker, None, deadline)

    monkeypatch.setattr(core.ClusterCore, "_open_or_share", unbounded)

    async def scenario() -> list[TimedCall]:
        with ExitStack() as holes:
            async with EmulatedCluster("4.0") as emulated, connect(emulated.bootstrap, CONFIG) as cluster:
                broker = emulated.brokers[0]
                await FAULTS["silent"](broker, holes)
                for conn in cluster.connected().values():
                    await conn.aclose()
                return await time_trio_calls(cluster, broker.node_id, [("request", 0.4)])

    timed = trio.run(scenario, clock=trio.testing.MockClock(autojump_threshold=0))
    with pytest.raises(AssertionError):
        _check(timed, 1, SLACK, "unbounded")
    assert timed[0].duration == pytest.approx(0.4 + OVERRUN)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    faults=st.lists(st.sampled_from([None, *FAULTS]), min_size=3, max_size=3),
    calls=st.lists(
        st.tuples(st.sampled_from(list(CALLS)), st.one_of(st.none(), st.floats(0.05, 4.0))),
        min_size=1, max_size=24,
    ),
    closed=st.booleans(),
)
def test_property_trio_calls_end_by_their_deadlines(
    faults: list[str | None], calls: list[tuple[str, float | None]], closed: bool
) -> None:
    """Three brokers, each healthy or in any fault state; any calls with any deadlines, at once."""

    async def scenario() -> list[TimedCall]:
        with ExitStack() as holes:
            emulated = EmulatedCluster("4.0", brokers=3)
            async with emulated, connect(emulated.bootstrap, CONFIG) as cluster:
                await cluster.capabilities()  # every node connected before the faults
                for broker, fault in zip(emulated.brokers, faults, strict=True):
                    if fault is not None:
                        await FAULTS[fault](broker, holes)
                if closed:
                    for conn in cluster.connected().values():
                        await conn.aclose()
                return await time_trio_calls(cluster, emulated.brokers[0].node_id, calls)

    timed = trio.run(scenario, clock=trio.testing.MockClock(autojump_threshold=0))
    _check(timed, len(calls), SLACK, str(faults))


async def test_callers_waiting_for_a_node_share_its_failed_attempt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durations: list[float] = []
    errors: list[KafkaCompatError] = []
    async with EmulatedCluster("4.0") as emulated, connect(emulated.bootstrap, CONFIG) as cluster:
        broker = emulated.brokers[0]
        await cluster.request(broker.node_id, MetadataRequest(topics=[]))
        with ExitStack() as holes:
            await FAULTS["refused"](broker, holes)
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
            for _ in range(30):
                nursery.start_soon(call)
    # One retry loop ran: every caller failed when it did, not after the others' loops in turn.
    assert len(errors) == 30 and max(durations) <= min(durations) + SLACK, sorted(durations)
    assert len({str(error) for error in errors}) == 1


async def test_a_waiter_with_time_left_is_not_failed_by_another_callers_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A caller whose deadline cuts the node's opening leaves no failure to share: the next
    caller (whose deadline is later) opens the node itself and is answered."""
    async with EmulatedCluster("4.0") as emulated, connect(emulated.bootstrap, CONFIG) as cluster:
        broker = emulated.brokers[0]
        for conn in cluster.connected().values():
            await conn.aclose()
        fault = broker.add_fault(Fault.delay(1.0, 18, times=1))  # the next handshake takes 1 s
        results: dict[str, str] = {}

        async def call(name: str, limit: float) -> None:
            try:
                await cluster.request(broker.node_id, MetadataRequest(topics=[]), request_timeout=limit)
                results[name] = "answered"
            except KafkaCompatError as exc:
                results[name] = type(exc).__name__

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "short", 0.5)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(call, "long", 5.0)
        assert broker.faults.fired(fault) == 1
    assert results == {"short": "KafkaTimeoutError", "long": "answered"}


async def test_a_rebootstrap_that_hangs_ends_by_the_calls_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """KIP-1242: node 2 is believed to be where node 1 listens; node 1 answers 129, so the
    cluster bootstraps again, and the bootstrap broker then freezes on Metadata."""
    async with EmulatedCluster(["4.4/kraft-broker", "4.4/kraft-broker"]) as emulated:
        first = emulated.bootstrap.split(",")[0]
        async with connect(first, CONFIG) as cluster:
            right = cluster.brokers[2]
            stale = dataclasses.replace(right, host=cluster.brokers[1].host, port=cluster.brokers[1].port)
            cluster._metadata = dataclasses.replace(cluster.metadata, brokers={**cluster.brokers, 2: stale})
            emulated.brokers[0].add_fault(_FREEZE_METADATA)
            start = trio.current_time()
            with pytest.raises(KafkaTimeoutError, match="node 2"):
                await cluster.request(2, MetadataRequest(topics=[]), request_timeout=0.7)
            assert trio.current_time() - start <= 0.7 + SLACK
    answered_129 = [r for r in emulated.brokers[0].requests if r.api_key == 18 and "129" in r.outcome]
    assert answered_129  # the rebootstrap did happen


# -- asyncio, on a clock that jumps over idle waits --------------------------------------------


@pytest.mark.parametrize("fault", FAULTS)
def test_every_asyncio_call_ends_by_its_deadline(fault: str) -> None:
    """As on trio; and no task of the driver dies with an error nobody retrieves."""
    unretrieved: list[str] = []
    with ThreadedCluster("4.0") as emulated, ExitStack() as holes:
        broker = emulated.brokers[0]

        async def scenario() -> list[TimedCall]:
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(lambda _, context: unretrieved.append(str(context.get("exception"))))
            async with kafkacompat.aio.connect(emulated.bootstrap, CONFIG) as cluster:
                await asyncio.to_thread(
                    trio.from_thread.run, FAULTS[fault], broker, holes, trio_token=emulated._token
                )
                for conn in cluster.connected().values():
                    await conn.aclose()
                timed = await time_asyncio_calls(cluster, broker.node_id, _every_call())
            gc.collect()  # a task that died unretrieved says so when it is collected
            return timed

        timed = run_virtual(scenario())
    _check(timed, len(CALLS) * len(DEADLINES), SLACK, fault)
    assert not unretrieved, unretrieved


# -- blocking: SyncCluster and the probe, on the real clock ------------------------------------

REAL_DEADLINE = 0.5
REAL_SLACK = 0.25  # a loaded machine's scheduling, a thread hop each way


@pytest.mark.parametrize("fault", FAULTS)
def test_every_blocking_call_and_the_probe_end_by_their_deadline(fault: str) -> None:
    config = ConnectionConfig(call_timeout=REAL_DEADLINE)
    with ThreadedCluster("4.0") as emulated, ExitStack() as holes:
        broker = emulated.brokers[0]
        with connect_sync(emulated.bootstrap, config) as cluster:
            trio.from_thread.run(FAULTS[fault], broker, holes, trio_token=emulated._token)
            cluster._call(lambda: _close_all(cluster.cluster))
            probed: list[TimedCall] = []

            def probe() -> None:  # the blocking probe, beside the calls
                start = time.monotonic()
                try:
                    probe_broker(broker.host, broker.port, timeout=REAL_DEADLINE)
                    outcome = "answered"
                except KafkaCompatError as exc:
                    outcome = type(exc).__name__
                probed.append(TimedCall("probe", REAL_DEADLINE, time.monotonic() - start, outcome))

            prober = threading.Thread(target=probe)
            prober.start()
            calls = [(name, limit) for name in BLOCKING_CALLS for limit in (None, 0.3)]
            timed = time_blocking_calls(cluster, broker.node_id, calls, default=REAL_DEADLINE)
            prober.join(30)
    _check(timed + probed, len(calls) + 1, REAL_SLACK, fault)


async def _close_all(cluster: object) -> None:
    for conn in cluster.connected().values():  # type: ignore[attr-defined]
        await conn.aclose()


# -- kill -9 and a restart of a broker process, during traffic (real clock) ------------------

RECOVERY = 1.0  # every call started this long after the broker answers again is answered


@pytest.mark.parametrize("driver", DRIVERS)
def test_calls_keep_their_deadline_through_a_kill_9_and_a_restart(driver: str) -> None:
    """The broker process is SIGKILLed under 16 callers and started again on its port: no call
    outlives its deadline (plus a loaded machine's slack), and the calls are answered again."""
    with EmulatorProcess("4.0") as broker:
        run = kill_and_restart(driver, broker, callers=16, deadline=0.5)
        assert broker.kills == 1
    assert run.max_overshoot <= REAL_SLACK, sorted(run.calls, key=lambda c: -c.duration)[:5]
    during = run.during_outage()
    assert during and all(c.outcome != "answered" for c in during), during  # the outage was seen
    recovered = run.recovered_after()
    assert recovered is not None and recovered <= RECOVERY, (recovered, run.back_at, run.calls[-20:])


# -- one driver connection: a request into a broker that froze mid-stream ---------------------

FROZEN_DEADLINE = 0.5
# About 10 MB: more than loopback's socket buffers hold, so the write itself backs up.
HUGE = MetadataRequest(
    topics=[MetadataRequest.MetadataRequestTopic(name=f"{n:05}" + "x" * 32_000) for n in range(300)]
)
_FREEZE_METADATA = Fault.freeze(MetadataRequest.API_KEY)


async def test_a_trio_request_into_a_frozen_broker_ends_by_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with EmulatedCluster("4.0") as emulated:
        broker = emulated.brokers[0]
        broker.add_fault(_FREEZE_METADATA)
        async with open_connection(broker.host, broker.port) as conn:
            for message in (MetadataRequest(topics=[]), HUGE):  # the first freezes it, the second backs up
                start = trio.current_time()
                with pytest.raises(KafkaTimeoutError):
                    await conn.request(message, request_timeout=FROZEN_DEADLINE)
                assert trio.current_time() - start <= FROZEN_DEADLINE + SLACK


def test_an_asyncio_request_into_a_frozen_broker_ends_by_its_deadline() -> None:
    with ThreadedCluster("4.0") as emulated:
        broker = emulated.brokers[0]
        trio.from_thread.run_sync(broker.add_fault, _FREEZE_METADATA, trio_token=emulated._token)

        async def scenario() -> list[float]:
            loop = asyncio.get_running_loop()
            durations = []
            async with kafkacompat.aio.open_connection(broker.host, broker.port) as conn:
                for message in (MetadataRequest(topics=[]), HUGE):
                    start = loop.time()
                    with pytest.raises(KafkaTimeoutError):
                        await conn.request(message, request_timeout=FROZEN_DEADLINE)
                    durations.append(loop.time() - start)
            return durations

        durations = run_virtual(scenario())
    assert max(durations) <= FROZEN_DEADLINE + SLACK, durations


def test_a_blocking_request_into_a_frozen_broker_ends_by_its_deadline() -> None:
    with ThreadedCluster("4.0") as emulated:
        broker = emulated.brokers[0]
        trio.from_thread.run_sync(broker.add_fault, _FREEZE_METADATA, trio_token=emulated._token)
        with open_blocking_connection(broker.host, broker.port) as conn:
            for message in (MetadataRequest(topics=[]), HUGE):
                start = time.monotonic()
                with pytest.raises(KafkaTimeoutError):
                    conn.request(message, request_timeout=FROZEN_DEADLINE)
                assert time.monotonic() - start <= FROZEN_DEADLINE + REAL_SLACK
