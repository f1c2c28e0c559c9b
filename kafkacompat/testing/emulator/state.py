"""The state an emulated cluster shares between its brokers.

Theory.  Every broker of a real cluster answers from the same metadata: the
same brokers, controller, cluster id, topics and finalized features, whatever
release each broker runs.  So the emulator keeps one ``ClusterState`` per
cluster and each broker (a ``Node``) answers from it through its own profile.
That is what makes a rolling upgrade emulable: a 2.8 and a 3.0 broker give
the same coordinator for a key, each in the protocol version it speaks.

Coordinators are placed the way Kafka places them: a group or transactional
id lives in partition ``abs(javaHashCode(key)) % 50`` of ``__consumer_offsets``
or ``__transaction_state``, and that partition's leader is the coordinator.
Here partition ``p`` is led by the ``p % n``-th broker by node id, so the
answer is deterministic and the same on every broker and at every version.
Per-key errors (``coordinator_errors``) override the answer for a key.

Finalized features change only through UpdateFeatures (see ``controller``);
each change bumps the epoch.  A broker can be told to keep reporting what it
knew at some point (``Node.held_features``), as a broker that has not caught up
with the metadata log would.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.testing.emulator.profile import BrokerProfile

__all__ = [
    "COORDINATOR_PARTITIONS",
    "ClusterState",
    "FeatureSnapshot",
    "Node",
    "java_string_hash",
]

#: Kafka's default partition count of __consumer_offsets and __transaction_state.
COORDINATOR_PARTITIONS = 50


@dataclass(frozen=True, slots=True)
class FeatureSnapshot:
    """Finalized feature levels at an epoch (levels of 0 are not finalized)."""

    epoch: int
    levels: Mapping[str, int] = field(default_factory=dict, hash=False)


@dataclass(slots=True)
class Node:
    """One emulated broker or controller: its id, its profile and where it listens."""

    node_id: int
    profile: BrokerProfile
    host: str = "127.0.0.1"
    port: int = 0
    rack: str | None = None
    held_features: FeatureSnapshot | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, wrapping at 32 bits."""
    value = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        unit = (encoded[index] << 8) | encoded[index + 1]
        value = (31 * value + unit) & 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


class ClusterState:
    """What every broker of one emulated cluster answers from."""

    def __init__(
        self,
        nodes: Iterable[Node],
        *,
        cluster_id: str = "kafkacompat-emulated",
        topics: Mapping[str, int] | None = None,
        coordinator_errors: Mapping[str, int] | None = None,
        finalized_features: Mapping[str, int] | None = None,
        finalized_epoch: int | None = None,
        controller_id: int | None = None,
    ) -> None:
        self.nodes: dict[int, Node] = {}
        for node in nodes:
            if node.node_id in self.nodes:
                raise EmulatorConfigError(f"node id {node.node_id} is used twice")
            self.nodes[node.node_id] = node
        if not self.nodes:
            raise EmulatorConfigError("a cluster needs at least one node")
        self.cluster_id = cluster_id
        self.topics: dict[str, int] = dict(topics or {})
        for name, partitions in self.topics.items():
            if partitions < 1:
                raise EmulatorConfigError(f"topic {name!r} needs at least one partition")
        self.coordinator_errors: dict[str, int] = dict(coordinator_errors or {})
        levels = _default_finalized(self.nodes.values()) if finalized_features is None else finalized_features
        self.finalized: dict[str, int] = {name: lv for name, lv in levels.items() if lv > 0}
        self.finalized_epoch = (1 if self.finalized else 0) if finalized_epoch is None else finalized_epoch
        self.controller_id = self._default_controller() if controller_id is None else controller_id
        if self.controller_id not in self.nodes:
            raise EmulatorConfigError(f"controller id {self.controller_id} is not a node of the cluster")

    # -- membership ------------------------------------------------------------------------

    def brokers(self) -> list[Node]:
        """Nodes that serve clients (every kind but kraft-controller), by node id."""
        return [n for _, n in sorted(self.nodes.items()) if not n.profile.is_controller]

    def controllers(self) -> list[Node]:
        return [n for _, n in sorted(self.nodes.items()) if n.profile.is_controller]

    def _default_controller(self) -> int:
        """A ZooKeeper cluster's controller is a broker; a KRaft one's a controller if any."""
        controllers = self.controllers()
        if controllers:
            return controllers[0].node_id
        return min(self.nodes)

    def metadata_controller_id(self, asking: Node) -> int:
        """The controller id a broker puts in Metadata.

        ZooKeeper brokers name the controller broker.  KRaft brokers cannot send
        clients to a controller, so they name a live broker instead (KIP-631);
        here the lowest broker id, to stay deterministic.
        """
        if asking.profile.is_zk:
            return self.controller_id
        brokers = self.brokers()
        return brokers[0].node_id if brokers else -1

    def swap_node_ids(self, first: int, second: int) -> None:
        """Two nodes trade ids, each keeping its address and release: brokers that moved.

        A client that read Metadata before sends each node's traffic to the other
        one's address, where the broker now answers for the other id (KIP-1242's
        misrouting: a 4.4 broker refuses the identity, an older one cannot tell).
        """
        for node_id in (first, second):
            if node_id not in self.nodes:
                raise EmulatorConfigError(f"no node {node_id} in this cluster")
        a, b = self.nodes[first], self.nodes[second]
        a.node_id, b.node_id = second, first
        self.nodes[first], self.nodes[second] = b, a
        if self.controller_id in (first, second):
            self.controller_id = second if self.controller_id == first else first

    # -- coordinators ----------------------------------------------------------------------

    def coordinator_for(self, key: str) -> Node | None:
        brokers = self.brokers()
        if not brokers:
            return None
        partition = (java_string_hash(key) & 0x7FFFFFFF) % COORDINATOR_PARTITIONS
        return brokers[partition % len(brokers)]

    def leader_for(self, topic: str, partition: int) -> Node | None:
        brokers = self.brokers()
        if not brokers:
            return None
        start = java_string_hash(topic) & 0x7FFFFFFF
        return brokers[(start + partition) % len(brokers)]

    @staticmethod
    def topic_id(topic: str) -> uuid.UUID:
        """A stable topic id per name (KIP-516 ids are random; ours must be reproducible)."""
        return uuid.uuid5(uuid.NAMESPACE_URL, f"kafkacompat-emulator/topic/{topic}")

    # -- features --------------------------------------------------------------------------

    def features_seen_by(self, node: Node) -> FeatureSnapshot:
        if node.held_features is not None:
            return node.held_features
        return FeatureSnapshot(self.finalized_epoch, dict(self.finalized))

    def finalize(self, levels: Mapping[str, int]) -> None:
        """Apply finalized levels (0 removes a feature) and bump the epoch."""
        for name, level in levels.items():
            if level > 0:
                self.finalized[name] = level
            else:
                self.finalized.pop(name, None)
        self.finalized_epoch += 1


def _default_finalized(nodes: Iterable[Node]) -> dict[str, int]:
    """What the cluster was formatted with: per feature, the lowest default of its KRaft nodes.

    In a rolling upgrade the finalized levels stay those of the oldest release
    until someone raises them, and every node must support them.
    """
    kraft = [n.profile for n in nodes if not n.profile.is_zk]
    if not kraft:
        return {}
    names = set().union(*(p.default_finalized for p in kraft))
    levels = {name: min(p.default_finalized.get(name, 0) for p in kraft) for name in names}
    return {name: level for name, level in levels.items() if level > 0}
