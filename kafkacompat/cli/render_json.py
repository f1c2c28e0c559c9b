"""``kafkacompat inspect --format json``: one JSON document (``_command``, ``_version`` 1).

The shape is documented in docs/cli.md; fields are only ever added within a
``_version``.  Api keys are JSON numbers inside lists and strings when they
key an object (``cluster.usable``), since JSON object keys are strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkacompat.cli.inspect_model import (
    ApiEntry,
    BrokerProbe,
    ClusterSummary,
    ProbeReport,
    api_entries,
    cluster_summary,
    identity_status,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.release_guess import ReleaseGuess
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.versions import VersionRange

__all__ = ["JSON_VERSION", "broker_document", "inspect_document", "release_guess_document"]

JSON_VERSION = 1


def _range(r: VersionRange | None) -> tuple[int | None, int | None]:
    return (None, None) if r is None or r.empty else (r.lowest, r.highest)


def _features(features: Mapping[str, VersionRange]) -> dict[str, dict[str, int]]:
    return {name: {"min": r.lowest, "max": r.highest} for name, r in sorted(features.items())}


def release_guess_document(guess: ReleaseGuess) -> dict[str, Any]:
    return {
        "kind": guess.kind,
        "relation": guess.relation,
        "releases": list(guess.releases),
        "text": guess.text,
        "evidence": list(guess.evidence),
    }


def _api(entry: ApiEntry) -> dict[str, Any]:
    broker_min, broker_max = _range(entry.broker)
    client_min, client_max = _range(entry.client)
    return {
        "api_key": entry.api_key,
        "name": entry.name,
        "broker_min": broker_min,
        "broker_max": broker_max,
        "client_min": client_min,
        "client_max": client_max,
        "usable": entry.usable,
        "reason": entry.reason,
        "policy": list(entry.policy_marks),
        "deprecated": None if entry.deprecated.empty else str(entry.deprecated),
        "refused_by_4x": None
        if entry.refused_4x is None
        else {"versions": str(entry.refused_4x[0]), "why": entry.refused_4x[1]},
    }


def _identity(capabilities: BrokerCapabilities, client_checked_cluster: str | None) -> dict[str, Any]:
    """KIP-1242: who checked that the broker is the one meant (the broker at v5, or the client)."""
    transcript = capabilities.transcript
    status, text = identity_status(capabilities, client_checked_cluster=client_checked_cluster)
    checked_by = {"confirmed": "broker", "client-checked": "client"}.get(status)
    sent = transcript.identity.to_dict() if transcript and transcript.identity_sent else None
    return {"status": status, "text": text, "sent": sent, "checked_by": checked_by}


def _capabilities(
    capabilities: BrokerCapabilities, policy: VersionPolicy | None, client_checked_cluster: str | None
) -> dict[str, Any]:
    transcript = capabilities.transcript
    return {
        "release_guess": release_guess_document(capabilities.release_guess),
        "identity": _identity(capabilities, client_checked_cluster),
        "handshake": transcript.to_dict() if transcript is not None else None,
        "apis": [_api(entry) for entry in api_entries(capabilities, policy)],
        "supported_features": _features(capabilities.supported_features),
        "supported_features_partial": capabilities.features_partial,
        "finalized_features": _features(capabilities.finalized_features),
        "finalized_features_epoch": capabilities.finalized_features_epoch,
        "fallback_release": capabilities.fallback_release,
        "throttle_time_ms": capabilities.throttle_time_ms,
    }


def broker_document(probe: BrokerProbe, policy: VersionPolicy | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "node_id": probe.node_id,
        "host": probe.host,
        "port": probe.port,
        "rack": probe.rack,
        "error": probe.error,
        "error_type": probe.error_type,
    }
    if probe.capabilities is not None:
        document.update(_capabilities(probe.capabilities, policy, probe.client_checked_cluster))
    return document


def _cluster(report: ProbeReport, summary: ClusterSummary | None) -> dict[str, Any]:
    if summary is None:
        return {"usable": {}, "skew": [], "releases": [], "finalized_features": None}
    usable = {str(key): agreement.everywhere for key, agreement in summary.view.apis.items()}
    skew = [
        {
            "api_key": agreement.api_key,
            "name": agreement.api_name,
            "everywhere": agreement.everywhere,
            "by_node": {
                str(node_id): version
                for node_id, version in sorted(
                    ((summary.node_id(node), v) for node, v in agreement.by_node.items()),
                    key=lambda p: str(p[0]),
                )
            },
            "summary": agreement.summary,
        }
        for agreement in summary.view.version_skew
    ]
    releases = [
        {"guess": group.guess, "node_ids": sorted((summary.node_id(n) for n in group.nodes), key=str)}
        for group in summary.view.releases
    ]
    view = summary.finalized
    finalized = {
        "epoch": view.epoch if view.epoch >= 0 else None,
        "features": _features(view.features),
        "from_node_ids": [int(n) for n in view.sources],
        "behind": [{"node_id": int(s.node), "epoch": s.epoch} for s in view.stale],
        "conflicting_node_ids": [int(n) for n in view.conflicts],
        "unknown_epoch_node_ids": [int(n) for n in view.unknown_epoch],
    }
    return {"usable": usable, "skew": skew, "releases": releases, "finalized_features": finalized}


def inspect_document(report: ProbeReport) -> dict[str, Any]:
    return {
        "_command": "inspect",
        "_version": JSON_VERSION,
        "observed_at": report.observed_at.isoformat().replace("+00:00", "Z"),
        "bootstrap": report.bootstrap,
        "cluster_id": report.cluster_id,
        "expected_cluster_id": report.expected_cluster_id,
        "controller_id": report.controller_id,
        "node_kind": report.node_kind,
        "note": report.note or None,
        "brokers": [broker_document(probe, report.policy) for probe in report.brokers],
        "cluster": _cluster(report, cluster_summary(report)),
    }
