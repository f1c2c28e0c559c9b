"""The layers hold: each package imports only those below it, and nothing below the drivers imports a loop.

The contracts are import-linter's, in pyproject.toml (``[tool.importlinter]``);
docs/architecture.md draws them.  ``lint-imports`` reads the imports of every
module, those inside functions included, so a late import cannot hide an
upward one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import kafkacompat

ROOT = Path(kafkacompat.__file__).resolve().parents[1]


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def test_the_import_contracts_are_kept() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = (
        "import sys; from importlinter.cli import lint_imports as run; "
        "sys.exit(run(no_cache=True, no_logo=True))"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "broken" in run.stdout and "0 broken" in run.stdout


def test_every_module_of_the_package_is_in_a_layer() -> None:
    """A new folder or top-level module must be given its place, not be left outside the contract."""
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    placed = {name.strip() for layer in layers for name in str(layer).split("|")}  # type: ignore[attr-defined]
    present = {
        path.stem if path.is_file() else path.name
        for path in (ROOT / "kafkacompat").iterdir()
        if (path.is_dir() and (path / "__init__.py").exists())
        or (path.suffix == ".py" and path.name != "__init__.py")
    }
    assert present - placed == set()
