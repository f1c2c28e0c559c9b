"""The handshake's steps for brokers that do not answer ApiVersions (rules 4, 9 and 10).

``ApiVersionsHandshake`` inherits these: the quiet period and the Metadata v0
probe that tells a 0.9 broker from a slow one, the drain of the probe's reply,
the step-down after a close, and the 0.8.x check after a close at v0.  They
move along the same table through the machine's ``_take`` and ``_apply``; see
``handshake_table`` for the rules and ``legacy_probe`` for the requests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from kafkacompat.errors import BrokerTooOldError, DecodeError, KafkaCompatError, ProtocolError
from kafkacompat.negotiation.handshake_config import (
    FIRST_SOFTWARE_FIELDS_VERSION,
    HandshakeConfig,
    release_ranges,
)
from kafkacompat.negotiation.handshake_reply import Verdict
from kafkacompat.negotiation.handshake_table import Event
from kafkacompat.negotiation.handshake_types import Action, Done, HandshakeResult, SendProbe
from kafkacompat.negotiation.transcript import HandshakeTranscript
from kafkacompat.protocol.versions import VersionRange

# The pre-0.10 requests (and the generated Metadata, Heartbeat and OffsetFetch classes they
# use) are imported where a silent or closing broker needs them: a broker that answers
# ApiVersions, nearly every one, never loads them.
if TYPE_CHECKING:
    from kafkacompat.negotiation.legacy_probe import LegacyCheck

__all__ = ["LegacySteps", "failure_verdict", "mismatch_verdict"]


class LegacySteps(ABC):
    """The steps of ``ApiVersionsHandshake`` for silent and closing brokers (a mixin)."""

    config: HandshakeConfig
    _action: Action
    _connections: int
    _version: int
    _notes: list[str]
    _probe_id: int | None
    _probed_connection: int
    _probe_flags: tuple[str, ...]
    _answer: HandshakeResult | None
    _check: LegacyCheck | None
    _fallback_release: str | None
    _detected_release: str | None

    # Provided by ApiVersionsHandshake.
    @abstractmethod
    def _expect(self, event: Event) -> None:
        ...

    @abstractmethod
    def _take(
        self,
        event: Event,
        outcome: str,
        detail: str = "",
        *,
        next_version: int | None = None,
        flags: tuple[str, ...] = (),
    ) -> None:
        ...

    @abstractmethod
    def _apply(self, event: Event, verdict: Verdict) -> None:
        ...

    @abstractmethod
    def _stand_in(self, release: str, ranges: Mapping[int, VersionRange]) -> HandshakeResult:
        ...

    @abstractmethod
    def _take_correlation_id(self) -> int:
        ...

    @property
    @abstractmethod
    def transcript(self) -> HandshakeTranscript:
        ...

    # -- rule 9: quiet, probe, drain --------------------------------------------------------

    def quiet(self) -> None:
        """No reply came within ``ReceiveReply.quiet_period``: write the Metadata v0 probe."""
        self._expect(Event.QUIET)  # only where the action handed a quiet period
        self._probed_connection = self._connections
        self._probe_flags = ("metadata-probe",)
        self._take(Event.QUIET, "quiet")

    def _judge_probe(self, body: bytes) -> None:
        """The probe's reply came first: ApiVersions was skipped (rule 9)."""
        from kafkacompat.negotiation.legacy_probe import SKIPPING_RELEASE, judge_probe_reply, skipped_note

        verdict = judge_probe_reply(body, self._version, self._probe_id or 0)
        if verdict.error_type is not None:
            self._apply(Event.RECEIVED, verdict)
            return
        configured = self.config.fallback_release is not None
        release = self.config.fallback_release if configured else SKIPPING_RELEASE
        assert release is not None
        ranges = self.config.fallback_ranges if configured else release_ranges(SKIPPING_RELEASE)
        assert ranges is not None  # HandshakeConfig sets it with fallback_release
        self._probe_id = None
        self._fallback_release, self._detected_release = release, SKIPPING_RELEASE
        self._notes.append(skipped_note(self._version, release, configured))
        self._take(Event.RECEIVED, verdict.outcome, verdict.detail, flags=verdict.flags)
        # The connection is in step (the skipped request gets no reply) and serves on.
        self._action = Done(self._stand_in(release, ranges))

    def _check_answered(self, body: bytes) -> None:
        assert self._check is not None
        step = self._check.step.name
        release, problem = self._check.answered(body)
        self._probe_id = None
        if problem is not None:
            message = f"the reply to the {step} check request cannot be read: {problem}"
            verdict = Verdict("unreadable", message, error_type=DecodeError, message=message,
                              error_fields={"what": problem.what, "offset": problem.offset})
            self._apply(Event.RECEIVED, verdict)
        elif release is None:
            self._take(Event.RECEIVED, "check-answered")
        else:
            self._name_legacy(Event.RECEIVED, "check-named", release, needs_new_connection=False)

    def _check_closed(self) -> None:
        assert self._check is not None
        release, go_on = self._check.closed()
        if release is not None:
            outcome = "check-named-on-close"
            self._name_legacy(Event.CONNECTION_CLOSED, outcome, release, needs_new_connection=True)
        elif go_on:
            self._take(Event.CONNECTION_CLOSED, "check-closed")
        else:
            from kafkacompat.negotiation.legacy_probe import NOT_KAFKA

            detail = "; ".join(self._check.evidence)
            verdict = failure_verdict("not-kafka", detail, BrokerTooOldError, NOT_KAFKA)
            self._apply(Event.CONNECTION_CLOSED, verdict)

    def _name_legacy(self, event: Event, outcome: str, release: str, *, needs_new_connection: bool) -> None:
        assert self._check is not None
        self._fallback_release = self._detected_release = release
        self._notes.append(f"{'; '.join(self._check.evidence)}: Kafka {release}'s API table stands in")
        self._take(event, outcome)
        result = self._stand_in(release, release_ranges(release))
        self._action = Done(result, needs_new_connection=needs_new_connection)

    def _finish_drain(self, event: Event, outcome: str) -> None:
        answer = self._answer
        assert answer is not None  # DRAIN is only entered with an accepted answer
        self._probe_id = None
        self._take(event, outcome)
        self._action = Done(replace(answer, transcript=self.transcript), needs_new_connection=outcome != (
            "probe-reply-dropped"
        ))

    def _step_down(self) -> int:
        """The version to reconnect at after a close at ``self._version`` (rule 4)."""
        # v4 (a fix) and v5 (the identity) add nothing a peer that closes on them needs:
        # a close there goes straight to v3, as a close at v4 did before v5 existed.
        lower = min(self._version - 1, FIRST_SOFTWARE_FIELDS_VERSION)
        left = self.config.max_connections - self._connections
        # One flexible version lower while a connection is left after it for v0.
        return lower if lower >= FIRST_SOFTWARE_FIELDS_VERSION and left >= 2 else 0

    def _send_probe(self) -> SendProbe:
        self._probe_id = cid = self._take_correlation_id()
        if self._check is not None:
            return SendProbe(cid, self._check.frame(cid, self.config.client_id))
        from kafkacompat.negotiation.legacy_probe import probe_frame

        return SendProbe(cid, probe_frame(cid, self.config.client_id))


def mismatch_verdict(got: int | None, expected: int | None, request: str) -> Verdict:
    message = f"the reply carries correlation id {got} but {request} had {expected}: out of step"
    detail = f"correlation id {got}, expected {expected}"
    return failure_verdict("correlation-mismatch", detail, ProtocolError, message)


def failure_verdict(
    outcome: str, detail: str, error_type: type[KafkaCompatError], message: str, **fields: object
) -> Verdict:
    return Verdict(outcome, detail, error_type=error_type, message=message, error_fields=fields)
