"""The measured profiles: how recordings are merged, how a dead client's steps are read, the data itself."""

from __future__ import annotations

import json
from typing import Any

from kafkacompat.negotiation.verdicts import client_side
from kafkacompat.pipeline.client_format import parse_client_line
from kafkacompat.profiles import load_measured
from kafkacompat.profiles.installs import CLIENTS
from kafkacompat.profiles.measure import BROKERS, ERA, era_evidence
from kafkacompat.profiles.merge import Recording, merge_recordings
from kafkacompat.testing.client_traffic import read_report

PRODUCE, METADATA, JOIN_GROUP, API_VERSIONS, TELEMETRY = 0, 3, 11, 18, 71


def recorded(
    client: str, entries: list[dict[str, Any]], offered: dict[int, tuple[int, int]] | None = None
) -> dict[str, Any]:
    apis = [{"api_key": k, "min": low, "max": high} for k, (low, high) in (offered or {}).items()]
    return {
        "client": client,
        "version": "",
        "api_versions": entries,
        "recorded": {"requests": [], "offered": [{"apis": apis, "connections": 1}]},
    }


def entry(key: int, low: int, high: int, pick: str = "highest") -> dict[str, Any]:
    return {"api_key": key, "min": low, "max": high, "required": True, "pick": pick, "min_exact": False}


def by_key(profile: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {e["api_key"]: e for e in profile["api_versions"]}


def test_a_client_that_follows_the_offer_picks_the_highest_in_common() -> None:
    runs = [
        Recording("1.0", "1.0", [recorded("lib", [entry(PRODUCE, 5, 5)], {PRODUCE: (0, 5)})]),
        Recording("3.9", "3.9", [recorded("lib", [entry(PRODUCE, 9, 9)], {PRODUCE: (0, 11)})]),
    ]
    produce = by_key(merge_recordings("lib", "1", runs))[PRODUCE]
    assert (produce["pick"], produce["min"], produce["max"], produce["max_exact"]) == ("highest", 5, 9, True)


def test_a_client_that_sends_one_version_whatever_it_is_offered_is_fixed() -> None:
    # v2 to a broker offering 0-1 (the recorder saw it sent outside the offer) and to one offering 0-9.
    runs = [
        Recording(
            "0.10.0", "0.10.0", [recorded("lib", [entry(JOIN_GROUP, 2, 2, "fixed")], {JOIN_GROUP: (0, 1)})]
        ),
        Recording("3.9", "3.9", [recorded("lib", [entry(JOIN_GROUP, 2, 2)], {JOIN_GROUP: (0, 9)})]),
    ]
    assert by_key(merge_recordings("lib", "1", runs))[JOIN_GROUP]["pick"] == "fixed"
    # The same v2 to offers of 0-5 and 0-9 is also what a client whose max is v2 sends: highest.
    runs[0] = Recording("2.3", "2.3", [recorded("lib", [entry(JOIN_GROUP, 2, 2)], {JOIN_GROUP: (0, 5)})])
    assert by_key(merge_recordings("lib", "1", runs))[JOIN_GROUP]["pick"] == "highest"


def test_a_client_that_picks_from_its_own_table_per_release_keeps_the_table() -> None:
    # Offered 0-5 and 0-11, it sent v4 and v7: neither the offer's highest nor one fixed version.
    runs = [
        Recording("1.0", "1.0", [recorded("lib", [entry(PRODUCE, 4, 4)], {PRODUCE: (0, 5)})]),
        Recording("3.9", "3.9", [recorded("lib", [entry(PRODUCE, 7, 7)], {PRODUCE: (0, 11)})]),
        Recording("tansu 0.6.0", None, [recorded("lib", [entry(PRODUCE, 7, 7)], {PRODUCE: (0, 11)})]),
    ]
    produce = by_key(merge_recordings("lib", "1", runs))[PRODUCE]
    assert produce["pick"] == "release-table"
    assert produce["by_release"] == [{"release": "1.0", "version": 4}, {"release": "3.9", "version": 7}]
    assert client_side(merge_recordings("lib", "1", runs)).entries[PRODUCE].by_release == (
        ("1.0", 4),
        ("3.9", 7),
    )


def test_required_means_sent_wherever_the_traffic_got_through_and_never_telemetry() -> None:
    runs = [
        Recording("3.9", "3.9", [recorded("lib", [entry(METADATA, 12, 12), entry(PRODUCE, 9, 9)])]),
        Recording("4.0", "4.0", [recorded("lib", [entry(METADATA, 12, 12), entry(TELEMETRY, 0, 0)])]),
        Recording("1.0", "1.0", [recorded("lib", [entry(METADATA, 5, 5)])], ok=False),
    ]
    merged = by_key(merge_recordings("lib", "1", runs))
    assert merged[METADATA]["required"] and not merged[PRODUCE]["required"]
    assert not merged[TELEMETRY]["required"]  # sent wherever offered: still never needed


def test_a_client_that_died_mid_step_is_reported_failed_in_that_step() -> None:
    lines = [
        json.dumps({"started": "metadata"}),
        json.dumps({"step": "metadata", "ok": True}),
        "noise",
        json.dumps({"started": "describe-group"}),
    ]
    report = read_report("\n".join(lines), "confluent-kafka")
    assert report["ok"] is False
    assert [(s["step"], s["ok"]) for s in report["steps"]] == [("metadata", True), ("describe-group", False)]
    assert "died" in report["steps"][-1]["error"]


def test_the_run_against_a_silent_broker_says_where_the_client_stopped() -> None:
    def last(api_key: int, outcome: str, sequence: int) -> dict[str, Any]:
        return {"api_key": api_key, "version": 0, "outcome": outcome, "sequence": sequence}

    probe = recorded("lib", [entry(METADATA, 0, 0, pick="fixed")])
    probe["recorded"]["requests"] = [
        {"api_key": METADATA, "version": 0, "outcomes": {"answered": 2}},
        {"api_key": API_VERSIONS, "version": 0, "outcomes": {"unanswered": 1}},
    ]
    probe["recorded"]["last_request"] = last(METADATA, "answered", 5)
    waiting = recorded("lib-admin", [entry(API_VERSIONS, 0, 0)])
    waiting["recorded"]["last_request"] = last(API_VERSIONS, "unanswered", 2)  # sent earlier
    failed = {"ok": False, "steps": [{"step": "setup", "ok": False, "error": "refused"}]}
    assert era_evidence(failed, [probe, waiting]) == {
        "measured_against": ERA,
        "ok": False,
        "stopped_in": "setup",
        "last_request": {"api_key": METADATA, "version": 0, "outcome": "answered"},
        "answered": [[METADATA, 0]],
    }


def test_the_committed_profiles_are_the_pipelines_format_and_cover_every_release() -> None:
    profiles = load_measured()
    assert {(p["client"], p["version"]) for p in profiles} == {(c.library, c.release) for c in CLIENTS}
    assert len(profiles) >= 20 and {p["language"] for p in profiles} == {"python", "java", "go", "node"}
    for profile in profiles:
        parsed, problems = parse_client_line(json.dumps(profile))
        assert problems == [] and parsed is not None
        assert set(profile["recorded"]["against"]) == set(BROKERS)
        assert {METADATA, PRODUCE} <= {e["api_key"] for e in profile["api_versions"]}
        assert not [e for e in profile["api_versions"] if e["api_key"] == TELEMETRY and e["required"]]
        # Every release was measured against a broker that never answers ApiVersions.
        measured = client_side(profile).silent_broker
        assert measured is not None and measured.measured_against == ERA
