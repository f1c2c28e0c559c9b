"""What every benchmark section shares: the run settings, the row type, timing and the table.

A section is a module with a ``TITLE`` and a ``run(config) -> list[Row]``; see
``bench/__main__.py`` for the registry.  Times are seconds per operation, and
a comparison row carries ``ratio = peer time / kafkacompat time`` (so ``3.0``
reads "kafkacompat is 3x faster") and, when the benchmark sets one, the ratio
it must reach.
"""

from __future__ import annotations

import math
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "BenchConfig",
    "Row",
    "calibrate",
    "format_seconds",
    "format_table",
    "join",
    "measure",
    "measure_many",
]


@dataclass(frozen=True)
class BenchConfig:
    """How long to time each operation.

    ``repeat_seconds`` is the wall time one repeat should take (the loop count
    is scaled to reach it) and ``repeats`` how many repeats to run; the best
    repeat is the one reported, as ``timeit`` advises.
    """

    quick: bool = False
    repeat_seconds: float = 0.2
    repeats: int = 5

    @classmethod
    def make(cls, *, quick: bool) -> BenchConfig:
        if quick:
            return cls(quick=True, repeat_seconds=0.02, repeats=3)
        return cls()


@dataclass(frozen=True)
class Row:
    """One line of the report.

    ``workload`` groups rows (the table prints it once per group); ``impl``
    names the implementation measured.  ``seconds_per_op`` is ``None`` when
    the implementation could not be measured (``note`` says why).  ``ratio``
    is the peer's time over kafkacompat's; ``target`` the ratio required.
    ``error`` marks a row whose benchmark itself is broken (the peer crashed,
    or decoded the payload to different content): its numbers mean nothing.
    """

    workload: str
    impl: str
    seconds_per_op: float | None = None
    ratio: float | None = None
    target: float | None = None
    note: str = ""
    error: bool = False

    @property
    def status(self) -> str:
        if self.error:
            return "ERROR"
        if self.target is None:
            return ""
        if self.ratio is None:
            return "n/a"
        return "met" if self.ratio >= self.target else "MISSED"


def calibrate(timer: timeit.Timer, config: BenchConfig) -> int:
    """The loop count for which one repeat takes about ``config.repeat_seconds``.

    The count is first raised until a run takes a tenth of that, then scaled.
    (This also warms the code up.)
    """
    number = 1
    floor = config.repeat_seconds / 10
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= floor:
            break
        # Grow by 10x while far off, then by 2x.
        number *= 10 if elapsed < floor / 10 else 2
    return max(1, math.ceil(number * config.repeat_seconds / elapsed))


def measure_many(
    fns: Sequence[Callable[[], object]],
    config: BenchConfig,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Best time of one call of each function, in seconds, over ``config.repeats`` rounds.

    The repeats are interleaved (a round times each function once), so that a
    machine that slows down or speeds up mid-run affects all of them alike.
    As in ``timeit``, the garbage collector is off while timing.  ``clock`` is
    wall time unless the caller passes another (``time.process_time`` for pure
    computation: it leaves out the time other processes hold the CPU).
    """
    timers = [timeit.Timer(fn, timer=clock) for fn in fns]
    numbers = [calibrate(timer, config) for timer in timers]
    best = [math.inf] * len(fns)
    for _ in range(config.repeats):
        for i, (timer, number) in enumerate(zip(timers, numbers, strict=True)):
            best[i] = min(best[i], timer.timeit(number) / number)
    return best


def measure(fn: Callable[[], object], config: BenchConfig) -> float:
    """Best time of one call of ``fn``, in seconds (see ``measure_many``)."""
    return measure_many([fn], config)[0]


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} us"


def _format_ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}x"


def _format_target(target: float | None) -> str:
    return "" if target is None else f">= {target:g}x"


def format_table(rows: Sequence[Row]) -> str:
    """A plain-text table: a line per workload, then a line per implementation."""
    headers = ("implementation", "time/op", "peer/kafkacompat", "target", "result", "note")
    cells: list[tuple[str, ...]] = []
    groups: list[tuple[str, list[tuple[str, ...]]]] = []
    for row in rows:
        line = (
            row.impl,
            format_seconds(row.seconds_per_op),
            _format_ratio(row.ratio),
            _format_target(row.target),
            row.status,
            row.note,
        )
        if not groups or groups[-1][0] != row.workload:
            groups.append((row.workload, []))
        groups[-1][1].append(line)
        cells.append(line)
    # The note is the last column and is not padded.
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers[:-1])]
    right = {1, 2}  # numbers align right

    def render(line: tuple[str, ...]) -> str:
        parts = [
            (text.rjust(width) if i in right else text.ljust(width))
            for i, (text, width) in enumerate(zip(line[:-1], widths, strict=True))
        ]
        return ("  " + "  ".join(parts) + ("  " + line[-1] if line[-1] else "")).rstrip()

    out = [render(headers), "  " + "  ".join("-" * w for w in [*widths, len(headers[-1])])]
    for workload, lines in groups:
        out.append(workload)
        out.extend(render(line) for line in lines)
    return "\n".join(out)


def join(*parts: str) -> str:
    """A row's note from its parts, the empty ones left out."""
    return "; ".join(part for part in parts if part)
