"""The release guess against every table Kafka ever answered.

Ground truth is the generated package table, cross-checked against
vendor/kafka-protocol/releases.json (tests may read it; the package may not).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkacompat._codegen.release_inputs import load_releases
from kafkacompat.errors import NegotiationError, ProtocolError
from kafkacompat.negotiation.release_guess import ReleaseGuess, guess_release, known_api_ranges
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import RELEASES

SHARED = Path(__file__).resolve().parents[3] / "vendor" / "kafka-protocol"
PROFILES = [(p.release, p.kind) for p in RELEASES]


def _shared_tables() -> dict[tuple[str, str], dict[int, tuple[int, int]]]:
    data = load_releases(SHARED)  # releases.json and releases-4.3-4.4.json
    return {
        (entry["release"], entry["kind"]): {
            int(key): (r["min"], r["max"]) for key, r in entry["apis"].items()
        }
        for entry in data["releases"]
    }


def _identical_profiles() -> dict[tuple[str, str], set[tuple[str, str]]]:
    """For each profile, every profile (itself included) answering the very same table."""
    by_table: dict[str, set[tuple[str, str]]] = defaultdict(set)
    tables = _shared_tables()
    for profile, table in tables.items():
        by_table[json.dumps(sorted(table.items()))].add(profile)
    return {profile: by_table[json.dumps(sorted(t.items()))] for profile, t in tables.items()}


def _ranges(table: dict[int, tuple[int, int]]) -> dict[int, VersionRange]:
    return {key: VersionRange(low, high) for key, (low, high) in table.items()}


def test_generated_table_matches_the_shared_reference() -> None:
    generated = {(p.release, p.kind): dict(p.apis) for p in RELEASES}
    assert generated == _shared_tables()
    assert len(generated) == 61  # 4.3 and 4.4, kraft broker and controller, measured on real nodes


def test_the_only_identical_tables_are_kraft_broker_33_34_and_controller_37_38() -> None:
    groups = {frozenset(g) for g in _identical_profiles().values() if len(g) > 1}
    assert groups == {
        frozenset({("3.3", "kraft-broker"), ("3.4", "kraft-broker")}),
        frozenset({("3.7", "kraft-controller"), ("3.8", "kraft-controller")}),
    }


@pytest.mark.parametrize(("release", "kind"), PROFILES, ids=[f"{r}-{k}" for r, k in PROFILES])
def test_every_release_and_kind_is_guessed_exactly(release: str, kind: str) -> None:
    table = _shared_tables()[(release, kind)]
    guess = guess_release(_ranges(table))
    expected = _identical_profiles()[(release, kind)]
    assert guess.relation == "exact"
    assert guess.kind == kind
    assert {(r, kind) for r in guess.releases} == expected
    assert guess.releases == tuple(sorted(guess.releases, key=lambda r: tuple(map(int, r.split(".")))))
    assert f"({kind})" in guess.text and release in guess.text
    assert guess.evidence and all(isinstance(line, str) for line in guess.evidence)
    assert str(guess) == guess.text


def test_exact_texts() -> None:
    assert guess_release(known_api_ranges("3.9")).text == "Kafka 3.9 (zk-broker)"
    twins = guess_release(known_api_ranges("3.4", "kraft-broker"))
    assert twins.text == "Kafka 3.3 or 3.4 (kraft-broker)"
    assert twins.releases == ("3.3", "3.4")
    controller = guess_release(known_api_ranges("3.8", "kraft-controller"))
    assert controller.releases == ("3.7", "3.8")


def test_exact_evidence_names_the_deciding_keys() -> None:
    guess = guess_release(known_api_ranges("3.5", "kraft-broker"))
    assert any("DescribeUserScramCredentials(50)" in line and "3.5" in line for line in guess.evidence)
    assert any("from Kafka 3.6" in line for line in guess.evidence)


@pytest.mark.parametrize("release", ["0.8.0", "0.8.1", "0.8.2", "0.9.0"])
def test_pre_0_10_tables_have_no_api_versions_yet_are_guessed(release: str) -> None:
    ranges = known_api_ranges(release)
    assert 18 not in ranges
    guess = guess_release(ranges)
    assert (guess.relation, guess.releases) == ("exact", (release,))


@pytest.mark.parametrize(("release", "kind"), PROFILES, ids=[f"{r}-{k}" for r, k in PROFILES])
def test_an_extra_unknown_api_gives_at_least_that_release(release: str, kind: str) -> None:
    ranges = known_api_ranges(release, kind) | {999: VersionRange(0, 2)}
    guess = guess_release(ranges)
    assert guess.relation == "at_least"
    assert guess.kind == kind
    assert release in guess.releases
    assert guess.text.startswith(f"at least Kafka {guess.releases[0]} ({kind})")
    assert any("API key 999" in line for line in guess.evidence)


def test_newer_than_the_newest_release() -> None:
    extra_key = known_api_ranges("4.4", "kraft-broker") | {95: VersionRange(0, 0)}
    guess = guess_release(extra_key)
    assert (guess.relation, guess.kind, guess.releases) == ("at_least", "kraft-broker", ("4.4",))
    assert guess.text == "at least Kafka 4.4 (kraft-broker)"

    higher_max = known_api_ranges("3.9") | {1: VersionRange(0, 40)}
    guess = guess_release(higher_max)
    assert guess.text == "at least Kafka 3.9 (zk-broker)"
    assert any(line.startswith("Fetch(1): 0-40 here") for line in guess.evidence)


def test_twins_plus_an_extra_api_name_the_oldest_twin_as_bound() -> None:
    guess = guess_release(known_api_ranges("3.3", "kraft-broker") | {999: VersionRange(0, 0)})
    assert guess.text == "at least Kafka 3.3 (kraft-broker)"
    assert guess.releases == ("3.3", "3.4")


def test_a_table_between_two_releases() -> None:
    older, newer = known_api_ranges("2.4"), known_api_ranges("2.5")
    mixed = {key: (newer[key] if key % 2 else older[key]) for key in older}
    guess = guess_release(mixed)
    assert (guess.relation, guess.kind, guess.releases) == ("between", "zk-broker", ("2.4", "2.5"))
    assert guess.text == "between Kafka 2.4 and 2.5 (zk-broker)"


def test_only_minimum_versions_differ() -> None:
    ranges = known_api_ranges("3.9") | {0: VersionRange(3, 11)}
    guess = guess_release(ranges)
    assert (guess.relation, guess.releases) == ("between", ("3.9",))
    assert guess.text == "close to Kafka 3.9 (zk-broker)"


def test_a_fork_answering_part_of_the_protocol() -> None:
    subset = {k: v for k, v in known_api_ranges("3.5", "kraft-broker").items() if k < 40}
    guess = guess_release(subset)
    assert (guess.relation, guess.kind, guess.releases) == ("at_least", "kraft-broker", ("3.5",))
    assert "partial" in guess.text
    assert any(line.startswith("lacks ") for line in guess.evidence)


@pytest.mark.parametrize(
    "ranges",
    [
        {},
        {1000: VersionRange(0, 1), 2000: VersionRange(5, 7)},
        {0: VersionRange(0, 999)},
        {18: VersionRange(0, 3), 5000: VersionRange(0, 0)},
    ],
)
def test_garbage_is_unknown(ranges: dict[int, VersionRange]) -> None:
    guess = guess_release(ranges)
    assert guess == ReleaseGuess(None, "unknown", (), "unknown", guess.evidence)
    assert guess.evidence


def test_empty_ranges_count_as_absent() -> None:
    ranges = known_api_ranges("3.9") | {77: VersionRange.NONE}
    assert guess_release(ranges).relation == "exact"


def test_bad_input_is_refused() -> None:
    with pytest.raises(ProtocolError):
        guess_release({0: (0, 9)})  # type: ignore[dict-item]
    with pytest.raises(NegotiationError):
        known_api_ranges("3.9", "kraft-broker-ish")
    with pytest.raises(NegotiationError):
        known_api_ranges("0.7")


@given(
    st.dictionaries(
        st.integers(min_value=0, max_value=120),
        st.tuples(st.integers(0, 20), st.integers(0, 20)).map(lambda t: VersionRange(*sorted(t))),
        max_size=90,
    )
)
def test_any_table_gives_a_consistent_guess(ranges: dict[int, VersionRange]) -> None:
    guess = guess_release(ranges)
    assert guess.relation in ("exact", "at_least", "between", "unknown")
    assert (guess.kind is None) == (guess.relation == "unknown")
    assert bool(guess.releases) == (guess.relation != "unknown")
    assert guess.evidence


def _advertised_ranges_cited(guess: ReleaseGuess, ranges: dict[int, VersionRange]) -> None:
    """Every evidence line that names an API with a range names the range the broker advertised."""
    from kafkacompat.reference.releases import API_NAMES

    for line in guess.evidence:
        for key, name in API_NAMES.items():
            label = f"{name}({key})"
            if line.startswith(label) and key in ranges:
                assert line.startswith((f"{label}: {ranges[key]} here", f"{label} {ranges[key]} ")), line


def test_a_partial_fork_is_dated_by_the_ranges_it_advertised() -> None:
    # noida-db 0.2.3's answer for these APIs: Produce 0-9, FindCoordinator 0-4, ListGroups 0-4.
    ranges = {
        0: VersionRange(0, 9), 1: VersionRange(0, 12), 3: VersionRange(0, 12), 10: VersionRange(0, 4),
        16: VersionRange(0, 4), 18: VersionRange(0, 3),
    }
    guess = guess_release(ranges)
    assert guess.relation == "at_least" and "partial" in guess.text
    _advertised_ranges_cited(guess, ranges)
    # Why it is no older than its bound: a range seen that the release before stops short of.
    assert any(" here, " in line and " in Kafka " in line for line in guess.evidence), guess.evidence


def test_a_toy_broker_with_a_single_fetch_version() -> None:
    ranges = {18: VersionRange(0, 3), 1: VersionRange(6, 6)}
    guess = guess_release(ranges)
    _advertised_ranges_cited(guess, ranges)
    assert not any("0-17" in line for line in guess.evidence), guess.evidence


@given(
    st.dictionaries(
        st.sampled_from(sorted({key for p in RELEASES for key in p.apis})),
        st.tuples(st.integers(0, 5), st.integers(0, 20)).filter(lambda t: t[0] <= t[1]),
        min_size=1,
        max_size=12,
    )
)
def test_evidence_only_cites_advertised_ranges(table: dict[int, tuple[int, int]]) -> None:
    ranges = _ranges(table)
    _advertised_ranges_cited(guess_release(ranges), ranges)
