"""A TLS terminator for tests: TLS on 127.0.0.1 in front of a plaintext broker.

Tansu 0.6.0 cannot serve TLS itself (its ``--cert`` and ``--key`` flags refuse
to be given together), so the TLS tests put this in front of it: each accepted
connection runs the server side of a TLS handshake with Python's ``ssl``
(optionally requiring a client certificate), then opens a plaintext
connection to the upstream broker and copies bytes both ways until either side
closes.  Everything is bounded: the number of connections, the handshake time,
each connection's lifetime and the number of chunks copied.  Leaving
``serve_tls_terminator`` cancels every connection and closes the listener.

``make_tls_files`` writes what the tests need, made by trustme: a CA, a server
certificate for ``localhost`` and ``127.0.0.1``, a client certificate, and a
second CA that signed nothing the terminator serves.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import trustme

__all__ = [
    "TlsFiles",
    "TlsTerminator",
    "make_tls_files",
    "serve_tls_terminator",
    "server_context",
    "terminate_tls_for",
]

LOOPBACK = "127.0.0.1"
_CHUNK = 65536


@dataclass(frozen=True)
class TlsFiles:
    ca_file: Path  # signed the server and the client certificates
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca_file: Path  # a CA that signed nothing used here: "unknown CA"


def make_tls_files(directory: Path, names: tuple[str, ...] = ("localhost", LOOPBACK)) -> TlsFiles:
    ca, other = trustme.CA(), trustme.CA()
    server = ca.issue_cert(*names)
    client = ca.issue_cert("kafkacompat-test-client")
    files = TlsFiles(
        ca_file=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        other_ca_file=directory / "other-ca.pem",
    )
    ca.cert_pem.write_to_path(str(files.ca_file))
    other.cert_pem.write_to_path(str(files.other_ca_file))
    server.private_key_pem.write_to_path(str(files.server_key))
    client.private_key_pem.write_to_path(str(files.client_key))
    # The chain (leaf first) in one file, as load_cert_chain expects.
    for blob, path in ((server, files.server_cert), (client, files.client_cert)):
        path.write_bytes(b"".join(pem.bytes() for pem in blob.cert_chain_pems))
    return files


def server_context(files: TlsFiles, *, require_client_cert: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(files.server_cert), str(files.server_key))
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(files.ca_file))
    return context


@dataclass
class TlsTerminator:
    """TLS in on ``host:port``, plaintext out to ``upstream``."""

    upstream: tuple[str, int]
    context: ssl.SSLContext
    max_connections: int = 32
    handshake_timeout: float = 5.0
    connection_lifetime: float = 30.0
    max_chunks: int = 100_000  # per direction and connection
    host: str = LOOPBACK
    port: int = 0
    accepted: int = 0
    forwarded: int = 0  # connections that completed TLS and reached the upstream
    handshake_failures: list[str] = field(default_factory=list)

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host=self.host)
        self.port = listeners[0].socket.getsockname()[1]
        await trio.serve_listeners(self._handle, listeners, task_status=task_status)

    async def _handle(self, tcp: trio.SocketStream) -> None:
        self.accepted += 1
        if self.accepted > self.max_connections:
            await trio.aclose_forcefully(tcp)
            return
        tls = trio.SSLStream(tcp, self.context, server_side=True)
        try:
            with trio.fail_after(self.handshake_timeout):
                await tls.do_handshake()
        except (trio.BrokenResourceError, trio.TooSlowError, ssl.SSLError, OSError) as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            self.handshake_failures.append(f"{type(cause).__name__}: {cause}")
            await trio.aclose_forcefully(tcp)
            return
        try:
            with trio.fail_after(self.handshake_timeout):
                upstream = await trio.open_tcp_stream(*self.upstream)
        except (OSError, trio.TooSlowError):
            await trio.aclose_forcefully(tls)
            return
        self.forwarded += 1
        with trio.move_on_after(self.connection_lifetime):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, tls, upstream, nursery.cancel_scope)
                nursery.start_soon(self._pump, upstream, tls, nursery.cancel_scope)
        await trio.aclose_forcefully(upstream)
        await trio.aclose_forcefully(tls)

    async def _pump(self, source: trio.abc.Stream, sink: trio.abc.Stream, scope: trio.CancelScope) -> None:
        """Copy until ``source`` ends or breaks; then end the whole connection (no half-close)."""
        try:
            for _ in range(self.max_chunks):
                data = await source.receive_some(_CHUNK)
                if not data:
                    break
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            scope.cancel()


@asynccontextmanager
async def serve_tls_terminator(
    upstream: tuple[str, int], context: ssl.SSLContext, **options: Any
) -> AsyncIterator[TlsTerminator]:
    """``async with serve_tls_terminator((host, port), ctx) as t:`` TLS on ``t.host:t.port``."""
    terminator = TlsTerminator(upstream, context, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(terminator.serve)
        try:
            yield terminator
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def terminate_tls_for(
    broker: tuple[str, int], files: TlsFiles, *, mutual: bool = False
) -> AsyncIterator[TlsTerminator]:
    """A terminator in front of ``broker`` with the test certificate (a client one when ``mutual``)."""
    async with serve_tls_terminator(broker, server_context(files, require_client_cert=mutual)) as running:
        yield running
