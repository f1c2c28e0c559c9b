"""What a client does when the broker never answers ApiVersions, as measured.

Theory.  KIP-35 (Kafka 0.10.0) added ApiVersions; a broker before it has no
such API, and the 0.9 line does not even close on it: it stays silent, and
the client waits until its own request timeout.  What the client does then is
its own choice: give up, or guess the broker's release (from which older
requests it answers) and go on with the versions that release had.  A
recording against brokers that answer cannot tell which, so it is measured:
``kafkacompat.profiles.measure`` runs each client's traffic against the real
Apache Kafka 0.9.0.1 (silent on ApiVersions) and keeps the outcome in the
profile (``without_api_versions``).  The last request the
client sent there says where it stopped: an unanswered ApiVersions means it
gave up waiting; anything else means it went on without an answer.
``verdicts`` reads this for a broker of the same release line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkacompat.protocol.messages.api_keys import ApiKey
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import API_NAMES

__all__ = ["API_VERSIONS", "SilentBrokerRun", "silent_broker_run"]

API_VERSIONS = int(ApiKey.API_VERSIONS)


@dataclass(frozen=True, slots=True)
class SilentBrokerRun:
    """A client's traffic, measured against a broker that never answers ApiVersions."""

    measured_against: str  # the release measured against, e.g. "0.9.0.1"
    ok: bool  # the traffic got through
    stopped_in: str | None  # the step it failed in
    last_request: tuple[int, int, str] | None  # (api key, version, outcome) of the last one sent
    answered: tuple[tuple[int, int], ...] = ()  # (api key, version)s the broker answered

    @property
    def falls_back(self) -> bool:
        """It did not end waiting on ApiVersions: it went on without an answer."""
        return self.last_request is not None and self.last_request[0] != API_VERSIONS

    def applies_to(self, apis: Mapping[int, VersionRange], release: str | None) -> bool:
        """A broker of the measured release line (0.9.x for 0.9.0) without ApiVersions either."""
        offered = apis.get(API_VERSIONS)
        if offered is not None and not offered.empty:
            return False
        return release is not None and _line(release) == _line(self.measured_against)

    def evidence(self) -> str:
        """The measurement in one clause, for a finding's message."""
        said = ", ".join(f"{API_NAMES.get(k, k)} v{v}" for k, v in self.answered) or "nothing"
        if self.last_request is None:
            last = "no request"
        else:
            key, version, outcome = self.last_request
            last = f"{API_NAMES.get(key, key)} v{version} ({outcome})"
        stop = "got through" if self.ok else f"stopped in step {self.stopped_in}"
        return (
            f"measured against {self.measured_against}: answered {said}; last request {last}; "
            f"the traffic {stop}"
        )


def silent_broker_run(measured: object) -> SilentBrokerRun | None:
    """A profile's ``without_api_versions`` block, or None when it has none.

    Raises ``ValueError`` naming the block when it is malformed (profiles are
    input: the caller turns that into its own typed error).
    """
    if measured is None:
        return None
    try:
        if not isinstance(measured, Mapping):
            raise TypeError("not an object")
        last: Any = measured.get("last_request")
        stopped = measured.get("stopped_in")
        answered = measured.get("answered", ())
        if not isinstance(answered, list | tuple) or not isinstance(measured["ok"], bool):
            raise TypeError("answered must be a list and ok a boolean")
        return SilentBrokerRun(
            str(measured["measured_against"]),
            measured["ok"],
            None if stopped is None else str(stopped),
            None if not last else (int(last["api_key"]), int(last["version"]), str(last["outcome"])),
            tuple((int(k), int(v)) for k, v in answered),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"without_api_versions is malformed ({type(exc).__name__}: {exc})") from None


def _line(release: str) -> tuple[str, ...]:
    return tuple(release.split(".")[:2])
