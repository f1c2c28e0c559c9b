"""The asyncio driver: negotiated connections and clusters for asyncio applications, no trio, no thread.

The same decisions as the trio transport (they live in the sans-I/O
``kafkacompat.negotiation.client_connection`` and the cluster layer written
once in ``kafkacompat.transport.cluster_core``), moved by asyncio streams.
"""

from __future__ import annotations

from kafkacompat.aio.cluster import Cluster, connect
from kafkacompat.aio.connection import BrokerConnection, open_connection

__all__ = ["BrokerConnection", "Cluster", "connect", "open_connection"]
