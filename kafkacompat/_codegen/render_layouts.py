"""Layout tables: what the native reader (``kafkacompat/protocol/_native.c``) interprets.

For every wire layout the Python readers are generated from, the same layout
is also written as data, so that one small C interpreter can read every
message into the same classes (issue 28's compiled path, built from the same
generated code).  A struct layout is a tuple::

    (class, flexible, wire fields, tagged fields, absent fields)

- a wire field, in wire order: ``(slot name, op, child layout or None)``;
- a known tagged field, by tag: ``(tag, slot name, op, child, default mode, default)``;
- a field absent at the layout's version: ``(slot name, default mode, default)``.

``op`` is the wire type (``KINDS``) with the flags below added; a struct's
child is the named table of its own layout.  A default is a constant, or made
fresh per object (a list, a KeyedList, a struct built with no arguments), as
the Python readers do.  The C module exports the same numbers (``OPS`` and
``DEFAULT_MODES``), and a test holds the two to each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._codegen.layout import default_expr

if TYPE_CHECKING:
    from kafkacompat._codegen.layout import FieldLayout, StructLayout
    from kafkacompat._codegen.render_messages import Emitter, MessageRenderer
    from kafkacompat._codegen.spec import FieldSpec

KINDS = {
    "bool": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "uint16": 5,
    "uint32": 6,
    "float64": 7,
    "varint": 8,
    "varlong": 9,
    "uuid": 10,
    "string": 11,
    "bytes": 12,
    "struct": 13,
}
NULLABLE, COMPACT, ARRAY, KEYED = 16, 32, 64, 128
DEFAULT_MODES = {"const": 0, "list": 1, "keyed": 2, "struct": 3, "zero_uuid": 4}


def op_of(fl: FieldLayout) -> int:
    f = fl.field
    if f.struct is not None:
        kind = KINDS["struct"]
    elif f.type == "records":
        if f.is_array:  # the Python readers would let a null element through; no spec has one
            raise ValueError(f"{f.name}: an array of records has no layout")
        kind = KINDS["bytes"]
    else:
        kind = KINDS[f.type]
    op = kind
    if fl.nullable:
        op |= NULLABLE
    if fl.compact:
        op |= COMPACT
    if f.is_array:
        op |= ARRAY
        if f.struct is not None and f.struct.map_key:
            op |= KEYED
    return op


class LayoutRenderer:
    """Writes one message's tables: ``_N_<message>[__<struct>]_<layout>``, children first."""

    def __init__(self, message: MessageRenderer) -> None:
        self.m = message

    def name(self, struct_name: str, index: int) -> str:
        return self.m.fn("N", struct_name, index)

    def default(self, f: FieldSpec) -> str:
        """``mode, value`` of a field's default, the same value the Python readers store."""
        modes = DEFAULT_MODES
        expr = default_expr(f, self.m.owner)
        if expr == "[]":
            return f"{modes['list']}, None"
        if expr == "_wire.KeyedList()":
            return f"{modes['keyed']}, None"
        if expr == "_wire.ZERO_UUID":
            return f"{modes['zero_uuid']}, None"
        if f.struct is not None and expr != "None":
            return f"{modes['struct']}, {self.m.alias(f.struct.name)}"
        return f"{modes['const']}, {expr}"

    def child(self, fl: FieldLayout) -> str:
        f = fl.field
        if f.struct is None:
            return "None"
        assert fl.child is not None
        return self.name(f.struct.name, self.m.plans[f.struct.name].index(fl.child))

    def table(self, name: str, layout: StructLayout) -> str:
        wire = [
            f"({fl.field.py_name!r}, {op_of(fl)}, {self.child(fl)})"
            for fl in layout.fields
            if fl.present and not fl.tagged
        ]
        tagged = [
            f"({fl.field.tag}, {fl.field.py_name!r}, {op_of(fl)}, {self.child(fl)}, {self.default(fl.field)})"
            for fl in sorted((fl for fl in layout.fields if fl.tagged), key=lambda fl: fl.field.tag or 0)
        ]
        absent = [
            f"({fl.field.py_name!r}, {self.default(fl.field)})" for fl in layout.fields if not fl.present
        ]
        parts = ", ".join(_tuple(items) for items in (wire, tagged, absent))
        return f"({self.m.alias(name)}, {layout.flexible}, {parts})"

    def render(self, out: Emitter) -> None:
        root = self.m.spec.root.name
        for name in [*(s.name for s in self.m.spec.structs), root]:  # children are defined first
            for layout, index in self.m.plans[name].layouts.items():
                out(f"{self.name(name, index)} = {self.table(name, layout)}")
        entries = ", ".join(f"{v}: {self.name(root, i)}" for v, i in self.m.version_layout.items())
        out(f"{self.m.owner}._LAYOUTS = {{{entries}}}")


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
