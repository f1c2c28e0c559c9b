"""Every message, every version: encode then decode gives the same value back.

Instances are drawn from the schema itself (tests/support/codec_strategies),
so a field, a version or a layout the generator mishandles shows up here.  On
the native path, the native reader must read every valid encoding itself (never
handing it to the Python reader) into the same objects, type for type.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkacompat.protocol import codec_path
from kafkacompat.protocol.message import KafkaMessage
from tests.support.codec_paths import native_reads, same_on_both_paths
from tests.support.codec_strategies import all_versions, instances

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")
# The path fixture is set once per test, not per example: that is what it is for.
SUPPRESSED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]

CASES = all_versions()


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.NAME}-v{v}" for c, v in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=SUPPRESSED)
@given(data=st.data())
def test_round_trip(cls: type[KafkaMessage], version: int, data: Any) -> None:
    obj = data.draw(instances(cls, version))
    encoded = obj.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == obj
    # Decoding is lossless: writing the decoded value gives the same bytes.
    assert decoded.encode(version) == encoded
    # And reading from a memoryview behaves as reading from bytes.
    assert cls.decode(memoryview(encoded), version) == obj
    if codec_path.current() == codec_path.NATIVE:
        assert native_reads(cls, encoded, version)
        assert same_on_both_paths(cls, encoded, version)[0] == "ok"


def test_every_spec_is_covered() -> None:
    names = {cls.NAME for cls, _ in CASES}
    # one per JSON file of Kafka 4.4.0 (203 messages, 27 records; ZkMigrationRecord.json holds
    # ZkMigrationStateRecord); the retired inter-broker APIs keep their versions from the older files
    assert len(names) == 230
    assert len(CASES) == sum(len(cls.VALID_VERSIONS) for cls in {c for c, _ in CASES})
