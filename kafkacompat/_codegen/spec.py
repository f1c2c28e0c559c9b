"""Reading Kafka's JSON message specs into a small model.

The model keeps only facts: names, types, version ranges, defaults, tags.
Prose ("about" texts and comments) is dropped on the way in, so it can never
reach the generated code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkacompat.protocol.versions import OPEN_END, VersionRange

PRIMITIVES = {
    # wire type -> (struct code or None, width, python type, default literal)
    "bool": ("?", 1, "bool", "False"),
    "int8": ("b", 1, "int", "0"),
    "int16": ("h", 2, "int", "0"),
    "int32": ("i", 4, "int", "0"),
    "int64": ("q", 8, "int", "0"),
    "uint16": ("H", 2, "int", "0"),
    "uint32": ("I", 4, "int", "0"),
    "float64": ("d", 8, "float", "0.0"),
    "varint": (None, 0, "int", "0"),
    "varlong": (None, 0, "int", "0"),
    "uuid": (None, 16, "uuid.UUID", "_wire.ZERO_UUID"),
    "string": (None, 0, "str", '""'),
    "bytes": (None, 0, "bytes", 'b""'),
    "records": (None, 0, "bytes", "None"),
}


# Where snake_case puts an underscore; the messages index uses the same pattern at
# run time to find a class's module from its name.
WORD_BOUNDARY = r"(?<=[A-Z])(?=[A-Z][a-z])|(?<=[a-z0-9])(?=[A-Z])"


def snake_case(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``; ``IsrUUIDs`` -> ``isr_uuids``."""
    return re.sub(WORD_BOUNDARY, "_", name).lower()


def module_name(name: str) -> str:
    return snake_case(name)


@dataclass
class FieldSpec:
    name: str
    py_name: str
    type: str  # primitive name, or struct name
    is_array: bool
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    default: Any
    ignorable: bool
    map_key: bool
    flexible_override: VersionRange | None
    struct: StructSpec | None = None
    aliases: tuple[str, ...] = ()  # older snake_case names of this field (renamed by Kafka)


@dataclass
class StructSpec:
    name: str
    fields: list[FieldSpec]
    versions: VersionRange  # where the struct as a whole can appear
    aliases: tuple[str, ...] = ()  # older names of this struct (renamed by Kafka)

    @property
    def map_key(self) -> tuple[str, ...]:
        return tuple(f.py_name for f in self.fields if f.map_key)


@dataclass
class MessageSpec:
    name: str
    type: str
    api_key: int | None
    valid: VersionRange
    flexible: VersionRange
    deprecated: VersionRange
    latest_unstable: bool
    listeners: tuple[str, ...]
    root: StructSpec
    structs: list[StructSpec] = field(default_factory=list)  # nested, in definition order

    @property
    def versions(self) -> range:
        return range(self.valid.lowest, self.valid.highest + 1)


class SpecError(Exception):
    pass


def strip_comments(text: str) -> str:
    """Drop ``//`` comments outside strings (the specs are JSON with comments)."""
    out = []
    for line in text.splitlines():
        in_string = False
        cut = len(line)
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == '"' and (i == 0 or line[i - 1] != "\\"):
                in_string = not in_string
            elif not in_string and line.startswith("//", i):
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def load_spec(path: Path) -> MessageSpec:
    raw = json.loads(strip_comments(path.read_text(encoding="utf-8")))
    try:
        return _build_message(raw)
    except (KeyError, ValueError) as exc:
        raise SpecError(f"{path.name}: {exc}") from exc


def _range(value: Any, default: str = "none") -> VersionRange:
    return VersionRange.parse(str(value) if value is not None else default)


def _build_message(raw: dict[str, Any]) -> MessageSpec:
    valid = _range(raw["validVersions"])
    flexible = _range(raw.get("flexibleVersions"), "none")
    common = {c["name"]: c for c in raw.get("commonStructs", [])}
    structs: dict[str, StructSpec] = {}
    order: list[StructSpec] = []

    def build_struct(name: str, fields_raw: list[dict[str, Any]], versions: VersionRange) -> StructSpec:
        if name in structs:
            existing = structs[name]
            if fields_raw is not common.get(name, {}).get("fields"):
                raise ValueError(f"struct {name} is defined twice")
            return existing
        spec = StructSpec(name, [], versions)
        structs[name] = spec
        spec.fields = [build_field(f, versions) for f in fields_raw]
        order.append(spec)
        return spec

    def build_field(f: dict[str, Any], parent: VersionRange) -> FieldSpec:
        type_name = f["type"]
        is_array = type_name.startswith("[]")
        base = type_name[2:] if is_array else type_name
        versions = _range(f["versions"]).intersect(parent)
        tag = f.get("tag")
        spec = FieldSpec(
            name=f["name"],
            py_name=snake_case(f["name"]),
            type=base,
            is_array=is_array,
            versions=versions,
            nullable=_range(f.get("nullableVersions")),
            tagged=_range(f.get("taggedVersions")),
            tag=int(tag) if tag is not None else None,
            default=f.get("default"),
            ignorable=bool(f.get("ignorable", False)),
            map_key=bool(f.get("mapKey", False)),
            flexible_override=_range(f["flexibleVersions"]) if "flexibleVersions" in f else None,
        )
        if base not in PRIMITIVES:
            if "fields" in f:
                spec.struct = build_struct(base, f["fields"], versions)
            elif base in common:
                spec.struct = build_struct(base, common[base]["fields"], VersionRange.ALL)
            else:
                raise ValueError(f"unknown type {type_name} of field {f['name']}")
        if spec.tag is not None and spec.tagged.empty:
            raise ValueError(f"field {f['name']} has a tag but no taggedVersions")
        return spec

    root = StructSpec(raw["name"], [], valid)
    root.fields = [build_field(f, valid) for f in raw.get("fields", [])]  # a retired API has none
    listeners = tuple(raw.get("listeners", ()))
    return MessageSpec(
        name=raw["name"],
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid=valid,
        flexible=flexible,
        deprecated=_range(raw.get("deprecatedVersions")),
        latest_unstable=bool(raw.get("latestVersionUnstable", False)),
        listeners=listeners,
        root=root,
        structs=order,
    )


def load_all(spec_dir: Path) -> list[MessageSpec]:
    paths = sorted((spec_dir / "message").glob("*.json")) + sorted((spec_dir / "metadata").glob("*.json"))
    if not paths:
        raise SpecError(f"no specs found under {spec_dir}")
    return [load_spec(p) for p in paths]


__all__ = [
    "OPEN_END", "FieldSpec", "MessageSpec", "StructSpec",
    "load_all", "module_groups", "response_pairs", "snake_case",
]


def response_pairs(specs: list[MessageSpec]) -> dict[str, str]:
    """Request class -> the response class answering it, for the pairs one module holds."""
    names = {s.name for s in specs}
    pairs = {}
    for s in specs:
        response = s.name.removesuffix("Request") + "Response"
        if s.type == "request" and response in names:
            pairs[s.name] = response
    return pairs


def module_groups(specs: list[MessageSpec]) -> dict[str, list[MessageSpec]]:
    """Module name -> the specs it holds (a request and its response share one)."""
    groups: dict[str, list[MessageSpec]] = {}
    for s in specs:
        if s.type in ("request", "response"):
            base = s.name.removesuffix("Request").removesuffix("Response")
        else:
            base = s.name
        groups.setdefault(module_name(base), []).append(s)
    return groups
