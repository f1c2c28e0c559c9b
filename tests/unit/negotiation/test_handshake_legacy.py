"""Pre-0.10 brokers and slow ones (rules 9, 10), and the step-down after closes (rule 4).

The rows of the table added for the Metadata v0 probe and the step-down each get a scenario
here (``LEGACY_SCENARIOS``); ``test_handshake`` checks that every row of the
table has exactly one scenario across both files.  The peers are written from
what the brokers were seen to do: a real 0.9.0.1 answers nothing to
ApiVersions and serves the next request; a slow broker answers in order.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkacompat.errors import HandshakeConfigError, HandshakeStateError, KafkaCompatError, KafkaTimeoutError
from kafkacompat.negotiation.handshake import (
    TRANSITIONS,
    ApiVersionsHandshake,
    Connect,
    Done,
    Event,
    Fail,
    HandshakeConfig,
    ReceiveReply,
    SendProbe,
    SendRequest,
    State,
    Transition,
    release_ranges,
)
from kafkacompat.protocol.broker_framing import decode_request
from kafkacompat.protocol.messages import (
    HeartbeatResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetFetchResponse,
)
from tests.unit.negotiation.test_handshake import (
    CLOSED,
    CODEC_MAX,
    CONNECTED,
    NO_RANGE,
    SENT,
    TIMED_OUT,
    TLS_ALERT,
    Scenario,
    ok,
    play,
    step,
)

C, S, Rc, D, F = State.CONNECT, State.SEND, State.RECEIVE, State.DONE, State.FAILED
P, DR = State.PROBE, State.DRAIN
E = Event
QUIET = step("quiet")
TO_PROBE = (CONNECTED, SENT, QUIET)
METADATA_V0 = MetadataResponse(
    brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=9092)]
).encode(0)


def frame(correlation_id: int, body: bytes) -> tuple[str, tuple[Any, ...]]:
    return step("received_frame", correlation_id.to_bytes(4, "big") + body)


HEARTBEAT_V0 = HeartbeatResponse(error_code=-1).encode(0)
OFFSET_FETCH_V0 = OffsetFetchResponse(topics=[]).encode(0)
# Closed at v0 on connection 1 (ApiVersions had correlation id 0), connected again: the check's
# Metadata v0 (correlation id 1), then Heartbeat (2), then OffsetFetch v0 (3).
TO_CHECK = (CONNECTED, CLOSED, CONNECTED)
AT_V0 = {"max_version": 0}
HEARTBEAT_DUE = (*TO_CHECK, SENT, frame(1, METADATA_V0))
HEARTBEAT_CLOSED = (*HEARTBEAT_DUE, SENT, CLOSED)
TLS_ASKED = (*TO_CHECK, SENT, CLOSED, CONNECTED, SENT)  # Metadata v0 closed; the ClientHello written

# The first ApiVersions request has correlation id 0, the probe after it 1.
PROBE_REPLY = frame(1, METADATA_V0)
RETRIED_AT_V0_ON_CONNECTION_1 = (*TO_PROBE, SENT, frame(0, NO_RANGE), SENT)

LEGACY_SCENARIOS: dict[tuple[State, Event, str], Scenario] = {
    (Rc, E.QUIET, "quiet"): Scenario((CONNECTED, SENT, QUIET)),
    (P, E.REQUEST_SENT, "probe-sent"): Scenario((*TO_PROBE, SENT)),
    (P, E.TIMED_OUT, "timeout"): Scenario((*TO_PROBE, TIMED_OUT)),
    (P, E.CONNECTION_CLOSED, "closed"): Scenario((*TO_PROBE, CLOSED), {"max_version": 2}),
    # Rule 4's step-down: a close at a flexible version retries one flexible version lower.
    (S, E.CONNECTION_CLOSED, "closed-step-down"): Scenario((CONNECTED, CLOSED)),
    (Rc, E.CONNECTION_CLOSED, "closed-step-down"): Scenario((CONNECTED, SENT, CLOSED)),
    (P, E.CONNECTION_CLOSED, "closed-step-down"): Scenario((*TO_PROBE, CLOSED)),
    (P, E.CONNECTION_CLOSED, "closed-no-connection-left"): Scenario(
        (*TO_PROBE, CLOSED), {"max_connections": 1}
    ),
    (P, E.CONNECTION_CLOSED, "closed-at-v0"): Scenario((*TO_PROBE, CLOSED), {"max_version": 0}),
    (P, E.CONNECTION_CLOSED, "closed-at-v0-fallback"): Scenario(
        (*TO_PROBE, CLOSED), {"max_version": 0, "fallback_release": "0.8.2"}
    ),
    (P, E.CONNECTION_CLOSED, "closed-after-reply"): Scenario(
        (CONNECTED, SENT, step("received", NO_RANGE), SENT, QUIET, CLOSED)
    ),
    (Rc, E.RECEIVED, "skipped-api-versions"): Scenario((*TO_PROBE, SENT, PROBE_REPLY)),
    (Rc, E.RECEIVED, "probe-reply-dropped"): Scenario((*RETRIED_AT_V0_ON_CONNECTION_1, PROBE_REPLY)),
    (Rc, E.RECEIVED, "ok-probe-pending"): Scenario((*TO_PROBE, SENT, frame(0, ok(CODEC_MAX)))),
    (DR, E.RECEIVED, "probe-reply-dropped"): Scenario(
        (*TO_PROBE, SENT, frame(0, ok(CODEC_MAX)), PROBE_REPLY)
    ),
    (DR, E.RECEIVED, "correlation-mismatch"): Scenario(
        (*TO_PROBE, SENT, frame(0, ok(CODEC_MAX)), frame(77, METADATA_V0))
    ),
    (DR, E.CONNECTION_CLOSED, "closed-after-answer"): Scenario(
        (*TO_PROBE, SENT, frame(0, ok(CODEC_MAX)), CLOSED)
    ),
    (DR, E.TIMED_OUT, "probe-unanswered"): Scenario((*TO_PROBE, SENT, frame(0, ok(CODEC_MAX)), TIMED_OUT)),
    (DR, E.FOREIGN_BYTES, "foreign-protocol"): Scenario(
        (*TO_PROBE, SENT, frame(0, ok(CODEC_MAX)), step("foreign_bytes", TLS_ALERT))
    ),
    # Rule 10: closed even at v0, so which 0.8.x (if Kafka at all).
    (C, E.CONNECTED, "connected-to-check"): Scenario(TO_CHECK, AT_V0),
    (Rc, E.RECEIVED, "check-answered"): Scenario(HEARTBEAT_DUE, AT_V0),
    (Rc, E.RECEIVED, "check-named"): Scenario((*HEARTBEAT_DUE, SENT, frame(2, HEARTBEAT_V0)), AT_V0),
    (Rc, E.CONNECTION_CLOSED, "check-closed"): Scenario(HEARTBEAT_CLOSED, AT_V0),
    (P, E.CONNECTION_CLOSED, "check-closed"): Scenario((*HEARTBEAT_DUE, CLOSED), AT_V0),
    (Rc, E.CONNECTION_CLOSED, "check-named-on-close"): Scenario(
        (*HEARTBEAT_CLOSED, CONNECTED, SENT, CLOSED), AT_V0
    ),
    (P, E.CONNECTION_CLOSED, "check-named-on-close"): Scenario(
        (*HEARTBEAT_CLOSED, CONNECTED, CLOSED), AT_V0
    ),
    # Closed on Metadata v0 too: over plaintext the TLS question comes last, on a new connection.
    (Rc, E.CONNECTION_CLOSED, "not-kafka"): Scenario((*TLS_ASKED, CLOSED), AT_V0),
    (Rc, E.TIMED_OUT, "not-kafka"): Scenario((*TLS_ASKED, TIMED_OUT), AT_V0),
    (P, E.CONNECTION_CLOSED, "not-kafka"): Scenario((*TO_CHECK, CLOSED), AT_V0, {"plaintext": False}),
}
LEGACY_ROWS = [t for t in TRANSITIONS if (t.source, t.event, t.outcome) in LEGACY_SCENARIOS]
ACTION_OF = {C: Connect, S: SendRequest, P: SendProbe, Rc: ReceiveReply, DR: ReceiveReply, D: Done, F: Fail}
# Outcomes that conclude no attempt of their own (they belong to the ApiVersions request before them).
QUIET_OUTCOMES = {
    "quiet", "probe-sent", "probe-reply-dropped", "closed-after-answer", "probe-unanswered",
    "connected-to-check", "check-answered", "check-named", "check-closed", "check-named-on-close",
    "not-kafka",
}


@pytest.mark.parametrize("transition", LEGACY_ROWS, ids=lambda t: f"{t.source}-{t.event}-{t.outcome}")
def test_probe_transition(transition: Transition) -> None:
    hs = play(LEGACY_SCENARIOS[(transition.source, transition.event, transition.outcome)])
    assert hs.history[-1] == transition
    assert hs.state is transition.target
    action = hs.next_action()
    assert isinstance(action, ACTION_OF[transition.target])
    if transition.source is DR and transition.outcome not in QUIET_OUTCOMES:
        # After the answer, a failure reading the probe's reply is a note: the versions tried
        # (one attempt per ApiVersions request) still strictly fall.
        assert hs.transcript.notes[-1].startswith(f"reading the probe's reply ended: {transition.outcome}")
    elif transition.outcome not in QUIET_OUTCOMES:
        assert hs.transcript.attempts[-1].outcome == transition.outcome
    if isinstance(action, Fail):
        assert isinstance(action.error, KafkaCompatError)
        assert action.error.transcript == hs.transcript
    if isinstance(action, Done):
        assert action.result.transcript == hs.transcript


# -- a real 0.9 broker, a slow modern one, a silent one -----------------------------------


def run(hs: ApiVersionsHandshake, peer: str) -> tuple[list[Any], ApiVersionsHandshake]:
    """Drive ``hs`` against a peer on one connection; replies come in request order.

    ``"0.9"`` answers nothing to ApiVersions and Metadata v0 at once; ``"slow"``
    answers each request in order, the first only after the quiet period;
    ``"silent"`` never answers.
    """
    actions: list[Any] = []
    written: list[tuple[int, bytes]] = []  # (correlation id, reply body) in the order due
    for _ in range(20):
        action = hs.next_action()
        actions.append(action)
        if isinstance(action, Done | Fail):
            return actions, hs
        if isinstance(action, Connect):
            hs.connected()
        elif isinstance(action, SendRequest):
            if peer == "slow":
                written.append((action.correlation_id, ok(action.version)))
            hs.request_sent()
        elif isinstance(action, SendProbe):
            header = decode_request(action.frame[4:])
            assert (header.header.request_api_key, header.header.request_api_version) == (3, 0)
            assert isinstance(header.body, MetadataRequest) and header.body.topics == []
            if peer != "silent":
                written.append((action.correlation_id, METADATA_V0))
            hs.request_sent()
        else:
            assert isinstance(action, ReceiveReply)
            if action.quiet_period is not None:
                hs.quiet()  # every peer here takes longer than the quiet period to say anything
            elif written:
                cid, body = written.pop(0)
                hs.received_frame(cid.to_bytes(4, "big") + body)
            else:
                hs.timed_out()
    raise AssertionError(f"no end: {actions}")


def test_a_0_9_broker_is_known_by_the_probe_answered_first() -> None:
    actions, hs = run(ApiVersionsHandshake(node="old:9092"), "0.9")
    done = actions[-1]
    assert isinstance(done, Done) and not done.needs_new_connection  # the connection serves on
    result = done.result
    assert result.detected_release == result.fallback_release == "0.9.0"
    assert result.response is None and result.api_versions_version is None
    assert dict(result.api_ranges) == dict(release_ranges("0.9.0"))
    (attempt,) = result.transcript.attempts
    assert (attempt.version, attempt.outcome) == (CODEC_MAX, "skipped-api-versions")
    assert attempt.flags == ("metadata-probe", "api-versions-skipped")
    assert (result.transcript.round_trips, result.transcript.connections) == (1, 1)
    assert any("predates Kafka 0.10" in note for note in result.transcript.notes)
    assert [type(a).__name__ for a in actions] == [
        "Connect", "SendRequest", "ReceiveReply", "SendProbe", "ReceiveReply", "Done"
    ]
    assert hs.next_correlation_id == 2  # ApiVersions had 0, the probe 1


def test_a_configured_fallback_release_overrides_what_the_behaviour_names() -> None:
    actions, _ = run(ApiVersionsHandshake(HandshakeConfig(fallback_release="0.8.2")), "0.9")
    result = actions[-1].result
    assert (result.fallback_release, result.detected_release) == ("0.8.2", "0.9.0")
    assert dict(result.api_ranges) == dict(release_ranges("0.8.2"))
    assert any("configured fallback release 0.8.2" in note for note in result.transcript.notes)


def test_a_slow_modern_broker_answers_api_versions_first_and_the_probe_is_dropped() -> None:
    actions, _ = run(ApiVersionsHandshake(), "slow")
    done = actions[-1]
    assert isinstance(done, Done) and not done.needs_new_connection
    result = done.result
    assert result.detected_release is None and result.fallback_release is None
    assert result.api_versions_version == CODEC_MAX and result.response is not None
    (attempt,) = result.transcript.attempts
    assert attempt.outcome == "ok-probe-pending" and "metadata-probe" in attempt.flags
    assert result.transcript.round_trips == 2  # the ApiVersions reply, then the probe's
    assert [a.version for a in actions if isinstance(a, SendRequest)] == [CODEC_MAX]


def test_silence_after_the_probe_is_a_timeout_and_no_lower_version_is_sent() -> None:
    actions, _ = run(ApiVersionsHandshake(), "silent")
    fail = actions[-1]
    assert isinstance(fail, Fail) and type(fail.error) is KafkaTimeoutError
    assert [a.version for a in actions if isinstance(a, SendRequest)] == [CODEC_MAX]
    assert sum(isinstance(a, SendProbe) for a in actions) == 1
    assert fail.error.transcript.versions_tried == (CODEC_MAX,)


def test_one_probe_per_connection_and_none_without_a_quiet_period() -> None:
    hs = play(Scenario((*TO_PROBE, SENT)))
    action = hs.next_action()
    assert isinstance(action, ReceiveReply) and action.quiet_period is None
    with pytest.raises(HandshakeStateError):
        hs.quiet()
    never = play(Scenario((CONNECTED, SENT), {"quiet_period": None}))
    assert never.next_action() == ReceiveReply(CODEC_MAX, 0, None)
    assert Event.QUIET not in never.expected_events
    with pytest.raises(HandshakeStateError):
        never.quiet()


def test_the_quiet_period_is_handed_to_the_driver() -> None:
    hs = play(Scenario((CONNECTED, SENT), {"quiet_period": 0.5}))
    assert hs.next_action() == ReceiveReply(CODEC_MAX, 0, 0.5)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), True, "1"])
def test_a_quiet_period_that_cannot_work_is_refused(bad: Any) -> None:
    with pytest.raises(HandshakeConfigError):
        HandshakeConfig(quiet_period=bad)


def test_an_unreadable_probe_reply_fails_typed() -> None:
    hs = play(Scenario((*TO_PROBE, SENT, frame(1, b"\x00\x00\x00\x05"))))
    fail = hs.next_action()
    assert isinstance(fail, Fail) and fail.close_connection
    assert "Metadata v0 probe" in str(fail.error)


# -- rule 10: which 0.8.x ------------------------------------------------------------------


def eight(release: str) -> tuple[list[Any], ApiVersionsHandshake]:
    """Drive a handshake against 0.8.x as its source behaves: an api key it lacks closes."""
    keys = {"0.8.0": set(range(8)), "0.8.1": set(range(10)), "0.8.2": set(range(13))}[release]
    replies = {3: METADATA_V0, 9: OFFSET_FETCH_V0, 12: HEARTBEAT_V0}
    hs, actions, due = ApiVersionsHandshake(node="old:9092"), [], None
    for _ in range(40):
        action = hs.next_action()
        actions.append(action)
        if isinstance(action, Done | Fail):
            return actions, hs
        if isinstance(action, Connect):
            hs.connected()
        elif isinstance(action, SendRequest | SendProbe):
            header = decode_request(action.frame[4:], decode_body=False).header
            due = (header.correlation_id, header.request_api_key)
            hs.request_sent()
        else:
            assert isinstance(action, ReceiveReply) and due is not None
            cid, key = due
            if key in keys:
                hs.received_frame(cid.to_bytes(4, "big") + replies[key])
            else:
                hs.connection_closed()
    raise AssertionError(f"no end: {actions}")


@pytest.mark.parametrize(
    ("release", "connections", "serves_on"), [("0.8.2", 4, True), ("0.8.1", 5, True), ("0.8.0", 5, False)]
)
def test_each_0_8_release_is_named_by_the_keys_it_answers(
    release: str, connections: int, serves_on: bool
) -> None:
    actions, _ = eight(release)
    done = actions[-1]
    assert isinstance(done, Done), done
    result = done.result
    assert (result.detected_release, result.fallback_release) == (release, release)
    assert dict(result.api_ranges) == dict(release_ranges(release))
    assert result.transcript.versions_tried == (CODEC_MAX, 3, 0)  # the step-down, then the check
    assert result.transcript.connections == connections
    assert done.needs_new_connection is not serves_on  # 0.8.0 closed on the last check request
    assert any("Metadata v0 was answered" in note for note in result.transcript.notes)


def test_a_configured_fallback_skips_the_check() -> None:
    hs = ApiVersionsHandshake(HandshakeConfig(fallback_release="0.8.1"))
    actions, _ = run_closing(hs)
    assert actions[-1].result.detected_release is None and actions[-1].result.fallback_release == "0.8.1"
    assert not any(isinstance(a, SendProbe) for a in actions)


def run_closing(hs: ApiVersionsHandshake) -> tuple[list[Any], ApiVersionsHandshake]:
    actions: list[Any] = []
    for _ in range(20):
        action = hs.next_action()
        actions.append(action)
        if isinstance(action, Done | Fail):
            return actions, hs
        if isinstance(action, Connect):
            hs.connected()
        else:
            hs.connection_closed()
    raise AssertionError(f"no end: {actions}")


def test_a_timeout_during_the_check_is_noted_not_an_attempt() -> None:
    hs = play(Scenario((*TO_CHECK, SENT, TIMED_OUT), AT_V0))
    fail = hs.next_action()
    assert isinstance(fail, Fail) and type(fail.error) is KafkaTimeoutError
    assert hs.transcript.versions_tried == (0,)
    assert hs.transcript.notes[-1].startswith("the 0.8.x check ended: timeout")
