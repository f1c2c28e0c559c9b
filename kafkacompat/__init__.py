"""kafkacompat: make clients and admin tools work with whatever Kafka broker they meet.

The package face: the entry points, loaded on first use so that the codec and
the negotiation core can be used without trio or tenacity.  Exceptions are
imported from ``kafkacompat.errors``, their one home; the layers and where each
thing lives are drawn in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports
from kafkacompat._version import __version__

if TYPE_CHECKING:
    from kafkacompat.blocking.probe import probe_address, probe_broker
    from kafkacompat.connection.client_connection import ClientConnection
    from kafkacompat.connection.config import ConnectionConfig
    from kafkacompat.protocol.versions import VersionRange
    from kafkacompat.transport.cluster import connect
    from kafkacompat.transport.sync import connect_sync

__all__ = [
    "ClientConnection",
    "ConnectionConfig",
    "VersionRange",
    "__version__",
    "connect",
    "connect_sync",
    "probe_address",
    "probe_broker",
]

_LAZY = {
    "ClientConnection": "kafkacompat.connection.client_connection",
    "ConnectionConfig": "kafkacompat.connection.config",
    "VersionRange": "kafkacompat.protocol.versions",
    "connect": "kafkacompat.transport.cluster",
    "connect_sync": "kafkacompat.transport.sync",
    "probe_address": "kafkacompat.blocking.probe",
    "probe_broker": "kafkacompat.blocking.probe",
}


__getattr__ = _lazy_exports(__name__, _LAZY)
