"""The fleet report: from snapshot and profile files to the tables, and the tables to files.

Theory.  Everything is derived from two reads: the snapshots (big) and the
client profiles (small).  The parsed snapshots are persisted once, because
three things read them: the bad records, the count of valid records, and the
latest observation per broker.  The latest observations are persisted too:
they are one row per broker, and every other table (stale epochs, negotiated
versions, compatibility, features, fenced brokers) is a cheap function of
them and of the profiles.  So the cost of a report is one parse of the input
plus work proportional to brokers x client APIs, and it scales out with
executors like any Spark job: the parse is split by file blocks, the rest by
cluster.

Writing: one folder per table under the output directory (Parquet by default,
or JSON lines), then ``report.html`` next to them, made from small aggregates
collected to the driver.  Output is overwritten.  The report's queries go to
Spark two at a time (``run_concurrently``): a small fleet's queries spend
much of their time being planned on the driver while the executors wait.
Every persisted frame is read through its cache entry alone (``kept``), so
that planning a table does not walk the scan's lineage again.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, cast

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from kafkacompat.pipeline.concurrency import run_concurrently
from kafkacompat.pipeline.feature_table import feature_levels, feature_rows, fenced_brokers
from kafkacompat.pipeline.html_report import render_report
from kafkacompat.pipeline.kept import keep
from kafkacompat.pipeline.latest import latest_observations, stale_epochs
from kafkacompat.pipeline.negotiate import brokers_only, compatibility, negotiated
from kafkacompat.pipeline.readers import (
    BAD_RECORDS_SCHEMA,
    InputFormat,
    SnapshotScan,
    read_clients,
    scan_snapshots,
)
from kafkacompat.pipeline.session import SMALL_INPUT_BYTES, sql_conf
from kafkacompat.pipeline.what_if import what_if
from kafkacompat.pipeline.what_if_core import UpgradeTarget

__all__ = [
    "SMALL_INPUT_BYTES",
    "TABLES",
    "WHAT_IF_TABLES",
    "FleetTables",
    "OutputFormat",
    "build_fleet_report",
    "plan_settings",
    "scan_settings",
    "write_fleet_report",
]

OutputFormat = Literal["parquet", "json"]
TABLES: tuple[str, ...] = (
    "latest",
    "stale_epochs",
    "negotiated",
    "compatibility",
    "features",
    "fenced",
    "bad_records",
)
WHAT_IF_TABLES: tuple[str, ...] = ("what_if", "upgrade_first")  # with targets only
_WRITE_ORDER = ("negotiated", "latest", "bad_records", "what_if", "compatibility", "upgrade_first")


@dataclass
class FleetTables:
    """The report's tables as DataFrames (see ``docs/pipeline.md`` for every column)."""

    latest: DataFrame
    stale_epochs: DataFrame
    negotiated: DataFrame
    compatibility: DataFrame
    features: DataFrame
    fenced: DataFrame
    bad_records: DataFrame
    what_if: DataFrame | None = None  # with targets: per cluster, client and target release
    upgrade_first: DataFrame | None = None  # with targets: per target and client, clusters blocked
    targets: tuple[UpgradeTarget, ...] = ()
    valid_snapshots: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage; two run at a time
    job_groups: dict[str, list[str]] = field(default_factory=dict)  # the Spark job groups of each stage
    observed: dict[str, int] = field(default_factory=dict)  # totals for the page, taken while writing
    settings: dict[str, str] = field(default_factory=dict)  # SQL settings its plans run under
    _persisted: list[DataFrame] = field(default_factory=list, repr=False)  # unpersist these when done
    _cached: set[str] = field(default_factory=set, repr=False)  # tables whose frames read a cache
    _scan: SnapshotScan | None = field(default=None, repr=False)

    @property
    def spark(self) -> SparkSession:
        return self.latest.sparkSession

    def spark_work(self) -> tuple[dict[str, int], dict[str, int]]:
        """Spark jobs run per stage and the tasks of the stages they ran (load-independent),
        counted from Spark's status tracker when asked: see ``_spark_work``."""
        return _spark_work(self.spark, self.job_groups)

    def tables(self) -> dict[str, DataFrame]:
        names = TABLES + (WHAT_IF_TABLES if self.targets else ())
        return {name: getattr(self, name) for name in names}

    def unpersist(self) -> None:
        """Release what building the report cached."""
        for df in self._persisted:
            df.unpersist()
        self._persisted.clear()
        if self._scan is not None:
            self._scan.unpersist()
            self._scan = None


_stage_serial = itertools.count()


@contextmanager
def _timed(report: FleetTables | _Work, stage: str) -> Iterator[None]:
    """Time a stage and give its Spark jobs a job group of their own (restored after).

    Jobs and tasks do not depend on the machine's load, unlike seconds: the
    benchmark prints them and a test holds the small fleet's number of jobs.
    They are counted from the groups when asked (``FleetTables.spark_work``), not
    here: asking Spark's status tracker is a hundred calls into the JVM per
    stage, which the report itself does not need.
    """
    context = report.spark.sparkContext
    previous = context.getLocalProperty("spark.jobGroup.id")
    group = f"kafkacompat-fleet-{next(_stage_serial)}"
    context.setLocalProperty("spark.jobGroup.id", group)
    started = time.perf_counter()
    try:
        yield
    finally:
        report.timings[stage] = report.timings.get(stage, 0.0) + time.perf_counter() - started
        context.setLocalProperty("spark.jobGroup.id", previous)  # type: ignore[arg-type]  # None clears it
        report.job_groups.setdefault(stage, []).append(group)


def _spark_work(spark: SparkSession, groups: dict[str, list[str]]) -> tuple[dict[str, int], dict[str, int]]:
    """Jobs and tasks per stage, from Spark's status tracker.

    The tracker keeps the last ``spark.ui.retainedJobs`` jobs (1,000 by
    default): read the counts before a thousand more jobs have run.
    """
    tracker = spark.sparkContext.statusTracker()
    jobs: dict[str, int] = {}
    tasks: dict[str, int] = {}
    for stage, names in groups.items():
        job_ids = [j for name in names for j in tracker.getJobIdsForGroup(name)]
        stage_ids = {s for j in job_ids if (job := tracker.getJobInfo(j)) for s in job.stageIds}
        ran = [run.numTasks for s in stage_ids if (run := tracker.getStageInfo(s))]  # skipped: None
        jobs[stage], tasks[stage] = len(job_ids), sum(ran)
    return jobs, tasks


def plan_settings(
    spark: SparkSession, input_bytes: int, small_input_bytes: int = SMALL_INPUT_BYTES
) -> dict[str, str]:
    """SQL settings for the report's plans, chosen by the size of the snapshot files.

    A small fleet's report is a few dozen small queries.  Adaptive execution
    runs every shuffle and broadcast of a query as a job of its own, to
    re-plan the rest from what it measured: for inputs up to
    ``small_input_bytes`` it is turned off (6,000 lines, what-if included: 41
    jobs instead of 97; on the idle machine a fresh JVM took about as long
    either way, its time going to compiling each query: see docs/pipeline.md),
    and the shuffles get one partition per core, since with adaptive execution
    off nothing coalesces Spark's 200 on a cluster.  Their expressions are
    interpreted, not compiled (no whole-stage code generation, and
    ``spark.sql.codegen.factoryMode`` ``NO_CODEGEN``, the interpreted
    projections and predicates Spark falls back to when compiling fails): a
    fresh JVM spent more compiling each new query than the rows took to
    evaluate (6,000 lines: 41.0 s compiled, 34.8 s interpreted, run one after
    the other).  Bigger inputs keep the session's settings.
    """
    if input_bytes > small_input_bytes:
        return {}
    cores = max(1, spark.sparkContext.defaultParallelism)
    return {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": str(cores),
        # Compiling generated code for each new query costs a fresh JVM more than
        # interpreting a few thousand rows does (see docs/pipeline.md).
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }


def scan_settings(input_bytes: int, small_input_bytes: int = SMALL_INPUT_BYTES) -> dict[str, str]:
    """SQL settings for the scan's plan: no whole-stage code generation for a small input.

    The scan's validation is one very large expression.  Compiling it into a
    whole-stage method costs a small input more than it saves (6,000 lines,
    same load: 38.6 s compiled against 22.7 s on a fresh JVM, 12.5 s against
    6.6 s warm), and saves a big one more than it costs (1,000,000 lines in
    one JVM, alternated, load about 3: 27.7 and 24.3 s compiled against 30.6
    and 28.3 s).
    """
    return {"spark.sql.codegen.wholeStage": "false"} if input_bytes <= small_input_bytes else {}


@dataclass
class _Work:
    """What ``_timed`` records into before the report exists."""

    spark: SparkSession
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage; two run at a time
    job_groups: dict[str, list[str]] = field(default_factory=dict)


def build_fleet_report(
    spark: SparkSession,
    snapshots: Sequence[str],
    clients: Sequence[str],
    *,
    snapshots_format: InputFormat = "auto",
    max_locate_bytes: int | None = None,
    targets: Sequence[UpgradeTarget] = (),
    small_input_bytes: int = SMALL_INPUT_BYTES,
) -> FleetTables:
    """Read the inputs and define every table.

    This runs the jobs that must run before the tables can be defined: the
    scan of the snapshots, the search for bad lines, and the latest
    observation per broker (persisted).  The other tables are lazy.  With
    ``targets`` (``what_if_core.parse_targets``) the report also has the
    what-if table and its "clients to upgrade first" summary.  Snapshot files
    of up to ``small_input_bytes`` in all are a small fleet (``plan_settings``).
    """
    work = _Work(spark)
    with _timed(work, "scan+validate"):
        scan = scan_snapshots(
            spark,
            snapshots,
            snapshots_format,
            max_locate_bytes=max_locate_bytes,
            settings=lambda size: scan_settings(size, small_input_bytes),
        )
        settings = plan_settings(spark, scan.input_bytes, small_input_bytes)  # the files are listed
    with sql_conf(spark, settings):
        # Persisting plans them, so the settings hold from here on (and again when writing).
        # The lines are counted while the tables are planned: the count keeps the executors
        # busy, planning the driver; only the snapshots' bad records wait for the count.
        counted, defined = run_concurrently(
            spark,
            [
                lambda: _count_lines(work, scan),
                lambda: _define_tables(spark, work, scan, clients, max_locate_bytes, targets),
            ],
        )
        (valid, bad_files), tables = counted, cast(FleetTables, defined)
        with _timed(work, "bad records"):
            bad_snapshots = scan.bad_records(bad_files) if bad_files else _no_bad_records(spark)
            # Persisted, not counted: writing bad_records/ fills the cache and counts the rows.
            bad = keep(bad_snapshots.unionByName(tables.bad_records), tables._persisted)
    tables.bad_records = bad
    tables._cached.add("bad_records")
    tables.valid_snapshots = valid
    tables.settings = settings
    return tables


def _count_lines(work: _Work, scan: SnapshotScan) -> tuple[int, dict[str, int]]:
    """The valid lines, and the files holding bad lines with their sizes: one job.

    Naming the files here spares locating the bad lines a job of its own to
    find them; with no bad line, nothing is looked for.
    """
    with _timed(work, "scan+validate"):
        ok = F.col("reason") == ""
        bad_file = F.when(~ok, F.struct("file", "file_size"))
        tally = {
            r["ok"]: (r["n"], {f["file"]: f["file_size"] for f in r["files"]})
            for r in scan.rows.groupBy(ok.alias("ok"))
            .agg(F.count(F.lit(1)).alias("n"), F.collect_set(bad_file).alias("files"))
            .collect()
        }
    return tally.get(True, (0, {}))[0], tally.get(False, (0, {}))[1]


def _define_tables(
    spark: SparkSession,
    work: _Work,
    scan: SnapshotScan,
    clients: Sequence[str],
    max_locate_bytes: int | None,
    targets: Sequence[UpgradeTarget],
) -> FleetTables:
    """Every table, lazily; ``bad_records`` holds the profiles' bad lines only (the caller adds the
    snapshots' once they are counted)."""
    with _timed(work, "bad records"):
        profiles = read_clients(spark, clients, max_locate_bytes=max_locate_bytes)
    persisted = list(profiles.held)
    with _timed(work, "latest"):
        # Filled by the first write that reads it, not by a count of its own.
        latest = keep(latest_observations(scan), persisted)
    client_rows = keep(profiles.records, persisted)
    brokers = brokers_only(latest)  # clients negotiate with brokers, never with KRaft controllers
    versions = negotiated(brokers, client_rows)
    features = feature_rows(latest)
    upgrades = what_if(latest, client_rows, targets) if targets else None
    return FleetTables(
        latest=latest.drop("observed_ts"),
        stale_epochs=stale_epochs(latest),
        negotiated=versions,
        compatibility=compatibility(brokers, client_rows, versions),
        features=feature_levels(features),
        fenced=fenced_brokers(features),
        bad_records=profiles.bad,
        what_if=upgrades.rows if upgrades else None,
        upgrade_first=upgrades.upgrade_first if upgrades else None,
        targets=tuple(targets),
        timings=work.timings,
        job_groups=work.job_groups,
        _persisted=[*persisted, *(upgrades.held if upgrades else ())],
        _cached={"latest"},  # a projection of the cached latest observations
        _scan=scan,
    )


def _no_bad_records(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], BAD_RECORDS_SCHEMA)


def _page_totals(table: str) -> list[Column]:
    """Totals report.html shows, observed on the rows as they are written rather than counted again."""
    if table == "bad_records":
        return [F.count_if(F.col("source") == "snapshots").alias("from_snapshots")]
    if table == "compatibility":
        return [F.count_if(~F.col("compatible")).alias("incompatible")]
    return []


def write_fleet_report(
    report: FleetTables, out: str | Path, fmt: OutputFormat = "parquet", *, html: bool = True
) -> dict[str, int]:
    """Write every table to ``out/<table>/`` and ``out/report.html``; returns rows per table.

    ``out`` is a local path or any URI Spark can write (the page goes through
    Hadoop's FileSystem then); ``html=False`` skips the page.
    """
    with sql_conf(report.spark, report.settings):
        return _write_tables(report, str(out).rstrip("/"), fmt, html)


def _write_tables(report: FleetTables, target: str, fmt: OutputFormat, html: bool) -> dict[str, int]:
    frames = report.tables()
    for name, df in frames.items():
        # Kept once written: later tables (compatibility reads negotiated) and the page read them
        # again, and each would otherwise be computed anew.  Persisted before any write starts,
        # so that whichever write reads a table first fills its cache for the others.
        if name not in report._cached:
            frames[name] = keep(df, report._persisted)
            setattr(report, name, frames[name])
            report._cached.add(name)

    def write(name: str) -> dict[str, int]:
        with _timed(report, f"write {name}"):
            # The row count rides along with the write (an observed metric), not a job of its own.
            observed = Observation(f"rows of {name}")
            metrics = [F.count(F.lit(1)).alias("rows"), *_page_totals(name)]
            writer = frames[name].observe(observed, *metrics).write.mode("overwrite")
            path = f"{target}/{name}"
            if fmt == "parquet":
                writer.parquet(path)
            else:
                writer.json(path)
            return {key: int(value) for key, value in observed.get.items()}

    # The longest writes first: they start in this order.
    last = len(_WRITE_ORDER)
    order = sorted(frames, key=lambda name: _WRITE_ORDER.index(name) if name in _WRITE_ORDER else last)
    results = run_concurrently(report.spark, [partial(write, name) for name in order])
    written = dict(zip(order, results, strict=True))
    counts: dict[str, int] = {}
    for name in frames:
        totals = written[name]
        counts[name] = totals["rows"]
        report.observed.update({f"{name}.{k}": v for k, v in totals.items() if k != "rows"})
    if html:
        with _timed(report, "report.html"):
            _write_text(report.spark, f"{target}/report.html", render_report(report, counts))
    return counts


def _write_text(spark: SparkSession, path: str, text: str) -> None:
    """A small file next to the tables: plainly when local, through Hadoop's FileSystem otherwise."""
    if "://" not in path and not path.startswith("file:"):
        Path(path).write_text(text, encoding="utf-8")
        return
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)  # type: ignore[union-attr]  # the JVM is up
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    stream = hadoop_path.getFileSystem(hadoop_conf).create(hadoop_path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
