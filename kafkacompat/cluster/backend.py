"""What the cluster layer needs from an event loop, and from a connection, and nothing more.

The cluster layer (``cluster_core`` and the modules it drives: discovery,
controllers, coordinators, features) is written once.  It never names trio or
asyncio: it opens connections, sleeps, reads the clock, locks, and runs jobs
side by side through a ``ClusterBackend``, and talks to brokers through
whatever satisfies ``NodeConnection``.  ``transport.cluster`` implements the
backend on trio (its connections' tasks live in the nursery ``connect``
runs), ``aio.cluster`` on asyncio (no trio import, no thread).

This module imports neither loop, so the asyncio path can import it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import TransportError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.capability_changes import CapabilityChange
from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
from kafkacompat.negotiation.handshake.types import HandshakeResult
from kafkacompat.protocol.message import KafkaRequest, ResponseT

__all__ = ["ClusterBackend", "ConnT", "Job", "NodeConnection", "negotiated"]


class NodeConnection(Protocol):
    """One negotiated connection as the cluster layer uses it (both drivers' ``BrokerConnection``)."""

    host: str
    port: int
    node_id: int | None
    config: ConnectionConfig
    capabilities: BrokerCapabilities | None
    handshake: HandshakeResult | None
    changes: list[CapabilityChange]
    identity: BrokerIdentity | None  # KIP-1242: set by the cluster before each open
    api_versions_memory: ApiVersionsMemory | None

    @property
    def node(self) -> str: ...

    @property
    def is_ready(self) -> bool: ...

    async def request(
        self, message: KafkaRequest[ResponseT], *, version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT: ...

    async def aclose(self) -> None: ...


def negotiated(conn: NodeConnection) -> BrokerCapabilities:
    """What ``conn`` negotiated (its capabilities pick its versions), or why there is nothing yet."""
    if conn.capabilities is None:
        raise TransportError("the connection has not negotiated yet", node=conn.node)
    return conn.capabilities


ConnT = TypeVar("ConnT", bound=NodeConnection)
#: A job ``ClusterBackend.run_all`` runs: it reports its own failures (an escaping one is a bug).
Job = Callable[[], Awaitable[None]]


class ClusterBackend(Protocol[ConnT]):
    """The event loop's side of the cluster layer."""

    def connection(self, host: str, port: int, config: ConnectionConfig, node_id: int | None) -> ConnT:
        """A connection to ``host:port``, not opened yet."""
        ...

    async def open(self, conn: ConnT) -> None:
        """Connect and negotiate ``conn`` (it may have been open before: negotiate again)."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    def clock(self) -> float:
        """The loop's clock, in seconds (never the wall clock: tests may drive it)."""
        ...

    def lock(self) -> AbstractAsyncContextManager[object]:
        """A new lock for this loop."""
        ...

    def deadline(self, at: float, what: str) -> AbstractAsyncContextManager[object]:
        """Cancel the block when the loop's clock reaches ``at``, then raise
        ``KafkaTimeoutError`` ("timed out <what>"); errors of its own pass through."""
        ...

    async def run_all(self, jobs: Sequence[Job], *, limit: int | None = None) -> None:
        """Run ``jobs`` side by side, at most ``limit`` at once; return when all have ended."""
        ...
