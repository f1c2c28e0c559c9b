"""Every cluster call ends by its own deadline, whatever it waits for inside.

A cluster call (``request``, ``capabilities``, ``refresh_metadata``, the
bootstrap of ``connect`` ...) may wait for a node's lock, connect, negotiate,
back off and retry, rebootstrap, and read answers, each step with a timeout of
its own (``connect_timeout``, ``request_timeout``).  Their sum is no deadline:
five attempts of a 30 s handshake are minutes.  So a call has one deadline on
the loop's clock: ``request_timeout`` when it names one, else the config's
``call_timeout``.

Every step that waits is bounded by it where it waits: a node's lock and its
opening run in a deadline scope of their own (``ClusterCore.connection``), a
request is sent with the time left as its timeout (``time_left``), and a retry
loop never sleeps a backoff that would reach it (``retries``).  A step cut
there fails as that step (``KafkaTimeoutError`` naming it), so a fan-out still
reports what the other brokers answered.  Around the whole call, a scope a
little past the deadline (``OVERRUN``) is the backstop for anything that would
wait unbounded: it must never be what ends a call.

The deadline is held in a context variable, so the calls made inside a call
(``find_coordinators`` asks ``capabilities``, ``update_features`` asks
``refresh_metadata``) and the jobs they run (child tasks copy the context) end
by the earlier of their own deadline and the enclosing one.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from kafkacompat.cluster.backend import ClusterBackend
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import ConfigError, KafkaTimeoutError

__all__ = ["OVERRUN", "call_budget", "call_deadline", "current_deadline", "time_left"]

#: How far past its deadline the backstop scope of a call lies: every step is bounded by
#: the deadline itself, so reaching the backstop means a wait was left unbounded.
OVERRUN = 0.05

# The running call's deadline and the clock it is read on (the loop's).
_CALL: ContextVar[tuple[float, Callable[[], float]] | None] = ContextVar("kafkacompat_call", default=None)


def call_budget(config: ConnectionConfig, request_timeout: float | None) -> float:
    """The seconds a call may take: its ``request_timeout``, else ``config.call_timeout``."""
    if request_timeout is None:
        return config.call_timeout
    if isinstance(request_timeout, bool) or not isinstance(request_timeout, int | float) or not (
        0 < request_timeout < math.inf
    ):
        raise ConfigError(f"request_timeout must be a positive number of seconds, not {request_timeout!r}")
    return float(request_timeout)


def current_deadline() -> float | None:
    """The deadline of the cluster call running in this task (None: outside any call)."""
    call = _CALL.get()
    return None if call is None else call[0]


def time_left(at_most: float, what: str) -> float:
    """A step's own timeout (``at_most``) cut to what the running call has left.

    Raises ``KafkaTimeoutError`` ("timed out before <what>") when nothing is left.
    """
    call = _CALL.get()
    if call is None:
        return at_most
    deadline, clock = call
    left = deadline - clock()
    if left <= 0:
        raise KafkaTimeoutError(f"timed out before {what}: the call's deadline has passed")
    return min(at_most, left)


@asynccontextmanager
async def call_deadline(
    backend: ClusterBackend[Any], config: ConnectionConfig, request_timeout: float | None, what: str
) -> AsyncIterator[float]:
    """Run a call by its deadline (yielded, on the loop's clock); see the module documentation.

    Inside an enclosing call whose deadline comes first, that one stands.
    """
    budget = call_budget(config, request_timeout)
    at = backend.clock() + budget
    outer = _CALL.get()
    if outer is not None and outer[0] <= at:
        yield outer[0]
        return
    token = _CALL.set((at, backend.clock))
    try:
        async with backend.deadline(at + OVERRUN, f"{what} (its deadline: {budget:g} s)"):
            yield at
    finally:
        _CALL.reset(token)
