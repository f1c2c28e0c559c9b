"""KIP-584 feature levels: names, dependencies, finalized state, and finalize checks.

Theory.  KIP-584 turns cluster-wide behaviour on by *finalizing* a feature at a
level (metadata.version 21, kraft.version 1, ...).  Every broker advertises the
levels it supports, and the controller records the finalized levels together
with an epoch that grows on every change; brokers echo the finalized levels and
the epoch they last saw (-1 when they do not know).  What follows from that:

- A level can be finalized only if every broker supports it.  A broker that
  does not list a feature supports level 0 only (Kafka's rule), so it blocks
  any upgrade of that feature but never a disable.
- Levels depend on other features (kraft.version 1 needs metadata.version 21).
  Dependencies are checked against the state after the change (finalized
  levels overridden by the targets), both ways: the targets' own dependencies,
  and features already finalized that depend on a feature being lowered.
- Brokers learn of changes at different times, so their answers disagree.  The
  highest epoch is the newest state and an older epoch never overwrites it;
  the merge is a commutative fold (per node, then overall), so the order in
  which answers arrive cannot change the result.  Lagging nodes are reported.
- Lowering metadata.version across a level that changed the metadata format
  loses information (an unsafe downgrade); otherwise it is safe.  The other
  features record no such flag, so lowering them counts as safe, which is what
  kafka-features does by default.  Level 0 disables a feature.

Pure data in, data out: no I/O, no clock.  Names come from the generated
``kafkacompat.reference`` table, so this module never reads the vendored inputs.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from kafkacompat.errors import FeatureError
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.features import FEATURES, FeatureLevelFact

__all__ = [
    "CATALOG",
    "METADATA_VERSION",
    "UNKNOWN_EPOCH",
    "BlockingBroker",
    "BlockingDependency",
    "BrokerFeatures",
    "ChangeKind",
    "FeatureCatalog",
    "FeatureChange",
    "FeatureLevel",
    "FinalizeVerdict",
    "FinalizedObservation",
    "FinalizedView",
    "StaleObservation",
    "SupportsFeatures",
    "can_finalize",
    "can_finalize_all",
    "classify_change",
    "max_safe_level",
    "merge_finalized",
    "supported_levels",
]

METADATA_VERSION = "metadata.version"
UNKNOWN_EPOCH = -1
_UNLISTED = VersionRange(0, 0)  # what a broker that does not list a feature supports


def supported_levels(feature: str, listed: VersionRange | None) -> VersionRange:
    """The levels a broker supports, from the range it lists (``None``: not listed).

    Every feature but metadata.version can be disabled (level 0). Kafka lists
    those with minimum 0, except an interim 3.x broker fix that rewrote the 0 to
    1 for old clients (KAFKA-17011): both forms mean "0 and up".
    """
    if listed is None:
        return _UNLISTED
    if feature != METADATA_VERSION and listed.lowest == 1:
        return VersionRange(0, listed.highest)
    return listed


# -- the catalog: names and dependencies --------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeatureLevel:
    """One known level of a feature and what it needs from other features."""

    feature: str
    level: int
    requires: Mapping[str, int] = field(default_factory=dict, hash=False)
    release: str | None = None
    iv: str | None = None
    metadata_changed: bool | None = None
    bootstrap_metadata_version: int | None = None

    @property
    def version_name(self) -> str | None:
        """Kafka's name for a metadata.version level, e.g. ``"3.9-IV0"``."""
        return f"{self.release}-{self.iv}" if self.release and self.iv else None

    def __str__(self) -> str:
        name = self.version_name
        return f"{self.feature} {self.level}" + (f" ({name})" if name else "")


class FeatureCatalog:
    """Lookup over the feature levels Kafka defines (the generated reference table)."""

    def __init__(self, table: Mapping[str, Sequence[FeatureLevelFact]] = FEATURES) -> None:
        self._levels: dict[str, dict[int, FeatureLevel]] = {
            name: {
                f.level: FeatureLevel(name, f.level, MappingProxyType(dict(f.requires)), f.release,
                                      f.iv, f.metadata_changed, f.bootstrap_metadata_version)
                for f in facts
            }
            for name, facts in table.items()
        }
        self._by_version_name: dict[str, int] = {}
        for level in self._levels.get(METADATA_VERSION, {}).values():
            if level.version_name and level.release:
                self._by_version_name[level.version_name] = level.level
                # A bare release means its latest IV, as --release-version reads it (Kafka
                # takes the latest *production* IV; every IV in the table has shipped).
                latest = self._by_version_name.get(level.release, level.level)
                self._by_version_name[level.release] = max(latest, level.level)

    def levels(self, feature: str) -> tuple[FeatureLevel, ...]:
        if feature not in self._levels:
            raise FeatureError(f"unknown feature {feature!r}; known: {', '.join(sorted(self._levels))}")
        return tuple(sorted(self._levels[feature].values(), key=lambda lv: lv.level))

    def get(self, feature: str, level: int) -> FeatureLevel | None:
        return self._levels.get(feature, {}).get(level)

    def dependencies(self, feature: str, level: int) -> Mapping[str, int]:
        """Minimum levels of other features that ``feature`` at ``level`` needs ({} if none known)."""
        known = self.get(feature, level)
        return known.requires if known is not None else MappingProxyType({})

    def describe(self, feature: str, level: int) -> str:
        known = self.get(feature, level)
        return str(known) if known is not None else f"{feature} {level}"

    def metadata_version_name(self, level: int) -> str:
        known = self.get(METADATA_VERSION, level)
        if known is None or known.version_name is None:
            raise FeatureError(f"unknown metadata.version level {level}")
        return known.version_name

    def metadata_version_level(self, name: str) -> int:
        """``"3.9-IV0"`` -> 21; ``"3.9"`` -> the latest IV of 3.9; ``"21"`` -> 21."""
        text = name.strip()
        if text.isdigit() and self.get(METADATA_VERSION, int(text)) is not None:
            return int(text)
        if text in self._by_version_name:
            return self._by_version_name[text]
        known = self.levels(METADATA_VERSION)
        raise FeatureError(
            f"unknown metadata.version {name!r}; known: "
            f"{known[0].version_name} to {known[-1].version_name}"
        )


CATALOG = FeatureCatalog()


# -- merging finalized features seen from several brokers ---------------------------------


@dataclass(frozen=True, slots=True)
class FinalizedObservation:
    """The finalized features one node answered, with the epoch it answered them at."""

    node: str
    epoch: int
    features: Mapping[str, VersionRange] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.epoch, int) or self.epoch < UNKNOWN_EPOCH:
            raise FeatureError(f"finalized epoch must be -1 (unknown) or more: {self.epoch!r}")
        for name, versions in self.features.items():
            if not isinstance(versions, VersionRange):
                raise FeatureError(f"finalized {name!r} must be a VersionRange: {versions!r}")
        object.__setattr__(self, "features", MappingProxyType(dict(self.features)))


def _precedence(observation: FinalizedObservation) -> tuple[int, tuple[tuple[str, int, int], ...]]:
    # Epoch first; the contents only break ties, so that two answers with the
    # same epoch but different features still merge the same in any order.
    contents = sorted((n, v.lowest, v.highest) for n, v in observation.features.items())
    return (observation.epoch, tuple(contents))


@dataclass(frozen=True, slots=True)
class StaleObservation:
    """A node whose newest answer is older than the cluster's newest epoch."""

    node: str
    epoch: int
    newest_epoch: int


@dataclass(frozen=True, slots=True)
class FinalizedView:
    """The cluster's finalized features as best known; immutable, grown by ``observe``."""

    epoch: int = UNKNOWN_EPOCH
    features: Mapping[str, VersionRange] = field(default_factory=dict, hash=False)
    sources: tuple[str, ...] = ()  # nodes that answered exactly this state
    stale: tuple[StaleObservation, ...] = ()
    conflicts: tuple[str, ...] = ()  # same newest epoch, different features
    unknown_epoch: tuple[str, ...] = ()  # nodes that answered epoch -1
    newest_by_node: Mapping[str, FinalizedObservation] = field(default_factory=dict, hash=False)

    def observe(self, observation: FinalizedObservation) -> FinalizedView:
        """A new view that also knows ``observation``; an older answer never wins."""
        by_node = dict(self.newest_by_node)
        held = by_node.get(observation.node)
        if held is None or _precedence(observation) > _precedence(held):
            by_node[observation.node] = observation
        return _view_of(by_node)

    @property
    def levels(self) -> dict[str, int]:
        """Finalized level per feature (the range's highest, as Kafka reports it)."""
        return {name: versions.highest for name, versions in self.features.items()}

    def level(self, feature: str) -> int:
        """The finalized level of ``feature``; 0 when it is not finalized."""
        versions = self.features.get(feature)
        return versions.highest if versions is not None else 0


def merge_finalized(
    observations: Iterable[FinalizedObservation], view: FinalizedView | None = None
) -> FinalizedView:
    """Fold ``observations`` into ``view`` (or an empty one); the order does not matter."""
    merged = view if view is not None else FinalizedView()
    for observation in observations:
        merged = merged.observe(observation)
    return merged


def _view_of(by_node: Mapping[str, FinalizedObservation]) -> FinalizedView:
    if not by_node:
        return FinalizedView()
    newest = max(by_node.values(), key=_precedence)
    same_epoch = [obs for obs in by_node.values() if obs.epoch == newest.epoch]
    stale = [
        StaleObservation(obs.node, obs.epoch, newest.epoch)
        for obs in by_node.values()
        if UNKNOWN_EPOCH < obs.epoch < newest.epoch
    ]
    return FinalizedView(
        epoch=newest.epoch,
        features=dict(newest.features),
        sources=tuple(sorted(o.node for o in same_epoch if o.features == newest.features)),
        stale=tuple(sorted(stale, key=lambda s: s.node)),
        conflicts=tuple(sorted(o.node for o in same_epoch if o.features != newest.features)),
        unknown_epoch=tuple(sorted(o.node for o in by_node.values() if o.epoch == UNKNOWN_EPOCH)),
        newest_by_node=dict(sorted(by_node.items())),
    )


# -- can a level be finalized? ------------------------------------------------------------


class SupportsFeatures(Protocol):
    """A broker as far as features go: its node and the feature levels it supports."""

    @property
    def node(self) -> str: ...

    @property
    def supported_features(self) -> Mapping[str, VersionRange]: ...


@dataclass(frozen=True, slots=True)
class BrokerFeatures:
    """A plain ``SupportsFeatures``."""

    node: str
    supported_features: Mapping[str, VersionRange] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class BlockingBroker:
    """A broker that does not support a target level; unlisted features support 0 only."""

    node: str
    feature: str
    level: int
    supported: VersionRange
    listed: bool


@dataclass(frozen=True, slots=True)
class BlockingDependency:
    """``required_by`` at ``required_by_level`` needs ``feature`` >= ``needed_level``."""

    feature: str
    needed_level: int
    current_level: int  # the level ``feature`` would have after the change
    required_by: str
    required_by_level: int


@dataclass(frozen=True, slots=True)
class FinalizeVerdict:
    """Whether the targets can be finalized, and every reason they cannot."""

    targets: Mapping[str, int] = field(hash=False)
    blocking_brokers: tuple[BlockingBroker, ...]
    blocking_dependencies: tuple[BlockingDependency, ...]
    reason: str

    @property
    def ok(self) -> bool:
        return not self.blocking_brokers and not self.blocking_dependencies

    def __bool__(self) -> bool:
        return self.ok


def can_finalize(
    feature: str,
    level: int,
    brokers: Sequence[SupportsFeatures],
    *,
    finalized: Mapping[str, int] | None = None,
    catalog: FeatureCatalog = CATALOG,
) -> FinalizeVerdict:
    """Can ``feature`` be finalized at ``level`` on a cluster of ``brokers``?"""
    return can_finalize_all({feature: level}, brokers, finalized=finalized, catalog=catalog)


def can_finalize_all(
    targets: Mapping[str, int],
    brokers: Sequence[SupportsFeatures],
    *,
    finalized: Mapping[str, int] | None = None,
    catalog: FeatureCatalog = CATALOG,
) -> FinalizeVerdict:
    """Can all ``targets`` be finalized together?  ``finalized``: the levels now (None: none)."""
    _check_request(targets, brokers)
    blocking_brokers = [
        BlockingBroker(broker.node, name, level, supported, name in broker.supported_features)
        for name, level in sorted(targets.items())
        for broker in brokers
        if level not in (supported := supported_levels(name, broker.supported_features.get(name)))
    ]
    after = {**(finalized or {}), **targets}
    blocking_dependencies = [
        BlockingDependency(needed, minimum, after.get(needed, 0), name, level)
        for name, level in sorted(after.items())
        if level > 0
        for needed, minimum in sorted(catalog.dependencies(name, level).items())
        if after.get(needed, 0) < minimum and (name in targets or needed in targets)
    ]
    blockers = [_broker_reason(b, catalog) for b in blocking_brokers]
    blockers += [_dependency_reason(d, catalog) for d in blocking_dependencies]
    subject = " and ".join(catalog.describe(n, lv) for n, lv in sorted(targets.items()))
    reason = (
        f"{subject} cannot be finalized: {'; '.join(blockers)}."
        if blockers
        else f"{subject} can be finalized: all {len(brokers)} broker(s) support it"
        " and every dependency is met."
    )
    return FinalizeVerdict(dict(targets), tuple(blocking_brokers), tuple(blocking_dependencies), reason)


def max_safe_level(
    feature: str,
    brokers: Sequence[SupportsFeatures],
    finalized: Mapping[str, int] | None = None,
    *,
    catalog: FeatureCatalog = CATALOG,
) -> int | None:
    """The highest level of ``feature`` every broker supports with dependencies met, or None."""
    if not brokers:
        raise FeatureError("no brokers given: nothing to check support against")
    common = VersionRange.ALL
    for broker in brokers:
        common &= supported_levels(feature, broker.supported_features.get(feature))
    lowest = max(common.lowest, 1 if feature == METADATA_VERSION else 0)
    for level in range(common.highest, lowest - 1, -1):
        if can_finalize(feature, level, brokers, finalized=finalized, catalog=catalog):
            return level
    return None


def _check_request(targets: Mapping[str, int], brokers: Sequence[SupportsFeatures]) -> None:
    if not targets:
        raise FeatureError("no feature levels given")
    if not brokers:
        raise FeatureError("no brokers given: nothing to check support against")
    for name, level in targets.items():
        if not isinstance(level, int) or level < 0:
            raise FeatureError(f"{name} level must be 0 or more: {level!r}")
        if name == METADATA_VERSION and level == 0:
            raise FeatureError("metadata.version cannot be disabled (level 0)")


def _describe_range(feature: str, versions: VersionRange, catalog: FeatureCatalog) -> str:
    names = [catalog.get(feature, v) for v in (versions.lowest, versions.highest)]
    labels = [known.version_name for known in names if known is not None and known.version_name]
    suffix = f" ({' to '.join(dict.fromkeys(labels))})" if len(labels) == 2 else ""
    return f"{versions}{suffix}"


def _broker_reason(blocker: BlockingBroker, catalog: FeatureCatalog) -> str:
    if not blocker.listed:
        return f"broker {blocker.node} does not list {blocker.feature}, so supports level 0 only"
    supported = _describe_range(blocker.feature, blocker.supported, catalog)
    return f"broker {blocker.node} supports {blocker.feature} {supported} only"


def _dependency_reason(blocker: BlockingDependency, catalog: FeatureCatalog) -> str:
    if blocker.current_level == 0:
        outcome = f"{blocker.feature} would not be finalized (level 0)"
    else:
        label = catalog.describe(blocker.feature, blocker.current_level)
        outcome = f"{blocker.feature} would be {label.removeprefix(blocker.feature + ' ')}"
    return (
        f"{catalog.describe(blocker.required_by, blocker.required_by_level)} requires "
        f"{catalog.describe(blocker.feature, blocker.needed_level)} or higher, but {outcome}"
    )


# -- classifying a change, for building UpdateFeatures --------------------------------------


class ChangeKind(enum.Enum):
    UNCHANGED = "unchanged"
    UPGRADE = "upgrade"
    SAFE_DOWNGRADE = "safe_downgrade"
    UNSAFE_DOWNGRADE = "unsafe_downgrade"
    DISABLE = "disable"


# UpdateFeatures' upgradeType values (KIP-778); unchanged is sent as an upgrade.
_UPGRADE_TYPES = {
    ChangeKind.UNCHANGED: 1, ChangeKind.UPGRADE: 1, ChangeKind.SAFE_DOWNGRADE: 2,
    ChangeKind.UNSAFE_DOWNGRADE: 3, ChangeKind.DISABLE: 2,
}


@dataclass(frozen=True, slots=True)
class FeatureChange:
    """Moving ``feature`` from its finalized ``current`` level to ``target``."""

    feature: str
    current: int
    target: int
    kind: ChangeKind
    # metadata.version levels above the target whose metadata format changed (or
    # that we do not know, so cannot vouch for): what makes a downgrade unsafe.
    format_changes: tuple[int, ...] = ()

    @property
    def upgrade_type(self) -> int:
        """The UpdateFeatures upgradeType for this change (1, 2 or 3)."""
        return _UPGRADE_TYPES[self.kind]


def classify_change(
    feature: str, current: int, target: int, *, catalog: FeatureCatalog = CATALOG
) -> FeatureChange:
    """Classify ``target`` against the ``current`` finalized level (0: not finalized)."""
    if current < 0 or target < 0:
        raise FeatureError(f"{feature} levels must be 0 or more: {current} -> {target}")
    if target == current:
        return FeatureChange(feature, current, target, ChangeKind.UNCHANGED)
    if target > current:
        return FeatureChange(feature, current, target, ChangeKind.UPGRADE)
    if target == 0:
        if feature == METADATA_VERSION:
            raise FeatureError("metadata.version cannot be disabled (level 0)")
        return FeatureChange(feature, current, target, ChangeKind.DISABLE)
    if feature != METADATA_VERSION:
        return FeatureChange(feature, current, target, ChangeKind.SAFE_DOWNGRADE)
    changed = tuple(
        level
        for level in range(target + 1, current + 1)
        if (known := catalog.get(feature, level)) is None or known.metadata_changed is not False
    )
    kind = ChangeKind.UNSAFE_DOWNGRADE if changed else ChangeKind.SAFE_DOWNGRADE
    return FeatureChange(feature, current, target, kind, changed)
