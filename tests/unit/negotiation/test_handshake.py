"""The ApiVersions handshake: every transition of its table, then broker by broker.

Replies are built with the codec, the way each kind of broker answers; the
expected behaviour comes from KIP-35/KIP-511 and the brokers' observed
answers, never from running the handshake first.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from kafkacompat.errors import (
    BrokerRejectedError,
    BrokerTooOldError,
    ClientSoftwareWarning,
    DecodeError,
    HandshakeConfigError,
    HandshakeStateError,
    InvalidRequestError,
    KafkaCompatError,
    KafkaTimeoutError,
    NegotiationError,
    ProtocolError,
    SilentPeerError,
    TransportError,
    UnsupportedVersionError,
    WrongProtocolError,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake import (
    TRANSITIONS,
    ApiVersionsHandshake,
    Connect,
    Done,
    Event,
    Fail,
    HandshakeConfig,
    HandshakeResult,
    ReceiveReply,
    SendProbe,
    SendRequest,
    State,
    Transition,
    release_ranges,
)
from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION
from kafkacompat.negotiation.handshake.identity import BrokerIdentity
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.negotiation.peer_kind import TLS_CLIENT_HELLO
from kafkacompat.protocol.broker_framing import decode_request
from kafkacompat.protocol.framing import FrameSplitter
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.releases import RELEASES

R = ApiVersionsResponse
CODEC_MAX = CODEC_MAX_VERSION  # the first version the handshake offers
UNSUPPORTED_VERSION, INVALID_REQUEST, CLUSTER_AUTHORIZATION_FAILED, REBOOTSTRAP_REQUIRED = 35, 42, 31, 129
APIS = ((0, 0, 9), (1, 0, 13), (3, 0, 12))  # Produce, Fetch, Metadata

# The librdkafka mock's answer to ApiVersions v3/v4 (seen in the broker smoke
# tests): error 35 and a broken ApiKeys, readable neither as v3 nor as v0.
MOCK_V3_BODY = bytes.fromhex("00230100120000000200000000")
TLS_ALERT = bytes.fromhex("150303000202 46".replace(" ", ""))
HTTP_REPLY = b"HTTP/1.1 400 Bad Request\r\n\r\n"


def body(version: int, error: int = 0, apis: tuple[tuple[int, int, int], ...] = (), **kw: Any) -> bytes:
    """An ApiVersions response body, written by the codec at ``version``."""
    api_keys = [R.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in apis]
    return R(error_code=error, api_keys=api_keys, **kw).encode(version)


def ok(version: int, api_versions: tuple[int, int] = (0, CODEC_MAX)) -> bytes:
    return body(version, 0, ((18, *api_versions), *APIS))


# -- simulated peers: (request version, connection number) -> what comes back -----------


class Close:
    """The peer closes the connection instead of answering."""


class Silence:
    """The peer says nothing until the driver's deadline."""


Answer = bytes | type[Close] | type[Silence]
Err = TypeVar("Err", bound=KafkaCompatError)
Peer = Callable[[int, int], Answer]


def kafka(api_versions: tuple[int, int], *, names_range: bool = True) -> Peer:
    """A Kafka broker accepting ApiVersions ``api_versions``.

    Asked for more, it answers UNSUPPORTED_VERSION in the v0 layout, naming its
    own range from 2.4 on (``names_range``), with empty ApiKeys before.
    """
    accepted = VersionRange(*api_versions)

    def answer(version: int, connection: int) -> Answer:
        if version in accepted:
            return ok(version, api_versions)
        return body(0, UNSUPPORTED_VERSION, ((18, *api_versions),) if names_range else ())

    return answer


@dataclass
class Run:
    """What a driver saw: every action, in order, and the final one."""

    actions: list[Any] = field(default_factory=list)

    @property
    def final(self) -> Any:
        return self.actions[-1]

    @property
    def sent_versions(self) -> list[int]:
        return [a.version for a in self.actions if isinstance(a, SendRequest)]

    @property
    def requests(self) -> list[Any]:
        return [decode_request(a.frame[4:]) for a in self.actions if isinstance(a, SendRequest)]


def drive(hs: ApiVersionsHandshake, peer: Peer) -> Run:
    """A driver as a transport would be: whole frames through a FrameSplitter."""
    run, connection, splitter = Run(), 0, FrameSplitter()
    while len(run.actions) < 50:
        action = hs.next_action()
        run.actions.append(action)
        if isinstance(action, Done | Fail):
            return run
        if isinstance(action, Connect):
            connection += 1
            splitter = FrameSplitter()
            hs.connected()
        elif isinstance(action, SendRequest | SendProbe):
            hs.request_sent()
        else:
            assert isinstance(action, ReceiveReply)
            answer = peer(action.version, connection)
            if answer is Close:
                hs.connection_closed()
            elif answer is Silence:
                hs.timed_out()
            else:
                assert isinstance(answer, bytes)
                _deliver(hs, splitter, action.correlation_id, answer)
    raise AssertionError(f"the handshake did not end: {run.actions}")


def _deliver(hs: ApiVersionsHandshake, splitter: FrameSplitter, cid: int, answer: bytes) -> None:
    raw = answer if _foreign(answer) else _frame(cid.to_bytes(4, "big") + answer)
    try:
        frames = splitter.feed(raw)
    except WrongProtocolError:
        hs.foreign_bytes(raw)
        return
    assert len(frames) == 1
    hs.received_frame(frames[0])


def _foreign(answer: bytes) -> bool:
    return answer in (TLS_ALERT, HTTP_REPLY)


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def failure(run: Run, error_type: type[Err]) -> Err:
    assert isinstance(run.final, Fail), run.final
    error = run.final.error
    assert type(error) is error_type, error
    assert isinstance(error.transcript, HandshakeTranscript)
    assert error.transcript.attempts, "every error carries what was tried"
    return error


def fail_of(hs: ApiVersionsHandshake) -> Fail:
    action = hs.next_action()
    assert isinstance(action, Fail), action
    return action


def done_of(hs: ApiVersionsHandshake) -> Done:
    action = hs.next_action()
    assert isinstance(action, Done), action
    return action


def send_of(hs: ApiVersionsHandshake) -> SendRequest:
    action = hs.next_action()
    assert isinstance(action, SendRequest), action
    return action


def success(run: Run) -> HandshakeResult:
    assert isinstance(run.final, Done), run.final
    return run.final.result


# -- one scenario per transition of the table --------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """Events fed in order; the last one takes the transition under test."""

    steps: tuple[tuple[str, tuple[Any, ...]], ...]
    config: dict[str, Any] = field(default_factory=dict)
    handshake: dict[str, Any] = field(default_factory=dict)  # ApiVersionsHandshake's own arguments


class Kw(dict[str, Any]):
    """The keyword arguments of a step, given last among its arguments."""


def step(name: str, *args: Any) -> tuple[str, tuple[Any, ...]]:
    return (name, args)


CONNECTED, SENT = step("connected"), step("request_sent")
CLOSED, TIMED_OUT = step("connection_closed"), step("timed_out")
TO_RECEIVE = (CONNECTED, SENT)
NAMES_V3 = body(0, UNSUPPORTED_VERSION, ((18, 0, 3),))
NO_RANGE = body(0, UNSUPPORTED_VERSION)

C, S, Rc, D, F = State.CONNECT, State.SEND, State.RECEIVE, State.DONE, State.FAILED
E = Event
SCENARIOS: dict[tuple[State, Event, str], Scenario] = {
    (C, E.CONNECTED, "connected"): Scenario((CONNECTED,)),
    (C, E.CONNECT_FAILED, "connect-failed"): Scenario((step("connect_failed", "refused"),)),
    (C, E.TIMED_OUT, "timeout"): Scenario((TIMED_OUT,)),
    (S, E.REQUEST_SENT, "sent"): Scenario(TO_RECEIVE),
    (S, E.TIMED_OUT, "timeout"): Scenario((CONNECTED, TIMED_OUT)),
    (Rc, E.TIMED_OUT, "timeout"): Scenario((*TO_RECEIVE, TIMED_OUT)),
    (Rc, E.TIMED_OUT, "silent"): Scenario((*TO_RECEIVE, step("timed_out", Kw(silent=True, waited=5.0)))),
    (Rc, E.RECEIVED, "ok"): Scenario((*TO_RECEIVE, step("received", ok(CODEC_MAX)))),
    (Rc, E.RECEIVED, "unsupported-version"): Scenario((*TO_RECEIVE, step("received", NAMES_V3))),
    (Rc, E.RECEIVED, "no-lower-version"): Scenario(
        (*TO_RECEIVE, step("received", body(0, UNSUPPORTED_VERSION, ((18, 0, CODEC_MAX),))))
    ),
    (Rc, E.RECEIVED, "unreadable"): Scenario((*TO_RECEIVE, step("received", b"\x00\x00\xff"))),
    (Rc, E.RECEIVED, "correlation-mismatch"): Scenario(
        (*TO_RECEIVE, step("received_frame", (77).to_bytes(4, "big") + ok(CODEC_MAX)))
    ),
    (Rc, E.RECEIVED, "foreign-protocol"): Scenario((*TO_RECEIVE, step("received", HTTP_REPLY))),
    (Rc, E.FOREIGN_BYTES, "foreign-protocol"): Scenario((*TO_RECEIVE, step("foreign_bytes", TLS_ALERT))),
    (Rc, E.RECEIVED, "invalid-request"): Scenario((*TO_RECEIVE, step("received", body(0, INVALID_REQUEST)))),
    (Rc, E.RECEIVED, "broker-error"): Scenario(
        (*TO_RECEIVE, step("received", body(CODEC_MAX, CLUSTER_AUTHORIZATION_FAILED)))
    ),
    (Rc, E.RECEIVED, "rebootstrap-required"): Scenario(
        (*TO_RECEIVE, step("received", body(CODEC_MAX, REBOOTSTRAP_REQUIRED))),
        handshake={"identity": BrokerIdentity("MkU3OEVBNTcwNTJENDM2Qk", 1)},
    ),
    (Rc, E.RECEIVED, "identity-refused"): Scenario(
        (*TO_RECEIVE, step("received", body(CODEC_MAX, INVALID_REQUEST))),
        handshake={"identity": BrokerIdentity("MkU3OEVBNTcwNTJENDM2Qk", 1)},
    ),
    (S, E.CONNECTION_CLOSED, "closed"): Scenario((CONNECTED, CLOSED), {"max_version": 2}),
    (Rc, E.CONNECTION_CLOSED, "closed"): Scenario((*TO_RECEIVE, CLOSED), {"max_version": 2}),
    (S, E.CONNECTION_CLOSED, "closed-no-connection-left"): Scenario(
        (CONNECTED, CLOSED), {"max_connections": 1}
    ),
    (Rc, E.CONNECTION_CLOSED, "closed-no-connection-left"): Scenario(
        (*TO_RECEIVE, CLOSED), {"max_connections": 1}
    ),
    (S, E.CONNECTION_CLOSED, "closed-at-v0"): Scenario((CONNECTED, CLOSED), {"max_version": 0}),
    (Rc, E.CONNECTION_CLOSED, "closed-at-v0"): Scenario(
        (*TO_RECEIVE, CLOSED, CONNECTED, SENT, CLOSED), {"max_connections": 2}
    ),
    (S, E.CONNECTION_CLOSED, "closed-at-v0-fallback"): Scenario(
        (CONNECTED, CLOSED, CONNECTED, CLOSED), {"fallback_release": "0.9.0", "max_connections": 2}
    ),
    (Rc, E.CONNECTION_CLOSED, "closed-at-v0-fallback"): Scenario(
        (*TO_RECEIVE, CLOSED), {"fallback_release": "0.9.0", "max_version": 0}
    ),
    (S, E.CONNECTION_CLOSED, "closed-after-reply"): Scenario(
        (*TO_RECEIVE, step("received", NO_RANGE), CLOSED)
    ),
    (Rc, E.CONNECTION_CLOSED, "closed-after-reply"): Scenario(
        (*TO_RECEIVE, step("received", NO_RANGE), SENT, CLOSED)
    ),
}


def play(scenario: Scenario) -> ApiVersionsHandshake:
    hs = ApiVersionsHandshake(HandshakeConfig(**scenario.config), node="broker:9092", **scenario.handshake)
    for name, args in scenario.steps:
        keywords = args[-1] if args and isinstance(args[-1], Kw) else Kw()
        getattr(hs, name)(*args[: len(args) - bool(keywords)], **keywords)
    return hs


def test_every_transition_has_exactly_one_scenario() -> None:
    # The rows of the Metadata v0 probe (rule 9) have theirs in test_handshake_legacy.
    from tests.unit.negotiation.test_handshake_legacy import LEGACY_SCENARIOS

    keys = [(t.source, t.event, t.outcome) for t in TRANSITIONS]
    assert len(keys) == len(set(keys)), "two rows of the table share a key"
    assert not set(SCENARIOS) & set(LEGACY_SCENARIOS)
    assert set(SCENARIOS) | set(LEGACY_SCENARIOS) == set(keys)


@pytest.mark.parametrize(
    "transition",
    [t for t in TRANSITIONS if (t.source, t.event, t.outcome) in SCENARIOS],
    ids=lambda t: f"{t.source}-{t.event}-{t.outcome}",
)
def test_transition(transition: Transition) -> None:
    hs = play(SCENARIOS[(transition.source, transition.event, transition.outcome)])
    assert hs.history[-1] == transition
    assert hs.state is transition.target
    action = hs.next_action()
    expected_action = {C: Connect, S: SendRequest, Rc: ReceiveReply, D: Done, F: Fail}
    assert isinstance(action, expected_action[transition.target])
    if transition.event not in (Event.CONNECTED, Event.REQUEST_SENT):
        assert hs.transcript.attempts[-1].outcome == transition.outcome
        assert hs.transcript.attempts[-1].next_step
    if isinstance(action, Fail):
        assert isinstance(action.error, NegotiationError | TransportError | KafkaTimeoutError | ProtocolError)
        assert action.error.transcript == hs.transcript
        assert action.error.node == "broker:9092"
    if isinstance(action, Done):
        assert action.result.transcript == hs.transcript


def test_terminal_states_have_no_transitions() -> None:
    assert not [t for t in TRANSITIONS if t.source in (State.DONE, State.FAILED)]


INVALID_PAIRS = [
    (state, event)
    for state in State
    for event in Event
    if not any(t.source is state and t.event is event for t in TRANSITIONS)
]


@pytest.mark.parametrize(("state", "event"), INVALID_PAIRS, ids=lambda x: str(x))
def test_events_outside_the_table_are_refused_and_change_nothing(state: State, event: Event) -> None:
    reach = {
        C: Scenario(()),
        S: Scenario((CONNECTED,)),
        Rc: Scenario(TO_RECEIVE),
        State.PROBE: Scenario((*TO_RECEIVE, step("quiet"))),
        State.DRAIN: Scenario((*TO_RECEIVE, step("quiet"), SENT, step("received", ok(CODEC_MAX)))),
        D: SCENARIOS[(Rc, E.RECEIVED, "ok")],
        F: SCENARIOS[(Rc, E.TIMED_OUT, "timeout")],
    }
    hs = play(reach[state])
    before = (hs.state, hs.transcript, hs.next_action(), hs.history)
    method = {E.RECEIVED: "received", E.FOREIGN_BYTES: "foreign_bytes"}.get(event)
    with pytest.raises(HandshakeStateError) as caught:
        if method is not None:
            getattr(hs, method)(ok(CODEC_MAX))
        elif event is E.CONNECT_FAILED:
            hs.connect_failed("x")
        else:
            getattr(hs, event.value)()
    assert (caught.value.state, caught.value.event) == (state, event)
    assert (hs.state, hs.transcript, hs.next_action(), hs.history) == before


def test_received_frame_is_refused_like_received() -> None:
    hs = play(Scenario((CONNECTED,)))
    with pytest.raises(HandshakeStateError):
        hs.received_frame(b"\x00\x00\x00\x00" + ok(CODEC_MAX))
    assert hs.state is State.SEND


# -- brokers ----------------------------------------------------------------------------


def test_modern_broker_answers_the_highest_version_in_one_round_trip() -> None:
    run = drive(ApiVersionsHandshake(), kafka((0, CODEC_MAX)))
    result = success(run)
    assert run.sent_versions == [CODEC_MAX]
    assert result.api_versions_version == CODEC_MAX
    assert (result.transcript.round_trips, result.transcript.connections) == (1, 1)
    assert dict(result.api_ranges) == {
        18: VersionRange(0, CODEC_MAX),
        0: VersionRange(0, 9),
        1: VersionRange(0, 13),
        3: VersionRange(0, 12),
    }
    assert result.flags == ()
    assert result.fallback_release is None and not run.final.needs_new_connection


def test_broker_2_4_to_3_x_is_retried_at_its_max_on_the_same_connection() -> None:
    with pytest.raises(DecodeError):  # the v0-layout refusal cannot be read at v4
        R.decode(body(0, UNSUPPORTED_VERSION, ((18, 0, 3),)), CODEC_MAX)
    run = drive(ApiVersionsHandshake(), kafka((0, 3)))
    result = success(run)
    assert run.sent_versions == [CODEC_MAX, 3]
    assert (result.transcript.round_trips, result.transcript.connections) == (2, 1)
    assert result.api_versions_version == 3
    assert result.transcript.attempts[0].outcome == "unsupported-version"
    assert "v3" in result.transcript.attempts[0].next_step


def test_broker_0_10_to_2_3_without_a_range_is_retried_at_v0() -> None:
    run = drive(ApiVersionsHandshake(), kafka((0, 2), names_range=False))
    result = success(run)
    assert run.sent_versions == [CODEC_MAX, 0]
    assert result.api_versions_version == 0
    assert result.api_ranges[18] == VersionRange(0, 2)
    assert result.throttle_time_ms == 0 and result.finalized_features_epoch == -1


def test_a_reply_unreadable_at_the_version_sent_is_read_again_as_v0() -> None:
    refusal = body(0, UNSUPPORTED_VERSION, ((18, 0, 1),))
    with pytest.raises(DecodeError):
        R.decode(refusal, 3)
    hs = play(Scenario((*TO_RECEIVE,), {"max_version": 3}))
    hs.received(refusal)
    retry = send_of(hs)
    assert (retry.version, retry.correlation_id, retry.request) == (1, 1, ApiVersionsRequest())


def test_an_ok_reply_only_readable_as_v0_is_accepted_and_flagged() -> None:
    hs = play(Scenario(TO_RECEIVE))
    hs.received(ok(0))
    result = done_of(hs).result
    assert result.api_versions_version == 0
    assert "reread-as-v0" in result.flags


def test_close_at_v4_then_v3_answers_on_a_second_connection() -> None:
    def resets_first(version: int, connection: int) -> Answer:
        return Close if connection == 1 else ok(version, (0, 3))

    run = drive(ApiVersionsHandshake(), resets_first)
    result = success(run)
    assert run.sent_versions == [CODEC_MAX, 3]
    assert [a.connection for a in run.actions if isinstance(a, Connect)] == [1, 2]
    assert (result.transcript.round_trips, result.transcript.connections) == (1, 2)
    assert [a.outcome for a in result.transcript.attempts] == ["closed-step-down", "ok"]
    assert run.requests[-1].body.client_software_name == "kafkacompat"  # v3 still names us


def test_event_hubs_like_reset_on_flexible_versions_steps_down_then_falls_back_to_v0() -> None:
    def event_hubs(version: int, connection: int) -> Answer:
        return Close if version >= 3 else ok(version, (0, 2))

    run = drive(ApiVersionsHandshake(), event_hubs)
    assert success(run).api_versions_version == 0
    assert run.sent_versions == [CODEC_MAX, 3, 0]
    assert success(run).transcript.connections == 3


def test_two_connections_go_straight_to_v0_after_a_close() -> None:
    run = drive(ApiVersionsHandshake(HandshakeConfig(max_connections=2)), lambda v, c: Close)
    assert run.sent_versions == [CODEC_MAX, 0]
    assert [a.outcome for a in failure(run, BrokerTooOldError).transcript.attempts] == [
        "closed", "closed-at-v0"
    ]


def test_a_peer_that_closes_on_everything_even_metadata_is_no_kafka() -> None:
    run = drive(ApiVersionsHandshake(node="old:9092"), lambda v, c: Close)
    error = failure(run, BrokerTooOldError)
    said = str(error)
    assert "not a Kafka broker nor a TLS listener" in said and "Metadata v0" in said and "old:9092" in said
    assert run.sent_versions == [CODEC_MAX, 3, 0]
    # The three ApiVersions connections, one for the Metadata v0 check and one for the TLS
    # question (rule 10).
    assert error.transcript.connections == 5 and error.transcript.round_trips == 0
    probes = [a for a in run.actions if isinstance(a, SendProbe)]
    assert [p.what for p in probes] == ["the Metadata v0 check request", "the TLS ClientHello"]
    assert probes[1].frame == TLS_CLIENT_HELLO
    assert not run.final.close_connection


def test_a_peer_that_closes_on_every_kafka_request_and_answers_tls_is_a_tls_listener() -> None:
    """Python's ssl server drops plaintext without a word (a reset): only the ClientHello names it."""
    run = drive(ApiVersionsHandshake(node="tls:9093"), lambda v, c: TLS_ALERT if c == 5 else Close)
    error = failure(run, WrongProtocolError)
    assert error.kind == "tls" and str(error).startswith("TLS listener: the peer answered with a TLS record")
    assert error.first_bytes == TLS_ALERT and error.transcript.connections == 5


def test_over_tls_a_peer_that_closes_on_everything_is_not_asked_tls() -> None:
    run = drive(ApiVersionsHandshake(node="tls:9093", plaintext=False), lambda v, c: Close)
    error = failure(run, BrokerTooOldError)
    assert "over TLS" in str(error) and "TLS listener" not in str(error)
    assert error.transcript.connections == 4
    assert all(a.frame != TLS_CLIENT_HELLO for a in run.actions if isinstance(a, SendProbe))


def test_a_peer_silent_on_a_connection_is_named_silent_with_what_it_was_asked() -> None:
    hs = play(Scenario(TO_RECEIVE))
    hs.timed_out(silent=True, waited=4.999)
    error = fail_of(hs).error
    assert type(error) is SilentPeerError and error.waited == 4.999
    assert "answered nothing in 5 s (ApiVersions v5)" in str(error) and "0.10 or later" in str(error)
    assert hs.transcript.attempts[-1].outcome == "silent"
    # After the quiet period the Metadata v0 probe went too: every release answers one of them.
    probed = play(Scenario((*TO_RECEIVE, step("quiet"), SENT)))
    probed.timed_out(silent=True, waited=5.0)
    said = str(fail_of(probed).error)
    assert "(ApiVersions v5, then Metadata v0); a Kafka broker that is up answers at once" in said


def test_a_broker_that_closes_even_at_v0_uses_the_fallback_release_when_configured() -> None:
    hs = ApiVersionsHandshake(HandshakeConfig(fallback_release="0.9.0"))
    run = drive(hs, lambda v, c: Close)
    result = success(run)
    (profile,) = [p for p in RELEASES if p.release == "0.9.0" and p.kind == "zk-broker"]
    assert {k: (r.lowest, r.highest) for k, r in result.api_ranges.items()} == dict(profile.apis)
    assert result.fallback_release == "0.9.0" and result.used_fallback
    assert result.transcript.fallback_release == "0.9.0"
    assert result.response is None and result.api_versions_version is None
    assert "fallback-release" in result.flags
    assert any("0.9.0" in note for note in result.transcript.notes)
    assert run.final.needs_new_connection


def test_close_at_v0_after_the_broker_answered_is_not_an_old_broker() -> None:
    hs = play(SCENARIOS[(Rc, E.CONNECTION_CLOSED, "closed-after-reply")])
    error = fail_of(hs).error
    assert type(error) is TransportError
    assert "not too old" in str(error)


def test_one_connection_only_means_no_reconnect() -> None:
    run = drive(ApiVersionsHandshake(HandshakeConfig(max_connections=1)), lambda v, c: Close)
    error = failure(run, TransportError)
    assert "max_connections" in str(error)
    assert run.sent_versions == [CODEC_MAX]


def test_silence_is_a_timeout_not_a_downgrade() -> None:
    run = drive(ApiVersionsHandshake(), lambda v, c: Silence)
    error = failure(run, KafkaTimeoutError)
    assert run.sent_versions == [CODEC_MAX]
    assert error.transcript.versions_tried == (CODEC_MAX,)
    assert "silence" in str(error)
    assert run.final.close_connection


def test_a_connect_timeout_is_a_timeout_with_nothing_to_close() -> None:
    hs = ApiVersionsHandshake()
    hs.timed_out()
    action = fail_of(hs)
    assert isinstance(action.error, KafkaTimeoutError) and not action.close_connection
    assert hs.transcript.connections == 0 and hs.transcript.attempts[0].connection == 1


@pytest.mark.parametrize(("answer", "word"), [(TLS_ALERT, "TLS"), (HTTP_REPLY, "HTTP")])
def test_tls_or_http_bytes_mean_the_wrong_port_or_protocol(answer: bytes, word: str) -> None:
    run = drive(ApiVersionsHandshake(), lambda v, c: answer)
    error = failure(run, WrongProtocolError)
    assert word in str(error)
    assert run.final.close_connection
    assert run.sent_versions == [CODEC_MAX]


def test_tls_bytes_inside_a_plausible_frame_are_still_a_wrong_protocol() -> None:
    hs = play(Scenario(TO_RECEIVE))
    hs.received_frame(bytes.fromhex("16030100"))  # too short for a reply, but a TLS record
    assert type(fail_of(hs).error) is WrongProtocolError


def test_invalid_request_names_the_software_fields_and_closes() -> None:
    config = HandshakeConfig(client_software_name="my-app", client_software_version="1.2")
    run = drive(ApiVersionsHandshake(config), lambda v, c: body(0, INVALID_REQUEST))
    error = failure(run, InvalidRequestError)
    assert isinstance(error, BrokerRejectedError)
    assert (error.error_code, error.error_name) == (INVALID_REQUEST, "INVALID_REQUEST")
    assert "my-app" in str(error) and "1.2" in str(error)
    assert run.final.close_connection


def test_invalid_request_below_v3_does_not_blame_fields_that_were_not_sent() -> None:
    hs = play(Scenario(TO_RECEIVE, {"max_version": 2}))
    hs.received(body(0, INVALID_REQUEST))
    assert "kafkacompat" not in str(fail_of(hs).error).split("client id")[0]


def test_any_other_error_code_is_named() -> None:
    run = drive(ApiVersionsHandshake(), lambda v, c: body(v, CLUSTER_AUTHORIZATION_FAILED))
    error = failure(run, BrokerRejectedError)
    assert error.error_name == "CLUSTER_AUTHORIZATION_FAILED"
    assert "CLUSTER_AUTHORIZATION_FAILED" in str(error)


def test_a_broker_refusing_the_version_it_advertises_fails_at_once() -> None:
    hostile = lambda v, c: body(0, UNSUPPORTED_VERSION, ((18, 0, CODEC_MAX),))  # noqa: E731
    run = drive(ApiVersionsHandshake(), hostile)
    error = failure(run, UnsupportedVersionError)
    assert run.sent_versions == [CODEC_MAX]
    assert "refused-advertised-version" in error.transcript.flags


def test_a_broker_that_keeps_lowering_its_range_ends_at_v0() -> None:
    def always_one_lower(version: int, connection: int) -> Answer:
        return body(0, UNSUPPORTED_VERSION, ((18, 0, version - 1),) if version else ())

    run = drive(ApiVersionsHandshake(), always_one_lower)
    failure(run, UnsupportedVersionError)
    assert run.sent_versions == list(range(CODEC_MAX, -1, -1))
    assert len(run.actions) <= 2 * (CODEC_MAX + 1) + 2


def test_a_broker_needing_a_newer_api_versions_than_the_codec_says_so() -> None:
    newer = (CODEC_MAX + 1, CODEC_MAX + 3)
    run = drive(ApiVersionsHandshake(), lambda v, c: body(0, UNSUPPORTED_VERSION, ((18, *newer),)))
    error = failure(run, UnsupportedVersionError)
    assert f"up to v{CODEC_MAX}" in str(error)


def test_tansu_like_answer_outside_the_advertised_range_is_accepted_and_flagged() -> None:
    assert ok(3, (0, 3)) == ok(4, (0, 3)), "v3 and v4 replies share a layout"
    run = drive(ApiVersionsHandshake(), lambda v, c: ok(min(v, 3), (0, 3)))
    result = success(run)
    assert run.sent_versions == [CODEC_MAX]
    assert "answered-unadvertised-version" in result.flags


def test_tansu_advertising_what_it_answers_is_not_flagged() -> None:
    result = success(drive(ApiVersionsHandshake(), lambda v, c: ok(min(v, 3), (0, CODEC_MAX))))
    assert result.flags == ()


def test_librdkafka_mock_refusal_with_a_zero_count_is_read_for_its_one_entry() -> None:
    for version in (CODEC_MAX, 0):
        with pytest.raises(DecodeError):
            R.decode(MOCK_V3_BODY, version)

    def mock(version: int, connection: int) -> Answer:
        return MOCK_V3_BODY if version >= 3 else ok(version, (0, 2))

    run = drive(ApiVersionsHandshake(), mock)
    result = success(run)
    assert run.sent_versions == [CODEC_MAX, 2]  # the range its one entry names, not v0
    assert "zero-count-unsupported-version-reply" in result.flags


def test_other_unreadable_refusals_led_by_error_35_still_retry_v0() -> None:
    broken = MOCK_V3_BODY[:-1]  # one byte short: not the mock's shape any more

    def peer(version: int, connection: int) -> Answer:
        return broken if version >= 3 else ok(version, (0, 2))

    run = drive(ApiVersionsHandshake(), peer)
    result = success(run)
    assert run.sent_versions == [CODEC_MAX, 0]
    assert "unreadable-unsupported-version-reply" in result.flags


def test_an_unreadable_reply_fails_with_a_decode_error() -> None:
    run = drive(ApiVersionsHandshake(), lambda v, c: b"\x00\x00\x00")
    error = failure(run, DecodeError)
    assert error.what == "ApiVersionsResponse" and error.version == CODEC_MAX
    assert run.final.close_connection and run.sent_versions == [CODEC_MAX]


def test_a_reply_for_another_request_fails() -> None:
    error = fail_of(play(SCENARIOS[(Rc, E.RECEIVED, "correlation-mismatch")])).error
    assert type(error) is ProtocolError and "77" in str(error)


def test_a_connect_failure_is_a_transport_error() -> None:
    hs = ApiVersionsHandshake()
    hs.connect_failed("connection refused")
    action = fail_of(hs)
    assert type(action.error) is TransportError and "connection refused" in str(action.error)
    assert not action.close_connection


# -- the result -------------------------------------------------------------------------


def test_result_carries_features_epoch_and_throttle_read_only() -> None:
    reply = body(
        CODEC_MAX,
        0,
        ((18, 0, CODEC_MAX), (0, 3, 11)),
        throttle_time_ms=25,
        supported_features=[R.SupportedFeatureKey(name="metadata.version", min_version=1, max_version=20)],
        finalized_features_epoch=7,
        finalized_features=[
            R.FinalizedFeatureKey(name="metadata.version", min_version_level=1, max_version_level=14)
        ],
    )
    result = success(drive(ApiVersionsHandshake(), lambda v, c: reply))
    assert result.supported_features == {"metadata.version": VersionRange(1, 20)}
    assert result.finalized_features == {"metadata.version": VersionRange(1, 14)}
    assert (result.finalized_features_epoch, result.throttle_time_ms) == (7, 25)
    assert result.response == R.decode(reply, CODEC_MAX)
    for mapping in (result.api_ranges, result.supported_features, result.finalized_features):
        with pytest.raises(TypeError):
            mapping[0] = VersionRange(0, 0)  # type: ignore[index]
    with pytest.raises(AttributeError):
        result.throttle_time_ms = 0  # type: ignore[misc]


def test_duplicate_api_keys_keep_the_first_and_are_flagged() -> None:
    reply = body(CODEC_MAX, 0, ((18, 0, CODEC_MAX), (0, 0, 9), (0, 0, 3)))
    result = success(drive(ApiVersionsHandshake(), lambda v, c: reply))
    assert result.api_ranges[0] == VersionRange(0, 9)
    assert "duplicate-api-keys" in result.flags


def test_transcript_describes_and_serialises_every_attempt() -> None:
    result = success(drive(ApiVersionsHandshake(node="b:1"), kafka((0, 3))))
    data = result.transcript.to_dict()
    assert [a["version"] for a in data["attempts"]] == [CODEC_MAX, 3]
    assert data["round_trips"] == 2 and data["node"] == "b:1"
    text = result.transcript.describe()
    assert f"ApiVersions v{CODEC_MAX}" in text and "2 round trip(s), 1 connection(s)" in text


# -- configuration ----------------------------------------------------------------------


def test_the_first_version_is_the_codecs_highest_and_carries_the_software_fields() -> None:
    from kafkacompat import __version__

    run = drive(ApiVersionsHandshake(), kafka((0, CODEC_MAX)))
    (request,) = run.requests
    assert request.header.request_api_version == CODEC_MAX
    assert request.body.client_software_name == "kafkacompat"
    assert request.body.client_software_version == __version__
    assert request.header.client_id == "kafkacompat"


def test_a_lower_configured_max_starts_there_without_software_fields() -> None:
    run = drive(ApiVersionsHandshake(HandshakeConfig(max_version=2)), kafka((0, CODEC_MAX)))
    assert run.sent_versions == [2]
    assert run.requests[0].body_bytes == b""
    assert success(run).api_versions_version == 2


@pytest.mark.parametrize("bad", [CODEC_MAX + 1, -1, True, "4"])
def test_a_max_version_the_codec_cannot_write_is_refused_at_configuration(bad: Any) -> None:
    with pytest.raises(HandshakeConfigError):
        HandshakeConfig(max_version=bad)
    with pytest.raises(ValueError):  # also a ValueError, for callers that expect one
        HandshakeConfig(max_version=bad)


def test_zero_connections_is_refused() -> None:
    with pytest.raises(HandshakeConfigError):
        HandshakeConfig(max_connections=0)


@pytest.mark.parametrize("name", ["my app", "-app", "app-", "", "app_1", "app/1"])
def test_software_names_kafka_rejects_warn_and_are_noted(name: str) -> None:
    with pytest.warns(ClientSoftwareWarning, match="pattern"):
        config = HandshakeConfig(client_software_name=name)
    hs = ApiVersionsHandshake(config)
    assert any(repr(name) in note for note in hs.transcript.notes)
    hs.connected()
    assert isinstance(hs.next_action(), SendRequest)  # sent anyway: a warning, not a refusal


@pytest.mark.parametrize("name", ["a", "kafkacompat", "my-app.v2", "A1-b.C"])
def test_software_names_kafka_accepts_do_not_warn(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = HandshakeConfig(client_software_name=name, client_software_version="1.0-rc1")
    assert ApiVersionsHandshake(config).transcript.notes == ()


def test_software_fields_that_are_never_sent_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HandshakeConfig(max_version=2, client_software_name="not valid")


def test_an_unknown_fallback_release_is_refused_at_configuration() -> None:
    with pytest.raises(HandshakeConfigError, match=r"0\.9\.0"):  # the message lists known ones
        HandshakeConfig(fallback_release="0.7")
    with pytest.raises(HandshakeConfigError):
        HandshakeConfig(fallback_release="0.9.0", fallback_kind="zookeeper")


def test_release_ranges_reads_the_reference_table() -> None:
    ranges = release_ranges("0.10.0")
    (profile,) = [p for p in RELEASES if p.release == "0.10.0" and p.kind == "zk-broker"]
    assert {k: (r.lowest, r.highest) for k, r in ranges.items()} == dict(profile.apis)
    with pytest.raises(TypeError):
        ranges[0] = VersionRange(0, 0)  # type: ignore[index]


def test_correlation_ids_count_up_from_the_first_and_wrap() -> None:
    hs = ApiVersionsHandshake(first_correlation_id=2**31 - 1)
    hs.connected()
    first = send_of(hs)
    assert first.correlation_id == 2**31 - 1
    assert decode_request(first.frame[4:]).header.correlation_id == 2**31 - 1
    hs.request_sent()
    hs.received_frame(first.correlation_id.to_bytes(4, "big", signed=True) + NAMES_V3)
    assert send_of(hs).correlation_id == 0
    assert hs.next_correlation_id == 1
    with pytest.raises(HandshakeConfigError):
        ApiVersionsHandshake(first_correlation_id=2**31)


def test_next_action_has_no_side_effect() -> None:
    hs = ApiVersionsHandshake()
    hs.connected()
    assert hs.next_action() is hs.next_action()
    assert hs.next_correlation_id == 1


def test_an_entry_with_its_minimum_above_its_maximum_is_reported_and_not_listed() -> None:
    hs = ApiVersionsHandshake(HandshakeConfig(max_version=3), node="b")
    hs.connected()
    hs.request_sent()
    body = ApiVersionsResponse(
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=3),
                  ApiVersionsResponse.ApiVersion(api_key=3, min_version=9, max_version=2)]
    ).encode(3)
    hs.received(body)
    done = hs.next_action()
    assert isinstance(done, Done)
    (attempt,) = done.result.transcript.attempts
    assert "impossible-ranges" in attempt.flags and "minimum above maximum for API keys 3" in attempt.detail
    capabilities = BrokerCapabilities.from_handshake(done.result)
    assert not capabilities.lists_api(3)
