"""The trio transport: connections that negotiate by themselves, and clusters of them.

This package is the only place that imports trio and tenacity.  Its names are
loaded on first use, so that opening one connection does not import the
cluster layer, tenacity or the blocking facade.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat import _lazy_exports

if TYPE_CHECKING:
    from kafkacompat.negotiation.capability_changes import CapabilityChange
    from kafkacompat.transport.blocking import BlockingConnection, open_blocking_connection
    from kafkacompat.transport.cluster import Cluster, connect
    from kafkacompat.transport.config import (
        ConnectionConfig,
        ReplyLimits,
        RetryPolicy,
        SaslConfig,
        Secret,
        TlsConfig,
    )
    from kafkacompat.transport.connection import BrokerConnection, open_connection
    from kafkacompat.transport.probe import probe_address, probe_broker
    from kafkacompat.transport.sync import SyncCluster, connect_sync

_HOMES = {
    "BrokerConnection": "connection",
    "CapabilityChange": "kafkacompat.negotiation.capability_changes",
    "open_connection": "connection",
    "Cluster": "cluster",
    "connect": "cluster",
    "ConnectionConfig": "config",
    "ReplyLimits": "config",
    "RetryPolicy": "config",
    "SaslConfig": "config",
    "Secret": "config",
    "TlsConfig": "config",
    "SyncCluster": "sync",
    "connect_sync": "sync",
    "probe_address": "probe",
    "probe_broker": "probe",
    "BlockingConnection": "blocking",
    "open_blocking_connection": "blocking",
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
