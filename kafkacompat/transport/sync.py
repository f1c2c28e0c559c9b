"""A blocking facade over ``connect``, for scripts that do not run trio themselves.

``with kafkacompat.connect_sync("host:9092") as cluster:`` starts one trio
loop in a background thread, enters ``connect`` there, and hands each method
call to that loop through its trio token (``trio.from_thread.run``), blocking
until the answer comes back.  Errors come back as the very kafkacompat errors
the async cluster raised.  Leaving the block (or ``close()``) exits ``connect``
in the loop, which closes every connection, and joins the thread.

The methods are derived from ``Cluster``'s, not copied: each coroutine method
of ``Cluster`` that hands back plain answers is wrapped by ``_Blocking``, which
keeps its name, documentation and signature (a test checks that every such
method is there, with the same signature).  The methods that hand out
connections (``connection``, ``any_connection``, ``open_all``, ``connected``)
are left out: a connection belongs to the loop's thread.  Every call runs on
the one loop, so several threads may share a ``SyncCluster``.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import TransportError
from kafkacompat.negotiation.capability_changes import CapabilityChange
from kafkacompat.transport.cluster import BrokerAddress, Cluster, ClusterMetadata, connect

__all__ = ["SyncCluster", "connect_sync"]

T = TypeVar("T")
P = ParamSpec("P")
_JOIN_TIMEOUT = 10.0


class _Blocking(Generic[P, T]):
    """A coroutine method of ``Cluster`` as a blocking method of ``SyncCluster``.

    Read on an instance, it is a function with the coroutine's signature (less
    ``self``) that runs the coroutine on the instance's loop and waits.
    """

    def __init__(self, method: Callable[Concatenate[Cluster, P], Awaitable[T]]) -> None:
        self.method = method
        self.__name__ = method.__name__
        self.__doc__ = method.__doc__
        self.__signature__ = _without_self(method)

    @overload
    def __get__(self, instance: None, owner: type[SyncCluster]) -> _Blocking[P, T]: ...

    @overload
    def __get__(self, instance: SyncCluster, owner: type[SyncCluster]) -> Callable[P, T]: ...

    def __get__(
        self, instance: SyncCluster | None, owner: type[SyncCluster]
    ) -> _Blocking[P, T] | Callable[P, T]:
        if instance is None:
            return self
        method, facade = self.method, instance

        def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
            return facade._call(lambda: method(facade.cluster, *args, **kwargs))

        blocking.__name__, blocking.__doc__ = self.__name__, self.__doc__
        blocking.__signature__ = self.__signature__  # type: ignore[attr-defined]
        return blocking


def _without_self(method: Callable[..., Any]) -> inspect.Signature:
    signature = inspect.signature(method)
    return signature.replace(parameters=list(signature.parameters.values())[1:])


class SyncCluster:
    """``Cluster``'s methods, blocking; made (and connected) by ``connect_sync``."""

    def __init__(
        self,
        bootstrap: str | Iterable[str | tuple[str, int]],
        config: ConnectionConfig | None = None,
        *,
        controllers: bool = False,
    ) -> None:
        self._bootstrap = bootstrap if isinstance(bootstrap, str) else list(bootstrap)
        self._config = config
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
        async with connect(self._bootstrap, self._config, controllers=self._controllers) as cluster:
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

    # -- the Cluster methods, blocking (derived: see the module documentation) ----------

    capabilities = _Blocking(Cluster.capabilities)
    view = _Blocking(Cluster.view)
    refresh_metadata = _Blocking(Cluster.refresh_metadata)
    find_coordinators = _Blocking(Cluster.find_coordinators)
    describe_features = _Blocking(Cluster.describe_features)
    update_features = _Blocking(Cluster.update_features)
    request = _Blocking(Cluster.request)
    pick_version = _Blocking(Cluster.pick_version)


def connect_sync(
    bootstrap: str | Iterable[str | tuple[str, int]],
    config: ConnectionConfig | None = None,
    *,
    controllers: bool = False,
) -> SyncCluster:
    """Connect now (blocking); use as ``with connect_sync(...) as cluster:`` (see ``connect``)."""
    return SyncCluster(bootstrap, config, controllers=controllers).start()
