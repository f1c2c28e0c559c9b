"""SASL for every driver: the login a ``ClientConnection`` runs, built from the config.

The exchange itself (SaslHandshake, then SaslAuthenticate or raw v0 tokens,
the versions picked from the handshake's answer, the round trips bounded,
every refusal typed and redacted) is ``negotiation.sasl_exchange``'s, run by
the ``ClientConnection`` in its place after the handshake; the driver only
moves its bytes.  What is left here is what the config says and the log line
that says it worked: the password never appears in either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from kafkacompat.connection.config import ConnectionConfig

if TYPE_CHECKING:  # the exchange loads when a connection logs in: every driver imports this module
    from kafkacompat.negotiation.sasl_exchange import Authenticated, SaslMechanism

__all__ = ["SaslLogin", "log_authenticated", "sasl_login"]

log = logging.getLogger("kafkacompat.connection.sasl")


class SaslLogin(NamedTuple):
    """How to authenticate: a fresh mechanism per connection, the user name, a redactor."""

    new_mechanism: Callable[[], SaslMechanism]
    username: str
    redact: Callable[[str], str] = str


def sasl_login(config: ConnectionConfig) -> SaslLogin | None:
    """How a connection made with ``config`` logs in; None without SASL."""
    sasl = config.sasl
    if sasl is None:
        return None
    from kafkacompat.connection.sasl_mechanisms import create_mechanism  # only SASL users pay for it

    return SaslLogin(lambda: create_mechanism(sasl), sasl.username, sasl.redact)


def log_authenticated(node: str, config: ConnectionConfig, done: Authenticated) -> None:
    if not log.isEnabledFor(logging.DEBUG) or config.sasl is None:
        return
    lifetime = done.session_lifetime_ms
    version = done.authenticate_version
    log.debug(
        "authenticated to %s as %r with %s (SaslHandshake v%d, %s)%s",
        node,
        config.sasl.username,
        done.mechanism,
        done.handshake_version,
        "raw tokens" if version is None else f"SaslAuthenticate v{version}",
        f"; the broker ends the session after {lifetime} ms" if lifetime else "",
    )
