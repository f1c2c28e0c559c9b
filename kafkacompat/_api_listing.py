"""The frozen public API: every public name and signature, in one committed listing.

``python -m kafkacompat._api_listing`` rewrites ``tests/data/public_api.txt``;
``--check`` fails (and prints the difference) when the package no longer
matches it, which ``make test`` runs (tests/unit/test_public_api.py).  Adding,
removing or changing a public name is then a visible change in review.

Public means: a module whose dotted path has no part starting with ``_`` and
that is not generated (``kafkacompat._generated``; the codec's messages are
frozen by ``python -m kafkacompat._codegen --check`` instead), and in it the
names of ``__all__`` (else its top-level names without a leading ``_``).  The
listing is read from the syntax trees, so nothing is imported: the pipeline's
Spark and the testing kit's brokers need not be installed to check it.
"""

from __future__ import annotations

import ast
import difflib
import sys
from pathlib import Path

from kafkacompat._generated import is_generated

__all__ = ["listing", "main"]

ROOT = Path(__file__).resolve().parents[1]
LISTING = ROOT / "tests" / "data" / "public_api.txt"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_public(path: Path) -> bool:
    relative = path.relative_to(ROOT)
    if is_generated(relative.as_posix()):
        return False
    return not any(part.startswith("_") and part != "__init__.py" for part in relative.parts)


def _exported(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            return [str(name) for name in ast.literal_eval(node.value)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and (
            node.target.id == "__all__" and node.value is not None
        ):
            return [str(name) for name in ast.literal_eval(node.value)]
    return None


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef, drop_self: bool) -> str:
    args = node.args
    if drop_self and args.args and not _is_static(node):
        rest = args.args[1:]
        defaults = list(args.defaults)[-len(rest):] if rest else []
        args = ast.arguments(
            posonlyargs=args.posonlyargs, args=rest, vararg=args.vararg, kwonlyargs=args.kwonlyargs,
            kw_defaults=args.kw_defaults, kwarg=args.kwarg, defaults=defaults,
        )
    text = f"({ast.unparse(args)})"
    if node.returns is not None:
        text += f" -> {ast.unparse(node.returns)}"
    return text


def _def(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    return "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    return {ast.unparse(d).split("(")[0] for d in node.decorator_list}


def _class_lines(node: ast.ClassDef) -> list[str]:
    bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
    lines = [f"{node.name}({bases})" if bases else node.name]
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            name = item.target.id
            if not name.startswith("_"):
                default = f" = {ast.unparse(item.value)}" if item.value is not None else ""
                lines.append(f"    {name}: {ast.unparse(item.annotation)}{default}")
        elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            if item.name.startswith("_") and item.name not in {"__init__", "__call__"}:
                continue
            decorators = _decorators(item)
            if "property" in decorators or "functools.cached_property" in decorators:
                returns = f" -> {ast.unparse(item.returns)}" if item.returns is not None else ""
                lines.append(f"    property {item.name}{returns}")
            elif not any(d.endswith(".setter") for d in decorators):
                kind = "classmethod " if "classmethod" in decorators else (
                    "staticmethod " if "staticmethod" in decorators else ""
                )
                lines.append(f"    {kind}{_def(item)} {item.name}{_signature(item, drop_self=True)}")
    return lines


def _module_lines(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined: dict[str, ast.stmt] = {}
    imported: dict[str, str] = {}

    def collect(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.setdefault(node.name, node)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        defined.setdefault(target.id, node)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                defined.setdefault(node.target.id, node)
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    imported.setdefault(alias.asname or alias.name, f"{node.module}.{alias.name}")
            elif isinstance(node, ast.If):
                collect(node.body)
                collect(node.orelse)

    collect(tree.body)
    exported = _exported(tree)
    if exported is None:
        exported = [name for name in defined if not name.startswith("_")]
    module = _module_name(path)
    lines = []
    for name in sorted(exported):
        node = defined.get(name)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            marks = "".join(f"@{d} " for d in sorted(_decorators(node)))
            lines.append(f"{marks}{_def(node)} {module}.{name}{_signature(node, drop_self=False)}")
        elif isinstance(node, ast.ClassDef):
            head, *members = _class_lines(node)
            lines.append(f"class {module}.{head}")
            lines += members
        elif isinstance(node, ast.AnnAssign):
            lines.append(f"{module}.{name}: {ast.unparse(node.annotation)}")
        elif node is not None:
            lines.append(f"{module}.{name}")
        elif name in imported:
            lines.append(f"{module}.{name} = {imported[name]}")
        else:
            lines.append(f"{module}.{name} (lazy)")
    return lines


def listing() -> str:
    """The listing as text, one line per public name or member."""
    lines = [
        "# kafkacompat's public API: python -m kafkacompat._api_listing rewrites this file, and the",
        "# tests check it is current. A change here is a change of the public API.",
    ]
    for path in sorted((ROOT / "kafkacompat").rglob("*.py")):
        if _is_public(path):
            lines += _module_lines(path)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    current = listing()
    if "--check" in args:
        committed = LISTING.read_text(encoding="utf-8") if LISTING.exists() else ""
        if committed == current:
            print("the public API listing is up to date")
            return 0
        diff = difflib.unified_diff(
            committed.splitlines(), current.splitlines(), "committed", "package", lineterm="", n=0
        )
        print("\n".join(diff))
        print("the public API changed: run python -m kafkacompat._api_listing and commit the listing",
              file=sys.stderr)
        return 1
    LISTING.write_text(current, encoding="utf-8")
    print(f"wrote {LISTING.relative_to(ROOT)} ({current.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
