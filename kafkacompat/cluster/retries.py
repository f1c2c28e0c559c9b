"""The one retry mechanism: tenacity, sleeping on the caller's event loop.

Every place that tries again (bootstrap rounds, opening a node, coordinator
lookup rounds, UpdateFeatures refused with NOT_CONTROLLER) builds its loop
here, from the connection's ``RetryPolicy``: a bounded number of attempts and
an exponential backoff from ``initial_backoff`` capped at ``max_backoff``,
plus up to ``jitter`` at random.  The sleep is passed in (``trio.sleep`` or
``asyncio.sleep``), so the backoff runs on the loop's clock and tests can use
trio's autojump clock.

What is retried is an error a new attempt could change (``worth_retrying``):
a transport failure or a timeout.  A peer that stayed silent to a connection's
first requests (``SilentPeerError``) is retried only under the policy's
``retry_silent_peers``: a Kafka broker starting up is silent until it serves
(an application waits for it), a wrong port is silent for good (the CLI, which
wants its answer now, does not retry it).

A loop given the caller's deadline (on the loop's clock) spends the caller's
budget, not a budget of its own, and never starts an attempt it cannot
finish: it stops, raising the last failure as itself, when the next attempt
would begin (after its backoff) too late to take as long as the quickest
attempt so far took.  A backoff that would end at or past the deadline is
never slept.  An attempt that still runs into the deadline is cut there by the
call's own scope (``cluster.call_deadline``).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import tenacity

from kafkacompat.connection.config import RetryPolicy
from kafkacompat.errors import SilentPeerError

__all__ = ["backoff", "retry_on_result", "retrying", "worth_retrying"]

Sleep = Callable[[float], Awaitable[None]]
Retried = type[BaseException] | tuple[type[BaseException], ...]


def backoff(policy: RetryPolicy) -> tenacity.wait.wait_base:
    """The wait before attempt n+1: exponential, capped, jittered."""
    return tenacity.wait_exponential(
        multiplier=policy.initial_backoff, max=policy.max_backoff
    ) + tenacity.wait_random(0, policy.jitter)


def worth_retrying(exc: BaseException, retry_on: Retried, policy: RetryPolicy) -> bool:
    """``exc`` is of ``retry_on`` and a new attempt could change it (see the module documentation)."""
    return isinstance(exc, retry_on) and (policy.retry_silent_peers or not isinstance(exc, SilentPeerError))


def retrying(
    policy: RetryPolicy,
    sleep: Sleep,
    *,
    retry_on: Retried,
    deadline: float | None = None,
    clock: Callable[[], float] | None = None,
) -> tenacity.AsyncRetrying:
    """Retry on the exceptions ``retry_on`` worth retrying; the last one is raised as itself.

    With a ``deadline`` (on ``clock``), no attempt starts that could not finish
    by it (see the module documentation): the last error is raised at once.
    """
    return tenacity.AsyncRetrying(
        stop=_stop(policy.attempts, deadline, clock),
        wait=backoff(policy),
        retry=tenacity.retry_if_exception(lambda exc: worth_retrying(exc, retry_on, policy)),
        sleep=sleep,
        reraise=True,
    )


def retry_on_result(
    policy: RetryPolicy,
    sleep: Sleep,
    again: Callable[[object], bool],
    *,
    attempts: int | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] | None = None,
) -> tenacity.AsyncRetrying:
    """Retry while ``again(result)`` holds, at most ``attempts`` times; then stop quietly.

    Exceptions are not retried: they end the loop as themselves.  The caller
    records each attempt's result (``attempt.retry_state.set_result``) and
    keeps the last one: running out of attempts is an answer, not an error.
    A ``deadline`` stops it as ``retrying``'s does, quietly too.
    """
    return tenacity.AsyncRetrying(
        stop=_stop(attempts if attempts is not None else policy.attempts, deadline, clock),
        wait=backoff(policy),
        retry=tenacity.retry_if_result(again),
        sleep=sleep,
        reraise=True,
        retry_error_callback=lambda state: None,
    )


def _stop(
    attempts: int, deadline: float | None, clock: Callable[[], float] | None
) -> tenacity.stop.stop_base:
    stop: tenacity.stop.stop_base = tenacity.stop_after_attempt(attempts)
    if deadline is not None and deadline != math.inf:
        assert clock is not None, "a deadline is read on the loop's clock"
        stop = stop | _NoTimeForAnother(deadline, clock)
    return stop


class _NoTimeForAnother(tenacity.stop.stop_base):
    """Stop when the next attempt could not finish by the deadline: it would begin (after
    its backoff) at or past it, or with less time left than the quickest attempt took.

    Built as the loop starts (its first attempt begins then); called after each failure.
    """

    def __init__(self, deadline: float, clock: Callable[[], float]) -> None:
        self.deadline, self.clock = deadline, clock
        self._began = clock()
        self._quickest = math.inf

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        now = self.clock()
        self._quickest = min(self._quickest, now - self._began)
        self._began = now + (retry_state.upcoming_sleep or 0.0)  # when the next one would begin
        return self._began + self._quickest >= self.deadline
