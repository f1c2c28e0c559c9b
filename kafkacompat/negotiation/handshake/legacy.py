"""The handshake's part for brokers that do not answer ApiVersions (rules 9 and 10 of ``table``).

``ApiVersionsHandshake`` holds one ``LegacySteps`` from the moment it needs
one (a quiet period passed, or a close at v0): the state of the Metadata v0
probe that tells a 0.9 broker from a slow one (rule 9), of the read that
drains the probe's reply, and of the 0.8.x check (rule 10).  A broker that
answers ApiVersions, nearly every one, never loads this module, nor the
pre-0.10 requests (``legacy_probe``) and the generated classes they use.
What the probe's reply or a check step shows is judged here into a
``Conclusion``: plain data (a failure to apply, or the table's outcome to take
and the release whose table stands in), which the machine applies the one way
it applies everything.  ``legacy_probe`` holds the requests themselves; they
load only when a broker is silent or closes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kafkacompat.errors import BrokerTooOldError, DecodeError
from kafkacompat.negotiation.handshake.config import HandshakeConfig, release_ranges
from kafkacompat.negotiation.handshake.legacy_probe import (
    NOT_KAFKA,
    NOT_KAFKA_OVER_TLS,
    SKIPPING_RELEASE,
    LegacyCheck,
    judge_probe_reply,
    probe_frame,
    skipped_note,
)
from kafkacompat.negotiation.handshake.reply import Verdict, failure_verdict
from kafkacompat.negotiation.handshake.types import HandshakeResult, SendProbe
from kafkacompat.protocol.framing import RequestHeaders
from kafkacompat.protocol.versions import VersionRange

__all__ = ["Conclusion", "LegacySteps"]


class Conclusion(NamedTuple):
    """What a pre-0.10 step showed: ``failure`` to apply, else the table's ``outcome`` to take,
    with a ``note`` for the transcript and, when a release is named, its table standing in."""

    outcome: str = ""
    detail: str = ""
    flags: tuple[str, ...] = ()
    note: str | None = None
    failure: Verdict | None = None
    release: str | None = None  # its table stands in for an ApiVersions answer
    detected: str | None = None  # the release the broker's behaviour names
    ranges: Mapping[int, VersionRange] | None = None
    needs_new_connection: bool = False


class LegacySteps:
    """The probe's and the 0.8.x check's state, for one handshake."""

    def __init__(self, config: HandshakeConfig, *, plaintext: bool = True) -> None:
        self.config = config
        self.plaintext = plaintext  # a closing peer may be a TLS listener: the check asks it last
        # The Metadata v0 probe (rule 9): its correlation id while its reply is due, whether
        # it was written after the ApiVersions request now awaited, the connection it went on,
        # the flags the attempt it follows takes, and the accepted answer kept while it drains.
        self.probe_id: int | None = None
        self.probe_follows_request = False
        self.probed_connection = 0
        self.probe_flags: tuple[str, ...] = ()
        self.answer: HandshakeResult | None = None
        self.check: LegacyCheck | None = None  # rule 10, after a close at v0

    # -- rule 9: quiet, probe, drain -----------------------------------------------------

    def probing(self, connection: int) -> None:
        """The quiet period passed on ``connection``: the probe goes next, once per connection."""
        self.probed_connection = connection
        self.probe_flags = ("metadata-probe",)

    def take_flags(self) -> tuple[str, ...]:
        """The probe's flags, for the attempt its ApiVersions request concludes (once)."""
        flags, self.probe_flags = self.probe_flags, ()
        return flags

    def probe_request(self, correlation_id: int, headers: RequestHeaders) -> SendProbe:
        """The next probe (or check request) to write, at ``correlation_id``, behind ``headers``."""
        self.probe_id = correlation_id
        if self.check is not None:
            step = self.check.step
            what = f"the {step.asks} check request" if step.request is not None else f"the {step.asks}"
            return SendProbe(correlation_id, self.check.frame(correlation_id, headers), what)
        return SendProbe(correlation_id, probe_frame(correlation_id, headers))

    def judge_probe(self, body: bytes, version: int) -> Conclusion:
        """The probe's reply came first: ApiVersions v``version`` was skipped (a 0.9 broker)."""
        verdict = judge_probe_reply(body, version, self.probe_id or 0)
        if verdict.error_type is not None:
            return Conclusion(failure=verdict)
        configured = self.config.fallback_release is not None
        release = self.config.fallback_release if configured else SKIPPING_RELEASE
        ranges = self.config.fallback_ranges if configured else release_ranges(SKIPPING_RELEASE)
        assert release is not None and ranges is not None  # HandshakeConfig sets both
        self.probe_id = None
        # The connection is in step (the skipped request gets no reply) and serves on.
        return Conclusion(
            verdict.outcome, verdict.detail, verdict.flags, note=skipped_note(version, release, configured),
            release=release, detected=SKIPPING_RELEASE, ranges=ranges,
        )

    # -- rule 10: the 0.8.x check --------------------------------------------------------

    def start_check(self) -> None:
        self.check = LegacyCheck(self.plaintext)

    def check_answered(self, body: bytes) -> Conclusion:
        check = self.check
        assert check is not None
        step = check.step.name
        release, problem = check.answered(body)
        self.probe_id = None
        if problem is not None:
            message = f"the reply to the {step} check request cannot be read: {problem}"
            verdict = Verdict("unreadable", message, error_type=DecodeError, message=message,
                              error_fields={"what": problem.what, "offset": problem.offset})
            return Conclusion(failure=verdict)
        if release is None:
            return Conclusion("check-answered")
        return self._named("check-named", release, needs_new_connection=False)

    def check_closed(self) -> Conclusion:
        check = self.check
        assert check is not None
        release, go_on = check.closed()
        if release is not None:
            return self._named("check-named-on-close", release, needs_new_connection=True)
        if go_on:
            return Conclusion("check-closed")
        return self.not_kafka()

    def not_kafka(self) -> Conclusion:
        """Closed on every Kafka request (and, over plaintext, on the TLS question): no Kafka broker."""
        check = self.check
        assert check is not None
        detail = "; ".join(check.evidence)
        message = NOT_KAFKA if self.plaintext else NOT_KAFKA_OVER_TLS
        return Conclusion(failure=failure_verdict("not-kafka", detail, BrokerTooOldError, message))

    def _named(self, outcome: str, release: str, *, needs_new_connection: bool) -> Conclusion:
        assert self.check is not None
        return Conclusion(
            outcome,
            note=f"{'; '.join(self.check.evidence)}: Kafka {release}'s API table stands in",
            release=release,
            detected=release,
            ranges=release_ranges(release),
            needs_new_connection=needs_new_connection,
        )
