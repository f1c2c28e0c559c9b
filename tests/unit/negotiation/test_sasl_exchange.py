"""The sans-I/O SASL exchange: its rules, driven with bytes only."""

from __future__ import annotations

import pytest

from kafkacompat.errors import AuthenticationError, KafkaTimeoutError, PipelineStateError, ProtocolError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.sasl_exchange import (
    MAX_ROUND_TRIPS,
    Authenticated,
    AwaitReply,
    SaslExchange,
    SaslFailed,
    SendBytes,
    sasl_versions,
)
from kafkacompat.protocol import broker_framing, messages
from kafkacompat.protocol.framing import RequestHeaders
from kafkacompat.protocol.versions import VersionRange


class EndlessMechanism:
    """A mechanism that always has one more token to send."""

    name = "PLAIN"
    finished = False

    def initial(self) -> bytes:
        return b"first"

    def step(self, challenge: bytes) -> bytes | None:
        return b"again"


class OneShot:
    name = "PLAIN"

    def __init__(self) -> None:
        self.finished = False

    def initial(self) -> bytes:
        return b"\0alice\0secret"

    def step(self, challenge: bytes) -> bytes | None:
        self.finished = True
        return None


def exchange(mechanism: object, authenticate_version: int | None = 2, first: int = 5) -> SaslExchange:
    return SaslExchange(
        mechanism,  # type: ignore[arg-type]
        username="alice",
        handshake_version=1 if authenticate_version is not None else 0,
        authenticate_version=authenticate_version,
        first_correlation_id=first,
        headers=RequestHeaders("me"),
        node="b:9092",
        redact=lambda text: text.replace("secret", "***"),
    )


def handshake_ok(correlation_id: int, version: int = 1) -> bytes:
    response = messages.SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"])
    return broker_framing.encode_response(response, version, correlation_id)[4:]


def authenticate_reply(correlation_id: int, code: int = 0, message: str | None = None) -> bytes:
    response = messages.SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"")
    return broker_framing.encode_response(response, 2, correlation_id)[4:]


def test_a_plain_login_continues_the_connection_numbering() -> None:
    sasl = exchange(OneShot())
    first = sasl.next_action()
    assert isinstance(first, SendBytes) and first.what == "SaslHandshake v1"
    assert broker_framing.decode_request(first.data[4:]).header.correlation_id == 5
    sasl.sent()
    sasl.received_frame(handshake_ok(5))
    token = sasl.next_action()
    assert isinstance(token, SendBytes) and token.what == "SaslAuthenticate v2"
    sasl.sent()
    sasl.received_frame(authenticate_reply(6))
    done = sasl.next_action()
    assert isinstance(done, Authenticated) and done.authenticate_version == 2
    assert sasl.next_correlation_id == 7


def test_a_refusal_is_redacted() -> None:
    sasl = exchange(OneShot())
    sasl.sent()
    sasl.received_frame(handshake_ok(5))
    sasl.sent()
    sasl.received_frame(authenticate_reply(6, code=58, message="bad password 'secret'"))
    failed = sasl.next_action()
    assert isinstance(failed, SaslFailed) and isinstance(failed.error, AuthenticationError)
    assert "secret" not in str(failed.error) and "SASL_AUTHENTICATION_FAILED" in str(failed.error)


def test_round_trips_are_bounded() -> None:
    sasl = exchange(EndlessMechanism())
    sasl.sent()
    sasl.received_frame(handshake_ok(5))
    for correlation_id in range(6, 6 + MAX_ROUND_TRIPS):
        sasl.sent()
        sasl.received_frame(authenticate_reply(correlation_id))
    failed = sasl.next_action()
    assert isinstance(failed, SaslFailed) and f"{MAX_ROUND_TRIPS} round trips" in str(failed.error)


def test_raw_v0_tokens_and_a_close_that_means_refused() -> None:
    sasl = exchange(OneShot(), authenticate_version=None)
    sasl.sent()
    sasl.received_frame(handshake_ok(5, version=0))
    token = sasl.next_action()
    assert isinstance(token, SendBytes) and token.data == b"\x00\x00\x00\x0d\0alice\0secret"
    sasl.sent()
    sasl.connection_closed()
    failed = sasl.next_action()
    assert isinstance(failed, SaslFailed) and "most likely refused" in str(failed.error)


def test_a_reply_with_another_correlation_id_is_a_protocol_error() -> None:
    sasl = exchange(OneShot())
    sasl.sent()
    sasl.received_frame(handshake_ok(9))
    failed = sasl.next_action()
    assert isinstance(failed, SaslFailed) and isinstance(failed.error, ProtocolError)
    assert "expected 5" in str(failed.error) and failed.error.node == "b:9092"


def test_silence_is_a_timeout_and_events_out_of_turn_are_refused() -> None:
    sasl = exchange(OneShot())
    with pytest.raises(PipelineStateError):
        sasl.received_frame(handshake_ok(5))
    sasl.sent()
    assert isinstance(sasl.next_action(), AwaitReply)
    sasl.timed_out()
    failed = sasl.next_action()
    assert isinstance(failed, SaslFailed) and isinstance(failed.error, KafkaTimeoutError)


def capabilities(ranges: dict[int, tuple[int, int]]) -> BrokerCapabilities:
    from types import SimpleNamespace

    result = SimpleNamespace(api_ranges={k: VersionRange(*v) for k, v in ranges.items()})
    return BrokerCapabilities.from_handshake(result, node="b")


@pytest.mark.parametrize(
    ("ranges", "expected"),
    [({17: (0, 1), 36: (0, 2)}, (1, 2)), ({17: (0, 0)}, (0, None)), ({17: (0, 1), 36: (0, 0)}, (1, 0))],
)
def test_versions_follow_the_broker(
    ranges: dict[int, tuple[int, int]], expected: tuple[int, int | None]
) -> None:
    assert sasl_versions(capabilities(ranges), None) == expected


@pytest.mark.parametrize(
    ("ranges", "match"),
    [({3: (0, 12)}, "does not list SaslHandshake"), ({17: (1, 1)}, "no usable SaslAuthenticate")],
)
def test_brokers_without_usable_versions(ranges: dict[int, tuple[int, int]], match: str) -> None:
    with pytest.raises(AuthenticationError, match=match):
        sasl_versions(capabilities(ranges), None)
