"""The trio driver's tasks for one ready connection: the reader, the writer and the timer.

``BrokerConnection`` makes one ``ConnectionTasks`` per negotiated socket and
hands it the sans-I/O connection, the stream and what to call with the events
they bring (which callers to wake).  The tasks start with
the first request: a connection opened only to read the capabilities never
needs them.  They run in the nursery given to ``open``, else as system tasks
the connection owns: a nursery per connect cost a fifth of a bare
``trio.socket`` round trip (its exit is a schedule point).  A system task must
never raise (the run would end in ``TrioInternalError``), so each turns any
exception into the connection's failure; it runs in a copy of the opener's
context variables, and trio leaves KeyboardInterrupt to the application's task.

When a write is due is the connection's decision (``write_due_at``: a refill
of slots answers freed may be put off for company); the waiting is done here.
The writer sends whatever is due in one write.  The reader, after dispatching
what it read, writes what became due itself, just before it waits for more
(``_write_now``): waking the writer for it would cost a scheduling round trip
per wave.

The timer is one sleeping task, in one cancel scope whose deadline it moves:
it wakes at the connection's earliest request deadline (``next_deadline``),
when it ends what passed (``expire``), or at a write put off, which it makes.
A cancel scope per request would cost two registrations in trio's deadline
heap each: at thousands of pipelined requests a second, a large share of a
request's cost.  Everything runs on trio's clock, so an autojump ``MockClock``
drives it in tests.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import math
from collections.abc import Awaitable, Callable

import trio

from kafkacompat.connection.client_connection import ClientConnection
from kafkacompat.errors import KafkaCompatError, PeerClosedError, TransportError
from kafkacompat.negotiation.pipeline_events import PipelineEvent
from kafkacompat.transport.stream import ByteStream

__all__ = ["ConnectionTasks"]

log = logging.getLogger("kafkacompat.transport")

Scopes = tuple[trio.CancelScope, trio.CancelScope, trio.CancelScope]  # reader, writer, timer


class ConnectionTasks:
    """The three tasks of one ready connection; ``dispatch`` wakes the callers events name."""

    def __init__(
        self,
        protocol: ClientConnection,
        stream: ByteStream,
        dispatch: Callable[[list[PipelineEvent]], None],
        nursery: trio.Nursery | None,
        node: str,
    ) -> None:
        self.protocol = protocol
        self.stream = stream
        self._dispatch = dispatch
        self._nursery = nursery
        self._node = node
        self._now = trio.lowlevel.current_clock().current_time  # read directly: no lookup per call
        self._scopes: Scopes | None = None
        self._writer: trio.lowlevel.Task | None = None  # the writer, while it waits for work
        self._writing_now = False  # _write_now is sending, on the writer's behalf
        self._reading = False  # the reader is dispatching what it read: it writes before waiting
        self._check_writes = False  # requests ended while reading: a refill may be due
        self._unsent: memoryview | None = None  # the rest of a write _write_now began
        self._write_put_off_to = math.inf  # a write put off is due then
        self._timer: trio.CancelScope | None = None  # the timer's scope, while it sleeps

    # -- what the connection calls ------------------------------------------------------

    def queued(self, deadline: float) -> None:
        """A request was queued, to end by ``deadline``: the writer takes it (with the others
        of this scheduling round), the timer wakes for it if it is the earliest."""
        if self._scopes is None:
            self._start()
        self._wake_timer_by(deadline)
        self._wake_writer()

    def slots_may_be_free(self) -> None:
        """Requests ended (answered, given up): a write of waiting ones may be due."""
        if self._reading:
            self._check_writes = True  # the reader writes before it next waits
        else:
            self._write_if_due()

    def stop(self) -> None:
        """Cancel the tasks; the reader closes the socket on its way out."""
        _cancel(self._scopes)

    # -- writing ------------------------------------------------------------------------

    def _write_if_due(self) -> None:
        self._check_writes = False
        if self._writer is None or self._writing_now:
            return  # the writer is busy: it asks when its write is done
        now = self._now()
        due = self.protocol.write_due_at(now)
        if due <= now:
            self._write_now()
        else:
            self._write_at(due)

    def _write_at(self, due: float) -> None:
        """A write put off until ``due``: the timer makes it then."""
        if due < self._write_put_off_to:
            self._write_put_off_to = due
            self._wake_timer_by(due)

    # -- the timer ----------------------------------------------------------------------

    def _wake_timer_by(self, at: float) -> None:
        timer = self._timer
        if timer is not None and at < timer.deadline:
            timer.deadline = at

    async def _timer_loop(self) -> None:
        """Sleep until the connection's next instant: end the requests whose deadline passed,
        make a write put off."""
        protocol = self.protocol
        while True:
            now = self._now()
            self._dispatch(protocol.expire(now))
            if self._write_put_off_to <= now:
                self._write_put_off_to = math.inf
                self._write_if_due()
            with trio.CancelScope(deadline=min(protocol.next_deadline(), self._write_put_off_to)) as timer:
                self._timer = timer
                try:
                    await trio.sleep_forever()
                finally:
                    self._timer = None

    # -- writing without waiting ----------------------------------------------------------

    def _write_now(self) -> None:
        """The parked writer's work, done by the task that found it due: the kernel almost
        always takes a wave of requests at once.  What it does not take is left to the writer."""
        protocol, stream = self.protocol, self.stream
        self._writing_now = True  # a write_done below may free slots: this loop sends those too
        try:
            while protocol.failure is None:
                now = self._now()
                due = protocol.write_due_at(now)
                if due > now:
                    self._write_at(due)  # put off (or nothing to write): the alarm, if any
                    return
                data = protocol.bytes_to_send()
                rest = stream.send_now(data)
                if rest is None or rest:  # TLS, or the kernel's buffer is full: the writer waits
                    self._unsent = memoryview(data) if rest is None else rest
                    self._wake_writer()
                    return
                self._dispatch(protocol.write_done())
        except KafkaCompatError as exc:
            self._dispatch(protocol.closed(exc))  # the stream cannot be trusted: all fail
        finally:
            self._writing_now = False

    def _wake_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            trio.lowlevel.reschedule(writer)

    def _writer_aborted(self, raise_cancel: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        self._writer = None
        return trio.lowlevel.Abort.SUCCEEDED

    async def _write_loop(self) -> None:
        """Write whatever is due, in one send: one system call and one scheduling round trip
        per wave of requests (a per-key lookup of a thousand groups), not per request."""
        protocol, stream = self.protocol, self.stream
        try:
            while protocol.failure is None:
                data: bytes | memoryview | None = self._unsent
                if data is not None:  # a write begun without waiting, to finish
                    self._unsent = None
                else:
                    now = self._now()
                    due = protocol.write_due_at(now)
                    data = protocol.bytes_to_send() if due <= now else b""
                    if not data:
                        self._write_at(due)
                if not data:
                    self._writer = trio.lowlevel.current_task()
                    await trio.lowlevel.wait_task_rescheduled(self._writer_aborted)
                    continue
                await stream.send_all(data)
                self._dispatch(protocol.write_done())
        except KafkaCompatError as exc:
            self._dispatch(protocol.closed(exc))
        finally:
            if self._writer is trio.lowlevel.current_task():
                self._writer = None

    # -- reading ------------------------------------------------------------------------

    def _before_waiting(self) -> None:
        if self._check_writes:
            self._write_if_due()

    async def _read_loop(self) -> None:
        protocol, stream = self.protocol, self.stream
        error: KafkaCompatError | None = None
        before_waiting = self._before_waiting
        try:
            while protocol.is_ready:
                room = protocol.body_room() if stream.reads_into else None
                if room is not None:  # plain TCP, a body under way: straight into its buffer
                    count = await stream.receive_into(room, before_waiting)
                    del room
                    if count:
                        self._reading = True
                        self._dispatch(protocol.body_filled(count))
                        self._reading = False
                        continue
                    data = b""
                else:
                    data = await stream.receive_some(before_waiting)
                if not data:
                    error = PeerClosedError("the broker closed the connection", node=self._node)
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
            # However the reader ends (a failure, a close, a write cut off half-way), the
            # writer and the socket go with it.
            self._reading = False
            if error is not None and protocol.is_ready:
                log.debug("connection %s failed: %s", self._node, error)
            self._dispatch(protocol.closed(error))
            _cancel(self._scopes)
            await stream.aclose()

    # -- starting and guarding the tasks ------------------------------------------------

    def _start(self) -> None:
        # The scopes exist before the tasks run, so an early stop() can cancel them;
        # start_soon spares the scheduling round trip nursery.start would cost.
        scopes = self._scopes = (trio.CancelScope(), trio.CancelScope(), trio.CancelScope())
        tasks = (
            (functools.partial(self._scoped, scopes[0], self._read_loop), "reader"),
            (functools.partial(self._scoped, scopes[1], self._write_loop), "writer"),
            (functools.partial(self._scoped, scopes[2], self._timer_loop), "timer"),
        )
        if self._nursery is not None:
            for body, name in tasks:
                self._nursery.start_soon(body, name=f"kafkacompat {name} {self._node}")
            return
        try:
            for body, name in tasks:
                trio.lowlevel.spawn_system_task(
                    self._guarded, body, name, name=f"kafkacompat {name} {self._node}",
                    context=contextvars.copy_context(),
                )
        except RuntimeError as exc:  # the run is ending: trio takes no new system tasks
            error = TransportError(f"cannot start the connection's tasks: {exc}", node=self._node)
            self._dispatch(self.protocol.closed(error))
            _cancel(scopes)

    async def _scoped(self, scope: trio.CancelScope, body: Callable[[], Awaitable[None]]) -> None:
        """Run ``body`` in its scope; however it ends, the other tasks end too."""
        with scope:
            try:
                await body()
            finally:
                _cancel(self._scopes)

    async def _guarded(self, body: Callable[[], Awaitable[None]], name: str) -> None:
        """A system task's body: nothing but Cancelled may leave it (see the module's doc)."""
        try:
            await body()
        except Exception as exc:
            self._dispatch(self.protocol.closed(self._bug(exc, name)))
            _cancel(self._scopes)

    def _bug(self, exc: Exception, task: str) -> TransportError:
        """What the callers see of an unexpected exception in one of the connection's tasks."""
        log.error("connection %s: its %s task failed", self._node, task, exc_info=exc)
        return TransportError(f"the connection's {task} task failed: {exc!r}", node=self._node)


def _cancel(scopes: Scopes | None) -> None:
    if scopes is not None:
        for scope in scopes:
            scope.cancel()
