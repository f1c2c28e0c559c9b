"""One local Spark for the pipeline tests, and the fixture fleet's report, built once.

The session is ``local[2]`` with 4 shuffle partitions, no UI, bound to
127.0.0.1 (no network); it lives for the whole test session.  ``fleet`` writes
the fixture fleet (``fleet_cases``) and builds its report once; tests read the
collected tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the fleet pipeline needs the kafkacompat[spark] extra")

from pyspark.sql import SparkSession  # noqa: E402

from kafkacompat.pipeline.report import FleetTables, build_fleet_report  # noqa: E402
from tests.pipeline.fleet_cases import Fixture, build_fixture, write_fixture  # noqa: E402

SPARK_TEST_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    builder = SparkSession.builder.master("local[2]").appName("kafkacompat-pipeline-tests")
    for key, value in SPARK_TEST_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@dataclass
class BuiltFleet:
    fixture: Fixture
    snapshot_paths: list[str]
    client_path: str
    report: FleetTables
    rows: dict[str, list[dict[str, Any]]]  # every table, collected


@pytest.fixture(scope="session")
def fleet(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> BuiltFleet:
    fixture = build_fixture()
    directory: Path = tmp_path_factory.mktemp("fleet")
    paths, clients = write_fixture(fixture, directory)
    report = build_fleet_report(spark, paths, [clients])
    rows = {
        name: [row.asDict(recursive=True) for row in df.collect()] for name, df in report.tables().items()
    }
    return BuiltFleet(fixture, paths, clients, report, rows)
