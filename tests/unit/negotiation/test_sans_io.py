"""The core stays sans-I/O: no sockets, clocks, sleeps or event loops in negotiation/ and protocol/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "kafkacompat"
FORBIDDEN = {"trio", "tenacity", "socket", "ssl", "time", "asyncio", "selectors", "threading", "subprocess"}
FILES = sorted((PACKAGE / "negotiation").glob("*.py")) + sorted((PACKAGE / "protocol").rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(PACKAGE)) for p in FILES])
def test_no_io_imports(path: Path) -> None:
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN, f"{path.name} imports {sorted(imported & FORBIDDEN)}"


def test_the_guard_sees_every_module() -> None:
    assert len(FILES) > 120  # the generated messages and the hand-written core
