"""A transparent TCP pass-through that records client profiles on the side (trio).

Theory.  Every protocol decision of a recording lives in the sans-I/O
``negotiation.recording``; this module only moves bytes.  Per accepted client
connection it opens one connection upstream and runs two pumps, each of which
forwards every chunk unchanged *before* showing it to the ``WireRecorder``, so
a recorder that cannot parse something never delays or alters traffic
(plaintext and SASL_PLAINTEXT alike: SASL is bytes like the rest).  When
either side closes, the other is closed too, and the recorder learns who
closed first: pending requests are "closed" by the broker or left by the
client.  The proxy listens on loopback unless told otherwise explicitly, like
the emulator.

``ProfileWriter`` keeps the profiles file current from the same loop without
taking the traffic's turn: it serialises only the clients that changed, in
slices of a few milliseconds, and writes the file from a worker thread (how,
in its docstring).  Memory is the book's bound (``negotiation.recording``)
plus one serialised line per client.

What stalls every proxied connection at once, besides the writer, is a full
garbage collection: it walks every object the collector tracks, and a
recorder's process is mostly start-up (modules, classes, the codec).
``freeze_start_up``, called by whoever owns the process (the CLI, the load
harness) once start-up is over, loads what the recorder would otherwise load
during traffic and moves everything alive then out of the collector's sight
(``gc.freeze``): what is left to walk is the connections of the moment and the
book, whose tables the collector does not track.
"""

from __future__ import annotations

import contextlib
import gc
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

import trio

from kafkacompat.errors import TransportError
from kafkacompat.negotiation.recording import ProfileBook, WireRecorder, load_response_classes
from kafkacompat.negotiation.recording_profile import profile_pieces

__all__ = ["ProfileWriter", "RecordProxy", "freeze_start_up", "write_lines"]

_CHUNK = 65536


def freeze_start_up() -> None:
    """Leave start-up out of every later garbage collection (see the module documentation).

    The response classes the recorder decodes are loaded first (lazily, they would be
    loaded, and stay, during traffic); garbage is collected, so none is frozen with the
    rest.  It changes the whole process: call it where the process is the recorder's.
    """
    load_response_classes()
    gc.collect()
    gc.freeze()


class RecordProxy:
    """Listens on ``listen``, forwards each connection to ``upstream``, records into ``book``."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        book: ProfileBook | None = None,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.book = book if book is not None else ProfileBook()
        self.listen_host, self.listen_port = listen_host, listen_port
        self.connect_timeout = connect_timeout
        self._scope: trio.CancelScope | None = None

    @property
    def address(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"

    async def serve(self, *, task_status: trio.TaskStatus[RecordProxy] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept and forward until cancelled or ``stop()``; started() once listening."""
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                listeners = await trio.open_tcp_listeners(self.listen_port, host=self.listen_host)
            except OSError as exc:
                raise TransportError(f"cannot listen on {self.address}: {exc.strerror or exc}") from None
            self.listen_port = listeners[0].socket.getsockname()[1]
            async with trio.open_nursery() as nursery:
                task_status.started(self)
                await trio.serve_listeners(self._handle, listeners, handler_nursery=nursery)

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    async def _handle(self, client: trio.SocketStream) -> None:
        host, port = self.upstream
        try:
            with trio.fail_after(self.connect_timeout):
                broker = await trio.open_tcp_stream(host, port)
        except (OSError, trio.TooSlowError):
            await trio.aclose_forcefully(client)
            return
        recorder = WireRecorder(self.book)
        first_to_close: list[str] = []
        async with trio.open_nursery() as nursery:
            pump = self._pump
            nursery.start_soon(pump, client, broker, recorder.from_client, "client", first_to_close, nursery)
            nursery.start_soon(pump, broker, client, recorder.from_broker, "broker", first_to_close, nursery)
        recorder.closed(by_broker=first_to_close[:1] == ["broker"])
        await trio.aclose_forcefully(client)
        await trio.aclose_forcefully(broker)

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        seen: Callable[[bytes], None],
        side: str,
        first_to_close: list[str],
        nursery: trio.Nursery,
    ) -> None:
        try:
            while True:
                data = await source.receive_some(_CHUNK)
                if not data:
                    break
                await sink.send_all(data)  # forwarded first, untouched
                seen(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        if not first_to_close:
            first_to_close.append(side)
        nursery.cancel_scope.cancel()


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
