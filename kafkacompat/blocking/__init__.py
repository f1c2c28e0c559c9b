"""The blocking driver: one negotiated connection on a plain socket, and the probe built on it.

``connection.BlockingConnection`` moves a ``ClientConnection``'s bytes with
blocking socket calls (``sockets``), no event loop and no thread;
``probe.probe_broker`` / ``probe_address`` answer "what is this broker?" with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from kafkacompat.blocking.connection import BlockingConnection, open_blocking_connection
    from kafkacompat.blocking.probe import probe_address, probe_broker

__all__ = ["BlockingConnection", "open_blocking_connection", "probe_address", "probe_broker"]

_HOMES = {
    "BlockingConnection": "connection",
    "open_blocking_connection": "connection",
    "probe_address": "probe",
    "probe_broker": "probe",
}

__getattr__ = _lazy_exports(__name__, _HOMES)
