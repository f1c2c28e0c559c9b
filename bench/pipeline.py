"""Fleet pipeline benchmark: a small fleet and a big one through the whole report, what-if table included.

Two workloads, both on a local Spark of two cores (``local[2]``), both
reading JSON-lines snapshot files and 10 client profiles (kafkacompat's own
and 9 Java ones), building every table plus the what-if table for Kafka 4.0
and 4.2 and its summary, and writing them (Parquet) with ``report.html``:

- 6,000 snapshot lines (300 clusters x 5 brokers x 4 observations, 4 files,
  a bad line every 2,500): target under 20 s.  What a person running
  ``kafkacompat fleet-report`` on a small fleet waits for, where a fresh
  JVM's fixed costs dominate.
- 1,000,000 snapshot lines (5,000 clusters x 8 brokers x 25 observations,
  128 files, a bad line every 100,003): target under 75 s.  ``--quick``
  skips it.

Each workload runs in a process of its own, with a fresh local session
started once its input is written and given its files, as the command
line does (a small fleet's JVM compiles with its first tier only:
``kafkacompat.pipeline.session``); the session's start is not timed.

Rows: per workload, the session's start and the generation (neither timed),
then one per pipeline stage (seconds; ``note`` says what it did; the report
runs two stages at a time, so these overlap and add up to more than the
total) and the total, whose ``ratio`` is the target over the measured time
(``>= 1.0`` means met).  One run each, not a
best of several: a run takes a while and its stages are what is shown.  The
load average of the machine is printed with the total, since other work on
it slows Spark down.  The start row says what the JVM did with the
class-data archive (``kafkacompat.pipeline.class_archive``): ``reused`` (it
mapped the archive an earlier run wrote), ``created`` (the first run: it
writes the archive when it exits) or ``off``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import BenchConfig, Row, format_table, join

__all__ = ["TITLE", "run"]

TITLE = (
    "fleet pipeline on local[2] Spark, what-if 4.0,4.2 included: seconds per stage; ratio = target / measured"
)

CLIENTS = 10
WHAT_IF = "4.0,4.2"
MASTER = "local[2]"
CHILD_TIMEOUT = 900.0
_ROW = "BENCH-ROW "


@dataclass(frozen=True)
class Workload:
    clusters: int
    brokers: int
    observations: int
    files: int
    bad_every: int
    target_seconds: float


SMALL = Workload(300, 5, 4, 4, 2_500, 20.0)  # 6,000 lines
BIG = Workload(5_000, 8, 25, 128, 100_003, 75.0)  # 1,000,000 lines


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load {one:.2f}/{five:.2f} (1/5 min)"


def _generate(work: Path, shape: Workload) -> tuple[Any, list[Path], Path, float]:
    """The workload's snapshot files and client profiles (pure Python), and the seconds it took."""
    from kafkacompat.pipeline import FleetSpec, generate_clients
    from kafkacompat.pipeline.generate import write_fleet_files

    spec = FleetSpec(shape.clusters, shape.brokers, shape.observations, seed=1, bad_every=shape.bad_every)
    started = time.perf_counter()
    paths = write_fleet_files(spec, work / "snapshots", shape.files)
    clients = work / "clients.jsonl"
    clients.write_text("".join(json.dumps(p) + "\n" for p in generate_clients(CLIENTS, seed=1)))
    return spec, paths, clients, time.perf_counter() - started


def _run_one(
    spark: Any, shape: Workload, spec: Any, paths: list[Path], clients: Path, generated: float
) -> list[Row]:
    from kafkacompat.pipeline.report import build_fleet_report, write_fleet_report
    from kafkacompat.pipeline.what_if_core import parse_targets

    workload = f"{spec.lines:,} snapshots x {CLIENTS} clients, what-if {WHAT_IF}"
    size = sum(p.stat().st_size for p in paths)
    targets = parse_targets(WHAT_IF)
    work = clients.parent

    started = time.perf_counter()
    report = build_fleet_report(spark, [str(p) for p in paths], [str(clients)], targets=targets)
    counts = write_fleet_report(report, work / "report")
    total = time.perf_counter() - started
    report.unpersist()
    load = _load()

    rows = [
        Row(
            workload,
            "generate (pure Python, not timed)",
            generated,
            note=f"{spec.lines / generated:,.0f} lines/s, {size / 1e6:,.1f} MB in {shape.files} files",
        )
    ]
    notes = {
        "scan+validate": f"{report.valid_snapshots:,} valid lines",
        "bad records": f"{counts['bad_records']} bad lines located",
        "latest": f"{counts['latest']:,} brokers",
    }
    jobs, tasks = report.spark_work()  # counted once, after the run (not timed)
    for stage, seconds in report.timings.items():
        table = stage.removeprefix("write ")
        note = notes.get(stage) or (f"{counts[table]:,} rows" if table in counts else "")
        spent = f"{jobs.get(stage, 0)} jobs, {tasks.get(stage, 0)} tasks"
        rows.append(Row(workload, stage, seconds, note=f"{note}; {spent}" if note else spent))
    verdict = "met" if total < shape.target_seconds else "MISSED"
    rows.append(
        Row(
            workload,
            "total (read to report.html)",
            total,
            ratio=shape.target_seconds / total,
            target=1.0,
            note=f"target < {shape.target_seconds:.0f} s: {verdict}; {spec.lines / total:,.0f} lines/s; "
            + f"{sum(jobs.values())} jobs, {sum(tasks.values())} tasks; {load}",
        )
    )
    return rows


def run(config: BenchConfig | bool) -> list[Row]:
    """The rows for ``python -m bench``; ``config`` may also be a plain ``quick`` flag.

    Each workload runs in a process of its own, so in a JVM of its own: a
    fresh one, as ``kafkacompat fleet-report`` starts, once its input exists
    (the session is given the snapshot files, as the command line gives them).
    """
    quick = config if isinstance(config, bool) else config.quick
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return [Row("fleet pipeline", "not run", note="pyspark is not installed (kafkacompat[spark])")]
    rows: list[Row] = []
    for name in ("small",) if quick else ("small", "big"):
        proc = subprocess.run(
            [sys.executable, "-m", "bench.pipeline", "--workload", name],
            capture_output=True, text=True, timeout=CHILD_TIMEOUT, cwd=Path(__file__).resolve().parent.parent,
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith(_ROW)]
        found = [Row(**json.loads(line[len(_ROW) :])) for line in lines]
        if proc.returncode != 0 or not found:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            why = f"exited with {proc.returncode}: {tail}"
            found.append(Row(f"{name} fleet", "pipeline", note=why, error=True))
        rows += found
    return rows


def _workload(name: str) -> list[Row]:
    """One workload in this process: its input, then a fresh local session sized for it, then the run."""
    from kafkacompat.pipeline.session import CLASS_ARCHIVE_CONF, fleet_session

    shape = SMALL if name == "small" else BIG
    work = Path(tempfile.mkdtemp(prefix="kafkacompat-bench-pipeline-"))
    try:
        spec, paths, clients, generated = _generate(work, shape)
        started = time.perf_counter()
        spark = fleet_session(
            MASTER,
            conf={
                "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
                "spark.driver.memory": "4g",
            },
            snapshots=[str(p) for p in paths],
        )
        spark.sparkContext.setLogLevel("ERROR")
        session = time.perf_counter() - started
        # Which run this is for the class-data archive: "reused" maps what an earlier run wrote,
        # "created" writes it when this JVM exits (no speed-up this run), "off" neither.
        archive = (spark.conf.get(CLASS_ARCHIVE_CONF, None) or "off").split(" ", 1)
        options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", "") or ""
        jit = "first tier only" if "TieredStopAtLevel=1" in options else "all tiers"
        note = join(
            _load(),
            f"class-data archive {archive[0]}" + (f" ({archive[1]})" if len(archive) > 1 else ""),
            f"JIT {jit}",
        )
        try:
            start = Row("Spark", f"start {MASTER} (not timed)", session, note=note)
            return [start, *_run_one(spark, shape, spec, paths, clients, generated)]
        finally:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if "--workload" in sys.argv[1:]:  # a child of run(): its rows, one JSON line each
        for row in _workload(sys.argv[sys.argv.index("--workload") + 1]):
            print(_ROW + json.dumps(dataclasses.asdict(row)), flush=True)
    else:
        table = run("--quick" in sys.argv[1:])
        print(TITLE)
        print(format_table(table))
