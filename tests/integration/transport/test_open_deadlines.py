"""Every driver's ``open`` and ``reconnect`` end by their own deadline, whatever the broker does.

Issue 29: each step of a connection's setup had a bound of its own (10 s to
connect, 30 s per request), the whole had none on trio and asyncio.  Now
``open``, ``reconnect`` and ``open_connection`` take ``timeout`` (default: the
config's ``call_timeout``), handed to ``ClientConnection.next_step(now,
overall=...)``.  Each driver opens against a broker put in each handshake
state of ``cluster_faults.FAULTS`` (refused, black-holed, silent, reset on
ApiVersions, frozen on ApiVersions), with every timeout of ``TIMEOUTS`` (None:
the config's), by a fresh ``open_connection`` and by ``reconnect`` of a
connection that was open before the fault.  The config's step bounds are far
longer than any deadline here, and its ``first_contact_timeout`` is off, so
only the deadline can end the calls in time; against a broker that never
answers, they do run until it (not vacuous).

trio runs on its autojump clock and asyncio on ``virtual_asyncio``'s: exact
durations, a slack below any scheduling of note.  The blocking driver runs on
the real clock, its calls side by side in threads, with a loaded machine's
slack.  The last test breaks the rule on purpose (the trio setup given no
overall deadline) and sees the check fail.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack

import pytest
import trio
import trio.testing

import kafkacompat.aio
from kafkacompat.blocking.connection import BlockingConnection, open_blocking_connection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import KafkaCompatError
from kafkacompat.testing.cluster_faults import FAULTS, TimedCall
from kafkacompat.testing.emulator import EmulatedCluster, ThreadedCluster
from kafkacompat.transport import negotiate
from kafkacompat.transport.connection import BrokerConnection, open_connection
from tests.support.virtual_asyncio import run_virtual

CALL_TIMEOUT = 2.5  # the config's, for the opens that name no timeout
# Steps: 10 s to connect, 30 s per request; silence is not cut short at first contact either.
CONFIG = ConnectionConfig(call_timeout=CALL_TIMEOUT, first_contact_timeout=None)
TIMEOUTS = (None, 0.4, 1.3)
HANDSHAKE_FAULTS = ("refused", "black hole", "silent", "reset in handshake", "freeze in handshake")
HANGING = ("black hole", "silent", "freeze in handshake")  # a broker that never answers: to the deadline
SLACK = 0.01  # virtual clocks: the scheduling of the last step only


def _check(timed: list[TimedCall], fault: str, slack: float) -> None:
    assert len(timed) == 2 * len(TIMEOUTS), timed
    late = [t for t in timed if t.overshoot > slack]
    assert not late, (fault, late)
    # A reset on ApiVersions may be answered on the next connection, a step lower: any typed end.
    strange = [t for t in timed if not t.typed or (t.outcome == "answered" and fault != "reset in handshake")]
    assert not strange, (fault, strange)
    if fault in HANGING:
        assert all(t.duration >= t.deadline - slack for t in timed), (fault, timed)


def _outcome(error: BaseException | None) -> str:
    if error is None:
        return "answered"
    return type(error).__name__ if isinstance(error, KafkaCompatError) else f"!{type(error).__name__}"


async def _timed(
    what: str, limit: float | None, clock: Callable[[], float], opening: Callable[[], Awaitable[object]]
) -> TimedCall:
    start, error = clock(), None
    try:
        await opening()
    except BaseException as exc:  # the outcome is recorded and checked
        error = exc
    return TimedCall(what, limit or CALL_TIMEOUT, clock() - start, _outcome(error))


# -- trio, on the autojump clock -------------------------------------------------------------------


@pytest.mark.parametrize("fault", HANDSHAKE_FAULTS)
async def test_trio_open_and_reconnect_end_by_their_deadline(
    fault: str, autojump_clock: trio.testing.MockClock
) -> None:
    timed: list[TimedCall] = []
    with ExitStack() as holes:
        async with EmulatedCluster("4.0") as emulated:
            broker = emulated.brokers[0]
            opened = [BrokerConnection(broker.host, broker.port, CONFIG) for _ in TIMEOUTS]
            for conn in opened:
                await conn.open()
            await FAULTS[fault](broker, holes)

            async def fresh(limit: float | None) -> None:
                async with open_connection(broker.host, broker.port, CONFIG, timeout=limit):
                    pass

            async def one(conn: BrokerConnection, limit: float | None) -> None:
                now = trio.current_time
                timed.append(await _timed("reconnect", limit, now, lambda: conn.reconnect(timeout=limit)))
                timed.append(await _timed("open_connection", limit, now, lambda: fresh(limit)))

            async with trio.open_nursery() as nursery:
                for conn, timeout in zip(opened, TIMEOUTS, strict=True):
                    nursery.start_soon(one, conn, timeout)
            for conn in opened:
                await conn.aclose()
    _check(timed, fault, SLACK)


# -- asyncio, on a virtual clock ---------------------------------------------------------------------


@pytest.mark.parametrize("fault", HANDSHAKE_FAULTS)
def test_asyncio_open_and_reconnect_end_by_their_deadline(fault: str) -> None:
    with ThreadedCluster("4.0") as emulated, ExitStack() as holes:
        broker = emulated.brokers[0]

        async def scenario() -> list[TimedCall]:
            loop = asyncio.get_running_loop()
            opened = [kafkacompat.aio.BrokerConnection(broker.host, broker.port, CONFIG) for _ in TIMEOUTS]
            for conn in opened:
                await conn.open()
            token = emulated._token
            await asyncio.to_thread(trio.from_thread.run, FAULTS[fault], broker, holes, trio_token=token)

            async def fresh(limit: float | None) -> None:
                async with kafkacompat.aio.open_connection(broker.host, broker.port, CONFIG, timeout=limit):
                    pass

            async def one(conn: kafkacompat.aio.BrokerConnection, limit: float | None) -> list[TimedCall]:
                now = loop.time
                return [
                    await _timed("reconnect", limit, now, lambda: conn.reconnect(timeout=limit)),
                    await _timed("open_connection", limit, now, lambda: fresh(limit)),
                ]

            runs = await asyncio.gather(*(one(c, t) for c, t in zip(opened, TIMEOUTS, strict=True)))
            for conn in opened:
                await conn.aclose()
            return [t for run in runs for t in run]

        timed = run_virtual(scenario())
    _check(timed, fault, SLACK)


# -- blocking, on the real clock ---------------------------------------------------------------------

REAL_TIMEOUTS = (None, 0.3, 0.6)
REAL_CALL_TIMEOUT = 0.5
REAL_SLACK = 0.25  # a loaded machine's scheduling, a thread hop each way


@pytest.mark.parametrize("fault", HANDSHAKE_FAULTS)
def test_blocking_open_and_reconnect_end_by_their_deadline(fault: str) -> None:
    config = dataclasses.replace(CONFIG, call_timeout=REAL_CALL_TIMEOUT)
    timed: list[TimedCall] = []
    with ThreadedCluster("4.0") as emulated, ExitStack() as holes:
        broker = emulated.brokers[0]
        opened = [open_blocking_connection(broker.host, broker.port, config) for _ in REAL_TIMEOUTS]
        trio.from_thread.run(FAULTS[fault], broker, holes, trio_token=emulated._token)

        def timed_call(what: str, timeout: float | None, opening: Callable[[], object]) -> None:
            start, error = time.monotonic(), None
            try:
                opening()
            except BaseException as exc:  # the outcome is recorded and checked
                error = exc
            took = time.monotonic() - start
            timed.append(TimedCall(what, timeout or REAL_CALL_TIMEOUT, took, _outcome(error)))

        def fresh(timeout: float | None) -> None:
            with open_blocking_connection(broker.host, broker.port, config, timeout=timeout):
                pass

        def one(conn: BlockingConnection, timeout: float | None) -> None:
            timed_call("reconnect", timeout, lambda: conn.reconnect(timeout=timeout))
            timed_call("open_blocking_connection", timeout, lambda: fresh(timeout))

        pairs = zip(opened, REAL_TIMEOUTS, strict=True)
        threads = [threading.Thread(target=one, args=pair) for pair in pairs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        for conn in opened:
            conn.close()
    assert len(timed) == 2 * len(REAL_TIMEOUTS), timed
    late = [t for t in timed if t.overshoot > REAL_SLACK]
    assert not late, (fault, late)
    assert all(t.typed and (t.outcome != "answered" or fault == "reset in handshake") for t in timed), timed
    if fault in HANGING:
        assert all(t.duration >= t.deadline - REAL_SLACK for t in timed), (fault, timed)


# -- the rule broken on purpose --------------------------------------------------------------------


def test_a_trio_setup_without_its_overall_deadline_overruns(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``open`` no longer passing its deadline to the setup, a silent broker holds it for the
    request's 30 s, and the check above sees the overrun."""
    unbounded = negotiate.set_up

    async def set_up(protocol: object, host: str, port: int, config: object, overall: float) -> object:
        return await unbounded(protocol, host, port, config, math.inf)  # type: ignore[arg-type]

    monkeypatch.setattr("kafkacompat.transport.connection.set_up", set_up)

    async def scenario() -> list[TimedCall]:
        with ExitStack() as holes:
            async with EmulatedCluster("4.0") as emulated:
                broker = emulated.brokers[0]
                await FAULTS["silent"](broker, holes)

                async def fresh() -> None:
                    async with open_connection(broker.host, broker.port, CONFIG, timeout=0.4):
                        pass

                return [await _timed("open_connection", 0.4, trio.current_time, fresh)]

    timed = trio.run(scenario, clock=trio.testing.MockClock(autojump_threshold=0))
    with pytest.raises(AssertionError):
        _check(timed * len(TIMEOUTS) * 2, "silent", SLACK)
    assert timed[0].duration == pytest.approx(CONFIG.request_timeout)
