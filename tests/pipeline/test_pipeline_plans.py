"""The data path stays in the JVM: no Python UDF of any kind in any table's plan."""

from __future__ import annotations

from pyspark.sql import DataFrame

from tests.pipeline.conftest import BuiltFleet

PYTHON_NODES = (
    "PythonUDF",
    "BatchEvalPython",
    "ArrowEvalPython",
    "MapInPandas",
    "PythonMapInArrow",
    "FlatMapGroupsInPandas",
    "FlatMapCoGroupsInPandas",
    "AggregateInPandas",
    "WindowInPandas",
)


def _plans(df: DataFrame) -> str:
    execution = df._jdf.queryExecution()
    return "\n".join([execution.optimizedPlan().toString(), execution.executedPlan().toString()])


def test_no_python_in_any_plan(fleet: BuiltFleet) -> None:
    frames = dict(fleet.report.tables())
    assert fleet.report._scan is not None
    frames["scan"] = fleet.report._scan.rows
    for name, df in frames.items():
        plan = _plans(df)
        found = [node for node in PYTHON_NODES if node in plan]
        assert not found, f"{name}: {found}"


def test_the_scan_and_latest_are_cached(fleet: BuiltFleet) -> None:
    assert "InMemoryRelation" in _plans(fleet.report.latest)
    assert "InMemoryRelation" in _plans(fleet.report.negotiated)
