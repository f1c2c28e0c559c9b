"""What ``kafkacompat inspect`` found, as plain data both renderers (text, JSON) read.

``ProbeReport`` holds one ``BrokerProbe`` per broker inspected: its address
as Metadata named it, and either the capabilities its connection negotiated or
the error that stopped it.  ``api_entries`` reads one broker's capabilities
the way Kafka's ``kafka-broker-api-versions`` does (every API the broker lists,
and every API some Kafka broker serves that this one does not), adding what
the version policy and the protocol specs say about each.  ``cluster_summary``
is what holds across brokers: common versions, skew, releases and the
finalized features' epochs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.cluster_view import ClusterView, build_cluster_view
from kafkacompat.negotiation.features import FinalizedObservation, FinalizedView, merge_finalized
from kafkacompat.negotiation.version_policy import VersionChoice, VersionPolicy, client_ranges_of_codec
from kafkacompat.protocol import messages
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import API_NAMES, REMOVAL_KINDS, REMOVALS
from kafkacompat.reference.releases import RELEASES

__all__ = [
    "ApiEntry",
    "BrokerProbe",
    "ClusterSummary",
    "ProbeReport",
    "api_entries",
    "broker_api_keys",
    "cluster_summary",
    "identity_status",
    "refused_by_4x",
    "spec_deprecated",
]


@dataclass(frozen=True)
class BrokerProbe:
    """One broker: where Metadata says it is, and what its connection negotiated (or why not)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    capabilities: BrokerCapabilities | None = None
    error: str | None = None
    error_type: str | None = None
    #: The cluster id the client checked this broker against itself, from Metadata read on its
    #: connection (KIP-1242 done client side: the broker could not confirm), else None.
    client_checked_cluster: str | None = None

    @property
    def endpoint(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def ok(self) -> bool:
        return self.capabilities is not None


@dataclass(frozen=True)
class ProbeReport:
    """Every broker inspected, with the cluster facts Metadata gave."""

    bootstrap: str
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerProbe, ...]
    policy: VersionPolicy | None
    observed_at: datetime
    all_brokers: bool = False
    known_brokers: int = 0
    node_kind: str = "broker"  # "controller": KRaft controllers (DescribeCluster, or the node alone)
    note: str = ""  # why discovery found less than asked for (ClusterMetadata.note)
    not_contacted: str | None = None  # why some brokers Metadata names were left out (fan-out limit)
    expected_cluster_id: str | None = None  # --expect-cluster-id: Metadata's cluster id matched it

    @property
    def capabilities(self) -> dict[int, BrokerCapabilities]:
        return {b.node_id: b.capabilities for b in self.brokers if b.capabilities is not None}

    @property
    def failed(self) -> tuple[BrokerProbe, ...]:
        return tuple(b for b in self.brokers if not b.ok)


def identity_status(
    capabilities: BrokerCapabilities, *, client_checked_cluster: str | None = None
) -> tuple[str, str]:
    """(token, sentence): whether the broker is the one meant (KIP-1242), and who checked.

    ``confirmed``: v5 carried the identity and a broker accepted it (a broker checks it);
    ``unchecked``: a controller accepted it (controllers do not check);
    ``client-checked``: the broker cannot confirm, and the client compared Metadata read on
    the connection with ``client_checked_cluster`` and the node meant; ``unsupported``: the
    broker speaks no ApiVersions v5 (before Kafka 4.4) and nobody checked; ``not-sent``: the
    connection knew no identity to send.
    """
    transcript = capabilities.transcript
    sent = transcript.identity_sent if transcript is not None else None
    if sent is not None:
        if capabilities.release_guess.kind == "kraft-controller":
            return "unchecked", f"sent {sent}; a controller accepts it without checking (KIP-1242)"
        return "confirmed", f"the broker confirmed it is {sent} (ApiVersions v5, KIP-1242)"
    own = capabilities.api_ranges.get(ApiKey.API_VERSIONS)
    top = "no ApiVersions" if own is None else f"ApiVersions up to v{own.highest}"
    if client_checked_cluster is not None:
        return "client-checked", (
            f"checked by the client: Metadata read on this connection names this node of cluster "
            f"{client_checked_cluster} at this address (the broker speaks {top}: it cannot confirm itself)"
        )
    if own is None or own.highest < 5:
        return "unsupported", f"not confirmed: the broker speaks {top}; confirming needs v5 (Kafka 4.4)"
    return "not-sent", "not confirmed: the connection knew no node id and cluster id to send"


@cache
def broker_api_keys() -> frozenset[int]:
    """Every api key some Apache Kafka broker (ZooKeeper or KRaft) has served."""
    return frozenset(
        key for profile in RELEASES if profile.kind != "kraft-controller" for key in profile.apis
    )


def spec_deprecated(api_key: int) -> VersionRange:
    """The request versions the protocol specs mark deprecated for ``api_key``."""
    class_name = messages.CLASS_BY_KEY.get((api_key, "request"))
    if class_name is None:
        return VersionRange.NONE
    deprecated = getattr(getattr(messages, class_name), "DEPRECATED_VERSIONS", VersionRange.NONE)
    return deprecated if isinstance(deprecated, VersionRange) else VersionRange.NONE


def refused_by_4x(api_key: int, broker: VersionRange) -> tuple[VersionRange, str] | None:
    """The advertised versions a Kafka 4.x broker refuses, and why (``None`` when there are none).

    Facts of ``kafkacompat.reference.removals``: the versions Kafka 4.0+ removed
    (KIP-896), Produce v0-2 (advertised by 4.x yet refused, KAFKA-18659), the
    Share APIs' early-access v0.  The specs' ``deprecatedVersions`` are not that:
    4.x still serves Metadata 0-3, JoinGroup 0-1, FindCoordinator 0 and more.
    """
    fact = REMOVALS.get(api_key)
    if fact is None:
        return None
    refused = broker & VersionRange(fact.lowest, fact.highest)
    return None if refused.empty else (refused, REMOVAL_KINDS[fact.kind])


@dataclass(frozen=True)
class ApiEntry:
    """One line of the broker's block: ranges, the version this client would send, and why."""

    api_key: int
    name: str | None  # None: an api key this client does not know
    broker: VersionRange | None  # None: the broker does not list it
    client: VersionRange | None  # None: this client cannot write it
    usable: int | None
    reason: str
    policy_marks: tuple[str, ...] = ()
    deprecated: VersionRange = VersionRange.NONE  # the specs' mark, kept for the JSON document
    choice: VersionChoice | None = field(default=None, repr=False, compare=False)
    refused_4x: tuple[VersionRange, str] | None = None  # versions a 4.x broker refuses, and why

    @property
    def label(self) -> str:
        return f"{self.name}({self.api_key})" if self.name else f"UNKNOWN({self.api_key})"

    @property
    def unusable_tag(self) -> str:
        """Kafka's words where it has them (node too new / too old), ours otherwise."""
        if self.broker is None or self.usable is not None:
            return ""
        if self.client is None:
            return "client cannot write it"
        if self.client.highest < self.broker.lowest:
            return "node too new"
        if self.broker.highest < self.client.lowest:
            return "node too old"
        return "policy leaves none: " + "; ".join(self.policy_marks)

    def kafka_text(self) -> str:
        """The line as ``kafka-broker-api-versions`` prints it (without the tab and comma)."""
        if self.broker is None:
            return f"{self.label}: UNSUPPORTED"
        low, high = self.broker.lowest, self.broker.highest
        text = f"{self.label}: {low}" if low == high else f"{self.label}: {low} to {high}"
        if self.name is None:
            return text
        return text + (
            f" [usable: {self.usable}]" if self.usable is not None else f" [unusable: {self.unusable_tag}]"
        )

    def marks(self) -> str:
        """What this client adds: policy steps that narrowed the pick, what 4.x refuses."""
        parts = []
        if self.usable is not None and self.policy_marks:
            parts.append("policy: " + "; ".join(self.policy_marks))
        if self.refused_4x is not None:
            parts.append(f"4.x refuses {self.refused_4x[0]}: {self.refused_4x[1]}")
        return " {" + ", ".join(parts) + "}" if parts else ""


def _policy_marks(choice: VersionChoice) -> tuple[str, ...]:
    marks = []
    before: tuple[VersionRange, ...] = (choice.intersection,)
    for step in choice.steps:
        if step.remaining != before:
            marks.append(step.rule)
        before = step.remaining
    return tuple(marks)


def api_entries(
    capabilities: BrokerCapabilities,
    policy: VersionPolicy | None = None,
    client_ranges: Mapping[int, VersionRange] | None = None,
) -> list[ApiEntry]:
    """One entry per API the broker lists or some Kafka broker serves, by api key."""
    ranges = client_ranges_of_codec() if client_ranges is None else client_ranges
    listed = {key for key, r in capabilities.api_ranges.items() if not r.empty}
    entries = []
    for key in sorted(listed | broker_api_keys()):
        name = API_NAMES.get(key)
        client = ranges.get(key)
        client = None if client is None or client.empty else client
        if key not in listed:
            reason = f"the broker does not list {name or f'api key {key}'}"
            entries.append(ApiEntry(key, name, None, client, None, reason))
            continue
        broker = capabilities.broker_range(key)
        choice = capabilities.explain(key, policy, ranges)
        deprecated = broker & spec_deprecated(key)
        entries.append(
            ApiEntry(
                key,
                name,
                broker,
                client,
                choice.chosen,
                choice.reason,
                _policy_marks(choice),
                deprecated,
                choice,
                refused_by_4x(key, broker),
            )
        )
    return entries


@dataclass(frozen=True)
class ClusterSummary:
    """What holds across the brokers that answered."""

    view: ClusterView
    node_ids: Mapping[str, int]  # "host:port" -> node id
    finalized: FinalizedView

    def node_id(self, label: str) -> int | str:
        return self.node_ids.get(label, label)


def cluster_summary(report: ProbeReport) -> ClusterSummary | None:
    """Common versions, skew and finalized epochs of the brokers that answered (None: none did)."""
    capabilities = report.capabilities
    if not capabilities:
        return None
    view = build_cluster_view(capabilities.values(), report.policy)
    node_ids = {caps.node: node_id for node_id, caps in capabilities.items()}
    finalized = merge_finalized(
        FinalizedObservation(
            str(node_id),
            caps.finalized_features_epoch if caps.finalized_features_epoch is not None else -1,
            dict(caps.finalized_features),
        )
        for node_id, caps in capabilities.items()
    )
    return ClusterSummary(view, node_ids, finalized)
