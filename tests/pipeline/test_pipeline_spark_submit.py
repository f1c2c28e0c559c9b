"""The report, what-if table included, runs under spark-submit on a standalone Spark cluster.

A master and one worker of the installed PySpark's Spark are started on
127.0.0.1 (free ports), the entry script (``kafkacompat/pipeline/__main__.py``)
is submitted to them with ``--what-if``, and both are stopped.  The executors
run no Python of ours (no UDFs), so only the driver needs kafkacompat, which
it finds on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from kafkacompat.cli import main
from kafkacompat.pipeline.report import TABLES, WHAT_IF_TABLES

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).resolve().parent
STARTUP_SECONDS = 180


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spark_env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    logs = tmp_path_factory.mktemp("standalone")
    port, ui_port, worker_ui = _free_port(), _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    started = []
    try:
        for name, args in [
            (
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui_port),
                ],
            ),
            (
                "worker",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    master_url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--webui-port",
                    str(worker_ui),
                    "--work-dir",
                    str(logs / "work"),
                ],
            ),
        ]:
            with open(logs / f"{name}.log", "wb") as log:
                started.append(
                    subprocess.Popen(
                        [spark_class, *args],
                        env=_spark_env(),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + STARTUP_SECONDS
        while _alive_workers(ui_port) < 1:
            assert all(p.poll() is None for p in started), (logs / "master.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the standalone worker did not register"
            time.sleep(1)
        yield master_url
    finally:
        for process in reversed(started):
            _stop(process)


def test_spark_submit_on_a_standalone_cluster_writes_the_what_if_tables(
    standalone: str, tmp_path: Path
) -> None:
    snapshots, clients = tmp_path / "fleet.jsonl", tmp_path / "clients.jsonl"
    generated = main(
        [
            "fleet-generate",
            "--clusters",
            "6",
            "--brokers",
            "3",
            "--out",
            str(snapshots),
            "--clients-out",
            str(clients),
            "--clients",
            "3",
            "--seed",
            "5",
        ]
    )
    assert generated == 0
    out = tmp_path / "report"
    done = subprocess.run(
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            standalone,
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.driver.bindAddress=127.0.0.1",
            "--conf",
            "spark.sql.shuffle.partitions=4",
            str(ROOT / "kafkacompat" / "pipeline" / "__main__.py"),
            "--snapshots",
            str(snapshots),
            "--clients",
            str(clients),
            "--out",
            str(out),
            "--format",
            "json",
            "--what-if",
            "4.0,4.2",
        ],
        env=_spark_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for table in (*TABLES, *WHAT_IF_TABLES):
        assert list((out / table).glob("part-*.json")), table
    rows = [
        json.loads(line) for f in (out / "what_if").glob("part-*.json") for line in f.read_text().splitlines()
    ]
    assert len(rows) == 6 * 3 * 2 and {r["target"] for r in rows} == {"4.0", "4.2"}
    assert "what if Kafka 4.0 (kraft-broker):" in done.stdout
    assert "Clients to upgrade first" in (out / "report.html").read_text()
