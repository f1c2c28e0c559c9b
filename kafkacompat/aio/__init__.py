"""The asyncio driver: negotiated connections and clusters for asyncio applications, no trio, no thread.

The same decisions as the trio transport (they live in the sans-I/O
``kafkacompat.connection.client_connection`` and the cluster layer written
once in ``kafkacompat.cluster.core``), moved by asyncio streams.
The cluster names are loaded on first use, so that an application opening
one connection does not import the cluster layer or tenacity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports
from kafkacompat.aio.connection import BrokerConnection, open_connection

if TYPE_CHECKING:
    from kafkacompat.aio.cluster import Cluster, connect

__all__ = ["BrokerConnection", "Cluster", "connect", "open_connection"]

_LAZY = {"Cluster": "kafkacompat.aio.cluster", "connect": "kafkacompat.aio.cluster"}


__getattr__ = _lazy_exports(__name__, _LAZY)
