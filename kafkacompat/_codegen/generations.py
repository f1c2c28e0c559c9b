"""Kafka's spec generations merged into one model with every version.

Kafka 4.x spec files drop the versions KIP-896 removed (``FetchRequest`` says
``4-18``), while a client of every broker era still needs ``Fetch`` v0-3.  So
the generator reads every generation in ``vendor/kafka-protocol``, oldest
first, each one overriding the versions it defines:

- ``spec/``: Kafka's files of October 2024 (between 3.9 and 4.0), every version
  any 3.x broker speaks;
- ``spec-4.3/message/``: Kafka's own files at the 4.3 level; and, only for the
  APIs and versions listed in ``DERIVED_USED``, ``spec-4.3/derived/`` (files
  converted from another client's definitions, not Kafka's text);
- ``spec-4.4/message/`` and ``spec-4.4/metadata/``: Kafka 4.4.0's own files,
  copied from the ``kafka-clients`` and ``kafka-metadata`` 4.4.0 jars.  Being
  the newest, they win wherever they overlap an older generation.

For every version the layout comes from the newest generation that defines
it.  A version two generations define must agree on the wire (types, order,
nullability, tags, flexibility, tagged defaults); the generator checks that
and fails with the message, version and field where they differ.  Class fields
are the union, each with the versions where the owning generation has it.
Where Kafka renamed a message (same API key) or a field (same wire position at
a version both define), the newer name is primary and the old one is kept as
an alias.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kafkacompat._codegen.spec import FieldSpec, MessageSpec, SpecError, StructSpec, load_spec, snake_case
from kafkacompat.protocol.versions import OPEN_END, VersionRange

__all__ = ["DERIVED_USED", "GenerationError", "MergedSpecs", "load_generations"]

OLD = "Kafka Oct 2024 (spec/)"
NEW = "Kafka 4.3 (spec-4.3/message/)"
DERIVED = "derived (spec-4.3/derived/)"
KAFKA_44 = "Kafka 4.4.0 (spec-4.4/)"

# Derived files used, and only at these versions.  Kafka 4.4.0's own files now
# define every API the derived files describe (the Share APIs' v1 included), so
# none is needed; the mechanism stays for an API newer than the newest Kafka
# files (each version listed must then be checked against a real broker's bytes).
DERIVED_USED: dict[str, VersionRange] = {}


class GenerationError(SpecError):
    """The generations disagree on the wire, or cannot be merged."""


@dataclass
class MergedSpecs:
    specs: list[MessageSpec]
    # old message name -> new message name (renamed between generations)
    message_aliases: dict[str, str]
    # message name -> {version: generation it was taken from}
    owners: dict[str, dict[int, str]]


def _load_dir(folder: Path) -> dict[str, MessageSpec]:
    return {s.name: s for s in (load_spec(p) for p in sorted(folder.glob("*.json")))}


_Layer = dict[str, tuple[MessageSpec, VersionRange]]


def _kafka_layer(folder: Path) -> _Layer:
    # retired APIs are kept as "validVersions": "none": nothing to take from them
    return {name: (spec, spec.valid) for name, spec in _load_dir(folder).items() if not spec.valid.empty}


def load_generations(root: Path, derived_used: dict[str, VersionRange] | None = None) -> MergedSpecs:
    old = _load_dir(root / "spec" / "message")
    if not old:
        raise SpecError(f"no specs found under {root / 'spec'}")
    new = _kafka_layer(root / "spec-4.3" / "message")
    derived = _load_dir(root / "spec-4.3" / "derived")
    chosen: _Layer = {}
    for name, versions in (DERIVED_USED if derived_used is None else derived_used).items():
        if name in new:
            raise GenerationError(f"{name}: both a Kafka 4.3 file and a derived file are selected")
        if name not in derived:
            raise GenerationError(f"{name}: no derived file")
        spec = derived[name]
        if not spec.valid.contains_range(versions):
            raise GenerationError(f"{name}: the derived file has no versions {versions}")
        chosen[name] = (spec, versions)
    layers = [(NEW, new), (DERIVED, chosen), (KAFKA_44, _kafka_layer(root / "spec-4.4" / "message"))]
    messages, aliases = _merge_layers(old, layers)
    records, _ = _merge_layers(
        _load_dir(root / "spec" / "metadata"),
        [(KAFKA_44, _kafka_layer(root / "spec-4.4" / "metadata"))],
    )
    merged = [spec for spec, _ in messages.values()] + [spec for spec, _ in records.values()]
    owners = {name: owner for name, (_, owner) in messages.items()}
    return MergedSpecs(merged, aliases, owners)


def _merge_layers(
    base: dict[str, MessageSpec], layers: list[tuple[str, _Layer]]
) -> tuple[dict[str, tuple[MessageSpec, dict[int, str]]], dict[str, str]]:
    """Apply ``layers`` (oldest first) over ``base``; return name -> (spec, owners), and the renames."""
    current = {name: (spec, dict.fromkeys(spec.versions, OLD)) for name, spec in base.items()}
    aliases: dict[str, str] = {}
    for label, layer in layers:
        by_key = {(s.api_key, s.type): name for name, (s, _) in current.items() if s.api_key is not None}
        unstable_top = {
            s.api_key: s.valid.highest
            for s, _ in current.values()
            if s.type == "request" and s.latest_unstable and s.api_key is not None
        }
        for name, (spec, versions) in sorted(layer.items()):
            earlier = by_key.get((spec.api_key, spec.type)) if spec.api_key is not None else name
            earlier = name if earlier is None else earlier
            if earlier != name:  # Kafka renamed the message: merged under its new name
                aliases[earlier] = name
                for old_name, target in list(aliases.items()):
                    if target == earlier:
                        aliases[old_name] = name
            known = current.pop(earlier, None)
            unstable = (
                {unstable_top[spec.api_key]}
                if spec.type in ("request", "response") and spec.api_key in unstable_top
                else set()
            )
            if known is None:
                current[name] = (
                    _restricted(spec, versions),
                    dict.fromkeys(range(versions.lowest, versions.highest + 1), label),
                )
            else:
                current[name] = _merge_message(known[0], known[1], spec, versions, label, unstable)
    return dict(sorted(current.items())), aliases


def _restricted(spec: MessageSpec, versions: VersionRange) -> MessageSpec:
    if versions == spec.valid:
        return spec
    return replace(spec, valid=versions)


# ------------------------------------------------------------- wire checks --


def _signature(struct: StructSpec, version: int, flexible: bool, where: str) -> list[tuple[str, Any]]:
    """The wire facts of ``struct`` at ``version``, one entry per field, with a path to report."""
    out: list[tuple[str, Any]] = []
    for f in struct.fields:
        if version not in f.versions:
            continue
        tagged = flexible and version in f.tagged
        compact = flexible if f.flexible_override is None else version in f.flexible_override
        facts: tuple[Any, ...] = (
            ("[]" if f.is_array else "") + ("struct" if f.struct else f.type),
            "nullable" if version in f.nullable else "",
            f"tag {f.tag}" if tagged else "",
            "compact" if compact else "",
            f"default {f.default!r}" if tagged else "",
        )
        out.append((f"{where}.{f.name}", facts))
        if f.struct is not None:
            out += _signature(f.struct, version, flexible, f"{where}.{f.name}")
    return out


def _compare(a: MessageSpec, a_label: str, b: MessageSpec, b_label: str, version: int) -> None:
    flex_a, flex_b = version in a.flexible, version in b.flexible
    if flex_a != flex_b:
        raise GenerationError(
            f"{b.name} v{version}: flexible in one generation only ({a_label} vs {b_label})"
        )
    sig_a = _signature(a.root, version, flex_a, a.name)
    sig_b = _signature(b.root, version, flex_b, b.name)
    for i in range(max(len(sig_a), len(sig_b))):
        fa = sig_a[i] if i < len(sig_a) else ("(nothing)", ())
        fb = sig_b[i] if i < len(sig_b) else ("(nothing)", ())
        if fa[1] != fb[1]:
            raise GenerationError(
                f"{b.name} v{version} disagrees on the wire at field #{i + 1}: "
                f"{a_label} has {fa[0]} {fa[1]}, {b_label} has {fb[0]} {fb[1]}"
            )


# ------------------------------------------------------------------ merging --


def _merge_message(
    o: MessageSpec,
    o_owner: dict[int, str],
    n: MessageSpec,
    n_versions: VersionRange,
    n_label: str,
    unstable: set[int],
) -> tuple[MessageSpec, dict[int, str]]:
    """``unstable``: the older generation's versions its request marked unstable
    (``latestVersionUnstable``).  They were no wire fact yet, so the newer file's
    layout replaces them unchecked (Kafka changed ReadShareGroupStateSummary v0
    after October 2024)."""
    owner = dict(o_owner)
    for v in range(n_versions.lowest, n_versions.highest + 1):
        if v in o.valid and v not in unstable:
            _compare(o, owner[v], n, n_label, v)
        owner[v] = n_label
    versions = sorted(owner)
    if versions != list(range(versions[0], versions[-1] + 1)):
        raise GenerationError(f"{n.name}: the generations leave a gap in the versions {versions}")
    valid = VersionRange(versions[0], versions[-1])
    new_versions = {v for v in versions if v in n_versions}
    flexible = _to_range(
        {v for v in versions if v in (n.flexible if v in new_versions else o.flexible)},
        valid,
        n.name,
        "flexible",
    )
    merger = _StructMerger(n.name, new_versions, new_versions - unstable)
    root = merger.merge(o.root, n.root, valid)
    spec = replace(
        n,
        valid=valid,
        flexible=flexible,
        deprecated=o.deprecated,
        latest_unstable=n.latest_unstable if versions[-1] in new_versions else o.latest_unstable,
        root=root,
        structs=[s for s in merger.order if s is not root],
    )
    for v in versions:  # the merged model must give each version its owner's layout
        source = n if v in new_versions else o
        _compare(source, owner[v], spec, "the merged model", v)
    return spec, owner


def _to_range(
    versions: set[int], within: VersionRange, where: str, what: str, open_end: bool = True
) -> VersionRange:
    """The one range holding exactly ``versions`` among ``within`` (open-ended if asked, at the top)."""
    if not versions:
        return VersionRange.NONE
    low, high = min(versions), max(versions)
    inside = set(range(within.lowest, within.highest + 1))
    if {v for v in inside if low <= v <= high} != versions:
        raise GenerationError(f"{where}: {what} versions {sorted(versions)} are not one range")
    if open_end and high == within.highest:
        high = OPEN_END
    return VersionRange(low, high)


class _StructMerger:
    def __init__(self, message: str, new_versions: set[int], comparable: set[int]) -> None:
        self.message = message
        self.new_versions = new_versions
        self.comparable = comparable  # versions both sides define as the same wire layout
        self.order: list[StructSpec] = []
        self.done: dict[str, StructSpec] = {}

    def merge(self, o: StructSpec | None, n: StructSpec | None, within: VersionRange) -> StructSpec:
        if n is None or o is None:  # only one generation has it: used as is
            only = n if n is not None else o
            assert only is not None
            self._adopt(only)
            return only
        if n.name in self.done:
            return self.done[n.name]
        where = f"{self.message}.{n.name}"
        renames = _field_renames(o, n, self.comparable, where)
        old_by_new = {renames.get(f.name, f.name): f for f in o.fields}
        new_by_name = {f.name: f for f in n.fields}
        names = _merged_order([renames.get(f.name, f.name) for f in o.fields], [f.name for f in n.fields])
        merged = StructSpec(n.name, [], _union(o.versions, n.versions))
        if o.name != n.name:
            merged.aliases = (*n.aliases, o.name)
        self.done[n.name] = merged
        for name in names:
            merged_field = self._merge_field(old_by_new.get(name), new_by_name.get(name), within, where)
            if not merged_field.versions.empty:  # only at versions not generated (derived v2): left out
                merged.fields.append(merged_field)
        old_names = {new: old for old, new in renames.items()}
        for f in merged.fields:
            if f.name in old_names:
                f.aliases = (snake_case(old_names[f.name]),)
        self.order.append(merged)
        return merged

    def _adopt(self, struct: StructSpec) -> None:
        if struct.name in self.done:
            if self.done[struct.name] is not struct:
                raise GenerationError(f"{self.message}: two different structs named {struct.name}")
            return
        self.done[struct.name] = struct
        for f in struct.fields:
            if f.struct is not None:
                self._adopt(f.struct)
        self.order.append(struct)

    def _pick(self, v: int, o: FieldSpec | None, n: FieldSpec | None) -> FieldSpec | None:
        return n if v in self.new_versions else o

    def _merge_field(
        self, o: FieldSpec | None, n: FieldSpec | None, within: VersionRange, where: str
    ) -> FieldSpec:
        base = n if n is not None else o
        assert base is not None
        if o is not None and n is not None and (o.type != n.type and not (o.struct and n.struct)):
            raise GenerationError(
                f"{where}.{base.name}: type {o.type} in one generation, {n.type} in the other"
            )
        if o is not None and n is not None and o.is_array != n.is_array:
            raise GenerationError(f"{where}.{base.name}: an array in one generation only")
        top = within.highest

        def versions_where(test: Callable[[FieldSpec, int], bool]) -> set[int]:
            out = set()
            for v in range(within.lowest, top + 1):
                f = self._pick(v, o, n)
                if f is not None and v in f.versions and test(f, v):
                    out.add(v)
            return out

        present = versions_where(lambda f, v: True)
        versions = (
            _to_range(present, within, f"{where}.{base.name}", "field", False)
            if present
            else VersionRange.NONE
        )
        nullable = _spread(versions_where(lambda f, v: v in f.nullable), present, within)
        tagged = _spread(versions_where(lambda f, v: v in f.tagged), present, within)
        tags = {
            f.tag
            for f in (o, n)
            if f is not None and f.tag is not None and not f.tagged.intersect(f.versions).empty
        }
        if len(tags) > 1:
            raise GenerationError(f"{where}.{base.name}: tag {sorted(tags)} differs between generations")
        override = None
        if base.flexible_override is not None:
            override = _spread(
                versions_where(lambda f, v: f.flexible_override is not None and v in f.flexible_override),
                present,
                within,
            )
        merged = replace(
            base,
            versions=versions,
            nullable=nullable,
            tagged=tagged,
            tag=next(iter(tags)) if tags else base.tag,
            ignorable=(n.ignorable if n is not None else False) or (o.ignorable if o is not None else False),
            flexible_override=override,
            aliases=(),
        )
        if base.struct is not None:
            merged.struct = self.merge(o.struct if o else None, n.struct if n else None, within)
        return merged


def _spread(hits: set[int], present: set[int], within: VersionRange) -> VersionRange:
    """A range holding ``hits`` and no other version in ``present`` (absent versions are free)."""
    if not hits:
        return VersionRange.NONE
    low, high = min(hits), max(hits)
    if any(low <= v <= high and v not in hits for v in present):
        raise GenerationError(f"versions {sorted(hits)} of {sorted(present)} are not one range")
    if high >= max(present):
        high = OPEN_END
    return VersionRange(low, high)


def _union(a: VersionRange, b: VersionRange) -> VersionRange:
    if a.empty:
        return b
    if b.empty:
        return a
    return VersionRange(min(a.lowest, b.lowest), max(a.highest, b.highest))


def _present(struct: StructSpec, version: int) -> list[FieldSpec]:
    return [f for f in struct.fields if version in f.versions]


def _field_renames(o: StructSpec, n: StructSpec, new_versions: set[int], where: str) -> dict[str, str]:
    """Old field name -> new name, for fields at the same wire position under other names."""
    renames: dict[str, str] = {}
    common = sorted(v for v in new_versions if v in o.versions and v in n.versions)
    for v in common:
        for fo, fn in zip(_present(o, v), _present(n, v), strict=False):
            if fo.name != fn.name and fo.name not in {f.name for f in n.fields}:
                known = renames.setdefault(fo.name, fn.name)
                if known != fn.name:
                    raise GenerationError(f"{where}: {fo.name} matches both {known} and {fn.name}")
    return renames


def _merged_order(old: list[str], new: list[str]) -> list[str]:
    """The new order, with old-only names placed right after the name that precedes them in the old order."""
    out = list(new)
    for i, name in enumerate(old):
        if name in out:
            continue
        before = next((old[j] for j in range(i - 1, -1, -1) if old[j] in out), None)
        out.insert(0 if before is None else out.index(before) + 1, name)
    return out


def describe_owners(owners: dict[int, str]) -> Iterable[tuple[str, VersionRange]]:
    """Consecutive runs of versions taken from one generation."""
    run: list[int] = []
    label = ""
    for v in sorted(owners):
        if run and (owners[v] != label or v != run[-1] + 1):
            yield label, VersionRange(run[0], run[-1])
            run = []
        label = owners[v]
        run.append(v)
    if run:
        yield label, VersionRange(run[0], run[-1])
