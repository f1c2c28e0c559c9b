"""The loop-neutral connection kit: what every driver shares, and no event loop.

- ``ClientConnection`` (``client_connection``): one connection's whole protocol
  life, sans I/O: handshake, SASL, requests.  Its request pipeline
  (``_request_pipeline``) is private.
- ``ConnectionConfig`` (``config``): the one config object, and its parts; its TLS and
  SASL settings and ``Secret`` (``security``), loaded only by a connection that uses them.
- ``sasl`` / ``sasl_mechanisms``: the login a config describes, and PLAIN/SCRAM.
- ``tls``: the ``ssl.SSLContext`` a ``TlsConfig`` describes.
- ``os_errors``: OS and ssl failures as kafkacompat errors.

Nothing here imports trio, asyncio or a socket module's blocking calls; the
drivers (``transport``, ``aio``, ``blocking``) import this, never the reverse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from kafkacompat.connection.client_connection import ClientConnection
    from kafkacompat.connection.config import ConnectionConfig, ReplyLimits, RetryPolicy
    from kafkacompat.connection.security import SaslConfig, Secret, TlsConfig

__all__ = [
    "ClientConnection",
    "ConnectionConfig",
    "ReplyLimits",
    "RetryPolicy",
    "SaslConfig",
    "Secret",
    "TlsConfig",
]

_HOMES = {
    "ClientConnection": "client_connection",
    "ConnectionConfig": "config",
    "ReplyLimits": "config",
    "RetryPolicy": "config",
    "SaslConfig": "security",
    "Secret": "security",
    "TlsConfig": "security",
}

__getattr__ = _lazy_exports(__name__, _HOMES)
