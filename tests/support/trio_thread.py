"""Run a trio async context manager (a test server) in a background thread.

The asyncio driver's tests need the same peers as the trio tests (the TLS
terminator, the fault proxy), which are trio servers; this runs one in its own
trio loop on a thread and hands back what it yielded, until the block ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import trio

__all__ = ["TrioServer", "in_trio_thread"]

T = TypeVar("T")
_START_TIMEOUT = 20.0


@dataclass(frozen=True)
class TrioServer(Generic[T]):
    """What the server's context manager yielded, and a way to call into its trio thread."""

    value: T
    token: trio.lowlevel.TrioToken

    def call(self, function: Callable[[], object]) -> object:
        """Run ``function`` in the server's trio thread (trio objects are not thread-safe)."""
        return trio.from_thread.run_sync(function, trio_token=self.token)


@contextmanager
def in_trio_thread(factory: Callable[[], AbstractAsyncContextManager[T]]) -> Iterator[TrioServer[T]]:
    """``with in_trio_thread(lambda: fault_proxy(...)) as server:`` runs until the block ends."""
    started = threading.Event()
    box: dict[str, object] = {}
    stop: trio.Event | None = None
    token: trio.lowlevel.TrioToken | None = None

    async def main() -> None:
        nonlocal stop, token
        stop, token = trio.Event(), trio.lowlevel.current_trio_token()
        try:
            async with factory() as value:
                box["value"] = value
                started.set()
                await stop.wait()
        finally:
            started.set()

    def run() -> None:
        try:
            trio.run(main)
        except BaseException as exc:  # reported to the starting thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="test-trio-server", daemon=True)
    thread.start()
    if not started.wait(_START_TIMEOUT) or "value" not in box:
        raise RuntimeError(f"the trio test server did not start: {box.get('error')!r}")
    assert stop is not None and token is not None
    try:
        yield TrioServer(box["value"], token)  # type: ignore[arg-type]
    finally:
        trio.from_thread.run_sync(stop.set, trio_token=token)
        thread.join(_START_TIMEOUT)
