"""A cluster of emulated brokers, possibly of different releases, on loopback.

Theory.  A cluster is nodes (each a ``BrokerProfile`` and a node id) over one
``ClusterState``; each node gets its own listener.  Brokers of different
releases in one cluster are a rolling upgrade caught in the middle: they
agree on the metadata and the coordinators and differ only in the protocol
versions they speak.  Node ids count up from ``first_node_id`` in the order
the releases were given; a single release with ``brokers=N`` makes N
identical brokers.

Three ways to run it:

- ``async with EmulatedCluster(...) as cluster`` in trio code: listening on
  entry, stopped on exit.
- ``await cluster.start(nursery)`` / ``cluster.stop()`` when the nursery is
  someone else's (the pytest fixture factory does this).
- ``with ThreadedCluster(...) as cluster`` from synchronous code (blocking
  clients such as confluent-kafka or kafka-python): trio runs in a thread of
  its own, and entry returns once every broker listens.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, suppress
from types import TracebackType
from typing import Any

import trio

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.testing.emulator.broker import EmulatedBroker, check_bind_host
from kafkacompat.testing.emulator.connection import RequestRecord
from kafkacompat.testing.emulator.faults import Fault
from kafkacompat.testing.emulator.handlers import Handler
from kafkacompat.testing.emulator.profile import BrokerProfile, parse_profile_spec
from kafkacompat.testing.emulator.sasl import SaslConfig
from kafkacompat.testing.emulator.state import ClusterState, Node

__all__ = ["EmulatedCluster", "ThreadedCluster"]

ReleaseSpec = str | BrokerProfile
_START_TIMEOUT = 10.0


def _profiles(
    releases: ReleaseSpec | Sequence[ReleaseSpec] | None, kind: str | None, brokers: int | None
) -> list[BrokerProfile]:
    specs: list[ReleaseSpec]
    if releases is None:
        specs = ["3.9"]
    elif isinstance(releases, str | BrokerProfile):
        specs = [releases]
    else:
        specs = list(releases)
    if not specs:
        raise EmulatorConfigError("a cluster needs at least one release")
    profiles = [parse_profile_spec(spec, kind) for spec in specs]
    if brokers is not None:
        if brokers < 1:
            raise EmulatorConfigError("a cluster needs at least one broker")
        if len(profiles) == 1:
            profiles = profiles * brokers
        elif len(profiles) != brokers:
            raise EmulatorConfigError(f"{len(profiles)} releases given for {brokers} brokers")
    return profiles


class EmulatedCluster:
    """Emulated brokers of any Kafka releases, sharing one cluster state."""

    def __init__(
        self,
        releases: ReleaseSpec | Sequence[ReleaseSpec] | None = None,
        *,
        kind: str | None = None,
        brokers: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        allow_non_loopback: bool = False,
        first_node_id: int = 1,
        cluster_id: str = "kafkacompat-emulated",
        topics: Mapping[str, int] | None = None,
        coordinator_errors: Mapping[str, int] | None = None,
        finalized_features: Mapping[str, int] | None = None,
        finalized_epoch: int | None = None,
        controller_id: int | None = None,
        sasl: SaslConfig | None = None,
        faults: Iterable[Fault] = (),
        handlers: Mapping[int, Handler] | None = None,
    ) -> None:
        check_bind_host(host, allow_non_loopback)
        if port and not 0 < port < 65536:
            raise EmulatorConfigError(f"not a TCP port: {port}")
        profiles = _profiles(releases, kind, brokers)
        if port and port + len(profiles) > 65536:
            raise EmulatorConfigError(f"no room for {len(profiles)} ports from {port}")
        nodes = [
            Node(first_node_id + index, profile, host=host, port=port + index if port else 0)
            for index, profile in enumerate(profiles)
        ]
        self.state = ClusterState(
            nodes,
            cluster_id=cluster_id,
            topics=topics,
            coordinator_errors=coordinator_errors,
            finalized_features=finalized_features,
            finalized_epoch=finalized_epoch,
            controller_id=controller_id,
        )
        fault_list = list(faults)
        self.brokers = [
            EmulatedBroker(
                node, self.state, faults=fault_list, sasl=sasl, handlers=handlers,
                allow_non_loopback=allow_non_loopback,
            )
            for node in nodes
        ]
        self._stack: AsyncExitStack | None = None

    # -- where it is -----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``host:port`` of every broker (not controllers), comma-separated."""
        serving = [b for b in self.brokers if not b.profile.is_controller] or self.brokers
        return ",".join(b.address for b in serving)

    @property
    def addresses(self) -> list[str]:
        return [b.address for b in self.brokers]

    def broker(self, node_id: int) -> EmulatedBroker:
        for broker in self.brokers:
            if broker.node_id == node_id:
                return broker
        raise EmulatorConfigError(f"no node {node_id} in this cluster")

    @property
    def requests(self) -> list[RequestRecord]:
        """Every broker's request log, broker by broker."""
        return [record for broker in self.brokers for record in broker.requests]

    # -- knobs -----------------------------------------------------------------------------

    def add_fault(self, fault: Fault, node_id: int | None = None) -> None:
        """Add ``fault`` to one broker, or to every broker (each counts its own firings)."""
        for broker in self.brokers if node_id is None else [self.broker(node_id)]:
            broker.add_fault(fault)

    def clear_faults(self) -> None:
        for broker in self.brokers:
            broker.clear_faults()

    def set_coordinator_error(self, key: str, error_code: int | None) -> None:
        if error_code is None:
            self.state.coordinator_errors.pop(key, None)
        else:
            self.state.coordinator_errors[key] = error_code

    def swap_node_ids(self, first: int, second: int) -> None:
        """Two brokers trade node ids, keeping their addresses (see ``ClusterState.swap_node_ids``)."""
        self.state.swap_node_ids(first, second)

    def upgrade(self, node_id: int, release: ReleaseSpec, kind: str | None = None) -> None:
        """Restart one node as another release (rolling upgrade step)."""
        self.broker(node_id).restart(parse_profile_spec(release, kind))

    # -- running ---------------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> EmulatedCluster:
        """Start every broker in ``nursery``; returns once all of them listen."""
        for broker in self.brokers:
            await nursery.start(broker.serve)
        return self

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop()

    async def __aenter__(self) -> EmulatedCluster:
        stack = AsyncExitStack()
        nursery = await stack.enter_async_context(trio.open_nursery())
        stack.callback(self.stop)
        try:
            with trio.fail_after(_START_TIMEOUT):
                await self.start(nursery)
        except BaseException:
            self.stop()
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # The body's exception is not handed to the nursery, so that it propagates as
        # itself rather than wrapped in an ExceptionGroup: the brokers are stopped first.
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()


class ThreadedCluster:
    """An ``EmulatedCluster`` run by trio in a background thread, for synchronous code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.cluster = EmulatedCluster(*args, **kwargs)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._error: BaseException | None = None

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            await self.cluster.start(nursery)
            self._ready.set()

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
        finally:
            self._ready.set()

    def start(self) -> ThreadedCluster:
        self._thread = threading.Thread(target=self._run, name="kafkacompat-emulator", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT) or self._error is not None:
            self.close()
            raise EmulatorConfigError(f"the emulated cluster did not start: {self._error!r}")
        return self

    def close(self, timeout: float = _START_TIMEOUT) -> None:
        token, thread = self._token, self._thread
        if token is not None and thread is not None and thread.is_alive():
            with suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self.cluster.stop, trio_token=token)
        if thread is not None:
            thread.join(timeout)

    def __enter__(self) -> ThreadedCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
