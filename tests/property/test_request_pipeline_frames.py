"""The pipeline's frames are the codec's, byte for byte, and so are the answers it reads.

``RequestPipeline`` encodes each request header once per API and version and
reads a response header it recognises without the general decoder; for every
request and response the codec knows, at every version, the bytes and the
messages must be exactly what ``framing`` makes and reads.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacompat.connection._request_pipeline import RequestPipeline, ResponseReceived
from kafkacompat.protocol import _wire, broker_framing, framing, messages
from kafkacompat.protocol.framing import RequestHeaders
from kafkacompat.protocol.message import KafkaMessage
from tests.support.codec_strategies import all_versions, instances

REQUESTS = [
    (cls, v) for cls, v in all_versions() if cls.MESSAGE_TYPE == "request" and cls.API_KEY is not None
]
CLIENT_IDS = st.one_of(st.none(), st.text(max_size=20))


def _response_cls(request: type[KafkaMessage]) -> type[KafkaMessage]:
    cls: type[KafkaMessage] = getattr(messages, messages.CLASS_BY_KEY[(request.API_KEY, "response")])
    return cls


@settings(max_examples=300, deadline=None)
@given(data=st.data(), client_id=CLIENT_IDS, first_id=st.integers(0, 0x7FFFFFFF))
def test_request_frames_are_the_codecs(data: st.DataObject, client_id: str | None, first_id: int) -> None:
    cls, version = data.draw(st.sampled_from(REQUESTS))
    message = data.draw(instances(cls, version))
    pipeline = RequestPipeline(headers=RequestHeaders(client_id), first_correlation_id=first_id)
    first = pipeline.send(message, version)
    second = pipeline.send(message, version)  # the cached header, with the next id
    assert first.frame == framing.encode_request(message, version, first.correlation_id, client_id)
    assert second.frame == framing.encode_request(message, version, second.correlation_id, client_id)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), tagged=st.booleans())
def test_answers_read_as_the_codec_reads_them(data: st.DataObject, tagged: bool) -> None:
    request_cls, version = data.draw(st.sampled_from(REQUESTS))
    response_cls = _response_cls(request_cls)
    request = data.draw(instances(request_cls, version))
    if request_cls.API_KEY == 0 and getattr(request, "acks", 1) == 0:
        request.acks = 1  # type: ignore[attr-defined]  # answered, so that there is something to read
    response = data.draw(instances(response_cls, version))
    pipeline = RequestPipeline()
    ticket = pipeline.send(request, version)
    pipeline.bytes_to_send()
    pipeline.write_done()
    frame = broker_framing.encode_response(response, version, ticket.correlation_id)
    if tagged and framing.response_header_version(response_cls.API_KEY or 0, version) == 1:
        # A header with one unknown tagged field (tag 7, two bytes): the general decoder's path.
        body = frame[4 + 4 + 1 :]
        header = _wire.INT32.pack(ticket.correlation_id) + bytes([1, 7, 2, 0xAB, 0xCD])
        frame = _wire.INT32.pack(len(header) + len(body)) + header + body
    events = pipeline.receive_data(frame)
    _, expected = framing.decode_response(frame[4:], response_cls, version, allow_trailing=True)
    assert len(events) == 1 and isinstance(events[0], ResponseReceived)
    assert events[0].ticket is ticket and events[0].response == expected
