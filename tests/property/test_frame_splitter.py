"""FrameSplitter hands over exactly the frames written, however the stream is cut.

Frames on both sides of the size under which a whole frame is sliced out rather
than copied through a view, pushed in chunks cut anywhere, come out whole, in
order, as bytes, with nothing left over.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacompat.protocol import framing

_SIZES = st.sampled_from([0, 1, 5, 4095, 4096, 4097, 9000]) | st.integers(0, 6000)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), sizes=st.lists(_SIZES, min_size=1, max_size=5))
def test_frames_come_out_as_written_whatever_the_cuts(data: st.DataObject, sizes: list[int]) -> None:
    bodies = [bytes([n % 251]) * n for n in sizes]
    stream = b"".join(len(body).to_bytes(4, "big") + body for body in bodies)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    splitter = framing.FrameSplitter(max_size=1 << 16)
    frames: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        splitter.push(stream[start:end])
        while (frame := splitter.next_frame()) is not None:
            assert type(frame) is bytes
            frames.append(frame)
    assert frames == bodies and splitter.pending == 0
