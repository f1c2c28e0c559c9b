"""The report's Spark work for a small fleet is counted, so that it cannot creep back.

A small fleet's report costs fixed time per Spark job, whatever the machine's
load, so the number of jobs is what is held here (not seconds: those belong
to ``make bench``).  The budget is what the report needs today; a change that
adds jobs must either remove as many elsewhere or raise it here, knowingly.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from kafkacompat.pipeline.report import TABLES, WHAT_IF_TABLES, build_fleet_report, write_fleet_report
from kafkacompat.pipeline.what_if_core import parse_targets
from tests.pipeline.conftest import BuiltFleet

JOB_BUDGET = 40  # measured on this fixture, what-if 4.0,4.2 included (82 with adaptive execution; 41
# before the count of valid and bad lines named the files holding bad lines)
SCAN_JOBS = 1  # the count of valid and bad lines: one pass over the input, one job


def test_a_small_fleet_report_stays_within_its_job_budget(
    spark: SparkSession, fleet: BuiltFleet, tmp_path: Path
) -> None:
    report = build_fleet_report(
        spark, fleet.snapshot_paths, [fleet.client_path], targets=parse_targets("4.0,4.2")
    )
    try:
        counts = write_fleet_report(report, tmp_path / "out")
    finally:
        report.unpersist()
    assert set(counts) == set(TABLES + WHAT_IF_TABLES)
    assert counts["bad_records"] == len(fleet.rows["bad_records"])
    jobs, tasks = report.spark_work()
    # Counted at all (when asked, from the stages' job groups): every write runs a job.
    assert all(jobs[f"write {name}"] > 0 < tasks[f"write {name}"] for name in counts)
    # Jobs run from the report's worker threads count too (they inherit the stage's group).
    assert jobs["report.html"] > 0 and jobs["scan+validate"] == SCAN_JOBS
    # No stage counts rows for logging alone: writing a table counts its rows.
    assert jobs["latest"] == 0
    assert jobs["scan+validate"] <= SCAN_JOBS
    assert sum(jobs.values()) <= JOB_BUDGET
