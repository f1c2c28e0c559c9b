"""The ApiVersions request frame a config encodes once is the frame ``encode_request`` writes.

A handshake sends the frame its config encoded once per version, with only the
correlation id patched in; for any version, correlation id, client id and
software fields it must be byte for byte what encoding the request afresh gives.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION, HandshakeConfig
from kafkacompat.protocol.framing import encode_request

_SOFTWARE = st.from_regex(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]{0,30}[a-zA-Z0-9])?", fullmatch=True)


@given(
    version=st.integers(0, CODEC_MAX_VERSION),
    correlation_ids=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=4),
    client_id=st.none() | st.text(max_size=40),
    name=_SOFTWARE,
    software_version=_SOFTWARE,
)
def test_the_frame_encoded_once_is_the_frame_encoded_afresh(
    version: int, correlation_ids: list[int], client_id: str | None, name: str, software_version: str
) -> None:
    config = HandshakeConfig(
        client_id=client_id, client_software_name=name, client_software_version=software_version
    )
    for correlation_id in correlation_ids:  # the second and later frames come from the template
        expected = encode_request(config.request(version), version, correlation_id, client_id)
        assert config.request_frame(version, correlation_id) == expected
