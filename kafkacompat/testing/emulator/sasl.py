"""The server side of SASL PLAIN and SCRAM-SHA-256/512, as Kafka runs them.

Theory.  On a SASL listener a Kafka connection must authenticate before any
request but ApiVersions and SaslHandshake (anything else closes it).  The
client names a mechanism with SaslHandshake; the broker answers with its
enabled mechanisms, and UNSUPPORTED_SASL_MECHANISM (then closes) when the one
named is not among them.  What follows depends on the handshake version:

- v0 (0.10): the tokens travel as raw size-prefixed frames, without Kafka
  headers; a failure closes the connection.
- v1 (1.0, KIP-152): each token is a SaslAuthenticate request; a failure is
  SASL_AUTHENTICATION_FAILED with a message, then the connection is closed.

PLAIN is one token (``authzid NUL user NUL password``) answered with an empty
one.  SCRAM (RFC 5802, KIP-84) is two round trips; the salted credentials are
made once per user and mechanism with Kafka's minimum of 4096 iterations, and
the exchange is run by the ``scramp`` package.  A listener without SASL
answers SaslHandshake and SaslAuthenticate with ILLEGAL_SASL_STATE.

``scramp`` is imported only when a SCRAM mechanism is enabled (it comes with
the ``emulator`` and ``cli`` extras), so an emulator without SCRAM, and every
command of the CLI, runs on the package's own dependencies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkacompat.errors import EmulatorConfigError

__all__ = ["MECHANISMS", "SaslConfig", "SaslFailure", "SaslSession"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SCRAM_ITERATIONS = 4096  # Kafka's minimum for SCRAM credentials


def _scramp() -> Any:
    """The ``scramp`` module, or a one-line error naming the extra that brings it."""
    try:
        import scramp  # type: ignore[import-untyped]
    except ImportError:
        raise EmulatorConfigError(
            "SCRAM needs the scramp package: install kafkacompat[emulator], or enable only PLAIN"
        ) from None
    return scramp


class SaslFailure(Exception):
    """Authentication failed; the message is what the broker tells the client."""


class SaslConfig:
    """Enabled mechanisms and the users (name -> password) every mechanism accepts."""

    def __init__(
        self,
        users: Mapping[str, str],
        mechanisms: Iterable[str] = MECHANISMS,
        *,
        scram_iterations: int = _SCRAM_ITERATIONS,
    ) -> None:
        self.mechanisms = tuple(mechanisms)
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown or not self.mechanisms:
            raise EmulatorConfigError(
                f"SASL mechanisms must be some of {', '.join(MECHANISMS)}; got {', '.join(unknown) or 'none'}"
            )
        if scram_iterations < _SCRAM_ITERATIONS:
            raise EmulatorConfigError(f"Kafka needs at least {_SCRAM_ITERATIONS} SCRAM iterations")
        self.users = dict(users)
        self._scram: dict[tuple[str, str], tuple[Any, ...]] = {}
        for mechanism in self.mechanisms:
            if mechanism.startswith("SCRAM-"):
                maker = _scramp().ScramMechanism(mechanism)
                for user, password in self.users.items():
                    self._scram[(mechanism, user)] = tuple(
                        maker.make_auth_info(password, iteration_count=scram_iterations)
                    )

    def scram_credentials(self, mechanism: str, user: str) -> tuple[Any, ...]:
        try:
            return self._scram[(mechanism, user)]
        except KeyError:
            raise _scramp().ScramException(f"unknown user {user!r}") from None

    def session(self, mechanism: str) -> SaslSession:
        return SaslSession(self, mechanism)


class SaslSession:
    """One authentication exchange: feed each client token to ``step``."""

    def __init__(self, config: SaslConfig, mechanism: str) -> None:
        if mechanism not in config.mechanisms:
            raise EmulatorConfigError(f"mechanism {mechanism} is not enabled")
        self.config = config
        self.mechanism = mechanism
        self.user: str | None = None
        self.complete = False
        self._server: Any = None
        self._first_done = False
        if mechanism.startswith("SCRAM-"):
            self._server = _scramp().ScramMechanism(mechanism).make_server(self._credentials)

    def _credentials(self, user: str) -> tuple[Any, ...]:
        credentials = self.config.scram_credentials(self.mechanism, user)
        self.user = user
        return credentials

    def step(self, token: bytes) -> bytes:
        """The server's next token; raises ``SaslFailure`` when authentication fails."""
        if self.complete:
            raise SaslFailure("the authentication exchange is already complete")
        if self.mechanism == "PLAIN":
            return self._plain(token)
        return self._scram_step(token)

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslFailure("invalid PLAIN token: expected authzid, user and password")
        authzid, user, password = (part.decode("utf-8", "replace") for part in parts)
        if authzid and authzid != user:
            raise SaslFailure("authorization id must be empty or the user name")
        if self.config.users.get(user) != password or not user:
            raise SaslFailure("invalid user name or password (PLAIN)")
        self.user = user
        self.complete = True
        return b""

    def _scram_step(self, token: bytes) -> bytes:
        message = token.decode("utf-8", "replace")
        try:
            if not self._first_done:
                self._first_done = True
                self._server.set_client_first(message)
                return str(self._server.get_server_first()).encode()
            self._server.set_client_final(message)
            final = str(self._server.get_server_final()).encode()
        except _scramp().ScramException as exc:
            if self.user is None:
                raise SaslFailure(f"authentication failed with {self.mechanism}: unknown user") from None
            raise SaslFailure(f"authentication failed with {self.mechanism}: {exc}") from None
        self.complete = True
        return final
