"""KIP-584 features across a cluster: describe them, and finalize levels safely.

Theory.  Since ApiVersions v3 a broker lists the feature levels it supports
and the cluster's finalized levels, stamped with an epoch that grows with
every change; UpdateFeatures (handled by the controller) changes finalized
levels.  Each broker learns of a change on its own schedule, so one
broker's answer can be older than another's, and a level only one broker
supports must not be finalized.

``describe_features`` asks every broker, on its own connection, for a fresh
ApiVersions answer (at the version its handshake settled on) and reads the
supported and finalized features from it.  Brokers learn of a change at
different times, so the finalized answers are merged by epoch
(``merge_finalized``): the newest epoch wins whatever the order of arrival, and
brokers still answering an older epoch are reported as stale.

``update_features`` checks before it sends: every broker must support each
target level and the dependencies between features must hold after the change
(``can_finalize_all``); a refused check raises ``FeatureUpdateBlockedError``
naming the blocking brokers and dependencies, and nothing is sent.  The request
then goes to the controller when Metadata names one that can be reached, else
to any broker (KRaft brokers forward it), at the version that connection
negotiated; a dry run sends it with ``validate_only``.  A NOT_CONTROLLER answer
refreshes the metadata and tries again, a bounded number of times, with the
one retry mechanism (``retries``) on the cluster's event loop.  Both run by
their call's deadline (``call_deadline``): every request is sent with the time
left as its timeout, and no retry follows a backoff that would reach it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kafkacompat.cluster.backend import ClusterBackend, Job, NodeConnection, negotiated
from kafkacompat.cluster.call_deadline import current_deadline, time_left
from kafkacompat.cluster.discovery import raise_failures
from kafkacompat.cluster.retries import retry_on_result
from kafkacompat.errors import FeatureUpdateBlockedError, KafkaCompatError
from kafkacompat.negotiation.feature_updates import (
    UPDATE_FEATURES,
    FeatureUpdateResult,
    build_update_features,
    plan_feature_updates,
    read_update_features,
)
from kafkacompat.negotiation.features import (
    BrokerFeatures,
    FinalizedObservation,
    FinalizedView,
    FinalizeVerdict,
    StaleObservation,
    can_finalize_all,
    max_safe_level,
    merge_finalized,
)
from kafkacompat.negotiation.handshake.reply import first_ranges
from kafkacompat.protocol.error_codes import BY_NAME
from kafkacompat.protocol.messages import UpdateFeaturesResponse
from kafkacompat.protocol.versions import VersionRange

if TYPE_CHECKING:
    from kafkacompat.cluster.core import ClusterCore

    Cluster = ClusterCore[Any]

__all__ = [
    "ClusterFeatures",
    "FeatureUpdateReport",
    "NodeFeatures",
    "describe_features",
    "update_features",
]

_UNLISTED = VersionRange(0, 0)
NOT_CONTROLLER = BY_NAME["NOT_CONTROLLER"].code


@dataclass(frozen=True, slots=True)
class NodeFeatures:
    """What one broker answered about features.  ``source`` says where it came from."""

    node_id: int
    node: str
    supported: Mapping[str, VersionRange] = field(hash=False)
    finalized: Mapping[str, VersionRange] = field(hash=False)
    epoch: int
    source: str


@dataclass(frozen=True)
class ClusterFeatures:
    """Every broker's features and the merged finalized state (``finalized``)."""

    nodes: Mapping[int, NodeFeatures] = field(hash=False)
    finalized: FinalizedView
    unreachable: Mapping[int, KafkaCompatError] = field(hash=False)

    @property
    def epoch(self) -> int:
        return self.finalized.epoch

    @property
    def levels(self) -> dict[str, int]:
        """The finalized level of each finalized feature (newest epoch)."""
        return self.finalized.levels

    @property
    def stale(self) -> tuple[StaleObservation, ...]:
        return self.finalized.stale

    def supported_everywhere(self, feature: str) -> VersionRange:
        """The levels of ``feature`` every broker supports (unlisted: level 0 only)."""
        common = VersionRange.ALL
        for node in self.nodes.values():
            common &= node.supported.get(feature, _UNLISTED)
        return common

    def brokers(self) -> list[BrokerFeatures]:
        return [BrokerFeatures(n.node, n.supported) for n in self.nodes.values()]

    def max_safe_level(self, feature: str) -> int | None:
        """The highest level of ``feature`` that every broker supports with dependencies met."""
        return max_safe_level(feature, self.brokers(), self.levels)

    def describe(self) -> str:
        names = sorted({name for n in self.nodes.values() for name in n.supported} | set(self.levels))
        lines = [f"finalized epoch {self.epoch} ({len(self.nodes)} broker(s) answered)"]
        for name in names:
            level = self.levels.get(name)
            finalized = f"finalized at {level}" if level is not None else "not finalized"
            lines.append(f"  {name}: {finalized}; supported everywhere: {self.supported_everywhere(name)}")
        if not names:
            lines.append("  no features supported or finalized")
        lines += [f"  stale: {s.node} answered epoch {s.epoch} < {s.newest_epoch}" for s in self.stale]
        lines += [f"  conflict: {node} answered other features at the same epoch"
                  for node in self.finalized.conflicts]
        lines += [f"  unreachable: node {n}: {type(e).__name__}: {e}" for n, e in self.unreachable.items()]
        return "\n".join(lines)


@dataclass(frozen=True)
class FeatureUpdateReport:
    """What the controller (or the broker asked) said about each feature."""

    dry_run: bool
    node_id: int
    node: str
    version: int
    results: tuple[FeatureUpdateResult, ...]
    verdict: FinalizeVerdict
    attempts: int

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def by_feature(self) -> Mapping[str, FeatureUpdateResult]:
        return MappingProxyType({r.update.feature: r for r in self.results})

    def describe(self) -> str:
        mode = "dry run" if self.dry_run else "update"
        head = f"UpdateFeatures v{self.version} ({mode}) to node {self.node_id} at {self.node}:"
        return "\n".join([head, *(f"  {r.sentence()}" for r in self.results)])


async def describe_features(cluster: Cluster, backend: ClusterBackend[Any]) -> ClusterFeatures:
    """Ask every reachable broker, side by side on ``backend``; merge the finalized answers by epoch."""
    opened, failed = await cluster.open_all()  # by the enclosing call's deadline
    if not opened:
        raise_failures(failed, _labels(cluster))
    nodes: dict[int, NodeFeatures] = {}

    def ask(node_id: int, conn: NodeConnection) -> Job:
        async def job() -> None:
            try:
                nodes[node_id] = await _ask_features(node_id, conn)
            except KafkaCompatError as exc:
                failed[node_id] = exc

        return job

    await backend.run_all([ask(node_id, conn) for node_id, conn in opened.items()])
    ordered = dict(sorted(nodes.items()))
    view = merge_finalized(FinalizedObservation(n.node, n.epoch, n.finalized) for n in ordered.values())
    return ClusterFeatures(MappingProxyType(ordered), view, MappingProxyType(dict(sorted(failed.items()))))


async def _ask_features(node_id: int, conn: NodeConnection) -> NodeFeatures:
    handshake, capabilities = conn.handshake, conn.capabilities
    assert handshake is not None and capabilities is not None
    version = handshake.api_versions_version
    if version is not None:
        timeout = time_left(conn.config.request_timeout, f"asking {conn.node} for its features")
        response = await conn.request(
            conn.config.handshake.request(version), version=version, request_timeout=timeout
        )
        if response.error_code == 0:
            return NodeFeatures(
                node_id,
                conn.node,
                first_ranges((f.name, f.min_version, f.max_version) for f in response.supported_features),
                first_ranges(
                    (f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features
                ),
                response.finalized_features_epoch,
                f"ApiVersions v{version}",
            )
    return NodeFeatures(
        node_id, conn.node, capabilities.supported_features, capabilities.finalized_features,
        capabilities.finalized_features_epoch if capabilities.finalized_features_epoch is not None else -1,
        "handshake",
    )


async def update_features(
    cluster: Cluster,
    backend: ClusterBackend[Any],
    updates: Mapping[str, int],
    *,
    dry_run: bool = False,
    unsafe: bool = False,
) -> FeatureUpdateReport:
    """Check ``updates`` against every broker, then send them; see the module documentation.

    Called by ``ClusterCore.update_features``, inside the call's deadline.
    """
    features = await describe_features(cluster, backend)
    if features.unreachable:  # cannot vouch for brokers that did not answer
        raise_failures(features.unreachable, _labels(cluster))
    verdict = can_finalize_all(dict(updates), features.brokers(), finalized=features.levels)
    if not verdict.ok:
        raise FeatureUpdateBlockedError(verdict)
    planned = plan_feature_updates(updates, features.levels, unsafe=unsafe)
    sent: tuple[int, NodeConnection, int, UpdateFeaturesResponse] | None = None
    attempts = 0
    tries = retry_on_result(
        cluster.config.retry, backend.sleep, _refused_as_not_controller,
        deadline=current_deadline(), clock=backend.clock,
    )
    async for attempt in tries:
        with attempt:
            attempts += 1
            if sent is not None:  # refused by a former controller: ask who it is now
                await cluster.refresh_metadata()
            node_id, conn = await _destination(cluster)
            version = negotiated(conn).pick_version(UPDATE_FEATURES)
            request = build_update_features(planned, version, validate_only=dry_run)
            timeout = time_left(cluster.config.request_timeout, f"sending UpdateFeatures to {conn.node}")
            response = await conn.request(request, version=version, request_timeout=timeout)
            sent = (node_id, conn, version, response)
        outcome = attempt.retry_state.outcome
        if outcome is not None and not outcome.failed:
            attempt.retry_state.set_result(sent)
    assert sent is not None  # the first attempt either sent or raised
    node_id, conn, version, response = sent
    results = read_update_features(response, version, planned, validate_only=dry_run)
    return FeatureUpdateReport(dry_run, node_id, conn.node, version, results, verdict, attempts)


def _refused_as_not_controller(sent: object) -> bool:
    return isinstance(sent, tuple) and bool(sent[3].error_code == NOT_CONTROLLER)


async def _destination(cluster: Cluster) -> tuple[int, NodeConnection]:
    controller = cluster.controller_id
    if controller is not None:
        try:
            return controller, await cluster.connection(controller)
        except KafkaCompatError:
            pass  # any broker will do: KRaft brokers forward to the active controller
    conn = await cluster.any_connection()
    assert conn.node_id is not None
    return conn.node_id, conn


def _labels(cluster: Cluster) -> dict[int, str]:
    return {node_id: broker.address for node_id, broker in cluster.brokers.items()}
