"""Verdicts on a broker without ApiVersions, settled by the client's measured run against one."""

from __future__ import annotations

import pytest

from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.negotiation.silent_broker import SilentBrokerRun, silent_broker_run
from kafkacompat.negotiation.verdicts import BrokerSide, ClientEntry, ClientSide, client_side, judge
from kafkacompat.protocol.versions import VersionRange

METADATA, LIST_GROUPS, API_VERSIONS = 3, 16, 18


def broker(release: str) -> BrokerSide:
    return BrokerSide(f"Kafka {release}", dict(known_api_ranges(release, "zk-broker")), release, {})


def measured_client(run: SilentBrokerRun | None) -> ClientSide:
    # Metadata recorded at v5 only and fixed: below that, the recordings alone cannot tell.
    entries = {
        METADATA: ClientEntry(METADATA, VersionRange(5, 5), "fixed", True, True, False),
        API_VERSIONS: ClientEntry(API_VERSIONS, VersionRange(0, 0), required=True),
    }
    return ClientSide("lib", "2.0", entries, silent_broker=run)


def run(last: tuple[int, int, str] | None, ok: bool = False) -> SilentBrokerRun:
    answered = ((METADATA, 0), (LIST_GROUPS, 0)) if last and last[0] != API_VERSIONS else ()
    return SilentBrokerRun("0.9.0", ok, None if ok else "setup", last, answered)


def rules(client: ClientSide, release: str = "0.9.0") -> list[tuple[str, str, str]]:
    return [(f.api_name, f.rule, f.severity) for f in judge(client, [broker(release)]).findings]


def test_without_a_measurement_a_broker_without_api_versions_is_could_not_tell_with_the_reason() -> None:
    verdict = judge(measured_client(None), [broker("0.9.0")])
    assert rules(measured_client(None)) == [("ApiVersions", "pre-kip-35", "unknown")]
    assert verdict.status == "unknown"
    assert "this client was not measured against one" in verdict.findings[0].message


def test_a_client_measured_giving_up_on_api_versions_breaks_there_with_the_evidence() -> None:
    gave_up = measured_client(run((API_VERSIONS, 0, "unanswered")))
    verdict = judge(gave_up, [broker("0.9.0")])
    # No guess from the recorded ranges (Metadata v5): the measurement is the verdict.
    assert rules(gave_up) == [("ApiVersions", "api-missing", "breaks")]
    finding = verdict.findings[0]
    assert "the client gives up" in finding.message
    assert "last request ApiVersions v0 (unanswered)" in finding.message
    assert finding.source == "KIP-35; measured against 0.9.0"


def test_a_client_that_falls_back_and_stops_after_an_answer_breaks_at_that_api() -> None:
    refuses = measured_client(run((METADATA, 0, "answered")))
    verdict = judge(refuses, [broker("0.9.0")])
    assert rules(refuses) == [
        ("ApiVersions", "api-versions-fallback", "warns"),
        ("Metadata", "client-refuses-era", "breaks"),
    ]
    assert verdict.status == "breaks"
    stop = verdict.findings[1]
    assert (stop.version, stop.broker_range) == (0, VersionRange(0, 0))
    assert verdict.picks["Kafka 0.9.0"][METADATA] == 0  # what it sent there, not the recorded v5
    assert "answered Metadata v0 by a broker of this era and sent nothing more" in stop.message
    assert "answered Metadata v0, ListGroups v0" in stop.message and "stopped in step setup" in stop.message


def test_a_request_the_broker_leaves_unanswered_after_the_fallback_is_named_as_such() -> None:
    found = rules(measured_client(run((METADATA, 0, "closed"))))
    assert found[1] == ("Metadata", "fallback-not-answered", "breaks")


def test_a_client_that_falls_back_and_gets_through_works_there() -> None:
    through = measured_client(run((METADATA, 0, "answered"), ok=True))
    assert rules(through) == [("ApiVersions", "api-versions-fallback", "warns")]
    assert judge(through, [broker("0.9.0")]).status == "works"


def test_the_measurement_applies_to_its_release_line_only() -> None:
    refuses = measured_client(run((METADATA, 0, "answered")))
    # 0.8.2 has no ApiVersions either, but was not measured: could not tell, no guess.
    assert rules(refuses, "0.8.2") == [("ApiVersions", "pre-kip-35", "unknown")]
    assert "measured against 0.9.0 only" in judge(refuses, [broker("0.8.2")]).findings[0].message
    # A broker with ApiVersions: nothing about the fallback at all.
    assert not [r for r in rules(refuses, "1.0") if r[0] == "ApiVersions"]
    assert not run(None).applies_to({}, None) and not run(None).falls_back


def test_a_profiles_block_is_read_and_a_malformed_one_is_refused_by_name() -> None:
    block = {
        "measured_against": "0.9.0",
        "ok": False,
        "stopped_in": "setup",
        "last_request": {"api_key": 3, "version": 0, "outcome": "answered"},
        "answered": [[3, 0], [16, 0]],
    }
    assert silent_broker_run(block) == SilentBrokerRun(
        "0.9.0", False, "setup", (3, 0, "answered"), ((3, 0), (16, 0))
    )
    assert silent_broker_run(None) is None
    profile = {"client": "lib", "version": "1", "api_versions": [], "without_api_versions": {"ok": 1}}
    with pytest.raises(ValueError, match="without_api_versions is malformed"):
        client_side(profile)
    with pytest.raises(ValueError, match="without_api_versions is malformed"):
        silent_broker_run({**block, "answered": [[3]]})
