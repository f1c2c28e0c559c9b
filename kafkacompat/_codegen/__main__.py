"""``python -m kafkacompat._codegen [--check] [--inputs DIR]``

Generates, from Kafka's JSON specs (two generations, see ``generations.py``)
and the reference tables vendored in ``vendor/kafka-protocol``, the two
folders it owns:

- ``kafkacompat/protocol/messages/``: one module per API key or record, and the ``ApiKey`` enum;
- ``kafkacompat/reference/``: the release and feature tables.

Each run writes the whole folder and deletes files it no longer produces.
``--check`` writes nothing and exits 1 when the committed files differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafkacompat._codegen.generations import MergedSpecs, load_generations
from kafkacompat._codegen.reference import api_names, render_reference
from kafkacompat._codegen.removals import load_removals
from kafkacompat._codegen.render_docs import render_blocks, replace_blocks
from kafkacompat._codegen.render_index import (
    API_KEY_MODULE,
    API_KEY_NUMBERS_MODULE,
    render_alias_module,
    render_api_key_numbers,
    render_api_keys,
    render_index,
    render_index_stub,
)
from kafkacompat._codegen.render_messages import BANNER, BROKER_SIDE, render_module
from kafkacompat._codegen.spec import SpecError, module_groups, module_name
from kafkacompat._codegen.wrap import wrap_source

PACKAGE = Path(__file__).resolve().parent.parent
REPO = PACKAGE.parent
DEFAULT_INPUTS = REPO / "vendor" / "kafka-protocol"
DOCS = REPO / "docs" / "codec.md"


def render_messages(inputs: Path, merged: MergedSpecs | None = None) -> dict[str, str]:
    merged = load_generations(inputs) if merged is None else merged
    removals = load_removals(inputs)
    groups = module_groups(merged.specs)
    files: dict[str, str] = {}
    for module, specs in groups.items():
        files[f"{module}.py"], broker_side = render_module(specs, merged.message_aliases, removals, module)
        if broker_side is not None:
            files[f"{BROKER_SIDE}/{module}.py"] = broker_side
    files[f"{BROKER_SIDE}/__init__.py"] = "\n".join(
        [
            BANNER,
            '"""The broker side of the message modules: the readers of requests, the writers of responses.',
            "",
            "A client never needs them; ``codec_path.broker_side`` loads a module here the first",
            "time a broker (the emulator, the recorder) reads a request or writes a response.",
            '"""',
            "",
        ]
    )
    for old, new in sorted(merged.message_aliases.items()):
        base = old.removesuffix("Request").removesuffix("Response")
        old_module = module_name(base)
        new_module = module_name(new.removesuffix("Request").removesuffix("Response"))
        if old_module not in groups:  # the old module path keeps importing
            olds = sorted(o for o, n in merged.message_aliases.items() if o.startswith(base))
            files[f"{old_module}.py"] = render_alias_module(new_module, olds)
    files["__init__.py"] = render_index(groups, merged.message_aliases)
    files["__init__.pyi"] = render_index_stub(groups, merged.message_aliases)
    files[f"{API_KEY_MODULE}.py"] = render_api_keys(groups)
    files[f"{API_KEY_NUMBERS_MODULE}.py"] = render_api_key_numbers(groups)
    return {name: wrap_source(text) for name, text in files.items()}


def outputs(inputs: Path, merged: MergedSpecs | None = None) -> dict[Path, dict[str, str]]:
    messages = render_messages(inputs, merged)
    prefix = f"{BROKER_SIDE}/"
    return {
        PACKAGE / "protocol" / "messages": {n: t for n, t in messages.items() if not n.startswith(prefix)},
        PACKAGE / "protocol" / "messages" / BROKER_SIDE: {
            n.removeprefix(prefix): t for n, t in messages.items() if n.startswith(prefix)
        },
        PACKAGE / "reference": render_reference(inputs),
    }


def sync_docs(inputs: Path, merged: MergedSpecs, check: bool) -> list[str]:
    """Rewrite the generated tables of docs/codec.md (when the docs are there)."""
    if not DOCS.exists():
        return []
    blocks = render_blocks(merged, load_removals(inputs), api_names(inputs), inputs)
    current = DOCS.read_text(encoding="utf-8")
    wanted = replace_blocks(current, blocks)
    if wanted == current:
        return []
    if not check:
        DOCS.write_text(wanted, encoding="utf-8")
    return [f"stale: {_shown(DOCS)} (generated tables)"]


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def sync(folder: Path, files: dict[str, str], check: bool) -> list[str]:
    """Make ``folder`` hold exactly ``files``; return the differences found."""
    problems: list[str] = []
    existing = {p.name for p in [*folder.glob("*.py"), *folder.glob("*.pyi")]} if folder.is_dir() else set()
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
    parser.add_argument(
        "--inputs",
        type=Path,
        default=DEFAULT_INPUTS,
        help="the kafka-protocol folder (default: the vendored one)",
    )
    args = parser.parse_args(argv)
    if not (args.inputs / "spec").is_dir():
        print(f"error: no specs under {args.inputs}", file=sys.stderr)
        return 2
    problems: list[str] = []
    try:
        merged = load_generations(args.inputs)
        generated = outputs(args.inputs, merged)
        problems += sync_docs(args.inputs, merged, args.check)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for folder, files in generated.items():
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
