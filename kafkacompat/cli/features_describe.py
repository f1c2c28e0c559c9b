"""``kafkacompat features describe``: Kafka's lines for the cluster, then what differs by broker.

The ``Feature: ...`` lines read the cluster as a whole: the supported levels
are those every broker supports (a broker that does not list a feature
supports level 0 only), the finalized level and epoch are the newest any
broker answered.  They are spelled as Kafka's ``kafka-features describe``
spells them, also where that looks odd: a feature no answer finalizes shows
level 0 (``UNKNOWN 0`` for metadata.version, which has no level 0) and an
unknown epoch ``-``.  Below them (unless ``--brief``): which brokers answered
at which epoch, how the brokers' supported levels differ, and the highest
level of each feature that could be finalized now.  KRaft controllers
(``--bootstrap-controller``) are described the same way and called
controllers; one that did not say its id (before Kafka 3.7) is named by its
address.  Kafka's controllers before 3.6 answer no finalized level and epoch
-1 (measured on 2.8.2 to 3.5.2, tests/data/real_kafka): the lines say so and
send the reader to a broker, which knows the cluster's levels.
"""

from __future__ import annotations

from typing import Any

from kafkacompat.cli.feature_text import epoch_text, level_text
from kafkacompat.cluster.controller_discovery import UNKNOWN_NODE_ID
from kafkacompat.cluster.features_admin import ClusterFeatures
from kafkacompat.errors import FeatureError
from kafkacompat.negotiation.features import CATALOG, UNKNOWN_EPOCH
from kafkacompat.protocol.versions import VersionRange

__all__ = ["describe_document", "describe_lines"]

INDENT = "\t"


def _names(features: ClusterFeatures) -> list[str]:
    return sorted({name for n in features.nodes.values() for name in n.supported} | set(features.levels))


def _range(feature: str, versions: VersionRange) -> tuple[str, str]:
    if versions.empty:
        return "-", "-"
    return level_text(feature, versions.lowest), level_text(feature, versions.highest)


def _id(features: ClusterFeatures, label: str) -> str:
    """A node's id, or its address when it did not say its id."""
    ids = {n.node: n.node_id for n in features.nodes.values()}
    node_id = ids.get(label)
    return label if node_id is None or node_id == UNKNOWN_NODE_ID else str(node_id)


def _ids(features: ClusterFeatures, labels: tuple[str, ...] | list[str]) -> str:
    ids = [_id(features, label) for label in labels]
    if any(found == label for found, label in zip(ids, labels, strict=True)):  # some said no id
        return ", ".join(sorted(_node(features, label) for label in labels))
    listed = sorted(ids, key=lambda i: (len(i), i))
    return ("node " if len(listed) == 1 else "nodes ") + ", ".join(listed)


def _node(features: ClusterFeatures, label: str) -> str:
    """``node 2``, or the address of a node that did not say its id."""
    found = _id(features, label)
    return found if found == label else f"node {found}"


def _safe(features: ClusterFeatures, name: str) -> int | None:
    try:
        return features.max_safe_level(name)
    except FeatureError:
        return None


def kafka_lines(features: ClusterFeatures) -> list[str]:
    lines = []
    for name in _names(features):
        low, high = _range(name, features.supported_everywhere(name))
        lines.append(
            f"Feature: {name}\tSupportedMinVersion: {low}\tSupportedMaxVersion: {high}\t"
            f"FinalizedVersionLevel: {level_text(name, features.levels.get(name, 0))}\t"
            f"Epoch: {epoch_text(features.epoch)}"
        )
    return lines


def _checked(features: ClusterFeatures, kind: str) -> list[str]:
    """Where the finalized levels came from: the epoch and the nodes that answered it, or why none did."""
    view, count = features.finalized, f"Checked on {len(features.nodes)} {kind}(s)"
    if view.epoch != UNKNOWN_EPOCH:
        sources = f" from {_ids(features, view.sources)}" if view.sources else ""
        lines = [f"{count}: finalized epoch {epoch_text(view.epoch)}{sources}"]
        if not _names(features):
            lines.append(f"{INDENT}no {kind} supports or finalizes any feature")
        return lines
    if not _names(features):  # nothing to describe, no epoch to source
        return [f"{count}: no {kind} supports or finalizes any feature"]
    line = f"{count}: no answer gave a finalized level or an epoch"
    if kind == "controller":  # the cluster has them: its brokers know them
        line += "; Kafka's controllers before 3.6 leave them out, a broker (--bootstrap-server) gives them"
    return [line]


def describe_lines(features: ClusterFeatures, *, brief: bool = False, kind: str = "broker") -> list[str]:
    """The describe output; ``kind`` is what the nodes are (``broker`` or ``controller``)."""
    lines = kafka_lines(features)
    if brief:
        return lines
    view = features.finalized
    if lines:
        lines.append("")
    lines += _checked(features, kind)
    lines += [f"{INDENT}{_node(features, s.node)} is behind: it answered epoch {s.epoch}" for s in view.stale]
    if view.conflicts:
        lines.append(f"{INDENT}{_ids(features, view.conflicts)} answered other levels at the same epoch")
    lines += [
        f"{INDENT}node {node_id} could not be asked: {error}"
        for node_id, error in features.unreachable.items()
    ]
    differing = []
    for name in _names(features):
        ranges = {_node(features, n.node): n.supported.get(name) for n in features.nodes.values()}
        if len({str(r) for r in ranges.values()}) > 1:
            parts = [
                node + (" does not list it" if r is None else " supports {} to {}".format(*_range(name, r)))
                for node, r in ranges.items()
            ]
            differing.append(f"{INDENT}{name}: {'; '.join(parts)}")
    if differing:
        lines += [f"{kind.capitalize()}s differ:", *differing]
    if _names(features):
        lines.append(f"Highest level every {kind} supports, dependencies met:")
    for name in _names(features):
        safe = _safe(features, name)
        text = (
            "none"
            if safe is None
            else (
                CATALOG.describe(name, safe).removeprefix(f"{name} ")
                if name == "metadata.version"
                else str(safe)
            )
        )
        lines.append(f"{INDENT}{name}: {text}")
    return lines


def _features(table: Any) -> dict[str, dict[str, int]]:
    return {name: {"min": r.lowest, "max": r.highest} for name, r in sorted(table.items())}


def describe_document(features: ClusterFeatures) -> dict[str, Any]:
    view = features.finalized
    ids = {n.node: n.node_id for n in features.nodes.values()}
    return {
        "_command": "features describe",
        "_version": 1,
        "finalized_features_epoch": view.epoch if view.epoch >= 0 else None,
        "finalized_features": _features(view.features),
        "features": [
            {
                "name": name,
                "supported_everywhere": (
                    None
                    if (r := features.supported_everywhere(name)).empty
                    else {"min": r.lowest, "max": r.highest}
                ),
                "finalized_level": features.levels.get(name, 0),
                "max_safe_level": _safe(features, name),
            }
            for name in _names(features)
        ],
        "brokers": [
            {
                "node_id": n.node_id,
                "endpoint": n.node,
                "supported_features": _features(n.supported),
                "finalized_features": _features(n.finalized),
                "finalized_features_epoch": n.epoch,
                "source": n.source,
            }
            for n in features.nodes.values()
        ],
        "behind": [{"node_id": ids.get(s.node), "epoch": s.epoch} for s in view.stale],
        "unreachable": [
            {"node_id": node_id, "error": str(error)} for node_id, error in features.unreachable.items()
        ],
    }
