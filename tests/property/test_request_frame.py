"""The frames a connection's ``RequestHeaders`` writes are the frames ``encode_request`` writes.

A connection encodes each request header once per API and version, and the
ApiVersions body once per config and version, and splices the correlation id
in; for any request the codec knows, any version, correlation id, client id
and software fields, the frame must be byte for byte what encoding the request
afresh gives.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION, HandshakeConfig
from kafkacompat.protocol.framing import RequestHeaders, encode_request
from kafkacompat.protocol.messages import ApiKey
from tests.support.codec_strategies import all_versions, instances

_SOFTWARE = st.from_regex(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]{0,30}[a-zA-Z0-9])?", fullmatch=True)
REQUESTS = [
    (cls, v) for cls, v in all_versions() if cls.MESSAGE_TYPE == "request" and cls.API_KEY is not None
]


@given(
    version=st.integers(0, CODEC_MAX_VERSION),
    correlation_ids=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=4),
    client_id=st.none() | st.text(max_size=40),
    name=_SOFTWARE,
    software_version=_SOFTWARE,
)
def test_the_apiversions_frame_made_once_is_the_frame_encoded_afresh(
    version: int, correlation_ids: list[int], client_id: str | None, name: str, software_version: str
) -> None:
    config = HandshakeConfig(client_software_name=name, client_software_version=software_version)
    headers = RequestHeaders(client_id)
    for correlation_id in correlation_ids:  # the second and later frames come from what was kept
        expected = encode_request(config.request(version), version, correlation_id, client_id)
        body = config.request_body(version)
        assert headers.frame(ApiKey.API_VERSIONS, version, correlation_id, body) == expected


@settings(max_examples=200, deadline=None)
@given(data=st.data(), client_id=st.none() | st.text(max_size=20), correlation_id=st.integers(0, 2**31 - 1))
def test_every_request_frame_is_the_codecs(
    data: st.DataObject, client_id: str | None, correlation_id: int
) -> None:
    cls, version = data.draw(st.sampled_from(REQUESTS))
    message = data.draw(instances(cls, version))
    headers = RequestHeaders(client_id)
    for cid in (correlation_id, correlation_id // 2):  # the header kept, another id
        assert headers.request(message, version, cid) == encode_request(message, version, cid, client_id)
