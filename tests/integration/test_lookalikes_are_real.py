"""The look-alike data is what the real software does: its ApiVersions answer, and where it deviates.

``negotiation/lookalike_brokers.jsonl`` identifies Tansu, noida-db and
librdkafka's mock by the ApiVersions answer measured from each, and keeps
their deviations from Kafka.  Here each real one is asked again: its answer
must still identify it, and ``testing.deviation_probe`` (every version it
advertises of the harmless requests of the clients' traffic) must find the
connection closed exactly where the data says so (that Kafka answers those
requests is checked against a real Apache Kafka in test_verdicts_against_reality).
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkacompat.negotiation.lookalikes import identify, lookalikes
from kafkacompat.protocol.messages import ApiVersionsRequest
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.testing.deviation_probe import REQUESTS, api_versions_above, probe
from kafkacompat.testing.ports import probe_api_versions

pytestmark = pytest.mark.broker

API_VERSIONS = 18


def closes_on(software: Any) -> set[tuple[int, int]]:
    """The (api key, version)s the data says the software closes the connection on, of the probe's APIs."""
    return {
        (d.api_key, version)
        for d in software.deviations
        if d.api_key in REQUESTS and "closes the connection" in d.answer
        for version in range(d.versions.lowest, d.versions.highest + 1)
    }


def unreadable_above(software: Any) -> set[int]:
    """The ApiVersions versions above its range the data says the software answers unreadably."""
    return {
        version
        for d in software.deviations
        if d.api_key == API_VERSIONS
        for version in range(d.versions.lowest, d.versions.highest + 1)
    }


def test_each_lookalike_answers_and_closes_as_the_data_says(
    tansu: Any, noida: Any, old_librdkafka_mock: Any
) -> None:
    running = {"tansu": tansu, "noida-db": noida, "librdkafka-mock": old_librdkafka_mock}
    for software in lookalikes():
        broker = running[software.software]
        answer = probe_api_versions(broker.host, broker.port, 1, 10.0)
        ranges = {a.api_key: VersionRange(a.min_version, a.max_version) for a in answer.api_keys}
        assert identify(ranges) == software, software.label
        closed = {where for where, outcome in probe(broker.host, broker.port).items() if outcome == "closed"}
        assert closed == closes_on(software), software.label
        above = range(ranges[API_VERSIONS].highest + 1, ApiVersionsRequest.VALID_VERSIONS.highest + 1)
        unreadable = {v for v in above if api_versions_above(broker.host, broker.port, v) == "unreadable"}
        assert unreadable == unreadable_above(software), software.label
    assert closes_on(next(s for s in lookalikes() if s.software == "noida-db"))  # not vacuous
    assert unreadable_above(next(s for s in lookalikes() if s.software == "librdkafka-mock"))
