"""The measured profiles: how recordings are merged, how a dead client's steps are read, the data itself."""

from __future__ import annotations

import json
from pathlib import Path
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


def recording_against(release: str, kind: str, sent: dict[int, int]) -> dict[str, Any]:
    """What ``record`` writes for a client sending ``sent`` (api -> version) to a broker of ``release``."""
    from kafkacompat.negotiation.release_guess import known_api_ranges

    offered = {k: (r.lowest, r.highest) for k, r in known_api_ranges(release, kind).items()}
    return recorded("lib", [entry(key, version, version) for key, version in sent.items()], offered)


def test_recordings_of_one_client_in_front_of_different_brokers_merge_into_one_profile() -> None:
    from kafkacompat.profiles.merge import merge_recorded

    old = recording_against("1.0", "zk-broker", {PRODUCE: 4, METADATA: 5})
    new = recording_against("3.9", "zk-broker", {PRODUCE: 7, METADATA: 12})
    other = {"client": "other", "version": "2", "api_versions": [entry(METADATA, 1, 1)]}
    merged, kept = merge_recorded([old, other, new])
    assert kept == other  # met once: as it is
    assert merged["recorded"]["merged"] == [
        {"recording": "recording 1", "release": "1.0"},
        {"recording": "recording 2", "release": "3.9"},
    ]
    produce, metadata = by_key(merged)[PRODUCE], by_key(merged)[METADATA]
    # Offered 0-5 and 0-11, it sent v4 and v7: its own table, keyed by the releases the answers name.
    assert produce["pick"] == "release-table"
    assert produce["by_release"] == [{"release": "1.0", "version": 4}, {"release": "3.9", "version": 7}]
    assert (metadata["pick"], metadata["min"], metadata["max"]) == ("highest", 5, 12)


def test_a_profile_given_twice_that_is_not_a_recording_is_refused() -> None:
    import pytest

    from kafkacompat.profiles.merge import merge_recorded

    plain = {"client": "app", "version": "1", "api_versions": [entry(METADATA, 1, 1)]}
    with pytest.raises(ValueError, match="app 1 is given 2 times and not every one is a recording"):
        merge_recorded([plain, dict(plain)])


def test_record_merge_and_check_merge_recordings_of_one_client(tmp_path: Path, capsys: Any) -> None:
    from kafkacompat.cli import main

    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(json.dumps(recording_against("1.0", "zk-broker", {PRODUCE: 4, METADATA: 5})) + "\n")
    new.write_text(json.dumps(recording_against("3.9", "zk-broker", {PRODUCE: 7, METADATA: 12})) + "\n")
    out = tmp_path / "merged.jsonl"
    assert main(["record", "--merge", str(old), str(new), "--out", str(out)]) == 0
    (merged,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert by_key(merged)[PRODUCE]["pick"] == "release-table"
    # check merges the same way: one verdict for the client, read with its table.
    capsys.readouterr()
    assert main(["check", str(old), str(new), "--release", "2.8", "--format", "json"]) == 0
    (verdict,) = json.loads(capsys.readouterr().out)["verdicts"]
    (picks,) = verdict["picks"].values()
    assert verdict["client"] == "lib" and {p["api"]: p["version"] for p in picks}["Produce"] == 7
    assert main(["check", str(out), "--release", "2.8", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdicts"] == [verdict]


def test_a_step_the_client_fails_everywhere_without_sending_its_api_is_an_api_it_cannot_send() -> None:
    from kafkacompat.negotiation.release_guess import known_api_ranges
    from kafkacompat.negotiation.verdicts import BrokerSide, judge

    delete_groups = 42
    # sarama 1.40.1: its default protocol version has no DeleteGroups; it fails the step by itself.
    runs = [
        Recording(r, r, [recorded("lib", [entry(METADATA, 5, 5)])], False, 5, "delete-group")
        for r in ("1.1", "3.9")
    ] + [Recording("4.4", "4.4", [recorded("lib", [entry(METADATA, 5, 5)])], False, 0, "metadata")]
    merged = by_key(merge_recordings("lib", "1", runs))
    assert merged[delete_groups] == {
        "api_key": delete_groups, "min": 1, "max": 0, "min_exact": True, "max_exact": True, "required": True
    }
    kafka_39 = BrokerSide("Kafka 3.9", dict(known_api_ranges("3.9", "zk-broker")), "3.9", {})
    verdict = judge(client_side(merge_recordings("lib", "1", runs)), [kafka_39])
    assert [(f.api_name, f.rule, f.severity) for f in verdict.findings] == [
        ("DeleteGroups", "client-cannot-send", "breaks")
    ]
    # Failed there against one broker only, or sent the API somewhere, or got through somewhere: no.
    assert delete_groups not in by_key(merge_recordings("lib", "1", runs[1:]))
    sends = [recorded("lib", [entry(delete_groups, 0, 0)])]
    sent = [Recording("2.8", "2.8", sends, False, 5, "delete-group")]
    assert by_key(merge_recordings("lib", "1", runs + sent))[delete_groups]["min"] == 0  # as sent
    through = [Recording("2.8", "2.8", [recorded("lib", [entry(METADATA, 5, 5)])], True, 7)]
    assert delete_groups not in by_key(merge_recordings("lib", "1", runs + through))


def test_broker_names_give_the_release_as_the_release_table_names_it() -> None:
    from kafkacompat.profiles.brokers import TANSU, apache_line, is_apache

    assert [apache_line(n) for n in ("0.10.2.2/zookeeper", "1.1.1/zookeeper", "4.4.0/kraft-combined")] == [
        "0.10.2",
        "1.1",
        "4.4",
    ]
    assert apache_line(TANSU) is None and apache_line("4.0/kraft-broker") == "4.0"  # emulated
    assert is_apache("2.8.2/zookeeper") and not is_apache("4.0/kraft-broker") and not is_apache(TANSU)


def test_a_client_that_printed_nothing_failed_in_setup() -> None:
    report = read_report("", "kafkajs")  # kafkajs 1.16.0 against 0.9.0.1
    assert report["steps"] == [
        {"step": "setup", "ok": False, "error": "the client process ended before its first step"}
    ]
