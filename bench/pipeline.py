"""Fleet pipeline benchmark: 1,000,000 snapshot lines x 10 client profiles through the whole report.

The fleet is synthetic (``kafkacompat.pipeline.generate``): 5,000 clusters of
8 brokers observed 25 times (``--quick``: 200 clusters of 10 brokers, 10
times: 20,000 lines), written as 128 JSON-lines files with a bad line every
100,003, and 10 client profiles (kafkacompat's own and 9 Java ones).  The
report runs on a local Spark with every core of the machine (2 here), reads
the files, and writes every table (Parquet) and ``report.html``.

Rows: one per pipeline stage (seconds; ``note`` says what it did), the
generation (not part of the target), and the total, whose ``ratio`` is the
target time over the measured time (``>= 1.0`` means the 3-minute target is
met) and whose note gives snapshot lines per second.  One run, not a best of
several: a run takes minutes and its stages are what is being shown.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import BenchConfig, Row, format_table

__all__ = ["TITLE", "run"]

TITLE = "fleet pipeline on local Spark: seconds per stage; total ratio = 180 s / measured (>= 1 is met)"

TARGET_SECONDS = 180.0
FULL = (5_000, 8, 25)  # clusters, brokers, observations: 1,000,000 lines
QUICK = (200, 10, 10)  # 20,000 lines
CLIENTS = 10
FILES = 128
BAD_EVERY = 100_003


def run(config: BenchConfig | bool) -> list[Row]:
    """The rows for ``python -m bench``; ``config`` may also be a plain ``quick`` flag."""
    quick = config if isinstance(config, bool) else config.quick
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return [Row("fleet pipeline", "not run", note="pyspark is not installed (kafkacompat[spark])")]
    from kafkacompat.pipeline import FleetSpec, generate_clients
    from kafkacompat.pipeline.generate import write_fleet_files
    from kafkacompat.pipeline.report import build_fleet_report, write_fleet_report
    from kafkacompat.pipeline.session import fleet_session

    shape = QUICK if quick else FULL
    spec = FleetSpec(*shape, seed=1, bad_every=BAD_EVERY)
    workload = f"{spec.lines:,} snapshots x {CLIENTS} clients"
    work = Path(tempfile.mkdtemp(prefix="kafkacompat-bench-pipeline-"))
    try:
        started = time.perf_counter()
        paths = write_fleet_files(spec, work / "snapshots", FILES)
        clients = work / "clients.jsonl"
        clients.write_text("".join(json.dumps(p) + "\n" for p in generate_clients(CLIENTS, seed=1)))
        generated = time.perf_counter() - started
        size = sum(p.stat().st_size for p in paths)

        started = time.perf_counter()
        spark = fleet_session(
            conf={
                "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
                "spark.driver.memory": "4g",
            }
        )
        spark.sparkContext.setLogLevel("ERROR")
        session = time.perf_counter() - started
        cores = spark.sparkContext.defaultParallelism
        try:
            started = time.perf_counter()
            report = build_fleet_report(spark, [str(p) for p in paths], [str(clients)])
            counts = write_fleet_report(report, work / "report")
            total = time.perf_counter() - started
            report.unpersist()
        finally:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows = [
        Row(
            workload,
            "generate (pure Python, not timed)",
            generated,
            note=f"{spec.lines / generated:,.0f} lines/s, {size / 1e9:.2f} GB in {FILES} files",
        )
    ]
    rows.append(Row(workload, "start local Spark (not timed)", session, note=f"{cores} cores"))
    notes = {
        "scan+validate": f"{report.valid_snapshots:,} valid lines",
        "bad records": f"{counts['bad_records']} bad lines located",
        "latest": f"{counts['latest']:,} brokers",
    }
    for stage, seconds in report.timings.items():
        table = stage.removeprefix("write ")
        note = notes.get(stage) or (f"{counts[table]:,} rows" if table in counts else "")
        rows.append(Row(workload, stage, seconds, note=note))
    rows.append(
        Row(
            workload,
            "total (read to report.html)",
            total,
            ratio=TARGET_SECONDS / total,
            target=1.0,
            note=f"{spec.lines / total:,.0f} snapshots/s; target < {TARGET_SECONDS:.0f} s: "
            + ("met" if total < TARGET_SECONDS else "MISSED"),
        )
    )
    return rows


if __name__ == "__main__":
    import sys

    table = run("--quick" in sys.argv[1:])
    print(TITLE)
    print(format_table(table))
