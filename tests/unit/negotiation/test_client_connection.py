"""The sans-I/O client connection, wired to the emulator's sans-I/O brokers in memory."""

from __future__ import annotations

import pytest

from kafkacompat.connection.client_connection import (
    ClientConnection,
    Phase,
    Read,
    Ready,
    SetupFailed,
    Write,
)
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.first_contact import FIRST_CONTACT_CORRELATION_ID
from kafkacompat.connection.sasl import SaslLogin
from kafkacompat.connection.sasl_mechanisms import create_mechanism
from kafkacompat.connection.security import SaslConfig as ClientSasl
from kafkacompat.errors import (
    AuthenticationError,
    BrokerTooOldError,
    KafkaTimeoutError,
    PipelineStateError,
    ProtocolError,
    ReplyTooLargeError,
    TransportError,
    WrongProtocolError,
)
from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION, HandshakeConfig
from kafkacompat.negotiation.pipeline_events import ConnectionFailed, ResponseReceived
from kafkacompat.protocol import messages
from kafkacompat.protocol.broker_framing import decode_request, encode_response
from kafkacompat.testing.emulator import (
    ApiVersionsEra,
    BrokerProfile,
    ClusterState,
    Fault,
    FaultPlan,
    Node,
    SaslConfig,
    release_profiles,
)
from tests.support.memory_wire import MemoryWire, round_trip, set_up

PROFILES = release_profiles()
METADATA = 3


def wire_for(profile: BrokerProfile, **kwargs: object) -> MemoryWire:
    return MemoryWire(ClusterState([Node(1, profile, port=9092)]), **kwargs)  # type: ignore[arg-type]


def profile(release: str) -> BrokerProfile:
    kind = "kraft-broker" if release >= "4" else "zk-broker"
    return next(p for p in PROFILES if p.release == release and p.kind == kind)


def login(mechanism: str, user: str = "alice", password: str = "secret") -> SaslLogin:
    config = ClientSasl(mechanism, user, password)  # type: ignore[arg-type]
    return SaslLogin(lambda: create_mechanism(config), user, lambda text: text.replace(password, "***"))


@pytest.mark.parametrize("broker", PROFILES, ids=lambda p: p.label)
def test_every_release_negotiates_and_answers_metadata(broker: BrokerProfile) -> None:
    wire = wire_for(broker)
    client = ClientConnection(node="b:9092")
    ready = set_up(client, wire)
    assert isinstance(ready, Ready), ready
    assert {k: (r.lowest, r.highest) for k, r in ready.capabilities.api_ranges.items()} == {
        k: (r.lowest, r.highest) for k, r in broker.apis.items()
    }
    # One counter from the first ApiVersions on: no gap, no reuse; the first ends a text line.
    ids = [r.correlation_id for r in wire.records]
    assert ids == list(range(FIRST_CONTACT_CORRELATION_ID, FIRST_CONTACT_CORRELATION_ID + len(ids)))
    if broker.api_versions_era is ApiVersionsEra.ABSENT and broker.release is not None:
        assert ready.handshake.detected_release == broker.release  # named by what it answers
    if METADATA not in broker.apis or broker.kind == "kraft-controller":
        return
    events = round_trip(client, wire, messages.MetadataRequest(topics=[]))
    assert len(events) == 1 and isinstance(events[0], ResponseReceived)
    assert wire.records[-1].api_key == METADATA
    assert wire.records[-1].correlation_id == FIRST_CONTACT_CORRELATION_ID + len(ids)


@pytest.mark.parametrize("release", ["0.10.0", "2.3", "3.9", "4.0"])
def test_reads_cut_at_every_byte_give_the_same_answer(release: str) -> None:
    whole = set_up(ClientConnection(node="b"), wire_for(profile(release)))
    wire = wire_for(profile(release), chunks=lambda size: iter([1] * size))
    client = ClientConnection(node="b")
    bytewise = set_up(client, wire)
    assert isinstance(whole, Ready) and isinstance(bytewise, Ready)
    assert bytewise.capabilities.api_ranges == whole.capabilities.api_ranges
    assert bytewise.handshake.transcript.attempts == whole.handshake.transcript.attempts
    (event,) = round_trip(client, wire, messages.MetadataRequest(topics=[]))
    assert isinstance(event, ResponseReceived)


@pytest.mark.parametrize("release", ["0.8.0", "0.8.1", "0.8.2", "0.9.0"])
def test_a_pre_0_10_broker_is_known_by_what_it_answers(release: str) -> None:
    wire = wire_for(profile(release))
    client = ClientConnection(node="b")
    ready = set_up(client, wire)
    assert isinstance(ready, Ready), ready
    assert ready.handshake.detected_release == release
    assert {k: (r.lowest, r.highest) for k, r in ready.capabilities.api_ranges.items()} == {
        k: (r.lowest, r.highest) for k, r in profile(release).apis.items()
    }
    (event,) = round_trip(client, wire, messages.MetadataRequest(topics=[]))
    assert isinstance(event, ResponseReceived)


def test_a_port_that_closes_everything_is_too_old_or_not_kafka() -> None:
    wire = wire_for(profile("0.8.2"), faults=FaultPlan([Fault.close()]))
    ended = set_up(ClientConnection(node="b"), wire)
    assert isinstance(ended, SetupFailed) and isinstance(ended.error, BrokerTooOldError)
    assert ended.error.transcript is not None


@pytest.mark.parametrize(
    ("release", "mechanism"),
    [("0.10.0", "PLAIN"), ("1.0", "PLAIN"), ("2.0", "SCRAM-SHA-256"), ("3.9", "SCRAM-SHA-512")],
)
def test_sasl_follows_the_handshake_on_one_counter(release: str, mechanism: str) -> None:
    wire = wire_for(profile(release), sasl=SaslConfig({"alice": "secret"}))
    client = ClientConnection(node="b", sasl=login(mechanism))
    ready = set_up(client, wire)
    assert isinstance(ready, Ready), ready
    assert ready.authenticated is not None and ready.authenticated.mechanism == mechanism
    raw = ready.authenticated.authenticate_version is None
    assert raw == (release == "0.10.0")  # SaslHandshake v0 only: raw tokens
    (event,) = round_trip(client, wire, messages.MetadataRequest(topics=[]))
    assert isinstance(event, ResponseReceived)
    framed = [r for r in wire.records if r.api_key != 36 or not raw]
    first = FIRST_CONTACT_CORRELATION_ID
    assert [r.correlation_id for r in framed] == list(range(first, first + len(framed)))
    assert wire.sockets == 1


@pytest.mark.parametrize("release", ["0.10.0", "3.9"])
def test_a_wrong_password_is_an_authentication_error_without_the_password(release: str) -> None:
    wire = wire_for(profile(release), sasl=SaslConfig({"alice": "secret"}))
    ended = set_up(ClientConnection(node="b", sasl=login("PLAIN", password="hunter2")), wire)
    assert isinstance(ended, SetupFailed) and isinstance(ended.error, AuthenticationError)
    assert "hunter2" not in str(ended.error) and "alice" in str(ended.error)
    assert ended.error.node == "b"


def test_a_mechanism_the_broker_does_not_enable_is_named() -> None:
    wire = wire_for(profile("3.9"), sasl=SaslConfig({"alice": "secret"}, mechanisms=("PLAIN",)))
    ended = set_up(ClientConnection(node="b", sasl=login("SCRAM-SHA-256")), wire)
    assert isinstance(ended, SetupFailed) and "enables: PLAIN" in str(ended.error)


def test_a_tls_answer_is_the_wrong_protocol() -> None:
    client = ClientConnection(node="b")
    client.connected()
    client.written()
    client.receive_data(b"\x15\x03\x03\x00\x02\x02\x46")
    ended = client.next_action()
    assert isinstance(ended, SetupFailed) and isinstance(ended.error, WrongProtocolError)
    assert client.phase is Phase.FAILED


@pytest.mark.parametrize(
    ("answer", "kind", "says"),
    [
        (b"-ERR unknown command\r\n", "text", 'the peer answered in text ("-ERR unknown command")'),
        (b"<!DOCTYPE HTML>\n<html lang", "http", "the peer answered in HTTP (<!DOCTYPE HTML>)"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "ssh", "the peer is an SSH server (SSH-2.0-OpenSSH_9.6)"),
    ],
)
def test_a_foreign_answer_to_the_first_request_is_named(answer: bytes, kind: str, says: str) -> None:
    client = ClientConnection(node="b")
    client.connected()
    write = client.next_action()
    assert isinstance(write, Write) and write.data[10:12] == b"\r\n"  # the first id ends a text line
    client.written()
    client.receive_data(answer)
    ended = client.next_action()
    assert isinstance(ended, SetupFailed) and type(ended.error) is WrongProtocolError
    assert ended.error.kind == kind and says in str(ended.error) and ended.error.first_bytes == answer
    assert ended.error.transcript.attempts[-1].outcome == "foreign-protocol"


@pytest.mark.parametrize("then", ["closed", "timed_out"])
def test_less_than_a_frame_of_text_is_named_when_the_peer_stops(then: str) -> None:
    client = ClientConnection(node="b")
    client.connected()
    client.written()
    client.receive_data(b"ok\n")  # three bytes: no size prefix yet
    getattr(client, then)()
    ended = client.next_action()
    assert isinstance(ended, SetupFailed) and type(ended.error) is WrongProtocolError
    assert ended.error.kind == "text"


def test_a_binary_size_above_the_limits_stands_as_itself() -> None:
    """Not recognised as another protocol: the size error stands (and names the ceiling)."""
    client = ClientConnection(node="b")
    client.connected()
    client.written()
    client.receive_data(b"\x7f\xff\xff\xff" + bytes(12))
    ended = client.next_action()
    assert isinstance(ended, SetupFailed) and type(ended.error) is ReplyTooLargeError


def test_an_oversized_reply_is_refused_before_it_is_buffered() -> None:
    client = ClientConnection(ConnectionConfig(max_frame_size=1024), node="b")
    client.connected()
    client.written()
    client.receive_data((4096).to_bytes(4, "big"))
    ended = client.next_action()
    assert isinstance(ended, SetupFailed) and isinstance(ended.error, ProtocolError)
    assert "exceeds the maximum of 1024" in str(ended.error)


def test_silence_during_setup_is_a_timeout_not_a_downgrade() -> None:
    client = ClientConnection(node="b")
    client.connected()
    client.written()
    client.timed_out()
    ended = client.next_action()
    assert isinstance(ended, SetupFailed) and isinstance(ended.error, KafkaTimeoutError)


def test_events_out_of_turn_are_refused() -> None:
    client = ClientConnection(node="b")
    with pytest.raises(PipelineStateError, match="OpenSocket"):
        client.written()
    with pytest.raises(PipelineStateError, match="not ready"):
        client.send(messages.MetadataRequest(topics=[]))


def test_a_close_once_ready_fails_what_is_in_flight() -> None:
    wire = wire_for(profile("3.9"))
    client = ClientConnection(node="b")
    assert isinstance(set_up(client, wire), Ready)
    ticket = client.send(messages.MetadataRequest(topics=[]))
    (event,) = client.closed()
    assert isinstance(event, ConnectionFailed) and event.failed == (ticket,)
    assert client.phase is Phase.CLOSED


def test_an_answer_read_past_its_deadline_ends_as_that_deadline_s_timeout() -> None:
    """``endings(events, now)``: what each caller is told, the same for every driver."""
    wire = wire_for(profile("3.9"))
    client = ClientConnection(node="b:9092")
    assert isinstance(set_up(client, wire), Ready)
    in_time = client.send(messages.MetadataRequest(topics=[]), deadline=10.0)
    too_late = client.send(messages.MetadataRequest(topics=[]), deadline=5.0)
    assert wire.client_writes(client.bytes_to_send())
    events = client.write_done() + client.receive_data(bytes(wire.inbox))
    assert [type(e) for e in events] == [ResponseReceived, ResponseReceived]  # both answered
    told = {id(ticket): (response, error) for ticket, response, error in client.endings(events, now=7.0)}
    response, error = told[id(in_time)]
    assert isinstance(response, messages.MetadataResponse) and error is None
    response, error = told[id(too_late)]  # decoded at 7, past its deadline at 5
    assert isinstance(error, KafkaTimeoutError) and error.node == "b:9092"
    assert "no response to MetadataRequest" in str(error)


def test_a_close_before_any_request_fails_later_requests_with_the_close() -> None:
    wire = wire_for(profile("3.9"))
    client = ClientConnection(node="b")
    assert isinstance(set_up(client, wire), Ready)
    reason = TransportError("the driver closed it", node="b")
    assert client.closed(reason) == []  # nothing was pending: no event, and no pipeline made for it
    assert client.phase is Phase.CLOSED and not client.is_ready
    assert client.failure is reason
    with pytest.raises(TransportError, match="the driver closed it"):
        client.send(messages.MetadataRequest(topics=[]))


def test_a_body_read_into_its_buffer_answers_as_bytes_handed_over_do() -> None:
    """``body_room``/``body_filled`` (a driver's ``recv_into``) end in the same events as ``receive_data``."""
    wire = wire_for(profile("3.9"))
    client = ClientConnection(node="b:9092")
    assert isinstance(set_up(client, wire), Ready)
    assert client.body_room() is None  # nothing under way
    ticket = client.send(messages.MetadataRequest(topics=[]))
    assert wire.client_writes(client.bytes_to_send())
    client.write_done()
    reply = bytes(wire.inbox)
    wire.inbox.clear()
    assert client.receive_data(reply[:5]) == []  # the size prefix and one byte of the body
    room = client.body_room()
    assert room is not None and len(room) == len(reply) - 5
    room[:] = reply[5:]
    del room
    events = client.body_filled(len(reply) - 5)
    assert len(events) == 1 and isinstance(events[0], ResponseReceived) and events[0].ticket is ticket
    again = ClientConnection(node="b:9092")
    wire = wire_for(profile("3.9"))
    assert isinstance(set_up(again, wire), Ready)
    again.send(messages.MetadataRequest(topics=[]))
    assert wire.client_writes(again.bytes_to_send())
    again.write_done()
    (same,) = again.receive_data(bytes(wire.inbox))
    assert isinstance(same, ResponseReceived) and same.response == events[0].response


def _answered_frame(connection: ClientConnection) -> tuple[bytes, int]:
    """The reply to the connection's ApiVersions request, written; and its correlation id."""
    connection.connected()
    request = connection.next_action()
    header = decode_request(request.data[4:]).header  # type: ignore[union-attr]
    connection.written()
    row = messages.ApiVersionsResponse.ApiVersion
    rows = [row(api_key=key, min_version=0, max_version=high) for key, high in ((18, 4), (3, 12))]
    reply = messages.ApiVersionsResponse(api_keys=rows)
    return encode_response(reply, header.request_api_version, header.correlation_id), header.correlation_id


def test_a_frame_after_the_handshake_reply_in_the_same_read_fails_the_ready_connection() -> None:
    connection = ClientConnection(node="h:1")
    reply, correlation_id = _answered_frame(connection)
    stray = encode_response(messages.MetadataResponse(), 0, correlation_id + 7)
    events = connection.receive_data(reply + stray)
    assert isinstance(connection.next_action(), Ready)
    assert [type(event) for event in events] == [ConnectionFailed]
    assert connection.phase is Phase.FAILED and not connection.is_ready


def test_part_of_a_frame_after_the_reply_waits_and_requests_continue_the_handshake_counter() -> None:
    connection = ClientConnection(node="h:1")
    reply, correlation_id = _answered_frame(connection)
    assert connection.receive_data(reply + b"\x00\x00") == []  # two bytes of a size prefix: wait
    assert connection.is_ready and connection.phase is Phase.READY
    ticket = connection.send(messages.MetadataRequest(topics=[]), 0)
    assert ticket.correlation_id == correlation_id + 1


def test_each_connection_reads_with_its_own_configs_quiet_period() -> None:
    for quiet in (1, 1.0, 0.5, None, 1):  # the actions are shared: 1 and 1.0 must stay apart
        config = ConnectionConfig(handshake=HandshakeConfig(quiet_period=quiet))
        connection = ClientConnection(config, node="h:1")
        connection.connected()
        connection.written()
        read = connection.next_action()
        assert isinstance(read, Read) and read.what == f"the answer to ApiVersions v{CODEC_MAX_VERSION}"
        assert read.quiet_period == quiet and type(read.quiet_period) is type(quiet)
