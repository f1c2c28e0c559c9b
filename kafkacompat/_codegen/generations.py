"""Two generations of Kafka's specs merged into one model with every version.

Kafka 4.x spec files drop the versions KIP-896 removed (``FetchRequest`` says
``4-18``), while a client of every broker era still needs ``Fetch`` v0-3.  So
the generator reads both generations in ``vendor/kafka-protocol``:

- ``spec/``: Kafka's files of October 2024 (between 3.9 and 4.0), every version
  any 3.x broker speaks;
- ``spec-4.3/message/``: Kafka's own files at the 4.3 level; and, only for the
  APIs and versions listed in ``DERIVED_USED``, ``spec-4.3/derived/`` (files
  converted from another client's definitions, not Kafka's text, each checked
  against a real broker's bytes by the tests).

For every version the layout comes from the newest generation that defines
it.  A version both define must agree on the wire (types, order, nullability,
tags, flexibility, tagged defaults); the generator checks that and fails with
the message, version and field where they differ.  Class fields are the union,
each with the versions where the owning generation has it.  Where Kafka renamed
a message (same API key) or a field (same wire position at a version both
define), the newer name is primary and the old one is kept as an alias.
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

# Derived files used, and only at these versions: each version here is checked
# against a real broker's bytes (the librdkafka mock answers ShareGroupHeartbeat,
# ShareFetch and ShareAcknowledge at v1) in tests/integration/test_codec_real_brokers.py.
# Every other derived API stays at its Kafka-text versions (docs/codec.md).
DERIVED_USED: dict[str, VersionRange] = {
    "ShareGroupHeartbeatRequest": VersionRange(1, 1),
    "ShareGroupHeartbeatResponse": VersionRange(1, 1),
    "ShareFetchRequest": VersionRange(1, 1),
    "ShareFetchResponse": VersionRange(1, 1),
    "ShareAcknowledgeRequest": VersionRange(1, 1),
    "ShareAcknowledgeResponse": VersionRange(1, 1),
}


class GenerationError(SpecError):
    """The two generations disagree on the wire, or cannot be merged."""


@dataclass
class MergedSpecs:
    specs: list[MessageSpec]
    # old message name -> new message name (renamed between generations)
    message_aliases: dict[str, str]
    # message name -> {version: generation it was taken from}
    owners: dict[str, dict[int, str]]


def _load_dir(folder: Path) -> dict[str, MessageSpec]:
    return {s.name: s for s in (load_spec(p) for p in sorted(folder.glob("*.json")))}


def load_generations(root: Path, derived_used: dict[str, VersionRange] | None = None) -> MergedSpecs:
    old = _load_dir(root / "spec" / "message")
    records = [load_spec(p) for p in sorted((root / "spec" / "metadata").glob("*.json"))]
    if not old:
        raise SpecError(f"no specs found under {root / 'spec'}")
    new = _load_dir(root / "spec-4.3" / "message")
    derived = _load_dir(root / "spec-4.3" / "derived")
    newer: dict[str, tuple[MessageSpec, VersionRange, str]] = {}
    for name, spec in new.items():
        if spec.valid.empty:  # retired APIs are kept as "validVersions": "none"
            continue
        newer[name] = (spec, spec.valid, NEW)
    for name, versions in (DERIVED_USED if derived_used is None else derived_used).items():
        if name in newer:
            raise GenerationError(f"{name}: both a Kafka 4.3 file and a derived file are selected")
        if name not in derived:
            raise GenerationError(f"{name}: no derived file")
        spec = derived[name]
        if not spec.valid.contains_range(versions):
            raise GenerationError(f"{name}: the derived file has no versions {versions}")
        newer[name] = (spec, versions, DERIVED)
    by_key = {(s.api_key, s.type): s.name for s in old.values() if s.api_key is not None}
    aliases: dict[str, str] = {}
    for name, (spec, _, _) in newer.items():
        old_name = by_key.get((spec.api_key, spec.type)) if spec.api_key is not None else None
        if old_name is not None and old_name != name:
            aliases[old_name] = name
    merged: list[MessageSpec] = []
    owners: dict[str, dict[int, str]] = {}
    renamed_to = set(aliases.values())
    for name in sorted(set(old) | set(newer)):
        if name in aliases:
            continue  # merged under its new name
        old_name = next((o for o, n in aliases.items() if n == name), name) if name in renamed_to else name
        o = old.get(old_name)
        if name not in newer:
            assert o is not None
            merged.append(o)
            owners[name] = dict.fromkeys(o.versions, OLD)
            continue
        n, n_versions, n_label = newer[name]
        if o is None:
            merged.append(_restricted(n, n_versions))
            owners[name] = dict.fromkeys(range(n_versions.lowest, n_versions.highest + 1), n_label)
            continue
        spec, owner = _merge_message(o, n, n_versions, n_label)
        merged.append(spec)
        owners[name] = owner
    return MergedSpecs(merged + records, aliases, owners)


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
    o: MessageSpec, n: MessageSpec, n_versions: VersionRange, n_label: str
) -> tuple[MessageSpec, dict[int, str]]:
    owner: dict[int, str] = dict.fromkeys(o.versions, OLD)
    for v in range(n_versions.lowest, n_versions.highest + 1):
        if v in o.valid:
            _compare(o, OLD, n, n_label, v)
        owner[v] = n_label
    versions = sorted(owner)
    if versions != list(range(versions[0], versions[-1] + 1)):
        raise GenerationError(f"{n.name}: the generations leave a gap in the versions {versions}")
    valid = VersionRange(versions[0], versions[-1])
    flexible = _to_range(
        {v for v in versions if v in (n.flexible if owner[v] != OLD else o.flexible)},
        valid,
        n.name,
        "flexible",
    )
    new_versions = {v for v in versions if owner[v] != OLD}
    merger = _StructMerger(n.name, new_versions)
    root = merger.merge(o.root, n.root, valid)
    spec = replace(
        n,
        valid=valid,
        flexible=flexible,
        deprecated=o.deprecated,
        latest_unstable=n.latest_unstable if owner[versions[-1]] != OLD else o.latest_unstable,
        root=root,
        structs=[s for s in merger.order if s is not root],
    )
    for v in versions:  # the merged model must give each version its owner's layout
        source = n if owner[v] != OLD else o
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
    def __init__(self, message: str, new_versions: set[int]) -> None:
        self.message = message
        self.new_versions = new_versions
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
        renames = _field_renames(o, n, self.new_versions, where)
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
