"""kafkacompat: make clients and admin tools work with whatever Kafka broker they meet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkacompat.protocol.versions import VersionRange

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kafkacompat.transport.cluster import connect
    from kafkacompat.transport.probe import probe_address, probe_broker
    from kafkacompat.transport.sync import connect_sync

__all__ = ["VersionRange", "__version__", "connect", "connect_sync", "probe_address", "probe_broker"]

# The transport (trio, tenacity) is imported on first use, so that the codec and
# the negotiation core can be used without it.
_LAZY = {
    "connect": "kafkacompat.transport.cluster",
    "connect_sync": "kafkacompat.transport.sync",
    "probe_address": "kafkacompat.transport.probe",
    "probe_broker": "kafkacompat.transport.probe",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkacompat' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
