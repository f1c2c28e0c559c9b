"""What one emulated broker is: its release, kind, API ranges and KIP-584 features.

Theory.  A Kafka broker is known to a client only through what it answers, and
what it answers follows from three facts about its release:

- The API table: per API key, the (min, max) versions it accepts.  For Apache
  releases this is the packaged reference table (``RELEASES``), per kind:
  ZooKeeper broker (0.8.0-3.9), KRaft broker and KRaft controller (2.8-4.4; the
  4.3 and 4.4 tables are what real 4.3.1 and 4.4.0 nodes answered).
- The ApiVersions era, which decides what happens to an ApiVersions request
  the broker cannot read (see ``ApiVersionsEra``).  It follows from the
  broker's own ApiVersions range: no key 18 means no ApiVersions at all
  (before 0.10, KIP-35); a max below 3 means the 0.10-2.3 behaviour; 3 or more
  means KIP-511 (2.4).  Without key 18 the release decides what an unknown
  api key does, as observed on a real 0.9.0.1 and read in 0.8.x's source:
  0.9 answers nothing and keeps serving the connection (its request handler
  skips what it cannot handle), 0.8 closes it (its socket server fails to
  parse the request).  Custom tables get the era their key 18 implies, and
  the closing one when they have none.
- The features (KIP-584).  A broker lists a feature as supported from 0 (from
  the first KRaft metadata.version for metadata.version) to its *latest
  production level*, and leaves out features whose latest production level is
  0 (Kafka's ``BrokerFeatures.defaultSupportedFeatures``).  A release's latest
  production metadata.version is its newest IV (3.9 -> 21, 3.9-IV0); any other
  feature level is production once the metadata.version it is bootstrapped
  with is (``Feature.defaultValue``).  metadata.version became a feature in 3.3
  (KIP-778): earlier releases list nothing.  From 4.0 the lowest
  metadata.version a broker accepts is 3.3-IV3 (7); before, 3.0-IV1 (1).  A
  fresh KRaft cluster finalizes metadata.version at its latest level and every
  other feature at its bootstrapped default (kraft.version stays 0: a static
  quorum).  Some levels are supported a release before they are bootstrapped
  (eligible.leader.replicas.version 1 in 4.0, share.version 1 in 4.1): listed,
  left at 0 by a fresh cluster.  A ZooKeeper broker lists no feature at all,
  metadata.version included, and finalizes nothing: the feature znode is empty
  (all three read from the real releases, ``make real-kafka``).
  Brokers report finalized features at all only from 2.7 (ZooKeeper), 3.3
  (KRaft brokers) and 3.6 (KRaft controllers).

The reference feature table stops at metadata.version 25 (4.0-IV3); the levels
4.1 and 4.2 added (26-29, 4.1-IV0 to 4.2-IV1, none changing the metadata
format) and the features that became production with them
(eligible.leader.replicas.version 1 in 4.1; share.version 1 and
streams.version 1 in 4.2) are supplied here, from Kafka's server-common enums.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal, TypeVar, cast

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.negotiation.features import METADATA_VERSION, FeatureCatalog
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.features import FEATURES, FeatureLevelFact
from kafkacompat.reference.releases import KINDS, RELEASES

__all__ = [
    "API_VERSIONS_KEY",
    "EMULATOR_CATALOG",
    "ApiVersionsEra",
    "BrokerProfile",
    "Kind",
    "custom_profile",
    "default_features",
    "latest_metadata_level",
    "parse_profile_spec",
    "parse_release",
    "profile_for",
    "release_profiles",
]

Kind = Literal["zk-broker", "kraft-broker", "kraft-controller"]
API_VERSIONS_KEY = int(ApiKey.API_VERSIONS)  # a plain int: compared on every emulated request
K = TypeVar("K")
V = TypeVar("V")


class ApiVersionsEra(enum.StrEnum):
    """How a broker answers an ApiVersions request it cannot read."""

    #: 0.8.x (before KIP-35): the API does not exist; the broker closes the connection.
    ABSENT = "absent"
    #: 0.9.x (before KIP-35): the API does not exist; the broker answers nothing and keeps
    #: serving the connection (a real 0.9.0.1 does this to any unknown api key).
    DROPPED = "dropped"
    #: 0.10-2.3: a v0 reply with UNSUPPORTED_VERSION and empty ApiKeys.
    EMPTY_ON_UNSUPPORTED = "empty-on-unsupported"
    #: 2.4+ (KIP-511): a v0 reply with UNSUPPORTED_VERSION and the key-18 range in ApiKeys.
    KIP_511 = "kip-511"


# -- the feature table: the packaged one plus what 4.1 and 4.2 added -----------------------

_MV_LATER = (
    FeatureLevelFact(26, {}, "IBP_4_1_IV0", "4.1", "IV0", False),
    FeatureLevelFact(27, {}, "IBP_4_1_IV1", "4.1", "IV1", False),
    FeatureLevelFact(28, {}, "IBP_4_2_IV0", "4.2", "IV0", False),
    FeatureLevelFact(29, {}, "IBP_4_2_IV1", "4.2", "IV1", False),
)


def _extended_table() -> dict[str, tuple[FeatureLevelFact, ...]]:
    table = {name: tuple(levels) for name, levels in FEATURES.items()}
    known_mv = {fact.level for fact in table.get(METADATA_VERSION, ())}
    table[METADATA_VERSION] = table.get(METADATA_VERSION, ()) + tuple(
        fact for fact in _MV_LATER if fact.level not in known_mv
    )
    # kraft.version 1 (KIP-853) is bootstrapped with 3.9-IV0 (21); the table gives no level.
    table["kraft.version"] = tuple(
        fact._replace(bootstrap_metadata_version=fact.bootstrap_metadata_version or 21)
        if fact.level == 1 else fact
        for fact in table.get("kraft.version", (FeatureLevelFact(0, {}), FeatureLevelFact(1, {})))
    )
    table.setdefault("eligible.leader.replicas.version", (
        FeatureLevelFact(0, {}),
        FeatureLevelFact(1, {METADATA_VERSION: 24}, bootstrap_metadata_version=26),  # KIP-966
    ))
    table.setdefault("share.version", (
        FeatureLevelFact(0, {}),
        FeatureLevelFact(1, {METADATA_VERSION: 27}, bootstrap_metadata_version=28),  # KIP-932
    ))
    table.setdefault("streams.version", (
        FeatureLevelFact(0, {}),
        FeatureLevelFact(1, {}, bootstrap_metadata_version=29),  # KIP-1071
    ))
    return table


_TABLE: Mapping[str, tuple[FeatureLevelFact, ...]] = MappingProxyType(_extended_table())

#: The feature catalog the emulator's controllers check UpdateFeatures against.
EMULATOR_CATALOG = FeatureCatalog(_TABLE)


def parse_release(release: str) -> tuple[int, ...]:
    """``"0.10.2"`` -> (0, 10, 2); ``"3.9"`` -> (3, 9).  For ordering releases."""
    try:
        return tuple(int(part) for part in release.split("."))
    except ValueError:
        raise EmulatorConfigError(f"not a Kafka release number: {release!r}") from None


def latest_metadata_level(release: str) -> int | None:
    """The newest metadata.version of ``release``, or None before metadata.version was a feature."""
    if parse_release(release) < (3, 3):
        return None  # KIP-778 made metadata.version a feature in 3.3
    levels = [fact.level for fact in _TABLE[METADATA_VERSION] if fact.release == release]
    if not levels:
        raise EmulatorConfigError(f"no metadata.version level is known for Kafka {release}")
    return max(levels)


def _production_level(feature: str, latest_mv: int) -> int:
    """The highest level of ``feature`` bootstrapped with ``latest_mv`` or older."""
    level = 0
    for fact in _TABLE[feature]:
        boot = fact.bootstrap_metadata_version
        if fact.level > 0 and boot is not None and boot <= latest_mv:
            level = max(level, fact.level)
    return level


# Levels a release supports before the metadata.version that bootstraps them is production
# (seen on the real releases: make real-kafka): the release lists them, a fresh cluster leaves
# them at 0 until someone upgrades.
_SUPPORTED_EARLY: Mapping[str, Mapping[int, tuple[int, ...]]] = MappingProxyType({
    "eligible.leader.replicas.version": {1: (4, 0)},
    "share.version": {1: (4, 1)},
})


def _supported_level(feature: str, latest_mv: int, version: tuple[int, ...]) -> int:
    early = [level for level, since in _SUPPORTED_EARLY.get(feature, {}).items() if version >= since]
    return max([_production_level(feature, latest_mv), *early])


def default_features(release: str, kind: str) -> tuple[dict[str, VersionRange], dict[str, int], bool]:
    """(supported features, what a fresh cluster finalizes, whether finalized features are reported)."""
    version = parse_release(release)
    # KIP-584 shipped in 2.7 (ZooKeeper); KRaft brokers report from 3.3 and controllers from 3.6
    # (real 2.8-3.2 KRaft nodes and 3.3-3.5 controllers answer epoch -1: make real-kafka).
    reports = version >= {"zk-broker": (2, 7), "kraft-broker": (3, 3)}.get(kind, (3, 6))
    latest_mv = latest_metadata_level(release)
    if latest_mv is None or kind == "zk-broker":  # a ZooKeeper broker supports no feature (real 2.8-3.9)
        return {}, {}, reports
    lowest_mv = 7 if version >= (4, 0) else 1  # 4.0 dropped metadata.version below 3.3-IV3
    supported = {METADATA_VERSION: VersionRange(lowest_mv, latest_mv)}
    finalized = {METADATA_VERSION: latest_mv}
    for feature in sorted(_TABLE):
        if feature == METADATA_VERSION:
            continue
        level = _production_level(feature, latest_mv)
        supported_level = _supported_level(feature, latest_mv, version)
        if supported_level > 0:
            supported[feature] = VersionRange(0, supported_level)
        if level > 0 and feature != "kraft.version":  # a static quorum, as kafka-storage formats by default
            finalized[feature] = level
    return supported, finalized, reports


# -- profiles ------------------------------------------------------------------------------


def _frozen(mapping: Mapping[K, V]) -> Mapping[K, V]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class BrokerProfile:
    """Everything that decides how one emulated broker answers."""

    release: str | None  # None for a custom table
    kind: Kind
    apis: Mapping[int, VersionRange] = field(hash=False)
    supported_features: Mapping[str, VersionRange] = field(default_factory=dict, hash=False)
    default_finalized: Mapping[str, int] = field(default_factory=dict, hash=False)
    reports_finalized: bool = True
    era: ApiVersionsEra | None = None  # None: derived from the key-18 range

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise EmulatorConfigError(f"unknown broker kind {self.kind!r}; known: {', '.join(KINDS)}")
        for key, versions in self.apis.items():
            if not isinstance(versions, VersionRange) or versions.empty or versions.lowest < 0:
                raise EmulatorConfigError(f"API key {key}: not a usable version range: {versions!r}")
        object.__setattr__(self, "apis", _frozen(self.apis))
        object.__setattr__(self, "supported_features", _frozen(self.supported_features))
        object.__setattr__(self, "default_finalized", _frozen(self.default_finalized))
        if self.era is None:
            object.__setattr__(self, "era", _era_of(self.apis, self.release))

    @property
    def api_versions_era(self) -> ApiVersionsEra:
        return cast(ApiVersionsEra, self.era)

    @property
    def label(self) -> str:
        name = f"Kafka {self.release}" if self.release is not None else "custom broker"
        return f"{name} ({self.kind})"

    @property
    def is_controller(self) -> bool:
        return self.kind == "kraft-controller"

    @property
    def is_zk(self) -> bool:
        return self.kind == "zk-broker"

    def supports(self, api_key: int, version: int) -> bool:
        versions = self.apis.get(api_key)
        return versions is not None and version in versions

    def at_least(self, release: str) -> bool:
        """Whether this is an Apache release at or after ``release`` (False for custom tables)."""
        return self.release is not None and parse_release(self.release) >= parse_release(release)

    def with_apis(self, overrides: Mapping[int, tuple[int, int] | VersionRange | None]) -> BrokerProfile:
        """A copy with some API ranges replaced (None removes the API)."""
        apis = dict(self.apis)
        for key, versions in overrides.items():
            if versions is None:
                apis.pop(key, None)
            else:
                apis[key] = _as_range(key, versions)
        return replace(self, apis=apis, era=None)


def _era_of(apis: Mapping[int, VersionRange], release: str | None) -> ApiVersionsEra:
    own = apis.get(API_VERSIONS_KEY)
    if own is None:
        dropping = release is not None and parse_release(release)[:2] == (0, 9)
        return ApiVersionsEra.DROPPED if dropping else ApiVersionsEra.ABSENT
    return ApiVersionsEra.KIP_511 if own.highest >= 3 else ApiVersionsEra.EMPTY_ON_UNSUPPORTED


def _as_range(key: int, versions: tuple[int, int] | VersionRange) -> VersionRange:
    if isinstance(versions, VersionRange):
        return versions
    try:
        low, high = versions
        return VersionRange(int(low), int(high))
    except (TypeError, ValueError):
        raise EmulatorConfigError(f"API key {key}: expected (min, max), got {versions!r}") from None


def _default_kind(release: str) -> Kind:
    has_zk = any(p.release == release and p.kind == "zk-broker" for p in RELEASES)
    return "zk-broker" if has_zk else "kraft-broker"


def profile_for(release: str, kind: str | None = None) -> BrokerProfile:
    """The profile of an Apache release; ``kind`` defaults to zk-broker where it exists."""
    chosen = _default_kind(release) if kind is None else kind
    for profile in RELEASES:
        if profile.release == release and profile.kind == chosen:
            supported, finalized, reports = default_features(release, chosen)
            apis = {key: VersionRange(low, high) for key, (low, high) in profile.apis.items()}
            return BrokerProfile(release, cast(Kind, chosen), apis, supported, finalized, reports)
    known = sorted({p.release for p in RELEASES if p.kind == chosen}, key=parse_release)
    raise EmulatorConfigError(
        f"no Kafka {release} ({chosen}) in the release table; "
        f"known {chosen} releases: {', '.join(known) or 'none'}"
    )


def release_profiles() -> tuple[BrokerProfile, ...]:
    """Every Apache release and kind of the reference table, as profiles."""
    return tuple(profile_for(p.release, p.kind) for p in RELEASES)


def custom_profile(
    apis: Mapping[int, tuple[int, int] | VersionRange],
    *,
    kind: str = "kraft-broker",
    supported_features: Mapping[str, tuple[int, int] | VersionRange] | None = None,
    finalized_features: Mapping[str, int] | None = None,
    reports_finalized: bool = True,
    era: ApiVersionsEra | str | None = None,
) -> BrokerProfile:
    """A broker with a table of your own (a fork, a proxy, a future release)."""
    ranges = {int(key): _as_range(key, versions) for key, versions in apis.items()}
    features = {
        name: versions if isinstance(versions, VersionRange) else VersionRange(*versions)
        for name, versions in (supported_features or {}).items()
    }
    chosen_era = ApiVersionsEra(era) if era is not None else None
    return BrokerProfile(
        None, cast(Kind, kind), ranges, features, dict(finalized_features or {}),
        reports_finalized, chosen_era,
    )


def parse_profile_spec(spec: str | BrokerProfile, kind: str | None = None) -> BrokerProfile:
    """``"2.3"``, ``"3.9/kraft-broker"`` or a profile -> a profile."""
    if isinstance(spec, BrokerProfile):
        return spec
    release, _, spec_kind = spec.strip().partition("/")
    if spec_kind and kind is not None and spec_kind != kind:
        raise EmulatorConfigError(f"{spec!r} names kind {spec_kind}, but kind={kind!r} was given")
    return profile_for(release, spec_kind or kind)
