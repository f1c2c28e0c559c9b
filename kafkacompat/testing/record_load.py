"""Load for ``kafkacompat record``: many client ids, many request pairs, and a latency probe.

Two programs, each run in a process of its own so the recorder under test
does not share an interpreter with them:

``python -m kafkacompat.testing.record_load broker``
    listens on 127.0.0.1, prints its port, and answers every request frame
    at once with a bare response header (its correlation id): a broker whose
    own cost is as small as can be, so what is measured is the recorder's.

``python -m kafkacompat.testing.record_load load PROXY BROKER --clients N --pairs P``
    for each of N client ids opens one connection through PROXY and sends P
    requests with distinct (API key, version) pairs, pipelined, waiting for
    every answer; meanwhile one request at a time goes through PROXY and one
    straight to BROKER, and each round trip is timed.  Then for ``--settle``
    seconds the book is full and the clients come back, 50 a second, each
    changing its profile, while the probes go on.  Prints one JSON object:
    requests sent, load seconds, and the round trips through the proxy and
    direct (p50, p99, max, in ms) under the load and after it.

Requests carry a header and no body: the recorder reads headers only.

``record_in_process`` runs the recorder (``RecordProxy`` and ``ProfileWriter``)
in the calling process under the load program, with ``LoopSteps`` counting how
long each task step held the trio thread: the longest step of the writer is
the longest the writer kept every proxied byte waiting, measured in CPU time
of that thread so a loaded machine does not inflate it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import struct
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import trio

from kafkacompat.protocol import framing, messages
from kafkacompat.recorder import ProfileWriter, RecordProxy, freeze_start_up

__all__ = [
    "LoopSteps",
    "frozen_start_up",
    "main",
    "record_in_process",
    "request_frame",
    "request_pairs",
    "summary",
]

_SKIPPED = {0, 17, 18}  # Produce (acks are read), SaslHandshake (tokens), ApiVersions (software)


def request_pairs(count: int) -> list[tuple[int, int]]:
    """``count`` distinct (API key, version) pairs whose request header the recorder can read."""
    keys = [k for k in range(1, 32767) if k not in _SKIPPED]
    pairs: list[tuple[int, int]] = []
    for version in range(math.ceil(count / len(keys)) + 1):
        pairs.extend((key, version) for key in keys)
        if len(pairs) >= count:
            break
    return pairs[:count]


def request_frame(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    """A size-prefixed request with a header and an empty body."""
    name = client_id.encode()
    header = struct.pack(">hhih", api_key, version, correlation_id, len(name)) + name
    if api_key in messages.FIRST_FLEXIBLE and framing.request_header_version(api_key, version) == 2:
        header += b"\x00"  # no tagged fields
    return struct.pack(">i", len(header)) + header


# -- the broker ----------------------------------------------------------------------------


async def _answer(stream: trio.SocketStream) -> None:
    pending = bytearray()
    try:
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return
            pending += data
            out = bytearray()
            while len(pending) >= 4:
                (size,) = struct.unpack_from(">i", pending, 0)
                if len(pending) < 4 + size:
                    break
                out += struct.pack(">i", 4) + pending[8:12]  # the correlation id, after key and version
                del pending[: 4 + size]
            if out:
                await stream.send_all(bytes(out))
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        return


async def _broker() -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    print(listeners[0].socket.getsockname()[1], flush=True)
    await trio.serve_listeners(_answer, listeners)


# -- the load ------------------------------------------------------------------------------


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


async def _one_client(address: tuple[str, int], client_id: str, pairs: list[tuple[int, int]]) -> int:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        frames = b"".join(request_frame(k, v, n, client_id) for n, (k, v) in enumerate(pairs))
        await stream.send_all(frames)
        wanted, got = 8 * len(pairs), 0
        while got < wanted:
            data = await stream.receive_some(65536)
            if not data:
                raise ConnectionError(f"{client_id}: closed after {got} of {wanted} answer bytes")
            got += len(data)
    return len(pairs)


async def _probe(
    address: tuple[str, int], times: list[list[tuple[float, float]]], stop: trio.Event
) -> None:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        correlation = 0
        while not stop.is_set():
            correlation += 1
            frame = request_frame(3, 1, correlation, "latency-probe")
            started = time.perf_counter()
            await stream.send_all(frame)
            got = 0
            while got < 8:
                data = await stream.receive_some(8 - got)
                if not data:
                    raise ConnectionError("the probe's connection was closed")
                got += len(data)
            times[-1].append((time.time(), time.perf_counter() - started))
            await trio.sleep(0.002)


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    """Count, p50, p99 and max of the round trips of (wall time, round trip) samples, in ms."""
    if not samples:
        return {"count": 0}
    ordered = sorted(rtt for _, rtt in samples)

    def at(q: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    top = round(1000 * ordered[-1], 3)
    return {"count": len(ordered), "p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": top}


async def _churn(
    proxy: tuple[str, int], clients: int, pairs: list[tuple[int, int]], stop: trio.Event
) -> None:
    """After the load, clients come back one at a time (50 a second): their profiles keep changing."""
    number = 0
    while not stop.is_set():
        await _one_client(proxy, f"load-client-{number % clients}", pairs[:1])
        number += 1
        await trio.sleep(0.02)


async def _load(
    proxy: tuple[str, int], broker: tuple[str, int], clients: int, pairs: int, parallel: int, settle: float
) -> dict[str, Any]:
    chosen = request_pairs(pairs)
    through: list[list[tuple[float, float]]] = [[]]
    direct: list[list[tuple[float, float]]] = [[]]
    stop = trio.Event()
    sent = 0
    limiter = trio.CapacityLimiter(parallel)

    async def client(number: int) -> None:
        nonlocal sent
        async with limiter:
            done = await _one_client(proxy, f"load-client-{number}", chosen)
            sent += done

    async with trio.open_nursery() as probes:
        probes.start_soon(_probe, proxy, through, stop)
        probes.start_soon(_probe, broker, direct, stop)
        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for number in range(clients):
                nursery.start_soon(client, number)
        loaded = time.perf_counter() - started
        through.append([])
        direct.append([])
        if settle > 0:
            probes.start_soon(_churn, proxy, clients, chosen, stop)
            await trio.sleep(settle)
        stop.set()
    return {
        "clients": clients,
        "pairs": pairs,
        "requests": sent,
        "load_s": round(loaded, 3),
        "under_load": {"through_proxy": summary(through[0]), "direct": summary(direct[0])},
        "after_load": {"through_proxy": summary(through[1]), "direct": summary(direct[1])},
        "after_load_samples": through[1],  # (wall time, round trip): to split by what the writer did
    }


@contextlib.contextmanager
def frozen_start_up() -> Iterator[None]:
    """As ``kafkacompat record`` starts: ``freeze_start_up`` (around ``trio.run(record_in_process,
    ...)``); on leaving, what it froze is collectable again (this process may be a test run's)."""
    freeze_start_up()
    try:
        yield
    finally:
        gc.unfreeze()


class LoopSteps(trio.abc.Instrument):
    """The CPU time of each task step on the trio thread: the writer's, and everyone else's."""

    def __init__(self) -> None:
        self.writer: list[float] = []
        self.others_longest = 0.0
        self.others_longest_name = ""
        self.collections: list[float] = []  # full garbage collections (generation 2), wherever they fell
        self._started = 0.0
        self._collecting = 0.0

    def before_run(self) -> None:
        gc.callbacks.append(self._collection)

    def after_run(self) -> None:
        gc.callbacks.remove(self._collection)

    def _collection(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._collecting = time.thread_time()
        else:
            self.collections.append(time.thread_time() - self._collecting)

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._started = time.thread_time()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        spent = time.thread_time() - self._started
        if "ProfileWriter" in task.name:
            self.writer.append(spent)
        elif spent > self.others_longest:
            self.others_longest, self.others_longest_name = spent, task.name

    def summary(self) -> dict[str, float]:
        return {
            "writer_steps": len(self.writer),
            "writer_longest_ms": round(1000 * max(self.writer, default=0.0), 3),
            "writer_total_ms": round(1000 * sum(self.writer), 3),
            "others_longest_ms": round(1000 * self.others_longest, 3),
            "full_collections": len(self.collections),
            "full_collection_longest_ms": round(1000 * max(self.collections, default=0.0), 3),
        }


async def record_in_process(
    broker: str,
    out: Path,
    clients: int,
    pairs: int,
    *,
    write: bool = True,
    settle: float = 1.0,
    alternate: float = 0.0,
) -> dict[str, Any]:
    """Run the recorder here in front of ``broker`` and the load program through it; its report.

    ``write`` False leaves the writer out.  ``alternate`` > 0 runs the writer
    for that many seconds, then leaves it out as long, and so on: the report's
    ``windows`` (start, end, writer on) split the probe's samples of one run.
    """
    host, port = _address(broker)
    proxy = RecordProxy(host, port)
    writer = ProfileWriter(proxy.book, out, sys.stderr)

    windows: list[tuple[float, float, bool]] = []

    async def alternating() -> None:
        on = True
        while True:
            started = time.time()
            async with trio.open_nursery() as window:
                if on:
                    window.start_soon(writer.run)  # its own task, as LoopSteps knows it
                await trio.sleep(alternate)
                window.cancel_scope.cancel()
            windows.append((started, time.time(), on))
            on = not on

    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.serve)
        if write:
            nursery.start_soon(alternating if alternate > 0 else writer.run)
        command = [sys.executable, "-m", __name__, "load", proxy.address, broker]
        command += ["--clients", str(clients), "--pairs", str(pairs), "--settle", str(settle)]
        done = await trio.run_process(command, capture_stdout=True)
        nursery.cancel_scope.cancel()
    if write:
        writer.write_now()  # the last write, as the CLI's
    report: dict[str, Any] = json.loads(done.stdout)
    report["book"] = proxy.book.progress()
    report["windows"] = windows
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkacompat.testing.record_load")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("broker", help="answer every request with a bare header")
    load = commands.add_parser("load", help="push client ids and request pairs through a recorder")
    load.add_argument("proxy")
    load.add_argument("broker")
    load.add_argument("--clients", type=int, default=1000)
    load.add_argument("--pairs", type=int, default=30)
    load.add_argument("--parallel", type=int, default=32, help="client connections open at once")
    load.add_argument("--settle", type=float, default=3.0, help="seconds of probing after the load")
    args = parser.parse_args(argv)
    if args.command == "broker":
        with contextlib.suppress(KeyboardInterrupt):
            trio.run(_broker)
        return 0
    proxy, broker = _address(args.proxy), _address(args.broker)
    result = trio.run(_load, proxy, broker, args.clients, args.pairs, args.parallel, args.settle)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
