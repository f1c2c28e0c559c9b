"""What ``kafkacompat record`` costs the traffic it forwards, at 1,000 client ids.

The load is ``kafkacompat.testing.record_load`` against its bare broker (a
process of its own): 1,000 client ids, each on its own connection with its
request pairs pipelined (32 connections at once), then 16 s in which the
clients come back, 50 a second, each changing its profile, so the writer has
work every cycle (the case where the old writer, which rewrote the whole book
in the event loop, stalled every connection).  Meanwhile one request at a time
goes through the recorder and one straight to the broker; the rows give the
p99 round trip of each.

1. The recorder in this process (``record_in_process``), its writer
   running for one second, then left out for one, and so on: the probe's
   round trips after the load are split by whether the writer ran while each
   was in flight, so both halves share the machine's load of the moment.
   Beside them the direct p99, and the writer's longest step on the trio
   thread (CPU time: the longest it kept every proxied byte waiting).
   Target: the writer adds at most 5 ms to the p99, and its longest step is
   under 10 ms.
2. What stalls every proxied connection at once, in CPU time of the trio
   thread: the longest full garbage collection and the longest step of any
   task, with start-up frozen as ``kafkacompat record`` does
   (``freeze_start_up``) and, before that, without.  Target: no full
   collection over 10 ms.
3. Peak RSS of ``kafkacompat record`` (the CLI, a process of its own) over
   the same load (its writer always on), against the same process idle.  Target: at most 32 MiB
   over idle (the book's bound, ``MAX_PAIRS``, and one line per client).

Latency under the load itself is the proxy parsing 32 pipelined connections
on one core, with or without the writer; it is printed for reference.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from bench.common import BenchConfig, Row, format_table, join
from kafkacompat.testing.record_load import LoopSteps, frozen_start_up, record_in_process, summary

TITLE = "kafkacompat record: added latency and footprint at 1,000 client ids"

ADDED_P99_MS = 5.0
WRITER_STEP_MS = 10.0
FULL_COLLECTION_MS = 10.0
RSS_OVER_IDLE_MIB = 32.0
SETTLE = 16.0  # seconds after the load: eight windows with the writer, eight without


def _broker() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkacompat.testing.record_load", "broker"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, f"127.0.0.1:{int(process.stdout.readline())}"


def _in_process(broker: str, clients: int, pairs: int, *, frozen: bool = True) -> dict[str, Any]:
    steps = LoopSteps()
    with tempfile.TemporaryDirectory() as folder:
        run = functools.partial(
            record_in_process, broker, Path(folder) / "p.jsonl", clients, pairs, settle=SETTLE, alternate=1.0
        )
        with frozen_start_up() if frozen else contextlib.nullcontext():
            report = trio.run(run, instruments=[steps])
    report.update(steps.summary())
    return report


def _split(report: dict[str, Any]) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The probe's samples after the load, by whether the writer ran while each was in flight."""
    on: list[tuple[float, float]] = []
    off: list[tuple[float, float]] = []
    windows = report["windows"]
    for ended, rtt in report["after_load_samples"]:
        sent = ended - rtt
        for start, end, writing in windows:
            if start <= sent and ended <= end:  # wholly inside one window
                (on if writing else off).append((ended, rtt))
                break
    return on, off


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc")


def _cli_rss(broker: str, clients: int, pairs: int) -> tuple[float, float]:
    """Peak RSS of the CLI recording, idle and after the load, in MiB."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "kafkacompat.cli", "record", "--listen", "127.0.0.1:0"]
        process = subprocess.Popen(
            [*command, "--upstream", broker, "--out", str(Path(folder) / "p.jsonl")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            listen = process.stdout.readline().split()[1]
            idle = _peak_rss_kib(process.pid)
            load = [sys.executable, "-m", "kafkacompat.testing.record_load", "load", listen, broker]
            subprocess.run(
                [*load, "--clients", str(clients), "--pairs", str(pairs), "--settle", "3"],
                check=True,
                capture_output=True,
                timeout=900,
            )
            peak = _peak_rss_kib(process.pid)
        finally:
            process.terminate()
            process.communicate(timeout=120)
    return idle / 1024, peak / 1024


def _ms(value: float) -> float:
    return value / 1000


def _stall_row(workload: str, impl: str, report: dict[str, Any]) -> Row:
    longest = report["full_collection_longest_ms"]
    return Row(
        workload,
        impl,
        _ms(longest),
        note=join(
            f"{report['full_collections']} full collection(s), the longest {longest:.2f} ms CPU "
            f"(target <= {FULL_COLLECTION_MS:g})" + ("" if longest <= FULL_COLLECTION_MS else " MISSED"),
            f"longest step of any task {report['others_longest_ms']:.2f} ms CPU",
            f"load {os.getloadavg()[0]:.1f}",
        ),
    )


def _size_rows(broker: str, clients: int, pairs: int) -> list[Row]:
    before = _in_process(broker, clients, pairs, frozen=False)
    report = _in_process(broker, clients, pairs)
    on, off = (summary(samples) for samples in _split(report))
    after = f"{clients:,} client ids x {pairs} pairs: p99 round trip after the load"
    under = f"{clients:,} client ids x {pairs} pairs: p99 round trip under the load (reference)"
    added = on["p99_ms"] - off["p99_ms"]
    longest = report["writer_longest_ms"]
    idle, peak = _cli_rss(broker, clients, pairs)
    stalls = f"{clients:,} client ids x {pairs} pairs: what stalls every connection (trio thread, CPU)"
    return [
        Row(after, "direct to the broker", _ms(report["after_load"]["direct"]["p99_ms"])),
        Row(after, "through record, writer off", _ms(off["p99_ms"]), note=f"{off['count']} round trips"),
        Row(
            after,
            "through record, writer on",
            _ms(on["p99_ms"]),
            note=join(
                f"{on['count']} round trips",
                f"load {os.getloadavg()[0]:.1f}",
                f"writer adds {added:+.2f} ms to the p99 (target <= {ADDED_P99_MS:g})"
                + ("" if added <= ADDED_P99_MS else " MISSED"),
                f"writer's longest step {longest:.2f} ms CPU (target < {WRITER_STEP_MS:g})"
                + ("" if longest < WRITER_STEP_MS else " MISSED"),
            ),
        ),
        _stall_row(stalls, "start-up in the collector's sight (before)", before),
        _stall_row(stalls, "start-up frozen (kafkacompat record)", report),
        Row(under, "direct to the broker", _ms(report["under_load"]["direct"]["p99_ms"])),
        Row(
            under,
            "through record",
            _ms(report["under_load"]["through_proxy"]["p99_ms"]),
            note=f"{report['requests']:,} requests in {report['load_s']:.1f} s",
        ),
        Row(
            f"{clients:,} client ids x {pairs} pairs: peak RSS of kafkacompat record",
            "the CLI",
            None,
            note=f"{idle:.1f} MiB idle, {peak:.1f} MiB after the load: {peak - idle:+.1f} MiB "
            f"(target <= {RSS_OVER_IDLE_MIB:g})" + ("" if peak - idle <= RSS_OVER_IDLE_MIB else " MISSED"),
        ),
    ]


def run(config: BenchConfig) -> list[Row]:
    broker, address = _broker()
    try:
        sizes = [(200, 30)] if config.quick else [(1000, 30), (1000, 512)]
        rows: list[Row] = []
        for clients, pairs in sizes:
            rows += _size_rows(address, clients, pairs)
        return rows
    finally:
        broker.kill()
        broker.wait(timeout=10)


if __name__ == "__main__":
    print(format_table(run(BenchConfig.make(quick="--quick" in sys.argv))))
