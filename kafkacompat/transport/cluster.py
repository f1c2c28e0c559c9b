"""A whole cluster behind one bootstrap list: discovery, one connection per node, cluster questions.

``async with kafkacompat.connect("h1:9092,h2:9092") as cluster:`` tries the
bootstrap addresses in order (each round retried with exponential backoff and
jitter, for transport errors and timeouts only), negotiates on the first that
answers, asks it for Metadata at the version that connection negotiated, and
from then on knows the brokers by node id.  Connections to them are opened on
demand, one per node, each with its own ApiVersions handshake, and all owned by
the nursery the context manager runs; leaving the block closes them.

Failing to connect is reported as one of three different things, never as an
opaque "no brokers available":

- *unreachable*: every bootstrap address refused, timed out or could not be
  resolved.  ``NoBrokerReachableError`` (a ``TransportError``) lists each
  address with its reason.
- *handshake failed*: an address answered, but not as a Kafka broker (HTTP,
  TLS, a broker that closes on every ApiVersions...).  The handshake's own
  ``NegotiationError`` is raised, transcript attached; the other addresses'
  outcomes are added as notes.
- *incompatible*: the broker negotiated, but no Metadata version is allowed by
  it, the codec and the version policy.  ``UnsupportedVersionError``, with the
  reasons and the transcript.

KRaft controllers (KIP-919): ``connect(..., controllers=True)`` takes the
addresses for controllers, as Kafka's ``bootstrap.controllers`` and
``--bootstrap-controller`` do, and finds the quorum through DescribeCluster
(``controller_discovery``); a bootstrap address that turns out to be a
controller is treated the same way without being asked.  Then ``brokers``
holds the controllers and ``metadata.node_kind`` is ``"controller"``.  A
broker reached with ``controllers=True`` raises ``WrongEndpointError``.

A connection that broke is negotiated again on its next use (a broker may have
been upgraded or downgraded in between); what changed is recorded and shown
by ``cluster.changes``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager

import tenacity
import trio

from kafkacompat.errors import KafkaCompatError, TransportError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.cluster_view import ClusterView, build_cluster_view
from kafkacompat.negotiation.coordinators import DEFAULT_MAX_BATCH
from kafkacompat.negotiation.fanout import fanout_error, fanout_split
from kafkacompat.negotiation.node_role import looks_like_controller
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.message import KafkaRequest, ResponseT
from kafkacompat.transport.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.transport.connection import BrokerConnection, CapabilityChange
from kafkacompat.transport.controller_discovery import ask_controllers
from kafkacompat.transport.coordinator_lookup import CoordinatorLookup, KeyTypeLike, find_coordinators
from kafkacompat.transport.discovery import (
    RETRIABLE,
    BrokerAddress,
    BrokersUnavailableError,
    ClusterMetadata,
    NoBrokerReachableError,
    UnknownBrokerError,
    address_label,
    ask_metadata,
    describe_failure,
    parse_bootstrap,
    raise_failures,
)
from kafkacompat.transport.features_admin import (
    ClusterFeatures,
    FeatureUpdateReport,
    describe_features,
    update_features,
)
from kafkacompat.transport.seam import raise_lone

__all__ = [
    "BrokerAddress",
    "BrokersUnavailableError",
    "Cluster",
    "ClusterMetadata",
    "NoBrokerReachableError",
    "UnknownBrokerError",
    "connect",
    "parse_bootstrap",
]

log = logging.getLogger("kafkacompat.cluster")

_CLOSE_TIMEOUT = 5.0


# -- the cluster ----------------------------------------------------------------------------


class Cluster:
    """Brokers discovered from a bootstrap list, one negotiated connection per node.

    Made by ``connect``; every method must be called from the trio run that
    entered it.
    """

    def __init__(
        self,
        bootstrap: Sequence[tuple[str, int]],
        config: ConnectionConfig,
        nursery: trio.Nursery,
        *,
        controllers: bool = False,
    ) -> None:
        self.bootstrap = tuple(bootstrap)
        self.config = config
        self.controllers = controllers  # the bootstrap addresses are KRaft controllers
        self._nursery = nursery
        self._metadata: ClusterMetadata | None = None
        self._connections: dict[int, BrokerConnection] = {}
        self._locks: dict[int, trio.Lock] = {}
        self._retired_changes: list[CapabilityChange] = []
        self._closed = False

    def __repr__(self) -> str:
        if self._metadata is None:
            return "<Cluster (not connected)>"
        ready = sum(1 for c in self._connections.values() if c.is_ready)
        brokers = len(self._metadata.brokers)
        return f"<Cluster {self._metadata.cluster_id}: {brokers} broker(s), {ready} connected>"

    # -- what is known ------------------------------------------------------------------

    @property
    def metadata(self) -> ClusterMetadata:
        if self._metadata is None:
            raise TransportError("the cluster has not been discovered yet")
        return self._metadata

    @property
    def brokers(self) -> Mapping[int, BrokerAddress]:
        return self.metadata.brokers

    @property
    def controller_id(self) -> int | None:
        return self.metadata.controller_id

    @property
    def cluster_id(self) -> str | None:
        return self.metadata.cluster_id

    @property
    def changes(self) -> tuple[CapabilityChange, ...]:
        """Capability changes seen on reconnections, oldest first per connection."""
        current = [change for conn in self._connections.values() for change in conn.changes]
        return (*self._retired_changes, *current)

    def connected(self) -> Mapping[int, BrokerConnection]:
        """The connections that are open and negotiated now, by node id."""
        return {node_id: c for node_id, c in sorted(self._connections.items()) if c.is_ready}

    # -- connections --------------------------------------------------------------------

    async def connection(self, node_id: int) -> BrokerConnection:
        """The negotiated connection to ``node_id``: opened, or negotiated again, when needed."""
        self._check_open()
        broker = self.brokers.get(node_id)
        if broker is None:
            known = ", ".join(str(n) for n in self.brokers) or "none"
            raise UnknownBrokerError(f"node {node_id} is not in the cluster metadata (known: {known})")
        if broker.problem is not None:  # the broker that named it gave an address nobody can use
            raise broker.problem.with_traceback(None)
        conn = self._connections.get(node_id)
        if conn is not None and conn.is_ready:
            return conn
        async with self._locks.setdefault(node_id, trio.Lock()):
            conn = self._connections.get(node_id)
            if conn is not None and conn.is_ready:
                return conn
            if conn is not None:
                log.info("reconnecting to node %s at %s", node_id, broker.address)
            conn = await self._open_node(broker, conn)
            self._connections[node_id] = conn
            return conn

    async def any_connection(self) -> BrokerConnection:
        """A connection that is ready now, else the first broker (by node id) that opens."""
        ready = self.connected()
        if ready:
            return next(iter(ready.values()))
        failures: dict[int, KafkaCompatError] = {}
        tried, _ = fanout_split(list(self.brokers), set(), self.config.max_fanout)  # a broker named them
        for node_id in tried:
            try:
                return await self.connection(node_id)
            except RETRIABLE as exc:
                failures[node_id] = exc
        error = BrokersUnavailableError(failures, self._labels())
        named = len(self.brokers)
        if len(tried) < named:
            error.add_note(fanout_error(named - len(tried), named, len(tried)).message)
        raise error

    async def open_all(self) -> tuple[dict[int, BrokerConnection], dict[int, KafkaCompatError]]:
        """Connect to every broker concurrently: (connections, failures), both by node id.

        The brokers come from a broker's answer, so the fan-out is bounded:
        at most ``config.max_fanout`` of them (those connected already first,
        then by node id), ``config.fanout_concurrency`` being opened at once.
        The others fail with one shared ``FanOutLimitError``, so they are
        reported, not dropped.
        """
        opened: dict[int, BrokerConnection] = {}
        failed: dict[int, KafkaCompatError] = {}
        chosen, skipped = fanout_split(list(self.brokers), set(self.connected()), self.config.max_fanout)
        if skipped:
            error = fanout_error(len(skipped), len(self.brokers), self.config.max_fanout)
            failed.update(dict.fromkeys(skipped, error))
        limiter = trio.CapacityLimiter(self.config.fanout_concurrency)

        async def open_one(node_id: int) -> None:
            async with limiter:
                try:
                    opened[node_id] = await self.connection(node_id)
                except KafkaCompatError as exc:
                    failed[node_id] = exc

        async with trio.open_nursery() as nursery:
            for node_id in chosen:
                nursery.start_soon(open_one, node_id)
        return dict(sorted(opened.items())), dict(sorted(failed.items()))

    async def request(
        self,
        node_id: int | None,
        message: KafkaRequest[ResponseT],
        *,
        version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT:
        """Send ``message`` to ``node_id`` (None: any broker) at its negotiated (or the given) version."""
        conn = await (self.any_connection() if node_id is None else self.connection(node_id))
        return await conn.request(message, version=version, request_timeout=request_timeout)

    async def refresh_metadata(self) -> ClusterMetadata:
        """Ask a known broker for Metadata again (the bootstrap list when none answers)."""
        self._check_open()
        connected = self.connected()
        order = [*connected, *(n for n in self.brokers if n not in connected)][: self.config.max_fanout]
        for node_id in order:
            try:
                conn = await self.connection(node_id)
                metadata = await self._discover(conn)
            except RETRIABLE as exc:
                log.info("metadata refresh from node %s failed: %s", node_id, exc)
                continue
            await self._apply(metadata)
            return metadata
        await self._bootstrap()
        return self.metadata

    # -- cluster questions --------------------------------------------------------------

    async def capabilities(self, *, require_all: bool = True) -> dict[int, BrokerCapabilities]:
        """Each broker's negotiated capabilities, connecting to all of them concurrently.

        With ``require_all=False`` the unreachable brokers are left out (at
        least one must answer); otherwise their failure is raised.
        """
        opened, failed = await self.open_all()
        if failed and (require_all or not opened):
            raise_failures(failed, self._labels())
        return {node_id: _capabilities_of(conn) for node_id, conn in opened.items()}

    async def view(self) -> ClusterView:
        """What every broker accepts (common versions) and where they differ (skew)."""
        capabilities = await self.capabilities()
        return build_cluster_view(capabilities.values(), self.config.policy)

    async def find_coordinators(
        self,
        keys: Iterable[str],
        key_type: KeyTypeLike = "group",
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_attempts: int | None = None,
        request_timeout: float | None = None,
    ) -> CoordinatorLookup:
        """The coordinator of every key: batched where the broker allows it (KIP-699)."""
        return await find_coordinators(
            self, keys, key_type, max_batch=max_batch, max_attempts=max_attempts,
            request_timeout=request_timeout,
        )

    async def describe_features(self) -> ClusterFeatures:
        """Supported and finalized features of every broker, merged by epoch."""
        return await describe_features(self)

    async def update_features(
        self, updates: Mapping[str, int], *, dry_run: bool = False, unsafe: bool = False,
        request_timeout: float | None = None,
    ) -> FeatureUpdateReport:
        """Finalize feature levels, after checking every broker supports them."""
        return await update_features(
            self, updates, dry_run=dry_run, unsafe=unsafe, request_timeout=request_timeout
        )

    async def aclose(self) -> None:
        """Close every connection; the cluster cannot be used afterwards."""
        if self._closed:
            return
        self._closed = True
        for conn in list(self._connections.values()):
            await conn.aclose()

    # -- internals ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise TransportError("the cluster connection is closed")

    def _labels(self) -> dict[int, str]:
        return {node_id: b.address for node_id, b in self.brokers.items()}

    def _retrying(self) -> tenacity.AsyncRetrying:
        policy = self.config.retry
        return tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(policy.attempts),
            wait=tenacity.wait_exponential(multiplier=policy.initial_backoff, max=policy.max_backoff)
            + tenacity.wait_random(0, policy.jitter),
            retry=tenacity.retry_if_exception_type(RETRIABLE),
            sleep=trio.sleep,
            reraise=True,
        )

    async def _open_node(self, broker: BrokerAddress, previous: BrokerConnection | None) -> BrokerConnection:
        async for attempt in self._retrying():
            with attempt:
                if previous is not None and previous.capabilities is not None:
                    await previous.reconnect(self._nursery)  # keeps its history of changes
                    return previous
                conn = BrokerConnection(broker.host, broker.port, self.config, node_id=broker.node_id)
                await conn.open(self._nursery)
                return conn
        raise AssertionError("tenacity neither returned nor raised")  # pragma: no cover

    async def _bootstrap(self) -> None:
        reasons: dict[str, KafkaCompatError] = {}
        rounds = 0
        async for attempt in self._retrying():
            with attempt:
                rounds += 1
                await self._bootstrap_round(reasons, rounds)
                return

    async def _bootstrap_round(self, reasons: dict[str, KafkaCompatError], rounds: int) -> None:
        fatal: list[KafkaCompatError] = []
        for host, port in self.bootstrap:
            label = address_label(host, port)
            conn = BrokerConnection(host, port, self.config)
            try:
                await conn.open(self._nursery)
                metadata = await self._discover(conn)
            except KafkaCompatError as exc:
                await conn.aclose()
                reasons[label] = exc
                if not isinstance(exc, RETRIABLE):
                    if exc.transcript is None and conn.handshake is not None:
                        exc.transcript = conn.handshake.transcript
                    fatal.append(exc)
                log.info("bootstrap address %s failed: %s", label, exc)
                continue
            await self._adopt(metadata, conn)
            return
        if fatal:  # an address answered but cannot be used: retrying will not change that
            error = fatal[0]
            for label, other in reasons.items():
                if other is not error:
                    error.add_note(f"bootstrap address {label}: {describe_failure(other, label)}")
            raise error
        raise NoBrokerReachableError(reasons, rounds=rounds)

    async def _discover(self, conn: BrokerConnection) -> ClusterMetadata:
        """Metadata from a broker; from a KRaft controller, DescribeCluster (or the node alone)."""
        capabilities = conn.capabilities
        if self.controllers or (capabilities is not None and looks_like_controller(capabilities)):
            return await ask_controllers(conn)
        return await ask_metadata(conn)

    async def _adopt(self, metadata: ClusterMetadata, conn: BrokerConnection) -> None:
        """Take the bootstrap answer; keep its connection when it is one of the brokers."""
        await self._apply(metadata)
        node_id = next(
            (b.node_id for b in metadata.brokers.values() if (b.host, b.port) == (conn.host, conn.port)),
            None,
        )
        if node_id is not None and node_id not in self._connections:
            conn.node_id = node_id
            self._connections[node_id] = conn
        else:
            await conn.aclose()
        log.info("%s", metadata.describe())

    async def _apply(self, metadata: ClusterMetadata) -> None:
        """Take a refreshed answer: connections to moved or departed nodes are retired."""
        self._metadata = metadata
        for node_id, conn in list(self._connections.items()):
            broker = metadata.brokers.get(node_id)
            if broker is None or (broker.host, broker.port) != (conn.host, conn.port):
                del self._connections[node_id]
                self._retired_changes.extend(conn.changes)
                await conn.aclose()


def _capabilities_of(conn: BrokerConnection) -> BrokerCapabilities:
    capabilities = conn.capabilities
    assert capabilities is not None
    if capabilities.node_id is None and conn.node_id is not None:
        capabilities = dataclasses.replace(capabilities, node_id=conn.node_id)
    return capabilities


# -- connect --------------------------------------------------------------------------------


@asynccontextmanager
async def connect(
    bootstrap: str | Iterable[str | tuple[str, int]],
    config: ConnectionConfig | None = None,
    *,
    policy: VersionPolicy | None = None,
    controllers: bool = False,
) -> AsyncIterator[Cluster]:
    """``async with connect("host:9092") as cluster:`` discovered, then closed on exit.

    ``policy`` replaces ``config.policy`` when given.  ``controllers=True``:
    the addresses are KRaft controllers (Kafka's ``bootstrap.controllers``);
    a broker among them raises ``WrongEndpointError``.  Raises
    ``NoBrokerReachableError``, the handshake's ``NegotiationError`` or
    ``UnsupportedVersionError`` (see the module documentation).
    """
    addresses = parse_bootstrap(bootstrap)
    settings = config or DEFAULT_CONFIG
    if policy is not None:
        settings = dataclasses.replace(settings, policy=policy)
    try:
        async with trio.open_nursery() as nursery:
            cluster = Cluster(addresses, settings, nursery, controllers=controllers)
            try:
                await cluster._bootstrap()
                yield cluster
            finally:
                with trio.move_on_after(_CLOSE_TIMEOUT) as closing:
                    closing.shield = True
                    await cluster.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise_lone(group)
