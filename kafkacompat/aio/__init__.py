"""The asyncio driver: negotiated connections for asyncio applications, no trio, no thread.

The same decisions as the trio transport (they live in the sans-I/O
``kafkacompat.negotiation.client_connection``), moved by asyncio streams.
"""

from __future__ import annotations

from kafkacompat.aio.connection import BrokerConnection, open_connection

__all__ = ["BrokerConnection", "open_connection"]
