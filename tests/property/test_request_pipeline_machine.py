"""A hypothesis state machine walks the request pipeline against a broker model.

The model broker answers written requests in order, sometimes twice over an
abandoned one, sometimes with a stray id; reads arrive split at any byte; callers
send past the in-flight bound and give up at any stage (waiting for a slot,
queued, being written, written); the driver writes only when ``write_due_at``
says so, on a clock that moves; the connection may close at any point.
Whatever happens: no response reaches the wrong request, every request ends
exactly once, no more than ``max_in_flight`` are ever out, requests go out in
the order they were sent, a request given up before it was written never is,
a request waiting while a slot is free is never held longer than
``REFILL_DELAY``, and ``expire`` ends exactly the requests whose deadline has
passed (``next_deadline`` naming the earliest of the others).
"""

from __future__ import annotations

import math
from collections import deque

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kafkacompat.connection._request_pipeline import (
    REFILL_DELAY,
    ConnectionFailed,
    PipelineEvent,
    RequestFailed,
    RequestPipeline,
    ResponseReceived,
    SentWithoutReply,
    Ticket,
)
from kafkacompat.negotiation.pipeline_events import Stage
from kafkacompat.protocol import broker_framing, framing, messages


class PipelineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.bound = 4
        self.pipe = RequestPipeline(max_in_flight=self.bound, max_abandoned=6)
        self.now = 0.0
        self.last_written_id = -1  # ids go out in send order (no wrap this early)
        self.never_to_write: set[int] = set()  # ids given up before they were written
        self.tickets: dict[int, Ticket] = {}  # every ticket ever handed out, by ticket number
        self.tags: dict[int, int] = {}  # id(ticket) -> the tag its request carried
        self.ended: dict[int, str] = {}  # id(ticket) -> how it ended
        self.broker_queue: deque[tuple[int, int, bool]] = deque()  # (correlation id, tag, acks0) written
        self.wire = bytearray()  # bytes the broker sent and the client has not read yet
        self.writing = False
        self.pending_write = b""
        self.tag_counter = 0

    # -- the client ---------------------------------------------------------------------

    @initialize(bound=st.sampled_from([1, 2, 8]))  # 8: a refill under a quarter of it is put off
    def choose_bound(self, bound: int) -> None:
        self.bound = bound
        self.pipe = RequestPipeline(max_in_flight=bound, max_abandoned=6)

    @precondition(lambda self: self.pipe.failure is None)
    @rule(
        acks0=st.lists(st.booleans(), min_size=1, max_size=10),  # a burst: past the bound at once
        timeout=st.sampled_from([0.5, 2.0, math.inf]),
    )
    def send(self, acks0: list[bool], timeout: float) -> None:
        for each in acks0:
            self._send_one(each, self.now + timeout)

    def _send_one(self, acks0: bool, deadline: float) -> None:
        self.tag_counter += 1
        tag = self.tag_counter
        if acks0:
            ticket = self.pipe.send(messages.ProduceRequest(acks=0, timeout_ms=tag), 3, deadline)
        else:
            ticket = self.pipe.send(messages.MetadataRequest(topics=[]), 1, deadline)
        self.tickets[len(self.tickets)] = ticket
        self.tags[id(ticket)] = tag

    @rule(seconds=st.sampled_from([0.0, REFILL_DELAY / 4, REFILL_DELAY, 1.0]))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds

    @precondition(lambda self: not self.writing)
    @rule()
    def start_write(self) -> None:
        due = self.pipe.write_due_at(self.now)
        if self.pipe.waiting and self.pipe.in_flight < self.bound and self.pipe.failure is None:
            assert due <= self.now + REFILL_DELAY, "a request waits for a free slot with no write due"
        if due > self.now:
            assert self.pipe.bytes_to_send() == b"", "bytes to send while no write was due"
            return
        data = self.pipe.bytes_to_send()
        assert data, "a write was due with nothing to write"
        self.writing = True
        self.pending_write = data

    @precondition(lambda self: self.writing)
    @rule()
    def finish_write(self) -> None:
        self.writing = False
        splitter = framing.FrameSplitter()
        for frame in splitter.feed(self.pending_write):
            request = broker_framing.decode_request(frame)
            correlation_id = request.header.correlation_id
            assert correlation_id > self.last_written_id, "written out of send order"
            assert correlation_id not in self.never_to_write, "a request given up before writing went out"
            self.last_written_id = correlation_id
            acks0 = request.header.request_api_key == 0
            self.broker_queue.append((request.header.correlation_id, self._tag_of(request), acks0))
        self._handle(self.pipe.write_done())

    @rule(data=st.data())
    def give_up(self, data: st.DataObject) -> None:
        live = [t for t in self.tickets.values() if id(t) not in self.ended]
        if not live:
            return
        ticket = data.draw(st.sampled_from(live))
        self.ended[id(ticket)] = "abandoned"
        if ticket.stage in (Stage.WAITING, Stage.QUEUED):
            self.never_to_write.add(ticket.correlation_id)
        events = self.pipe.abandon(ticket)
        self._handle(events, abandoned=ticket)

    @rule()
    def deadlines_pass(self) -> None:
        live = [t for t in self.tickets.values() if id(t) not in self.ended]
        due = {id(t) for t in live if t.deadline <= self.now}
        unwritten = (Stage.WAITING, Stage.QUEUED)
        before_write = {t.correlation_id for t in live if id(t) in due and t.stage in unwritten}
        events = self.pipe.expire(self.now)
        timed_out = {id(e.ticket) for e in events if isinstance(e, RequestFailed)}
        # One cut off mid-write fails the connection: the others end with it, not by their deadline.
        failed = {id(t) for e in events if isinstance(e, ConnectionFailed) for t in e.failed}
        assert timed_out <= due, "expire ended a request whose deadline had not passed"
        assert due <= timed_out | failed, "a request whose deadline passed did not end"
        self.never_to_write |= before_write
        self._handle(events)
        left = [t.deadline for t in self.tickets.values() if id(t) not in self.ended]
        assert all(deadline > self.now for deadline in left)
        assert self.pipe.next_deadline() == min(left, default=math.inf)

    @rule(roll=st.integers(0, 9))
    def close(self, roll: int) -> None:
        if roll == 0:  # rare, so that most runs get far before the connection ends
            self._handle(self.pipe.connection_lost())

    @precondition(lambda self: self.pipe.failure is not None)
    @rule()
    def reconnect(self) -> None:
        # A new connection starts a new pipeline; the old one's requests all ended.
        self.pipe = RequestPipeline(max_in_flight=self.bound, max_abandoned=6)
        self.last_written_id = -1
        self.never_to_write.clear()
        self.broker_queue.clear()
        self.wire.clear()
        self.writing = False

    # -- the broker ---------------------------------------------------------------------

    @precondition(lambda self: bool(self.broker_queue))
    @rule(answer_acks0=st.booleans())
    def broker_answers(self, answer_acks0: bool) -> None:
        correlation_id, tag, acks0 = self.broker_queue.popleft()
        if acks0 and not answer_acks0:
            return
        answer = broker_framing.encode_response
        if acks0:
            body = answer(messages.ProduceResponse(throttle_time_ms=tag), 3, correlation_id)
        else:
            body = answer(messages.MetadataResponse(controller_id=tag), 1, correlation_id)
        self.wire += body

    @rule(stray=st.integers(min_value=10_000, max_value=20_000), roll=st.integers(0, 9))
    def broker_answers_a_stray_id(self, stray: int, roll: int) -> None:
        if roll == 0:
            self.wire += broker_framing.encode_response(messages.MetadataResponse(controller_id=-1), 1, stray)

    @precondition(lambda self: bool(self.wire))
    @rule(cut=st.integers(min_value=1, max_value=200))
    def client_reads(self, cut: int) -> None:
        chunk, self.wire = bytes(self.wire[:cut]), self.wire[cut:]
        self._handle(self.pipe.receive_data(chunk))

    # -- checking what the pipeline says ------------------------------------------------

    def _tag_of(self, request: broker_framing.RequestFrame) -> int:
        body = request.body
        if isinstance(body, messages.ProduceRequest):
            return body.timeout_ms
        for ticket in self.tickets.values():
            if ticket.correlation_id == request.header.correlation_id and id(ticket) not in self.ended:
                return self.tags[id(ticket)]
        return -1

    def _end(self, ticket: Ticket, how: str) -> None:
        assert id(ticket) not in self.ended, f"{ticket} ended twice: {self.ended[id(ticket)]} then {how}"
        self.ended[id(ticket)] = how

    def _handle(self, events: list[PipelineEvent], abandoned: Ticket | None = None) -> None:
        for event in events:
            if isinstance(event, ResponseReceived):
                assert isinstance(event.response, messages.MetadataResponse)
                assert event.response.controller_id == self.tags[id(event.ticket)], "misrouted"
                self._end(event.ticket, "answered")
            elif isinstance(event, SentWithoutReply):
                self._end(event.ticket, "sent")
            elif isinstance(event, RequestFailed):
                self._end(event.ticket, "failed")
            elif isinstance(event, ConnectionFailed):
                for ticket in event.failed:
                    assert ticket is not abandoned, "a request given up was failed as well"
                    self._end(ticket, "failed")

    @invariant()
    def every_live_request_is_counted_and_at_most_the_bound_hold_a_slot(self) -> None:
        live = [t for t in self.tickets.values() if id(t) not in self.ended]
        if self.pipe.failure is not None:
            assert live == [], "a failed connection left requests pending"
        assert self.pipe.in_flight + self.pipe.waiting == len(live)
        assert self.pipe.in_flight <= self.bound
        assert self.pipe.waiting == sum(t.stage is Stage.WAITING for t in live)
        if self.pipe.waiting:  # nobody jumps the queue: the waiting ones are the newest
            oldest_waiting = min(t.correlation_id for t in live if t.stage is Stage.WAITING)
            assert all(t.correlation_id < oldest_waiting for t in live if t.stage is not Stage.WAITING)

    def teardown(self) -> None:
        # Closing ends whatever is left: afterwards every request has ended exactly once.
        self._handle(self.pipe.connection_lost())
        assert all(id(t) in self.ended for t in self.tickets.values())


TestPipelineMachine = PipelineMachine.TestCase
TestPipelineMachine.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
