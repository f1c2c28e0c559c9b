"""Feature levels in the words of Kafka's ``kafka-features describe``.

One line per supported feature, in name order::

    Feature: metadata.version<TAB>SupportedMinVersion: 3.0-IV1<TAB>SupportedMaxVersion: 3.9-IV0<TAB>
    FinalizedVersionLevel: 3.9-IV0<TAB>Epoch: 5

(on one line).  metadata.version levels are shown by name (``UNKNOWN n`` for a
level this client does not know), other features by number; a feature that is
not finalized shows level 0, and an unknown epoch (below 0) shows ``-``.  A
feature finalized but not supported by the broker that answered (which Kafka's
tool never prints) gets the same line with ``-`` for the supported levels.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkacompat.errors import FeatureError
from kafkacompat.negotiation.features import CATALOG, METADATA_VERSION
from kafkacompat.protocol.versions import VersionRange

__all__ = ["epoch_text", "feature_lines", "level_text"]


def level_text(feature: str, level: int) -> str:
    """``metadata.version`` 21 -> ``3.9-IV0``; other features: the number."""
    if feature != METADATA_VERSION:
        return str(level)
    try:
        return CATALOG.metadata_version_name(level)
    except FeatureError:
        return f"UNKNOWN {level}"


def epoch_text(epoch: int | None) -> str:
    return str(epoch) if epoch is not None and epoch >= 0 else "-"


def feature_lines(
    supported: Mapping[str, VersionRange],
    finalized: Mapping[str, VersionRange],
    epoch: int | None,
) -> list[str]:
    """The describe lines for one broker's (or the cluster's) features."""
    lines = []
    for name in sorted(set(supported) | set(finalized)):
        level = finalized[name].highest if name in finalized else 0
        if name in supported:
            low, high = level_text(name, supported[name].lowest), level_text(name, supported[name].highest)
        else:
            low = high = "-"
        lines.append(
            f"Feature: {name}\tSupportedMinVersion: {low}\tSupportedMaxVersion: {high}\t"
            f"FinalizedVersionLevel: {level_text(name, level)}\tEpoch: {epoch_text(epoch)}"
        )
    return lines
