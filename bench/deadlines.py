"""How far past its deadline a cluster call ends, per driver and per fault, on real sockets.

The tests hold every call to its deadline on virtual clocks, where a step
costs no time (``tests/integration/transport/test_cluster_deadlines.py``).
Here the clock is the real one: the emulator runs in a thread of its own
(``ThreadedCluster``), its one broker is put in each state of
``kafkacompat.testing.cluster_faults.FAULTS``, and every public cluster call
is made at once, twice each (``CALLS``; the blocking ``SyncCluster`` has its
own list, and the blocking probe is made beside them), each with a deadline of
``DEADLINE``.  The last row per driver is the ``kill -9`` of a broker process
under 16 callers (``kill_traffic``).

The figure is the overshoot: a call's duration minus its deadline, p100 (the
worst call) and p50, over ``repeats`` runs.  Calls that fail early (a refused
connection, a reset) have a negative overshoot.  Target: p100 at most
``BOUND`` (the column ``peer/kafkacompat`` reads bound / p100 here: at least
1.00x is met).  The machine's load is printed beside: timings on a shared
2-core machine move with it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
from contextlib import ExitStack
from typing import Any

import trio

from bench.common import BenchConfig, Row, join
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.testing.cluster_faults import (
    BLOCKING_CALLS,
    CALLS,
    FAULTS,
    TimedCall,
    time_asyncio_calls,
    time_blocking_calls,
    time_trio_calls,
)
from kafkacompat.testing.emulator import ThreadedCluster
from kafkacompat.testing.emulator_process import EmulatorProcess
from kafkacompat.testing.kill_traffic import DRIVERS, kill_and_restart

TITLE = "deadline overshoot of every cluster call, per driver and fault (real sockets)"

DEADLINE = 0.5
BOUND = 0.1  # the slack a call may take past its deadline, p100
CONFIG = ConnectionConfig(call_timeout=DEADLINE)  # steps: 10 s connect, 30 s request, 5 attempts


def _calls(driver: str) -> list[tuple[str, float | None]]:
    names = BLOCKING_CALLS if driver == "blocking" else tuple(CALLS)
    return [(name, limit) for name in names for limit in (None, DEADLINE)]


async def _close_all(cluster: Any) -> None:
    for conn in cluster.connected().values():
        await conn.aclose()


def _one_run(driver: str, fault: str) -> list[TimedCall]:
    with ThreadedCluster("4.0") as emulated, ExitStack() as holes:
        broker = emulated.brokers[0]

        def make_faulty() -> None:
            trio.from_thread.run(FAULTS[fault], broker, holes, trio_token=emulated._token)

        if driver == "trio":
            from kafkacompat.transport.cluster import connect

            async def on_trio() -> list[TimedCall]:
                async with connect(emulated.bootstrap, CONFIG) as cluster:
                    await trio.to_thread.run_sync(make_faulty)
                    await _close_all(cluster)
                    return await time_trio_calls(cluster, broker.node_id, _calls(driver))

            return trio.run(on_trio)
        if driver == "asyncio":
            import kafkacompat.aio

            async def on_asyncio() -> list[TimedCall]:
                async with kafkacompat.aio.connect(emulated.bootstrap, CONFIG) as cluster:
                    await asyncio.to_thread(make_faulty)
                    await _close_all(cluster)
                    return await time_asyncio_calls(cluster, broker.node_id, _calls(driver))

            return asyncio.run(on_asyncio())
        from kafkacompat.transport.sync import connect_sync

        with connect_sync(emulated.bootstrap, CONFIG) as cluster:
            make_faulty()
            cluster._call(lambda: _close_all(cluster.cluster))
            return time_blocking_calls(cluster, broker.node_id, _calls(driver), default=DEADLINE)


def _killed(driver: str) -> list[float]:
    with EmulatorProcess("4.0") as broker:
        run = kill_and_restart(driver, broker, callers=16, deadline=DEADLINE)
    return [c.duration - DEADLINE for c in run.calls]


def _row(workload: str, driver: str, overshoots: list[float], untyped: int) -> Row:
    worst = max(overshoots)
    ran_out = sum(1 for o in overshoots if o > -0.01)
    note = join(
        f"p100 {worst * 1e3:+.1f} ms, p50 {statistics.median(overshoots) * 1e3:+.1f} ms",
        f"{len(overshoots)} calls, {ran_out} ran to their deadline",
        f"{untyped} untyped errors" if untyped else "",
        f"load {os.getloadavg()[0]:.1f}",
    )
    ratio = BOUND / worst if worst > 0 else None
    return Row(
        workload, driver, max(worst, 0.0), ratio=ratio if worst > 0 else 99.0, target=1.0,
        note=note, error=untyped > 0,
    )


def run(config: BenchConfig) -> list[Row]:
    repeats = 1 if config.quick else 3
    rows: list[Row] = []
    for fault in FAULTS:
        for driver in DRIVERS:
            timed = [t for _ in range(repeats) for t in _one_run(driver, fault)]
            rows.append(_row(fault, driver, [t.overshoot for t in timed], sum(not t.typed for t in timed)))
    for driver in DRIVERS:
        overshoots = [o for _ in range(1 if config.quick else 2) for o in _killed(driver)]
        rows.append(_row("kill -9 and restart", driver, overshoots, 0))
    return rows
