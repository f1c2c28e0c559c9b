"""The request side of a negotiated connection, as a sans-I/O state machine.

Theory
======
Kafka answers the requests of one connection in the order they were written
(KIP-35 made no change to that; it is how the broker's socket server works),
and every response header starts with the correlation id of its request.  A
client can therefore keep many requests in flight on one connection, and it
must check that each response carries the id of the oldest request still
waiting for one.  Any other id (one nobody asked for, or another caller's, out
of turn) means the stream can no longer be trusted: every pending request
fails and the connection must be closed, so that nothing is ever handed to the
wrong caller.  Two exceptions follow from Kafka itself:

- A Produce request with ``acks=0`` gets no response from Apache Kafka; it
  ends once written.  Some brokers (Tansu, librdkafka's mock) answer anyway:
  such an answer, recognised by its id, is dropped.
- A caller may give up (timeout, cancellation).  A request not yet written is
  taken back as if never asked; one already written leaves its correlation id
  behind, and its late answer is read and dropped; one cut off half-way
  through being written corrupts the stream, so the connection fails.

A request may carry a deadline, on the driver's clock: ``expire(now)`` ends
every request whose deadline has passed with a ``KafkaTimeoutError`` (saying
whether it was still waiting for a slot or for its answer), and takes it back
as a caller giving up would.  The driver keeps one timer, at
``next_deadline()``, for all of them (``_request_deadlines``).

At most ``max_in_flight`` requests hold a slot (queued to write, being written
or awaiting their answer); ``send`` takes any number, and the requests past
the bound wait here, in order, for a slot.  Slots freed by answers are refilled
in waves of a quarter of the bound: a broker that answers one request at a time
would otherwise cost the driver a write (a system call, a scheduling step) per
answer.  A smaller refill is put off ``REFILL_DELAY`` at most, from the first
time the driver asked, so that requests behind a slow one (a long-polling
Fetch) are not held back.  ``write_due_at(now)`` says when the next write is
due; the driver only waits for that instant.

Each answer is held, from its size prefix and before anything is allocated
for it, to the ceiling that fits the request it answers (``ReplyLimits``); and
a close that meets a request at a version Kafka 4.x removed is reported to that
caller as the removal it is (``VersionRemovedError``), not as a bare close.

This object owns those rules and nothing else: no sockets, no clocks, no
tasks.  The drivers (trio, blocking) write the bytes it hands out, feed it the
bytes they read, and wake the callers named in the events it returns.

Every request handed out by ``send`` ends exactly once, with one of:
``ResponseReceived``, ``RequestFailed`` (alone, its deadline's among them, or as
one of the requests a ``ConnectionFailed`` lists), ``SentWithoutReply`` (acks=0),
or the caller's own ``abandon``.  A hypothesis state machine in the tests walks that promise.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from typing import Final

from kafkacompat.connection._request_deadlines import RequestDeadlines
from kafkacompat.connection.config import DEFAULT_MAX_IN_FLIGHT
from kafkacompat.errors import (
    DecodeError,
    KafkaCompatError,
    KafkaTimeoutError,
    PipelineStateError,
    ProtocolError,
    ReplyTooLargeError,
    TransportError,
    attach_context,
)
from kafkacompat.negotiation.pipeline_events import (
    ConnectionFailed,
    PipelineEvent,
    RequestFailed,
    ResponseReceived,
    SentWithoutReply,
    Stage,
    Ticket,
)
from kafkacompat.protocol import _wire, framing, messages
from kafkacompat.protocol.framing import DEFAULT_HEADERS, RequestHeaders
from kafkacompat.protocol.message import KafkaMessage, Reader, decode_at
from kafkacompat.protocol.messages.api_key_numbers import PRODUCE
from kafkacompat.protocol.reply_limits import ReplyLimits
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "REFILL_DELAY",
    "ConnectionFailed",
    "PipelineEvent",
    "RequestFailed",
    "RequestPipeline",
    "ResponseReceived",
    "SentWithoutReply",
    "Ticket",
]

_INT32_MAX: Final = 0x7FFFFFFF
_INT32: Final = _wire.INT32
_PRODUCE: Final = PRODUCE  # compared for every request
#: acks=0 correlation ids remembered, in case the broker answers them anyway.
ACKS0_MEMORY: Final = 1024
#: Seconds a refill smaller than a wave (a quarter of the slots) waits for company at most.
REFILL_DELAY: Final = 0.001
_QUEUED, _WAITING = Stage.QUEUED, Stage.WAITING

#: Per API key and version: the request header's bytes before and after the correlation id,
#: the response class, the response header's version, the answer's size ceiling (None: it
#: depends on the request) and the codec's reader of the answer at that version.
_Shape = tuple[bytes, bytes, type[KafkaMessage], int, int | None, Reader | None]


class RequestPipeline:
    """Correlation ids, in-flight requests and response matching for one connection.

    ``first_correlation_id`` continues the handshake's numbering (its
    ``next_correlation_id``), so one counter serves the connection's whole life.
    ``max_in_flight`` bounds the requests holding a slot (the rest wait for
    one); ``max_abandoned`` the written requests given up and still unanswered;
    ``frames`` splits the byte stream (its size limit is checked before a frame
    is buffered).
    """

    def __init__(
        self,
        *,
        node: str | None = None,
        headers: RequestHeaders = DEFAULT_HEADERS,
        first_correlation_id: int = 0,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_abandoned: int = 1024,
        frames: framing.FrameSplitter | None = None,
        reply_limits: ReplyLimits | None = None,
        api_ranges: Mapping[int, VersionRange] | None = None,
        response_class: Callable[[int], type[KafkaMessage]] | None = None,
    ) -> None:
        if not 0 <= first_correlation_id <= _INT32_MAX:
            raise PipelineStateError(f"correlation id {first_correlation_id} is not a non-negative int32")
        if max_in_flight < 1:
            raise PipelineStateError(f"max_in_flight must be at least 1, not {max_in_flight}")
        self.node = node
        self._headers = headers
        self.max_in_flight = max_in_flight
        self.max_abandoned = max_abandoned
        self._next_id = first_correlation_id
        self._frames = frames if frames is not None else framing.FrameSplitter()
        self._limits = reply_limits if reply_limits is not None else ReplyLimits()
        self._ranges = api_ranges  # what the broker advertised: tells a removed version's close
        self._response_class = response_class or _response_class
        self._shapes: dict[tuple[int, int], _Shape] = {}
        self._live: dict[int, Ticket] = {}  # every request not ended, by id
        self._waiting: deque[Ticket] = deque()  # past the in-flight bound, in send order
        self._held_since: float | None = None  # a refill smaller than a wave was put off then
        self._outbox: deque[Ticket] = deque()  # holding a slot, not yet written, in send order
        self._writing: list[Ticket] = []
        self._awaiting: deque[int] = deque()  # ids written that expect an answer, oldest first
        self._expected: dict[int, tuple[int, str]] = {}  # awaited id -> (size ceiling, response name)
        self._abandoned: set[int] = set()  # written, given up by their caller
        self._acks0: dict[int, None] = {}  # recent acks=0 ids, oldest first
        self._deadlines = RequestDeadlines()
        self._failure: KafkaCompatError | None = None

    # -- queries ------------------------------------------------------------------------

    @property
    def failure(self) -> KafkaCompatError | None:
        """The error that ended the connection, once it has failed."""
        return self._failure

    @property
    def in_flight(self) -> int:
        """Requests holding a slot: queued to write, being written, or awaiting their answer."""
        return len(self._live) - len(self._waiting)

    @property
    def waiting(self) -> int:
        """Requests past the in-flight bound, waiting for a slot."""
        return len(self._waiting)

    @property
    def next_correlation_id(self) -> int:
        return self._next_id

    # -- the request side ---------------------------------------------------------------

    def send(self, message: KafkaMessage, version: int, deadline: float = math.inf) -> Ticket:
        """Queue ``message`` at ``version``: encoded now (an error is the caller's), written
        with ``bytes_to_send`` once it holds a slot; past the bound it waits for one.
        Past ``deadline`` (the driver's clock; inf: never), ``expire`` ends it."""
        if self._failure is not None:
            raise self._failure.with_traceback(None)
        if message.MESSAGE_TYPE != "request" or message.API_KEY is None:
            raise ProtocolError(f"{message.NAME} is not a request", node=self.node)
        correlation_id = self._next_id
        api_key = message.API_KEY
        shape = self._shapes.get((api_key, version))
        if shape is None:
            shape = self._shapes[(api_key, version)] = self._shape(api_key, version)
        before, after, response_cls, header_version, limit, reader = shape
        body = message.encode(version)
        size = _INT32.pack(len(before) + 4 + len(after) + len(body))
        frame = b"".join((size, before, _INT32.pack(correlation_id), after, body))
        self._next_id = 0 if correlation_id == _INT32_MAX else correlation_id + 1
        if limit is None:  # this request's own ceiling (a Metadata request, by what it asks for)
            limit = self._limits.limit_for(api_key, self._frames.max_size, message, version)
        expects_reply = api_key != _PRODUCE or getattr(message, "acks", 1) != 0  # acks=0: no answer
        ticket = Ticket(
            correlation_id, api_key, version, response_cls, expects_reply, frame, limit, header_version,
            reader, name=message.NAME, deadline=deadline,
        )
        self._live[correlation_id] = ticket
        if deadline < math.inf:
            self._deadlines.add(ticket, len(self._live))
        if self._waiting or len(self._live) > self.max_in_flight:  # behind those already waiting
            ticket.stage = _WAITING
            self._waiting.append(ticket)
        else:
            self._outbox.append(ticket)
        return ticket

    def write_due_at(self, now: float) -> float:
        """When the next write is due: ``now`` or earlier (write ``bytes_to_send()``), a later
        instant (a refill put off: ask again then), or ``inf`` (nothing to write).

        Requests waiting for a slot take the slots answers freed here, in waves (see the
        module's doc); none is due while a write is unconfirmed.
        """
        if self._failure is not None or self._writing:
            return math.inf
        if self._waiting:
            self._refill(now)
        if self._outbox:
            return now
        held = self._held_since
        return math.inf if held is None else held + REFILL_DELAY

    def _refill(self, now: float) -> None:
        bound, waiting = self.max_in_flight, self._waiting
        free = bound - (len(self._live) - len(waiting))
        if free <= 0:
            self._held_since = None  # nothing freed to hold back
            return
        held = self._held_since
        if free < max(1, bound // 4) and free < bound and (held is None or now < held + REFILL_DELAY):
            if held is None:
                self._held_since = now
            return
        self._held_since = None
        outbox = self._outbox
        for _ in range(min(free, len(waiting))):
            ticket = waiting.popleft()
            ticket.stage = _QUEUED
            outbox.append(ticket)

    def _shape(self, api_key: int, version: int) -> _Shape:
        """What every request of ``api_key`` at ``version`` shares on this connection.

        The connection's request header around its correlation id (``RequestHeaders``
        encodes it once per API and version, for every phase), the response
        class, the response header's version and the ceiling for the answer's
        size unless it depends on the request: a request then costs its body.
        """
        before, after = self._headers.around_id(api_key, version)
        response_cls = self._response_class(api_key)
        limits, max_size = self._limits, self._frames.max_size
        limit = None if limits.depends_on_request(api_key) else limits.limit_for(api_key, max_size)
        readers = getattr(response_cls, "_READERS", None)
        reader = readers.get(version) if readers is not None else None
        return (
            before,
            after,
            response_cls,
            framing.response_header_version(api_key, version),
            limit,
            reader,
        )

    def bytes_to_send(self) -> bytes:
        """Every request holding a slot and not written yet, in one piece; ``b""`` when none.

        The requests are recorded as awaiting their answers before the first
        byte goes out (the answer may come back at once).  The driver confirms
        the write with ``write_done`` or reports its failure with
        ``connection_lost``; one write is in progress at a time.
        """
        if self._writing:
            raise PipelineStateError("the previous write has not been confirmed", node=self.node)
        if not self._outbox or self._failure is not None:
            return b""
        batch = list(self._outbox)
        self._outbox.clear()
        for ticket in batch:
            ticket.stage = Stage.WRITING
            if ticket.expects_reply:
                self._awaiting.append(ticket.correlation_id)
                self._expected[ticket.correlation_id] = (ticket.reply_limit, ticket.response_cls.NAME)
            else:
                self._acks0[ticket.correlation_id] = None
                if len(self._acks0) > ACKS0_MEMORY:
                    del self._acks0[next(iter(self._acks0))]
        self._writing = batch
        if len(batch) == 1:
            return batch[0].frame
        return b"".join(ticket.frame for ticket in batch)

    def write_done(self) -> list[PipelineEvent]:
        """The bytes of the last ``bytes_to_send`` are written."""
        batch, self._writing = self._writing, []
        events: list[PipelineEvent] = []
        for ticket in batch:
            ticket.frame = b""
            if ticket.stage is not Stage.WRITING:
                continue  # ended while being written (the connection failed)
            ticket.stage = Stage.WRITTEN
            if not ticket.expects_reply:
                events.append(SentWithoutReply(self._end(ticket)))
        return events

    def abandon(self, ticket: Ticket) -> list[PipelineEvent]:
        """The caller gave up on ``ticket``: take it back as far as it can be taken.

        Waiting or queued, it is never written.  Written, its late answer will be
        read and dropped.  Cut off while being written, the stream is corrupt:
        every other request fails (the returned ``ConnectionFailed``).
        """
        if ticket.stage is Stage.ENDED or self._live.get(ticket.correlation_id) is not ticket:
            return []
        if ticket.stage is _WAITING:
            self._waiting.remove(ticket)
            if not self._waiting:
                self._held_since = None
            self._end(ticket)
            return []
        if ticket.stage is _QUEUED:
            self._outbox.remove(ticket)
            self._end(ticket)
            return []
        if ticket.stage is Stage.WRITING:
            self._end(ticket)
            cut = TransportError("a request was given up while it was being written", node=self.node)
            return [self._fail(cut)]
        self._end(ticket)
        if ticket.expects_reply:
            self._abandoned.add(ticket.correlation_id)
            if len(self._abandoned) > self.max_abandoned:
                # Each one still holds a place in the broker's queue: a broker that
                # answers none of them would make this set grow without end.
                silent = KafkaTimeoutError(
                    f"{len(self._abandoned)} requests were given up without an answer; "
                    "the broker is not answering, so the connection must close",
                    node=self.node,
                )
                return [self._fail(silent)]
        return []

    def next_deadline(self) -> float:
        """The earliest deadline of a request that has not ended (inf: none): when to call
        ``expire`` next."""
        return self._deadlines.next_deadline()

    def expire(self, now: float) -> list[PipelineEvent]:
        """End every request whose deadline is ``now`` or before: a ``RequestFailed`` with the
        ``KafkaTimeoutError`` its caller is told, each taken back as ``abandon`` takes it (so
        one cut off mid-write fails the connection, the ``ConnectionFailed`` after it)."""
        events: list[PipelineEvent] = []
        for ticket in self._deadlines.due(now):
            if ticket.stage is Stage.ENDED:  # ended by the abandon of one before it
                continue
            late = ticket.timeout_error(self.max_in_flight, self.node)
            taken_back = self.abandon(ticket)
            events.append(RequestFailed(ticket, late))
            events += taken_back
        return events

    # -- the response side --------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[PipelineEvent]:
        """Bytes read from the connection; the events their complete frames cause."""
        if self._failure is not None:
            return []
        self._frames.push(data)
        return self.read_frames()

    def read_frames(self) -> list[PipelineEvent]:
        """The events of every whole frame already buffered (after ``receive_data``, or a
        driver that filled ``frames.body_room()`` itself)."""
        events: list[PipelineEvent] = []
        while self._failure is None:
            limit, what = self.next_reply_limit()
            try:
                frame = self._frames.next_frame(limit, what=what)
            except KafkaCompatError as exc:  # a size prefix above the ceiling, or not Kafka's
                events.append(self._fail(exc))
                break
            if frame is None:
                break
            event = self.receive_frame(frame)
            if event is not None:
                events.append(event)
        return events

    def next_reply_limit(self) -> tuple[int, str | None]:
        """The size ceiling for the next frame, and the response it should be."""
        if self._awaiting:
            return self._expected.get(self._awaiting[0], (self._frames.max_size, None))
        if self._acks0:  # a broker that answers acks=0 Produce anyway
            return self._frames.max_size, "ProduceResponse"
        return self._limits.handshake, None  # nothing was asked: whatever comes is refused

    def receive_frame(self, frame: bytes | bytearray | memoryview) -> PipelineEvent | None:
        """One response frame (without its size prefix)."""
        if self._failure is not None:
            return None
        if len(frame) < 4:
            return self._fail(framing.short_response_error())
        (correlation_id,) = _INT32.unpack_from(frame, 0)
        if self._awaiting and self._awaiting[0] == correlation_id:
            self._awaiting.popleft()
            self._expected.pop(correlation_id, None)
        elif correlation_id in self._acks0:  # a broker that answers acks=0 anyway
            del self._acks0[correlation_id]
            return None
        else:
            expected = self._awaiting[0] if self._awaiting else None
            wanted = "no request is awaiting an answer" if expected is None else (
                f"the oldest request awaiting an answer has {expected}"
            )
            return self._fail(
                ProtocolError(
                    f"the broker answered correlation id {correlation_id} where {wanted}; "
                    "the stream cannot be trusted, so the connection must close",
                    node=self.node,
                )
            )
        if self._abandoned and correlation_id in self._abandoned:
            self._abandoned.discard(correlation_id)
            return None
        ticket = self._live[correlation_id]  # awaited and not abandoned: still live
        # Trailing bytes are tolerated, as Kafka's Java client tolerates them.
        if ticket.response_header_version == 0:  # the header is the correlation id alone
            start = 4
        elif len(frame) > 4 and frame[4] == 0:  # a flexible header with no tagged fields
            start = 5
        else:  # tagged fields in the header: the codec reads it
            start = 0
        reader = ticket.reader
        try:
            self._limits.check_counts(ticket.api_key, ticket.version, frame, start)  # before decoding
            if start and reader is not None:
                # The body is read in place, from its offset in the frame: no view, no copy.
                response = _read_body(reader, frame, start, ticket)
            else:
                _, response = framing.decode_response(
                    frame, ticket.response_cls, ticket.version, allow_trailing=True
                )
        except (DecodeError, ReplyTooLargeError) as exc:
            return RequestFailed(self._end(ticket), attach_context(exc, node=self.node))
        return ResponseReceived(self._end(ticket), response)

    def connection_lost(self, error: KafkaCompatError | None = None) -> list[PipelineEvent]:
        """The connection closed, broke, or the driver closed it: every request left fails."""
        if self._failure is not None:
            return []
        return [self._fail(error or TransportError("the connection was closed", node=self.node))]

    # -- internals ----------------------------------------------------------------------

    def _end(self, ticket: Ticket) -> Ticket:
        ticket.stage = Stage.ENDED
        if self._live.get(ticket.correlation_id) is ticket:
            del self._live[ticket.correlation_id]
        return ticket

    def _fail(self, error: KafkaCompatError) -> ConnectionFailed:
        self._failure = attach_context(error, node=self.node)
        precise: dict[int, KafkaCompatError] = {}
        for ticket in self._live.values():
            if ticket.stage is Stage.WRITTEN:  # sent: the close may be the broker refusing its version
                from kafkacompat.protocol.removals import removed_version_error  # KIP-896 facts: only here

                removed = removed_version_error(error, ticket.api_key, ticket.version, self._ranges)
                if removed is not None:
                    precise[id(ticket)] = removed
        failed = tuple(self._end(ticket) for ticket in list(self._live.values()))
        self._outbox.clear()
        self._waiting.clear()
        self._held_since = None
        self._awaiting.clear()
        self._expected.clear()
        self._abandoned.clear()
        self._deadlines.clear()
        return ConnectionFailed(error, failed, precise)


def _read_body(
    reader: Reader, frame: bytes | bytearray | memoryview, start: int, ticket: Ticket
) -> KafkaMessage:
    """The answer's body, read in place from ``start`` in its frame (no view, no copy).

    A body that cannot be read is read again on its own by ``decode``, so that the
    error says exactly what the codec says of that body (offsets from its first byte).
    """
    try:
        response: KafkaMessage = decode_at(ticket.response_cls.NAME, reader, frame, start, ticket.version)[0]
    except DecodeError:
        return ticket.response_cls.decode(memoryview(frame)[start:], ticket.version, allow_trailing=True)
    return response


def _response_class(api_key: int) -> type[KafkaMessage]:
    try:
        name = messages.CLASS_BY_KEY[(api_key, "response")]
    except KeyError:
        raise ProtocolError(f"no response is known for API key {api_key}") from None
    cls: type[KafkaMessage] = getattr(messages, name)
    return cls
