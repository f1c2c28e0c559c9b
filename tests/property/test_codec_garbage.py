"""Garbage in: every decoder raises DecodeError and nothing else, and never hangs.

Random bytes, truncations and single-byte corruptions of valid encodings are
fed to every message at every version.  On the native path every outcome is
also compared with the Python readers': the same objects, or the same error
text at the same offset.  A longer run lives in ``make fuzz``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkacompat.errors import DecodeError
from kafkacompat.protocol.message import KafkaMessage
from tests.support.codec_paths import same_on_both_paths
from tests.support.codec_strategies import all_message_classes, instances

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")
# The path fixture is set once per test, not per example: that is what it is for.
SUPPRESSED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]

CLASSES = all_message_classes()


def _decode_or_decode_error(cls: type[KafkaMessage], data: bytes, version: int) -> None:
    try:
        cls.decode(data, version)
    except DecodeError as exc:
        assert exc.what == cls.NAME
        assert exc.version == version
    same_on_both_paths(cls, data, version)


@pytest.mark.parametrize("cls", CLASSES, ids=[c.NAME for c in CLASSES])
@settings(max_examples=25, deadline=None, suppress_health_check=SUPPRESSED)
@given(data=st.data(), garbage=st.binary(max_size=64))
def test_random_bytes(cls: type[KafkaMessage], data: Any, garbage: bytes) -> None:
    version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)))
    _decode_or_decode_error(cls, garbage, version)


@pytest.mark.parametrize("cls", CLASSES, ids=[c.NAME for c in CLASSES])
@settings(max_examples=15, deadline=None, suppress_health_check=SUPPRESSED)
@given(data=st.data())
def test_damaged_encodings(cls: type[KafkaMessage], data: Any) -> None:
    version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)))
    encoded = bytearray(data.draw(instances(cls, version)).encode(version))
    cut = data.draw(st.integers(min_value=0, max_value=len(encoded)))
    _decode_or_decode_error(cls, bytes(encoded[:cut]), version)
    if encoded:
        where = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
        encoded[where] = data.draw(st.integers(min_value=0, max_value=255))
        _decode_or_decode_error(cls, bytes(encoded), version)
        # A read at another version of the same bytes also fails cleanly or succeeds.
        other = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)))
        _decode_or_decode_error(cls, bytes(encoded), other)
