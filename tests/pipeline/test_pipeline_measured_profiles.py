"""The fleet pipeline takes recorded and measured client profiles unchanged, extra fields and all."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from kafkacompat.pipeline.report import build_fleet_report
from kafkacompat.profiles import MEASURED_PATH, load_measured
from tests.pipeline.fleet_cases import build_fixture, write_fixture


def test_measured_profiles_are_judged_by_the_pipeline_without_a_bad_record(
    spark: SparkSession, tmp_path: Path
) -> None:
    snapshots, _ = write_fixture(build_fixture(), tmp_path)
    report = build_fleet_report(spark, snapshots, [str(MEASURED_PATH)])
    assert report.bad_records.filter("source = 'clients'").count() == 0
    judged = {(row["client"], row["client_version"]) for row in report.compatibility.collect()}
    assert {(p["client"], p["version"]) for p in load_measured()} <= judged
