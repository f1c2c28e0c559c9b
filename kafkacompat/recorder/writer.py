"""The recorder's profiles file, kept current without taking the traffic's turn (trio).

``ProfileWriter`` shares the proxy's loop: it serialises only the clients whose
profile changed, in slices of a few milliseconds, and writes the file from a
worker thread, atomically (``write_lines``), so a reader never sees half a file
and a failed write never stops the forwarding.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import trio

from kafkacompat.negotiation.recording import ProfileBook
from kafkacompat.negotiation.recording_profile import profile_pieces

__all__ = ["ProfileWriter", "write_lines"]


class ProfileWriter:
    """Keeps the profiles file up to date without stalling the traffic the proxy forwards.

    The proxy and this writer share one trio loop, so the writer bounds its own
    turns: it re-serialises only the clients whose profile changed
    (``ProfileBook.take_changed``), a piece of at most 64 (API, version)
    entries at a time, and hands the loop back whenever it has held it for
    ``SLICE`` seconds; the file itself is written in a worker thread, from
    serialised lines the loop no longer touches.  After a cycle it waits
    ``INTERVAL`` seconds, or four times as long as the cycle took when that is
    longer, so writing never takes more than a fifth of the time.  A write that
    fails is reported once on ``report`` and retried every cycle while the proxy
    goes on; the first write that works again says so.
    """

    SLICE = 0.002
    INTERVAL = 0.5

    def __init__(self, book: ProfileBook, path: Path, report: TextIO, progress: TextIO | None = None) -> None:
        self.book = book
        self.path = path
        self.report = report
        self.progress = progress
        self.failing: str | None = None  # why the last write failed, while it does
        self._lines: dict[tuple[str, str], bytes] = {}
        self._unwritten = True  # lines changed since the last write that worked
        self._wait = self.INTERVAL

    async def run(self) -> None:
        """Write, then wait, until cancelled."""
        while True:
            started = trio.current_time()
            await self.write()
            self._wait = max(self.INTERVAL, 4 * (trio.current_time() - started))
            await trio.sleep(self._wait)

    async def write(self) -> None:
        await self._serialise_changed()
        if not self._unwritten:
            return
        lines = self.lines()
        try:
            await trio.to_thread.run_sync(write_lines, self.path, lines)
        except OSError as exc:
            self._failed(exc)
            return
        self._written()

    def write_now(self) -> int:
        """Serialise what changed and write, in this thread (the last write); how many profiles."""
        for record in self.book.take_changed():
            self._lines[record.key] = _line(profile_pieces(record))
        write_lines(self.path, self.lines())
        self._written()
        return len(self._lines)

    def lines(self) -> list[bytes]:
        return [self._lines[key] for key in sorted(self._lines)]

    async def _serialise_changed(self) -> None:
        changed = self.book.take_changed()
        turn = trio.current_time()
        try:
            while changed:
                pieces = []
                for piece in profile_pieces(changed[-1]):
                    pieces.append(piece)
                    if trio.current_time() - turn > self.SLICE:
                        await trio.lowlevel.checkpoint()  # the pumps run; the record may change meanwhile
                        turn = trio.current_time()
                self._lines[changed.pop().key] = _line(pieces)
                self._unwritten = True
        finally:  # cancelled half-way: what was not serialised stays marked for the next writer
            self.book.changed.update(record.key for record in changed)

    def _failed(self, exc: OSError) -> None:
        if self.failing is None:
            print(
                f"kafkacompat record: cannot write {self.path} ({exc.strerror or exc}); "
                "forwarding goes on and the write is retried",
                file=self.report,
                flush=True,
            )
        self.failing = exc.strerror or str(exc)

    def _written(self) -> None:
        if self.failing is not None:
            print(f"kafkacompat record: {self.path} written again", file=self.report, flush=True)
        self.failing = None
        self._unwritten = False
        if self.progress is not None:
            self.progress.write(f"\r{self.book.progress()} ")
            self.progress.flush()


def _line(pieces: Iterable[str]) -> bytes:
    return ("".join(pieces) + "\n").encode()


def write_lines(path: Path, lines: Iterable[bytes]) -> None:
    """Replace ``path`` atomically by ``lines`` (a reader never sees half a file), mode 0600.

    A symlink at ``path`` is replaced, never followed; on failure no temporary file is left.
    """
    directory = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=".record-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.writelines(lines)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
