"""The measured profiles: how runs are merged, how a dead client's steps are read, and the data itself."""

from __future__ import annotations

import json
from typing import Any

from kafkacompat.negotiation.verdicts import client_side
from kafkacompat.pipeline.client_format import parse_client_line
from kafkacompat.profiles import load_measured
from kafkacompat.profiles.measure import AGAINST, ERA, MEASURED, merge_profiles
from kafkacompat.testing.client_traffic import read_report


def recorded(client: str, entries: list[dict[str, Any]], requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"client": client, "version": "", "api_versions": entries, "recorded": {"requests": requests}}


def entry(key: int, low: int, high: int, pick: str = "highest", exact: bool = True) -> dict[str, Any]:
    return {
        "api_key": key,
        "min": low,
        "max": high,
        "required": True,
        "pick": pick,
        "max_exact": exact,
        "min_exact": False,
    }


def test_runs_merge_into_one_profile_per_release() -> None:
    ok = {"ok": True, "steps": [{"step": "metadata", "ok": True}]}
    runs = {
        "2.3": (
            ok,
            [
                recorded(
                    "lib-1", [entry(3, 8, 8)], [{"api_key": 3, "version": 8, "outcomes": {"answered": 2}}]
                ),
                recorded("lib-producer", [entry(0, 7, 7)], []),
            ],
        ),
        "3.9": (
            ok,
            [
                recorded(
                    "lib",
                    [entry(3, 12, 12, exact=False), entry(11, 1, 1, pick="fixed")],
                    [{"api_key": 3, "version": 12, "outcomes": {"answered": 1}}],
                )
            ],
        ),
    }
    merged = merge_profiles("lib", "1.0", runs)
    by_key = {e["api_key"]: e for e in merged["api_versions"]}
    assert (by_key[3]["min"], by_key[3]["max"], by_key[3]["max_exact"]) == (8, 12, False)
    assert by_key[11]["pick"] == "fixed" and by_key[0]["max"] == 7
    # Sent in one run only (both got through): used when offered, not required.
    assert by_key[3]["required"] and not by_key[11]["required"] and not by_key[0]["required"]
    assert merged["recorded"]["against"]["2.3"]["clients"] == ["lib-1", "lib-producer"]
    assert merged["recorded"]["against"]["3.9"]["requests"] == [
        {"api_key": 3, "version": 12, "outcomes": {"answered": 1}}
    ]


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


def test_the_committed_profiles_are_the_pipelines_format_and_cover_every_release() -> None:
    profiles = load_measured()
    assert {(p["client"], p["version"]) for p in profiles} == {(m[0], m[2]) for m in MEASURED}
    for profile in profiles:
        parsed, problems = parse_client_line(json.dumps(profile))
        assert problems == [] and parsed is not None
        assert set(profile["recorded"]["against"]) == {*AGAINST, ERA}
        assert {18, 3, 0, 1} <= {e["api_key"] for e in profile["api_versions"]}
        # Every release was measured against a broker that never answers ApiVersions.
        measured = client_side(profile).silent_broker
        assert measured is not None and measured.measured_against == ERA
        assert measured.last_request is not None


def test_the_run_against_a_silent_broker_is_evidence_apart_from_the_versions() -> None:
    ok = {"ok": True, "steps": [{"step": "metadata", "ok": True}]}
    runs = {"2.3": (ok, [recorded("lib", [entry(3, 8, 8)], [])])}

    def last(api_key: int, outcome: str, sequence: int) -> dict[str, Any]:
        return {"api_key": api_key, "version": 0, "outcome": outcome, "sequence": sequence}

    probe = recorded("lib", [entry(3, 0, 0, pick="fixed"), entry(16, 0, 0, pick="fixed")], [
        {"api_key": 3, "version": 0, "outcomes": {"answered": 2}},
        {"api_key": 18, "version": 0, "outcomes": {"unanswered": 1}},
    ])
    probe["recorded"]["last_request"] = last(3, "answered", 5)
    waiting = recorded("lib-admin", [entry(18, 0, 0)], [])
    waiting["recorded"]["last_request"] = last(18, "unanswered", 2)  # sent earlier
    failed = {"ok": False, "steps": [{"step": "setup", "ok": False, "error": "refused"}]}
    merged = merge_profiles("lib", "1.0", runs, (failed, [probe, waiting]))
    # The probe's Metadata v0 and ListGroups are not the client's traffic: not in its versions.
    assert [(e["api_key"], e["min"]) for e in merged["api_versions"]] == [(3, 8)]
    assert merged["without_api_versions"] == {
        "measured_against": ERA,
        "ok": False,
        "stopped_in": "setup",
        "last_request": {"api_key": 3, "version": 0, "outcome": "answered"},
        "answered": [[3, 0]],
    }
    assert merged["recorded"]["against"][ERA]["steps"] == failed["steps"]
    assert client_side(merged).silent_broker is not None
