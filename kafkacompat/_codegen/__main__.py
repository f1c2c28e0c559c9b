"""``python -m kafkacompat._codegen [--check] [--shared DIR]``

Generates, from Kafka's JSON specs and the reference tables in
``../shared/kafka-protocol``, the two folders it owns:

- ``kafkacompat/protocol/messages/``: one module per API key or record;
- ``kafkacompat/reference/``: the release and feature tables.

Each run writes the whole folder and deletes files it no longer produces.
``--check`` writes nothing and exits 1 when the committed files differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafkacompat._codegen.reference import render_reference
from kafkacompat._codegen.render_index import render_index
from kafkacompat._codegen.render_messages import module_groups, render_module
from kafkacompat._codegen.spec import load_all

PACKAGE = Path(__file__).resolve().parent.parent
REPO = PACKAGE.parent
DEFAULT_SHARED = REPO.parent / "shared" / "kafka-protocol"


def render_messages(shared: Path) -> dict[str, str]:
    groups = module_groups(load_all(shared / "spec"))
    files = {f"{module}.py": render_module(specs) for module, specs in groups.items()}
    files["__init__.py"] = render_index(groups)
    return files


def outputs(shared: Path) -> dict[Path, dict[str, str]]:
    return {
        PACKAGE / "protocol" / "messages": render_messages(shared),
        PACKAGE / "reference": render_reference(shared),
    }


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def sync(folder: Path, files: dict[str, str], check: bool) -> list[str]:
    """Make ``folder`` hold exactly ``files``; return the differences found."""
    problems: list[str] = []
    existing = {p.name for p in folder.glob("*.py")} if folder.is_dir() else set()
    for name, text in sorted(files.items()):
        path = folder / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            problems.append(f"{'missing' if current is None else 'stale'}: {_shown(path)}")
            if not check:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    for name in sorted(existing - files.keys()):
        problems.append(f"not generated any more: {_shown(folder / name)}")
        if not check:
            (folder / name).unlink()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkacompat._codegen")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="the kafka-protocol folder")
    args = parser.parse_args(argv)
    if not (args.shared / "spec").is_dir():
        print(f"error: no specs under {args.shared}", file=sys.stderr)
        return 2
    problems: list[str] = []
    for folder, files in outputs(args.shared).items():
        problems += sync(folder, files, args.check)
    if args.check:
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("generated code is out of date: run python -m kafkacompat._codegen", file=sys.stderr)
            return 1
        print("generated code is up to date")
        return 0
    print(f"{len(problems)} file(s) written or removed" if problems else "nothing to do")
    return 0


if __name__ == "__main__":
    sys.exit(main())
