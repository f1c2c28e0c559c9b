"""An asyncio loop on a clock the test controls: trio's autojump clock, for asyncio.

``run_virtual(main())`` runs a coroutine on a selector loop whose ``time()``
is virtual, as trio's ``MockClock(autojump_threshold=0)`` is: it stands still
while the loop runs callbacks and waits for I/O, and whenever the loop would
wait longer than ``threshold`` (real seconds) and nothing arrives within that
threshold, it jumps to the loop's next timer.  A 30 s timeout passes in 10 ms,
while a peer that answers on loopback (the emulator in its thread) still
answers first.  Everything the asyncio driver and ``asyncio.timeout`` read is
``loop.time()``, so durations measured with it are exact: a jump lands on the
next timer, never past it, and a loaded machine adds nothing.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["VirtualClockLoop", "run_virtual"]

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self, threshold: float) -> None:
        super().__init__()
        self.threshold = threshold
        self.now = 0.0  # the virtual clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout <= 0:
            return super().select(0)
        events = super().select(self.threshold if timeout is not None else None)
        if not events and timeout is not None:  # idle: the next timer is due now
            self.now += timeout
        return events


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """A selector loop whose clock jumps over idle waits (see the module documentation)."""

    def __init__(self, threshold: float = 0.01) -> None:
        self._jumping = _JumpingSelector(threshold)
        super().__init__(self._jumping)

    def time(self) -> float:
        return self._jumping.now


def run_virtual(main: Coroutine[Any, Any, T], *, threshold: float = 0.01) -> T:
    with asyncio.Runner(loop_factory=lambda: VirtualClockLoop(threshold)) as runner:
        return runner.run(main)
