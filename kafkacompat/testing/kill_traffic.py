"""Traffic through a broker that is killed (``kill -9``) and started again, on any driver.

``kill_and_restart(driver, broker)`` connects a cluster of the named driver
(``trio``, ``asyncio`` or ``blocking``) to an ``EmulatorProcess``, starts
``callers`` tasks (threads for the blocking driver) that send Metadata to its
node one after another, each with ``request_timeout=deadline``, and then:
``kill_at`` seconds in, SIGKILLs the broker; ``restart_after`` seconds later
starts it again on its port (waiting until it answers); ``after`` seconds
later, stops the callers.  Every call is kept as a ``Sent``: when it started
(seconds from the start of traffic), how long it took and how it ended.  The
``KillRun`` also says when the broker was killed and when it answered again,
so a test (or the soak) can ask what happened during the outage, and how soon
the calls were answered again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import trio

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest
from kafkacompat.testing.emulator_process import EmulatorProcess

__all__ = ["DRIVERS", "KillRun", "Sent", "kill_and_restart"]

DRIVERS = ("trio", "asyncio", "blocking")
_PAUSE = 0.01  # between one caller's calls


@dataclass(frozen=True, slots=True)
class Sent:
    started: float  # seconds after the traffic started
    duration: float
    outcome: str  # "answered" or the kafkacompat error's name


@dataclass
class KillRun:
    driver: str
    deadline: float
    killed_at: float = 0.0
    restarting_at: float = 0.0  # when the broker was started again (no process before this)
    back_at: float = 0.0  # when the restarted broker answered its readiness probe
    calls: list[Sent] = field(default_factory=list)

    @property
    def max_overshoot(self) -> float:
        return max(c.duration - self.deadline for c in self.calls)

    def during_outage(self) -> list[Sent]:
        """Calls made wholly while the broker was down: begun after the kill, ended before its
        restart began.  (``back_at`` is later than the broker's real return by the readiness
        probe's own delay, which a loaded machine stretches past a deadline.)"""
        down = self.killed_at, self.restarting_at
        return [c for c in self.calls if down[0] < c.started and c.started + c.duration < down[1]]

    def recovered_after(self) -> float | None:
        """Seconds from the broker's return to the first call after which every call was answered."""
        since_back = [c for c in self.calls if c.started > self.back_at]
        last_failure = max((c.started for c in since_back if c.outcome != "answered"), default=self.back_at)
        later = [c.started for c in self.calls if c.started > last_failure]
        return min(later) - self.back_at if later else None


def _outcome(error: KafkaCompatError | None) -> str:
    return "answered" if error is None else type(error).__name__


def kill_and_restart(
    driver: str,
    broker: EmulatorProcess,
    *,
    callers: int = 16,
    deadline: float = 0.5,
    kill_at: float = 1.0,
    restart_after: float = 0.5,
    after: float = 2.0,
) -> KillRun:
    """Run the traffic described in the module documentation on ``driver``."""
    run = KillRun(driver, deadline)
    plan = (callers, kill_at, restart_after, after)
    if driver == "trio":
        trio.run(_trio, broker, run, plan)
    elif driver == "asyncio":
        asyncio.run(_asyncio(broker, run, plan))
    elif driver == "blocking":
        _blocking(broker, run, plan)
    else:
        raise ValueError(f"no driver {driver!r}: one of {', '.join(DRIVERS)}")
    return run


async def _trio(broker: EmulatorProcess, run: KillRun, plan: tuple[int, float, float, float]) -> None:
    from kafkacompat.transport.cluster import connect

    callers, kill_at, restart_after, after = plan
    async with connect(broker.bootstrap) as cluster:
        node_id = next(iter(cluster.brokers))
        start = trio.current_time()
        stop = trio.Event()

        async def caller() -> None:
            while not stop.is_set():
                began, error = trio.current_time(), None
                try:
                    await cluster.request(node_id, MetadataRequest(topics=[]), request_timeout=run.deadline)
                except KafkaCompatError as exc:
                    error = exc
                run.calls.append(Sent(began - start, trio.current_time() - began, _outcome(error)))
                await trio.sleep(_PAUSE)

        async with trio.open_nursery() as nursery:
            for _ in range(callers):
                nursery.start_soon(caller)
            await trio.sleep(kill_at)
            broker.kill()
            run.killed_at = trio.current_time() - start
            await trio.sleep(restart_after)
            run.restarting_at = trio.current_time() - start
            await trio.to_thread.run_sync(broker.start)
            run.back_at = trio.current_time() - start
            await trio.sleep(after)
            stop.set()


async def _asyncio(broker: EmulatorProcess, run: KillRun, plan: tuple[int, float, float, float]) -> None:
    import kafkacompat.aio

    callers, kill_at, restart_after, after = plan
    loop = asyncio.get_running_loop()
    async with kafkacompat.aio.connect(broker.bootstrap) as cluster:
        node_id = next(iter(cluster.brokers))
        start = loop.time()
        stop = asyncio.Event()

        async def caller() -> None:
            while not stop.is_set():
                began, error = loop.time(), None
                try:
                    await cluster.request(node_id, MetadataRequest(topics=[]), request_timeout=run.deadline)
                except KafkaCompatError as exc:
                    error = exc
                run.calls.append(Sent(began - start, loop.time() - began, _outcome(error)))
                await asyncio.sleep(_PAUSE)

        tasks = [asyncio.create_task(caller()) for _ in range(callers)]
        await asyncio.sleep(kill_at)
        broker.kill()
        run.killed_at = loop.time() - start
        await asyncio.sleep(restart_after)
        run.restarting_at = loop.time() - start
        await asyncio.to_thread(broker.start)
        run.back_at = loop.time() - start
        await asyncio.sleep(after)
        stop.set()
        await asyncio.gather(*tasks)


def _blocking(broker: EmulatorProcess, run: KillRun, plan: tuple[int, float, float, float]) -> None:
    from kafkacompat.transport.sync import connect_sync

    callers, kill_at, restart_after, after = plan
    lock = threading.Lock()
    stop = threading.Event()
    with connect_sync(broker.bootstrap) as cluster:
        node_id = next(iter(cluster.brokers))
        start = time.monotonic()

        def caller() -> None:
            while not stop.is_set():
                began, error = time.monotonic(), None
                try:
                    cluster.request(node_id, MetadataRequest(topics=[]), request_timeout=run.deadline)
                except KafkaCompatError as exc:
                    error = exc
                with lock:
                    run.calls.append(Sent(began - start, time.monotonic() - began, _outcome(error)))
                time.sleep(_PAUSE)

        threads = [threading.Thread(target=caller, daemon=True) for _ in range(callers)]
        for thread in threads:
            thread.start()
        time.sleep(kill_at)
        broker.kill()
        run.killed_at = time.monotonic() - start
        time.sleep(restart_after)
        run.restarting_at = time.monotonic() - start
        broker.start()
        run.back_at = time.monotonic() - start
        time.sleep(after)
        stop.set()
        for thread in threads:
            thread.join(30)
