"""The sans-I/O negotiation core: decisions only, no sockets, no clocks, no trio.

Bytes and outcomes go in, decisions come out, so the transport, the command
line, the emulator and the Spark pipeline all share one implementation.
"""

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
from kafkacompat.negotiation.handshake import ApiVersionsHandshake, HandshakeConfig, HandshakeResult
from kafkacompat.negotiation.release_guess import ReleaseGuess, guess_release
from kafkacompat.negotiation.transcript import HandshakeAttempt, HandshakeTranscript
from kafkacompat.negotiation.version_policy import VersionChoice, VersionPolicy, explain, pick_version

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
    "explain",
    "guess_release",
    "max_safe_level",
    "merge_finalized",
    "pick_version",
    "plan_coordinator_lookups",
    "plan_feature_updates",
    "read_update_features",
    "replan",
]
