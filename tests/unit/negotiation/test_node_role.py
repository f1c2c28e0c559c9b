"""Telling a KRaft controller's ApiVersions answer from a broker's, over every known release."""

from __future__ import annotations

import pytest

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.node_role import looks_like_controller
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.reference import RELEASES


@pytest.mark.parametrize(("release", "kind"), [(p.release, p.kind) for p in RELEASES])
def test_only_kraft_controllers_from_3_0_look_like_controllers(release: str, kind: str) -> None:
    capabilities = BrokerCapabilities.from_ranges("n:9093", known_api_ranges(release, kind))
    expected = kind == "kraft-controller" and release != "2.8"  # 2.8's controller still served Metadata
    assert looks_like_controller(capabilities) is expected


def test_an_empty_range_does_not_count_as_listed() -> None:
    ranges = dict(known_api_ranges("4.0", "kraft-controller"))
    assert looks_like_controller(BrokerCapabilities.from_ranges("n:9093", ranges))
    emptied = {**ranges, 52: "none"}
    assert not looks_like_controller(BrokerCapabilities.from_ranges("n:9093", emptied))
    with_metadata = {**ranges, 3: (0, 12)}
    assert not looks_like_controller(BrokerCapabilities.from_ranges("n:9093", with_metadata))
