"""Readers: one straight-line function per message layout, nested structs inlined.

A message's reader reads its whole tree in one function: every nested struct
(array element or single struct) is read in place, so an element costs no
call, no tuple return and no exception frame of its own.  Each inlined struct
is a *site* with its own numbered locals (``s3_name``, ``o3``, ``end3``), which
keeps nested reads from clobbering each other.  Compact strings and counts get
an inline path for the common one-byte length; everything rarer goes to the
checked helpers in ``_wire``, which compare every length with the bytes left
before allocating anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._codegen.layout import FIXED, default_expr, fixed_runs, is_fixed_run
from kafkacompat._codegen.spec import PRIMITIVES

if TYPE_CHECKING:
    from kafkacompat._codegen.layout import FieldLayout, StructLayout
    from kafkacompat._codegen.render_messages import Emitter, MessageRenderer

SHORT_ARRAY = 32  # must match _wire.SHORT_ARRAYS


class ReaderRenderer:
    def __init__(self, message: MessageRenderer) -> None:
        self.m = message
        self.sites = 0
        self.declarations: dict[str, str] = {}
        self.peeked = False

    def render(self, out: Emitter, name: str, layout: StructLayout, index: int) -> None:
        self.sites = 0
        self.declarations = {}
        out(f"def {self.m.fn('r', name, index)}(buf: Any, pos: int) -> tuple[{self.m.cls(name)}, int]:")
        with out.block():
            body = out.child()
            result = self.struct(body, name, layout)
            for var, annotation in sorted(self.declarations.items()):
                out(f"{var}: {annotation}")
            out("try:")
            if any("buflen" in line for line in body.lines):
                out("    buflen = len(buf)")
            out.extend(body)
            out("except _wire.DECODE_FAILURES as exc:")
            with out.block():
                out(f'raise DecodeError(f"cannot read {name}: {{exc}}", offset=pos) from None')
            out(f"return {result}, pos")
        out()
        out()

    # -- one struct, read in place ---------------------------------------------------------

    def struct(self, out: Emitter, name: str, layout: StructLayout) -> str:
        """Emit the reading of one struct; return the local holding the built object."""
        self.sites += 1
        site = self.sites
        prefix = f"s{site}_"
        regular = [fl for fl in layout.fields if fl.present and not fl.tagged]
        runs = list(fixed_runs(regular))
        # With nothing known to tag, the tag count byte rides on the last fixed run.
        fold = (
            layout.flexible
            and not any(fl.tagged for fl in layout.fields)
            and bool(runs)
            and is_fixed_run(runs[-1])
        )
        for number, run in enumerate(runs, 1):
            if fold and number == len(runs):
                self.run(out, run, prefix, tag_byte=f"t{site}")
            else:
                after = runs[number] if number < len(runs) else None
                self.run(out, run, prefix, peek=self.peek_name(after))
        if layout.flexible:
            self.declarations[f"u{site}"] = "tuple[tuple[int, bytes], ...]"
            self.tags(out, layout, prefix, site, folded=fold)
        obj = f"o{site}"
        out(f"{obj} = _new({self.m.alias(name)})")
        for fl in layout.fields:
            f = fl.field
            value = f"{prefix}{f.py_name}" if fl.present else default_expr(f, self.m.owner)
            out(f"{obj}.{f.py_name} = {value}")
        out(f"{obj}._unknown_tags = {f'u{site}' if layout.flexible else '_NO_TAGS'}")
        return obj

    @staticmethod
    def peek_name(run: list[FieldLayout] | None) -> str | None:
        """The local that a compact string or number array after a fixed run reads its first byte into.

        That byte (the length or count) is unpacked with the fixed run before it,
        saving an index of the buffer; the run's ``pos`` stays before it.
        """
        if run is None or is_fixed_run(run):
            return None
        f = run[0].field
        if not run[0].compact or f.struct is not None:
            return None
        if f.type == "string" and not f.is_array:
            return "size"
        if f.is_array and f.type in FIXED and f.type != "bool":
            return "c"
        return None

    def run(
        self,
        out: Emitter,
        run: list[FieldLayout],
        prefix: str,
        tag_byte: str | None = None,
        peek: str | None = None,
    ) -> None:
        if is_fixed_run(run):
            codes = "".join(PRIMITIVES[fl.field.type][0] or "" for fl in run)
            width = sum(PRIMITIVES[fl.field.type][1] for fl in run)
            names = [f"{prefix}{fl.field.py_name}" for fl in run]
            if tag_byte is not None:
                codes, width, names = codes + "B", width + 1, [*names, tag_byte]
            elif peek is not None:
                codes, names = codes + "B", [*names, peek]
                self.peeked = True
            out(f"({', '.join(names)},) = {out.fmt(codes)}.unpack_from(buf, pos)")
            out(f"pos += {width}")
            return
        self.one(out, run[0], prefix)

    def take_peeked(self) -> bool:
        """Whether the byte at ``pos`` was already read by the fixed run before (and forget it)."""
        peeked, self.peeked = self.peeked, False
        return peeked

    def one(self, out: Emitter, fl: FieldLayout, prefix: str) -> None:
        f = fl.field
        target = f"{prefix}{f.py_name}"
        if f.is_array:
            self._declare(target, "list[Any]", fl)
            opened = self.counted_numbers(out, fl, target)
            self.count(out, fl.compact)
            out("if n < 0:")
            with out.block():
                out(f"{target} = None" if fl.nullable else f'raise _wire.null_error("{f.py_name}", pos)')
            out("else:")
            with out.block():
                self.elements(out, fl, target)
            if opened:
                out.indent -= 1
            return
        if f.struct is not None:
            assert fl.child is not None
            self._declare(target, f"{self.m.owner}.{f.struct.name}", fl)
            if fl.nullable:
                out("(flag,) = _wire.INT8.unpack_from(buf, pos)")
                out("pos += 1")
                out("if flag < 0:")
                with out.block():
                    out(f"{target} = None")
                out("else:")
                with out.block():
                    out(f"{target} = {self.struct(out, f.struct.name, fl.child)}")
            else:
                out(f"{target} = {self.struct(out, f.struct.name, fl.child)}")
            return
        if f.type in FIXED:
            self.run(out, [fl], prefix)
            return
        if f.type == "uuid":
            self.uuid(out, target)
            return
        if f.type == "string":
            if fl.nullable:
                self.declarations[target] = "str | None"
            if fl.compact:
                self.compact_string(out, target, f.py_name, fl.nullable, peeked=self.take_peeked())
            else:
                self.classic_string(out, target, f.py_name, fl.nullable)
            return
        out(f"{target}, pos = {self.scalar_reader(f.type, fl.compact)}(buf, pos)")
        if f.type in ("string", "bytes", "records") and not fl.nullable:
            out(f"if {target} is None:")
            with out.block():
                out(f'raise _wire.null_error("{f.py_name}", pos)')

    def counted_numbers(self, out: Emitter, fl: FieldLayout, target: str) -> bool:
        """A short compact array of numbers, its count byte and values read by one format.

        For a count byte ``c`` (``c - 1`` elements) below ``SHORT_ARRAY``, ``_K_<code>[c]``
        skips the byte and unpacks the values; a short buffer fails inside ``unpack_from``
        (a ``DecodeError`` at this offset), and nothing is allocated before that.  Other
        counts (null, long, varint) take the general path, which this opens as an ``else``.
        """
        f = fl.field
        if not fl.compact or f.struct is not None or f.type not in FIXED or f.type == "bool":
            return False
        code, width = PRIMITIVES[f.type][0], PRIMITIVES[f.type][1]
        if not self.take_peeked():
            out("c = buf[pos]")
        out("if c == 1:  # empty (offline replicas, mostly): no unpack")
        with out.block():
            out(f"{target} = []")
            out("pos += 1")
        out(f"elif 0 < c <= {SHORT_ARRAY}:")
        with out.block():
            out(f"{target} = [*_K_{code}[c].unpack_from(buf, pos)]")
            out(f"pos += {width} * c - {width - 1}" if width > 1 else "pos += c")
        out("else:")
        out.indent += 1
        return True

    def _declare(self, var: str, base: str, fl: FieldLayout) -> None:
        nullable = fl.nullable or fl.field.default == "null"
        self.declarations[var] = f"{base} | None" if nullable else base

    @staticmethod
    def scalar_reader(kind: str, compact: bool) -> str:
        if kind in ("string", "bytes", "records"):
            base = "string" if kind == "string" else "bytes"
            return f"_wire.read_compact_{base}" if compact else f"_wire.read_{base}"
        readers = {"uuid": "_wire.read_uuid", "varint": "_wire.read_varint", "varlong": "_wire.read_varlong"}
        return readers[kind]

    @staticmethod
    def count(out: Emitter, compact: bool) -> None:
        """Leave the array count in ``n`` (-1 for null)."""
        if not compact:
            out("n, pos = _wire.read_array_count(buf, pos)")
            return
        # A one-byte count is at most 126 elements: bounded without the room check.
        out("n = buf[pos] - 1")
        out("if n < 0x7F:")
        with out.block():
            out("pos += 1")
        out("else:")
        with out.block():
            out("n, pos = _wire.read_compact_array_count(buf, pos)")

    @staticmethod
    def uuid(out: Emitter, target: str) -> None:
        """16 bytes as a ``uuid.UUID``, its two slots set directly (as ``UUID.__init__`` does)."""
        out("stop = pos + 16")
        out("if stop > buflen:")
        with out.block():
            out('raise DecodeError("uuid runs past the end of the data", offset=pos)')
        out(f"{target} = _new(_UUID)")
        out(f'_set({target}, "int", _from_bytes(buf[pos:stop]))')
        out(f'_set({target}, "is_safe", _UUID_SAFE)')
        out("pos = stop")

    @staticmethod
    def compact_string(out: Emitter, target: str, field: str, nullable: bool, peeked: bool = False) -> None:
        if not peeked:
            out("size = buf[pos]")
        out("if 0 < size < 0x80:")
        with out.block():
            out("stop = pos + size")
            out("if stop > buflen:")
            with out.block():
                out('raise DecodeError(f"string of {size - 1} bytes runs past the end", offset=pos)')
            out(f"{target} = buf[pos + 1 : stop].decode()")
            out("pos = stop")
        if nullable:  # a null is one zero byte: common enough (error messages, racks) to read here
            out("elif size == 0:")
            with out.block():
                out(f"{target} = None")
                out("pos += 1")
        out("else:")
        with out.block():
            if nullable:
                out(f"{target}, pos = _wire.read_compact_string(buf, pos)")
            else:
                out(f'{target}, pos = _wire.read_compact_text(buf, pos, "{field}")')

    @staticmethod
    def classic_string(out: Emitter, target: str, field: str, nullable: bool) -> None:
        """An int16-length string: lengths below 0x8000 inline, null and bad lengths in ``_wire``."""
        out("size = buf[pos] << 8 | buf[pos + 1]")
        out("if size < 0x8000:")
        with out.block():
            out("stop = pos + 2 + size")
            out("if stop > buflen:")
            with out.block():
                out('raise DecodeError(f"string of {size} bytes runs past the end", offset=pos)')
            out(f"{target} = buf[pos + 2 : stop].decode()")
            out("pos = stop")
        out("else:")
        with out.block():
            out(f"{target}, pos = _wire.read_string(buf, pos)")
            if not nullable:
                out(f"if {target} is None:")
                with out.block():
                    out(f'raise _wire.null_error("{field}", pos)')

    def elements(self, out: Emitter, fl: FieldLayout, target: str) -> None:
        f = fl.field
        if f.struct is not None:
            assert fl.child is not None
            new_list = "_wire.KeyedList()" if f.struct.map_key else "[]"
            self.sites += 1
            append = f"add{self.sites}"
            fast = self.fixed_elements(out, fl.child, target, new_list, append)
            out(f"{target} = {new_list}")
            out(f"{append} = {target}.append")
            out("for _ in range(n):")
            with out.block():
                item = self.struct(out, f.struct.name, fl.child)
                out(f"{append}({item})")
            if fast is not None:
                out.indent -= 1
            return
        if f.type in FIXED and f.type != "bool":
            code, width = PRIMITIVES[f.type][0], PRIMITIVES[f.type][1]
            # Precompiled formats for the short arrays that dominate (replicas, ISRs).
            out(f"stop = pos + {width} * n")
            out(f"if n < {SHORT_ARRAY} and stop <= buflen:")
            with out.block():
                out(f"{target} = [*_A_{code}[n].unpack_from(buf, pos)]")
                out("pos = stop")
            out("else:")
            with out.block():
                out(f'{target}, pos = _wire.read_int_array(buf, pos, n, "{code}", {width})')
            return
        out(f"{target} = []")
        self.sites += 1
        append = f"add{self.sites}"
        out(f"{append} = {target}.append")
        out("for _ in range(n):")
        with out.block():
            if f.type == "bool":
                out("(item,) = _wire.BOOL.unpack_from(buf, pos)")
                out("pos += 1")
            elif f.type == "string" and fl.compact:
                self.compact_string(out, "item", f"{f.py_name}[]", nullable=False)
            else:
                out(f"item, pos = {self.scalar_reader(f.type, fl.compact)}(buf, pos)")
                if f.type in ("string", "bytes"):
                    out("if item is None:")
                    with out.block():
                        out(f'raise _wire.null_error("{f.py_name}[]", pos)')
            out(f"{append}(item)")
        self.declarations["item"] = "Any"

    def fixed_elements(
        self, out: Emitter, child: StructLayout, target: str, new_list: str, append: str
    ) -> str | None:
        """Elements made of fixed-width fields only: one ``iter_unpack`` over the lot.

        Taken when every element's tag count byte is zero (the usual case);
        otherwise the general loop below reads the elements one by one.  The
        caller's general loop is emitted inside the ``if`` this opens.
        """
        present = [fl for fl in child.fields if fl.present]
        if not present or any(fl.tagged or not is_fixed_run([fl]) for fl in present):
            return None
        codes = "".join(PRIMITIVES[fl.field.type][0] or "" for fl in present)
        width = sum(PRIMITIVES[fl.field.type][1] for fl in present)
        if child.flexible:
            codes, width = codes + "B", width + 1
        self.sites += 1
        site = self.sites
        names = [f"s{site}_{fl.field.py_name}" for fl in present]
        row = [*names, f"t{site}"] if child.flexible else names
        out(f"stop{site} = pos + {width} * n")
        out(f"{target} = {new_list}")
        out(f"{append} = {target}.append")
        out(f"if stop{site} <= buflen:")
        with out.block():
            out(f"for ({', '.join(row)},) in {out.fmt(codes)}.iter_unpack(buf[pos:stop{site}]):")
            with out.block():
                if child.flexible:
                    out(f"if t{site}:")
                    with out.block():
                        out("break")
                obj = f"o{site}"
                out(f"{obj} = _new({self.m.alias(child.struct_name)})")
                for fl, name in zip(present, names, strict=True):
                    out(f"{obj}.{fl.field.py_name} = {name}")
                for fl in child.fields:
                    if not fl.present:
                        out(f"{obj}.{fl.field.py_name} = {default_expr(fl.field, self.m.owner)}")
                out(f"{obj}._unknown_tags = _NO_TAGS")
                out(f"{append}({obj})")
            out("else:")
            with out.block():
                out(f"pos = stop{site}")
                out(f"stop{site} = -1")
        out(f"if stop{site} >= 0:  # some element carries tags, or the data is short")
        out.indent += 1
        return obj

    def tags(self, out: Emitter, layout: StructLayout, prefix: str, site: int, folded: bool = False) -> None:
        tagged = sorted((fl for fl in layout.fields if fl.tagged), key=lambda fl: fl.field.tag or 0)
        for fl in tagged:
            f = fl.field
            if f.is_array:
                self._declare(f"{prefix}{f.py_name}", "list[Any]", fl)
            elif f.struct is not None:
                self._declare(f"{prefix}{f.py_name}", f"{self.m.owner}.{f.struct.name}", fl)
            out(f"{prefix}{fl.field.py_name} = {default_expr(fl.field, self.m.owner)}")
        unknown, end = f"u{site}", f"end{site}"
        out(f"{unknown} = _NO_TAGS")
        if folded:  # the count byte was read with the fixed fields: step back to it
            out(f"if t{site}:")
            opened = out.block()
        else:
            out("if buf[pos] == 0:")
            with out.block():
                out("pos += 1")
            out("else:")
            opened = out.block()
        with opened:
            if folded:
                out("pos -= 1")
            # Held to Kafka's limit before the loop; unknown fields gathered in a list, since
            # growing a tuple one field at a time is quadratic in a hostile section's size.
            out(f"count{site}, pos = _wire.read_tag_count(buf, pos)")
            out(f"seen{site}: list[tuple[int, bytes]] = []")
            out(f"for _ in range(count{site}):")
            with out.block():
                out(f"tag{site}, pos, {end} = _wire.read_tag_header(buf, pos)")
                keyword = "if"
                for fl in tagged:
                    out(f"{keyword} tag{site} == {fl.field.tag}:")
                    keyword = "elif"
                    with out.block():
                        self.one(out, fl, prefix)
                        out(f"if pos != {end}:")
                        with out.block():
                            out(
                                f'raise DecodeError(f"tagged field {fl.field.tag} should end at byte '
                                f'{{{end}}} but its value ends at {{pos}}", offset=pos)'
                            )
                if tagged:
                    out("else:")
                    with out.block():
                        out(f"seen{site}.append((tag{site}, bytes(buf[pos:{end}])))")
                        out(f"pos = {end}")
                else:
                    out(f"seen{site}.append((tag{site}, bytes(buf[pos:{end}])))")
                    out(f"pos = {end}")
            out(f"if seen{site}:")
            with out.block():
                out(f"{unknown} = tuple(seen{site})")
