"""API keys are spelled with ``ApiKey`` in hand-written code, never as bare ints.

A scan of the package's syntax trees (generated modules excluded) for the
three shapes a bare key takes: an ``api_key`` compared with an int, a constant
named after an API (``API_VERSIONS = 18``) or an ``api_key=`` argument set to
an int.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import kafkacompat
from kafkacompat._generated import is_generated
from kafkacompat.protocol.messages import ApiKey

PACKAGE = Path(kafkacompat.__file__).parent
_KEY_NAME = re.compile(r"api_?key", re.IGNORECASE)
_API_CONSTANTS = {name for member in ApiKey for name in (member.name, f"{member.name}_KEY")}


def _is_int(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_int(e) for e in node.elts)
    return isinstance(node, ast.Constant) and type(node.value) is int


def _names_a_key(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(_KEY_NAME.search(name))


def _pairs(targets: list[ast.expr], value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """Each name assigned with the value it gets, unpacking ``A, B = 18, 0``."""
    pairs = []
    for target in targets:
        if (
            isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
            and len(target.elts) == len(value.elts)
        ):
            pairs += list(zip(target.elts, value.elts, strict=True))
        else:
            pairs.append((target, value))
    return pairs


def bare_keys(source: str) -> list[tuple[int, str]]:
    """(line, what) for every API key written as an int in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_a_key(s) for s in sides) and any(_is_int(s) for s in sides):
                found.append((node.lineno, "an api key compared with an int"))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target, value in _pairs(targets, node.value):
                if isinstance(target, ast.Name) and _is_int(value) and (
                    target.id.lstrip("_") in _API_CONSTANTS or _KEY_NAME.fullmatch(target.id.lstrip("_"))
                ):
                    found.append((node.lineno, f"{target.id} set to an int"))
        elif isinstance(node, ast.keyword) and _KEY_NAME.search(node.arg or "") and _is_int(node.value):
            found.append((node.value.lineno, f"{node.arg}= given an int"))
    return sorted(found)


def test_the_scan_sees_each_shape() -> None:
    source = (
        "API_VERSIONS = 18\n_PRODUCE: Final = 0\nif api_key == 3: pass\n"
        "if message.API_KEY in (0, 1): pass\nheader(request_api_key=18)\n"
        "PRODUCE = ApiKey.PRODUCE\nif api_key == ApiKey.METADATA: pass\nversion = 3\n"
        "METADATA, FETCH = 3, 1\n"
    )
    assert [line for line, _ in bare_keys(source)] == [1, 2, 3, 4, 5, 9, 9]


def test_no_hand_written_module_spells_an_api_key_as_an_int() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if is_generated(f"kafkacompat/{relative}"):
            continue
        found += [f"{relative}:{line}: {what}" for line, what in bare_keys(path.read_text(encoding="utf-8"))]
    assert found == []
