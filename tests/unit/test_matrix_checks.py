"""The release matrix's judgements of a real node, on hand-made records: each difference it must report."""

from __future__ import annotations

from typing import Any

from kafkacompat.testing.apache_kafka.matrix_checks import guess_differences, removal_differences


def test_a_version_the_table_refuses_must_be_closed() -> None:
    advertised = {"0": [0, 13], "1": [4, 18]}
    closed = {"0:0": {"outcome": "closed"}, "1:3": {"outcome": "closed"}}
    assert removal_differences("4.0", closed, advertised) == []
    answered = {"0:1": {"outcome": "answered", "error_code": 35}}
    assert removal_differences("4.0", answered, advertised) == [
        "removal table, Produce(0) v1: real answered (error code 35), table says closed"
    ]


def test_a_version_no_removal_covers_on_that_release_must_be_answered_if_advertised() -> None:
    # Share v0: early access in 4.0 (answered where advertised), refused from 4.1.
    share = {"76:0": {"outcome": "closed"}}
    assert removal_differences("4.0", share, {"76": [0, 0]}) == [
        "removal table, ShareGroupHeartbeat(76) v0: real closed, table says answered"
    ]
    assert removal_differences("4.0", share, {}) == []  # not advertised: closing it is right
    assert removal_differences("4.1", share, {"76": [0, 1]}) == []


def _inspected(text: str, relation: str, evidence: list[str]) -> dict[str, Any]:
    apis = [
        {"api_key": 94, "broker_min": 0, "broker_max": 0},
        {"api_key": 11, "broker_min": 0, "broker_max": 9},
    ]
    releases = text.removeprefix("Kafka ").split(" (")[0].split(" or ")
    kind = text.split("(")[-1].rstrip(")")
    guess = {"text": text, "relation": relation, "evidence": evidence, "releases": releases, "kind": kind}
    return {"exit": 0, "json": {"brokers": [{"apis": apis, "release_guess": guess}]}}


def test_the_release_guess_must_be_exact_and_cite_what_was_advertised() -> None:
    good = _inspected(
        "Kafka 4.4 (kraft-controller)",
        "exact",
        ["UnregisterController(94) 0 first appears in 4.4", "JoinGroup(11): 0-9 here"],
    )
    assert guess_differences("4.4", "kraft-controller", good) == []
    shared = _inspected("Kafka 3.7 or 3.8 (kraft-controller)", "exact", [])  # one table, two releases
    assert guess_differences("3.8", "kraft-controller", shared) == []
    assert guess_differences("3.8", "kraft-broker", shared) != []
    shared = _inspected("Kafka 3.7 or 3.8 (kraft-controller)", "exact", [])  # one table, two releases
    assert guess_differences("3.8", "kraft-controller", shared) == []
    assert guess_differences("3.8", "kraft-broker", shared) != []
    near = _inspected("Kafka 4.3 (kraft-controller)", "newer", [])
    assert guess_differences("4.4", "kraft-controller", near) == [
        "release guess: 'Kafka 4.3 (kraft-controller)' (newer), real 'Kafka 4.4 (kraft-controller)' (exact)"
    ]
    miscited = _inspected("Kafka 4.4 (kraft-controller)", "exact", ["JoinGroup(11): 2-9 here"])
    assert guess_differences("4.4", "kraft-controller", miscited) == [
        "release guess evidence cites no advertised range: 'JoinGroup(11): 2-9 here' (0-9)"
    ]
    assert guess_differences("4.4", "kraft-controller", {"exit": 1, "json": None}) == [
        "release guess: inspect printed no JSON (exit 1)"
    ]
