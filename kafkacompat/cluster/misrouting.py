"""Is the broker at this address the one the cluster meant?  KIP-1242's check, done by the client.

Theory
======
KIP-1242 (Kafka 4.4) has a broker refuse, with REBOOTSTRAP_REQUIRED, an
ApiVersions v5 request naming another cluster or another node: the client
learns at once that the address it dialled now belongs to someone else (a
broker that moved, an address reused by another cluster).  A broker before
4.4, a look-alike or a controller cannot do that, so the cluster layer checks
for them, from a Metadata (or, on controllers, DescribeCluster) answer read on
the connection:

- the cluster id it names (Metadata v2+) must be the one expected: the
  user's ``expected_cluster_id``, else the one the cluster was discovered with;
- the node it names at the address dialled must be the node the connection
  meant (another node id there is misrouting; an address it does not name
  proves nothing).

The decisions are ``handshake.identity.check_cluster_id`` and
``check_node_at_address``; this module says when the cluster layer applies
them (``ConnectionConfig.misrouting_check``): wherever it reads such an answer
anyway (``"metadata"``, the default: no extra round trip), and with
``"every-connection"`` also on each new connection to a known node that did
not confirm its identity at v5 (one Metadata round trip more on such
connections, none on 4.4 brokers).  A mismatch is a ``ClusterMismatchError``;
the cluster layer then bootstraps again, as on REBOOTSTRAP_REQUIRED, instead of
retrying the address (``ClusterCore._rebootstrapped``).
"""

from __future__ import annotations

import weakref

from kafkacompat.cluster.backend import NodeConnection
from kafkacompat.cluster.discovery import ClusterMetadata
from kafkacompat.negotiation.handshake.identity import check_cluster_id, check_node_at_address
from kafkacompat.negotiation.node_role import looks_like_controller

__all__ = ["ClientChecks", "check_answer_source", "confirmed_by_broker", "needs_own_check"]


def check_answer_source(
    conn: NodeConnection, answer: ClusterMetadata, known_cluster_id: str | None
) -> str | None:
    """Raise ``ClusterMismatchError`` when ``answer``, read on ``conn``, shows ``conn`` misrouted.

    ``known_cluster_id``: the cluster the connection meant (the user's expectation,
    else the one discovered).  A bootstrap connection (no node id) meant no node.
    Returns the cluster id ``conn`` was found to belong to (None: none was compared).
    With ``misrouting_check="off"`` only an explicit ``expected_cluster_id`` is compared.
    """
    by_user = conn.config.handshake.expected_cluster_id
    expected = by_user if conn.config.misrouting_check == "off" else by_user or known_cluster_id
    check_cluster_id(expected, answer.cluster_id, node=conn.node)
    compared = expected if answer.cluster_id is not None else None
    if conn.config.misrouting_check == "off" or conn.node_id is None or answer.source == "ApiVersions":
        return compared  # the node is not checked: none was meant, or the answer names none
    named = [(b.node_id, b.host, b.port) for b in answer.brokers.values()]
    what = f"{answer.source} v{answer.metadata_version}"
    check_node_at_address(
        conn.node_id, (conn.host, conn.port), named, node=conn.node, cluster_id=answer.cluster_id, answer=what
    )
    return compared


def confirmed_by_broker(conn: NodeConnection) -> bool:
    """The broker itself confirmed the identity ``conn`` sent (ApiVersions v5; controllers do not check)."""
    handshake, capabilities = conn.handshake, conn.capabilities
    if handshake is None or handshake.transcript is None or handshake.transcript.identity_sent is None:
        return False
    return capabilities is not None and not looks_like_controller(capabilities)


def needs_own_check(conn: NodeConnection) -> bool:
    """Whether a newly opened ``conn`` must be checked by a Metadata read of its own."""
    return (
        conn.config.misrouting_check == "every-connection"
        and conn.node_id is not None
        and not confirmed_by_broker(conn)
    )


class ClientChecks:
    """Which open connections the cluster layer checked itself, and against which cluster id."""

    __slots__ = ("_checked",)

    def __init__(self) -> None:
        self._checked: weakref.WeakKeyDictionary[NodeConnection, str] = weakref.WeakKeyDictionary()

    def record(self, conn: NodeConnection, cluster_id: str | None) -> None:
        if cluster_id is not None:
            self._checked[conn] = cluster_id

    def cluster_of(self, conn: NodeConnection) -> str | None:
        return self._checked.get(conn)
