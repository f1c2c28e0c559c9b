"""Generated source stays within the line limit and compiles to the same code as before wrapping."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kafkacompat._codegen.wrap import LINE_LIMIT, wrap_source
from kafkacompat._generated import GENERATED_PATHS

ROOT = Path(__file__).resolve().parents[3]
# The one list of generated folders (kafkacompat._generated), every file in them.
GENERATED = sorted(path for folder in GENERATED_PATHS for path in (ROOT / folder).glob("*.py*"))

LONG = "x" * 40
CASES = [
    f"def f(*, {LONG}: int = 1, {LONG}b: str = 'a', {LONG}c: list[int] | None = None) -> None:\n    pass\n",
    f"class C:\n    def m(self, {LONG}):\n"
    f"        self.{LONG} = [] if {LONG} is None else {LONG} + [1, 2, 3]\n",
    f"from os.path import {LONG[:20]}, join, dirname, basename, exists, isdir, isfile, splitext, split\n",
    f"def g({LONG}: 'list[Something.Very.Long.Indeed.And.More.And.More.Nested]' = None, y: int = 2):\n"
    "    return 1\n",
    "def h(pos):\n"
    f"    raise ValueError(f'tagged field 3 should end at byte {{pos}} but ends at {{pos + 1}} {LONG}')\n",
    f"TABLE = {{0: '{LONG}', 1: '{LONG}', 2: (1, 2), 3: [4, 5], 4: {{'k': 'v'}}, 5: f'{{TABLE}}'}}\n",
    f"({LONG}a, {LONG}b,) = divmod(10, 3)\n",
    f"for ({LONG}a, {LONG}b,) in [(1, 2)]:\n    pass\n",
    f"value = buf[pos + 1 : stop].decode() if some_condition_that_is_long and {LONG} else other_value_too\n",
]


@pytest.mark.parametrize("source", CASES)
def test_wrapping_keeps_the_code_and_fits_the_limit(source: str) -> None:
    wrapped = wrap_source(source)
    assert ast.dump(ast.parse(wrapped)) == ast.dump(ast.parse(source))
    assert max(len(line) for line in wrapped.splitlines()) <= LINE_LIMIT, wrapped


def test_short_source_is_left_alone() -> None:
    source = "x = (1,\n     2)  # already wrapped by hand\n"
    assert wrap_source(source) == source


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_generated_files_are_marked_and_within_the_line_limit(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    assert first.startswith("# @generated") and "DO NOT EDIT" in first
    too_long = [n for n, line in enumerate(text.splitlines(), 1) if len(line) > LINE_LIMIT]
    assert not too_long, f"{path.name}: lines {too_long[:5]} are over {LINE_LIMIT} characters"
