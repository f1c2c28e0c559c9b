"""A connection's security settings: TLS, SASL, and the ``Secret`` a password is held in.

``ConnectionConfig`` takes them (``tls=``, ``sasl=``); they live apart from it so
that a plaintext connection without SASL never defines their classes.  A
``Secret`` never shows its value in a repr, a log or a traceback, so a config
can be printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkacompat.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path  # annotations only: a connection does not import pathlib for them

__all__ = ["MECHANISMS", "SaslConfig", "Secret", "TlsConfig"]


class Secret:
    """A string that never shows itself in reprs, logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise ConfigError("a secret must be a str")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """TLS for the connection; verification and hostname checks are on unless turned off."""

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key_password: Secret | None = None
    verify: bool = True
    check_hostname: bool = True
    server_hostname: str | None = None  # SNI and the name checked; defaults to the host


MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True, slots=True)
class SaslConfig:
    mechanism: str
    username: str
    password: Secret
    max_scram_iterations: int = 100_000  # refuse a server that asks for more (a CPU trap)

    def __post_init__(self) -> None:
        if self.mechanism.upper() not in MECHANISMS:
            raise ConfigError(f"SASL mechanism {self.mechanism!r} is not one of {', '.join(MECHANISMS)}")
        object.__setattr__(self, "mechanism", self.mechanism.upper())
        if isinstance(self.password, str):
            object.__setattr__(self, "password", Secret(self.password))

    def redact(self, text: str) -> str:
        """``text`` (a broker's message, say) with the password, should it be echoed, blotted out."""
        password = self.password.reveal()
        return text.replace(password, "***") if password else text
