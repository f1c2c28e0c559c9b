"""One snapshot, two tools: ``check --cluster`` and fleet-report's what-if table give the same verdicts.

A cluster's snapshot lines carry the ranges each of its brokers answered
(here: exactly a release's table, so the release is known) and its finalized
features.  ``kafkacompat check PROFILES --cluster SNAPSHOT`` judges those
brokers; fleet-report with ``--what-if`` of that same release judges the
cluster as if upgraded to it, which is the same broker.  Both go through the
one verdict function, so every client's status and every finding must match.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from kafkacompat.cli import main
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.pipeline.report import build_fleet_report
from kafkacompat.pipeline.snapshot_format import snapshot_json, snapshot_line
from kafkacompat.pipeline.what_if_core import parse_targets
from kafkacompat.profiles import MEASURED_PATH

CASES = (("3.9", "kraft-broker"), ("2.8", "zk-broker"), ("4.0", "kraft-broker"))


def snapshot(release: str, kind: str, path: Path) -> None:
    lines = []
    for node in (1, 2):
        caps = BrokerCapabilities.from_ranges(f"h:{node}", known_api_ranges(release, kind), node_id=node)
        lines.append(snapshot_json(snapshot_line(caps, f"c-{release}", "2026-01-01T00:00:00Z", node_id=node)))
    path.write_text("\n".join(lines) + "\n")


def test_check_cluster_and_fleet_report_agree_on_every_verdict(
    spark: SparkSession, tmp_path: Path, capsys: object
) -> None:
    compared = 0
    for release, kind in CASES:
        path = tmp_path / f"{release}.jsonl"
        snapshot(release, kind, path)
        main(["check", "measured", "--cluster", str(path), "--format", "json"])
        document = json.loads(capsys.readouterr().out)  # type: ignore[attr-defined]
        by_check = {
            v["client"]: (
                v["status"],
                sorted(
                    (f["api"], f["rule"], f["severity"])
                    for f in v["findings"]
                    if f["broker"] == "node 1 at h:1"
                ),
            )
            for v in document["verdicts"]
        }
        report = build_fleet_report(
            spark, [str(path)], [str(MEASURED_PATH)], targets=parse_targets(f"{release}/{kind}")
        )
        assert report.what_if is not None
        by_fleet = {
            f"{row['client']} {row['client_version']}": (
                row["verdict"],
                sorted((f["api_name"], f["rule"], f["severity"]) for f in row["findings"]),
            )
            for row in report.what_if.collect()
        }
        assert by_fleet == by_check, release
        compared += len(by_check)
    assert compared >= 3 * 6
