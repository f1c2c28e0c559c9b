"""The ApiVersions handshake (KIP-35, KIP-511) as a sans-I/O state machine.

The rules, and the table of states and transitions that carries them out, are
in ``table``; this module decides which outcome each event has, with the
judgement of replies in ``reply`` and the pre-0.10 steps in ``legacy`` (an
object the machine holds, whose conclusions it applies).

Driving it
==========
The machine does no I/O and reads no clock.  ``next_action()`` says what to do
(it has no side effect); the driver does it and reports what happened by
calling one event method:

=================  ==============================================================
action             events the driver may report
=================  ==============================================================
``Connect``        ``connected()``, ``connect_failed(reason)``, ``timed_out()``
``SendRequest``    ``request_sent()``, ``connection_closed()``, ``timed_out()``
                   (write ``action.frame``: size prefix, header and body)
``SendProbe``      the same, for the Metadata v0 probe's ``action.frame``
``ReceiveReply``   ``received_frame(frame)`` (a frame without its size prefix, as
                   ``FrameSplitter`` yields it) or ``received(body)`` (the bytes
                   after the correlation id), ``connection_closed()``,
                   ``timed_out()`` (``silent=True`` when not one byte came on
                   this connection), ``foreign_bytes(data)`` (the bytes read
                   are another protocol's: ``peer_kind.name_peer`` names them),
                   and ``quiet()`` when ``action.quiet_period`` is set and that
                   many seconds passed without a frame
``Done``           none: ``action.result``; reconnect first if
                   ``action.needs_new_connection``
``Fail``           none: raise ``action.error``; close the connection if
                   ``action.close_connection``
=================  ==============================================================

Any other event raises ``HandshakeStateError`` and changes nothing.  For
example, with a blocking socket::

    hs = ApiVersionsHandshake(HandshakeConfig(), node="broker:9092")
    while True:
        match hs.next_action():
            case Connect():
                sock = socket.create_connection(address)
                hs.connected()
            case SendRequest(frame=frame) | SendProbe(frame=frame):
                sock.sendall(frame)
                hs.request_sent()
            case ReceiveReply(quiet_period=quiet):
                frame = read_one_frame(sock, within=quiet)  # None: nothing came
                hs.quiet() if frame is None else hs.received_frame(frame)
            case Done(result=result):
                return result
            case Fail(error=error):
                raise error

(each I/O step mapping its own failures to ``connection_closed()``,
``timed_out()`` and so on).  A round trip in the transcript is a request that
got bytes back; a connection is one ``connected()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from kafkacompat.errors import (
    DecodeError,
    HandshakeStateError,
    KafkaTimeoutError,
    SilentPeerError,
    TransportError,
)
from kafkacompat.negotiation.handshake.config import (
    CODEC_MAX_VERSION,
    FIRST_SOFTWARE_FIELDS_VERSION,
    HandshakeConfig,
    check_correlation_id,
)
from kafkacompat.negotiation.handshake.reply import (
    API_VERSIONS_KEY,
    Verdict,
    accepted_result,
    failure_verdict,
    foreign_verdict,
    judge_reply,
    mismatch_verdict,
    stand_in_result,
)
from kafkacompat.negotiation.handshake.table import (
    BY_KEY,
    EVENTS_BY_STATE,
    PROGRESS_EVENTS,
    PROGRESS_OUTCOMES,
    Event,
    State,
    Transition,
)
from kafkacompat.negotiation.handshake.transcript import HandshakeAttempt, HandshakeTranscript
from kafkacompat.negotiation.handshake.types import (
    Action,
    Connect,
    Done,
    Fail,
    HandshakeResult,
    ReceiveReply,
    SendRequest,
    quick,
)
from kafkacompat.protocol.framing import DEFAULT_HEADERS, RequestHeaders, foreign_kind
from kafkacompat.protocol.reply_limits import ReplyLimits
from kafkacompat.protocol.versions import VersionRange

if TYPE_CHECKING:
    # An identity and the memory are the cluster layer's (KIP-1242): a plain connection loads neither.
    from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity

    # Loaded when a broker is quiet or closes at v0: see legacy's doc.
    from kafkacompat.negotiation.handshake.legacy import Conclusion, LegacySteps

__all__ = ["ApiVersionsHandshake"]

_INT32_MAX: Final = 2**31 - 1
# The states and events as plain names: on CPython 3.11 reading an enum member through its
# class costs ~0.1 us (gh-93910), and the handshake reads several on every event.
_CONNECT, _SEND, _RECEIVE, _PROBE, _DRAIN = State.CONNECT, State.SEND, State.RECEIVE, State.PROBE, State.DRAIN
_ON_CONNECTED, _ON_CONNECT_FAILED, _ON_REQUEST_SENT, _ON_RECEIVED = (
    Event.CONNECTED, Event.CONNECT_FAILED, Event.REQUEST_SENT, Event.RECEIVED,
)
_ON_CONNECTION_CLOSED, _ON_TIMED_OUT, _ON_FOREIGN_BYTES, _ON_QUIET = (
    Event.CONNECTION_CLOSED, Event.TIMED_OUT, Event.FOREIGN_BYTES, Event.QUIET,
)
# The public frozen objects of every connect, built by their quick twins (``types.quick``).
_Attempt: Final = quick(HandshakeAttempt)
_Transcript: Final = quick(HandshakeTranscript)
# Checked on every event: computed once, not per call.  The table's rows by key, as a
# plain dict (a read-only view adds a call per lookup).
_BY_KEY: Final = dict(BY_KEY)
_EVENTS_WITHOUT_QUIET: Final = {state: events - {_ON_QUIET} for state, events in EVENTS_BY_STATE.items()}


class ApiVersionsHandshake:
    """One ApiVersions negotiation with one broker; see the module docstring."""

    def __init__(
        self,
        config: HandshakeConfig | None = None,
        *,
        node: str | None = None,
        first_correlation_id: int = 0,
        identity: BrokerIdentity | None = None,
        memory: ApiVersionsMemory | None = None,
        headers: RequestHeaders = DEFAULT_HEADERS,
        plaintext: bool = True,
    ) -> None:
        self.config = HandshakeConfig() if config is None else config
        # rule 10: a peer closing on every Kafka request over plaintext is asked with a TLS
        # ClientHello last (over TLS there is nothing to ask)
        self.plaintext = plaintext
        self.headers = headers  # the connection's request header: its client id (ConnectionConfig's)
        self.node = node
        # rule 11: sent at v5 only, both halves; rule 12: the address's advertised max
        self.identity = identity
        self._memory = memory if node is not None else None
        if first_correlation_id != 0 or type(first_correlation_id) is not int:  # 0: nothing to check
            check_correlation_id(first_correlation_id)
        self._next_correlation_id = first_correlation_id
        self._correlation_id = first_correlation_id
        self._state = _CONNECT
        self._version = self.config.max_version
        self._remembered: int | None = None
        if self._memory is not None:
            assert node is not None
            remembered = self._memory.recall(node)
            if remembered is not None and remembered < self._version:
                self._version = self._remembered = max(remembered, 0)
        self._connections = 0
        self._round_trips = 0
        self._replies_understood = 0
        self._attempts: list[HandshakeAttempt] = []
        self._history: list[Transition] = []
        self._notes: list[str] = list(self.config.software_problems)
        if self._remembered is not None:
            self._notes.append(
                f"started at ApiVersions v{self._remembered}: the broker at this address advertised "
                f"no higher version before"
            )
        self._accepted_version: int | None = None
        self._fallback_release: str | None = None
        self._detected_release: str | None = None
        # Rules 9 and 10 (the probe, the 0.8.x check): made when first needed (``_legacy_steps``).
        self._legacy: LegacySteps | None = None
        self._action: Action = Connect(self._version, 1)

    # -- queries ------------------------------------------------------------------------

    def next_action(self) -> Action:
        """What the driver should do now; asking twice gives the same answer."""
        return self._action

    @property
    def state(self) -> State:
        return self._state

    @property
    def version(self) -> int:
        """The ApiVersions version of the current (or last) attempt."""
        return self._version

    @property
    def expected_events(self) -> frozenset[Event]:
        action = self._action
        if isinstance(action, ReceiveReply) and action.quiet_period is not None:
            return EVENTS_BY_STATE[self._state]
        return _EVENTS_WITHOUT_QUIET[self._state]  # quiet only where the driver was handed a period

    @property
    def history(self) -> tuple[Transition, ...]:
        """The transitions taken so far, in order."""
        return tuple(self._history)

    @property
    def next_correlation_id(self) -> int:
        """The correlation id the connection's next request should use."""
        return self._next_correlation_id

    def reply_ceiling(self, limits: ReplyLimits, max_frame_size: int) -> tuple[int, str]:
        """The size ceiling for the next frame the driver reads, and what that frame answers.

        ApiVersions' ceiling, except while a request of the pre-0.10 checks
        (the Metadata v0 probe, or a 0.8 check) is on the wire: its answer may
        list every topic of the cluster, so it gets ``limits.legacy_probe``.
        """
        handshake = min(limits.handshake, max_frame_size)
        if self._legacy is not None and self._legacy.probe_id is not None:
            return max(handshake, min(limits.legacy_probe, max_frame_size)), "ApiVersions or Metadata v0"
        return handshake, "ApiVersions"

    @property
    def transcript(self) -> HandshakeTranscript:
        return _Transcript(
            attempts=tuple(self._attempts),
            round_trips=self._round_trips,
            connections=self._connections,
            api_versions_version=self._accepted_version,
            fallback_release=self._fallback_release,
            notes=tuple(self._notes),
            node=self.node,
            detected_release=self._detected_release,
            identity=self.identity,
        )

    # -- events -------------------------------------------------------------------------

    def connected(self) -> None:
        self._expect(_ON_CONNECTED)
        self._connections += 1
        checking = self._legacy is not None and self._legacy.check is not None
        self._take(_ON_CONNECTED, "connected-to-check" if checking else "connected")

    def connect_failed(self, reason: str = "") -> None:
        self._expect(_ON_CONNECT_FAILED)
        because = f": {reason}" if reason else ""
        message = f"could not connect to the broker for the ApiVersions handshake{because}"
        self._apply(_ON_CONNECT_FAILED, failure_verdict("connect-failed", reason, TransportError, message))

    def request_sent(self) -> None:
        self._expect(_ON_REQUEST_SENT)
        if self._legacy is not None:  # a probe still due when ApiVersions is written precedes it
            self._legacy.probe_follows_request = self._state is _PROBE
        self._take(_ON_REQUEST_SENT, "probe-sent" if self._state is _PROBE else "sent")

    def quiet(self) -> None:
        """No reply came within ``ReceiveReply.quiet_period``: write the Metadata v0 probe."""
        self._expect(_ON_QUIET)  # only where the action handed a quiet period
        self._legacy_steps().probing(self._connections)
        self._take(_ON_QUIET, "quiet")

    def timed_out(self, *, silent: bool = False, waited: float | None = None) -> None:
        """The deadline of the current step passed.

        ``silent``: not one byte came on this connection since it opened (the driver
        knows; ``waited``, when known, is how long since its first request was
        written): a peer awaited for a reply is named silent (rule 5).
        """
        self._expect(_ON_TIMED_OUT)
        if self._state is _DRAIN:
            self._notes.append("the Metadata v0 probe's reply did not come in time: its connection is closed")
            self._finish_drain(_ON_TIMED_OUT, "probe-unanswered")
            return
        legacy = self._legacy
        check = legacy.check if legacy is not None else None
        if check is not None and check.asking_tls and self._state is _RECEIVE:
            assert legacy is not None
            check.evidence.append("a TLS ClientHello got no answer: no TLS listener either")
            self._conclude(_ON_TIMED_OUT, legacy.not_kafka())
            return
        if silent and self._state is _RECEIVE:
            self._apply(_ON_TIMED_OUT, self._silence(waited))
            return
        doing = (
            "connecting" if self._state is _CONNECT
            else f"on the {check.step.name} check request" if check is not None
            else "writing the Metadata v0 probe" if self._state is _PROBE
            else f"on ApiVersions v{self._version}"
        )
        message = (
            f"the broker did not answer in time ({doing}); silence is not a sign of an old "
            "broker, so no lower version was tried"
        )
        detail = f"the deadline passed {doing}"
        self._apply(_ON_TIMED_OUT, failure_verdict("timeout", detail, KafkaTimeoutError, message))

    def _silence(self, waited: float | None) -> Verdict:
        """Rule 5: nothing at all came back on this connection to what it carried."""
        from kafkacompat.negotiation.peer_kind import silence_sentence  # a silent peer only

        legacy = self._legacy
        check = legacy.check if legacy is not None else None
        if check is not None:
            asked, every_release = check.step.asks, check.step.name == "metadata"
        else:
            probed = legacy is not None and legacy.probed_connection == self._connections
            asked = f"ApiVersions v{self._version}" + (", then Metadata v0" if probed else "")
            every_release = probed  # 0.9 answers the probe, not ApiVersions
        during = f" in {format(round(waited, 2), 'g')} s" if waited is not None else ""
        detail = f"not one byte on connection {self._connections}{during} ({asked})"
        message = silence_sentence(waited, asked, every_release)
        return failure_verdict("silent", detail, SilentPeerError, message, waited=waited)

    def connection_closed(self) -> None:
        self._expect(_ON_CONNECTION_CLOSED)
        if self._state is _DRAIN:
            self._notes.append("the connection closed before the Metadata v0 probe's reply: reconnect")
            self._finish_drain(_ON_CONNECTION_CLOSED, "closed-after-answer")
            return
        legacy = self._legacy
        if legacy is not None:
            legacy.probe_id = None  # its reply died with the connection
        if self._remembered is not None and self._version == self._remembered and self._memory is not None:
            assert self.node is not None
            self._memory.forget(self.node)  # rule 12: it closed on what it advertised: forget it
            self._remembered = None
        if legacy is not None and legacy.check is not None:
            self._conclude(_ON_CONNECTION_CLOSED, legacy.check_closed())
            return
        request = f"ApiVersions v{self._version}"
        writing = {_SEND: f"while {request} was written", _PROBE: "while the probe was written"}
        when = writing.get(self._state, "before a reply")
        detail = f"the connection closed {when}"
        closed = detail if self._state is _SEND else f"{detail} to {request}"
        if self._version > 0 and self._connections >= self.config.max_connections:
            limit = f"{closed}, and max_connections ({self.config.max_connections}) allows no reconnect at v0"
            verdict = failure_verdict("closed-no-connection-left", detail, TransportError, limit)
        elif self._version > 0:
            lower = _step_down(self._version, self.config.max_connections, self._connections)
            verdict = Verdict("closed-step-down" if lower else "closed", detail, next_version=lower)
        elif self._replies_understood:
            verdict = failure_verdict(
                "closed-after-reply",
                detail,
                TransportError,
                f"{closed}, after the broker had answered ApiVersions: the connection failed "
                "(the broker is not too old)",
            )
        elif self.config.fallback_release is not None:
            self._use_fallback(detail)
            return
        else:
            self._legacy_steps().start_check()
            verdict = Verdict("closed-at-v0", detail)
        self._apply(_ON_CONNECTION_CLOSED, verdict)

    def foreign_bytes(self, data: bytes | bytearray | memoryview) -> None:
        """The transport read bytes that are not a Kafka frame (a bad size prefix, say)."""
        self._expect(_ON_FOREIGN_BYTES)
        self._round_trips += 1
        self._apply(_ON_FOREIGN_BYTES, foreign_verdict(bytes(data)))

    def received(self, body: bytes | bytearray | memoryview) -> None:
        """The reply's body: the frame after its size prefix and correlation id.

        Without a correlation id it is taken as the reply awaited: ApiVersions,
        or the probe's while it drains.
        """
        self._expect(_ON_RECEIVED)
        self._round_trips += 1
        if self._state is _DRAIN:
            self._finish_drain(_ON_RECEIVED, "probe-reply-dropped")
        elif self._legacy is not None and self._legacy.check is not None:
            self._conclude(_ON_RECEIVED, self._legacy.check_answered(bytes(body)))
        else:
            self._judge(bytes(body))

    def received_frame(self, frame: bytes | bytearray | memoryview) -> None:
        """The reply frame without its size prefix; its correlation id is checked."""
        self._expect(_ON_RECEIVED)
        self._round_trips += 1
        data = bytes(frame)
        correlation_id = int.from_bytes(data[:4], "big", signed=True) if len(data) >= 4 else None
        legacy = self._legacy
        if legacy is None:  # nothing of rules 9 and 10 under way: an answer to ApiVersions, or not
            self._judge_frame(data, correlation_id)
            return
        probe_reply = correlation_id is not None and correlation_id == legacy.probe_id
        if legacy.check is not None and probe_reply:
            self._conclude(_ON_RECEIVED, legacy.check_answered(data[4:]))
        elif legacy.check is not None:
            self._apply(_ON_RECEIVED, mismatch_verdict(correlation_id, legacy.probe_id, "the check request"))
        elif self._state is _DRAIN and probe_reply:
            self._finish_drain(_ON_RECEIVED, "probe-reply-dropped")
        elif self._state is _DRAIN:
            verdict = mismatch_verdict(correlation_id, legacy.probe_id, "the Metadata v0 probe")
            self._apply(_ON_RECEIVED, verdict)
        elif correlation_id == self._correlation_id:
            self._judge(data[4:])
        elif probe_reply and legacy.probe_follows_request:
            self._conclude(_ON_RECEIVED, legacy.judge_probe(data[4:], self._version))
        elif probe_reply:  # the probe preceded a retry on this connection: its reply is old news
            legacy.probe_id = None
            self._take(_ON_RECEIVED, "probe-reply-dropped")
        else:
            self._judge_frame(data, correlation_id)

    def _judge_frame(self, data: bytes, correlation_id: int | None) -> None:
        """A frame that is no pre-0.10 reply: the ApiVersions answer, or what is wrong with it."""
        if correlation_id == self._correlation_id:
            self._judge(data[4:])
        elif foreign_kind(data) is not None:
            self._apply(_ON_RECEIVED, foreign_verdict(data))
        elif correlation_id is None:
            self._apply(
                _ON_RECEIVED,
                failure_verdict(
                    "unreadable",
                    f"{len(data)} bytes",
                    DecodeError,
                    "reply shorter than its correlation id",
                    what="ResponseHeader",
                    offset=0,
                ),
            )
        else:
            verdict = mismatch_verdict(correlation_id, self._correlation_id, "the ApiVersions request")
            self._apply(_ON_RECEIVED, verdict)

    # -- applying judgements ------------------------------------------------------------

    def _judge(self, body: bytes) -> None:
        verdict = judge_reply(body, self._version, self.config, self.identity, self.headers)
        self._replies_understood += verdict.understood
        legacy = self._legacy
        if verdict.response is not None and legacy is not None and legacy.probe_id is not None:
            verdict = verdict._replace(outcome="ok-probe-pending")  # drain the probe's reply first
        self._apply(_ON_RECEIVED, verdict)

    def _apply(self, event: Event, verdict: Verdict) -> None:
        # The connection stays open unless it never opened or the broker closed it.
        still_open = self._state is not _CONNECT and event is not _ON_CONNECTION_CLOSED
        if verdict.response is not None:
            self._accepted_version = verdict.layout
        self._take(
            event,
            verdict.outcome,
            verdict.detail,
            next_version=verdict.next_version,
            flags=verdict.flags,
        )
        if verdict.error_type is not None:
            error = verdict.error_type(
                verdict.message, node=self.node, transcript=self.transcript, **verdict.error_fields
            )
            self._action = Fail(error, close_connection=still_open)
        elif verdict.response is not None and self._state is _DRAIN:
            self._legacy_steps().answer = self._result(verdict)
            self._remember(verdict)
        elif verdict.response is not None:
            self._action = Done(self._result(verdict))
            self._remember(verdict)

    def _remember(self, verdict: Verdict) -> None:
        """Rule 12: keep the address's advertised ApiVersions max for its next connection."""
        own = verdict.api_ranges.get(API_VERSIONS_KEY) if verdict.api_ranges is not None else None
        if self._memory is not None and own is not None and self.node is not None:
            self._memory.remember(self.node, min(own.highest, CODEC_MAX_VERSION))

    def _result(self, verdict: Verdict) -> HandshakeResult:
        assert verdict.response is not None and verdict.reply is not None  # an accepted verdict
        version, ranges = self._accepted_version, verdict.api_ranges
        return accepted_result(
            verdict.response,
            version,
            self.transcript,
            self.node,
            ranges,
            verdict.reply,
            supported_features=verdict.supported_features,
            finalized_features=verdict.finalized_features,
        )

    def _use_fallback(self, detail: str) -> None:
        release, ranges = self.config.fallback_release, self.config.fallback_ranges
        assert release is not None and ranges is not None  # HandshakeConfig sets both
        self._fallback_release = release
        self._notes.append(
            f"no ApiVersions answer even at v0: the broker predates Kafka 0.10; the API table "
            f"of Kafka {release} ({self.config.fallback_kind}) stands in, as configured"
        )
        flags = ("fallback-release",)
        self._take(_ON_CONNECTION_CLOSED, "closed-at-v0-fallback", detail, flags=flags)
        self._action = Done(self._stand_in(release, ranges), needs_new_connection=True)

    def _stand_in(self, release: str, ranges: Mapping[int, VersionRange]) -> HandshakeResult:
        return stand_in_result(release, ranges, self.transcript, self.node, self._detected_release)

    def _legacy_steps(self) -> LegacySteps:
        """The pre-0.10 part (rules 9 and 10), made the first time a broker is quiet or closes at v0."""
        if self._legacy is None:
            from kafkacompat.negotiation.handshake.legacy import LegacySteps  # see legacy's doc

            self._legacy = LegacySteps(self.config, plaintext=self.plaintext)
        return self._legacy

    def _conclude(self, event: Event, conclusion: Conclusion) -> None:
        """Apply what a pre-0.10 step showed (see ``legacy.Conclusion``)."""
        if conclusion.failure is not None:
            self._apply(event, conclusion.failure)
            return
        if conclusion.note is not None:
            self._notes.append(conclusion.note)
        release = conclusion.release
        if release is not None:
            self._fallback_release, self._detected_release = release, conclusion.detected
        self._take(event, conclusion.outcome, conclusion.detail, flags=conclusion.flags)
        if release is not None:
            assert conclusion.ranges is not None
            stand_in = self._stand_in(release, conclusion.ranges)
            self._action = Done(stand_in, needs_new_connection=conclusion.needs_new_connection)

    def _finish_drain(self, event: Event, outcome: str) -> None:
        """The probe's reply was read (or will never be): the ApiVersions answer stands."""
        legacy = self._legacy_steps()
        answer = legacy.answer
        assert answer is not None  # DRAIN is only entered with an accepted answer
        legacy.probe_id = None
        self._take(event, outcome)
        again = outcome != "probe-reply-dropped"  # the connection is gone, or out of step
        self._action = Done(replace(answer, transcript=self.transcript), needs_new_connection=again)

    # -- moving along the table ---------------------------------------------------------

    def _expect(self, event: Event) -> None:
        if event in _EVENTS_WITHOUT_QUIET[self._state]:
            return  # the common case, decided without building the set (quiet is rarely fed)
        if event not in self.expected_events:
            allowed = ", ".join(sorted(self.expected_events)) or "none (finished)"
            raise HandshakeStateError(
                f"event {event} is not valid in handshake state {self._state} (valid: {allowed})",
                state=self._state,
                event=event,
                node=self.node,
                transcript=self.transcript,
            )

    def _take(
        self,
        event: Event,
        outcome: str,
        detail: str = "",
        *,
        next_version: int | None = None,
        flags: tuple[str, ...] = (),
    ) -> None:
        transition = _BY_KEY[(self._state, event, outcome)]
        legacy = self._legacy
        checking = legacy is not None and legacy.check is not None and outcome != "closed-at-v0"
        draining = self._state is _DRAIN
        if (checking or draining) and event not in PROGRESS_EVENTS and outcome not in PROGRESS_OUTCOMES:
            # After the last ApiVersions attempt (rule 10), or after its answer while the probe's
            # reply is read (rule 9): a note, so the versions tried still strictly fall.
            what = "the 0.8.x check ended" if checking else "reading the probe's reply ended"
            self._notes.append(f"{what}: {outcome}" + (f" ({detail})" if detail else ""))
        elif event not in PROGRESS_EVENTS and outcome not in PROGRESS_OUTCOMES:
            if legacy is not None:
                flags = legacy.take_flags() + flags
            # A connection that failed to open is numbered as the one being tried.
            connection = self._connections + (self._state is _CONNECT)
            next_step = transition.next_step
            if "{" in next_step:  # most steps name no version: no format call for them
                next_step = next_step.format(version=next_version)
            # version, connection, outcome, detail, next_step, flags
            self._attempts.append(_Attempt(self._version, connection, outcome, detail, next_step, flags))
        self._history.append(transition)
        self._state = transition.target
        if next_version is not None:
            self._version = next_version
        if self._state is _CONNECT:
            self._action = Connect(self._version, self._connections + 1)
        elif self._state is _SEND:
            self._action = self._send_request()
        elif self._state is _PROBE:
            self._action = self._legacy_steps().probe_request(self._take_correlation_id(), self.headers)
        elif self._state is _RECEIVE:
            unprobed = legacy is None or (
                legacy.probed_connection != self._connections and legacy.check is None
            )
            quiet = self.config.quiet_period if unprobed else None
            self._action = ReceiveReply(self._version, self._correlation_id, quiet)
        elif self._state is _DRAIN:
            assert legacy is not None and legacy.probe_id is not None
            self._action = ReceiveReply(self._version, legacy.probe_id)

    def _send_request(self) -> SendRequest:
        identity = self.identity
        request = self.config.request(self._version, identity)
        self._correlation_id = cid = self._take_correlation_id()
        body = self.config.request_body(self._version, identity)
        frame = self.headers.frame(API_VERSIONS_KEY, self._version, cid, body)
        return SendRequest(self._version, cid, request, frame)

    def _take_correlation_id(self) -> int:
        cid = self._next_correlation_id
        self._next_correlation_id = 0 if cid == _INT32_MAX else cid + 1
        return cid


def _step_down(version: int, max_connections: int, connections: int) -> int:
    """The version to reconnect at after a close at ``version`` (rule 4)."""
    # v4 (a fix) and v5 (the identity) add nothing a peer that closes on them needs:
    # a close there goes straight to v3, as a close at v4 did before v5 existed.
    lower = min(version - 1, FIRST_SOFTWARE_FIELDS_VERSION)
    left = max_connections - connections
    # One flexible version lower while a connection is left after it for v0.
    return lower if lower >= FIRST_SOFTWARE_FIELDS_VERSION and left >= 2 else 0
