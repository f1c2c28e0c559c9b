"""A small fleet's plans run without adaptive execution; a big one's keep the session's settings.

Both must give the same tables: the settings choose how Spark runs the plans
(how many jobs and partitions), never what they compute.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from kafkacompat.pipeline.readers import scan_snapshots
from kafkacompat.pipeline.report import (
    SMALL_INPUT_BYTES,
    FleetTables,
    build_fleet_report,
    plan_settings,
    scan_settings,
)
from kafkacompat.pipeline.session import sql_conf
from tests.pipeline.conftest import BuiltFleet


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted(row.items())) for row in rows)


def _collected(spark: SparkSession, report: FleetTables) -> dict[str, list[str]]:
    """Every table collected under the settings the report chose for its plans."""
    with sql_conf(spark, report.settings):
        return {
            name: _rows([row.asDict(recursive=True) for row in df.collect()])
            for name, df in report.tables().items()
        }


def test_small_inputs_turn_adaptive_execution_and_code_generation_off(spark: SparkSession) -> None:
    cores = spark.sparkContext.defaultParallelism
    assert plan_settings(spark, SMALL_INPUT_BYTES) == {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }
    assert plan_settings(spark, SMALL_INPUT_BYTES + 1) == {}
    assert plan_settings(spark, 10, small_input_bytes=9) == {}


def test_the_fixture_fleet_is_small_and_a_big_fleets_settings_give_the_same_tables(
    spark: SparkSession, fleet: BuiltFleet
) -> None:
    assert fleet.report.settings["spark.sql.adaptive.enabled"] == "false"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"  # the session's, restored
    as_small = _collected(spark, fleet.report)
    assert as_small == {name: _rows(rows) for name, rows in fleet.rows.items()}
    as_big = build_fleet_report(spark, fleet.snapshot_paths, [fleet.client_path], small_input_bytes=0)
    try:
        assert as_big.settings == {}
        assert as_big.valid_snapshots == fleet.report.valid_snapshots
        assert _collected(spark, as_big) == as_small
    finally:
        as_big.unpersist()


def _compiled_stages(spark: SparkSession, paths: list[str], small_input_bytes: int) -> int:
    """Whole-stage compiled operators in the scan's persisted plan (``*(n)`` in its text)."""
    scan = scan_snapshots(spark, paths, settings=lambda size: scan_settings(size, small_input_bytes))
    try:
        return str(scan.rows._jdf.queryExecution().executedPlan().toString()).count("*(")
    finally:
        scan.unpersist()


def test_the_scan_is_compiled_whole_for_big_inputs_only(spark: SparkSession, fleet: BuiltFleet) -> None:
    assert scan_settings(SMALL_INPUT_BYTES) == {"spark.sql.codegen.wholeStage": "false"}
    assert scan_settings(SMALL_INPUT_BYTES + 1) == {}
    assert _compiled_stages(spark, fleet.snapshot_paths, SMALL_INPUT_BYTES) == 0
    assert _compiled_stages(spark, fleet.snapshot_paths, 0) > 0
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"  # the session's, restored
