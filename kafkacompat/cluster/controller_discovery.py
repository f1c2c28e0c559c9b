"""Finding KRaft controllers: the nodes behind Kafka's ``--bootstrap-controller`` (KIP-919).

Theory.  A KRaft controller serves its own listener's APIs (ApiVersions, the
Raft quorum, broker registration and heartbeats, features, ...) and never
Metadata, which is how a client finds brokers.  Since 3.7 (KIP-919) a
controller answers DescribeCluster with ``EndpointType`` 2 (controllers):
every controller's endpoint and the active controller (the Raft leader).
``EndpointType`` arrived in DescribeCluster v1; v0 means "brokers", which a
controller refuses, as a broker asked for controllers answers
MISMATCHED_ENDPOINT_TYPE.  A controller older than 3.7 lists no
DescribeCluster: it can only be inspected on its own, with no node id (-1,
as Kafka's tools print a bootstrap node) and no cluster id.  So is one that
lists it but refuses it: Kafka's controllers answer UNSUPPORTED_VERSION while
metadata.version is below 3.7-IV0 (controllers register their endpoints from
then on), and CLUSTER_AUTHORIZATION_FAILED to a principal without ALTER on
the cluster; the reason is kept in ``ClusterMetadata.note``.

A node is taken for a controller by ``negotiation.node_role``: no Metadata,
but Vote and BrokerRegistration, which no broker of any release lists.
"""

from __future__ import annotations

from types import MappingProxyType

from kafkacompat.cluster.backend import NodeConnection, negotiated
from kafkacompat.cluster.call_deadline import time_left
from kafkacompat.cluster.discovery import BrokerAddress, ClusterMetadata, broker_from_reply
from kafkacompat.errors import KafkaCompatError, NegotiationError, WrongEndpointError, attach_context
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.node_role import looks_like_controller
from kafkacompat.protocol.error_codes import error_for
from kafkacompat.protocol.messages import DescribeClusterRequest

__all__ = ["UNKNOWN_NODE_ID", "ask_controllers"]

DESCRIBE_CLUSTER = DescribeClusterRequest.API_KEY
#: DescribeCluster's EndpointType for controllers (1 is brokers).
CONTROLLERS_ENDPOINT = 2
#: The first DescribeCluster version with EndpointType.
_ENDPOINT_TYPE_SINCE = 1
#: The node id of a controller that does not say its own (Kafka prints -1 for such nodes too).
UNKNOWN_NODE_ID = -1
_MISMATCHED_ENDPOINT_TYPE = 114
# Refusals that leave the controller itself worth inspecting: metadata.version below
# 3.7-IV0 (UNSUPPORTED_VERSION), no ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
_INSPECT_ALONE = frozenset({35, 31})


def _capabilities(conn: NodeConnection) -> BrokerCapabilities:
    if conn.capabilities is None:  # pragma: no cover - asked only of negotiated connections
        raise NegotiationError("the connection has not negotiated yet", node=conn.node)
    return conn.capabilities


async def ask_controllers(conn: NodeConnection) -> ClusterMetadata:
    """The controller quorum as ``conn``'s controller describes it (itself alone before 3.7).

    Raises ``WrongEndpointError`` when ``conn`` reaches a broker, and
    ``NegotiationError`` when DescribeCluster answers another error.
    """
    capabilities = _capabilities(conn)
    if not looks_like_controller(capabilities):
        error = WrongEndpointError(
            f"{conn.node} is a broker, not a KRaft controller: it lists Metadata, or not the Raft APIs"
        )
        raise attach_context(error, node=conn.node, transcript=capabilities.transcript)
    if capabilities.broker_range(DESCRIBE_CLUSTER).highest < _ENDPOINT_TYPE_SINCE:
        return _alone(conn)
    version = _pick(conn)
    request = DescribeClusterRequest(endpoint_type=CONTROLLERS_ENDPOINT)
    timeout = time_left(conn.config.request_timeout, f"asking {conn.node} for DescribeCluster")
    response = await conn.request(request, version=version, request_timeout=timeout)
    if response.error_code:
        entry = error_for(response.error_code)
        detail = f": {response.error_message}" if response.error_message else ""
        answered = f"DescribeCluster v{version} answered {entry.name}{detail}"
        if response.error_code in _INSPECT_ALONE:
            return _alone(conn, f"{answered}; the controller is inspected alone")
        kind = WrongEndpointError if response.error_code == _MISMATCHED_ENDPOINT_TYPE else NegotiationError
        raise kind(answered, node=conn.node)
    reply = f"DescribeCluster v{version}"
    nodes = {  # every address checked: a controller is no more trusted than a broker
        b.broker_id: broker_from_reply(b.broker_id, b.host, b.port, b.rack, reply, conn.node)
        for b in sorted(response.brokers, key=lambda b: b.broker_id)
    }
    if not nodes:
        raise NegotiationError(f"DescribeCluster v{version} named no controllers", node=conn.node)
    leader = response.controller_id if response.controller_id in nodes else None
    return ClusterMetadata(
        response.cluster_id or None,
        leader,
        MappingProxyType(nodes),
        version,
        conn.node,
        node_kind="controller",
        source="DescribeCluster",
    )


def _pick(conn: NodeConnection) -> int:
    try:
        version = negotiated(conn).pick_version(DESCRIBE_CLUSTER)
    except KafkaCompatError as exc:
        attach_context(exc, transcript=conn.handshake.transcript if conn.handshake else None)
        raise
    if version < _ENDPOINT_TYPE_SINCE:  # the policy allows only v0, which cannot ask for controllers
        raise NegotiationError(
            f"DescribeCluster v{version} cannot ask for controllers (EndpointType arrived in "
            f"v{_ENDPOINT_TYPE_SINCE}); the version policy allows no later version",
            node=conn.node,
        )
    return version


def _alone(conn: NodeConnection, note: str = "") -> ClusterMetadata:
    """A controller without (a usable) DescribeCluster: the node itself, id and cluster unknown."""
    node = BrokerAddress(UNKNOWN_NODE_ID, conn.host, conn.port)
    return ClusterMetadata(
        None,
        None,
        MappingProxyType({UNKNOWN_NODE_ID: node}),
        -1,
        conn.node,
        node_kind="controller",
        source="ApiVersions",
        note=note,
    )
