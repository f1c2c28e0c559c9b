"""Request deadlines in the sans-I/O pipeline: ``expire(now)`` ends what passed, and only that."""

from __future__ import annotations

import math

from kafkacompat.connection._request_deadlines import COMPACT_AT, RequestDeadlines
from kafkacompat.connection._request_pipeline import (
    ConnectionFailed,
    RequestFailed,
    RequestPipeline,
    ResponseReceived,
)
from kafkacompat.errors import KafkaTimeoutError, TransportError
from kafkacompat.negotiation.pipeline_events import Stage, Ticket
from kafkacompat.protocol import broker_framing, messages


def metadata_request() -> messages.MetadataRequest:
    return messages.MetadataRequest(topics=[])


def metadata_answer(correlation_id: int) -> bytes:
    return broker_framing.encode_response(messages.MetadataResponse(controller_id=1), 1, correlation_id)


def written(pipe: RequestPipeline) -> None:
    pipe.bytes_to_send()
    pipe.write_done()


def test_requests_expire_at_their_deadlines_earliest_first_and_answered_ones_never() -> None:
    pipe = RequestPipeline()
    thirty = pipe.send(metadata_request(), 1, deadline=30)
    answered = pipe.send(metadata_request(), 1, deadline=20)
    ten = pipe.send(metadata_request(), 1, deadline=10)
    forever = pipe.send(metadata_request(), 1)  # no deadline
    written(pipe)
    assert pipe.next_deadline() == 10
    assert pipe.expire(9.9) == []
    (event,) = pipe.expire(10)
    assert isinstance(event, RequestFailed) and event.ticket is ten
    assert isinstance(event.error, KafkaTimeoutError)
    assert "no response to MetadataRequest v1 within the timeout" in str(event.error)
    # The first request's answer arrives; the second's (answered at 15) too, in order.
    answers = metadata_answer(thirty.correlation_id) + metadata_answer(answered.correlation_id)
    events = pipe.receive_data(answers)
    assert [e.ticket for e in events if isinstance(e, ResponseReceived)] == [thirty, answered]
    assert pipe.next_deadline() == math.inf  # the ones that ended are not waited for
    assert pipe.expire(1000) == []
    assert forever.stage is Stage.WRITTEN  # no deadline: never expires


def test_an_expired_request_is_taken_back_and_its_late_answer_dropped() -> None:
    pipe = RequestPipeline()
    late = pipe.send(metadata_request(), 1, deadline=5)
    after = pipe.send(metadata_request(), 1, deadline=50)
    written(pipe)
    (event,) = pipe.expire(6)
    assert event.ticket is late and late.stage is Stage.ENDED and pipe.in_flight == 1
    events = pipe.receive_data(metadata_answer(late.correlation_id) + metadata_answer(after.correlation_id))
    assert [type(e) for e in events] == [ResponseReceived] and events[0].ticket is after


def test_a_request_still_waiting_for_a_slot_says_so_and_is_never_written() -> None:
    pipe = RequestPipeline(max_in_flight=1)
    first = pipe.send(metadata_request(), 1, deadline=100)
    waiting = pipe.send(metadata_request(), 1, deadline=5)
    assert waiting.stage is Stage.WAITING
    (event,) = pipe.expire(5)
    assert event.ticket is waiting
    assert "waiting for one of the 1 in-flight slots to send MetadataRequest v1" in str(event.error)
    assert pipe.bytes_to_send() == first.frame  # the one that expired is not in the write
    assert pipe.waiting == 0


def test_a_request_that_expires_mid_write_fails_the_connection() -> None:
    pipe = RequestPipeline()
    cut = pipe.send(metadata_request(), 1, deadline=5)
    other = pipe.send(metadata_request(), 1, deadline=50)
    pipe.bytes_to_send()  # the write is under way
    timed_out, failed = pipe.expire(5)
    assert isinstance(timed_out, RequestFailed) and timed_out.ticket is cut
    assert isinstance(failed, ConnectionFailed) and failed.failed == (other,)
    assert isinstance(failed.error, TransportError)
    assert pipe.expire(60) == []  # the other ended with the connection: it does not expire again


def test_ended_requests_do_not_pile_up_in_the_heap() -> None:
    deadlines = RequestDeadlines()
    for i in range(20_000):  # answered in time, one after another, none expired yet
        ticket = Ticket(i, 3, 1, messages.MetadataResponse, True, b"", deadline=1000.0 + i)
        deadlines.add(ticket, live=1)
        ticket.stage = Stage.ENDED
    assert len(deadlines) <= COMPACT_AT + 1
    assert deadlines.next_deadline() == math.inf and len(deadlines) == 0


def test_a_failed_connection_forgets_its_deadlines() -> None:
    pipe = RequestPipeline()
    pipe.send(metadata_request(), 1, deadline=5)
    pipe.connection_lost()
    assert pipe.next_deadline() == math.inf and pipe.expire(10) == []
