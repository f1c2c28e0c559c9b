"""The deadlines of a connection's requests: which have passed, and the next one that matters.

Sans-I/O, as the pipeline that owns it: the driver reads its clock and hands the
instant in (``due(now)``); nothing here sleeps.  The driver keeps one timer, set
to ``next_deadline()``, instead of one per request: at thousands of pipelined
requests a second, a timer per request (a trio cancel scope, an asyncio timer
handle) is a large share of a request's cost.

Each request with a deadline is pushed on a heap.  One that ended in time is
dropped lazily, when it reaches the top or when ended ones make up most of the
heap, so sending and answering a request cost a heap push and nothing more,
and the heap follows the requests still waiting, not the request rate times
the timeout.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Final

from kafkacompat.negotiation.pipeline_events import Stage, Ticket

__all__ = ["RequestDeadlines"]

#: Below this many entries, requests that ended simply wait for their turn to be dropped.
COMPACT_AT: Final = 1024
_ENDED: Final = Stage.ENDED


class RequestDeadlines:
    """The requests with a deadline, earliest first."""

    __slots__ = ("_heap", "_order")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Ticket]] = []
        self._order = itertools.count()  # ties leave in the order they came

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, ticket: Ticket, live: int) -> None:
        """Watch ``ticket`` until its deadline; ``live``: how many requests have not ended."""
        heap = self._heap
        if len(heap) >= COMPACT_AT and len(heap) > 4 * live:
            heap[:] = [entry for entry in heap if entry[2].stage is not _ENDED]
            heapq.heapify(heap)
        heapq.heappush(heap, (ticket.deadline, next(self._order), ticket))

    def next_deadline(self) -> float:
        """The earliest deadline of a request that has not ended (inf: none)."""
        heap = self._heap
        while heap and heap[0][2].stage is _ENDED:
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def due(self, now: float) -> list[Ticket]:
        """The requests not ended whose deadline is ``now`` or before, earliest first (taken off)."""
        heap, passed = self._heap, []
        while heap:
            deadline, _, ticket = heap[0]
            if ticket.stage is not _ENDED:
                if deadline > now:
                    break
                passed.append(ticket)
            heapq.heappop(heap)
        return passed

    def clear(self) -> None:
        self._heap.clear()
