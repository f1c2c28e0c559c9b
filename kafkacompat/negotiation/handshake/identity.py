"""Which broker a connection means to reach (KIP-1242), and what each broker advertised before.

Theory
======
KIP-1242 (Kafka 4.4, ApiVersions v5) lets a client say, in its first request,
which broker it meant to reach: ``ClusterId`` (a nullable string) and
``NodeId`` (int32, -1 for none).  Both or neither: a broker answers
INVALID_REQUEST (42) to a ClusterId without a NodeId and to a NodeId without a
ClusterId.  A broker listener whose cluster id or node id differs answers
REBOOTSTRAP_REQUIRED (129) with an empty ApiKeys list: the address now belongs
to someone else, and the client should resolve its bootstrap addresses and
read Metadata again.  A controller listener does not check.  (All of this was
observed on a real 4.4.0 node, broker and controller listener.)

How this code does it:

- ``BrokerIdentity`` holds both halves, so no request can carry one without
  the other.  ``identity_for`` gives the identity of a connection from what
  the connection knows: the node id it dialled (learnt from Metadata or
  DescribeCluster) and the cluster id that came with it, or the user's
  ``expected_cluster_id``.  A bootstrap connection knows no node id and sends
  none.  A coordinator connection's id (``INT32_MAX - node id``, as Kafka's
  Java client numbers them) is mapped back to the broker's own id.
- Where the broker cannot check (before 4.4, a look-alike, a controller), the
  client checks from what a Metadata answer read on the connection says:
  ``check_cluster_id`` compares its cluster id (Metadata v2+) with the one
  expected, and ``check_node_at_address`` the node Metadata names at the
  dialled address with the node the connection meant.  Either mismatch is a
  ``ClusterMismatchError`` naming what was expected and what was found.
- ``ApiVersionsMemory`` remembers, per broker address, the highest ApiVersions
  version the broker advertised.  A pre-4.4 broker answers v5 with
  UNSUPPORTED_VERSION, one extra round trip; the next connection to that
  address starts at its max and costs what it cost before v5.  The memory is
  bounded (least recently used first out), and an address is forgotten when
  its broker closes the connection on the remembered version (it may have
  been replaced by something else).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kafkacompat.errors import ClusterMismatchError, HandshakeConfigError

__all__ = [
    "COORDINATOR_ID_FLOOR",
    "ApiVersionsMemory",
    "BrokerIdentity",
    "broker_node_id",
    "check_cluster_id",
    "check_node_at_address",
    "identity_for",
]

_INT32_MAX: Final = 2**31 - 1
#: Connection ids at or above this are coordinator ids (``INT32_MAX - broker id``): no Kafka
#: deployment numbers its brokers above 2**30, and coordinator ids all lie above it.
COORDINATOR_ID_FLOOR: Final = 2**30


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """The broker a connection means to reach: both halves, always together."""

    cluster_id: str
    node_id: int

    def __post_init__(self) -> None:
        if not isinstance(self.cluster_id, str) or not self.cluster_id:
            raise HandshakeConfigError(f"a broker identity needs a cluster id, not {self.cluster_id!r}")
        node_id = self.node_id
        if isinstance(node_id, bool) or not isinstance(node_id, int) or not 0 <= node_id <= _INT32_MAX:
            raise HandshakeConfigError(f"a broker identity needs a node id in 0-{_INT32_MAX}: {node_id!r}")

    def __str__(self) -> str:
        return f"node {self.node_id} of cluster {self.cluster_id}"

    def to_dict(self) -> dict[str, object]:
        return {"cluster_id": self.cluster_id, "node_id": self.node_id}


def broker_node_id(connection_node_id: int) -> int:
    """The broker's own id behind a connection id (a coordinator's id is mapped back)."""
    if connection_node_id >= COORDINATOR_ID_FLOOR:
        return _INT32_MAX - connection_node_id
    return connection_node_id


def identity_for(
    node_id: int | None, cluster_id: str | None, *, expected_cluster_id: str | None = None
) -> BrokerIdentity | None:
    """The identity a connection to ``node_id`` sends, or None when it knows too little.

    ``node_id`` None is a bootstrap connection: no identity.  The cluster id is the
    one Metadata named, else the user's expectation; a Metadata cluster id that
    differs from the expectation is a ``ClusterMismatchError`` (see ``check_cluster_id``).
    """
    if node_id is None or node_id < 0:
        return None
    cluster = check_cluster_id(expected_cluster_id, cluster_id)
    if cluster is None:
        return None
    return BrokerIdentity(cluster, broker_node_id(node_id))


def check_cluster_id(expected: str | None, found: str | None, *, node: str | None = None) -> str | None:
    """The cluster id to trust: ``found`` unless it differs from ``expected`` (an error then).

    The client-side misrouting check, for Metadata v2+ answers (which carry the
    cluster id) from any broker, 4.4 or not.  A broker that names no cluster
    (Metadata before v2) cannot be checked: the expectation stands.
    """
    if expected is not None and found is not None and found != expected:
        raise ClusterMismatchError(
            f"the broker{f' at {node}' if node else ''} belongs to cluster {found}, "
            f"not to the expected cluster {expected}: it is someone else's broker",
            expected_cluster_id=expected,
            found_cluster_id=found,
            node=node,
        )
    return found if found is not None else expected


def check_node_at_address(
    meant_node_id: int,
    dialled: tuple[str, int],
    named: Iterable[tuple[int, str, int]],
    *,
    node: str,
    cluster_id: str | None = None,
    answer: str = "Metadata",
) -> None:
    """Refuse a connection to ``meant_node_id`` whose address the answer gives to another node.

    ``named`` is the answer's (node id, host, port) of every broker, read on the
    connection that dialled ``dialled`` (host and port as dialled, compared as
    the answer spells them); ``node`` labels that address in the error.  An
    address the answer does not name proves nothing (a proxy, another listener):
    only another node named there is misrouting.  A coordinator's connection id
    is mapped back to its broker's first.
    """
    meant = broker_node_id(meant_node_id)
    found = next((node_id for node_id, host, port in named if (host, port) == dialled), None)
    if found is None or found == meant:
        return
    of_cluster = f" of cluster {cluster_id}" if cluster_id is not None else ""
    raise ClusterMismatchError(
        f"the broker at {node} is node {found}{of_cluster}, not node {meant}: {answer} read on that "
        f"connection names node {found} there, so the address belongs to another broker now",
        expected_cluster_id=cluster_id,
        found_cluster_id=cluster_id,
        expected_node_id=meant,
        found_node_id=found,
        node=node,
    )


class ApiVersionsMemory:
    """Per broker address, the highest ApiVersions version it advertised (bounded)."""

    __slots__ = ("_capacity", "_known")

    def __init__(self, capacity: int = 4096) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise HandshakeConfigError(f"the ApiVersions memory needs a capacity of 1 or more: {capacity!r}")
        self._capacity = capacity
        self._known: OrderedDict[str, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._known)

    def recall(self, node: str) -> int | None:
        """The max ``node`` advertised last time, or None."""
        version = self._known.get(node)
        if version is not None:
            self._known.move_to_end(node)
        return version

    def remember(self, node: str, advertised_max: int) -> None:
        self._known[node] = advertised_max
        self._known.move_to_end(node)
        while len(self._known) > self._capacity:
            self._known.popitem(last=False)

    def forget(self, node: str) -> None:
        self._known.pop(node, None)
