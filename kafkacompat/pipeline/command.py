"""The fleet report's command: its options and its run, shared by ``kafkacompat fleet-report``
and ``python -m kafkacompat.pipeline`` (spark-submit's entry script).

It lives in the pipeline so that the pipeline's entry point needs nothing from
the CLI above it; the CLI registers the same options and handler.  Spark is
imported when the report runs, never at import.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kafkacompat.pipeline.what_if_core import parse_targets

__all__ = ["SPARK_MISSING", "add_report_arguments", "build_report_parser", "run_report"]

SPARK_MISSING = (
    "kafkacompat fleet-report needs PySpark, which is not installed: "
    "pip install 'kafkacompat[spark]' (and a Java 17+ runtime)."
)


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``fleet-report`` options (shared with ``python -m kafkacompat.pipeline``)."""
    parser.add_argument(
        "--snapshots",
        nargs="+",
        required=True,
        metavar="PATH",
        help="snapshot files, folders or globs (JSON lines; Parquet when every path ends in .parquet)",
    )
    parser.add_argument(
        "--clients", nargs="+", required=True, metavar="PATH", help="client profile JSON lines"
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output folder (overwritten), local or any Spark URI"
    )
    parser.add_argument(
        "--master",
        help="Spark master (default: $KAFKACOMPAT_SPARK_MASTER, else spark-submit's, else local[*])",
    )
    parser.add_argument(
        "--format", choices=("parquet", "json"), default="parquet", help="table format (default parquet)"
    )
    parser.add_argument(
        "--snapshots-format",
        choices=("auto", "json", "parquet"),
        default="auto",
        help="input format of the snapshots (default: from the paths' names)",
    )
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting (repeatable)"
    )
    parser.add_argument(
        "--what-if",
        action="append",
        default=[],
        metavar="RELEASES",
        help="also judge upgrading every cluster to these releases, e.g. 4.0,4.2 or 3.9/kraft-broker "
        "(repeatable): writes what_if/ and upgrade_first/",
    )


_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_QUIET_LOG = Path(__file__).resolve().parent / "quiet-log4j2.properties"


def build_report_parser(prog: str = "kafkacompat fleet-report") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Build the fleet compatibility report with Spark."
    )
    add_report_arguments(parser)
    return parser


def _settings(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, found, value = pair.partition("=")
        if not found or not key:
            raise ValueError(f"--conf wants KEY=VALUE, got {pair!r}")
        settings[key] = value
    return settings


def run_report(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args.conf)
        targets = parse_targets(args.what_if) if args.what_if else ()
    except ValueError as exc:  # ConfigError is a ValueError too
        print(f"kafkacompat fleet-report: {exc}", file=sys.stderr)
        return 2
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print(SPARK_MISSING, file=sys.stderr)
        return 1
    missing = _missing_input(args)
    if missing:  # said before a JVM is started for nothing
        print(f"kafkacompat fleet-report: {missing}", file=sys.stderr)
        return 1
    from pyspark.sql import SparkSession

    from kafkacompat.pipeline.report import build_fleet_report, write_fleet_report
    from kafkacompat.pipeline.session import fleet_session

    settings.setdefault("spark.ui.showConsoleProgress", "false")
    debug = bool(getattr(args, "debug", False))  # the spark-submit entry point has no --debug
    if not debug:
        _quiet_spark_log(settings)
    started = time.perf_counter()
    ours = SparkSession.getActiveSession() is None  # stop only a session this command started
    jvm_log = None if debug else _jvm_log()
    try:
        # The snapshot files, known before the JVM starts, let a small fleet's JVM be set for it.
        with _jvm_stderr(jvm_log):
            spark = fleet_session(args.master, conf=settings, snapshots=args.snapshots)
    except Exception as exc:  # Spark reports a missing Java or a bad master this way
        print(f"kafkacompat fleet-report: could not start Spark: {exc}{_see(jvm_log)}", file=sys.stderr)
        return 1
    if not debug:  # a driver started by spark-submit has its JVM already: quiet it from here on
        spark.sparkContext.setLogLevel("ERROR")
    try:
        report = build_fleet_report(
            spark, args.snapshots, args.clients, snapshots_format=args.snapshots_format, targets=targets
        )
        counts = write_fleet_report(report, args.out, args.format)
        first = _upgrade_first_lines(report)
        bad_lines = _bad_lines(report) if counts.get("bad_records") else []
        report.unpersist()
    except BaseException as exc:
        if type(exc).__name__ == "AnalysisException":  # Spark could not read what it was given
            said = (str(exc).splitlines() or [type(exc).__name__])[0]
            print(f"kafkacompat fleet-report: Spark could not read the input: {said}{_see(jvm_log)}",
                  file=sys.stderr)
            return 1
        if jvm_log is not None:
            print(f"kafkacompat fleet-report: Spark's log is in {jvm_log}", file=sys.stderr)
        raise
    finally:
        if ours:
            spark.stop()
    if jvm_log is not None:
        jvm_log.unlink(missing_ok=True)
    elapsed = time.perf_counter() - started
    _print_summary(args.out, report.valid_snapshots, counts, report.timings, elapsed, bad_lines)
    for line in first:
        print(line)
    return 0


_GLOB = re.compile(r"[*?\[{]")


def _missing_input(args: argparse.Namespace) -> str | None:
    """Why an input path cannot be read, for a local path named exactly; None when each can be tried.

    URIs other than ``file:`` and globs are left to Spark, which knows its file systems.
    """
    for flag, paths in (("--snapshots", args.snapshots), ("--clients", args.clients)):
        for name in paths:
            if _GLOB.search(name) or ("://" in name and not name.startswith("file:")):
                continue
            path = Path(name.removeprefix("file://").removeprefix("file:"))
            if not path.exists():
                return f"{flag} {name} does not exist"
            if flag == "--clients" and path.is_dir() and not any(path.iterdir()):
                return f"{flag} {name} is an empty folder"
    out = args.out
    if "://" not in out and Path(out.removeprefix("file:")).is_file():
        return f"--out {out} is a file; the report is a folder (one per table, and report.html)"
    return None


def _jvm_log() -> Path:
    handle, name = tempfile.mkstemp(prefix="kafkacompat-spark-", suffix=".log")
    os.close(handle)
    return Path(name)


def _see(jvm_log: Path | None) -> str:
    return f" (Spark's log: {jvm_log})" if jvm_log is not None else ""


@contextlib.contextmanager
def _jvm_stderr(log: Path | None) -> Iterator[None]:
    """While a JVM is started inside, file descriptor 2 is ``log``: the JVM keeps it for its life.

    Its warnings (the JDK's, Spark's start-up lines, the class-data archive's)
    then stay out of the command's stderr; ``--debug`` (``log`` None) leaves
    them there.  This process's own stderr is restored at once.
    """
    if log is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log, "ab") as file:
            os.dup2(file.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _quiet_spark_log(settings: dict[str, str]) -> None:
    """Spark's log at level ERROR from the JVM's start (``--debug`` keeps Spark's own settings).

    The option joins the caller's Java options, or spark-defaults.conf's, which a
    value set here would otherwise replace.
    """
    from kafkacompat.pipeline.session import defaults_java_options

    options = settings.get(_JAVA_OPTIONS)
    if options is None:
        options = defaults_java_options()
    if "log4j2.configurationFile" not in options:
        settings[_JAVA_OPTIONS] = f"{options} -Dlog4j2.configurationFile=file:{_QUIET_LOG}".strip()


def _upgrade_first_lines(report: Any, shown: int = 5) -> list[str]:
    """Per target: clusters every client can follow, and the clients that block the most."""
    if report.upgrade_first is None:
        return []
    from kafkacompat.pipeline.what_if_page import upgrade_overview

    lines = []
    for target in upgrade_overview(report):
        lines.append(
            f"  what if {target.label}: {target.upgradable:,} of {target.clusters:,} clusters can be "
            f"upgraded today ({target.blocked:,} blocked, {target.unknown:,} could not tell)"
        )
        for client in target.blockers[:shown]:
            apis = ", ".join(client.breaking_apis)
            lines.append(f"    upgrade first: {client.label} blocks {client.blocked:,} cluster(s): {apis}")
    return lines


def _bad_lines(report: Any, shown: int = 3) -> list[str]:
    """The first bad input lines, each with the fields that made it bad (``bad_lines.bad_record``)."""
    from kafkacompat.pipeline.bad_lines import bad_record

    rows = (
        report.bad_records.select("source", "file", "line", "reason", "text")
        .orderBy("source", "file", "line")
        .limit(shown)
        .collect()
    )
    return [bad_record(*row) for row in rows]


def _print_summary(
    out: str, valid: int, counts: dict[str, int], timings: dict[str, float], elapsed: float,
    bad_lines: Sequence[str] = (),
) -> None:
    width = max(len(name) for name in counts)
    print(f"fleet report in {out} ({elapsed:.1f} s; {valid:,} valid snapshot lines)")
    for name, rows in counts.items():
        print(f"  {name.ljust(width)}  {rows:>12,} rows")
    html = Path(out.removeprefix("file:")) / "report.html"
    if html.exists():
        print(f"  report: {html}")
    print("  stages: " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in timings.items()))
    bad = counts.get("bad_records", 0)
    if bad:
        print(f"  {bad:,} bad input line(s): see {out}/bad_records and the report")
        for line in bad_lines:
            print(f"    {line}")
        if bad > len(bad_lines):
            print(f"    ... and {bad - len(bad_lines):,} more")
