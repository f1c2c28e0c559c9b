"""The snapshot line and the client profile, without Spark: writer, validator, generator."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.pipeline import FleetSpec, generate_clients, generate_fleet
from kafkacompat.pipeline.client_format import (
    KAFKACOMPAT_REQUIRED_APIS,
    client_ranges,
    kafkacompat_client_profile,
    validate_client_profile,
)
from kafkacompat.pipeline.generate import release_features
from kafkacompat.pipeline.snapshot_format import (
    BAD_EPOCH,
    BAD_TIMESTAMP,
    MALFORMED,
    capabilities_from_snapshot,
    format_observed_at,
    missing,
    parse_snapshot_line,
    snapshot_json,
    snapshot_line,
    validate_snapshot,
)
from kafkacompat.protocol.messages import REQUEST_VERSIONS
from kafkacompat.protocol.versions import VersionRange


def _caps(**kwargs: object) -> BrokerCapabilities:
    return BrokerCapabilities.from_ranges(
        "b1:9092",
        {18: (0, 3), 3: (0, 12), 7: "none"},
        node_id=1,
        supported_features={"metadata.version": (1, 21)},
        finalized_features={"metadata.version": (21, 21)},
        finalized_features_epoch=5,
        **kwargs,  # type: ignore[arg-type]
    )


def test_snapshot_line_is_schema_one_and_valid() -> None:
    line = snapshot_line(_caps(), "c1", datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC))
    assert validate_snapshot(line) == []
    assert line["observed_at"] == "2025-01-02T03:04:05.000006Z"
    assert line["api_versions"][0] == {"api_key": 3, "min": 0, "max": 12}
    assert {"api_key": 7, "min": 1, "max": 0} in line["api_versions"]  # kept: "not offered"
    assert line["handshake"] == {
        "attempts": [],
        "round_trips": 0,
        "connections": 0,
        "api_versions_version": None,
    }
    assert line["release_guess"]["text"]
    back = capabilities_from_snapshot(json.loads(snapshot_json(line)))
    assert back.api_ranges == _caps().api_ranges and back.finalized_features_epoch == 5
    assert not back.lists_api(7)


def test_snapshot_line_needs_a_node_id_and_an_aware_time() -> None:
    caps = BrokerCapabilities.from_ranges("b:1", {18: (0, 3)})
    with pytest.raises(ValueError, match="node id"):
        snapshot_line(caps, "c", datetime.now(UTC))
    assert snapshot_line(caps, "c", "2025-01-01T00:00:00+01:00", node_id=4)["node_id"] == 4
    assert snapshot_line(caps, "c", datetime.now(UTC), node_id=4)["finalized_features_epoch"] == -1
    with pytest.raises(ValueError):
        format_observed_at(datetime(2025, 1, 1))
    with pytest.raises(ValueError):
        format_observed_at("2025-01-01 00:00:00")
    shifted = datetime(2025, 1, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    assert format_observed_at(shifted) == "2025-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("change", "problems"),
    [
        ({"schema": 3}, ["unknown schema version 3"]),
        ({"schema": None}, [missing("schema")]),
        ({"node_id": True}, [MALFORMED]),
        ({"node_id": 1.0}, [MALFORMED]),
        ({"api_versions": {}}, [MALFORMED]),
        ({"observed_at": "yesterday"}, [BAD_TIMESTAMP]),
        ({"finalized_features_epoch": -2}, [BAD_EPOCH]),
        ({"endpoint": None, "cluster_id": None}, [missing("cluster_id"), missing("endpoint")]),
        ({"api_versions": [None]}, [missing(f"api_versions[].{f}") for f in ("api_key", "min", "max")]),
        (
            {"supported_features": [{"name": "a", "min": 0, "max": 1}] * 2},
            ["duplicate name in supported_features"],
        ),
        ({"handshake": "odd", "release_guess": 3}, []),  # diagnostics never make a line bad
    ],
)
def test_validation_messages(change: dict[str, object], problems: list[str]) -> None:
    line = {**snapshot_line(_caps(), "c1", "2025-01-01T00:00:00Z"), **change}
    assert validate_snapshot(line) == problems
    assert parse_snapshot_line(json.dumps(line))[1] == problems


def test_generated_lines_are_what_snapshot_line_writes() -> None:
    for text in generate_fleet(FleetSpec(clusters=6, brokers=3, observations=2, seed=5)):
        obj, problems = parse_snapshot_line(text)
        assert obj is not None, problems
        again = snapshot_line(capabilities_from_snapshot(obj), obj["cluster_id"], obj["observed_at"])
        assert {**again, "handshake": obj["handshake"]} == obj


def test_generator_is_seeded_and_has_the_situations() -> None:
    spec = FleetSpec(clusters=60, brokers=5, observations=4, seed=1)
    lines = list(generate_fleet(spec))
    assert lines == list(generate_fleet(spec)) and len(lines) == spec.lines
    assert lines != list(generate_fleet(FleetSpec(clusters=60, brokers=5, observations=4, seed=2)))
    last: dict[tuple[str, int], dict[str, object]] = {}
    for text in lines:
        obj = json.loads(text)
        last[(obj["cluster_id"], obj["node_id"])] = obj
    releases: dict[str, set[str]] = {}
    epochs: dict[str, set[int]] = {}
    for (cluster, _), obj in last.items():
        releases.setdefault(cluster, set()).add(obj["release_guess"]["text"])  # type: ignore[index]
        epochs.setdefault(cluster, set()).add(obj["finalized_features_epoch"])  # type: ignore[arg-type]
    assert any(len(r) > 1 for r in releases.values())  # mid-upgrade clusters
    assert any(len(e - {-1}) > 1 for e in epochs.values())  # stale epochs
    assert release_features("3.9", "kraft-broker") == {"kraft.version": (0, 1), "metadata.version": (1, 21)}
    assert release_features("3.9", "zk-broker") == {}


def test_generator_spoils_lines_on_request() -> None:
    lines = list(generate_fleet(FleetSpec(clusters=3, brokers=3, observations=3, bad_every=5)))
    problems = [parse_snapshot_line(text)[1] for text in lines]
    schema_2, no_node = ["unknown schema version 2"], [missing("node_id")]
    assert [p for p in problems if p] == [schema_2, no_node, [MALFORMED], schema_2, no_node]


def test_kafkacompat_profile() -> None:
    profile = kafkacompat_client_profile()
    assert validate_client_profile(profile) == []
    assert client_ranges(profile) == {k: VersionRange(lo, hi) for k, (lo, hi) in REQUEST_VERSIONS.items()}
    assert sorted(e["api_key"] for e in profile["api_versions"] if e["required"]) == sorted(
        KAFKACOMPAT_REQUIRED_APIS
    )
    assert sorted(KAFKACOMPAT_REQUIRED_APIS) == [3, 10, 18]


def test_generated_clients_are_valid_and_distinct() -> None:
    profiles = generate_clients(10, seed=3)
    assert len(profiles) == 10 and all(validate_client_profile(p) == [] for p in profiles)
    assert len({(p["client"], p["version"]) for p in profiles}) == 10
    assert validate_client_profile({"client": "x", "version": "1", "api_versions": [{"api_key": 1}]}) == [
        missing("api_versions[].min"),
        missing("api_versions[].max"),
    ]
