"""The sans-I/O negotiation core: decisions only, no sockets, no clocks, no trio.

Bytes and outcomes go in, decisions come out, so the transport, the command
line, the emulator and the Spark pipeline all share one implementation.

The names below are loaded on first use: a connection that only negotiates
does not import the coordinator planner, the feature logic or the release table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from kafkacompat.negotiation.capabilities import BrokerCapabilities
    from kafkacompat.negotiation.cluster_view import ClusterView, build_cluster_view
    from kafkacompat.negotiation.coordinators import (
        CoordinatorKeyType,
        CoordinatorPlan,
        CoordinatorResults,
        plan_coordinator_lookups,
        replan,
    )
    from kafkacompat.negotiation.feature_updates import (
        FeatureUpdate,
        FeatureUpdateResult,
        UpgradeType,
        build_update_features,
        plan_feature_updates,
        read_update_features,
    )
    from kafkacompat.negotiation.features import (
        CATALOG,
        FinalizedObservation,
        can_finalize,
        can_finalize_all,
        max_safe_level,
        merge_finalized,
    )
    from kafkacompat.negotiation.handshake import (
        ApiVersionsHandshake,
        HandshakeAttempt,
        HandshakeConfig,
        HandshakeResult,
        HandshakeTranscript,
    )
    from kafkacompat.negotiation.release_guess import ReleaseGuess, guess_release
    from kafkacompat.negotiation.version_policy import VersionChoice, VersionPolicy

_HOMES = {
    "ApiVersionsHandshake": "handshake",
    "BrokerCapabilities": "capabilities",
    "CATALOG": "features",
    "ClusterView": "cluster_view",
    "CoordinatorKeyType": "coordinators",
    "CoordinatorPlan": "coordinators",
    "CoordinatorResults": "coordinators",
    "FeatureUpdate": "feature_updates",
    "FeatureUpdateResult": "feature_updates",
    "FinalizedObservation": "features",
    "HandshakeAttempt": "handshake",
    "HandshakeConfig": "handshake",
    "HandshakeResult": "handshake",
    "HandshakeTranscript": "handshake",
    "ReleaseGuess": "release_guess",
    "UpgradeType": "feature_updates",
    "VersionChoice": "version_policy",
    "VersionPolicy": "version_policy",
    "build_cluster_view": "cluster_view",
    "build_update_features": "feature_updates",
    "can_finalize": "features",
    "can_finalize_all": "features",
    "guess_release": "release_guess",
    "max_safe_level": "features",
    "merge_finalized": "features",
    "plan_coordinator_lookups": "coordinators",
    "plan_feature_updates": "feature_updates",
    "read_update_features": "feature_updates",
    "replan": "coordinators",
}

__all__ = [
    "CATALOG",
    "ApiVersionsHandshake",
    "BrokerCapabilities",
    "ClusterView",
    "CoordinatorKeyType",
    "CoordinatorPlan",
    "CoordinatorResults",
    "FeatureUpdate",
    "FeatureUpdateResult",
    "FinalizedObservation",
    "HandshakeAttempt",
    "HandshakeConfig",
    "HandshakeResult",
    "HandshakeTranscript",
    "ReleaseGuess",
    "UpgradeType",
    "VersionChoice",
    "VersionPolicy",
    "build_cluster_view",
    "build_update_features",
    "can_finalize",
    "can_finalize_all",
    "guess_release",
    "max_safe_level",
    "merge_finalized",
    "plan_coordinator_lookups",
    "plan_feature_updates",
    "read_update_features",
    "replan",
]


__getattr__ = _lazy_exports(__name__, _HOMES)
