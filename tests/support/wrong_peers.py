"""Peers that are not Kafka, as a new user points a command at them by mistake, each on a loopback port.

Each is a context manager yielding ``127.0.0.1:PORT`` and serving from threads
until it is left: ``web_server`` (Python's ``http.server``), ``silent_port``
(accepts and never says a word), ``text_server`` (answers ``-ERR unknown
command`` once it has read a line, as Redis does), ``tls_listener`` (a TLS
server with a certificate of its own CA: ``ca_file`` is where that CA's PEM
was written, for ``--ca-file``) and ``closing_port`` (closes every connection
at once).  Used by tests/integration/cli/test_cli_wrong_peers.py and by the
executed docs (``tests.support.docs_check`` targets ``http``, ``silent``,
``text``, ``tls``, ``closes``).
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import trustme

__all__ = [
    "closing_port",
    "nothing_listens",
    "silent_port",
    "ssh_server",
    "text_server",
    "tls_listener",
    "web_server",
]

HOLD = 30.0  # seconds a peer keeps a connection it does not close at once


@contextlib.contextmanager
def _serving(handle: Callable[[socket.socket], None]) -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def nothing_listens() -> str:
    """A loopback address where nothing listens (it did a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


class _QuietHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # not on the stderr a test reads
        pass


@contextlib.contextmanager
def web_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _hold(conn: socket.socket) -> None:
    with conn:
        time.sleep(HOLD)


def _answer_a_line(conn: socket.socket) -> None:
    with conn, contextlib.suppress(OSError):
        conn.makefile("rb").readline()
        conn.sendall(b"-ERR unknown command\r\n")
        time.sleep(HOLD)


def _close(conn: socket.socket) -> None:
    conn.close()


def _greet_as_ssh(conn: socket.socket) -> None:
    with conn, contextlib.suppress(OSError):
        conn.sendall(b"SSH-2.0-OpenSSH_9.6p1 Debian-3\r\n")  # what sshd says first, before reading
        time.sleep(HOLD)


def silent_port() -> contextlib.AbstractContextManager[str]:
    return _serving(_hold)


def text_server() -> contextlib.AbstractContextManager[str]:
    return _serving(_answer_a_line)


def closing_port() -> contextlib.AbstractContextManager[str]:
    return _serving(_close)


def ssh_server() -> contextlib.AbstractContextManager[str]:
    return _serving(_greet_as_ssh)


@contextlib.contextmanager
def tls_listener() -> Iterator[tuple[str, Path]]:
    """(address, the PEM file of the CA that signed its certificate)."""
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)

    def speak_tls(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
            tls.recv(1)

    with tempfile.TemporaryDirectory(prefix="kafkacompat-tls-") as folder, _serving(speak_tls) as address:
        ca_file = Path(folder) / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        yield address, ca_file
