"""One emulated broker: a trio TCP server around the sans-I/O ``Connection``.

Theory.  All protocol decisions live in ``Connection``; this module only moves
bytes and time.  The loop per connection reads what arrived, hands it to the
connection and carries out the actions in order: send bytes, sleep, close
(with an RST for a reset: SO_LINGER 0), stall (the connection ignores
everything after; the loop keeps reading only to notice the peer leave), or
freeze (the loop stops reading too, as a hung process does, until the broker
stops or drops its connections).  Nothing else here loops without reading
from the peer, so a connection ends when the client goes, when a fault closes
it, or when the broker stops.

The broker listens on loopback unless told otherwise explicitly: an emulator
of failure modes has no business on a real network.  Its profile can be
swapped while it runs (``restart``), which drops its connections, as the
restart of a rolling upgrade does, but keeps its port and node id.
"""

from __future__ import annotations

import collections
import errno
import ipaddress
import socket
import struct
from collections.abc import Iterable, Mapping

import trio

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.testing.emulator.connection import Connection, RequestRecord
from kafkacompat.testing.emulator.faults import Close, Fault, FaultPlan, Freeze, Send, Sleep, Stall
from kafkacompat.testing.emulator.handlers import Handler
from kafkacompat.testing.emulator.profile import BrokerProfile
from kafkacompat.testing.emulator.sasl import SaslConfig
from kafkacompat.testing.emulator.state import ClusterState, FeatureSnapshot, Node

__all__ = ["EmulatedBroker", "check_bind_host"]

_RECEIVE_SIZE = 65536
_LOG_LIMIT = 10_000


def check_bind_host(host: str, allow_non_loopback: bool = False) -> None:
    """Refuse to listen anywhere but loopback unless explicitly allowed."""
    if allow_non_loopback:
        return
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise EmulatorConfigError(
            f"refusing to listen on {host}: the emulator binds loopback only "
            "(127.0.0.0/8 or ::1) unless non-loopback binding is explicitly allowed"
        )


class EmulatedBroker:
    """A broker of some release, listening on loopback, answering from a shared ``ClusterState``."""

    def __init__(
        self,
        node: Node,
        state: ClusterState,
        *,
        faults: Iterable[Fault] = (),
        sasl: SaslConfig | None = None,
        handlers: Mapping[int, Handler] | None = None,
        bind_host: str | None = None,
        allow_non_loopback: bool = False,
    ) -> None:
        self.node = node
        self.state = state
        self.faults = FaultPlan(faults)
        self.sasl = sasl
        self.handlers = dict(handlers or {})
        self.bind_host = bind_host or node.host
        check_bind_host(self.bind_host, allow_non_loopback)
        if self.bind_host == "localhost":  # one address, so that one port is advertised
            self.bind_host = "127.0.0.1"
        self.requests: collections.deque[RequestRecord] = collections.deque(maxlen=_LOG_LIMIT)
        self.connections_accepted = 0
        self.listening = False  # True from the moment it listens until its listeners are closed
        self._scope: trio.CancelScope | None = None
        self._connection_scopes: set[trio.CancelScope] = set()

    # -- identity --------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.node.node_id

    @property
    def profile(self) -> BrokerProfile:
        return self.node.profile

    @property
    def host(self) -> str:
        return self.node.host

    @property
    def port(self) -> int:
        return self.node.port

    @property
    def address(self) -> str:
        return self.node.address

    def __repr__(self) -> str:
        return f"<EmulatedBroker {self.node_id} {self.profile.label} at {self.address}>"

    # -- knobs -----------------------------------------------------------------------------

    def add_fault(self, fault: Fault) -> Fault:
        return self.faults.add(fault)

    def clear_faults(self) -> None:
        self.faults.clear()

    def hold_features(self, snapshot: FeatureSnapshot | None = None) -> None:
        """Keep reporting ``snapshot`` (default: what it reports now) as finalized features."""
        self.node.held_features = snapshot or self.state.features_seen_by(self.node)

    def release_features(self) -> None:
        self.node.held_features = None

    def restart(self, profile: BrokerProfile | None = None) -> None:
        """Drop every connection and, if given, come back as another release (same id and port)."""
        if profile is not None:
            self.node.profile = profile
        self.drop_connections()

    def drop_connections(self) -> None:
        for scope in list(self._connection_scopes):
            scope.cancel()

    # -- serving ---------------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[EmulatedBroker] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen and answer until ``stop()`` or cancellation; started() once listening."""
        with trio.CancelScope() as scope:
            self._scope = scope
            listeners = await self._listen()
            self.listening = True
            try:
                self.node.port = listeners[0].socket.getsockname()[1]
                async with trio.open_nursery() as nursery:
                    task_status.started(self)
                    for listener in listeners:
                        nursery.start_soon(self._accept_loop, listener, nursery)
            finally:
                try:
                    for listener in listeners:
                        await trio.aclose_forcefully(listener)
                finally:
                    self.listening = False

    async def _listen(self) -> list[trio.SocketListener]:
        """Bind the node's port; a port in use or forbidden is an ``EmulatorConfigError``, in one line."""
        try:
            return await trio.open_tcp_listeners(self.node.port, host=self.bind_host)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                why = "is already in use"
            elif exc.errno in (errno.EACCES, errno.EPERM):
                why = "may not be bound by this user"
            else:
                why = f"cannot be bound ({exc.strerror or exc})"
            raise EmulatorConfigError(
                f"port {self.node.port} on {self.bind_host} {why}: choose another port, or 0 for a free one"
            ) from None

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    async def _accept_loop(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        while True:
            stream = await listener.accept()
            self.connections_accepted += 1
            nursery.start_soon(self._handle, stream)

    async def _handle(self, stream: trio.SocketStream) -> None:
        connection = Connection(
            self.node, self.state, self.faults, self.requests.append, sasl=self.sasl, handlers=self.handlers
        )
        with trio.CancelScope() as scope:
            self._connection_scopes.add(scope)
            try:
                await self._drive(stream, connection)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            finally:
                self._connection_scopes.discard(scope)
                await trio.aclose_forcefully(stream)

    @staticmethod
    async def _drive(stream: trio.SocketStream, connection: Connection) -> None:
        while True:
            data = await stream.receive_some(_RECEIVE_SIZE)
            if not data:
                return
            for action in connection.receive(data):
                if isinstance(action, Send):
                    await stream.send_all(action.data)
                elif isinstance(action, Sleep):
                    await trio.sleep(action.seconds)
                elif isinstance(action, Close):
                    if action.reset:
                        stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                elif isinstance(action, Stall):
                    break  # keep reading; the connection ignores the rest
                elif isinstance(action, Freeze):
                    await trio.sleep_forever()  # neither read nor answer: the client's writes back up
