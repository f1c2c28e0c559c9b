"""A blocking capability probe: connect, negotiate, close, and say what the broker can do.

For callers that only want to know what a broker can do: health checks,
sidecars, threads, asyncio through ``asyncio.to_thread``.  It is the blocking
driver (``kafkacompat.blocking.connection``) stopped after the handshake: every
decision is the sans-I/O ``ClientConnection``'s, the pre-0.10 fallback
included, and it imports neither trio, tenacity nor asyncio (``ssl`` only for
TLS).  It learns capabilities and nothing else: no SASL (Kafka answers
ApiVersions before authentication, so ``config.sasl`` is not used), no requests,
no connection kept.  The whole probe has one deadline; only kafkacompat errors
come out.
"""

from __future__ import annotations

import dataclasses

from kafkacompat.blocking.connection import BlockingConnection
from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.errors import ConfigError
from kafkacompat.negotiation.addresses import check_address, split_host_port
from kafkacompat.negotiation.capabilities import BrokerCapabilities

__all__ = ["probe_address", "probe_broker"]


def probe_broker(
    host: str,
    port: int,
    config: ConnectionConfig | None = None,
    *,
    node_id: int | None = None,
    timeout: float | None = None,
) -> BrokerCapabilities:
    """Connect to ``host:port``, run the ApiVersions handshake, close, return what was learned.

    ``timeout`` bounds the whole probe, reconnects included (default: one
    connect_timeout plus one request_timeout per connection the handshake may open).
    """
    host, port = check_address(host, port, source="the caller of probe_broker")
    config = DEFAULT_CONFIG if config is None else config
    if not isinstance(config, ConnectionConfig):
        raise ConfigError(f"config must be a ConnectionConfig, not {type(config).__name__}")
    if timeout is None:  # a given one is checked by open()
        timeout = config.handshake.max_connections * (config.connect_timeout + config.request_timeout)
    if config.sasl is not None:  # ApiVersions comes before authentication: no login needed
        config = dataclasses.replace(config, sasl=None)
    with BlockingConnection(host, port, config, node_id=node_id) as conn:
        return conn.open(timeout=timeout)


def probe_address(
    address: str,
    config: ConnectionConfig | None = None,
    *,
    node_id: int | None = None,
    timeout: float | None = None,
) -> BrokerCapabilities:
    """``probe_broker`` for one ``"host:port"`` (``"[::1]:9092"`` for IPv6)."""
    host, port = split_host_port(address, source="the caller of probe_address")
    return probe_broker(host, port, config, node_id=node_id, timeout=timeout)
