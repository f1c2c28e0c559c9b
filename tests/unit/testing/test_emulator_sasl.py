"""SASL PLAIN and SCRAM on the emulated broker, driven with scramp's client."""

from __future__ import annotations

import pytest
import scramp  # type: ignore[import-untyped]

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kafkacompat.testing.emulator import SaslConfig
from tests.unit.testing.emulator_harness import Close, Harness, Send, cluster, sent

USERS = {"alice": "alice-secret"}


def sasl_harness(
    release: str = "3.9", mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
) -> Harness:
    return Harness(cluster(release), sasl=SaslConfig(USERS, mechanisms))


def test_before_authentication_only_api_versions_and_the_handshake_pass() -> None:
    harness = sasl_harness()
    assert harness.call(ApiVersionsRequest(), 0).error_code == 0
    assert harness.send(MetadataRequest(topics=[]), 9) == [Close()]
    assert harness.records[-1].outcome == "closed: request before SASL authentication"


def test_plain_over_sasl_authenticate() -> None:
    harness = sasl_harness()
    handshake = harness.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert handshake.error_code == 0 and handshake.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    reply = harness.call(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret"), 2)
    assert (reply.error_code, reply.auth_bytes) == (0, b"")
    assert harness.connection.authenticated and harness.connection.user == "alice"
    assert isinstance(harness.send(MetadataRequest(topics=[]), 9)[0], Send)


def test_plain_failure_answers_then_closes() -> None:
    harness = sasl_harness()
    harness.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    actions = harness.send(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00wrong"), 1)
    assert [type(a) for a in actions] == [Send, Close]
    assert "error 58" in harness.records[-1].outcome


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_over_sasl_authenticate(mechanism: str) -> None:
    harness = sasl_harness()
    assert harness.call(SaslHandshakeRequest(mechanism=mechanism), 1).error_code == 0
    client = scramp.ScramClient([mechanism], "alice", "alice-secret")
    first = harness.call(SaslAuthenticateRequest(auth_bytes=client.get_client_first().encode()), 1)
    client.set_server_first(first.auth_bytes.decode())
    final = harness.call(SaslAuthenticateRequest(auth_bytes=client.get_client_final().encode()), 1)
    client.set_server_final(final.auth_bytes.decode())  # raises if the server's proof is wrong
    assert harness.connection.authenticated and harness.connection.user == "alice"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_with_a_wrong_password_fails(mechanism: str) -> None:
    harness = sasl_harness()
    harness.call(SaslHandshakeRequest(mechanism=mechanism), 1)
    client = scramp.ScramClient([mechanism], "alice", "not-it")
    first = harness.call(SaslAuthenticateRequest(auth_bytes=client.get_client_first().encode()), 1)
    client.set_server_first(first.auth_bytes.decode())
    actions = harness.send(SaslAuthenticateRequest(auth_bytes=client.get_client_final().encode()), 1)
    assert [type(a) for a in actions] == [Send, Close] and not harness.connection.authenticated


def test_scram_with_an_unknown_user_fails() -> None:
    harness = sasl_harness()
    harness.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
    client = scramp.ScramClient(["SCRAM-SHA-256"], "mallory", "x")
    actions = harness.send(SaslAuthenticateRequest(auth_bytes=client.get_client_first().encode()), 1)
    assert [type(a) for a in actions] == [Send, Close]


def test_handshake_v0_sends_raw_tokens() -> None:
    harness = sasl_harness("0.10.2")
    assert harness.call(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
    token = b"\x00alice\x00alice-secret"
    actions = harness.connection.receive(len(token).to_bytes(4, "big") + token)
    assert actions == [Send(b"\x00\x00\x00\x00")]  # an empty token, size-prefixed
    assert harness.connection.authenticated
    bad = sasl_harness("0.10.2")
    bad.call(SaslHandshakeRequest(mechanism="PLAIN"), 0)
    assert bad.connection.receive(b"\x00\x00\x00\x03abc") == [Close()]


def test_scram_over_raw_tokens() -> None:
    harness = sasl_harness("0.10.2", ("SCRAM-SHA-256",))
    harness.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 0)
    client = scramp.ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")

    def exchange(token: bytes) -> bytes:
        data = sent(harness.connection.receive(len(token).to_bytes(4, "big") + token))
        assert int.from_bytes(data[:4], "big") == len(data) - 4
        return data[4:]

    client.set_server_first(exchange(client.get_client_first().encode()).decode())
    client.set_server_final(exchange(client.get_client_final().encode()).decode())
    assert harness.connection.authenticated


def test_unsupported_mechanism_and_repeated_handshake() -> None:
    harness = sasl_harness(mechanisms=("SCRAM-SHA-512",))
    actions = harness.send(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert [type(a) for a in actions] == [Send, Close] and "error 33" in harness.records[-1].outcome
    again = sasl_harness()
    again.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert [type(a) for a in again.send(SaslHandshakeRequest(mechanism="PLAIN"), 1)] == [Send, Close]


def test_a_listener_without_sasl_answers_illegal_sasl_state() -> None:
    harness = Harness(cluster("3.9"))
    assert harness.call(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 34
    assert harness.call(SaslAuthenticateRequest(auth_bytes=b"x"), 2).error_code == 34


def test_sasl_config_validation() -> None:
    with pytest.raises(EmulatorConfigError):
        SaslConfig(USERS, ["GSSAPI"])
    with pytest.raises(EmulatorConfigError):
        SaslConfig(USERS, [])
    with pytest.raises(EmulatorConfigError):
        SaslConfig(USERS, scram_iterations=1000)
