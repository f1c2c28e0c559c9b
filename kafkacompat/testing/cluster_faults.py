"""Every public cluster call, and every way a broker can fail it: the deadline tests' kit.

A cluster call must end by its own deadline whatever its broker does
(``cluster.call_deadline``).  The tests (and the overshoot bench) run each
call of ``CALLS`` against a broker put in each state of ``FAULTS`` and compare
every call's duration with its deadline.

``CALLS`` names every public coroutine method of the cluster layer (a test
holds it to ``ClusterCore``), each as a function of the cluster, a node id and
the call's ``request_timeout`` (None: the config's ``call_timeout``).  The same
functions drive the trio and asyncio clusters, and the blocking
``SyncCluster``, whose methods return instead of being awaited (it has those
of ``BLOCKING_CALLS``: it hands out no connections).

``FAULTS`` turns one running ``EmulatedBroker`` (in its trio loop) into:

- ``refused``: nothing listens on its port any more;
- ``black hole``: its port drops every SYN (``BlackHole``), so connects hang;
- ``silent``: it accepts and reads, and never answers anything (not even the
  pre-0.10 probe the handshake falls back to when ApiVersions goes unanswered);
- ``reset in handshake``: it resets (RST) the connection on ApiVersions (the
  handshake may then take it for a pre-0.10 broker, which closes on it);
- ``reset in request``: the handshake goes through, and the first bytes of
  the answer to a cluster request (Metadata, FindCoordinator, DescribeCluster,
  UpdateFeatures) are followed by a reset;
- ``freeze in handshake``/``freeze in request``: it stops reading and
  answering at that point, its connection left open, as a hung process does.

Connections already open are left alone; a test closes them when its calls
must connect again.

``time_trio_calls``, ``time_asyncio_calls`` and ``time_blocking_calls`` make
a list of calls at once on one driver (tasks, tasks, threads) and time each on
that driver's clock: a ``TimedCall`` per call, whose outcome is ``answered``,
the name of the typed error it raised, or ``!`` and the name of anything else.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import trio
import trio.lowlevel

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    UpdateFeaturesRequest,
)
from kafkacompat.testing.black_hole import BlackHole
from kafkacompat.testing.emulator import EmulatedBroker, Fault

__all__ = [
    "BLOCKING_CALLS",
    "CALLS",
    "FAULTS",
    "Call",
    "FaultSetter",
    "TimedCall",
    "time_asyncio_calls",
    "time_blocking_calls",
    "time_trio_calls",
]

#: A call: (cluster, node id, request_timeout or None) -> what it returns (awaitable on a loop).
Call = Callable[[Any, int, "float | None"], Any]
#: Puts a broker (running in the caller's trio loop) in a fault state; the ExitStack keeps what it opens.
FaultSetter = Callable[[EmulatedBroker, ExitStack], Awaitable[None]]

_HANDSHAKE = ApiVersionsRequest.API_KEY
_CLUSTER_REQUESTS = (
    MetadataRequest.API_KEY,
    FindCoordinatorRequest.API_KEY,
    DescribeClusterRequest.API_KEY,
    UpdateFeaturesRequest.API_KEY,
)
_ANSWER_CUT_AT = 6  # bytes of the answer sent before the reset: the size and half the correlation id

CALLS: dict[str, Call] = {
    "request": lambda c, n, t: c.request(n, MetadataRequest(topics=[]), request_timeout=t),
    "request any": lambda c, n, t: c.request(None, MetadataRequest(topics=[]), request_timeout=t),
    "connection": lambda c, n, t: c.connection(n, request_timeout=t),
    "any_connection": lambda c, n, t: c.any_connection(request_timeout=t),
    "open_all": lambda c, n, t: c.open_all(request_timeout=t),
    "pick_version": lambda c, n, t: c.pick_version(n, MetadataRequest.API_KEY, request_timeout=t),
    "refresh_metadata": lambda c, n, t: c.refresh_metadata(request_timeout=t),
    "capabilities": lambda c, n, t: c.capabilities(request_timeout=t),
    "capabilities partial": lambda c, n, t: c.capabilities(require_all=False, request_timeout=t),
    "view": lambda c, n, t: c.view(request_timeout=t),
    "find_coordinators": lambda c, n, t: c.find_coordinators(["g1", "g2"], request_timeout=t),
    "describe_features": lambda c, n, t: c.describe_features(request_timeout=t),
    "update_features": lambda c, n, t: c.update_features(
        {"group.version": 1}, dry_run=True, request_timeout=t
    ),
}

#: The calls a blocking ``SyncCluster`` has (it hands out no connections).
BLOCKING_CALLS = tuple(n for n in CALLS if n not in ("connection", "any_connection", "open_all"))


#: Calls to make at once: (name in ``CALLS``, request_timeout or None).
Calls = Sequence[tuple[str, "float | None"]]


@dataclass(frozen=True, slots=True)
class TimedCall:
    """One call, its deadline (its request_timeout, else the config's), how long it took
    and how it ended."""

    call: str
    deadline: float
    duration: float
    outcome: str

    @property
    def overshoot(self) -> float:
        return self.duration - self.deadline

    @property
    def typed(self) -> bool:
        """It answered or raised a kafkacompat error (nothing else)."""
        return not self.outcome.startswith("!")


def _outcome(error: BaseException | None) -> str:
    if error is None:
        return "answered"
    if isinstance(error, KafkaCompatError):
        return type(error).__name__
    return f"!{type(error).__name__}: {error}"


async def time_trio_calls(cluster: Any, node_id: int, calls: Calls) -> list[TimedCall]:
    """Make ``calls`` at once on a trio cluster; each timed on trio's clock."""
    timed: list[TimedCall] = []
    default = cluster.config.call_timeout

    async def one(name: str, limit: float | None) -> None:
        start = trio.current_time()
        error: Exception | None = None
        try:
            await CALLS[name](cluster, node_id, limit)
        except Exception as exc:  # every outcome is recorded, the unexpected ones marked
            error = exc
        timed.append(TimedCall(name, limit or default, trio.current_time() - start, _outcome(error)))

    async with trio.open_nursery() as nursery:
        for name, limit in calls:
            nursery.start_soon(one, name, limit)
    return timed


async def time_asyncio_calls(cluster: Any, node_id: int, calls: Calls) -> list[TimedCall]:
    """Make ``calls`` at once on an asyncio cluster; each timed on the loop's clock."""
    loop = asyncio.get_running_loop()
    default = cluster.config.call_timeout

    async def one(name: str, limit: float | None) -> TimedCall:
        start = loop.time()
        error: Exception | None = None
        try:
            await CALLS[name](cluster, node_id, limit)
        except Exception as exc:  # every outcome is recorded, the unexpected ones marked
            error = exc
        return TimedCall(name, limit or default, loop.time() - start, _outcome(error))

    return list(await asyncio.gather(*(one(name, limit) for name, limit in calls)))


def time_blocking_calls(
    cluster: Any, node_id: int, calls: Calls, *, default: float, join_timeout: float = 60.0
) -> list[TimedCall]:
    """Make ``calls`` at once on a ``SyncCluster``, a thread each; timed on the monotonic clock.

    ``default`` is the deadline of a call with none (the config's ``call_timeout``).
    """
    timed: list[TimedCall] = []
    lock = threading.Lock()

    def one(name: str, limit: float | None) -> None:
        if name not in BLOCKING_CALLS:
            raise ValueError(f"a SyncCluster has no {name}")
        start = time.monotonic()
        error: Exception | None = None
        try:
            CALLS[name](cluster, node_id, limit)
        except Exception as exc:  # every outcome is recorded, the unexpected ones marked
            error = exc
        with lock:
            timed.append(TimedCall(name, limit or default, time.monotonic() - start, _outcome(error)))

    threads = [threading.Thread(target=one, args=call, daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(join_timeout)
    return timed


async def _refused(broker: EmulatedBroker, holes: ExitStack) -> None:
    await _stopped(broker)


async def _black_hole(broker: EmulatedBroker, holes: ExitStack) -> None:
    await _stopped(broker)
    holes.enter_context(BlackHole(broker.host, broker.port))


async def _stopped(broker: EmulatedBroker) -> None:
    """Stop ``broker`` and wait until its listener is closed (the port is free)."""
    broker.stop()
    while broker.listening:
        await trio.lowlevel.checkpoint()


def _faults(*faults: Fault) -> FaultSetter:
    async def setter(broker: EmulatedBroker, holes: ExitStack) -> None:
        for fault in faults:
            broker.add_fault(fault)

    return setter


FAULTS: dict[str, FaultSetter] = {
    "refused": _refused,
    "black hole": _black_hole,
    "silent": _faults(Fault.stall()),
    "reset in handshake": _faults(Fault.reset(_HANDSHAKE)),
    "reset in request": _faults(*(Fault.reset_after_bytes(_ANSWER_CUT_AT, key) for key in _CLUSTER_REQUESTS)),
    "freeze in handshake": _faults(Fault.freeze(_HANDSHAKE)),
    "freeze in request": _faults(*(Fault.freeze(key) for key in _CLUSTER_REQUESTS)),
}
