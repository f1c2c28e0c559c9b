"""The deadlines of many waiting callers, kept by one trio task instead of a scope each.

A trio ``CancelScope`` with a deadline costs a registration in the run loop's
deadline heap on entry and another on exit: at thousands of pipelined
requests a second that is a large share of a request's cost.  The
connection's callers sleep without one; this keeper holds their deadlines in
a heap of its own and sleeps, in one scope whose deadline it moves, until the
earliest one that still matters.  Callers that ended in time are dropped
lazily (when they reach the top, or when they make up most of the heap), so
adding and ending a call cost a heap push and nothing more.

Everything runs on trio's clock (``trio.current_time``): an autojump
``MockClock`` drives it in tests.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import trio

__all__ = ["DeadlineKeeper", "Waiting"]


class Waiting(Protocol):
    """A caller: ``ended`` once it was woken, whatever woke it."""

    @property
    def ended(self) -> bool: ...


_W = TypeVar("_W", bound=Waiting)
_COMPACT_AT = 1024  # below this many entries, ended callers simply wait for their turn to go


class DeadlineKeeper(Generic[_W]):
    """Calls ``expire(caller)`` for every caller still waiting when its deadline passes."""

    def __init__(self, expire: Callable[[_W], None]) -> None:
        self._expire = expire
        self._heap: list[tuple[float, int, _W]] = []
        self._order = itertools.count()  # ties leave in the order they came
        self._timer: trio.CancelScope | None = None  # while the keeper sleeps
        self._alarm = math.inf  # when to call ``ring`` (inf: no alarm set)
        self._ring: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, deadline: float, caller: _W, waiting: int) -> None:
        """Watch ``caller`` until ``deadline``; ``waiting``: how many callers have not ended."""
        heap = self._heap
        if len(heap) >= _COMPACT_AT and len(heap) > 4 * waiting:
            # Mostly callers that ended in time: drop them, so memory follows the callers
            # actually waiting, not the request rate times the timeout.
            heap[:] = [entry for entry in heap if not entry[2].ended]
            heapq.heapify(heap)
        heapq.heappush(heap, (deadline, next(self._order), caller))
        timer = self._timer
        if timer is not None and deadline < timer.deadline:
            timer.deadline = deadline  # an earlier one than the keeper sleeps towards

    def set_alarm(self, at: float, ring: Callable[[], None]) -> None:
        """Besides the callers' deadlines, call ``ring`` once at ``at`` (replacing any alarm set)."""
        self._alarm, self._ring = at, ring
        timer = self._timer
        if timer is not None and at < timer.deadline:
            timer.deadline = at

    def clear_alarm(self) -> None:
        """Forget the alarm; the keeper sleeps on towards the callers' next deadline."""
        if self._alarm == math.inf:
            return
        timer = self._timer
        if timer is not None and timer.deadline == self._alarm:  # no waking up for nothing
            timer.deadline = self._heap[0][0] if self._heap else math.inf
        self._alarm, self._ring = math.inf, None

    def expire_due(self, now: float) -> float:
        """Expire every caller due by ``now`` (and ring the alarm, if due); the next deadline
        that matters (inf: none)."""
        if self._alarm <= now:
            ring = self._ring
            self._alarm, self._ring = math.inf, None
            if ring is not None:
                ring()
        heap = self._heap
        while heap:
            deadline, _, caller = heap[0]
            if caller.ended:
                heapq.heappop(heap)
            elif deadline <= now:
                heapq.heappop(heap)
                self._expire(caller)
            else:
                return min(deadline, self._alarm)
        return self._alarm

    async def run(self) -> None:
        """Keep the deadlines until cancelled."""
        while True:
            wake_at = self.expire_due(trio.current_time())
            with trio.CancelScope(deadline=wake_at) as timer:
                self._timer = timer
                try:
                    await trio.sleep_forever()
                finally:
                    self._timer = None
