"""The setup clock every driver shares: each step's deadline, computed from the ``now`` it is given.

The rules were written three times, once per driver; they are the connection's
now, so they are held here with a number for a clock: a fresh deadline per
request written, ``connect_timeout`` per socket, the quiet period only while
the request's deadline is ahead, one deadline for all the pieces of a reply,
and an answer decoded past its deadline failing as a timeout.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from kafkacompat.connection.client_connection import (
    ClientConnection,
    OpenSocket,
    Read,
    Ready,
    SetupFailed,
    Write,
    setup_budget,
)
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import (
    AuthenticationError,
    ConfigError,
    KafkaTimeoutError,
    SilentPeerError,
    TransportError,
)
from kafkacompat.negotiation.handshake import HandshakeConfig
from kafkacompat.protocol.broker_framing import decode_request, encode_response
from kafkacompat.protocol.messages import ApiVersionsResponse

CONFIG = ConnectionConfig(connect_timeout=3, request_timeout=20, handshake=HandshakeConfig(quiet_period=0.25))
NO_FIRST_CONTACT = dataclasses.replace(CONFIG, first_contact_timeout=None)
ROW = ApiVersionsResponse.ApiVersion


def answer(request: bytes) -> bytes:
    header = decode_request(request[4:]).header
    reply = ApiVersionsResponse(api_keys=[ROW(api_key=18, max_version=4), ROW(api_key=3, max_version=12)])
    return encode_response(reply, header.request_api_version, header.correlation_id)


def at_first_read(config: ConnectionConfig = CONFIG) -> tuple[ClientConnection, bytes]:
    """A connection whose ApiVersions request was written at t=100; the request's bytes."""
    client = ClientConnection(config, node="b:1")
    assert client.next_step(99.0).action == OpenSocket(1)
    client.connected()
    write = client.next_step(100.0)
    assert isinstance(write.action, Write)
    client.written()
    return client, write.action.data


def test_a_socket_gets_connect_timeout_and_a_request_a_fresh_request_timeout() -> None:
    client = ClientConnection(CONFIG, node="b:1")
    step = client.next_step(10.0)
    assert step.action == OpenSocket(1) and step.ends_by == 13.0 and not step.quiet
    client.connected()
    write = client.next_step(11.0)
    assert isinstance(write.action, Write) and write.ends_by == 31.0


def test_a_read_is_quiet_only_while_the_request_deadline_is_ahead() -> None:
    client, _ = at_first_read()
    read = client.next_step(100.5)
    assert isinstance(read.action, Read) and (read.ends_by, read.quiet) == (100.75, True)
    late, _ = at_first_read(NO_FIRST_CONTACT)
    step = late.next_step(119.9)  # the quiet period would end past the request's deadline
    assert (step.ends_by, step.quiet) == (120.0, False)


def test_the_same_action_keeps_its_step_whatever_the_clock_says() -> None:
    client, request = at_first_read()
    first = client.next_step(100.0)
    client.receive_data(answer(request)[:5])  # a piece of the reply: still the same read
    assert client.next_step(100.2) is first


def test_a_quiet_step_that_expires_writes_the_probe_on_the_same_deadline() -> None:
    client, _ = at_first_read()
    client.next_step(100.0)
    client.step_expired()  # quiet: the Metadata v0 probe
    probe = client.next_step(100.25)
    assert isinstance(probe.action, Write) and probe.action.what == "the Metadata v0 probe"
    assert probe.ends_by == 120.0  # the probe shares ApiVersions' deadline
    client.written()
    assert not client.next_step(101.0).quiet  # one probe per connection


def test_an_expired_deadline_times_the_handshake_out() -> None:
    never_quiet = ConnectionConfig(request_timeout=20, handshake=HandshakeConfig(quiet_period=None))
    client, _ = at_first_read(never_quiet)
    assert not client.next_step(100.0).quiet
    client.step_expired()
    failed = client.next_step(120.0).action
    assert isinstance(failed, SetupFailed) and isinstance(failed.error, KafkaTimeoutError)


def test_an_answer_decoded_past_its_deadline_fails_the_setup_as_a_timeout() -> None:
    client, request = at_first_read()
    client.next_step(100.0)
    client.receive_data(answer(request))
    assert isinstance(client.next_action(), Ready)  # what the bytes said ...
    failed = client.next_step(120.5).action  # ... but they were decoded too late
    assert isinstance(failed, SetupFailed) and isinstance(failed.error, KafkaTimeoutError)
    assert "timed out while reading the answer to ApiVersions v5" in str(failed.error)
    assert failed.error.transcript is not None
    in_time, request = at_first_read()
    in_time.next_step(100.0)
    in_time.receive_data(answer(request))
    assert isinstance(in_time.next_step(119.5).action, Ready)


def test_the_overall_deadline_bounds_every_step() -> None:
    client = ClientConnection(CONFIG, node="b:1")
    assert client.next_step(0.0, overall=2.0).ends_by == 2.0
    client.connected()
    assert client.next_step(1.0, overall=2.0).ends_by == 2.0
    client.written()
    step = client.next_step(1.9, overall=2.0)
    assert (step.ends_by, step.quiet) == (2.0, False)  # no quiet period past it


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (KafkaTimeoutError("slow"), KafkaTimeoutError),  # the handshake judges: no retry on silence
        (TransportError("refused"), TransportError),  # the handshake judges: unreachable
        (AuthenticationError("certificate verify failed"), AuthenticationError),  # not its to judge
    ],
)
def test_a_failed_open_is_judged_by_its_kind(error: Exception, outcome: type[Exception]) -> None:
    client = ClientConnection(CONFIG, node="b:1")
    client.next_step(0.0)
    client.open_failed(error)  # type: ignore[arg-type]
    failed = client.next_step(1.0).action
    assert isinstance(failed, SetupFailed) and type(failed.error) is outcome
    assert failed.error.transcript is not None and failed.error.node == "b:1"


def test_ready_and_failed_steps_have_no_deadline() -> None:
    client, request = at_first_read()
    client.next_step(100.0)
    client.receive_data(answer(request))
    assert client.next_step(100.1).ends_by == math.inf


# -- first contact: a peer silent since its first request is named silent, in a few seconds ----------


def test_a_silent_peer_is_named_when_its_first_contact_deadline_passes() -> None:
    client, _ = at_first_read()  # first_contact_timeout 5 s, request_timeout 20 s, written at t=100
    client.next_step(100.0)
    client.step_expired()  # quiet: the Metadata v0 probe goes on the same connection
    client.next_step(100.25)
    client.written()
    read = client.next_step(100.3)
    assert (read.ends_by, read.quiet) == (105.0, False)  # five seconds from the first request
    client.step_expired()
    failed = client.next_step(105.0).action
    assert isinstance(failed, SetupFailed) and type(failed.error) is SilentPeerError
    assert failed.error.waited == 5.0 and "answered nothing in 5 s" in str(failed.error)
    assert "ApiVersions v5, then Metadata v0" in str(failed.error) and failed.error.node == "b:1"


def test_one_byte_back_lifts_the_first_contact_deadline() -> None:
    client, request = at_first_read(dataclasses.replace(CONFIG, handshake=HandshakeConfig(quiet_period=None)))
    assert client.next_step(100.0).ends_by == 105.0
    client.receive_data(answer(request)[:3])  # a slow broker's first bytes, at 104.9: not silent
    step = client.next_step(104.9)
    assert step.ends_by == 120.0  # the rest of its reply has the request's deadline
    client.step_expired()
    failed = client.next_step(120.0).action
    assert isinstance(failed, SetupFailed) and type(failed.error) is KafkaTimeoutError


def test_without_a_first_contact_deadline_silence_is_named_at_the_request_deadline() -> None:
    never_quiet = dataclasses.replace(NO_FIRST_CONTACT, handshake=HandshakeConfig(quiet_period=None))
    client, _ = at_first_read(never_quiet)
    assert client.next_step(100.0).ends_by == 120.0
    client.step_expired()
    failed = client.next_step(120.0).action
    assert isinstance(failed, SetupFailed) and type(failed.error) is SilentPeerError
    assert "in 20 s (ApiVersions v5); a Kafka broker 0.10 or later" in str(failed.error)


def test_silence_cut_short_by_the_drivers_deadline_is_a_plain_timeout() -> None:
    client, _ = at_first_read()
    step = client.next_step(100.3, overall=101.0)
    assert (step.ends_by, step.quiet) == (100.55, True)
    client.step_expired()
    client.next_step(100.55, overall=101.0)
    client.written()
    assert client.next_step(100.6, overall=101.0).ends_by == 101.0  # the caller's, before the 5 s
    client.step_expired()
    failed = client.next_step(101.0).action
    assert isinstance(failed, SetupFailed) and type(failed.error) is KafkaTimeoutError


def test_each_socket_has_its_own_first_contact() -> None:
    """A peer that closes at v5 is reconnected at v3: the new socket's silence counts afresh."""
    client, _ = at_first_read()
    client.next_step(100.0)
    client.closed()  # closed at v5: one flexible version lower, on a new socket
    assert isinstance(client.next_step(103.0).action, OpenSocket)
    client.connected()
    client.next_step(103.5)
    client.written()
    client.next_step(103.6)
    client.step_expired()  # quiet
    client.next_step(103.85)
    client.written()
    assert client.next_step(104.0).ends_by == 108.5


def test_a_setup_budget_is_the_call_timeout_unless_given() -> None:
    assert setup_budget(CONFIG, None) == CONFIG.call_timeout
    assert setup_budget(CONFIG, 2) == 2.0
    for bad in (0, -1, math.inf, math.nan, True, "5"):
        with pytest.raises(ConfigError):
            setup_budget(CONFIG, bad)  # type: ignore[arg-type]
