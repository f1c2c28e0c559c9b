"""The commands: fleet-generate, client-profile, fleet-report, and life without the Spark extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafkacompat.cli import main
from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.pipeline.command import SPARK_MISSING
from kafkacompat.pipeline.report import TABLES, WHAT_IF_TABLES
from kafkacompat.pipeline.snapshot_format import parse_snapshot_line

ROOT = Path(__file__).resolve().parents[2]
NO_PYSPARK = "import sys; sys.modules['pyspark'] = None; "


def test_client_profile_prints_a_valid_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["client-profile"]) == 0
    profile = json.loads(capsys.readouterr().out)
    assert profile["client"] == "kafkacompat" and validate_client_profile(profile) == []


def test_fleet_generate_writes_snapshots_and_clients(tmp_path: Path) -> None:
    out, clients = tmp_path / "fleet.jsonl", tmp_path / "clients.jsonl"
    assert (
        main(
            [
                "fleet-generate",
                "--clusters",
                "4",
                "--brokers",
                "3",
                "--observations",
                "2",
                "--out",
                str(out),
                "--clients-out",
                str(clients),
                "--clients",
                "4",
                "--seed",
                "9",
            ]
        )
        == 0
    )
    lines = out.read_text().splitlines()
    assert len(lines) == 24 and all(parse_snapshot_line(line)[1] == [] for line in lines)
    assert len(clients.read_text().splitlines()) == 4


def test_fleet_report_end_to_end(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshots, clients = tmp_path / "fleet.jsonl", tmp_path / "clients.jsonl"
    main(
        [
            "fleet-generate",
            "--clusters",
            "5",
            "--brokers",
            "3",
            "--out",
            str(snapshots),
            "--clients-out",
            str(clients),
            "--clients",
            "3",
            "--bad-every",
            "20",
        ]
    )
    first = json.loads(snapshots.read_text().splitlines()[0])
    with snapshots.open("a") as more:  # line 46: the fields are named in the summary
        more.write(json.dumps({**first, "node_id": "one", "observed_at": "yesterday"}) + "\n")
    out = tmp_path / "report"
    code = main(
        [
            "fleet-report",
            "--snapshots",
            str(snapshots),
            "--clients",
            str(clients),
            "--out",
            str(out),
            "--format",
            "json",
            "--what-if",
            "4.0,2.0",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "3 bad input line(s)" in printed and "report.html" in printed
    assert f"\n    snapshot line 20 of {snapshots}: unknown schema version 2\n" in printed
    assert f"\n    snapshot line 40 of {snapshots}: missing field node_id\n" in printed
    assert (
        f"\n    snapshot line 46 of {snapshots}: observed_at: not an RFC 3339 time ('yesterday'); "
        "node_id: not an integer ('one')\n"
    ) in printed
    for table in (*TABLES, *WHAT_IF_TABLES):
        assert list((out / table).glob("part-*.json")), table
    verdicts = [
        json.loads(line) for f in (out / "what_if").glob("part-*.json") for line in f.read_text().splitlines()
    ]
    assert len(verdicts) == 5 * 3 * 2  # clusters x clients x targets
    for release in ("4.0", "2.0"):
        rows = [v for v in verdicts if v["target"] == release]
        kind = rows[0]["kind"]
        fine = {v["cluster_id"] for v in rows} - {v["cluster_id"] for v in rows if v["verdict"] != "works"}
        assert f"what if Kafka {release} ({kind}): {len(fine)} of 5 clusters can be upgraded today" in printed
    assert "What if: upgrading every cluster" in (out / "report.html").read_text()
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    bad = [
        json.loads(line)
        for f in (out / "bad_records").glob("part-*.json")
        for line in f.read_text().splitlines()
    ]
    assert sorted(b["line"] for b in bad) == [20, 40, 46]
    assert SparkSession.getActiveSession() is not None  # the test's own session was not stopped


def test_a_bad_what_if_target_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fleet-report", "--snapshots", "x", "--clients", "y", "--out", "z", "--what-if", "4.0,9.9"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kafkacompat fleet-report: --what-if 9.9: no Kafka 9.9")


def test_fleet_report_without_pyspark_says_so() -> None:
    code = (
        NO_PYSPARK + "from kafkacompat.cli import main; "
        "sys.exit(main(['fleet-report', '--snapshots', 'x', '--clients', 'y', '--out', 'z']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == SPARK_MISSING


def test_help_works_without_pyspark() -> None:
    code = NO_PYSPARK + "from kafkacompat.cli import main; main(['--help'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0 and "fleet-report" in done.stdout
    code = NO_PYSPARK + "import kafkacompat.pipeline as p; print(p.snapshot_line.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "snapshot_line"


def test_the_spark_submit_entry_point_parses_the_same_options() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kafkacompat.pipeline", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0 and "--snapshots" in done.stdout and "--master" in done.stdout


def test_fleet_report_in_its_own_jvm_is_quiet_and_has_no_unpartitioned_window(tmp_path: Path) -> None:
    """Without --debug Spark's log stays off stderr; with it, Spark's warnings show, and none is about
    a window that has no partition (every row moved into one partition does not scale)."""
    snapshots, clients = tmp_path / "fleet.jsonl", tmp_path / "clients.jsonl"
    assert main(["fleet-generate", "--clusters", "4", "--brokers", "2", "--out", str(snapshots),
                 "--clients-out", str(clients), "--clients", "2"]) == 0

    def report(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = ["fleet-report", "--snapshots", str(snapshots), "--clients", str(clients),
                "--out", str(tmp_path / f"out{len(extra)}"), *extra]
        return subprocess.run([sys.executable, "-m", "kafkacompat.cli", *argv], capture_output=True,
                              text=True, cwd=ROOT, check=False, timeout=600)

    quiet = report()
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr.strip() == "", quiet.stderr
    debug = report("--debug")
    assert debug.returncode == 0, debug.stderr
    assert "WARN" in debug.stderr  # Spark's own log level: what --debug keeps
    assert "No Partition Defined for Window" not in debug.stderr
