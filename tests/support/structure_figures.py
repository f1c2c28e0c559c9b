"""Figures about the package's structure, read from its source: ``python -m tests.support.structure_figures``.

What it counts (all from the syntax tree, nothing imported):

- modules per package (hand-written and generated apart);
- lines per driver: the modules that import trio, asyncio, or only blocking
  sockets and threads, outside testing, the CLI, the pipeline and profiles;
- places ``client_id`` can be set: classes with a ``client_id`` field or
  ``__init__`` parameter, and public functions taking one, outside the codec,
  testing and the CLI;
- routes to a version pick: public functions and methods named ``pick_*`` or
  ``explain``, outside testing, the CLI and the pipeline;
- doors to an exception: modules other than ``kafkacompat.errors`` from which
  some code imports a class that ``errors.py`` defines, or that list one in
  ``__all__``;
- import cycles: strongly connected groups of modules in the graph of
  module-level imports (``TYPE_CHECKING`` blocks left out), and of packages;
- imports inside functions.

Run the same script before and after a restructuring to compare; ``--root PATH``
reads another checkout (a worktree of the commit before, say) with this script.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter, defaultdict
from pathlib import Path

try:
    from kafkacompat._generated import is_generated as generated_path
except ImportError:  # a checkout from before the one list: the same paths
    def generated_path(relative: str) -> bool:
        return relative.startswith(("kafkacompat/protocol/messages/", "kafkacompat/reference/"))

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kafkacompat"
ABOVE_DRIVERS = ("testing", "recorder", "cli", "pipeline", "profiles", "_codegen")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_generated(path: Path) -> bool:
    return generated_path(path.relative_to(ROOT).as_posix())


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                for handler in node.handlers:
                    walk(handler.body)
                walk(node.orelse)

    walk(tree.body)
    return found


def function_imports(tree: ast.Module) -> int:
    """Import statements inside a function, each counted once (one in a nested function too)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found = (inner for inner in ast.walk(node) if isinstance(inner, ast.Import | ast.ImportFrom))
            inside.update(map(id, found))
    return len(inside)


def resolve(node: ast.Import | ast.ImportFrom, here: str, known: set[str]) -> list[str]:
    """The package modules an import statement loads."""
    targets: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == "kafkacompat":
                targets.append(alias.name)
        return [t for t in targets if t in known]
    base = node.module or ""
    if node.level:
        parts = here.split(".")
        base = ".".join(parts[: len(parts) - node.level + (1 if here_is_package(here, known) else 0)]) + (
            "." + base if base else ""
        )
    if base.split(".")[0] != "kafkacompat":
        return []
    for alias in node.names:
        full = f"{base}.{alias.name}"
        targets.append(full if full in known else base)
    return [t for t in dict.fromkeys(targets) if t in known]


def here_is_package(name: str, known: set[str]) -> bool:
    return any(other.startswith(name + ".") for other in known)


def package_of(name: str, known: set[str]) -> str:
    """The package a module belongs to; a top-level module (errors, demo) stands for itself."""
    if here_is_package(name, known) or name.count(".") == 1:
        return name
    return name.rpartition(".")[0]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def error_classes() -> set[str]:
    tree = ast.parse((PACKAGE / "errors.py").read_text())
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)}


def all_names(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:
                return set()
    return set()


def figures() -> dict[str, object]:
    mods = modules()
    known = set(mods)
    trees = {name: ast.parse(path.read_text()) for name, path in mods.items()}
    out: dict[str, object] = {}

    per_package: Counter[str] = Counter()
    for name, path in mods.items():
        label = package_of(name, known) + (" (generated)" if is_generated(path) else "")
        per_package[label] += 1
    out["modules per package"] = dict(sorted(per_package.items()))

    drivers: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for name, tree in trees.items():
        if name.split(".")[1:2] and name.split(".")[1] in ABOVE_DRIVERS:
            continue
        roots = set()
        for node in top_level_imports(tree):
            if isinstance(node, ast.Import):
                roots.update(a.name.split(".")[0] for a in node.names)
            elif node.module and not node.level:
                roots.add(node.module.split(".")[0])
        kind = None
        if "trio" in roots:
            kind = "trio"
        elif "asyncio" in roots:
            kind = "asyncio"
        elif roots & {"socket", "threading"} and "errno" not in roots:
            kind = "blocking"
        if kind:
            lines = len(mods[name].read_text().splitlines())
            drivers[kind].append((name, lines))
    out["lines per driver"] = {
        kind: {"modules": len(items), "lines": sum(n for _, n in items), "which": [m for m, _ in items]}
        for kind, items in sorted(drivers.items())
    }

    setters: list[str] = []
    routes: list[str] = []
    skip = ("kafkacompat.protocol", "kafkacompat.testing", "kafkacompat.cli", "kafkacompat._codegen")
    for name, tree in trees.items():
        # private modules (a part starting with "_") are plumbing, not a door a user can set
        in_scope = not name.startswith(skip) and not any(p.startswith("_") for p in name.split("."))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                fields = {
                    s.target.id
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
                params: set[str] = set()
                for s in node.body:
                    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef):
                        if s.name == "__init__":
                            params = {a.arg for a in s.args.args + s.args.kwonlyargs}
                        if _is_route(s.name) and not node.name.startswith("_") and _routes_scope(name):
                            routes.append(f"{name}.{node.name}.{s.name}")
                if in_scope and "client_id" in fields | params and not node.name.startswith("_"):
                    setters.append(f"{name}.{node.name}")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = {a.arg for a in node.args.args + node.args.kwonlyargs}
                if in_scope and "client_id" in args and not node.name.startswith("_"):
                    setters.append(f"{name}.{node.name}()")
                if _is_route(node.name) and _routes_scope(name):
                    routes.append(f"{name}.{node.name}")
    out["places client_id can be set"] = {"count": len(setters), "which": setters}
    out["routes to a version pick"] = {"count": len(routes), "which": routes}

    exceptions = error_classes()
    doors: dict[str, int] = Counter()
    for path in [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py"),
                 *(ROOT / "examples").rglob("*.py")]:
        if path.name == "structure_figures.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kafkacompat"):
                if node.module == "kafkacompat.errors":
                    continue
                if any(a.name in exceptions for a in node.names):
                    doors[node.module] += 1
    for name, tree in trees.items():
        if name != "kafkacompat.errors" and all_names(tree) & exceptions:
            doors.setdefault(name, 0)
    out["doors to an exception"] = {"count": len(doors), "imports through them": sum(doors.values()),
                                    "which": dict(sorted(doors.items()))}

    graph: dict[str, set[str]] = defaultdict(set)
    fn_imports = 0
    for name, tree in trees.items():
        graph[name]
        for node in top_level_imports(tree):
            for target in resolve(node, name, known):
                if target != name:
                    graph[name].add(target)
        if not is_generated(mods[name]):
            fn_imports += function_imports(tree)
    cycles = strongly_connected(graph)
    pkg_graph: dict[str, set[str]] = defaultdict(set)
    for src, targets in graph.items():
        for dst in targets:
            a, b = package_of(src, known), package_of(dst, known)
            # a subpackage importing its parent's face counts; a package's own modules do not
            if a != b:
                pkg_graph[a].add(b)
    pkg_cycles = strongly_connected(pkg_graph)
    out["import cycles"] = {
        "module cycles": len(cycles),
        "modules in them": sum(len(c) for c in cycles),
        "package cycles": len(pkg_cycles),
        "packages in them": pkg_cycles,
    }
    out["imports inside functions (hand-written)"] = fn_imports
    return out


def _is_route(name: str) -> bool:
    return not name.startswith("_") and (name.startswith("pick_") or name == "explain")


def _routes_scope(module: str) -> bool:
    return not module.startswith(("kafkacompat.testing", "kafkacompat.cli", "kafkacompat.pipeline",
                                  "kafkacompat._codegen"))


def main() -> None:
    import json

    global ROOT, PACKAGE
    if "--root" in sys.argv:
        ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
        PACKAGE = ROOT / "kafkacompat"
    verbose = "-v" in sys.argv
    for key, value in figures().items():
        if isinstance(value, dict) and not verbose:
            value = {k: v for k, v in value.items() if k != "which"}
            if key == "lines per driver":
                value = {k: {kk: vv for kk, vv in v.items() if kk != "which"} for k, v in value.items()}
        print(f"{key}: {json.dumps(value)}")


if __name__ == "__main__":
    main()
