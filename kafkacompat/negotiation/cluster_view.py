"""A cluster seen through several broker connections: what works everywhere, and the skew.

During a rolling upgrade (or in a cluster of mixed forks) the nodes answer
ApiVersions differently.  A request is always decided against the node it
goes to (``version_policy``); this view answers the other questions:

- which version of each API every node accepts (the highest version left once
  the client range, the policy and every node's range are intersected), or
  which nodes make that impossible;
- which nodes look like different releases (their release guesses differ);
- which APIs a client would send at different versions depending on the node.

The view is pure data computed once from a list of ``BrokerCapabilities``;
nodes, APIs and groups are always in sorted order so two views of the same
cluster compare and print identically.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kafkacompat.errors import ConfigError, UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.version_policy import (
    VersionChoice,
    VersionPolicy,
    api_name,
    choice_for,
    client_ranges_of_codec,
)
from kafkacompat.protocol.versions import VersionRange

__all__ = ["ApiAgreement", "ClusterView", "ReleaseGroup", "build_cluster_view"]


@dataclass(frozen=True, slots=True)
class ApiAgreement:
    """One API across the cluster.

    ``everywhere`` is the highest version every node accepts (None when there
    is none); ``by_node`` is the version each node would be sent on its own
    (None where unusable); ``lacking`` names the nodes where the API is
    unusable, each with its reason in ``reasons``.
    """

    api_key: int
    api_name: str
    everywhere: int | None
    allowed_everywhere: tuple[VersionRange, ...]
    by_node: Mapping[str, int | None] = field(hash=False)
    lacking: tuple[str, ...]
    reasons: Mapping[str, str] = field(hash=False)
    summary: str

    @property
    def skewed(self) -> bool:
        """Whether nodes would be sent different versions (or some none at all)."""
        return len(set(self.by_node.values())) > 1

    def nodes_at(self, version: int | None) -> tuple[str, ...]:
        """The nodes that would be sent ``version`` (None: the nodes that cannot take it)."""
        return tuple(node for node, picked in self.by_node.items() if picked == version)


@dataclass(frozen=True, slots=True)
class ReleaseGroup:
    """Nodes whose API ranges point to the same release guess."""

    guess: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What several broker connections have in common, and where they differ."""

    nodes: tuple[str, ...]
    apis: Mapping[int, ApiAgreement] = field(hash=False)
    releases: tuple[ReleaseGroup, ...]

    @classmethod
    def build(
        cls,
        brokers: Iterable[BrokerCapabilities],
        policy: VersionPolicy | None = None,
        client_ranges: Mapping[int, VersionRange] | None = None,
    ) -> ClusterView:
        return build_cluster_view(brokers, policy, client_ranges)

    @property
    def release_skew(self) -> bool:
        """Whether the nodes' release guesses differ."""
        return len(self.releases) > 1

    @property
    def version_skew(self) -> tuple[ApiAgreement, ...]:
        """The APIs whose version depends on the node, by api key."""
        return tuple(agreement for agreement in self.apis.values() if agreement.skewed)

    def agreement(self, api_key: int) -> ApiAgreement:
        """The agreement for ``api_key``; an API no node lists has an empty agreement."""
        found = self.apis.get(api_key)
        if found is not None:
            return found
        name = api_name(api_key)
        return ApiAgreement(
            api_key, name, None, (), MappingProxyType(dict.fromkeys(self.nodes)),
            self.nodes, MappingProxyType({n: f"{n} does not list {name}" for n in self.nodes}),
            f"no broker lists {name} (api key {api_key})",
        )

    def version_everywhere(self, api_key: int) -> int | None:
        """The highest version of ``api_key`` every node accepts, or None."""
        return self.agreement(api_key).everywhere

    def pick_everywhere(self, api_key: int) -> int:
        """Like ``version_everywhere`` but raises ``UnsupportedVersionError`` with the reasons."""
        agreement = self.agreement(api_key)
        if agreement.everywhere is None:
            details = "; ".join(f"{n}: {r}" for n, r in agreement.reasons.items())
            raise UnsupportedVersionError(
                f"{agreement.summary}" + (f" ({details})" if details else ""),
                node=", ".join(agreement.lacking) or None,
            )
        return agreement.everywhere

    def describe(self) -> str:
        """A few lines for logs: releases, then the APIs that differ by node."""
        lines = [f"{len(self.nodes)} broker(s): {', '.join(self.nodes) or 'none'}"]
        lines += [f"release {group.guess}: {', '.join(group.nodes)}" for group in self.releases]
        for agreement in self.version_skew:
            picks = ", ".join(
                f"{node} v{v}" if v is not None else f"{node} none"
                for node, v in agreement.by_node.items()
            )
            lines.append(f"{agreement.api_name} differs by node: {picks}; {agreement.summary}")
        return "\n".join(lines)


def build_cluster_view(
    brokers: Iterable[BrokerCapabilities],
    policy: VersionPolicy | None = None,
    client_ranges: Mapping[int, VersionRange] | None = None,
) -> ClusterView:
    """Compute the view of ``brokers`` (their labels must be distinct)."""
    ordered = sorted(brokers, key=lambda b: b.node)
    labels = [b.node for b in ordered]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise ConfigError(f"one capabilities entry per node, got several for {duplicates}")
    ranges = client_ranges_of_codec() if client_ranges is None else client_ranges
    keys = sorted(
        {key for b in ordered for key, r in b.api_ranges.items() if not r.empty}
        & {key for key, r in ranges.items() if not r.empty}
    )
    apis = {
        key: _agreement(key, [choice_for(key, b, policy, ranges) for b in ordered]) for key in keys
    }
    return ClusterView(tuple(labels), MappingProxyType(apis), _release_groups(ordered))


def _agreement(api_key: int, choices: Sequence[VersionChoice]) -> ApiAgreement:
    name = api_name(api_key)
    by_node = {c.node: c.chosen for c in choices}
    unusable = {c.node: c.reason for c in choices if c.chosen is None}
    common: tuple[VersionRange, ...] = choices[0].allowed if choices else ()
    for c in choices[1:]:
        common = _intersect_all(common, c.allowed)
    everywhere = common[-1].highest if common else None
    if everywhere is not None:
        summary = f"{name} v{everywhere} is accepted by all {len(choices)} broker(s)"
    elif unusable:
        summary = f"{name} cannot be sent to {', '.join(unusable)}"
    else:
        allowed = "; ".join(f"{c.node} accepts {_describe(c.allowed)}" for c in choices)
        summary = f"every broker takes {name}, but no version is common to all ({allowed})"
    return ApiAgreement(
        api_key, name, everywhere, common, MappingProxyType(by_node), tuple(unusable),
        MappingProxyType(unusable), summary,
    )


def _intersect_all(
    left: Sequence[VersionRange], right: Sequence[VersionRange]
) -> tuple[VersionRange, ...]:
    """The versions in both sorted lists of disjoint ranges, as sorted ranges."""
    out = [both for a in left for b in right if not (both := a & b).empty]
    return tuple(sorted(out, key=lambda r: r.lowest))


def _describe(ranges: Sequence[VersionRange]) -> str:
    return ", ".join(str(r) for r in ranges) or "none"


def _release_groups(brokers: Sequence[BrokerCapabilities]) -> tuple[ReleaseGroup, ...]:
    groups: dict[str, list[str]] = {}
    for broker in brokers:
        groups.setdefault(broker.release_guess.text, []).append(broker.node)
    return tuple(ReleaseGroup(guess, tuple(nodes)) for guess, nodes in sorted(groups.items()))
