"""Per-API request handlers of the emulated broker.

Theory.  A handler turns one decoded request into one response message, read
from the cluster state through the answering node's profile; it never does I/O
and never sees the wire (the connection encodes the answer at the request's
version).  The emulator handles what a client needs to find its way around a
cluster and negotiate with it: ApiVersions, Metadata, FindCoordinator,
DescribeCluster and UpdateFeatures (SASL is stateful and lives in the
connection).  Client traffic (produce, fetch, groups, transactions) and a
generic default answer for every other advertised API live in ``fallback``.  A
handler of your own for any API key (``handlers={api_key: fn}``) takes
precedence, in the spirit of franz-go's kfake control functions.

Version notes that change answers, each from the release that brought them:
Metadata v1 (0.10.0) reports the controller and null topics mean "all" (v0:
an empty list does); v2 (0.10.1) the cluster id; v10 (2.8, KIP-516) topic ids.
FindCoordinator v1 (0.11) adds the key type and an error message; v4 (3.0,
KIP-699) batches keys with one result each.  DescribeCluster (2.8, KIP-700);
v1 (3.7, KIP-919) adds the endpoint type, which a node of the other type
refuses with MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0); a controller
answers it only once metadata.version is 3.7-IV0 or later (controllers
register their endpoints from then on), UNSUPPORTED_VERSION before.
ApiVersions v5 (4.4, KIP-1242): ClusterId and NodeId come both or neither
(INVALID_REQUEST otherwise, on any listener); a broker whose cluster or node id
differs answers REBOOTSTRAP_REQUIRED, a controller does not check (as a real
4.4.0 node did).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kafkacompat.negotiation.features import CATALOG, METADATA_VERSION
from kafkacompat.negotiation.handshake.config import SOFTWARE_FIELD_PATTERN
from kafkacompat.protocol.error_codes import (
    BY_NAME,
    COORDINATOR_NOT_AVAILABLE,
    INVALID_REQUEST,
    NONE,
    REBOOTSTRAP_REQUIRED,
    error_for,
)
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from kafkacompat.testing.emulator.controller import SAFE_DOWNGRADE, UPGRADE, FeatureUpdate, update_features
from kafkacompat.testing.emulator.profile import API_VERSIONS_KEY, ApiVersionsEra
from kafkacompat.testing.emulator.state import ClusterState, Node

__all__ = [
    "BUILTIN_HANDLERS",
    "Handler",
    "Request",
    "api_versions",
    "api_versions_reply",
    "describe_cluster",
    "find_coordinator",
    "metadata",
    "unsupported_api_versions",
    "update_features_handler",
]

UNKNOWN_TOPIC_OR_PARTITION = BY_NAME["UNKNOWN_TOPIC_OR_PARTITION"].code
MISMATCHED_ENDPOINT_TYPE = BY_NAME["MISMATCHED_ENDPOINT_TYPE"].code
UNSUPPORTED_ENDPOINT_TYPE = BY_NAME["UNSUPPORTED_ENDPOINT_TYPE"].code
_KEY_TYPES = {0: "group", 1: "transaction", 2: "share"}  # share: FindCoordinator v6 (KIP-932)


@dataclass(frozen=True, slots=True)
class Request:
    """One decoded request as a handler sees it."""

    node: Node
    state: ClusterState
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    body: KafkaMessage


Handler = Callable[[Request], KafkaMessage]

# The metadata.version from which controllers register their endpoints (KIP-919).
_CONTROLLER_REGISTRATION_LEVEL = CATALOG.metadata_version_level("3.7-IV0")


# -- ApiVersions ---------------------------------------------------------------------------


def api_versions_reply(
    node: Node, state: ClusterState, version: int, error_code: int = NONE
) -> ApiVersionsResponse:
    """The full ApiVersions answer of ``node`` (features from v3, when its release has them)."""
    profile = node.profile
    response = ApiVersionsResponse(
        error_code=error_code,
        api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=key, min_version=r.lowest, max_version=r.highest)
            for key, r in sorted(profile.apis.items())
        ],
    )
    if version >= 3:
        # A broker that has ApiVersions v4 leaves features of minimum 0 out of older
        # answers, which old clients would reject (KAFKA-17011).
        drop_min_0 = (
            version < 4 and (own := profile.apis.get(API_VERSIONS_KEY)) is not None and own.highest >= 4
        )
        response.supported_features = [
            ApiVersionsResponse.SupportedFeatureKey(name=name, min_version=r.lowest, max_version=r.highest)
            for name, r in sorted(profile.supported_features.items())
            if not (drop_min_0 and r.lowest == 0)
        ]
    if version >= 3 and profile.reports_finalized:  # a 3.3-3.5 controller lists features, finalizes none
        seen = state.features_seen_by(node)
        response.finalized_features_epoch = seen.epoch
        response.finalized_features = [
            ApiVersionsResponse.FinalizedFeatureKey(
                name=name, max_version_level=level, min_version_level=level
            )
            for name, level in sorted(seen.levels.items())
        ]
    return response


def api_versions(request: Request) -> KafkaMessage:
    """A readable ApiVersions request; v3+ software fields are checked from 2.4 (KIP-511)."""
    body = request.body
    assert isinstance(body, ApiVersionsRequest)
    if request.version >= 3:
        fields = (body.client_software_name, body.client_software_version)
        if not all(SOFTWARE_FIELD_PATTERN.fullmatch(value) for value in fields):
            return ApiVersionsResponse(error_code=INVALID_REQUEST)
    if request.version >= 5:
        cluster_id, node_id = body.cluster_id, body.node_id
        if (cluster_id is None) != (node_id == -1):  # one half of the identity alone
            return ApiVersionsResponse(error_code=INVALID_REQUEST)
        node = request.node
        checked = cluster_id is not None and not node.profile.is_controller  # controllers do not check
        if checked and (cluster_id != request.state.cluster_id or node_id != node.node_id):
            return ApiVersionsResponse(error_code=REBOOTSTRAP_REQUIRED)
    return api_versions_reply(request.node, request.state, request.version)


def unsupported_api_versions(node: Node) -> ApiVersionsResponse:
    """The v0 UNSUPPORTED_VERSION answer: key 18's range from 2.4 (KIP-511), nothing before."""
    reply = ApiVersionsResponse(error_code=BY_NAME["UNSUPPORTED_VERSION"].code)
    own = node.profile.apis.get(API_VERSIONS_KEY)
    if node.profile.api_versions_era is ApiVersionsEra.KIP_511 and own is not None:
        reply.api_keys = [
            ApiVersionsResponse.ApiVersion(
                api_key=API_VERSIONS_KEY, min_version=own.lowest, max_version=own.highest
            )
        ]
    return reply


# -- Metadata ------------------------------------------------------------------------------


def metadata(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, MetadataRequest)
    state, version = request.state, request.version
    if request.node.profile.is_controller:  # only 2.8's controller lists Metadata
        return _early_controller_metadata(request)
    response = MetadataResponse(
        brokers=[
            MetadataResponse.MetadataResponseBroker(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
            for n in state.brokers()
        ],
        cluster_id=state.cluster_id if version >= 2 else None,
        controller_id=state.metadata_controller_id(request.node),
    )
    if body.topics is None or (version == 0 and not body.topics):
        wanted = sorted(state.topics)
    else:
        by_id = {state.topic_id(name): name for name in state.topics}
        wanted = [
            t.name if t.name is not None else by_id.get(t.topic_id, str(t.topic_id)) for t in body.topics
        ]
    response.topics = [_topic(state, name, version) for name in wanted]
    return response


def _early_controller_metadata(request: Request) -> MetadataResponse:
    """Metadata as Kafka 2.8's controller answers it (seen on a real 2.8.2 node, make real-kafka).

    The quorum's voters as the brokers, named as the controller resolves their
    address back (127.0.0.1 is ``localhost``), the cluster id, the node's own id
    as the controller id when it is the active controller (else -1), no topic.
    """
    state = request.state
    return MetadataResponse(
        brokers=[
            MetadataResponse.MetadataResponseBroker(
                node_id=n.node_id, host="localhost" if n.host == "127.0.0.1" else n.host, port=n.port
            )
            for n in state.controllers()
        ],
        cluster_id=state.cluster_id if request.version >= 2 else None,
        controller_id=request.node.node_id if request.node.node_id == state.controller_id else -1,
        topics=[],
    )


def _topic(state: ClusterState, name: str, version: int) -> MetadataResponse.MetadataResponseTopic:
    partitions = state.topics.get(name)
    if partitions is None:
        return MetadataResponse.MetadataResponseTopic(error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name)
    rows = []
    for index in range(partitions):
        leader = state.leader_for(name, index)
        leader_id = leader.node_id if leader is not None else -1
        replicas = [leader_id] if leader is not None else []
        rows.append(MetadataResponse.MetadataResponsePartition(
            partition_index=index, leader_id=leader_id, leader_epoch=0,
            replica_nodes=replicas, isr_nodes=list(replicas),
        ))
    topic_id = state.topic_id(name) if version >= 10 else None
    topic = MetadataResponse.MetadataResponseTopic(name=name, partitions=rows)
    if topic_id is not None:
        topic.topic_id = topic_id
    return topic


# -- FindCoordinator -----------------------------------------------------------------------


def _coordinator(state: ClusterState, key: str, key_type: int) -> tuple[int, str | None, Node | None]:
    if key_type not in _KEY_TYPES:
        return INVALID_REQUEST, f"unknown coordinator key type {key_type}", None
    forced = state.coordinator_errors.get(key)
    if forced is not None:
        return forced, error_for(forced).message, None
    node = state.coordinator_for(key)
    if node is None:
        return COORDINATOR_NOT_AVAILABLE, "no broker can be the coordinator", None
    return NONE, None, node


def find_coordinator(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, FindCoordinatorRequest)
    key_type = body.key_type if request.version >= 1 else 0
    if request.version >= 4:
        coordinators = []
        for key in body.coordinator_keys:
            code, message, node = _coordinator(request.state, key, key_type)
            coordinators.append(FindCoordinatorResponse.Coordinator(
                key=key, node_id=node.node_id if node else -1, host=node.host if node else "",
                port=node.port if node else -1, error_code=code, error_message=message,
            ))
        return FindCoordinatorResponse(coordinators=coordinators)
    code, message, node = _coordinator(request.state, body.key, key_type)
    return FindCoordinatorResponse(
        error_code=code, error_message=message if request.version >= 1 else None,
        node_id=node.node_id if node else -1, host=node.host if node else "", port=node.port if node else -1,
    )


# -- DescribeCluster -----------------------------------------------------------------------


def describe_cluster(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, DescribeClusterRequest)
    state, node, version = request.state, request.node, request.version
    own_type = 2 if node.profile.is_controller else 1
    asked = body.endpoint_type if version >= 1 else 1
    if asked not in (1, 2):
        code = INVALID_REQUEST if version == 0 else UNSUPPORTED_ENDPOINT_TYPE
        return DescribeClusterResponse(error_code=code, error_message=f"unsupported endpoint type {asked}")
    if asked != own_type:
        code = INVALID_REQUEST if version == 0 else MISMATCHED_ENDPOINT_TYPE
        names = {1: "brokers", 2: "controllers"}
        return DescribeClusterResponse(
            error_code=code,
            error_message=f"this endpoint serves {names[own_type]}, the request asked for {names[asked]}",
        )
    if own_type == 2 and state.finalized.get(METADATA_VERSION, 0) < _CONTROLLER_REGISTRATION_LEVEL:
        return DescribeClusterResponse(
            error_code=BY_NAME["UNSUPPORTED_VERSION"].code,
            error_message="controllers are described from metadata.version 3.7-IV0 on",
        )
    members = state.controllers() if own_type == 2 else state.brokers()
    controller = state.controller_id if own_type == 2 else state.metadata_controller_id(node)
    return DescribeClusterResponse(
        endpoint_type=own_type,
        cluster_id=state.cluster_id,
        controller_id=controller,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(
                broker_id=m.node_id, host=m.host, port=m.port, rack=m.rack
            )
            for m in members
        ],
    )


# -- UpdateFeatures ------------------------------------------------------------------------


def update_features_handler(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, UpdateFeaturesRequest)
    version = request.version
    updates = [
        FeatureUpdate(
            u.feature, u.max_version_level,
            u.upgrade_type if version >= 1 else (SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE),
        )
        for u in body.feature_updates
    ]
    validate_only = body.validate_only if version >= 1 else False
    outcome = update_features(request.state, request.node, updates, validate_only=validate_only)
    response = UpdateFeaturesResponse(error_code=outcome.error_code, error_message=outcome.error_message)
    if version <= 1 and outcome.error_code == NONE:
        response.results = [
            UpdateFeaturesResponse.UpdatableFeatureResult(
                feature=name, error_code=code, error_message=message
            )
            for name, (code, message) in outcome.results.items()
        ]
    return response


BUILTIN_HANDLERS: Mapping[int, Handler] = {
    ApiKey.METADATA: metadata,
    ApiKey.FIND_COORDINATOR: find_coordinator,
    ApiKey.API_VERSIONS: api_versions,
    ApiKey.UPDATE_FEATURES: update_features_handler,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster,
}
