"""The trio driver's own tasks: the reader, the writer and the deadline keeper.

Split from ``connection.py`` (``BrokerConnection`` inherits these): how the
three tasks start (in a nursery, or as system tasks the connection owns), what
each does, and how the reader writes the requests its answers made room for
just before it waits (``_write_now``).  The module doc of ``connection.py``
says why the tasks are shaped this way.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from kafkacompat.connection.client_connection import ClientConnection
from kafkacompat.errors import KafkaCompatError, PeerClosedError, TransportError
from kafkacompat.negotiation.pipeline_events import PipelineEvent
from kafkacompat.transport.deadlines import DeadlineKeeper
from kafkacompat.transport.stream import ByteStream

__all__ = ["ConnectionTasks", "Scopes", "cancel_scopes"]

log = logging.getLogger("kafkacompat.transport")

Scopes = tuple[trio.CancelScope, trio.CancelScope, trio.CancelScope]  # reader, writer, deadlines


class ConnectionTasks:
    """The task side of ``BrokerConnection``: the state below is the connection's."""

    host: str
    port: int
    _protocol: ClientConnection | None
    _stream: ByteStream | None
    _nursery: trio.Nursery | None
    _io_scopes: Scopes | None
    _deadlines: DeadlineKeeper[Any]
    _closed: bool
    _writer: trio.lowlevel.Task | None  # the writer, while it waits for work
    _writing_now: bool  # _write_now is sending, on the writer's behalf
    _reading: bool  # the reader is dispatching what it read: it writes, before waiting
    _write_due_flag: bool  # the reader has requests to write before it waits
    _unsent: memoryview | None  # the rest of a write _write_now began
    _dispatch: Callable[[list[PipelineEvent]], None]  # wakes the callers events name

    @property
    def node(self) -> str:
        return f"{self.host}:{self.port}"

    def _write_due(self, protocol: ClientConnection) -> None:
        if self._write_due_flag:
            self._write_now(protocol)

    def _write_now(self, protocol: ClientConnection) -> None:
        """The parked writer's work, done by the task that queued it: the kernel almost
        always takes a wave of requests at once, and waking the writer for it would cost a
        scheduling round trip per wave.  The reader, refilling the slots its answers free,
        calls this just before it waits for more (so every answer read in between is
        refilled in one write).  What the kernel does not take at once is left to the
        writer."""
        self._write_due_flag = False
        if self._writer is None or self._writing_now:
            return
        stream = self._stream
        assert stream is not None
        self._writing_now = True  # the write_done below may refill: this loop sends those too
        try:
            while protocol.failure is None:
                data = protocol.bytes_to_send()
                if not data:
                    return
                rest = stream.send_now(data)
                if rest is None or rest:  # TLS, or the kernel's buffer is full: the writer waits
                    self._unsent = memoryview(data) if rest is None else rest
                    self._wake_writer()
                    return
                self._dispatch(protocol.write_done())
        except KafkaCompatError as exc:
            self._write_failed(protocol, exc)
        finally:
            self._writing_now = False

    def _wake_writer(self) -> None:
        """The parked writer has work: what queued (or the rest of a write begun at once)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            trio.lowlevel.reschedule(writer)

    def _write_failed(self, protocol: ClientConnection, exc: KafkaCompatError) -> None:
        """A write failed: the stream cannot be trusted, every request left fails."""
        if protocol is self._protocol:
            self._closed = True
        self._dispatch(protocol.closed(exc))


    def _start_io(self) -> None:
        assert self._stream is not None and self._protocol is not None
        # The scopes exist before the tasks run, so an early aclose() can cancel them;
        # start_soon spares the scheduling round trip nursery.start would cost.
        scopes = self._io_scopes = (trio.CancelScope(), trio.CancelScope(), trio.CancelScope())
        protocol, stream = self._protocol, self._stream
        tasks = (
            (functools.partial(self._read_loop, protocol, stream, scopes), "reader"),
            (functools.partial(self._write_loop, protocol, stream, scopes), "writer"),
            (functools.partial(self._keep_deadlines, self._deadlines, scopes), "deadlines"),
        )
        nursery = self._nursery
        if nursery is not None:
            for body, name in tasks:
                nursery.start_soon(body, name=f"kafkacompat {name} {self.node}")
            return
        try:
            for body, name in tasks:
                trio.lowlevel.spawn_system_task(
                    self._guarded,
                    protocol,
                    scopes,
                    body,
                    name,
                    name=f"kafkacompat {name} {self.node}",
                    context=contextvars.copy_context(),
                )
        except RuntimeError as exc:  # the run is ending: trio takes no new system tasks
            self._closed = True
            self._dispatch(protocol.closed(TransportError(f"cannot start the connection's tasks: {exc}")))
            cancel_scopes(scopes)

    async def _guarded(
        self, protocol: ClientConnection, scopes: Scopes, body: Callable[[], Awaitable[None]], name: str
    ) -> None:
        """A system task's body: nothing but Cancelled may leave it (see the module's doc)."""
        try:
            await body()
        except Exception as exc:
            error = self._bug(exc, name)
            if protocol is self._protocol:
                self._closed = True
            self._dispatch(protocol.closed(error))
            cancel_scopes(scopes)

    def _bug(self, exc: Exception, task: str) -> TransportError:
        """What the callers see of an unexpected exception in one of the connection's tasks."""
        log.error("connection %s: its %s task failed", self.node, task, exc_info=exc)
        return TransportError(f"the connection's {task} task failed: {exc!r}", node=self.node)

    def _stop_io(self) -> None:
        cancel_scopes(self._io_scopes)

    async def _write_loop(self, protocol: ClientConnection, stream: ByteStream, scopes: Scopes) -> None:
        """Write whatever requests queued while the last write was going out, in one send.

        Coalescing matters when many requests are in flight (a per-key lookup of
        a thousand groups): one system call and one scheduling round trip per
        wave instead of per request.
        """
        with scopes[1]:
            try:
                while protocol.failure is None:
                    data: bytes | memoryview | None = self._unsent
                    if data is not None:  # a write begun without waiting, to finish
                        self._unsent = None
                    else:
                        data = protocol.bytes_to_send()
                    if not data:
                        self._writer = trio.lowlevel.current_task()
                        await trio.lowlevel.wait_task_rescheduled(self._writer_aborted)
                        continue
                    await stream.send_all(data)
                    self._dispatch(protocol.write_done())
            except KafkaCompatError as exc:
                self._write_failed(protocol, exc)
            finally:
                if self._writer is trio.lowlevel.current_task():
                    self._writer = None
                cancel_scopes(scopes)  # the reader, which closes the socket

    async def _keep_deadlines(self, keeper: DeadlineKeeper[Any], scopes: Scopes) -> None:
        with scopes[2]:
            try:
                await keeper.run()
            finally:
                cancel_scopes(scopes)

    def _writer_aborted(self, raise_cancel: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        self._writer = None
        return trio.lowlevel.Abort.SUCCEEDED

    async def _read_loop(self, protocol: ClientConnection, stream: ByteStream, scopes: Scopes) -> None:
        error: KafkaCompatError | None = None
        write_due = functools.partial(self._write_due, protocol)  # before the reader waits
        with scopes[0]:
            try:
                while protocol.is_ready:
                    room = protocol.body_room() if stream.reads_into else None
                    if room is not None:  # plain TCP, a body under way: straight into its buffer
                        count = await stream.receive_into(room, write_due)
                        del room
                        if count:
                            self._reading = True
                            self._dispatch(protocol.body_filled(count))
                            self._reading = False
                            continue
                        data = b""
                    else:
                        data = await stream.receive_some(write_due)
                    if not data:
                        error = PeerClosedError("the broker closed the connection", node=self.node)
                        break
                    self._reading = True  # slots its answers free are refilled in one write
                    self._dispatch(protocol.receive_data(data))
                    self._reading = False
            except KafkaCompatError as exc:
                error = exc
            except Exception as exc:  # a bug: the pending requests learn of it before anyone else
                error = self._bug(exc, "reader")
                if self._nursery is not None:
                    raise  # the nursery's owner sees it, as before
            finally:
                # However the reader ends (a failure, aclose, a write cut off half-way),
                # the writer and the socket go with it.
                self._reading = False
                if error is not None and not self._closed:
                    log.debug("connection %s failed: %s", self.node, error)
                self._dispatch(protocol.closed(error))
                cancel_scopes(scopes)
                await stream.aclose()


def cancel_scopes(scopes: Scopes | None) -> None:
    if scopes is not None:
        for scope in scopes:
            scope.cancel()
