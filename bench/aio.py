"""The asyncio driver's benchmarks, against one local Tansu broker started for the section.

1. Connect + negotiate + close, many times over, inside one running asyncio
   loop: ``kafkacompat.aio.open_connection`` against the same bytes on an
   asyncio socket (``asyncio.open_connection``, one hand-built ApiVersions v4
   request, the whole reply read, closed) and against aiokafka's
   ``create_conn`` (TCP + ApiVersions v0).  Targets: at most 1.2x the asyncio
   socket, and faster than aiokafka.  Every contender must have negotiated the
   API table the socket's reply holds.
2. 1000 single-key FindCoordinator v3 requests pipelined on one connection
   (``asyncio.gather`` of 1000 ``request`` calls): the client CPU per request
   (process time, which excludes the broker), for reference beside the trio
   driver's figure in the transport section.
3. Peak RSS of a fresh ``python -c`` that imports ``kafkacompat.aio`` and
   makes one negotiated connection.  Issue 14 asked for under 20 MiB, but
   ``import asyncio`` alone (printed beside it) peaks at about 19.3 MiB,
   because asyncio imports ssl whether or not a program uses TLS.  So the
   target is the trio driver's, over its own runtime: at most ``import
   asyncio`` + 2 MiB, both measured in the same run.

Ratios are the reference's time (or RSS) over kafkacompat's, as everywhere in
``make bench``; every loop is bounded by a count and a deadline and all
traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import os
import struct
import tempfile
import time
from collections.abc import Awaitable, Callable

from bench.common import BenchConfig, Row, format_seconds, join
from bench.transport import (
    IO_TIMEOUT,
    KAFKACOMPAT,
    MIB,
    RSS_BUDGET_MIB,
    TRIO_RSS_ALLOWANCE_MIB,
    AtMost,
    ChildResult,
    ConnectRun,
    Contender,
    Plan,
    _dist_version,
    _first_api_difference,
    _import,
    check_reply,
    parse_api_versions_reply,
    ratio_of,
    raw_api_versions_request,
    run_child,
)
from kafkacompat.aio import open_connection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.protocol import messages
from kafkacompat.testing import TansuBroker

__all__ = ["TITLE", "run"]

TITLE = (
    "asyncio driver against a local Tansu broker: time per operation (median);"
    " ratio = reference / kafkacompat (higher is better)"
)

W_CONNECT = "1. connect + ApiVersions handshake + close, in a running asyncio loop (median; p90 in the note)"
W_PIPELINE = "2. 1000 single-key FindCoordinator v3 requests pipelined on one connection (client CPU)"
W_MEMORY = "3. peak RSS of a fresh `python -c`: import kafkacompat.aio + one negotiated connection"
N_REQUESTS = 1000

AsyncRunner = Callable[[int, float], Awaitable[ConnectRun]]

CHILD_AIO = """
import asyncio
from kafkacompat.aio import open_connection

async def main():
    async with asyncio.timeout(10):
        async with open_connection(HOST, PORT) as conn:
            return len(conn.handshake.api_ranges)

APIS = asyncio.run(main())
"""
# The floor under the RSS target: asyncio alone (it imports ssl, whichever program uses it).
CHILD_ASYNCIO = "import asyncio\nAPIS = 0\n"
# What kafkacompat may add to that floor: the same allowance as the trio driver over `import trio`.
ASYNCIO_RSS_ALLOWANCE_MIB = TRIO_RSS_ALLOWANCE_MIB


def asyncio_socket(host: str, port: int) -> AsyncRunner:
    correlation_id = 1
    request = raw_api_versions_request(correlation_id)

    async def run(count: int, deadline: float) -> ConnectRun:
        samples: list[float] = []
        frame = b""
        for _ in range(count):
            if samples and time.monotonic() > deadline:
                break
            start = time.perf_counter()
            async with asyncio.timeout(IO_TIMEOUT):
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(request)
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                if not 6 <= size <= MIB:
                    raise ValueError(f"ApiVersions reply of {size} bytes")
                frame = await reader.readexactly(size)
                writer.close()
                await writer.wait_closed()
            check_reply(frame, correlation_id)
            samples.append(time.perf_counter() - start)
        return ConnectRun(samples, parse_api_versions_reply(frame), 4)

    return run


def kafkacompat_aio(host: str, port: int) -> AsyncRunner:
    config = ConnectionConfig(connect_timeout=IO_TIMEOUT, request_timeout=IO_TIMEOUT)

    async def run(count: int, deadline: float) -> ConnectRun:
        samples: list[float] = []
        apis: dict[int, tuple[int, int]] = {}
        version = None
        for _ in range(count):
            if samples and time.monotonic() > deadline:
                break
            start = time.perf_counter()
            async with open_connection(host, port, config) as conn:
                assert conn.handshake is not None
                result = conn.handshake
            samples.append(time.perf_counter() - start)
            apis = {k: (r.lowest, r.highest) for k, r in result.api_ranges.items()}
            version = result.api_versions_version
        return ConnectRun(samples, apis, version)

    return run


def aiokafka_create_conn(host: str, port: int) -> AsyncRunner | None:
    modules, _ = _import("aiokafka.conn")
    if not modules:
        return None
    create_conn = modules[0].create_conn

    async def run(count: int, deadline: float) -> ConnectRun:
        samples: list[float] = []
        conn = None
        for _ in range(count):
            if samples and time.monotonic() > deadline:
                break
            start = time.perf_counter()
            async with asyncio.timeout(IO_TIMEOUT):
                conn = await create_conn(host, port, request_timeout_ms=int(IO_TIMEOUT * 1000))
                await conn.close()
            samples.append(time.perf_counter() - start)
        return ConnectRun(samples, dict(conn._versions) if conn else {}, 0)

    return run


async def connect_workload(host: str, port: int, plan: Plan) -> list[Row]:
    kc = Contender(f"{KAFKACOMPAT}.aio open_connection")
    floor = Contender("asyncio socket, hand-built ApiVersions v4")
    peer = Contender(f"aiokafka {_dist_version('aiokafka')} create_conn")
    runners: dict[int, AsyncRunner | None] = {
        id(kc): kafkacompat_aio(host, port),
        id(floor): asyncio_socket(host, port),
        id(peer): aiokafka_create_conn(host, port),
    }
    if runners[id(peer)] is None:
        peer.missing = "aiokafka is not installed"
    contenders = [kc, floor, peer]
    tables: dict[int, dict[int, tuple[int, int]]] = {}
    for contender in contenders:  # warm up, and learn what each negotiated
        runner = runners[id(contender)]
        if runner is None:
            continue
        try:
            tables[id(contender)] = (await runner(3, time.monotonic() + plan.loop_seconds)).apis
        except Exception as exc:
            contender.fail(exc)
    reference = tables.get(id(floor))
    for contender in (kc, peer):
        got = tables.get(id(contender))
        # aiokafka asks ApiVersions v0, whose answer Tansu gives for the same keys.
        if contender.usable and reference and got and got != reference:
            contender.error = "negotiated other API versions: " + _first_api_difference(got, reference)
    for _ in range(plan.connect_rounds):  # interleaved, so a slower machine hits every contender alike
        for contender in contenders:
            runner = runners[id(contender)]
            if runner is not None and contender.usable:
                try:
                    result = await runner(plan.connects_per_round, time.monotonic() + plan.loop_seconds)
                except Exception as exc:
                    contender.fail(exc)
                    continue
                contender.samples.extend(result.samples)
    base = kc.median
    rows = [_row(W_CONNECT, kc, None, None, join(f"{len(reference or {})} APIs", kc.stats_note()))]
    times_floor = ratio_of(base, floor.median)
    rows.append(
        _row(
            W_CONNECT, floor, ratio_of(floor.median, base), AtMost(1.2),
            join(f"kafkacompat = {times_floor:.2f}x this (target <= 1.2x)" if times_floor else "",
                 floor.stats_note()),
        )
    )
    rows.append(
        _row(W_CONNECT, peer, ratio_of(peer.median, base), 1.0,
             join("ApiVersions v0; target: kafkacompat faster", peer.stats_note()))
    )
    return rows


async def pipeline_workload(host: str, port: int, plan: Plan) -> list[Row]:
    config = ConnectionConfig(request_timeout=IO_TIMEOUT, max_in_flight=N_REQUESTS)
    keys = [f"group-{i}" for i in range(N_REQUESTS)]
    cpu: list[float] = []
    wall: list[float] = []
    async with open_connection(host, port, config) as conn:
        for _ in range(plan.lookup_rounds):
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            async with asyncio.timeout(60):
                answers = await asyncio.gather(
                    *(
                        conn.request(messages.FindCoordinatorRequest(key=key), version=3)
                        for key in keys
                    )
                )
            cpu.append((time.process_time() - cpu_start) / N_REQUESTS)
            wall.append(time.perf_counter() - wall_start)
            if len(answers) != N_REQUESTS:
                raise RuntimeError("not every request was answered")
    best = min(cpu)
    return [
        Row(
            W_PIPELINE, f"{KAFKACOMPAT}.aio request (x{N_REQUESTS})", best,
            note=join(f"client CPU per request, best of {len(cpu)}",
                      f"wall {format_seconds(min(wall))} per 1000 (Tansu included)",
                      "the trio driver's figure is in the transport section"),
        )
    ]


def memory_workload(host: str, port: int, plan: Plan) -> list[Row]:
    cases = {f"{KAFKACOMPAT}.aio open_connection": CHILD_AIO, "`import asyncio` alone": CHILD_ASYNCIO}
    results: dict[str, list[ChildResult]] = {}
    with tempfile.TemporaryDirectory(prefix="kafkacompat-bench-pyc-") as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        for impl, script in cases.items():
            try:
                run_child(script, host, port, env)  # warm-up: fills the bytecode cache
                results[impl] = [run_child(script, host, port, env) for _ in range(plan.rss_runs)]
            except (RuntimeError, OSError, ValueError) as exc:
                return [Row(W_MEMORY, impl, note=f"{type(exc).__name__}: {exc}", error=True)]
    (kc, kc_runs), (floor, floor_runs) = results.items()
    rss, seconds, modules = (_median(kc_runs, name) for name in ("peak_kib", "seconds", "modules"))
    floor_rss, floor_seconds = _median(floor_runs, "peak_kib"), _median(floor_runs, "seconds")
    allowed = floor_rss + ASYNCIO_RSS_ALLOWANCE_MIB * 1024
    return [
        Row(
            W_MEMORY, kc, seconds,
            ratio=allowed / rss, target=1.0,
            note=join(
                f"{rss / 1024:.1f} MiB peak RSS, {(rss - floor_rss) / 1024:.2f} MiB over `import asyncio`"
                f" (target <= {ASYNCIO_RSS_ALLOWANCE_MIB:g} MiB over it; ratio = allowed / RSS)",
                f"issue 14's < {RSS_BUDGET_MIB:g} MiB is "
                + ("met" if rss < RSS_BUDGET_MIB * 1024 else "below what asyncio leaves"),
                f"{int(modules)} modules, no trio",
            ),
        ),
        Row(W_MEMORY, floor, floor_seconds,
            note=f"{floor_rss / 1024:.1f} MiB peak RSS: asyncio and the ssl it imports, the floor"),
    ]


def _median(runs: list[ChildResult], attribute: str) -> float:
    values: list[float] = sorted(getattr(run, attribute) for run in runs)
    return values[len(values) // 2]


def _row(workload: str, contender: Contender, ratio: float | None, target: float | None, note: str) -> Row:
    if contender.missing:
        return Row(workload, contender.impl, note=contender.missing)
    if contender.error:
        return Row(workload, contender.impl, note=contender.error, error=True)
    return Row(workload, contender.impl, contender.median, ratio=ratio, target=target, note=note)


def run(config: BenchConfig) -> list[Row]:
    plan = Plan.make(config)
    with TansuBroker() as broker:

        async def network() -> list[Row]:
            rows = await connect_workload(broker.host, broker.port, plan)
            return rows + await pipeline_workload(broker.host, broker.port, plan)

        rows = asyncio.run(network())
        rows += memory_workload(broker.host, broker.port, plan)
    return rows
