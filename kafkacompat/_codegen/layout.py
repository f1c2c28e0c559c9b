"""Wire layouts: which fields a struct has on the wire at a version, and their defaults.

Both renderers (readers and writers) work from these: versions whose layouts
are equal share one generated function.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkacompat._codegen.spec import PRIMITIVES, FieldSpec, StructSpec

# Wire types of a fixed width, read and written with struct.Struct.
FIXED = {name for name, (code, *_rest) in PRIMITIVES.items() if code is not None}


@dataclass(frozen=True)
class FieldLayout:
    name: str
    field: FieldSpec = field(compare=False)
    present: bool = False
    tagged: bool = False
    nullable: bool = False
    compact: bool = False
    child: StructLayout | None = None


@dataclass(frozen=True)
class StructLayout:
    struct_name: str
    flexible: bool
    fields: tuple[FieldLayout, ...]


def layout_of(struct: StructSpec, version: int, flexible: bool) -> StructLayout:
    items = []
    for f in struct.fields:
        present = version in f.versions
        tagged = present and flexible and version in f.tagged
        compact = flexible if f.flexible_override is None else version in f.flexible_override
        child = layout_of(f.struct, version, flexible) if (f.struct and present) else None
        items.append(FieldLayout(f.name, f, present, tagged, version in f.nullable, compact, child))
    return StructLayout(struct.name, flexible, tuple(items))


@dataclass
class StructPlan:
    """All layouts of one struct within a message, numbered in version order."""

    spec: StructSpec
    layouts: dict[StructLayout, int] = field(default_factory=dict)

    def index(self, layout: StructLayout) -> int:
        return self.layouts.setdefault(layout, len(self.layouts))


def int_literal(value: Any) -> str:
    if isinstance(value, bool):
        raise ValueError(f"boolean default {value!r} for an integer field")
    if isinstance(value, int):
        return str(value)
    text = str(value).strip().lower()
    return str(int(text, 16) if text.startswith(("0x", "-0x")) else int(text))


def default_expr(f: FieldSpec, owner: str) -> str:
    """The Python expression of a field's default value (a fresh object if mutable)."""
    d = f.default
    if f.is_array:
        if d == "null":
            return "None"
        return "_wire.KeyedList()" if (f.struct and f.struct.map_key) else "[]"
    if f.struct is not None:
        return "None" if d == "null" else f"{owner}.{f.struct.name}()"
    kind = f.type
    if d is None:
        if kind == "records" and f.nullable.empty:
            return 'b""'
        return PRIMITIVES[kind][3]
    if kind == "bool":
        return "True" if str(d).lower() == "true" else "False"
    if kind in ("string", "bytes", "records"):
        if d == "null":
            return "None"
        return repr(d) if kind == "string" else repr(str(d).encode())
    if kind == "float64":
        return repr(float(d))
    if kind == "uuid":
        return "_wire.ZERO_UUID"
    return int_literal(d)


def fixed_runs(fields: list[FieldLayout]) -> Iterator[list[FieldLayout]]:
    """Split the wire-order fields into runs of fixed-width scalars and single others."""
    run: list[FieldLayout] = []
    for fl in fields:
        f = fl.field
        if not f.is_array and f.struct is None and f.type in FIXED:
            run.append(fl)
            continue
        if run:
            yield run
            run = []
        yield [fl]
    if run:
        yield run


def is_fixed_run(run: list[FieldLayout]) -> bool:
    """Whether ``fixed_runs`` made this run of fixed-width scalars (or one such scalar)."""
    first = run[0].field
    return len(run) > 1 or (first.type in FIXED and not first.is_array and first.struct is None)
