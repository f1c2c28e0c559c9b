"""The sans-I/O request pipeline, driven with bytes only."""

from __future__ import annotations

import math

import pytest

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
from kafkacompat.errors import (
    DecodeError,
    KafkaTimeoutError,
    PipelineStateError,
    ProtocolError,
    TransportError,
)
from kafkacompat.negotiation.pipeline_events import Stage, endings
from kafkacompat.protocol import broker_framing, framing, messages
from kafkacompat.protocol.framing import RequestHeaders


def metadata_request() -> messages.MetadataRequest:
    return messages.MetadataRequest(topics=[])


def metadata_answer(correlation_id: int, controller_id: int = 1, version: int = 1) -> bytes:
    response = messages.MetadataResponse(controller_id=controller_id)
    return broker_framing.encode_response(response, version, correlation_id)


def test_requests_are_numbered_from_the_handshake_on_and_answered_in_order() -> None:
    pipe = RequestPipeline(node="b:9092", headers=RequestHeaders("me"), first_correlation_id=3)
    first, second = pipe.send(metadata_request(), 1), pipe.send(metadata_request(), 1)
    assert (first.correlation_id, second.correlation_id) == (3, 4)
    data = pipe.bytes_to_send()
    assert data == framing.encode_request(metadata_request(), 1, 3, "me") + framing.encode_request(
        metadata_request(), 1, 4, "me"
    )
    assert pipe.write_done() == []
    events = pipe.receive_data(metadata_answer(3, controller_id=7) + metadata_answer(4, controller_id=8))
    assert [(type(e), e.ticket) for e in events] == [(ResponseReceived, first), (ResponseReceived, second)]
    assert [e.response.controller_id for e in events if isinstance(e, ResponseReceived)] == [7, 8]
    assert pipe.in_flight == 0 and pipe.next_correlation_id == 5


def test_a_frame_split_at_every_byte_is_reassembled() -> None:
    pipe = RequestPipeline()
    ticket = pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    pipe.write_done()
    answer = metadata_answer(0, controller_id=42)
    events = [e for byte in answer for e in pipe.receive_data(bytes([byte]))]
    assert len(events) == 1 and isinstance(events[0], ResponseReceived)
    assert events[0].ticket is ticket and events[0].response.controller_id == 42


def test_an_answer_out_of_turn_fails_every_request_and_reaches_nobody() -> None:
    pipe = RequestPipeline(node="b:1")
    first, second = pipe.send(metadata_request(), 1), pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    pipe.write_done()
    queued = pipe.send(metadata_request(), 1)
    (event,) = pipe.receive_data(metadata_answer(1))  # the second's id while the first is oldest
    assert isinstance(event, ConnectionFailed) and isinstance(event.error, ProtocolError)
    assert set(event.failed) == {first, second, queued}
    assert "correlation id 1" in str(event.error) and "has 0" in str(event.error)
    assert pipe.failure is event.error and pipe.in_flight == 0
    with pytest.raises(ProtocolError):
        pipe.send(metadata_request(), 1)
    assert pipe.receive_data(metadata_answer(0)) == []  # a failed stream is not read any more


def test_an_answer_nobody_asked_for_fails_the_connection() -> None:
    pipe = RequestPipeline()
    (event,) = pipe.receive_data(metadata_answer(99))
    assert isinstance(event, ConnectionFailed) and "no request is awaiting" in str(event.error)


def test_frames_after_a_bad_one_in_the_same_read_are_not_delivered() -> None:
    pipe = RequestPipeline()
    pipe.send(metadata_request(), 1)
    pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    pipe.write_done()
    events = pipe.receive_data(metadata_answer(5) + metadata_answer(1))
    assert len(events) == 1 and isinstance(events[0], ConnectionFailed)
    assert len(events[0].failed) == 2


def test_acks0_produce_ends_once_written_and_a_stray_answer_to_it_is_dropped() -> None:
    pipe = RequestPipeline()
    produce = pipe.send(messages.ProduceRequest(acks=0), 3)
    meta = pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    assert pipe.in_flight == 2
    (event,) = pipe.write_done()
    assert isinstance(event, SentWithoutReply) and event.ticket is produce
    stray = broker_framing.encode_response(messages.ProduceResponse(), 3, produce.correlation_id)
    (answer,) = pipe.receive_data(stray + metadata_answer(meta.correlation_id))
    assert isinstance(answer, ResponseReceived) and answer.ticket is meta


def test_a_request_given_up_before_its_write_is_never_written() -> None:
    pipe = RequestPipeline(headers=RequestHeaders(None))
    kept, dropped = pipe.send(metadata_request(), 1), pipe.send(metadata_request(), 1)
    assert pipe.abandon(dropped) == []
    assert pipe.bytes_to_send() == framing.encode_request(metadata_request(), 1, kept.correlation_id, None)
    assert pipe.in_flight == 1


def test_a_request_given_up_after_its_write_has_its_late_answer_dropped() -> None:
    pipe = RequestPipeline()
    late, next_one = pipe.send(metadata_request(), 1), pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    pipe.write_done()
    assert pipe.abandon(late) == [] and pipe.in_flight == 1
    assert pipe.abandon(late) == []  # twice is harmless
    answers = metadata_answer(late.correlation_id) + metadata_answer(next_one.correlation_id)
    (event,) = pipe.receive_data(answers)
    assert isinstance(event, ResponseReceived) and event.ticket is next_one


def test_a_request_given_up_half_way_through_its_write_fails_the_connection() -> None:
    pipe = RequestPipeline()
    cut, other = pipe.send(metadata_request(), 1), pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    (event,) = pipe.abandon(cut)
    assert isinstance(event, ConnectionFailed) and isinstance(event.error, TransportError)
    assert event.failed == (other,)
    assert pipe.write_done() == []  # the write that was going out ends nothing twice


def test_too_many_unanswered_abandoned_requests_close_the_connection() -> None:
    pipe = RequestPipeline(max_in_flight=2, max_abandoned=3)
    events = []
    for _ in range(4):
        ticket = pipe.send(metadata_request(), 1)
        pipe.bytes_to_send()
        pipe.write_done()
        events += pipe.abandon(ticket)
    assert len(events) == 1 and isinstance(events[0], ConnectionFailed)
    assert isinstance(events[0].error, KafkaTimeoutError)


def _write_and_answer(pipe: RequestPipeline, *tickets: Ticket) -> list[PipelineEvent]:
    """Write what is due; the broker answers ``tickets`` (written) in one read."""
    pipe.bytes_to_send()
    pipe.write_done()
    return pipe.receive_data(b"".join(metadata_answer(t.correlation_id) for t in tickets))


def test_requests_past_the_in_flight_bound_wait_in_the_pipeline_and_go_out_as_slots_free() -> None:
    pipe = RequestPipeline(max_in_flight=2)
    first, second, third = (pipe.send(metadata_request(), 1) for _ in range(3))
    assert (pipe.in_flight, pipe.waiting) == (2, 1) and third.stage is Stage.WAITING
    assert pipe.write_due_at(0.0) == 0.0
    written = framing.FrameSplitter().feed(pipe.bytes_to_send())
    assert [int.from_bytes(f[4:8], "big") for f in written] == [first.correlation_id, second.correlation_id]
    pipe.write_done()
    assert pipe.write_due_at(0.0) == math.inf  # the third has no slot yet: nothing to write
    events = pipe.receive_data(metadata_answer(first.correlation_id))
    assert [e.ticket for e in events if isinstance(e, ResponseReceived)] == [first]
    assert pipe.write_due_at(1.0) == 1.0 and third.stage is Stage.QUEUED  # the freed slot is its
    assert _write_and_answer(pipe, second, third)[1].ticket is third
    assert (pipe.in_flight, pipe.waiting) == (0, 0)


def test_a_waiting_request_given_up_is_never_written() -> None:
    pipe = RequestPipeline(max_in_flight=1)
    first, given_up, last = (pipe.send(metadata_request(), 1) for _ in range(3))
    assert pipe.abandon(given_up) == [] and given_up.stage is Stage.ENDED
    assert pipe.waiting == 1
    assert [e.ticket for e in _write_and_answer(pipe, first)] == [first]
    pipe.write_due_at(0.0)
    (frame,) = framing.FrameSplitter().feed(pipe.bytes_to_send())
    assert int.from_bytes(frame[4:8], "big") == last.correlation_id  # never the one given up
    pipe.write_done()
    assert [e.ticket for e in pipe.receive_data(metadata_answer(last.correlation_id))] == [last]


def test_a_slot_freed_alone_waits_at_most_the_refill_delay_for_company() -> None:
    pipe = RequestPipeline(max_in_flight=8)
    held = [pipe.send(metadata_request(), 1) for _ in range(8)]
    waiting = [pipe.send(metadata_request(), 1) for _ in range(3)]
    pipe.bytes_to_send()
    pipe.write_done()
    pipe.receive_data(metadata_answer(held[0].correlation_id))  # one slot of eight: under a wave
    assert pipe.write_due_at(10.0) == 10.0 + REFILL_DELAY  # put off, from the first time asked
    assert pipe.write_due_at(10.0 + REFILL_DELAY / 2) == 10.0 + REFILL_DELAY
    assert waiting[0].stage is Stage.WAITING
    assert pipe.write_due_at(10.0 + REFILL_DELAY) == 10.0 + REFILL_DELAY  # due: it takes the slot
    assert [t.stage for t in waiting] == [Stage.QUEUED, Stage.WAITING, Stage.WAITING]


def test_a_quarter_of_the_slots_freed_are_refilled_at_once() -> None:
    pipe = RequestPipeline(max_in_flight=8)
    held = [pipe.send(metadata_request(), 1) for _ in range(8)]
    waiting = [pipe.send(metadata_request(), 1) for _ in range(3)]
    pipe.bytes_to_send()
    pipe.write_done()
    pipe.receive_data(metadata_answer(held[0].correlation_id) + metadata_answer(held[1].correlation_id))
    assert pipe.write_due_at(5.0) == 5.0
    assert [t.stage for t in waiting] == [Stage.QUEUED, Stage.QUEUED, Stage.WAITING]


def test_a_failed_connection_fails_the_waiting_requests_too() -> None:
    pipe = RequestPipeline(max_in_flight=1)
    tickets = [pipe.send(metadata_request(), 1) for _ in range(3)]
    (event,) = pipe.connection_lost()
    assert isinstance(event, ConnectionFailed) and set(event.failed) == set(tickets)
    assert (pipe.in_flight, pipe.waiting) == (0, 0) and pipe.write_due_at(0.0) == math.inf


def test_one_unreadable_answer_fails_only_its_request() -> None:
    pipe = RequestPipeline()
    bad, good = pipe.send(metadata_request(), 1), pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    pipe.write_done()
    truncated = framing.size_prefixed(bad.correlation_id.to_bytes(4, "big"), b"\x00\x00")
    events = pipe.receive_data(truncated + metadata_answer(good.correlation_id))
    assert isinstance(events[0], RequestFailed) and events[0].ticket is bad
    assert isinstance(events[0].error, DecodeError)
    assert isinstance(events[1], ResponseReceived) and events[1].ticket is good


@pytest.mark.parametrize(
    ("request_", "version", "header"),
    [
        (metadata_request(), 1, b""),  # response header v0: the correlation id alone
        (messages.FindCoordinatorRequest(key="g"), 3, b"\x00"),  # v1: no tagged fields
    ],
)
def test_an_answer_read_in_place_fails_as_the_codec_reads_its_body(
    request_: messages.KafkaMessage, version: int, header: bytes
) -> None:
    # The body is read from its offset in the frame; the error must still say what the
    # codec says of the body alone, its offset counted from the body's first byte.
    pipe = RequestPipeline(node="b:1")
    ticket = pipe.send(request_, version)
    pipe.bytes_to_send()
    pipe.write_done()
    body = b"\x00\x00\x00\x00\x00\x00\x7f"  # runs out part-way
    with pytest.raises(DecodeError) as alone:
        ticket.response_cls.decode(body, version, allow_trailing=True)
    frame = framing.size_prefixed(ticket.correlation_id.to_bytes(4, "big") + header, body)
    (event,) = pipe.receive_data(frame)
    assert isinstance(event, RequestFailed) and event.ticket is ticket
    error = event.error
    assert isinstance(error, DecodeError) and error.node == "b:1"
    assert (error.reason, error.what, error.version, error.offset) == (
        alone.value.reason, alone.value.what, alone.value.version, alone.value.offset
    )
    assert error.offset is not None and error.offset > 0
    assert pipe.in_flight == 0 and pipe.failure is None


def test_a_bad_size_prefix_fails_the_connection_before_buffering() -> None:
    pipe = RequestPipeline(frames=framing.FrameSplitter(max_size=1000))
    ticket = pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    pipe.write_done()
    (event,) = pipe.receive_data((10_000).to_bytes(4, "big"))
    assert isinstance(event, ConnectionFailed) and event.failed == (ticket,)
    assert "exceeds the maximum of 1000" in str(event.error)


def test_correlation_ids_wrap_after_int32_max() -> None:
    pipe = RequestPipeline(first_correlation_id=2**31 - 1)
    assert pipe.send(metadata_request(), 1).correlation_id == 2**31 - 1
    assert pipe.send(metadata_request(), 1).correlation_id == 0


def test_a_closed_connection_fails_everything_once() -> None:
    pipe = RequestPipeline()
    tickets = [pipe.send(metadata_request(), 1) for _ in range(3)]
    pipe.bytes_to_send()
    (event,) = pipe.connection_lost()
    assert isinstance(event, ConnectionFailed) and set(event.failed) == set(tickets)
    assert pipe.connection_lost() == []


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(PipelineStateError):
        RequestPipeline(first_correlation_id=-1)
    with pytest.raises(PipelineStateError):
        RequestPipeline(max_in_flight=0)
    pipe = RequestPipeline()
    with pytest.raises(ProtocolError, match="not a request"):
        pipe.send(messages.MetadataResponse(), 1)
    pipe.send(metadata_request(), 1)
    pipe.bytes_to_send()
    with pytest.raises(PipelineStateError, match="not been confirmed"):
        pipe.bytes_to_send()


def test_a_metadata_answer_naming_too_many_brokers_fails_its_request_before_decoding() -> None:
    from kafkacompat.errors import ReplyTooLargeError
    from kafkacompat.protocol.reply_limits import ReplyLimits

    broker = messages.MetadataResponse.MetadataResponseBroker
    answer = messages.MetadataResponse(brokers=[broker(node_id=n, host="h", port=9092) for n in range(30)])
    for version, header_tags in ((1, False), (9, False), (12, False), (12, True)):
        for ceiling, refused in ((30, False), (29, True)):
            pipe = RequestPipeline(reply_limits=ReplyLimits(metadata_brokers=ceiling))
            ticket = pipe.send(messages.MetadataRequest(topics=None), version)
            pipe.bytes_to_send()
            pipe.write_done()
            frame = broker_framing.encode_response(answer, version, ticket.correlation_id)[4:]
            if header_tags:  # a tagged field in the response header moves the body: still counted
                frame = frame[:4] + b"\x01\x07\x02hi" + frame[5:]
            (event,) = pipe.receive_data(len(frame).to_bytes(4, "big") + frame)
            if refused:
                assert isinstance(event, RequestFailed) and isinstance(event.error, ReplyTooLargeError)
                assert "names 30 brokers, above the ceiling of 29" in str(event.error)
            else:
                assert isinstance(event, ResponseReceived) and len(event.response.brokers) == 30
            again = pipe.send(metadata_request(), version)  # the connection goes on
            pipe.bytes_to_send()
            pipe.write_done()
            (event,) = pipe.receive_data(metadata_answer(again.correlation_id, version=version))
            assert isinstance(event, ResponseReceived)


def test_a_large_frame_leaves_the_splitter_in_the_buffer_it_was_read_into() -> None:
    splitter = framing.FrameSplitter()
    body = bytes(range(256)) * (5 << 12)  # 5 MiB
    splitter.push((len(body)).to_bytes(4, "big") + body[:1000])
    assert splitter.next_frame() is None
    room = splitter.body_room()
    assert room is not None and len(room) == len(body) - 1000
    room[:] = body[1000:]
    splitter.body_filled(len(room))
    frame = splitter.next_frame()
    assert frame == body and isinstance(frame, bytearray)  # no second copy
    assert splitter.feed((3).to_bytes(4, "big") + b"abc") == [b"abc"]


def test_every_event_says_how_each_request_it_ends_ended() -> None:
    """``endings``: what each caller is woken with, the same for every driver."""
    pipe = RequestPipeline(max_in_flight=2)
    answered = pipe.send(metadata_request(), 1)
    acks0 = pipe.send(messages.ProduceRequest(acks=0, timeout_ms=1), 3)
    waiting = pipe.send(metadata_request(), 1)
    late = waiting.timeout_error(2, "b:1")
    assert "waiting for one of the 2 in-flight slots to send MetadataRequest v1" in str(late)
    pipe.bytes_to_send()
    events = pipe.write_done() + pipe.receive_data(metadata_answer(answered.correlation_id, controller_id=7))
    ended = {id(t): (r, e) for t, r, e in endings(events)}
    assert ended[id(acks0)] == (None, None)  # written: done, nothing to read
    response, error = ended[id(answered)]
    assert isinstance(response, messages.MetadataResponse) and response.controller_id == 7 and error is None
    assert "no response to MetadataRequest v1" in str(answered.timeout_error(2, None))
    (failed,) = pipe.connection_lost()
    [(ticket, response, error)] = list(endings([failed]))  # the one still waiting for a slot
    assert ticket is waiting and response is None and isinstance(error, TransportError)
