"""Tables of docs/codec.md generated from the same data as the code, so they cannot drift.

Each table sits between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
lines; the generator rewrites what is between them and ``--check`` compares it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkacompat._codegen.generations import MergedSpecs, describe_owners
from kafkacompat._codegen.release_inputs import load_releases
from kafkacompat._codegen.removals import KINDS, Removal

__all__ = ["render_blocks", "replace_blocks"]

_BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.DOTALL
)


def _advertised(releases: list[dict[str, Any]], release: str, kind: str, key: int) -> str:
    for entry in releases:
        if entry["release"] == release and entry["kind"] == kind:
            r = entry["apis"].get(str(key))
            return "-" if r is None else (f"{r['min']}" if r["min"] == r["max"] else f"{r['min']}-{r['max']}")
    return "-"


def removal_table(removals: Mapping[int, Removal], names: Mapping[int, str], inputs: Path) -> str:
    releases = load_releases(inputs)["releases"]
    lines = [
        "| key | API | versions | what Kafka 4.x does | since | advertised by 4.4 broker / controller |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for key in sorted(removals):
        r = removals[key]
        broker = _advertised(releases, "4.4", "kraft-broker", key)
        controller = _advertised(releases, "4.4", "kraft-controller", key)
        lines.append(
            f"| {key} | {names.get(key, r.api)} | {r.versions} | {KINDS[r.kind]} | {r.since} "
            f"| {broker} / {controller} |"
        )
    return "\n".join(lines) + "\n"


def generation_table(merged: MergedSpecs) -> str:
    """The requests whose versions come from more than one generation."""
    lines = ["| request | versions, and the specs each was generated from |", "| --- | --- |"]
    for name in sorted(merged.owners):
        if not name.endswith("Request"):
            continue
        runs = list(describe_owners(merged.owners[name]))
        if len(runs) == 1:
            continue
        text = "; ".join(f"{versions}: {label}" for label, versions in runs)
        lines.append(f"| {name.removesuffix('Request')} | {text} |")
    return "\n".join(lines) + "\n"


def render_blocks(
    merged: MergedSpecs, removals: Mapping[int, Removal], names: Mapping[int, str], inputs: Path
) -> dict[str, str]:
    return {
        "removals": removal_table(removals, names, inputs),
        "generations": generation_table(merged),
    }


def replace_blocks(text: str, blocks: Mapping[str, str]) -> str:
    """``text`` with each generated block's body replaced; an unknown block name is an error."""

    def body(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in blocks:
            raise ValueError(f"docs: no generated block named {name!r}")
        return match.group(1) + blocks[name] + match.group(4)

    return _BLOCK.sub(body, text)
