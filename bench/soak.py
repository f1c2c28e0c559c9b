"""``make soak``: the library under steady load, on each driver, with the figures printed.

Four runs per driver (trio, asyncio, blocking), against real brokers in
processes of their own:

1. **connects**: ``--connects`` (5,000) connections opened (TCP and the
   ApiVersions handshake) and closed, one after another, against Tansu.  The
   process's RSS and open file descriptors are read every tenth of the run:
   after the first tenth (warm-up: imports, caches, the allocator's arenas)
   they must stay flat (descriptors: exactly; RSS: within ``RSS_DRIFT``).
2. **pipelined**: ``--requests`` (100,000) FindCoordinator requests on one
   connection, each with a key of its own, from 64 tasks at once (the blocking
   driver has no pipeline: one caller, one request at a time).  Every answer
   must name the key its request asked for.
3. **fan-out**: ``--connections`` (200) connections at once, ``--per-connection``
   (50) such requests on each (threads for the blocking driver).  Nothing may
   be misrouted: every answer names its own request's key.
4. **kill -9**: a ``kafkacompat emulate`` process is SIGKILLed under 16
   callers with a 0.5 s deadline each, and started again on its port
   (``kafkacompat.testing.kill_traffic``): no call may outlive its deadline
   by more than ``OVERSHOOT``, and the calls must be answered again within
   ``RECOVERY`` of the broker's return.

The exit status is 1 when a check fails.  Timings move with the machine's
load, printed beside them; the checks do not depend on speed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import trio

from kafkacompat.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from kafkacompat.testing.emulator_process import EmulatorProcess
from kafkacompat.testing.kill_traffic import DRIVERS, kill_and_restart
from kafkacompat.testing.tansu import TansuBroker

RSS_DRIFT = 4 * 1024 * 1024  # bytes of RSS growth allowed after the warm-up tenth of the connects
OVERSHOOT = 0.25  # seconds past its deadline a call may end during the kill (a loaded machine)
RECOVERY = 1.0  # seconds after the broker's return within which calls are answered again
PIPELINE_TASKS = 64


@dataclass
class Result:
    driver: str
    run: str
    figures: str
    problems: list[str] = field(default_factory=list)


def _rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _lookup(key: str) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(key_type=0, coordinator_keys=[key])  # v4+: the answer names the key


def _misrouted(key: str, response: FindCoordinatorResponse) -> bool:
    """Whether ``response`` answers another request than the one for ``key``."""
    return [c.key for c in response.coordinators] != [key]


# -- 1. connects -----------------------------------------------------------------------------


def _connects(driver: str, host: str, port: int, count: int) -> Result:
    samples: list[tuple[int, int, int]] = []  # (connects done, rss, fds)
    every = max(1, count // 10)

    def sample(done: int) -> None:
        if done % every == 0:
            samples.append((done, _rss(), _fds()))

    started = time.perf_counter()
    if driver == "trio":
        from kafkacompat.transport.connection import open_connection

        async def on_trio() -> None:
            for done in range(1, count + 1):
                async with open_connection(host, port):
                    pass
                sample(done)

        trio.run(on_trio)
    elif driver == "asyncio":
        import kafkacompat.aio

        async def on_asyncio() -> None:
            for done in range(1, count + 1):
                async with kafkacompat.aio.open_connection(host, port):
                    pass
                sample(done)

        asyncio.run(on_asyncio())
    else:
        from kafkacompat.blocking.connection import open_blocking_connection

        for done in range(1, count + 1):
            with open_blocking_connection(host, port):
                pass
            sample(done)
    seconds = time.perf_counter() - started
    _, rss_warm, fds_warm = samples[0]
    _, rss_end, fds_end = samples[-1]
    rss_peak = max(rss for _, rss, _ in samples)
    figures = (
        f"{count:,} in {seconds:.1f} s ({count / seconds:,.0f}/s); after the first {samples[0][0]:,}: "
        f"RSS {rss_warm / 2**20:.1f} -> {rss_end / 2**20:.1f} MiB (peak {rss_peak / 2**20:.1f}), "
        f"fds {fds_warm} -> {fds_end}"
    )
    problems = []
    if fds_end != fds_warm:
        problems.append(f"file descriptors grew from {fds_warm} to {fds_end}")
    if rss_peak - rss_warm > RSS_DRIFT:
        problems.append(f"RSS grew by {(rss_peak - rss_warm) / 2**20:.1f} MiB after the warm-up")
    return Result(driver, "connects", figures, problems)


# -- 2 and 3. requests, pipelined on one connection or spread over many -----------------------


async def _trio_requests(host: str, port: int, connections: int, per_connection: int, tasks: int) -> int:
    from kafkacompat.transport.connection import open_connection

    misrouted = 0

    async def one_connection(index: int) -> None:
        nonlocal misrouted
        async with open_connection(host, port) as conn:

            async def worker(first: int) -> None:
                nonlocal misrouted
                for n in range(first, per_connection, tasks):
                    key = f"c{index}-r{n}"
                    misrouted += _misrouted(key, await conn.request(_lookup(key)))

            async with trio.open_nursery() as nursery:
                for first in range(min(tasks, per_connection)):
                    nursery.start_soon(worker, first)

    async with trio.open_nursery() as nursery:
        for index in range(connections):
            nursery.start_soon(one_connection, index)
    return misrouted


async def _asyncio_requests(host: str, port: int, connections: int, per_connection: int, tasks: int) -> int:
    import kafkacompat.aio

    misrouted = 0

    async def one_connection(index: int) -> None:
        nonlocal misrouted
        async with kafkacompat.aio.open_connection(host, port) as conn:

            async def worker(first: int) -> None:
                nonlocal misrouted
                for n in range(first, per_connection, tasks):
                    key = f"c{index}-r{n}"
                    misrouted += _misrouted(key, await conn.request(_lookup(key)))

            await asyncio.gather(*(worker(first) for first in range(min(tasks, per_connection))))

    await asyncio.gather(*(one_connection(index) for index in range(connections)))
    return misrouted


def _blocking_requests(host: str, port: int, connections: int, per_connection: int) -> int:
    from kafkacompat.blocking.connection import open_blocking_connection

    misrouted = 0
    lock = threading.Lock()

    def one_connection(index: int) -> None:
        nonlocal misrouted
        wrong = 0
        with open_blocking_connection(host, port) as conn:
            for n in range(per_connection):
                key = f"c{index}-r{n}"
                wrong += _misrouted(key, conn.request(_lookup(key)))
        with lock:
            misrouted += wrong

    threads = [threading.Thread(target=one_connection, args=(index,)) for index in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return misrouted


def _requests(driver: str, run: str, host: str, port: int, connections: int, per_connection: int) -> Result:
    tasks = PIPELINE_TASKS if connections == 1 else per_connection
    started = time.perf_counter()
    if driver == "trio":
        misrouted = trio.run(_trio_requests, host, port, connections, per_connection, tasks)
    elif driver == "asyncio":
        misrouted = asyncio.run(_asyncio_requests(host, port, connections, per_connection, tasks))
    else:
        misrouted = _blocking_requests(host, port, connections, per_connection)
    seconds = time.perf_counter() - started
    total = connections * per_connection
    how = f"{tasks} callers a connection" if driver != "blocking" else "one caller a connection, in turn"
    figures = (
        f"{connections} connection(s) x {per_connection:,} = {total:,} requests ({how}) in {seconds:.1f} s "
        f"({total / seconds:,.0f}/s); {misrouted} misrouted"
    )
    return Result(driver, run, figures, [f"{misrouted} answers misrouted"] if misrouted else [])


# -- 4. kill -9 and restart ------------------------------------------------------------------


def _kill(driver: str) -> Result:
    with EmulatorProcess("4.0") as broker:
        run = kill_and_restart(driver, broker, callers=16, deadline=0.5)
    recovered = run.recovered_after()
    during = run.during_outage()
    answered = sum(c.outcome == "answered" for c in run.calls)
    figures = (
        f"{len(run.calls):,} calls ({answered:,} answered), {len(during)} during the outage; "
        f"p100 overshoot {run.max_overshoot * 1e3:+.1f} ms; answered again "
        + (f"{recovered:.2f} s after the broker's return" if recovered is not None else "never")
    )
    problems = []
    if run.max_overshoot > OVERSHOOT:
        problems.append(f"a call ended {run.max_overshoot:.3f} s past its deadline")
    if recovered is None or recovered > RECOVERY:
        problems.append(f"calls were not answered again within {RECOVERY} s")
    if any(c.outcome == "answered" for c in during):
        problems.append("a call was answered while the broker was dead")
    return Result(driver, "kill -9 and restart", figures, problems)


# -- the command -----------------------------------------------------------------------------


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--connects", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--per-connection", type=int, default=50)
    parser.add_argument("--driver", action="append", choices=DRIVERS, help="only this driver (repeatable)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    drivers = args.driver or list(DRIVERS)
    results: list[Result] = []
    started = time.perf_counter()

    def report(result: Result) -> None:
        results.append(result)
        verdict = "ok" if not result.problems else "FAILED: " + "; ".join(result.problems)
        load = os.getloadavg()[0]
        print(f"{result.driver:8}  {result.run:20}  {result.figures}  [{verdict}; load {load:.1f}]")
        sys.stdout.flush()

    print(f"make soak: drivers {', '.join(drivers)}; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with TansuBroker() as tansu:
        host, port = tansu.host, tansu.port
        runs: list[Callable[[str], Result]] = [
            lambda d: _connects(d, host, port, args.connects),
            lambda d: _requests(d, "pipelined", host, port, 1, args.requests),
            lambda d: _requests(d, "fan-out", host, port, args.connections, args.per_connection),
        ]
        for driver in drivers:
            for one in runs:
                report(one(driver))
    for driver in drivers:
        report(_kill(driver))
    failed = [r for r in results if r.problems]
    seconds = time.perf_counter() - started
    print(f"make soak: {len(results) - len(failed)} of {len(results)} runs passed in {seconds:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
