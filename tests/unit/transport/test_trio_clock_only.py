"""No trio code reads the wall clock: deadlines in trio tasks use trio's clock.

``time.monotonic()`` (or ``time.time()``, ``time.sleep()``) inside a trio task
ignores the run loop's clock, so an autojump ``MockClock`` cannot drive it and
a test has to wait in real time.  Every module of the trio driver
(``kafkacompat/transport``) and of the recorder built on trio
(``kafkacompat/recorder``) is scanned.  The blocking driver (``kafkacompat/blocking``),
which runs on no loop, keeps the wall clock.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kafkacompat.recorder
import kafkacompat.transport

TRANSPORT = Path(kafkacompat.transport.__file__).parent
RECORDER = Path(kafkacompat.recorder.__file__).parent
WALL_CLOCK = {"monotonic", "monotonic_ns", "time", "time_ns", "perf_counter", "sleep"}


def _imports_trio(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "trio" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "trio":
            return True
    return False


def _wall_clock_calls(tree: ast.Module) -> list[str]:
    found = []
    from_time = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "time"
        for alias in node.names
        if alias.name in WALL_CLOCK
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in WALL_CLOCK:
            if isinstance(node.value, ast.Name) and node.value.id == "time":
                found.append(f"line {node.lineno}: time.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in from_time:
            found.append(f"line {node.lineno}: {node.id}")
    return found


def test_no_trio_module_reads_the_wall_clock() -> None:
    offenders = {}
    scanned = 0
    for path in sorted([*TRANSPORT.glob("*.py"), *RECORDER.glob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scanned += 1
        calls = _wall_clock_calls(tree)
        if calls:
            offenders[path.name] = calls
    assert offenders == {}
    for driver in ("connection.py", "cluster.py"):
        assert _imports_trio(ast.parse((TRANSPORT / driver).read_text(encoding="utf-8")))
    assert scanned >= 11  # the driver's modules and the recorder's: the scan saw trio code


def test_the_scan_sees_a_wall_clock_read() -> None:
    bad = ast.parse("import time\nfrom time import monotonic as now\nx = time.monotonic()\ny = now()\n")
    assert _wall_clock_calls(bad) == ["line 3: time.monotonic", "line 4: now"]
    assert _wall_clock_calls(ast.parse("import trio\nx = trio.current_time()\n")) == []
