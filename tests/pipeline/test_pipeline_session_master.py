"""No hard-coded master: the default is a documented, overridable default, and spark-submit wins."""

from __future__ import annotations

import re
from pathlib import Path

from kafkacompat.pipeline.session import DEFAULT_MASTER, MASTER_ENV, resolve_master

PACKAGE = Path(__file__).resolve().parents[2] / "kafkacompat"


def test_resolution_order() -> None:
    assert (
        resolve_master("spark://h:7077", {MASTER_ENV: "local[1]"}, session_running=False) == "spark://h:7077"
    )
    assert resolve_master(None, {MASTER_ENV: "local[1]"}, session_running=False) == "local[1]"
    # Under spark-submit (or with a live session) no master is set: Spark keeps its own.
    assert resolve_master(None, {"PYSPARK_GATEWAY_PORT": "4242"}, session_running=False) is None
    assert resolve_master(None, {}, session_running=True) is None
    assert resolve_master(None, {}, session_running=False) == DEFAULT_MASTER == "local[*]"


def test_no_master_is_written_anywhere_else_in_the_package() -> None:
    allowed = {"pipeline/session.py", "pipeline/command.py", "pipeline/__main__.py"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        relative = path.relative_to(PACKAGE).as_posix()
        if re.search(r"local\[|\.master\(|spark://|yarn", text) and relative not in allowed:
            offenders.append(relative)
    assert offenders == []
    session = (PACKAGE / "pipeline/session.py").read_text(encoding="utf-8")
    assert session.count('"local[*]"') == 1  # the documented default, once
