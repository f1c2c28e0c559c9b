"""One snapshot, two tools: ``check --cluster`` and fleet-report's what-if table give the same verdicts.

A cluster's snapshot lines carry the ranges each of its brokers answered and
its finalized features.  ``kafkacompat check PROFILES --cluster SNAPSHOT``
judges those brokers; fleet-report with ``--what-if`` of the release they run
judges the cluster as if upgraded to it, which is the same broker.  Both go
through the one verdict function, so every client's status and every finding
must match: on snapshots made from release tables (up to 4.4), and on
snapshots ``make verdict-table`` took of real Apache Kafka brokers
(``tests/data/real_snapshots``: 2.8.2 in ZooKeeper mode, 4.0.2 and 4.4.0 in
KRaft).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafkacompat.cli import main
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.pipeline.report import build_fleet_report
from kafkacompat.pipeline.snapshot_format import snapshot_json, snapshot_line
from kafkacompat.pipeline.what_if_core import parse_targets
from kafkacompat.profiles import MEASURED_PATH

CASES = (
    ("3.9", "kraft-broker"),
    ("2.8", "zk-broker"),
    ("4.0", "kraft-broker"),
    ("4.3", "kraft-broker"),
    ("4.4", "kraft-broker"),
)
REAL = Path(__file__).resolve().parent.parent / "data" / "real_snapshots"
# The real snapshot files and the release each broker runs.
REAL_CASES = (
    ("2.8.2-zookeeper.jsonl", "2.8", "zk-broker"),
    ("4.0.2-kraft-combined.jsonl", "4.0", "kraft-broker"),
    ("4.4.0-kraft-combined.jsonl", "4.4", "kraft-broker"),
)


def snapshot(release: str, kind: str, path: Path) -> None:
    lines = []
    for node in (1, 2):
        caps = BrokerCapabilities.from_ranges(f"h:{node}", known_api_ranges(release, kind), node_id=node)
        lines.append(snapshot_json(snapshot_line(caps, f"c-{release}", "2026-01-01T00:00:00Z", node_id=node)))
    path.write_text("\n".join(lines) + "\n")


def compare(
    spark: SparkSession, path: Path, release: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> int:
    """Every client's verdict on the snapshot's first broker, by both tools; how many were compared."""
    main(["check", "measured", "--cluster", str(path), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    first = document["verdicts"][0]["brokers"][0]["label"]
    by_check = {
        v["client"]: (
            v["status"],
            sorted((f["api"], f["rule"], f["severity"]) for f in v["findings"] if f["broker"] == first),
        )
        for v in document["verdicts"]
    }
    targets = parse_targets(f"{release}/{kind}")
    report = build_fleet_report(spark, [str(path)], [str(MEASURED_PATH)], targets=targets)
    assert report.what_if is not None
    by_fleet = {
        f"{row['client']} {row['client_version']}": (
            row["verdict"],
            sorted((f["api_name"], f["rule"], f["severity"]) for f in row["findings"]),
        )
        for row in report.what_if.collect()
    }
    assert by_fleet == by_check, (path.name, release)
    return len(by_check)


def test_check_cluster_and_fleet_report_agree_on_every_verdict(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    compared = 0
    for release, kind in CASES:
        path = tmp_path / f"{release}.jsonl"
        snapshot(release, kind, path)
        compared += compare(spark, path, release, kind, capsys)
    assert compared >= len(CASES) * 20


def test_they_agree_on_snapshots_of_real_apache_kafka(
    spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    compared = 0
    for name, release, kind in REAL_CASES:
        snapshot_file = REAL / name
        (line,) = snapshot_file.read_text().splitlines()  # one broker, as make verdict-table starts it
        assert json.loads(line)["api_versions"], name
        compared += compare(spark, snapshot_file, release, kind, capsys)
    assert compared >= len(REAL_CASES) * 20
