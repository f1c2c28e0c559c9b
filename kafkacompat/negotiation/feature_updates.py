"""UpdateFeatures requests and their results (KIP-584, KIP-778).

KIP-584 lets an operator finalize a feature at a level every broker supports;
the request asks the controller to move a feature's finalized max level.  Its
wire form changed once: v0 carries a boolean ``AllowDowngrade``, v1 (KIP-778)
an ``UpgradeType`` (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) plus
``ValidateOnly`` for a dry run, and v2 drops the per-feature results (one
top-level error stands for the whole request).

This module turns "set these features to these levels" into a request at the
version the broker speaks, refusing up front what that version cannot say (a
dry run or an unsafe downgrade at v0), and reads the answer back as one
result per feature, whatever the version.  Whether the levels are safe for
every broker is ``features.can_finalize_all``'s question, asked before this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from kafkacompat.errors import FeatureError, UnsupportedVersionError
from kafkacompat.negotiation.features import CATALOG, ChangeKind, classify_change
from kafkacompat.protocol.error_codes import error_for
from kafkacompat.protocol.messages import ApiKey, UpdateFeaturesRequest, UpdateFeaturesResponse

__all__ = [
    "UPDATE_FEATURES",
    "FeatureUpdate",
    "FeatureUpdateResult",
    "UpgradeType",
    "build_update_features",
    "plan_feature_updates",
    "read_update_features",
    "result_sentence",
]

UPDATE_FEATURES = ApiKey.UPDATE_FEATURES
FIRST_UPGRADE_TYPE_VERSION = 1  # KIP-778: UpgradeType and ValidateOnly
FIRST_WITHOUT_RESULTS = 2


class UpgradeType(IntEnum):
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """Set ``feature``'s finalized max level to ``level`` (0 disables it)."""

    feature: str
    level: int
    upgrade_type: UpgradeType
    current: int = 0

    @property
    def verb(self) -> str:
        if self.level == 0:
            return "disable"
        return "upgrade" if self.upgrade_type is UpgradeType.UPGRADE else "downgrade"


@dataclass(frozen=True, slots=True)
class FeatureUpdateResult:
    """What the controller said about one feature."""

    update: FeatureUpdate
    error_code: int
    error_message: str | None
    validate_only: bool

    @property
    def ok(self) -> bool:
        return self.error_code == 0

    @property
    def error_name(self) -> str:
        return error_for(self.error_code).name

    def sentence(self) -> str:
        """The result as kafka-features prints it."""
        u = self.update
        error = None if self.ok else (self.error_message or error_for(self.error_code).message)
        return result_sentence(u.verb, u.feature, u.level, error, dry_run=self.validate_only)


def result_sentence(verb: str, feature: str, level: int, error: str | None, *, dry_run: bool) -> str:
    """kafka-features' sentence for one feature: ``verb`` is upgrade, downgrade or disable."""
    if error is None:
        done = "disabled." if verb == "disable" else f"{verb}d to {level}."
        return f"{feature} {'can be' if dry_run else 'was'} {done}"
    target = f"disable {feature}" if verb == "disable" else f"{verb} {feature} to {level}"
    return f"{'Can not' if dry_run else 'Could not'} {target}. {error}"


def plan_feature_updates(
    targets: Mapping[str, int], finalized: Mapping[str, int], *, unsafe: bool = False
) -> tuple[FeatureUpdate, ...]:
    """The updates for ``targets`` given the ``finalized`` levels (absent: 0).

    A downgrade is sent as safe unless ``unsafe``; a metadata.version downgrade
    across levels whose metadata format changed is refused unless ``unsafe``,
    since the controller would refuse it too (and say less about why).
    """
    updates = []
    for feature, level in sorted(targets.items()):
        current = finalized.get(feature, 0)
        change = classify_change(feature, current, level)
        if change.kind in (ChangeKind.UNCHANGED, ChangeKind.UPGRADE):
            kind = UpgradeType.UPGRADE
        elif unsafe:
            kind = UpgradeType.UNSAFE_DOWNGRADE
        elif change.kind is ChangeKind.UNSAFE_DOWNGRADE:
            levels = ", ".join(CATALOG.describe(feature, n) for n in change.format_changes)
            raise FeatureError(
                f"downgrading {feature} from {current} to {level} crosses metadata format changes "
                f"({levels}): only an unsafe downgrade can do that, and it may lose metadata"
            )
        else:
            kind = UpgradeType.SAFE_DOWNGRADE
        updates.append(FeatureUpdate(feature, level, kind, current))
    return tuple(updates)


def build_update_features(
    updates: Sequence[FeatureUpdate], version: int, *, validate_only: bool = False, timeout_ms: int = 60000
) -> UpdateFeaturesRequest:
    """The request at ``version``; what that version cannot express is refused here."""
    if version not in UpdateFeaturesRequest.VALID_VERSIONS:
        raise UnsupportedVersionError(f"UpdateFeatures has no version {version}")
    if not updates:
        raise FeatureError("no feature to update")
    legacy = version < FIRST_UPGRADE_TYPE_VERSION
    if legacy and validate_only:
        raise UnsupportedVersionError(
            "a dry run (validate only) needs UpdateFeatures v1+ (KIP-778); the broker speaks v0"
        )
    if legacy and any(u.upgrade_type is UpgradeType.UNSAFE_DOWNGRADE for u in updates):
        raise UnsupportedVersionError(
            "an unsafe downgrade needs UpdateFeatures v1+ (KIP-778); v0 can only allow a downgrade"
        )
    keys = []
    for u in updates:
        key = UpdateFeaturesRequest.FeatureUpdateKey(feature=u.feature, max_version_level=u.level)
        if legacy:
            key.allow_downgrade = u.upgrade_type is not UpgradeType.UPGRADE
        else:
            key.upgrade_type = int(u.upgrade_type)
        keys.append(key)
    return UpdateFeaturesRequest(timeout_ms=timeout_ms, feature_updates=keys, validate_only=validate_only)


def read_update_features(
    response: UpdateFeaturesResponse,
    version: int,
    updates: Sequence[FeatureUpdate],
    *,
    validate_only: bool = False,
) -> tuple[FeatureUpdateResult, ...]:
    """One result per requested feature.

    A top-level error applies to every feature.  From v2 there are no
    per-feature results, so success of the request is success of each; before
    v2, a feature the controller did not mention is reported as unanswered.
    """
    if response.error_code != 0 or version >= FIRST_WITHOUT_RESULTS:
        return tuple(
            FeatureUpdateResult(u, response.error_code, response.error_message, validate_only)
            for u in updates
        )
    by_feature = {r.feature: r for r in response.results}
    results = []
    for u in updates:
        found = by_feature.get(u.feature)
        if found is None:
            results.append(
                FeatureUpdateResult(u, -1, "the controller did not answer for this feature", validate_only)
            )
        else:
            results.append(FeatureUpdateResult(u, found.error_code, found.error_message, validate_only))
    return tuple(results)
