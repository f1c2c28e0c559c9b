"""What changed in a broker's capabilities between two negotiations on the same node.

A connection that breaks is negotiated again on its next use, and the broker
may have been upgraded or downgraded in between (a rolling upgrade).  Every
driver records the difference the same way, from the two capability sets.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.api_names import API_NAMES

__all__ = ["CapabilityChange", "capability_change", "note_change"]


@dataclass(frozen=True, slots=True)
class CapabilityChange:
    """What a reconnect learned that differs from the previous negotiation."""

    node: str
    changed: Mapping[int, tuple[VersionRange, VersionRange]]  # api key -> (before, after)
    release_before: str
    release_after: str

    def describe(self) -> str:
        parts = [f"{API_NAMES.get(k, k)}({k}) {a} -> {b}" for k, (a, b) in sorted(self.changed.items())]
        return (
            f"broker {self.node} changed between connections "
            f"({self.release_before} -> {self.release_after}): " + ", ".join(parts)
        )


def capability_change(
    node: str, before: BrokerCapabilities | None, after: BrokerCapabilities
) -> CapabilityChange | None:
    """The change from ``before`` to ``after``; None when nothing differs (or nothing came before)."""
    if before is None:
        return None
    keys = set(before.api_ranges) | set(after.api_ranges)
    changed = {
        k: (before.broker_range(k), after.broker_range(k))
        for k in keys
        if before.broker_range(k) != after.broker_range(k)
    }
    if not changed:
        return None
    return CapabilityChange(node, changed, before.release_guess.text, after.release_guess.text)


def note_change(
    changes: list[CapabilityChange],
    node: str,
    before: BrokerCapabilities,
    after: BrokerCapabilities,
    log: logging.Logger,
) -> None:
    """A reconnect: append to ``changes`` and warn on ``log`` what the broker changed in
    between (a rolling upgrade, say).  The drivers load this module only on a reconnect."""
    change = capability_change(node, before, after)
    if change is not None:
        changes.append(change)
        log.warning("%s", change.describe())
