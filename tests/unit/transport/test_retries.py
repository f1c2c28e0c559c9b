"""The one retry mechanism: which failures are retried, how long it waits, on which loop's clock."""

from __future__ import annotations

import asyncio
import itertools

import pytest
import trio
import trio.testing

from kafkacompat.cluster.retries import retry_on_result, retrying
from kafkacompat.connection.config import RetryPolicy
from kafkacompat.errors import KafkaTimeoutError, ProtocolError, TransportError

POLICY = RetryPolicy(attempts=4, initial_backoff=1.0, max_backoff=3.0, jitter=0.0)
RETRIABLE = (TransportError, KafkaTimeoutError)


async def test_transport_failures_are_retried_with_capped_exponential_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    times: list[float] = []
    with pytest.raises(KafkaTimeoutError, match="fourth"):
        async for attempt in retrying(POLICY, trio.sleep, retry_on=RETRIABLE):
            with attempt:
                times.append(trio.current_time())
                raise KafkaTimeoutError(["first", "second", "third", "fourth"][len(times) - 1])
    waits = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert waits == pytest.approx([1.0, 2.0, 3.0])  # 1, 2, then 4 capped at 3; no jitter


async def test_a_deadline_stops_before_a_backoff_that_reaches_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    times: list[float] = []
    with pytest.raises(KafkaTimeoutError, match="second"):  # the last error, raised as itself
        async for attempt in retrying(
            POLICY, trio.sleep, retry_on=RETRIABLE, deadline=2.5, clock=trio.current_time
        ):
            with attempt:
                times.append(trio.current_time())
                raise KafkaTimeoutError(["first", "second", "third", "fourth"][len(times) - 1])
    # attempts at 0 and 1; the next backoff (2 s) would end at 3, past 2.5: no third attempt, no sleep
    assert times == [0.0, 1.0] and trio.current_time() == 1.0


async def test_no_attempt_starts_with_less_time_left_than_the_quickest_one_took(
    autojump_clock: trio.testing.MockClock,
) -> None:
    times: list[float] = []
    with pytest.raises(KafkaTimeoutError, match="first"):
        async for attempt in retrying(
            POLICY, trio.sleep, retry_on=RETRIABLE, deadline=4.5, clock=trio.current_time
        ):
            with attempt:
                times.append(trio.current_time())
                await trio.sleep(2.0)  # each attempt takes 2 s (a connect that times out, say)
                raise KafkaTimeoutError(["first", "second"][len(times) - 1])
    # The second would begin at 3 (after 1 s of backoff) and need 2 s: past 4.5.  It never
    # starts: the first failure is raised when it happens, not cut short at the deadline.
    assert times == [0.0] and trio.current_time() == 2.0


async def test_other_failures_end_at_once(autojump_clock: trio.testing.MockClock) -> None:
    calls = 0
    with pytest.raises(ProtocolError):
        async for attempt in retrying(POLICY, trio.sleep, retry_on=RETRIABLE):
            with attempt:
                calls += 1
                raise ProtocolError("not worth a second try")
    assert calls == 1 and trio.current_time() == 0


async def test_jitter_adds_at_most_its_bound(autojump_clock: trio.testing.MockClock) -> None:
    jittery = RetryPolicy(attempts=2, initial_backoff=1.0, max_backoff=1.0, jitter=0.5)
    for _ in range(20):
        started = trio.current_time()
        with pytest.raises(TransportError):
            async for attempt in retrying(jittery, trio.sleep, retry_on=RETRIABLE):
                with attempt:
                    raise TransportError("down")
        assert 1.0 <= trio.current_time() - started <= 1.5


async def _rounds(sleep: object, answers: list[bool], attempts: int) -> tuple[int, object]:
    rounds, last = 0, None
    async for attempt in retry_on_result(POLICY, sleep, bool, attempts=attempts):  # type: ignore[arg-type]
        with attempt:
            last = answers[rounds]
            rounds += 1
        attempt.retry_state.set_result(last)
    return rounds, last


async def test_retrying_on_a_result_stops_quietly_when_attempts_run_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    assert await _rounds(trio.sleep, [True, True, False, True], attempts=10) == (3, False)
    assert await _rounds(trio.sleep, [True] * 5, attempts=3) == (3, True)  # out of attempts: no error


def test_the_same_mechanism_sleeps_on_asyncio() -> None:
    quick = RetryPolicy(attempts=3, initial_backoff=0.01, max_backoff=0.01, jitter=0.0)

    async def main() -> tuple[int, float]:
        loop = asyncio.get_running_loop()
        started, calls = loop.time(), 0
        with pytest.raises(TransportError):
            async for attempt in retrying(quick, asyncio.sleep, retry_on=RETRIABLE):
                with attempt:
                    calls += 1
                    raise TransportError("down")
        return calls, loop.time() - started

    calls, elapsed = asyncio.run(main())
    assert calls == 3 and elapsed >= 0.02
