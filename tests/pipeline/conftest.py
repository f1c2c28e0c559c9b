"""One local Spark for the pipeline tests, and the fixture fleet's report, built once.

The session is ``local[2]`` with 4 shuffle partitions, no UI, bound to
127.0.0.1 (no network); it lives for the whole test session.  ``fleet`` writes
the fixture fleet (``fleet_cases``) and builds its report once; tests read the
collected tables.  ``oracle`` reads the same files without Spark (the
plain-Python validator, the latest observation per broker the documented
way): what the core is asked about.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the fleet pipeline needs the kafkacompat[spark] extra")

from pyspark.sql import SparkSession  # noqa: E402

from kafkacompat.negotiation.capabilities import BrokerCapabilities  # noqa: E402
from kafkacompat.negotiation.node_role import looks_like_controller  # noqa: E402
from kafkacompat.pipeline.client_format import parse_client_line  # noqa: E402
from kafkacompat.pipeline.report import FleetTables, build_fleet_report  # noqa: E402
from kafkacompat.pipeline.snapshot_format import (  # noqa: E402
    capabilities_from_snapshot,
    observed_instant,
    parse_snapshot_line,
)
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


@dataclass
class Oracle:
    valid_lines: int
    latest: dict[tuple[str, int], dict[str, Any]]
    clusters: dict[str, list[BrokerCapabilities]]  # every node: brokers and KRaft controllers
    profiles: list[dict[str, Any]]

    @property
    def brokers(self) -> dict[str, list[BrokerCapabilities]]:
        """What a client negotiates with: the brokers, without the controllers."""
        kept = {c: [b for b in nodes if not looks_like_controller(b)] for c, nodes in self.clusters.items()}
        return {cluster: nodes for cluster, nodes in kept.items() if nodes}


@pytest.fixture(scope="session")
def oracle(fleet: BuiltFleet) -> Oracle:
    best: dict[tuple[str, int], tuple[Any, dict[str, Any]]] = {}
    valid = 0
    for path in fleet.snapshot_paths:
        name = path.rsplit("/", 1)[-1]
        for text in fleet.fixture.files[name]:
            if not text.strip():
                continue
            obj, _ = parse_snapshot_line(text)
            if obj is None:
                continue
            valid += 1
            key = (obj["cluster_id"], obj["node_id"])
            order = (
                observed_instant(obj["observed_at"]),
                obj["finalized_features_epoch"],
                obj["endpoint"],
                name,
            )
            if key not in best or order > best[key][0]:
                best[key] = (order, obj)
    latest = {key: obj for key, (_, obj) in best.items()}
    clusters: dict[str, list[BrokerCapabilities]] = defaultdict(list)
    for (cluster, _), obj in sorted(latest.items()):
        clusters[cluster].append(capabilities_from_snapshot(obj))
    seen: dict[tuple[str, str], int] = defaultdict(int)
    parsed = []
    for text in fleet.fixture.clients:
        profile, _ = parse_client_line(text)
        if profile is not None:
            parsed.append(profile)
            seen[(profile["client"], profile["version"])] += 1
    profiles = [p for p in parsed if seen[(p["client"], p["version"])] == 1]
    return Oracle(valid, latest, dict(clusters), profiles)
