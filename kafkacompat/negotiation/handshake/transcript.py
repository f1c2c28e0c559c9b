"""The handshake transcript: what was tried, what came back, and why the next step.

A transcript is plain data.  It is part of every handshake result and of every
error raised during a handshake, so that "why did this client pick v0?" always
has an answer that can be printed, logged or serialised.

Counting: a *round trip* is a request that got bytes back (a reply, even an
unreadable or foreign one); a *connection* is one that was established.  A
request lost to a closed connection or a timeout is an attempt but not a round
trip, and a connection that could not be opened is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["HandshakeAttempt", "HandshakeTranscript"]


@dataclass(frozen=True, slots=True)
class HandshakeAttempt:
    """One ApiVersions request sent (or one connection that died before a reply).

    ``outcome`` is a short stable token (``"ok"``, ``"unsupported-version"``,
    ``"closed"``, ``"unreadable"``, ...); ``detail`` says what was observed;
    ``next_step`` says what the handshake decided to do about it.  ``flags``
    are stable tokens for anomalies that did not stop the handshake (for
    example ``"answered-unadvertised-version"``).
    """

    version: int
    connection: int
    outcome: str
    detail: str = ""
    next_step: str = ""
    flags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "connection": self.connection,
            "outcome": self.outcome,
            "detail": self.detail,
            "next_step": self.next_step,
            "flags": list(self.flags),
        }


@dataclass(frozen=True, slots=True)
class HandshakeTranscript:
    """Every attempt of one handshake, with the round trips and connections used.

    ``api_versions_version`` is the version of the reply that was accepted
    (None until one is); ``fallback_release`` is set when the broker never
    answered and a release's table stands in for its answer: the configured
    one, or ``detected_release``, the pre-0.10 release its behaviour names.
    """

    attempts: tuple[HandshakeAttempt, ...] = ()
    round_trips: int = 0
    connections: int = 0
    api_versions_version: int | None = None
    fallback_release: str | None = None
    notes: tuple[str, ...] = field(default=())
    node: str | None = None
    detected_release: str | None = None
    identity: Any = None  # the BrokerIdentity the connection meant to reach (KIP-1242), if it knew one

    @property
    def identity_sent(self) -> Any:
        """The identity carried by the accepted request (v5+), or None: what the broker checked."""
        version = self.api_versions_version
        if self.identity is None or version is None or version < 5:
            return None
        return self.identity

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(flag for attempt in self.attempts for flag in attempt.flags)

    @property
    def versions_tried(self) -> tuple[int, ...]:
        return tuple(attempt.version for attempt in self.attempts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "attempts": [a.to_dict() for a in self.attempts],
            "round_trips": self.round_trips,
            "connections": self.connections,
            "api_versions_version": self.api_versions_version,
            "fallback_release": self.fallback_release,
            "detected_release": self.detected_release,
            "identity": None if self.identity is None else self.identity.to_dict(),
            "identity_sent": self.identity_sent is not None,
            "notes": list(self.notes),
        }

    def describe(self) -> str:
        """A few human lines, one per attempt."""
        lines = []
        if self.node is not None:
            lines.append(f"ApiVersions handshake with {self.node}:")
        for n, a in enumerate(self.attempts, 1):
            line = f"{n}. ApiVersions v{a.version} on connection {a.connection}: {a.outcome}"
            if a.detail:
                line += f" ({a.detail})"
            if a.next_step:
                line += f" -> {a.next_step}"
            if a.flags:
                line += f" [{', '.join(a.flags)}]"
            lines.append(line)
        lines.append(f"{self.round_trips} round trip(s), {self.connections} connection(s)")
        lines.extend(self.notes)
        return "\n".join(lines)
