"""The what-if table: the Spark job and the Python core agree row by row, findings and all.

The clusters are the fixture fleet's (the oracle reads its files without
Spark); the clients are the fixture's profiles, the measured ones
(``kafkacompat/profiles/measured.jsonl``, read unchanged) and hand-made
profiles below that reach every rule of ``negotiation.verdicts``.  The
fixture finalizes transaction.version 2 and group.version 1 on some
clusters and nothing on others, so the feature gates are seen both shut and
open.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from html import escape
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from kafkacompat.errors import ConfigError
from kafkacompat.pipeline.client_format import parse_client_line
from kafkacompat.pipeline.html_report import render_report
from kafkacompat.pipeline.readers import read_clients
from kafkacompat.pipeline.snapshot_format import MALFORMED
from kafkacompat.pipeline.what_if import what_if
from kafkacompat.pipeline.what_if_core import UpgradeTarget, parse_targets, upgrade_first, what_if_rows
from kafkacompat.profiles import MEASURED_PATH, load_measured
from tests.pipeline.conftest import BuiltFleet, Oracle

TARGETS = "4.0,4.2,4.4,2.0,3.9/kraft-broker"


def _entry(key: int, low: int, high: int, **extra: Any) -> dict[str, Any]:
    return {"api_key": key, "min": low, "max": high, "required": True, **extra}


# One profile per behaviour; "required" everywhere unless said, so that findings break.
WHAT_IF_PROFILES: list[dict[str, Any]] = [
    # Produce v2 sent whatever the broker says: 4.x advertises it and refuses it (KAFKA-18659).
    {"client": "wi-fixed-produce", "version": "1", "api_versions": [_entry(0, 2, 2, pick="fixed")]},
    # Fetch v3 at most: removed by 4.0 (KIP-896); a fixed ListOffsets v0, removed too.
    {
        "client": "wi-old-fetch",
        "version": "1",
        "api_versions": [_entry(1, 0, 3), _entry(2, 0, 0, pick="fixed")],
    },
    # Recorded sending Fetch v17 only to new brokers (min not exact): could-not-tell on 2.0;
    # a fixed DescribeGroups v9 that no release has: does not work anywhere.
    {
        "client": "wi-recorded",
        "version": "1",
        "api_versions": [_entry(1, 17, 17, pick="fixed", min_exact=False), _entry(15, 9, 9, pick="fixed")],
    },
    # A transactional client: Produce v12 in a transaction and EndTxn v5 need transaction.version 2.
    {
        "client": "wi-txn",
        "version": "1",
        "api_versions": [_entry(0, 3, 12), _entry(24, 0, 5), _entry(26, 0, 5), _entry(28, 0, 5)],
    },
    # The same client, obeying the gates as kafkacompat does: picks below them.
    {
        "client": "wi-txn",
        "version": "2-obeys",
        "obeys_feature_gates": True,
        "api_versions": [_entry(0, 3, 12), _entry(24, 0, 5), _entry(26, 0, 5), _entry(28, 0, 5)],
    },
    # Recorded TxnOffsetCommit up to v3 only (max not exact): the gate might apply, could not tell.
    {
        "client": "wi-txn-recorded",
        "version": "1",
        "api_versions": [_entry(24, 0, 3), _entry(28, 0, 3, max_exact=False)],
    },
    # KIP-848 without a fallback (breaks where group.version is 0), and with JoinGroup (warns).
    {"client": "wi-848", "version": "1", "api_versions": [_entry(68, 0, 1)]},
    {"client": "wi-848", "version": "2-fallback", "api_versions": [_entry(68, 0, 1), _entry(11, 0, 9)]},
    # Share groups (share.version is never finalized in the fleet); Metadata below what 4.x has,
    # recorded with a max that is only a bound; an API key no release has, not required.
    {
        "client": "wi-misc",
        "version": "1",
        "api_versions": [
            _entry(76, 1, 1),
            _entry(3, 0, 0, max_exact=False, min_exact=False),
            {"api_key": 200, "min": 0, "max": 1},
        ],
    },
]


@dataclass
class WhatIfCase:
    targets: tuple[UpgradeTarget, ...]
    got: dict[tuple[str, ...], dict[str, Any]]
    expected: dict[tuple[str, ...], dict[str, Any]]
    summary: list[dict[str, Any]]
    expected_summary: list[dict[str, Any]]


def _key(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["cluster_id"], row["client"], row["client_version"], row["target"], row["kind"])


def _summary_key(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["target"], row["kind"], row["client"], row["client_version"])


@pytest.fixture(scope="module")
def case(
    spark: SparkSession, fleet: BuiltFleet, oracle: Oracle, tmp_path_factory: pytest.TempPathFactory
) -> WhatIfCase:
    extra = tmp_path_factory.mktemp("what-if") / "what-if-clients.jsonl"
    extra.write_text("".join(json.dumps(p) + "\n" for p in WHAT_IF_PROFILES), encoding="utf-8")
    read = read_clients(spark, [fleet.client_path, str(MEASURED_PATH), str(extra)])
    assert read.bad.where("source = 'clients'").count() == 4  # the fixture's own bad lines only
    targets = parse_targets(TARGETS)
    tables = what_if(fleet.report.latest, read.records, targets)
    got = [r.asDict(recursive=True) for r in tables.rows.collect()]
    summary = [r.asDict(recursive=True) for r in tables.upgrade_first.collect()]
    # The oracle: the fixture's latest observations and its valid profiles, plus the others.
    profiles = list(oracle.profiles)
    for text in [*MEASURED_PATH.read_text(encoding="utf-8").splitlines(), *map(json.dumps, WHAT_IF_PROFILES)]:
        profile, problems = parse_client_line(text)
        assert profile is not None, problems
        profiles.append(profile)
    latest: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (cluster, _), obj in sorted(oracle.latest.items()):
        latest[cluster].append(obj)
    expected = what_if_rows(latest, profiles, targets)
    by_key = {_key(r): r for r in got}
    assert len(by_key) == len(got), "one row per cluster, client and target"
    return WhatIfCase(targets, by_key, {_key(r): r for r in expected}, summary, upgrade_first(expected))


def test_every_row_matches_the_core(case: WhatIfCase, oracle: Oracle) -> None:
    assert set(case.got) == set(case.expected)
    clusters = {key[0] for key in case.got}
    assert clusters == set(oracle.brokers)  # a quorum of controllers alone is not judged
    for key, expected in case.expected.items():
        assert case.got[key] == expected, key


def test_the_summary_matches_the_core(case: WhatIfCase) -> None:
    got = {_summary_key(r): r for r in case.summary}
    assert len(got) == len(case.summary)
    assert got == {_summary_key(r): r for r in case.expected_summary}
    assert any(r["blocked_clusters"] > 0 for r in case.summary)


def test_every_rule_severity_and_verdict_is_reached(case: WhatIfCase) -> None:
    findings = [(f["rule"], f["severity"]) for row in case.got.values() for f in row["findings"]]
    rules = {rule for rule, _ in findings}
    assert rules == {
        "api-missing",
        "no-common-version",
        "removed-in-4",
        "fixed-version-not-accepted",
        "release-table-not-accepted",
        "advertised-but-refused",
        "feature-gated",
        "client-cannot-send",  # sarama 1.40.1's DeleteGroups, measured
        "unsupported-client-release",  # kafka-clients before 2.1 on 4.x (KIP-1124)
    }
    assert {severity for _, severity in findings} == {"breaks", "warns", "unknown"}
    assert {row["verdict"] for row in case.got.values()} == {"works", "breaks", "unknown"}
    for row in case.got.values():
        breaking = [f["api_name"] for f in row["findings"] if f["severity"] == "breaks"]
        assert row["breaking_apis"] == breaking
        assert (row["verdict"] == "breaks") == bool(breaking)


def _rows(case: WhatIfCase, client: str, version: str, target: str) -> list[dict[str, Any]]:
    return [
        r
        for r in case.got.values()
        if (r["client"], r["client_version"], r["target"]) == (client, version, target)
    ]


def _levels(oracle: Oracle, cluster: str, feature: str) -> int:
    objs = [obj for (c, _), obj in oracle.latest.items() if c == cluster]
    best = max(objs, key=lambda o: (o["finalized_features_epoch"], sorted(map(str, o["finalized_features"]))))
    return next((f["max"] for f in best["finalized_features"] if f["name"] == feature), 0)


def test_the_verdicts_say_what_kafka_does(case: WhatIfCase, oracle: Oracle) -> None:
    for row in _rows(case, "wi-fixed-produce", "1", "4.0"):
        assert [(f["api_name"], f["rule"], f["version"]) for f in row["findings"]] == [
            ("Produce", "advertised-but-refused", 2)
        ]
    for row in _rows(case, "wi-old-fetch", "1", "4.2"):
        assert row["breaking_apis"] == ["Fetch", "ListOffsets"]
        assert {f["rule"] for f in row["findings"]} == {"removed-in-4"}
    assert {r["verdict"] for r in _rows(case, "wi-old-fetch", "1", "3.9")} == {"works"}
    assert {r["verdict"] for r in _rows(case, "wi-recorded", "1", "2.0")} == {"breaks"}
    # The transaction gate follows each cluster's finalized transaction.version, unchanged by the upgrade.
    txn = _rows(case, "wi-txn", "1", "4.0")
    opened = {r["cluster_id"] for r in txn if r["verdict"] == "works"}
    assert opened and opened == {
        r["cluster_id"] for r in txn if _levels(oracle, r["cluster_id"], "transaction.version") >= 2
    }
    shut = next(r for r in txn if r["verdict"] == "breaks")
    assert [(f["api_name"], f["rule"], f["source"].split(";")[0]) for f in shut["findings"]] == [
        ("Produce", "feature-gated", "KIP-890"),
        ("EndTxn", "feature-gated", "KIP-890"),
        ("TxnOffsetCommit", "feature-gated", "KIP-890"),
    ]
    # ... and each source goes on to the place in Kafka's code that applies the gate.
    assert all("Kafka 4.0" in f["source"] for f in shut["findings"]), shut["findings"]
    assert {r["verdict"] for r in _rows(case, "wi-txn", "2-obeys", "4.0")} == {"works"}
    assert {r["verdict"] for r in _rows(case, "wi-txn-recorded", "1", "4.0")} >= {"unknown"}
    assert {r["verdict"] for r in _rows(case, "wi-848", "2-fallback", "4.0")} == {"works"}


def test_measured_clients_that_ran_against_the_real_4_4_are_not_blocked_by_it(case: WhatIfCase) -> None:
    """Reality first: each measured client ran its traffic against the real Apache Kafka 4.4.0.

    Those that got through are not blocked by 4.4; those it refused on the wire
    (kafka-clients 0.10.2.2's Produce v2, sarama 1.40.1's versions 4.x removed) are.
    """
    through = 0
    for profile in load_measured():
        steps = profile["recorded"]["against"]["4.4.0/kraft-combined"]["steps"]
        rows = _rows(case, profile["client"], profile["version"], "4.4")
        verdicts = {r["verdict"] for r in rows}
        if all(step["ok"] for step in steps):
            through += 1
            # Works on a cluster like the real one; elsewhere only a feature level it lacks
            # (transaction.version 2 for EndTxn v5) may stop it.
            assert "works" in verdicts, (profile["client"], profile["version"])
            gated = {f["rule"] for r in rows for f in r["findings"] if f["severity"] == "breaks"}
            assert gated <= {"feature-gated"}, (profile["client"], profile["version"], gated)
        elif (profile["client"], profile["version"]) in (("kafka-clients", "0.10.2.2"), ("sarama", "1.40.1")):
            assert verdicts == {"breaks"}, (profile["client"], profile["version"])
    assert through >= 15


def test_targets_are_checked() -> None:
    assert [(t.release, t.kind) for t in parse_targets("4.0, 3.9/kraft-broker")] == [
        ("4.0", "kraft-broker"),
        ("3.9", "kraft-broker"),
    ]
    assert parse_targets(["2.0", "3.9"])[1].kind == "zk-broker"  # the emulator's default kind
    for bad, words in [
        ("9.9", "no Kafka 9.9"),
        ("4.0/zk-broker", "no Kafka 4.0 (zk-broker)"),
        ("4.0/kraft-controller", "never talk to a KRaft controller"),
        ("4.0,,4.2", "RELEASE[/KIND]"),
        ("4.0,4.0", "twice"),
        ("0.9.0", "no ApiVersions; upgrade targets start at 0.10.0"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(words)):
            parse_targets(bad)


def test_a_profile_with_a_mistyped_verdict_field_is_a_bad_record(spark: SparkSession, tmp_path: Path) -> None:
    line = json.dumps({"client": "x", "version": "1", "api_versions": [_entry(3, 0, 1, max_exact="yes")]})
    assert parse_client_line(line)[1] == [MALFORMED]
    path = tmp_path / "clients.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    read = read_clients(spark, [str(path)])
    assert [(r["line"], r["reason"]) for r in read.bad.collect()] == [(1, MALFORMED)]
    assert read.records.count() == 0


def test_the_page_shows_who_can_upgrade_and_who_blocks(
    case: WhatIfCase, fleet: BuiltFleet, spark: SparkSession
) -> None:
    read = read_clients(spark, [fleet.client_path, str(MEASURED_PATH)])
    tables = what_if(fleet.report.latest, read.records, case.targets)
    report = replace(
        fleet.report, what_if=tables.rows, upgrade_first=tables.upgrade_first, targets=case.targets
    )
    page = render_report(report, {name: len(rows) for name, rows in fleet.rows.items()})
    assert "<h2>What if: upgrading every cluster</h2>" in page and "<h2>Clients to upgrade first</h2>" in page
    expected = [
        r for r in case.expected.values() if (r["client"], r["client_version"]) in _fixture_and_measured(case)
    ]
    for target in case.targets:
        rows = [r for r in expected if (r["target"], r["kind"]) == (target.release, target.kind)]
        clusters = {r["cluster_id"] for r in rows}
        blocked = {r["cluster_id"] for r in rows if r["verdict"] == "breaks"}
        unknown = {r["cluster_id"] for r in rows if r["verdict"] == "unknown"} - blocked
        cells = [len(clusters), len(clusters - blocked - unknown), len(blocked), len(unknown)]
        numbers = "".join(f'<td class="num">{n:,}</td>' for n in cells)
        assert f"<tr><td>{escape(target.label)}</td>{numbers}</tr>" in page, target.label
        for summary in upgrade_first(rows):
            if summary["blocked_clusters"]:
                label = f"{summary['client']} {summary['client_version']}"
                assert f"<td>{escape(target.label)}</td><td>{escape(label)}</td>" in page
    for row in expected:
        if row["verdict"] == "breaks" and row["target"] == "2.0":
            assert f"<td>{escape(row['cluster_id'])}</td>" in page


def _fixture_and_measured(case: WhatIfCase) -> set[tuple[str, str]]:
    hand_made = {(p["client"], p["version"]) for p in WHAT_IF_PROFILES}
    return {(r["client"], r["client_version"]) for r in case.expected.values()} - hand_made
