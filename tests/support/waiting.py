"""Waiting in a trio test for something another task does, bounded in time and in rounds."""

from __future__ import annotations

from collections.abc import Callable

import trio

__all__ = ["wait_until"]


async def wait_until(condition: Callable[[], bool], *, limit: float = 5.0) -> None:
    """Poll ``condition`` every 5 ms until it holds; ``TooSlowError`` after ``limit`` seconds."""
    with trio.fail_after(limit):
        for _ in range(100_000):
            if condition():
                return
            await trio.sleep(0.005)
        raise AssertionError("condition never held")
