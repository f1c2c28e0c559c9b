"""A blocking facade over ``connect``, for scripts that do not run trio themselves.

``with kafkacompat.connect_sync("host:9092") as cluster:`` starts one trio
loop in a background thread, enters ``connect`` there, and hands each method
call to that loop through its trio token (``trio.from_thread.run``), blocking
until the answer comes back.  Errors come back as the very kafkacompat errors
the async cluster raised.  Leaving the block (or ``close()``) exits ``connect``
in the loop, which closes every connection, and joins the thread.

The methods are those of ``Cluster``; every call runs on the one loop, so
several threads may share a ``SyncCluster``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import TypeVar

import trio

from kafkacompat.errors import TransportError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.cluster_view import ClusterView
from kafkacompat.negotiation.coordinators import DEFAULT_MAX_BATCH
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.message import KafkaRequest, ResponseT
from kafkacompat.transport.cluster import BrokerAddress, Cluster, ClusterMetadata, connect
from kafkacompat.transport.config import ConnectionConfig
from kafkacompat.transport.connection import CapabilityChange
from kafkacompat.transport.coordinator_lookup import CoordinatorLookup, KeyTypeLike
from kafkacompat.transport.features_admin import ClusterFeatures, FeatureUpdateReport

__all__ = ["SyncCluster", "connect_sync"]

T = TypeVar("T")
_JOIN_TIMEOUT = 10.0


class SyncCluster:
    """``Cluster``'s methods, blocking; made (and connected) by ``connect_sync``."""

    def __init__(
        self,
        bootstrap: str | Iterable[str | tuple[str, int]],
        config: ConnectionConfig | None = None,
        *,
        policy: VersionPolicy | None = None,
        controllers: bool = False,
    ) -> None:
        self._bootstrap = bootstrap if isinstance(bootstrap, str) else list(bootstrap)
        self._config = config
        self._policy = policy
        self._controllers = controllers
        self._cluster: Cluster | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kafkacompat-trio", daemon=True)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> SyncCluster:
        """Start the loop and connect; raises what ``connect`` raised."""
        self._thread.start()
        while not self._started.wait(0.05):
            if not self._thread.is_alive():
                break
        if self._cluster is None:
            self._thread.join(_JOIN_TIMEOUT)
            error = self._error or TransportError("the background trio loop ended before connecting")
            raise error
        return self

    def close(self) -> None:
        """Close every connection and stop the loop (idempotent)."""
        token, stop = self._token, self._stop
        self._token = None
        if token is not None and stop is not None:
            with contextlib.suppress(trio.RunFinishedError):  # the loop may be gone already
                trio.from_thread.run_sync(stop.set, trio_token=token)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(_JOIN_TIMEOUT)

    def __enter__(self) -> SyncCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _run(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # reported to the caller of start() or of the next call
            self._error = exc
        finally:
            self._started.set()

    async def _serve(self) -> None:
        self._stop = trio.Event()
        async with connect(
            self._bootstrap, self._config, policy=self._policy, controllers=self._controllers
        ) as cluster:
            self._cluster = cluster
            self._token = trio.lowlevel.current_trio_token()
            self._started.set()
            await self._stop.wait()

    def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        token = self._token
        if token is None:
            raise TransportError("this cluster connection is closed")
        try:
            return trio.from_thread.run(fn, trio_token=token)
        except trio.RunFinishedError:
            raise TransportError("the background trio loop has stopped") from self._error

    @property
    def cluster(self) -> Cluster:
        """The async cluster (use it only from inside the loop)."""
        if self._cluster is None:
            raise TransportError("not connected")
        return self._cluster

    # -- what is known (read in the loop's thread) -------------------------------------

    def _read(self, fn: Callable[[], T]) -> T:
        token = self._token
        if token is None:
            raise TransportError("this cluster connection is closed")
        try:
            return trio.from_thread.run_sync(fn, trio_token=token)
        except trio.RunFinishedError:
            raise TransportError("the background trio loop has stopped") from self._error

    @property
    def metadata(self) -> ClusterMetadata:
        return self._read(lambda: self.cluster.metadata)

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
        return self._read(lambda: self.cluster.changes)

    # -- the Cluster methods, blocking ---------------------------------------------------

    def capabilities(self, *, require_all: bool = True) -> dict[int, BrokerCapabilities]:
        return self._call(lambda: self.cluster.capabilities(require_all=require_all))

    def view(self) -> ClusterView:
        return self._call(self.cluster.view)

    def refresh_metadata(self) -> ClusterMetadata:
        return self._call(self.cluster.refresh_metadata)

    def find_coordinators(
        self,
        keys: Iterable[str],
        key_type: KeyTypeLike = "group",
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_attempts: int | None = None,
        request_timeout: float | None = None,
    ) -> CoordinatorLookup:
        keys = list(keys)
        return self._call(
            lambda: self.cluster.find_coordinators(
                keys, key_type, max_batch=max_batch, max_attempts=max_attempts,
                request_timeout=request_timeout,
            )
        )

    def describe_features(self) -> ClusterFeatures:
        return self._call(self.cluster.describe_features)

    def update_features(
        self, updates: Mapping[str, int], *, dry_run: bool = False, unsafe: bool = False,
        request_timeout: float | None = None,
    ) -> FeatureUpdateReport:
        updates = dict(updates)
        return self._call(
            lambda: self.cluster.update_features(
                updates, dry_run=dry_run, unsafe=unsafe, request_timeout=request_timeout
            )
        )

    def request(
        self,
        node_id: int | None,
        message: KafkaRequest[ResponseT],
        *,
        version: int | None = None,
        request_timeout: float | None = None,
    ) -> ResponseT:
        """Send ``message`` to ``node_id`` (None: any broker); see ``Cluster.request``."""
        return self._call(
            lambda: self.cluster.request(node_id, message, version=version, request_timeout=request_timeout)
        )

    def pick_version(self, node_id: int, api_key: int) -> int:
        """The version ``api_key`` would be sent at to ``node_id`` (connecting if needed)."""

        async def pick() -> int:
            conn = await self.cluster.connection(node_id)
            return conn.pick_version(api_key)

        return self._call(pick)


def connect_sync(
    bootstrap: str | Iterable[str | tuple[str, int]],
    config: ConnectionConfig | None = None,
    *,
    policy: VersionPolicy | None = None,
    controllers: bool = False,
) -> SyncCluster:
    """Connect now (blocking); use as ``with connect_sync(...) as cluster:`` (see ``connect``)."""
    return SyncCluster(bootstrap, config, policy=policy, controllers=controllers).start()
