"""Bad input is counted and reported with its file and line, never dropped, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kafkacompat.pipeline.client_format import parse_client_line
from kafkacompat.pipeline.latest import latest_observations
from kafkacompat.pipeline.readers import DUPLICATE_PROFILE, scan_snapshots
from kafkacompat.pipeline.snapshot_format import MALFORMED, missing, parse_snapshot_line
from kafkacompat.pipeline.snapshot_schema import SNAPSHOT_SCHEMA
from tests.pipeline.conftest import BuiltFleet


def _name(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]


def test_every_bad_snapshot_line_is_reported_where_it_is(fleet: BuiltFleet) -> None:
    got = {
        (_name(r["file"]), r["line"], r["reason"], r["text"])
        for r in fleet.rows["bad_records"]
        if r["source"] == "snapshots"
    }
    expected = {
        (name, line, "; ".join(parse_snapshot_line(text)[1]), text) for name, line, text in fleet.fixture.bad
    }
    assert got == expected
    assert len(expected) == len(fleet.fixture.bad) >= 18  # the repeated text is reported on both lines


def test_spark_and_python_give_the_same_reasons(fleet: BuiltFleet) -> None:
    reasons = {r["text"]: r["reason"] for r in fleet.rows["bad_records"]}
    assert reasons["not json at all"] == MALFORMED
    assert any(r.startswith("unknown schema version 2") for r in reasons.values())
    assert any(r == missing("node_id") for r in reasons.values())
    for text, reason in reasons.items():
        obj, problems = parse_snapshot_line(text) if '"client"' not in text else parse_client_line(text)
        if reason != DUPLICATE_PROFILE:
            assert obj is None and "; ".join(problems) == reason


def test_bad_client_lines_are_reported(fleet: BuiltFleet) -> None:
    got = sorted((r["line"], r["reason"]) for r in fleet.rows["bad_records"] if r["source"] == "clients")
    base = len(fleet.fixture.clients) - 4
    assert got == [
        (base + 1, MALFORMED),
        (base + 2, missing("version")),
        (base + 3, DUPLICATE_PROFILE),
        (base + 4, DUPLICATE_PROFILE),
    ]


def test_blank_lines_are_not_records(fleet: BuiltFleet) -> None:
    assert all(r["text"].strip() for r in fleet.rows["bad_records"])


def test_files_too_big_to_reread_still_report_their_bad_lines(spark: SparkSession, fleet: BuiltFleet) -> None:
    scan = scan_snapshots(spark, fleet.snapshot_paths, max_locate_bytes=0)
    try:
        bad = scan.bad_records().collect()
        assert {r["line"] for r in bad} == {None}
        assert len(bad) == len(fleet.fixture.bad)  # each line, just without its number
    finally:
        scan.unpersist()


def test_parquet_snapshots_read_like_json(spark: SparkSession, fleet: BuiltFleet, tmp_path: Path) -> None:
    good = fleet.report.latest.select(*[f.name for f in SNAPSHOT_SCHEMA.fields])
    broken = good.limit(2).withColumn("schema", F.when(F.col("node_id") >= 0, F.lit(7)))
    path = str(tmp_path / "snapshots.parquet")
    good.unionByName(broken).coalesce(1).write.parquet(path)
    scan = scan_snapshots(spark, [path])
    try:
        latest = {
            (r["cluster_id"], r["node_id"]): r["observed_at"] for r in latest_observations(scan).collect()
        }
        assert latest == {(r["cluster_id"], r["node_id"]): r["observed_at"] for r in fleet.rows["latest"]}
        bad = scan.bad_records().collect()
        total = len(fleet.rows["latest"])
        assert sorted(r["line"] for r in bad) == [total + 1, total + 2]
        assert {r["reason"] for r in bad} == {"unknown schema version 7"}
        assert all(json.loads(r["text"])["schema"] == 7 for r in bad)
    finally:
        scan.unpersist()


@pytest.mark.parametrize("text", ['{"schema":1}{"schema":2}'])
def test_documented_spark_leniency(text: str) -> None:
    # Spark reads the first JSON value of a line; the plain validator refuses the line.
    assert parse_snapshot_line(text)[1] == [MALFORMED]
