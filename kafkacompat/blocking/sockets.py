"""One blocking socket (TLS where configured), every call bounded by a deadline.

The byte-moving half of the blocking driver (``kafkacompat.blocking.connection``,
which ``probe_broker`` also runs on): connect (every address sharing one
deadline), the TLS handshake, whole writes, bounded reads.  Every failure comes
out as a kafkacompat error; ``ssl`` is imported only when TLS is configured.
"""

from __future__ import annotations

import errno
import socket
import time
from typing import TYPE_CHECKING

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.os_errors import translate_os_error
from kafkacompat.errors import ConfigError, KafkaTimeoutError

if TYPE_CHECKING:
    import ssl

__all__ = ["BlockingSocket"]

_CHUNK = 65536


class BlockingSocket:
    """One blocking socket (TLS where configured) at a time to ``host:port``, every call
    bounded by a deadline, every failure a kafkacompat error.  Shared by the probe and
    ``kafkacompat.blocking.connection``."""

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

                from kafkacompat.connection.tls import tls_context

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
