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


def test_no_import_inside_a_function_hides_a_cycle() -> None:
    """A late import is for weight (a module only some calls need), never to break a loop.

    For every import inside a function, the module imported must not import,
    at its top, back the module that imports it late (directly or not).
    """
    import ast

    from tests.support import structure_figures as figures

    modules = figures.modules()
    known = set(modules)
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in modules.items()}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, tree in trees.items():
        for node in figures.top_level_imports(tree):
            graph[name].update(t for t in figures.resolve(node, name, known) if t != name)

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            here = stack.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                stack.extend(graph[here])
        return False

    hidden = []
    for name, tree in trees.items():
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    hidden += [f"{name} -> {t}" for t in figures.resolve(node, name, known)
                               if t != name and reaches(t, name)]
    assert sorted(set(hidden)) == []
