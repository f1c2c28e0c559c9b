"""The Spark job and the negotiation core answer every question about the fixture fleet alike.

The oracle below reads the same files with the plain-Python validator, keeps
the latest observation per broker the documented way, and asks the core:
``build_cluster_view`` and ``pick_version`` (with ``client_ranges=``) for
versions, ``merge_finalized``, ``max_safe_level`` and ``can_finalize`` for
features.  Every row of every table is compared.
"""

from __future__ import annotations

from typing import Any

from kafkacompat.errors import UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.cluster_view import build_cluster_view
from kafkacompat.negotiation.features import (
    FinalizedObservation,
    can_finalize,
    max_safe_level,
    merge_finalized,
)
from kafkacompat.negotiation.version_policy import VersionChoice, api_name
from kafkacompat.pipeline.client_format import client_ranges, required_apis
from kafkacompat.pipeline.snapshot_format import diagnostics
from kafkacompat.protocol.versions import VersionRange
from tests.pipeline.conftest import BuiltFleet, Oracle


def pick_version(api_key: int, capabilities: BrokerCapabilities, *args: Any, **kwargs: Any) -> int:
    """The one door, spelled with the capabilities second as these cases read best."""
    return capabilities.pick_version(api_key, *args, **kwargs)


def explain(api_key: int, capabilities: BrokerCapabilities, *args: Any, **kwargs: Any) -> VersionChoice:
    return capabilities.explain(api_key, *args, **kwargs)


def _by(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    out = {tuple(row[k] for k in keys): row for row in rows}
    assert len(out) == len(rows), f"duplicate keys {keys}"
    return out


def test_the_fixture_covers_the_edges(oracle: Oracle) -> None:
    assert len(oracle.clusters) > 20 and len(oracle.profiles) == 6


def test_latest_is_the_latest_observation_per_broker(fleet: BuiltFleet, oracle: Oracle) -> None:
    assert fleet.report.valid_snapshots == oracle.valid_lines
    got = _by(fleet.rows["latest"], "cluster_id", "node_id")
    assert set(got) == set(oracle.latest)
    for key, obj in oracle.latest.items():
        row = got[key]
        assert row["observed_at"] == obj["observed_at"]
        for field in (
            "endpoint",
            "api_versions",
            "supported_features",
            "finalized_features",
            "finalized_features_epoch",
            "schema",
        ):
            assert row[field] == obj[field], (key, field)
        for field, value in diagnostics(obj).items():
            assert row[field] == value, (key, field)
    assert got[("edge-time", 1)]["observed_at"] == "2025-03-01T23:30:00Z"
    assert got[("edge-diag", 1)]["handshake"] is None


def test_negotiated_versions_match_the_core(fleet: BuiltFleet, oracle: Oracle) -> None:
    got = _by(fleet.rows["negotiated"], "cluster_id", "client", "client_version", "api_key")
    expected_keys = set()
    for cluster, brokers in oracle.brokers.items():
        for profile in oracle.profiles:
            ranges = client_ranges(profile)
            view = build_cluster_view(brokers, client_ranges=ranges)
            for key in ranges:
                row = got[(cluster, profile["client"], profile["version"], key)]
                expected_keys.add((cluster, profile["client"], profile["version"], key))
                expected = view.version_everywhere(key)
                assert row["version"] == expected, (cluster, profile["client"], key, row["reason"])
                assert row["api_name"] == api_name(key)
                assert row["required"] == (key in required_apis(profile))
                picks: list[int | None] = []
                for broker in brokers:
                    try:
                        picks.append(pick_version(key, broker, client_ranges=ranges))
                    except UnsupportedVersionError:
                        picks.append(None)
                if expected is not None:
                    assert None not in picks and expected == min(p for p in picks if p is not None)
                    assert row["reason"].startswith(f"v{expected}:")
                else:
                    assert row["reason"] == _why_not(key, brokers, ranges), (cluster, profile["client"], key)
    assert set(got) == expected_keys
    assert not any(key[0] == "edge-quorum-only" for key in got)  # controllers alone: no client talks to them


def _why_not(key: int, brokers: list[BrokerCapabilities], ranges: dict[int, VersionRange]) -> str:
    """The reason the pipeline must give, from the core's per-broker explanations."""
    choices = [explain(key, b, client_ranges=ranges) for b in brokers]
    api = f"{api_name(key)} (api key {key})"
    if ranges[key].empty:
        return f"the client cannot write {api}"
    lacking = [b.node_id or 0 for b, c in zip(brokers, choices, strict=True) if not c.broker_lists_api]
    if len(lacking) == len(brokers):
        return f"no broker lists {api}"
    if lacking:
        return f"{api} is not listed by broker(s) {', '.join(map(str, sorted(lacking)))} of {len(brokers)}"
    low = max(c.broker_range.lowest for c in choices)
    high = min(c.broker_range.highest for c in choices)
    if low > high:
        return (
            f"the brokers have no version of {api} in common (highest minimum {low}, lowest maximum {high})"
        )
    common = VersionRange(low, high)
    return f"no version in common: the client writes {ranges[key]}, every broker answers {common}"


def test_compatibility_matches_the_core(fleet: BuiltFleet, oracle: Oracle) -> None:
    got = _by(fleet.rows["compatibility"], "cluster_id", "client", "client_version")
    assert len(got) == len(oracle.brokers) * len(oracle.profiles)
    for cluster, brokers in oracle.brokers.items():
        for profile in oracle.profiles:
            view = build_cluster_view(brokers, client_ranges=client_ranges(profile))
            broken = [api_name(k) for k in required_apis(profile) if view.version_everywhere(k) is None]
            row = got[(cluster, profile["client"], profile["version"])]
            assert row["broken_apis"] == broken and row["compatible"] == (not broken)
    assert got[("edge-missing", "kafkacompat", "0.1.0")]["broken_apis"] == ["FindCoordinator"]
    assert got[("edge-old", "edge-client", "1.0")]["broken_apis"] == ["Metadata"]
    # Its controllers list no Produce or Metadata, yet the cluster's brokers serve every client API.
    assert got[("edge-quorum", "kafkacompat", "0.1.0")]["compatible"] is True


def _features(brokers: list[BrokerCapabilities]) -> tuple[Any, dict[str, int]]:
    merged = merge_finalized(
        FinalizedObservation(
            b.node,
            b.finalized_features_epoch if b.finalized_features_epoch is not None else -1,
            b.finalized_features,
        )
        for b in brokers
    )
    return merged, merged.levels


def test_features_match_the_core(fleet: BuiltFleet, oracle: Oracle) -> None:
    got = _by(fleet.rows["features"], "cluster_id", "feature")
    expected_keys = set()
    for cluster, brokers in oracle.clusters.items():
        merged, levels = _features(brokers)
        ids = {b.node: b.node_id or 0 for b in brokers}
        names = {n for b in brokers for n in b.supported_features} | set(levels)
        for name in names:
            expected_keys.add((cluster, name))
            row = got[(cluster, name)]
            safe = max_safe_level(name, brokers, finalized=levels)
            level = levels.get(name, 0)
            next_level = (safe if safe is not None else level) + 1
            verdict = can_finalize(name, next_level, brokers, finalized=levels)
            assert (row["finalized_level"], row["epoch"], row["max_safe_level"], row["next_level"]) == (
                level,
                merged.epoch,
                safe,
                next_level,
            ), (cluster, name)
            assert row["blocking_brokers"] == sorted(ids[b.node] for b in verdict.blocking_brokers), (
                cluster,
                name,
            )
    assert set(got) == expected_keys
    assert got[("edge-dep", "kraft.version")]["max_safe_level"] == 0
    assert got[("edge-required", "metadata.version")]["max_safe_level"] is None
    assert got[("edge-unlisted", "kraft.version")]["blocking_brokers"] == [2]
    assert got[("edge-conflict", "metadata.version")]["finalized_level"] == 20


def test_fenced_brokers_match_the_core(fleet: BuiltFleet, oracle: Oracle) -> None:
    expected = []
    for cluster, brokers in oracle.clusters.items():
        _, levels = _features(brokers)
        for broker in brokers:
            for name, level in levels.items():
                supported = broker.supported_features.get(name)
                if level not in (supported if supported is not None else VersionRange(0, 0)):
                    expected.append(
                        (
                            cluster,
                            broker.node_id,
                            name,
                            level,
                            supported.lowest if supported else None,
                            supported.highest if supported else None,
                        )
                    )
    got = [
        (
            r["cluster_id"],
            r["node_id"],
            r["feature"],
            r["finalized_level"],
            r["supported_min"],
            r["supported_max"],
        )
        for r in fleet.rows["fenced"]
    ]
    assert sorted(got, key=str) == sorted(expected, key=str)
    assert ("edge-fenced", 3, "metadata.version", 21, 1, 20) in got



def test_stale_epochs_match_the_core(fleet: BuiltFleet, oracle: Oracle) -> None:
    expected = set()
    for cluster, brokers in oracle.clusters.items():
        merged, _ = _features(brokers)
        ids = {b.node: b.node_id for b in brokers}
        for stale in merged.stale:
            expected.add((cluster, ids[stale.node], stale.epoch, stale.newest_epoch))
    got = {
        (r["cluster_id"], r["node_id"], r["epoch"], r["cluster_epoch"]) for r in fleet.rows["stale_epochs"]
    }
    assert got == expected
    assert ("edge-stale", 1, 10, 12) in got
    assert ("edge-quorum", 3000, 3000, 3001) in got  # a controller behind its quorum is stale too
