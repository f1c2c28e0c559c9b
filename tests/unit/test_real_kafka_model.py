"""kafkacompat's model held to what real Apache Kafka did in the matrix (tests/data/real_kafka).

No JVM runs here: the records are the real answers.  Beside the API ranges
(test_release_table_is_real) and the emulator's raw answers
(test_emulator_matches_real), every record must agree with:

- the removal table: what each real 4.x broker did with every version Kafka 4.x
  removed (closed where the table refuses it or the broker does not advertise
  it, answered otherwise);
- the features table: every level of every feature a real node supports is a
  level kafkacompat knows, and a release's newest metadata.version is named
  for that release;
- the defaults: what a real broker finalized right after format is
  ``FEATURE_DEFAULTS`` of its release (less kraft.version: a static quorum, as
  the launcher writes, formats it at 0, where 4.3's and 4.4's defaults hold 1,
  the dynamic-quorum default);
- the release guess: ``guess_release`` of each node's real ranges names its
  release and kind exactly (KRaft broker 3.3/3.4 and controller 3.7/3.8 share
  one table each, and are named together; the broker listener of a combined
  3.0-3.2 node leaves out DescribeQuorum);
- the start: every release and mode started, except the one refused with its
  cause (2.8's KRaft beyond a sole voter).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.negotiation.release_guess import guess_release
from kafkacompat.protocol import messages
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.api_names import API_NAMES
from kafkacompat.reference.features import FEATURE_DEFAULTS, FEATURES
from kafkacompat.testing.apache_kafka.launcher import modes_of
from kafkacompat.testing.apache_kafka.matrix import LAST_PATCHES, best_answer, minor_of, node_kind
from kafkacompat.testing.apache_kafka.matrix_checks import removal_differences

DATA = Path(__file__).resolve().parents[1] / "data" / "real_kafka"


def _records() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(DATA.glob("*.json"))]


RECORDS = _records()
STARTED = [r for r in RECORDS if r["started"]]


def _label(record: dict[str, Any]) -> str:
    return f"{record['release']}-{record['mode']}"


def test_every_release_and_mode_was_run_and_only_2_8_split_refused() -> None:
    ran = {(r["release"], r["mode"]) for r in RECORDS}
    assert ran == {(release, mode) for release in LAST_PATCHES for mode in modes_of(release)}
    refused = {(r["release"], r["mode"]): r.get("error", "") for r in RECORDS if not r["started"]}
    assert list(refused) == [("2.8.2", "kraft-split")]
    assert "DataInputStreamReadable.remaining()" in refused[("2.8.2", "kraft-split")]


def test_releases_whose_zookeeper_client_needs_it_ran_on_java_11() -> None:
    java = {r["release"]: r.get("java") for r in STARTED if r["mode"] == "zookeeper"}
    assert {release for release, feature in java.items() if feature == 11} == {
        "2.0.1",
        "2.1.1",
        "2.2.2",
        "2.3.1",
    }


REMOVALS = [r for r in STARTED if "removed_versions" in r]


def test_every_4x_release_was_probed_for_removed_versions() -> None:
    assert {_label(r) for r in REMOVALS} == {_label(r) for r in STARTED if r["release"].startswith("4.")}


@pytest.mark.parametrize("record", REMOVALS, ids=_label)
def test_removed_versions_are_treated_as_the_removal_table_says(record: dict[str, Any]) -> None:
    answer = best_answer(record["broker"])
    assert answer is not None
    assert removal_differences(minor_of(record["release"]), record["removed_versions"], answer["apis"]) == []
    # Produce v0-2 are the advertised-but-refused case (KAFKA-18659): listed, and closed.
    assert answer["apis"]["0"][0] == 0
    assert {record["removed_versions"][f"0:{v}"]["outcome"] for v in range(3)} == {"closed"}


KRAFT = [r for r in STARTED if r["mode"] != "zookeeper"]


def _supported(record: dict[str, Any], role: str) -> dict[str, tuple[int, int]]:
    answer = best_answer(record[role])
    assert answer is not None
    return {name: (low, high) for name, (low, high) in answer["supported_features"].items()}


@pytest.mark.parametrize("record", KRAFT, ids=_label)
def test_every_feature_level_a_real_node_supports_is_known(record: dict[str, Any]) -> None:
    for role in ("broker", "controller"):
        for name, (low, high) in _supported(record, role).items():
            known = {fact.level for fact in FEATURES.get(name, ())} | (
                {0} if name != "metadata.version" else set()
            )
            assert set(range(low, high + 1)) <= known, (role, name, sorted(set(range(low, high + 1)) - known))
        levels = _supported(record, role).get("metadata.version")
        if levels is not None:
            newest = {fact.level: fact for fact in FEATURES["metadata.version"]}[levels[1]]
            assert newest.release == minor_of(record["release"]), (role, newest)


SPLIT_AFTER_FORMAT = [
    r for r in KRAFT if r["mode"] == "kraft-split" and minor_of(r["release"]) in FEATURE_DEFAULTS
]


def test_the_defaults_cover_every_release_that_finalizes_features() -> None:
    finalizing = {
        minor_of(r["release"]) for r in KRAFT if (best_answer(r["broker"]) or {}).get("finalized_features")
    }
    assert finalizing and finalizing <= set(FEATURE_DEFAULTS)


@pytest.mark.parametrize("record", SPLIT_AFTER_FORMAT, ids=_label)
def test_a_new_cluster_finalizes_the_release_defaults(record: dict[str, Any]) -> None:
    answer = best_answer(record["broker"])
    assert answer is not None
    finalized = {name: levels[1] for name, levels in answer["finalized_features"].items()}
    defaults = FEATURE_DEFAULTS[minor_of(record["release"])]
    expected = {name: level for name, level in defaults.items() if level > 0 and name != "kraft.version"}
    if "features" in record:  # the v4 answer lists every feature; v3 (before 3.9) metadata.version only
        finalized = record["features"]["after_format"]["finalized"]
    else:
        expected = {name: level for name, level in expected.items() if name in finalized}
    assert finalized == expected


NODES = [(r, role) for r in STARTED for role in ("broker", "controller") if role in r]


@pytest.mark.parametrize(("record", "role"), NODES, ids=lambda v: v if isinstance(v, str) else _label(v))
def test_the_release_guess_names_each_real_release_exactly(record: dict[str, Any], role: str) -> None:
    answer = best_answer(record[role])
    assert answer is not None
    ranges = {int(key): VersionRange(low, high) for key, (low, high) in answer["apis"].items()}
    guess = guess_release(ranges)
    kind = node_kind(record["mode"], role)
    assert (guess.relation, guess.kind) == ("exact", kind), guess.text
    assert minor_of(record["release"]) in guess.releases, guess.text
    labels = {f"{name}({key})": key for key, name in API_NAMES.items()}
    for line in guess.evidence:  # a line naming an API the node advertised cites that range
        label = line.split(" ", 1)[0].rstrip(":")
        key = labels.get(label)
        if key is not None and key in ranges:
            assert line.startswith((f"{label}: {ranges[key]} here", f"{label} {ranges[key]} ")), line


def _advertised_versions() -> dict[int, set[int]]:
    found: dict[int, set[int]] = {}
    for record in STARTED:
        for role in ("broker", "controller"):
            answer = best_answer(record[role]) if role in record else None
            for key, (low, high) in (answer or {"apis": {}})["apis"].items():
                found.setdefault(int(key), set()).update(range(low, high + 1))
    return found


ADVERTISED = _advertised_versions()


@pytest.mark.parametrize("api_key", sorted(ADVERTISED), ids=lambda key: f"{API_NAMES.get(key, '?')}({key})")
def test_the_codec_writes_and_reads_every_version_a_real_node_advertises(api_key: int) -> None:
    request = getattr(messages, messages.CLASS_BY_KEY[(api_key, "request")])
    response = getattr(messages, messages.CLASS_BY_KEY[(api_key, "response")])
    for version in sorted(ADVERTISED[api_key]):
        for message_type in (request, response):
            body = message_type().encode(version)
            assert message_type.decode(body, version).encode(version) == body, (message_type.NAME, version)
