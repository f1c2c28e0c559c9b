"""Finding the brokers: bootstrap addresses, the Metadata answer, and what failing looks like.

The pieces of ``cluster`` that do not need a running cluster: parsing a
bootstrap list, asking one negotiated connection for Metadata (brokers and
controller, no topics) at the version it negotiated, and the errors that tell
"unreachable" apart from the handshake's and the version policy's errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kafkacompat.cluster.backend import NodeConnection, negotiated
from kafkacompat.cluster.call_deadline import time_left
from kafkacompat.errors import (
    BrokersUnavailableError,
    ConfigError,
    InvalidAddressError,
    KafkaCompatError,
    KafkaTimeoutError,
    TransportError,
    attach_context,
    describe_failure,
)
from kafkacompat.negotiation.addresses import MAX_HOST_LENGTH, check_address, display_host, split_host_port
from kafkacompat.negotiation.node_role import NodeKind
from kafkacompat.protocol.messages import MetadataRequest

__all__ = [
    "RETRIABLE",
    "BrokerAddress",
    "ClusterMetadata",
    "address_label",
    "ask_metadata",
    "broker_from_reply",
    "describe_failure",
    "parse_bootstrap",
    "raise_failures",
]

METADATA = MetadataRequest.API_KEY
DEFAULT_PORT = 9092
#: What is worth retrying: the connection failed or a deadline passed.
RETRIABLE = (TransportError, KafkaTimeoutError)


# -- addresses and metadata -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """One broker as Metadata names it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    #: Why this address cannot be used (checked when the answer was read), else None.
    problem: InvalidAddressError | None = field(default=None, compare=False)

    @property
    def address(self) -> str:
        return address_label(self.host, self.port)


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """What one Metadata answer said about the cluster (no topics are asked for).

    For KRaft controllers (``node_kind="controller"``, see
    ``controller_discovery``) ``brokers`` holds the controllers, from
    DescribeCluster (``source``), or the one controller reached when it has no
    DescribeCluster (``source="ApiVersions"``, node id -1, version -1).
    """

    cluster_id: str | None
    controller_id: int | None  # None: not given (v0) or not among the brokers
    brokers: Mapping[int, BrokerAddress]
    metadata_version: int
    answered_by: str
    node_kind: NodeKind = "broker"
    source: str = "Metadata"
    note: str = ""  # why the answer is less than asked for (a controller that would not describe its quorum)

    def describe(self) -> str:
        nodes = ", ".join(f"{b.node_id}@{b.address}" for b in self.brokers.values())
        controller = self.controller_id if self.controller_id is not None else "unknown"
        how = f"v{self.metadata_version} " if self.metadata_version >= 0 else ""
        note = f"; {self.note}" if self.note else ""
        return (
            f"cluster {self.cluster_id or '(no id)'}: {len(self.brokers)} {self.node_kind}(s) [{nodes}], "
            f"controller {controller} ({self.source} {how}from {self.answered_by}){note}"
        )


def address_label(host: str, port: int) -> str:
    if len(host) > MAX_HOST_LENGTH or not host.isprintable():  # a hostile name: printed escaped and cut
        host = display_host(host)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_bootstrap(bootstrap: str | Iterable[str | tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """``"h1:9092,h2:9092"``, ``["h1:9092", ("h2", 9092)]`` or ``"[::1]:9092"`` -> (host, port) pairs."""
    items: list[str | tuple[str, int]]
    items = [part for part in bootstrap.split(",")] if isinstance(bootstrap, str) else list(bootstrap)
    addresses: list[tuple[str, int]] = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2:
            host, port = check_address(*item, source="the bootstrap list")
        elif not isinstance(item, str) or not item.strip():
            continue
        else:
            host, port = split_host_port(item, default_port=DEFAULT_PORT, source="the bootstrap list")
        if (host, port) not in addresses:
            addresses.append((host, port))
    if not addresses:
        raise ConfigError(f"no bootstrap address in {display_host(repr(bootstrap))}")
    return tuple(addresses)


# -- asking ---------------------------------------------------------------------------------


async def ask_metadata(conn: NodeConnection) -> ClusterMetadata:
    """Metadata (brokers and controller, no topics) at the version ``conn`` negotiated."""
    try:
        version = negotiated(conn).pick_version(METADATA)
    except KafkaCompatError as exc:
        attach_context(exc, transcript=conn.handshake.transcript if conn.handshake else None)
        raise
    timeout = time_left(conn.config.request_timeout, f"asking {conn.node} for Metadata")
    response = await conn.request(MetadataRequest(topics=[]), version=version, request_timeout=timeout)
    brokers: dict[int, BrokerAddress] = {}
    named: dict[tuple[str, int], int] = {}  # address -> the first node named there
    for b in sorted(response.brokers, key=lambda b: b.node_id):
        broker = broker_from_reply(b.node_id, b.host, b.port, b.rack, f"Metadata v{version}", conn.node)
        first = named.setdefault((b.host, b.port), b.node_id)
        if broker.problem is None and first != b.node_id:  # two nodes cannot share one listener
            problem = InvalidAddressError(
                f"Metadata v{version} from {conn.node} names {broker.address} for node {b.node_id} "
                f"and for node {first}: one listener cannot be two brokers",
                source=f"Metadata v{version} from {conn.node}", node=conn.node,
            )
            broker = BrokerAddress(b.node_id, b.host, b.port, b.rack, problem=problem)
        brokers[b.node_id] = broker
    if not brokers:
        raise TransportError(f"Metadata v{version} named no brokers", node=conn.node)
    controller = response.controller_id if response.controller_id in brokers else None
    return ClusterMetadata(
        response.cluster_id, controller, MappingProxyType(brokers), version, conn.node
    )



def broker_from_reply(
    node_id: int, host: str, port: int, rack: str | None, reply: str, sender: str
) -> BrokerAddress:
    """A broker as a reply (Metadata, DescribeCluster) names it, its address checked.

    An address that cannot be used is kept with the refusal, which names
    ``sender`` and ``reply``; ``Cluster.connection`` raises it on use.
    """
    try:
        check_address(host, port, source=f"{reply} from {sender} for node {node_id}", node=sender)
    except InvalidAddressError as exc:
        return BrokerAddress(node_id, host, port, rack, problem=exc)
    return BrokerAddress(node_id, host, port, rack)


def raise_failures(failures: Mapping[int, KafkaCompatError], labels: Mapping[int, str]) -> None:
    """All transport failures: one ``BrokersUnavailableError``; else the first other error, noted."""
    other = [exc for exc in failures.values() if not isinstance(exc, RETRIABLE)]
    if not other:
        raise BrokersUnavailableError(failures, labels)
    error = other[0]
    for node_id, exc in failures.items():
        if exc is not error:
            error.add_note(f"node {node_id} at {labels.get(node_id, '?')}: {describe_failure(exc, '')}")
    raise error
