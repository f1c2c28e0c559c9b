"""The recorder never fails whatever bytes pass, and keeps a bounded amount of them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacompat.negotiation.recording import KEEP_BYTES, ProfileBook, WireRecorder
from kafkacompat.pipeline.client_format import validate_client_profile

chunks = st.lists(st.binary(max_size=300), max_size=30)


@settings(max_examples=300, deadline=None)
@given(client=chunks, broker=chunks, closed_by_broker=st.booleans())
def test_any_bytes_in_any_chunks_leave_valid_profiles(
    client: list[bytes], broker: list[bytes], closed_by_broker: bool
) -> None:
    book = ProfileBook()
    recorder = WireRecorder(book)
    for index in range(max(len(client), len(broker))):
        if index < len(client):
            recorder.from_client(client[index])
        if index < len(broker):
            recorder.from_broker(broker[index])
        assert len(recorder._requests._kept) <= KEEP_BYTES
        assert len(recorder._responses._kept) <= KEEP_BYTES
    recorder.closed(closed_by_broker)
    assert all(validate_client_profile(p) == [] for p in book.profiles())


@settings(max_examples=100, deadline=None)
@given(size=st.integers(min_value=0, max_value=4 * KEEP_BYTES), head=st.binary(min_size=8, max_size=8))
def test_a_frame_of_any_size_is_skipped_with_bounded_memory(size: int, head: bytes) -> None:
    recorder = WireRecorder(ProfileBook())
    frame = (len(head) + size).to_bytes(4, "big") + head + bytes(size)
    for start in range(0, len(frame), 8192):
        recorder.from_client(frame[start : start + 8192])
        assert len(recorder._requests._kept) <= KEEP_BYTES
