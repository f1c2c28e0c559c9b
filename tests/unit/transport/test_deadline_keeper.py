"""``DeadlineKeeper``: callers expire at their deadlines, on trio's clock, in order."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import trio
import trio.testing

from kafkacompat.transport.deadlines import DeadlineKeeper


@dataclass(eq=False)
class Caller:
    name: str
    ended: bool = False


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


async def test_callers_expire_at_their_deadlines_in_order(clock: trio.testing.MockClock) -> None:
    expired: list[tuple[str, float]] = []
    keeper: DeadlineKeeper[Caller] = DeadlineKeeper(lambda c: expired.append((c.name, trio.current_time())))
    answered = Caller("answered in time")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keeper.run)
        keeper.add(30, Caller("thirty"), waiting=1)
        keeper.add(20, answered, waiting=2)
        await trio.sleep(5)  # the keeper sleeps towards 20 by now
        keeper.add(10, Caller("ten, added while it slept"), waiting=3)
        await trio.sleep(10)
        answered.ended = True  # woken by something else: it must not expire
        await trio.sleep(100)
        nursery.cancel_scope.cancel()
    assert expired == [("ten, added while it slept", 10), ("thirty", 30)]


def test_ended_callers_do_not_pile_up() -> None:
    keeper: DeadlineKeeper[Caller] = DeadlineKeeper(lambda c: None)
    for i in range(20_000):  # answered in time, one after another, none expired yet
        caller = Caller(str(i))
        keeper.add(1000.0 + i, caller, waiting=1)
        caller.ended = True
    assert len(keeper) <= 1024 + 1


def test_expire_due_reports_the_next_deadline_that_matters() -> None:
    expired: list[str] = []
    keeper: DeadlineKeeper[Caller] = DeadlineKeeper(lambda c: expired.append(c.name))
    first, second, third = Caller("a"), Caller("b"), Caller("c")
    keeper.add(1, first, waiting=1)
    keeper.add(2, second, waiting=2)
    keeper.add(3, third, waiting=3)
    second.ended = True
    assert keeper.expire_due(0.5) == 1 and expired == []
    assert keeper.expire_due(2.5) == 3 and expired == ["a"]
    assert keeper.expire_due(10) == float("inf") and expired == ["a", "c"]


async def test_the_alarm_rings_once_at_its_time_among_deadlines(clock: trio.testing.MockClock) -> None:
    events: list[tuple[str, float]] = []
    keeper: DeadlineKeeper[Caller] = DeadlineKeeper(lambda c: events.append((c.name, trio.current_time())))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keeper.run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        keeper.add(start + 10, Caller("caller"), 1)
        keeper.set_alarm(start + 5, lambda: events.append(("alarm", trio.current_time())))
        await trio.sleep(20)
        nursery.cancel_scope.cancel()
    assert [(name, at - start) for name, at in events] == [("alarm", 5), ("caller", 10)]


async def test_a_cleared_alarm_never_rings_nor_wakes_the_keeper(clock: trio.testing.MockClock) -> None:
    rang: list[float] = []
    wakes: list[float] = []
    keeper: DeadlineKeeper[Caller] = DeadlineKeeper(lambda c: None)
    real_expire_due = keeper.expire_due

    def counting(now: float) -> float:
        wakes.append(now)
        return real_expire_due(now)

    keeper.expire_due = counting  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keeper.run)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        keeper.add(start + 100, Caller("far"), 1)
        keeper.set_alarm(start + 1, lambda: rang.append(trio.current_time()))
        keeper.clear_alarm()
        await trio.sleep(50)
        nursery.cancel_scope.cancel()
    assert rang == []
    assert len(wakes) == 1  # only its first look at the heap: nothing woke it before the caller's deadline
