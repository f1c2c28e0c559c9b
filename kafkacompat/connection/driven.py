"""What every driver's connection to one broker holds, written once for the three of them.

A driver's connection (trio's and asyncio's ``BrokerConnection``, the blocking
``BlockingConnection``) is a ``DrivenConnection``: the address, checked before
any socket sees it; the one config; the node id and, from the cluster layer,
KIP-1242's identity and memory of advertised maxima; and what the last
negotiation learned (``handshake``, ``capabilities``, and ``changes``: what a
reconnect found different).  ``_new_protocol`` builds the sans-I/O
``ClientConnection`` every open drives, and ``_negotiated`` takes its ``Ready``
in: the SASL log line, the change record, the new capabilities.  What is left to
each driver is moving bytes, sleeping and waking.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkacompat.connection.client_connection import ClientConnection, Ready
from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.errors import ConfigError
from kafkacompat.negotiation.addresses import check_address

if TYPE_CHECKING:
    from kafkacompat.negotiation.capabilities import BrokerCapabilities
    from kafkacompat.negotiation.capability_changes import CapabilityChange
    from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
    from kafkacompat.negotiation.handshake.types import HandshakeResult

__all__ = ["DrivenConnection"]


class DrivenConnection:
    """A connection to ``host:port`` as a driver holds it; see the module's doc."""

    #: Where a driver's connections log (a reconnect's changes, a SASL login).
    _log = logging.getLogger("kafkacompat.connection")

    def __init__(
        self, host: str, port: int, config: ConnectionConfig | None = None, *, node_id: int | None = None
    ) -> None:
        self.host, self.port = check_address(host, port, source="the caller")
        config = DEFAULT_CONFIG if config is None else config
        if not isinstance(config, ConnectionConfig):
            raise ConfigError(f"config must be a ConnectionConfig, not {type(config).__name__}")
        self.config = config
        self.node_id = node_id
        self.capabilities: BrokerCapabilities | None = None
        self.handshake: HandshakeResult | None = None
        # KIP-1242: the broker this connection means to reach (None: a bootstrap connection)
        # and the cluster's memory of advertised ApiVersions maxima; the cluster layer sets both.
        self.identity: BrokerIdentity | None = None
        self.api_versions_memory: ApiVersionsMemory | None = None
        self.changes: list[CapabilityChange] = []
        self._protocol: ClientConnection | None = None

    @property
    def node(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def in_flight(self) -> int:
        """Requests holding one of the ``max_in_flight`` slots (0 when not ready)."""
        protocol = self._protocol
        return protocol.in_flight if protocol is not None and protocol.is_ready else 0

    def _new_protocol(self) -> ClientConnection:
        """The sans-I/O connection an open drives, made as the config says."""
        return ClientConnection(
            self.config,
            node=self.node,
            node_id=self.node_id,
            identity=self.identity,
            api_versions_memory=self.api_versions_memory,
        )

    def _negotiated(self, protocol: ClientConnection, ready: Ready) -> BrokerCapabilities:
        """``protocol`` is set up: log a SASL login, record what a reconnect found changed,
        and keep the new capabilities (which replace the old ones)."""
        if ready.authenticated is not None:
            from kafkacompat.connection.sasl import log_authenticated  # SASL only: a plain connection's RSS

            log_authenticated(self.node, self.config, ready.authenticated)
        if self.capabilities is not None:  # a reconnect: what did the broker change in between?
            from kafkacompat.negotiation.capability_changes import note_change  # reconnects only

            note_change(self.changes, self.node, self.capabilities, ready.capabilities, self._log)
        self._protocol, self.handshake, self.capabilities = protocol, ready.handshake, ready.capabilities
        return ready.capabilities
