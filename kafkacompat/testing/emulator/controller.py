"""UpdateFeatures with a controller's semantics (KIP-584, KIP-778, KIP-1022).

Theory.  Only the controller changes finalized features.  A ZooKeeper broker
that is not the controller answers NOT_CONTROLLER; a KRaft broker forwards the
request to the active controller (KIP-590), so in the emulator it decides like
one; a KRaft controller that is not the active one answers NOT_CONTROLLER.

Each update asks for a level (below 1: remove the feature) and says whether a
downgrade is meant: v0 with ``AllowDowngrade``, v1+ with ``UpgradeType``
(1 upgrade, 2 safe downgrade, 3 unsafe downgrade; KIP-778).  The controller
refuses, with INVALID_UPDATE_VERSION:

- a lower level without a downgrade type (v0: without AllowDowngrade);
- a level some node of the cluster does not support (a node that does not
  list the feature supports level 0 only), so one old broker blocks an upgrade;
- removing metadata.version; lowering it across a level that changed the
  metadata format (a safe downgrade must be lossless) or any unsafe downgrade;
- a level whose dependencies the state after the update would not meet
  (kraft.version 1 needs metadata.version 21, ...), or a lowered feature that
  another finalized feature depends on.

Before Kafka 4.0 every update is judged and applied on its own, with one result
per feature.  From 4.0 (UpdateFeatures v2; the node's table reaches v2) the
request is all or nothing: the first refusal becomes the top-level error and
nothing is applied, at every request version; v2 answers carry no results.
``validate_only`` (v1+) judges without applying.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkacompat.negotiation.features import METADATA_VERSION
from kafkacompat.protocol.error_codes import BY_NAME, INVALID_REQUEST, INVALID_UPDATE_VERSION, NONE
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.testing.emulator.profile import EMULATOR_CATALOG
from kafkacompat.testing.emulator.state import ClusterState, Node

__all__ = ["UPGRADE", "FeatureUpdate", "UpdateOutcome", "decide_updates", "update_features"]

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
NOT_CONTROLLER = BY_NAME["NOT_CONTROLLER"].code


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    feature: str
    level: int
    upgrade_type: int = UPGRADE


@dataclass(frozen=True, slots=True)
class UpdateOutcome:
    """What the controller answers: a top-level error, per-feature errors, what it applied."""

    error_code: int = NONE
    error_message: str | None = None
    results: Mapping[str, tuple[int, str | None]] = field(default_factory=dict, hash=False)
    applied: Mapping[str, int] = field(default_factory=dict, hash=False)


def is_atomic(node: Node) -> bool:
    versions = node.profile.apis.get(ApiKey.UPDATE_FEATURES)
    return node.profile.at_least("4.0") or (versions is not None and versions.highest >= 2)


def update_features(
    state: ClusterState, node: Node, updates: Sequence[FeatureUpdate], *, validate_only: bool = False
) -> UpdateOutcome:
    """Handle UpdateFeatures on ``node``: route to the controller, decide, apply."""
    if node.profile.is_zk and node.node_id != state.controller_id:
        return UpdateOutcome(NOT_CONTROLLER, f"broker {node.node_id} is not the controller")
    if node.profile.is_controller and node.node_id != state.controller_id:
        return UpdateOutcome(NOT_CONTROLLER, f"controller {node.node_id} is not the active controller")
    outcome = decide_updates(state, updates, atomic=is_atomic(node))
    if outcome.applied and not validate_only:
        state.finalize(outcome.applied)
    return outcome


def decide_updates(state: ClusterState, updates: Sequence[FeatureUpdate], *, atomic: bool) -> UpdateOutcome:
    """Judge ``updates`` against the cluster; nothing is changed here."""
    names = [u.feature for u in updates]
    if not updates:
        return UpdateOutcome(INVALID_REQUEST, "no feature updates were given")
    if len(set(names)) != len(names):
        return UpdateOutcome(INVALID_REQUEST, "a feature appears more than once in the updates")
    proposed = dict(state.finalized)
    proposed.update({u.feature: max(u.level, 0) for u in updates})
    refusals = {u.feature: _refusal(state, u, proposed) for u in updates}
    if atomic:
        failed = [(name, why) for name, why in refusals.items() if why is not None]
        if failed:
            name, why = failed[0]
            return UpdateOutcome(INVALID_UPDATE_VERSION, f"no feature was updated; {name}: {why}")
        return UpdateOutcome(
            results={name: (NONE, None) for name in names},
            applied={u.feature: max(u.level, 0) for u in updates},
        )
    results = {
        name: (NONE, None) if why is None else (INVALID_UPDATE_VERSION, why) for name, why in refusals.items()
    }
    applied = {u.feature: max(u.level, 0) for u in updates if refusals[u.feature] is None}
    return UpdateOutcome(results=results, applied=applied)


def _refusal(state: ClusterState, update: FeatureUpdate, proposed: Mapping[str, int]) -> str | None:
    name, level = update.feature, max(update.level, 0)
    current = state.finalized.get(name, 0)
    prefix = f"invalid update version {level} for feature {name}"
    if update.upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return f"{prefix}: unknown upgrade type {update.upgrade_type}"
    if level < current and update.upgrade_type == UPGRADE:
        return f"{prefix}: lowering a feature needs a safe or unsafe downgrade type"
    if name == METADATA_VERSION:
        reason = _metadata_version_refusal(level, current, update.upgrade_type)
        if reason is not None:
            return f"{prefix}: {reason}"
    if level > 0:
        for node in sorted(state.nodes.values(), key=lambda n: n.node_id):
            supported = node.profile.supported_features.get(name)
            what = "controller" if node.profile.is_controller else "broker"
            if supported is None:
                return f"{prefix}: {what} {node.node_id} does not support this feature"
            if level not in supported:
                return f"{prefix}: {what} {node.node_id} supports versions {supported} only"
        for needed, minimum in sorted(EMULATOR_CATALOG.dependencies(name, level).items()):
            if proposed.get(needed, 0) < minimum:
                return f"{prefix}: it needs {needed} at level {minimum} or higher"
    for other, other_level in sorted(proposed.items()):
        if other == name or other_level <= 0:
            continue
        needs = EMULATOR_CATALOG.dependencies(other, other_level).get(name)
        if needs is not None and level < needs:
            return f"{prefix}: {other} {other_level} needs {name} at level {needs} or higher"
    return None


def _metadata_version_refusal(level: int, current: int, upgrade_type: int) -> str | None:
    if level == 0:
        return "metadata.version cannot be removed"
    if level >= current:
        return None
    if upgrade_type == UNSAFE_DOWNGRADE:
        return "unsafe metadata.version downgrades are not supported"
    for between in range(level + 1, current + 1):
        known = EMULATOR_CATALOG.get(METADATA_VERSION, between)
        if known is None or known.metadata_changed is not False:
            return (
                f"the metadata format changed at level {between}, so this downgrade could lose metadata"
            )
    return None
