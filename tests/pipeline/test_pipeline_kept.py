"""Kept frames read their cache alone: same rows, and no plan reaches back to the input files."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafkacompat.pipeline import kept
from kafkacompat.pipeline.kept import keep
from kafkacompat.pipeline.report import build_fleet_report, write_fleet_report
from kafkacompat.pipeline.what_if_core import parse_targets
from tests.pipeline.conftest import BuiltFleet

# Leaves a table's analyzed plan may have: a cache entry, or rows given by the driver (facts).
_CACHE_OR_LITERAL = {"InMemoryRelation", "LocalRelation"}


def _leaves(df: DataFrame) -> set[str]:
    leaves = df._jdf.queryExecution().analyzed().collectLeaves()
    return {leaves.apply(i).getClass().getSimpleName() for i in range(leaves.size())}


def test_every_table_reads_caches_not_the_input_files(fleet: BuiltFleet) -> None:
    # The fixture's report has been written, so every table is kept.
    for name, df in fleet.report.tables().items():
        assert _leaves(df) <= _CACHE_OR_LITERAL, name
    assert fleet.report._scan is not None
    assert _leaves(fleet.report._scan.rows) == {"InMemoryRelation"}


def test_a_kept_frame_reads_the_cache_and_unpersists_through_the_original(spark: SparkSession) -> None:
    source = spark.range(100).select(F.col("id"), (F.col("id") % 7).alias("m"))
    held: list[DataFrame] = []
    reader = keep(source.where("m = 3"), held)
    try:
        assert _leaves(reader) == {"InMemoryRelation"}
        assert sorted(r["id"] for r in reader.collect()) == [i for i in range(100) if i % 7 == 3]
        assert held[0].storageLevel.useMemory
    finally:
        for frame in held:
            frame.unpersist()
    assert not held[0].storageLevel.useMemory


def test_without_the_internal_calls_the_persisted_frame_is_used(spark: SparkSession) -> None:
    class OtherSpark:  # a JVM session without the cache manager's lookup
        def __getattr__(self, name: str) -> object:
            raise AttributeError(name)

    persisted = spark.range(10).persist()
    original = spark._jsparkSession
    try:
        spark._jsparkSession = OtherSpark()
        assert kept.cache_reader(persisted) is persisted
    finally:
        spark._jsparkSession = original
        persisted.unpersist()


def test_unpersisting_a_report_releases_every_cache_entry_it_made(
    spark: SparkSession, fleet: BuiltFleet, tmp_path: Path
) -> None:
    # Copies of the fixture's files: plans of their own, so no cache entry is shared with the
    # fixture's report (persisting a plan already cached adds no entry).
    copies = [str(shutil.copy(path, tmp_path / Path(path).name)) for path in fleet.snapshot_paths]
    clients = str(shutil.copy(fleet.client_path, tmp_path / "clients-copy.jsonl"))
    cache = spark._jsparkSession.sharedState().cacheManager()
    before = cache.numCachedEntries()
    report = build_fleet_report(spark, copies, [clients], targets=parse_targets("4.0"))
    try:
        write_fleet_report(report, tmp_path / "out", html=False)
        assert cache.numCachedEntries() > before
    finally:
        report.unpersist()
    assert cache.numCachedEntries() == before
