"""The trio driver: connections that negotiate by themselves, clusters of them, and a sync facade.

Of the library's layers (below testing and the CLI) it is the one that imports
trio.  It only moves bytes, sleeps and waits: the connection's protocol is
``kafkacompat.connection`` (sans-I/O), the cluster logic ``kafkacompat.cluster``.
Its names are loaded on first use.  ``ConnectionConfig`` and its parts, and the
blocking driver's ``open_blocking_connection``, are also offered here because
the guides import them from here; their homes are ``kafkacompat.connection``
and ``kafkacompat.blocking``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from kafkacompat.blocking.connection import BlockingConnection, open_blocking_connection
    from kafkacompat.blocking.probe import probe_address, probe_broker
    from kafkacompat.connection.config import ConnectionConfig, ReplyLimits, RetryPolicy
    from kafkacompat.connection.security import SaslConfig, Secret, TlsConfig
    from kafkacompat.negotiation.capability_changes import CapabilityChange
    from kafkacompat.transport.cluster import Cluster, connect
    from kafkacompat.transport.connection import BrokerConnection, open_connection
    from kafkacompat.transport.sync import SyncCluster, connect_sync

_HOMES = {
    "BrokerConnection": "connection",
    "CapabilityChange": "kafkacompat.negotiation.capability_changes",
    "open_connection": "connection",
    "Cluster": "cluster",
    "connect": "cluster",
    "ConnectionConfig": "kafkacompat.connection.config",
    "ReplyLimits": "kafkacompat.connection.config",
    "RetryPolicy": "kafkacompat.connection.config",
    "SaslConfig": "kafkacompat.connection.security",
    "Secret": "kafkacompat.connection.security",
    "TlsConfig": "kafkacompat.connection.security",
    "SyncCluster": "sync",
    "connect_sync": "sync",
    "probe_address": "kafkacompat.blocking.probe",
    "probe_broker": "kafkacompat.blocking.probe",
    "BlockingConnection": "kafkacompat.blocking.connection",
    "open_blocking_connection": "kafkacompat.blocking.connection",
}

__all__ = [
    "BlockingConnection",
    "BrokerConnection",
    "CapabilityChange",
    "Cluster",
    "ConnectionConfig",
    "ReplyLimits",
    "RetryPolicy",
    "SaslConfig",
    "Secret",
    "SyncCluster",
    "TlsConfig",
    "connect",
    "connect_sync",
    "open_blocking_connection",
    "open_connection",
    "probe_address",
    "probe_broker",
]


__getattr__ = _lazy_exports(__name__, _HOMES)
