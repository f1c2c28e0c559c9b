"""The cluster layer, written once: discovery, one connection per node, cluster questions.

``ClusterCore`` holds everything ``Cluster`` does (see ``transport.cluster``
for what it means to connect, and the three ways of failing to), over a
``ClusterBackend`` that supplies the event loop: ``transport.cluster.Cluster``
runs it on trio, ``aio.Cluster`` on asyncio.  The decisions (which brokers a
fan-out may open, what a coordinator plan is, how feature answers merge) are
made by the sans-I/O ``kafkacompat.negotiation`` modules; this is the glue
that sends their requests and feeds them the answers.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Generic

from kafkacompat.cluster.backend import ClusterBackend, ConnT, Job, NodeConnection, negotiated
from kafkacompat.cluster.bootstrap import bootstrap_rounds
from kafkacompat.cluster.call_deadline import call_budget, call_deadline, time_left
from kafkacompat.cluster.controller_discovery import ask_controllers
from kafkacompat.cluster.coordinator_lookup import CoordinatorLookup, KeyTypeLike, find_coordinators
from kafkacompat.cluster.discovery import (
    RETRIABLE,
    BrokerAddress,
    ClusterMetadata,
    ask_metadata,
    describe_failure,
    raise_failures,
)
from kafkacompat.cluster.features_admin import (
    ClusterFeatures,
    FeatureUpdateReport,
    describe_features,
    update_features,
)
from kafkacompat.cluster.misrouting import ClientChecks, check_answer_source, needs_own_check
from kafkacompat.cluster.retries import retrying
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import (
    BrokersUnavailableError,
    ClusterMismatchError,
    KafkaCompatError,
    KafkaTimeoutError,
    RebootstrapRequiredError,
    TransportError,
    UnknownBrokerError,
    attach_context,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.capability_changes import CapabilityChange
from kafkacompat.negotiation.cluster_view import ClusterView, build_cluster_view
from kafkacompat.negotiation.coordinators import DEFAULT_MAX_BATCH
from kafkacompat.negotiation.fanout import fanout_error, fanout_split
from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, identity_for
from kafkacompat.negotiation.node_role import looks_like_controller
from kafkacompat.protocol.message import KafkaRequest, ResponseT

__all__ = ["ClusterCore"]

log = logging.getLogger("kafkacompat.cluster")


class ClusterCore(Generic[ConnT]):
    """Brokers discovered from a bootstrap list, one negotiated connection per node.

    Made by a driver's ``connect``; every method must be called from the event
    loop (the trio run, the asyncio loop) that entered it.
    """

    def __init__(
        self,
        bootstrap: Sequence[tuple[str, int]],
        config: ConnectionConfig,
        backend: ClusterBackend[ConnT],
        *,
        controllers: bool = False,
    ) -> None:
        self.bootstrap = tuple(bootstrap)
        self.config = config
        self.controllers = controllers  # the bootstrap addresses are KRaft controllers
        self._backend = backend
        self._metadata: ClusterMetadata | None = None
        self._connections: dict[int, ConnT] = {}
        self._locks: dict[int, AbstractAsyncContextManager[object]] = {}
        # Per node: how many opening attempts have ended, and the last one's failure (None:
        # it opened).  A caller that waited on the lock while one ran takes its outcome.
        self._attempts: dict[int, tuple[int, KafkaCompatError | None]] = {}
        self._retired_changes: list[CapabilityChange] = []
        # KIP-1242: each address's advertised ApiVersions max, for the next connection to it
        self._api_versions_memory = ApiVersionsMemory()
        self._client_checks = ClientChecks()  # KIP-1242 done client side: which connections, which cluster
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

    def checked_by_client(self, conn: ConnT) -> str | None:
        """The cluster id this layer itself found ``conn``'s broker to belong to, from Metadata read
        on it (the misrouting check, ``cluster.misrouting``), or None when it compared none."""
        return self._client_checks.cluster_of(conn)

    def connected(self) -> Mapping[int, ConnT]:
        """The connections that are open and negotiated now, by node id."""
        return {node_id: c for node_id, c in sorted(self._connections.items()) if c.is_ready}

    # -- connections --------------------------------------------------------------------

    async def connection(self, node_id: int, *, request_timeout: float | None = None) -> ConnT:
        """The negotiated connection to ``node_id``: opened, or negotiated again, when needed.

        Callers that find another one opening the node wait for it and share its
        outcome (its failure too) rather than each running a retry loop of their own.
        ``request_timeout`` (default: ``config.call_timeout``) bounds the wait for
        the node, the connecting and the retries (see ``call_deadline``).
        """
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
        what = f"connecting to node {node_id} at {broker.address}"
        async with self._call(request_timeout, what) as deadline:
            return await self._open_or_share(node_id, broker, deadline, what)

    async def _open_or_share(self, node_id: int, broker: BrokerAddress, deadline: float, what: str) -> ConnT:
        # The wait for the lock and the opening are cut at the deadline itself, as this
        # step's failure: a fan-out still reports the nodes that answered.
        ended_before, _ = self._attempts.get(node_id, (0, None))
        async with self._backend.deadline(deadline, what), self._lock(node_id):
            conn = self._connections.get(node_id)
            if conn is not None and conn.is_ready:
                return conn
            ended, failure = self._attempts.get(node_id, (0, None))
            if ended != ended_before and failure is not None:  # it failed while this caller waited
                raise failure.with_traceback(None)
            if conn is not None:
                log.info("reconnecting to node %s at %s", node_id, broker.address)
            try:
                try:
                    conn = await self._open_node(broker, conn, deadline)
                except (RebootstrapRequiredError, ClusterMismatchError) as exc:  # KIP-1242: someone else
                    conn = await self._rebootstrapped(broker, exc, deadline)
            except KafkaCompatError as exc:
                # An attempt cut by its caller's deadline is no failure of the node's (it is a
                # cancellation here, not recorded): a waiter with time left tries on its own.
                self._attempts[node_id] = (ended + 1, exc)
                raise
            self._attempts[node_id] = (ended + 1, None)
            self._connections[node_id] = conn
            return conn

    async def any_connection(self, *, request_timeout: float | None = None) -> ConnT:
        """A connection that is ready now, else the first broker (by node id) that opens."""
        ready = self.connected()
        if ready:
            return next(iter(ready.values()))
        async with self._call(request_timeout, "connecting to any broker"):
            return await self._any_connection()

    async def _any_connection(self) -> ConnT:
        failures: dict[int, KafkaCompatError] = {}
        tried, _ = fanout_split(list(self.brokers), set(), self.config.max_fanout)  # a broker named them
        for node_id in tried:
            if failures:
                self._check_time_left("connecting to any broker", failures)
            try:
                return await self.connection(node_id)
            except RETRIABLE as exc:
                failures[node_id] = exc
        error = BrokersUnavailableError(failures, self._labels())
        named = len(self.brokers)
        if len(tried) < named:
            error.add_note(fanout_error(named - len(tried), named, len(tried)).message)
        raise error

    async def open_all(
        self, *, request_timeout: float | None = None
    ) -> tuple[dict[int, ConnT], dict[int, KafkaCompatError]]:
        """Connect to every broker concurrently: (connections, failures), both by node id.

        The brokers come from a broker's answer, so the fan-out is bounded:
        at most ``config.max_fanout`` of them (those connected already first,
        then by node id), ``config.fanout_concurrency`` being opened at once.
        The others fail with one shared ``FanOutLimitError``, so they are
        reported, not dropped.  A broker still opening when the deadline
        (``request_timeout``, else ``config.call_timeout``) passes fails with
        ``KafkaTimeoutError``.
        """
        async with self._call(request_timeout, "connecting to every broker"):
            return await self._open_all()

    async def _open_all(self) -> tuple[dict[int, ConnT], dict[int, KafkaCompatError]]:
        opened: dict[int, ConnT] = {}
        failed: dict[int, KafkaCompatError] = {}
        chosen, skipped = fanout_split(list(self.brokers), set(self.connected()), self.config.max_fanout)
        if skipped:
            error = fanout_error(len(skipped), len(self.brokers), self.config.max_fanout)
            failed.update(dict.fromkeys(skipped, error))

        def open_one(node_id: int) -> Job:
            async def job() -> None:
                try:
                    opened[node_id] = await self.connection(node_id)
                except KafkaCompatError as exc:
                    failed[node_id] = exc

            return job

        await self._backend.run_all([open_one(n) for n in chosen], limit=self.config.fanout_concurrency)
        return dict(sorted(opened.items())), dict(sorted(failed.items()))

    async def request(
        self,
        node_id: int | None,
        message: KafkaRequest[ResponseT],
        *,
        version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT:
        """Send ``message`` to ``node_id`` (None: any broker) at its negotiated (or the given) version.

        ``request_timeout`` bounds the whole call: waiting for the node's
        connection, connecting, negotiating and retrying included.  Without
        it the call ends by ``config.call_timeout``, and the request itself by
        ``config.request_timeout``.
        """
        where = "a broker" if node_id is None else f"node {node_id}"
        per_request = self.config.request_timeout if request_timeout is None else request_timeout
        conn = self._ready_connection(node_id)
        if conn is not None:  # the common case: no scope to enter, the request's own deadline
            budget = call_budget(self.config, request_timeout)
            left = time_left(min(per_request, budget), f"sending {message.NAME} to {where}")
            return await conn.request(message, version=version, request_timeout=left)
        async with self._call(request_timeout, f"sending {message.NAME} to {where}"):
            if node_id is None:
                conn = await self._any_connection()
            else:
                conn = await self.connection(node_id)
            left = time_left(per_request, f"sending {message.NAME} to {where}")
            return await conn.request(message, version=version, request_timeout=left)

    def _ready_connection(self, node_id: int | None) -> ConnT | None:
        if node_id is None:
            return next(iter(self.connected().values()), None)
        conn = self._connections.get(node_id)
        return conn if conn is not None and conn.is_ready and not self._closed else None

    async def pick_version(self, node_id: int, api_key: int, *, request_timeout: float | None = None) -> int:
        """The version ``api_key`` would be sent at to ``node_id`` (connecting if needed): a thin
        alias of ``capabilities.pick_version(api_key)`` on that node's connection."""
        conn = await self.connection(node_id, request_timeout=request_timeout)
        return negotiated(conn).pick_version(api_key)

    async def refresh_metadata(self, *, request_timeout: float | None = None) -> ClusterMetadata:
        """Ask a known broker for Metadata again (the bootstrap list when none answers)."""
        self._check_open()
        async with self._call(request_timeout, "refreshing the metadata"):
            return await self._refresh_metadata()

    async def _refresh_metadata(self) -> ClusterMetadata:
        connected = self.connected()
        order = [*connected, *(n for n in self.brokers if n not in connected)][: self.config.max_fanout]
        failures: dict[int, KafkaCompatError] = {}
        for node_id in order:
            if failures:
                self._check_time_left("refreshing the metadata", failures)
            try:
                conn = await self.connection(node_id)
                metadata = await self._discover(conn)
            except (*RETRIABLE, RebootstrapRequiredError, ClusterMismatchError) as exc:
                log.info("metadata refresh from node %s failed: %s", node_id, exc)
                failures[node_id] = exc
                continue
            try:
                self._client_checks.record(conn, check_answer_source(conn, metadata, self._cluster_known()))
            except ClusterMismatchError as exc:
                return await self._rebootstrapped_by_answer(node_id, conn, exc)
            await self._apply(metadata)
            return metadata
        await self._bootstrap_rounds()
        return self.metadata

    # -- cluster questions --------------------------------------------------------------

    async def capabilities(
        self, *, require_all: bool = True, request_timeout: float | None = None
    ) -> dict[int, BrokerCapabilities]:
        """Each broker's negotiated capabilities, connecting to all of them concurrently.

        With ``require_all=False`` the unreachable brokers (those still opening
        at the deadline too) are left out (at least one must answer); otherwise
        their failure is raised.
        """
        async with self._call(request_timeout, "reading every broker's capabilities"):
            opened, failed = await self._open_all()
        if failed and (require_all or not opened):
            raise_failures(failed, self._labels())
        return {node_id: _capabilities_of(conn) for node_id, conn in opened.items()}

    async def view(self, *, request_timeout: float | None = None) -> ClusterView:
        """What every broker accepts (common versions) and where they differ (skew)."""
        capabilities = await self.capabilities(request_timeout=request_timeout)
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
        """The coordinator of every key: batched where the broker allows it (KIP-699).

        ``request_timeout`` bounds the whole lookup (default: ``config.call_timeout``);
        keys still unresolved when no round fits before it fail, with the reason.
        """
        async with self._call(request_timeout, "looking up coordinators"):
            return await find_coordinators(
                self, self._backend, keys, key_type, max_batch=max_batch, max_attempts=max_attempts
            )

    async def describe_features(self, *, request_timeout: float | None = None) -> ClusterFeatures:
        """Supported and finalized features of every broker, merged by epoch."""
        async with self._call(request_timeout, "describing the features"):
            return await describe_features(self, self._backend)

    async def update_features(
        self, updates: Mapping[str, int], *, dry_run: bool = False, unsafe: bool = False,
        request_timeout: float | None = None,
    ) -> FeatureUpdateReport:
        """Finalize feature levels, after checking every broker supports them.

        ``request_timeout`` bounds the whole call, the check included (default:
        ``config.call_timeout``).
        """
        async with self._call(request_timeout, "updating the features"):
            return await update_features(self, self._backend, updates, dry_run=dry_run, unsafe=unsafe)

    async def aclose(self) -> None:
        """Close every connection; the cluster cannot be used afterwards."""
        if self._closed:
            return
        self._closed = True
        for conn in list(self._connections.values()):
            await conn.aclose()

    # -- internals ----------------------------------------------------------------------

    def _cluster_known(self) -> str | None:
        """The cluster id discovered (None before discovery, or from Metadata before v2)."""
        return self._metadata.cluster_id if self._metadata is not None else None

    def _check_open(self) -> None:
        if self._closed:
            raise TransportError("the cluster connection is closed")

    def _call(self, request_timeout: float | None, what: str) -> AbstractAsyncContextManager[float]:
        """The deadline of a public call (see ``call_deadline``)."""
        return call_deadline(self._backend, self.config, request_timeout, what)

    def _check_time_left(self, what: str, failures: Mapping[int, KafkaCompatError]) -> None:
        """Before trying the next node: raise, with what failed so far, when no time is left."""
        try:
            time_left(math.inf, f"{what} (next node)")
        except KafkaTimeoutError as exc:
            for node_id, failure in failures.items():
                exc.add_note(f"node {node_id}: {describe_failure(failure, '')}")
            raise

    def _labels(self) -> dict[int, str]:
        return {node_id: b.address for node_id, b in self.brokers.items()}

    def _lock(self, node_id: int) -> AbstractAsyncContextManager[object]:
        lock = self._locks.get(node_id)
        if lock is None:
            lock = self._locks[node_id] = self._backend.lock()
        return lock

    async def _open_node(
        self, broker: BrokerAddress, previous: ConnT | None, deadline: float | None = None
    ) -> ConnT:
        backend = self._backend
        async for attempt in retrying(
            self.config.retry, backend.sleep, retry_on=RETRIABLE, deadline=deadline, clock=backend.clock
        ):
            with attempt:
                if previous is not None and previous.capabilities is not None:
                    self._meant(previous, broker.node_id)
                    await self._backend.open(previous)  # negotiated again, keeping its history of changes
                    return await self._checked(previous)
                conn = self._backend.connection(broker.host, broker.port, self.config, broker.node_id)
                self._meant(conn, broker.node_id)
                await self._backend.open(conn)
                return await self._checked(conn)
        raise AssertionError("tenacity neither returned nor raised")  # pragma: no cover

    async def _rebootstrapped(
        self,
        stale: BrokerAddress,
        error: RebootstrapRequiredError | ClusterMismatchError,
        deadline: float | None = None,
    ) -> ConnT:
        """The address is someone else's now (KIP-1242: the broker said so, or the client's own
        check found it).  Resolve the bootstrap addresses and read Metadata again, then open
        the node where Metadata now puts it, once; still at the same address in the same
        cluster (or gone), the error stands."""
        log.info("node %s at %s is someone else now: bootstrapping again", stale.node_id, stale.address)
        self._connections.pop(stale.node_id, None)
        cluster_before = self._cluster_known()
        await self._bootstrap_rounds()
        adopted = self._connections.pop(stale.node_id, None)
        if adopted is not None and adopted.is_ready and adopted.handshake is not None:
            return adopted  # the bootstrap connection answered from the node's new address
        broker = self.brokers.get(stale.node_id)
        if broker is None or (broker.address == stale.address and self._cluster_known() == cluster_before):
            where = "names it no more" if broker is None else f"still puts it at {stale.address}"
            error.add_note(f"bootstrapped again for node {stale.node_id}: Metadata {where}")
            raise error
        return await self._open_node(broker, None, deadline)

    async def _rebootstrapped_by_answer(
        self, node_id: int, conn: ConnT, error: ClusterMismatchError
    ) -> ClusterMetadata:
        """A Metadata answer showed ``conn`` misrouted: drop it, bootstrap again, return the new answer."""
        log.info("node %s at %s is someone else now (%s): bootstrapping again", node_id, conn.node, error)
        if self._connections.get(node_id) is conn:
            del self._connections[node_id]
            self._retired_changes.extend(conn.changes)
        await conn.aclose()
        await self._bootstrap_rounds()  # by the running call's deadline
        return self.metadata

    async def _checked(self, conn: ConnT) -> ConnT:
        """``conn``, newly opened; with ``misrouting_check="every-connection"``, checked by a Metadata
        read of its own when its broker did not confirm its identity (``cluster.misrouting``)."""
        if needs_own_check(conn):
            try:
                answer = await self._discover(conn)
                self._client_checks.record(conn, check_answer_source(conn, answer, self._cluster_known()))
            except ClusterMismatchError:
                await conn.aclose()
                raise
        return conn

    def _meant(self, conn: ConnT, node_id: int | None) -> None:
        """Tell ``conn`` which broker it means to reach (KIP-1242) and share the memory."""
        metadata = self._metadata
        cluster_id = metadata.cluster_id if metadata is not None else None
        expected = self.config.handshake.expected_cluster_id
        conn.identity = identity_for(node_id, cluster_id, expected_cluster_id=expected)
        conn.api_versions_memory = self._api_versions_memory

    async def _bootstrap(self) -> None:
        """Discover the cluster from the bootstrap list (``connect`` runs it), by
        ``config.call_timeout``."""
        async with self._call(None, "bootstrapping"):
            await self._bootstrap_rounds()

    async def _bootstrap_rounds(self) -> None:
        """Rounds over the bootstrap addresses, by the running call's deadline (``bootstrap``)."""
        await bootstrap_rounds(self.bootstrap, self.config.retry, self._backend, self._try_bootstrap_address)

    async def _try_bootstrap_address(self, host: str, port: int) -> None:
        """One bootstrap address: opened, asked who the cluster is, checked and adopted; or
        closed, and its error raised (with its transcript when it is no transport failure)."""
        conn = self._backend.connection(host, port, self.config, None)
        self._meant(conn, None)  # a bootstrap connection: no identity, the memory only
        try:
            await self._backend.open(conn)
            metadata = await self._discover(conn)
            # the client-side misrouting check: the cluster Metadata names is the one expected
            self._client_checks.record(conn, check_answer_source(conn, metadata, None))
        except KafkaCompatError as exc:
            await conn.aclose()
            if not isinstance(exc, RETRIABLE):
                attach_context(exc, transcript=conn.handshake.transcript if conn.handshake else None)
            raise
        except BaseException:  # cut by the call's deadline (a cancellation): nothing left open
            await conn.aclose()
            raise
        await self._adopt(metadata, conn)

    async def _discover(self, conn: ConnT) -> ClusterMetadata:
        """Metadata from a broker; from a KRaft controller, DescribeCluster (or the node alone)."""
        capabilities = conn.capabilities
        if self.controllers or (capabilities is not None and looks_like_controller(capabilities)):
            return await ask_controllers(conn)
        return await ask_metadata(conn)

    async def _adopt(self, metadata: ClusterMetadata, conn: ConnT) -> None:
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


def _capabilities_of(conn: NodeConnection) -> BrokerCapabilities:
    capabilities = conn.capabilities
    assert capabilities is not None
    if capabilities.node_id is None and conn.node_id is not None:
        capabilities = dataclasses.replace(capabilities, node_id=conn.node_id)
    return capabilities
