"""A blocking capability probe: the sans-I/O ApiVersions handshake driven by a plain socket.

Theory.  Everything the handshake decides lives in ``ApiVersionsHandshake``; a
driver does what each action says and reports the outcome as the matching event.
The trio driver (``negotiate``) does that for connections that go on to send
requests.  This one does it with a blocking ``socket`` (``ssl`` for TLS) for
callers that only want to know what a broker can do: health checks, sidecars,
threads, asyncio through ``asyncio.to_thread``.  It imports neither trio,
tenacity nor asyncio, and ``ssl`` only for a TLS probe: no event loop, a small process.

It learns capabilities and nothing else: no SASL (Kafka answers ApiVersions
before authentication, so ``config.sasl`` is ignored), no requests after the
handshake, no connection kept.  ``kafkacompat.transport.blocking`` carries on
past the handshake, on the same socket code (``BlockingSocket``).  Every socket operation has a timeout, the
whole probe has an overall deadline, and only kafkacompat errors come out.
"""

from __future__ import annotations

import errno
import math
import socket
import time
from typing import TYPE_CHECKING

from kafkacompat.errors import (
    KafkaCompatError,
    KafkaTimeoutError,
    NegotiationError,
    TransportError,
    WrongProtocolError,
    attach_context,
)
from kafkacompat.negotiation.addresses import check_address, split_host_port
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake import ApiVersionsHandshake
from kafkacompat.negotiation.handshake_types import (
    Connect,
    Done,
    Fail,
    ReceiveReply,
    SendProbe,
    SendRequest,
)
from kafkacompat.protocol.framing import FrameSplitter
from kafkacompat.transport.config import DEFAULT_CONFIG, ConfigError, ConnectionConfig
from kafkacompat.transport.os_errors import translate_os_error

if TYPE_CHECKING:
    import ssl

__all__ = ["probe_address", "probe_broker"]

_CHUNK = 65536
# The machine bounds itself (versions only go down, connections stop at
# max_connections): a handful of actions.  This guards against a bug, not a broker.
_MAX_ACTIONS = 64


def probe_broker(
    host: str,
    port: int,
    config: ConnectionConfig | None = None,
    *,
    node_id: int | None = None,
    timeout: float | None = None,
) -> BrokerCapabilities:
    """Connect to ``host:port``, run the ApiVersions handshake, close, return what was learned.

    ``timeout`` bounds the whole probe, reconnects included (default: one
    connect_timeout plus one request_timeout per connection the handshake may open).
    """
    host, port = check_address(host, port, source="the caller of probe_broker")
    config = DEFAULT_CONFIG if config is None else config
    if not isinstance(config, ConnectionConfig):
        raise ConfigError(f"config must be a ConnectionConfig, not {type(config).__name__}")
    if timeout is None:
        timeout = config.handshake.max_connections * (config.connect_timeout + config.request_timeout)
    elif isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise ConfigError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return _Probe(host, port, config, time.monotonic() + timeout).run(node_id)


def probe_address(
    address: str,
    config: ConnectionConfig | None = None,
    *,
    node_id: int | None = None,
    timeout: float | None = None,
) -> BrokerCapabilities:
    """``probe_broker`` for one ``"host:port"`` (``"[::1]:9092"`` for IPv6)."""
    host, port = split_host_port(address, source="the caller of probe_address")
    return probe_broker(host, port, config, node_id=node_id, timeout=timeout)


class BlockingSocket:
    """One blocking socket (TLS where configured) at a time to ``host:port``, every call
    bounded by a deadline, every failure a kafkacompat error.  Shared by the probe and
    ``kafkacompat.transport.blocking``."""

    def __init__(self, host: str, port: int, config: ConnectionConfig) -> None:
        self.host, self.port, self.config = host, port, config
        self.node = f"{host}:{port}"  # the trio transport's label, so capabilities compare equal
        self.sock: socket.socket | None = None
        self.context: ssl.SSLContext | None = None  # built once, for every reconnect

    def open_socket(self, deadline: float) -> socket.socket:
        doing, sock, tls_config = "running the TLS handshake", None, self.config.tls
        name = self.host if tls_config is None else tls_config.server_hostname or self.host
        try:
            if tls_config is not None and self.context is None:
                import ssl  # here: a plaintext probe never loads ssl

                from kafkacompat.transport.tls import tls_context

                self.context = tls_context(tls_config)
                # ssl refuses some server names (a leading dot, not IDNA) only once it owns the
                # socket, which it then leaks: a TLS object without a socket checks the name first.
                self.context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname=name)
            doing = "connecting"
            sock = self._tcp(deadline)
            if self.context is None:
                return sock
            doing = "running the TLS handshake"
            # A close without TLS's close_notify is a TLS failure (as under trio), not an EOF
            # the handshake would take for an old broker.
            tls = self.context.wrap_socket(
                sock, server_hostname=name, do_handshake_on_connect=False, suppress_ragged_eofs=False
            )
            sock = tls  # it owns the descriptor now
            tls.settimeout(self._until(deadline, doing))
            tls.do_handshake()  # the timeout bounds the whole handshake, not each read
            return tls
        except BaseException as exc:
            if sock is not None:
                sock.close()
            if isinstance(exc, OSError):
                raise translate_os_error(exc, self.node, doing) from None
            if isinstance(exc, ValueError):
                raise ConfigError(f"the TLS settings cannot be used: {exc}") from None
            raise

    def _tcp(self, deadline: float) -> socket.socket:
        # The addresses share the one connect deadline (socket.create_connection gives each
        # the whole timeout).  Name resolution is the system resolver's, with its own timeouts.
        try:
            addresses = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except UnicodeError as exc:  # a name IDNA cannot encode ("a..b", a 64-byte label)
            raise socket.gaierror(socket.EAI_NONAME, f"not a host name: {exc}") from None
        for index, (family, kind, proto, _, address) in enumerate(addresses, 1):
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(self._until(deadline, "connecting"))
                sock.connect(address)
                return sock
            except BaseException as exc:
                sock.close()
                # Refused or unreachable: the next address may do better; a timeout may not.
                if index == len(addresses) or not isinstance(exc, OSError) or isinstance(exc, TimeoutError):
                    raise
        raise ConnectionRefusedError(errno.ECONNREFUSED, "the host has no address")

    def write(self, frame: bytes, deadline: float) -> None:
        assert self.sock is not None
        self.sock.settimeout(self._until(deadline, "sending a request"))
        try:
            self.sock.sendall(frame)  # the timeout bounds the whole sendall
        except OSError as exc:
            raise translate_os_error(exc, self.node, "sending a request") from None

    def _until(self, deadline: float, doing: str) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise KafkaTimeoutError(f"timed out while {doing}", node=self.node)
        return left

    def receive(self, deadline: float, doing: str) -> bytes:
        """What one ``recv`` returns by ``deadline`` (``b""``: the peer closed)."""
        assert self.sock is not None
        self.sock.settimeout(self._until(deadline, doing))
        try:
            return self.sock.recv(_CHUNK)
        except OSError as exc:
            raise translate_os_error(exc, self.node, doing) from None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()  # close() of a broken socket does not raise
            self.sock = None


class _Probe(BlockingSocket):
    """One probe: the deadline, and the connection the machine is on."""

    def __init__(self, host: str, port: int, config: ConnectionConfig, deadline: float) -> None:
        super().__init__(host, port, config)
        self.deadline = deadline
        # Every reply the probe reads answers ApiVersions: held to that ceiling from its prefix.
        self.splitter = FrameSplitter(config.max_frame_size)
        # Every reply awaited after an ApiVersions request (the probe's too) is due by this.
        self.reply_deadline = deadline

    def run(self, node_id: int | None) -> BrokerCapabilities:
        machine = ApiVersionsHandshake(self.config.handshake, node=self.node)
        try:
            for _ in range(_MAX_ACTIONS):
                action = machine.next_action()
                if isinstance(action, Connect):
                    self._connect(machine)
                elif isinstance(action, SendRequest):
                    self.reply_deadline = min(time.monotonic() + self.config.request_timeout, self.deadline)
                    self._send(action.frame, machine)
                elif isinstance(action, SendProbe):
                    self._send(action.frame, machine)
                elif isinstance(action, ReceiveReply):
                    self._receive(action, machine)
                elif isinstance(action, Done):
                    # needs_new_connection (a fallback, a probe not drained) matters to a driver that goes on
                    # to send requests; the capabilities are already known, so none is opened.
                    return BrokerCapabilities.from_handshake(action.result, node=self.node, node_id=node_id)
                elif isinstance(action, Fail):
                    raise action.error  # the socket is closed below either way
            raise NegotiationError(f"the handshake did not finish within {_MAX_ACTIONS} steps")
        except KafkaCompatError as exc:
            attach_context(exc, node=self.node, transcript=machine.transcript)
            raise
        finally:
            self.close()

    def _connect(self, machine: ApiVersionsHandshake) -> None:
        self.close()
        try:
            self.sock = self.open_socket(min(time.monotonic() + self.config.connect_timeout, self.deadline))
        except KafkaTimeoutError:
            machine.timed_out()
        except TransportError as exc:
            machine.connect_failed(str(exc))
        else:
            machine.connected()

    def _send(self, frame: bytes, machine: ApiVersionsHandshake) -> None:
        try:
            self.write(frame, min(time.monotonic() + self.config.request_timeout, self.deadline))
        except KafkaTimeoutError:
            machine.timed_out()
        except TransportError:
            machine.connection_closed()
        else:
            machine.request_sent()

    def _receive(self, action: ReceiveReply, machine: ApiVersionsHandshake) -> None:
        until = self.reply_deadline
        if action.quiet_period is not None:
            until = min(until, time.monotonic() + action.quiet_period)
        limit, what = machine.reply_ceiling(self.config.reply_limits, self.config.max_frame_size)
        try:
            frame = self._read_frame(until, limit, what)
        except KafkaTimeoutError:
            # Quiet only while the request's own deadline is still ahead: past it, a timeout.
            if until < self.reply_deadline:
                machine.quiet()
            else:
                machine.timed_out()
        except WrongProtocolError:
            machine.foreign_bytes(self.splitter.unconsumed())
        except TransportError:
            machine.connection_closed()  # an EOF or a reset: a close, for the handshake
        else:
            machine.received_frame(frame)  # decodes it: the deadline covers that too
            del frame
            if time.monotonic() > self.deadline:
                raise KafkaTimeoutError("timed out while reading the ApiVersions reply", node=self.node)
        # ProtocolError (a bad prefix that is no other protocol), AuthenticationError: raised as is.

    def _read_frame(self, deadline: float, limit: int, what: str) -> bytes:
        assert self.sock is not None
        # Bounded by the deadline: every recv waits at most until it, and it does not move.
        # FrameSplitter checks the size prefix against the ceiling before allocating the body,
        # which then is one buffer the socket reads straight into.
        splitter = self.splitter
        while (frame := splitter.next_frame(limit, what=what)) is None:
            self.sock.settimeout(self._until(deadline, "reading a response"))
            room = splitter.body_room()
            try:
                if room is not None:
                    count = self.sock.recv_into(room)
                    del room
                    if count:
                        splitter.body_filled(count)
                        continue
                    chunk = b""
                else:
                    chunk = self.sock.recv(_CHUNK)
            except OSError as exc:
                raise translate_os_error(exc, self.node, "reading a response") from None
            if not chunk:
                raise TransportError("the broker closed the connection", node=self.node)
            splitter.push(chunk)
        return frame

    def close(self) -> None:
        super().close()
        self.splitter = FrameSplitter(self.config.max_frame_size)
