"""Say what the peer is, within a few seconds, when the handshake does not get an answer quickly.

Every command connects through ``probe.with_cluster``.  A broker answers the
handshake in milliseconds; when the bootstrap has not connected after
``DIAGNOSE_AFTER`` seconds, a second connection to the first bootstrap address
writes ``negotiation.peer_kind``'s first-contact request and classifies what
comes back.  A web, TLS, SSH or text server is then named in one sentence and
the command ends, instead of waiting out its timeouts and retries (a retry
cannot make a web server speak Kafka).  A peer that answers as Kafka leaves
the handshake to go on; one that stays silent ends the command only with the
default ``--timeout`` (given one, the user chose to wait).  A peer that closes
on plaintext, as TLS listeners do, is asked again with a TLS ClientHello.
Plaintext connections only: with ``--tls`` the handshake's own errors stand.
"""

from __future__ import annotations

import contextlib
import ssl
import time

import trio

from kafkacompat.negotiation.peer_kind import (
    TLS_LISTENER,
    PeerKind,
    PeerVerdict,
    classify,
    first_contact_request,
)
from kafkacompat.protocol.framing import DEFAULT_HEADERS, RequestHeaders

__all__ = ["DIAGNOSE_AFTER", "SILENCE", "diagnose", "first_address", "speaks_tls"]

DIAGNOSE_AFTER = 1.0  # seconds the handshake may take before the peer is looked at
SILENCE = 2.5  # seconds of silence after the first-contact request that count as "silent"
_TLS_WAIT = 1.5  # a TLS server answers a ClientHello at once
_READ = 4096


def first_address(bootstrap: str) -> tuple[str, int] | None:
    """The first ``host:port`` of a bootstrap list (``[v6]:port`` too), or None when it cannot be read."""
    first = bootstrap.split(",", 1)[0].strip()
    host, _, port = first.rpartition(":")
    host = host.strip("[]")
    return (host, int(port)) if host and port.isdigit() else None


def _client_hello() -> bytes:
    """A TLS ClientHello, made by the ssl module in memory (no socket, nothing verified: it is only sent)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the server: the hello is written
        tls.do_handshake()
    return outgoing.read()


async def _exchange(host: str, port: int, data: bytes, wait: float) -> tuple[bytes, bool]:
    """Write ``data``, read what comes within ``wait`` seconds: (bytes read, whether the peer closed)."""
    with trio.move_on_after(wait):
        stream = await trio.open_tcp_stream(host, port)
        try:
            await stream.send_all(data)
            received = await stream.receive_some(_READ)
            return bytes(received), not received
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b"", True
        finally:
            await trio.aclose_forcefully(stream)
    return b"", False


async def speaks_tls(host: str, port: int, wait: float = SILENCE) -> bool:
    """Whether the peer answers a TLS ClientHello as a TLS server does (a handshake record or an alert)."""
    try:
        reply, _ = await _exchange(host, port, _client_hello(), wait)
    except OSError:
        return False
    return len(reply) >= 2 and reply[0] in (0x15, 0x16) and reply[1] == 0x03


async def diagnose(host: str, port: int, headers: RequestHeaders = DEFAULT_HEADERS) -> PeerVerdict | None:
    """What the peer at ``host:port`` is, from its answer to the first-contact request (None: unreachable)."""
    started = time.monotonic()
    try:
        request = first_contact_request(headers)
        data, closed = await _exchange(host, port, request, SILENCE)
    except OSError:
        return None  # refused or unreachable: the handshake says so itself
    verdict = classify(data, closed=closed, waited=time.monotonic() - started)
    if verdict.kind in (PeerKind.CLOSED, PeerKind.SILENT) and await speaks_tls(host, port, _TLS_WAIT):
        return PeerVerdict(PeerKind.TLS, TLS_LISTENER, verdict.detail)
    return verdict
