"""SASL through ``open_connection``: Tansu 0.6.0, an in-test scramp server, and a scripted stream.

Tansu 0.6.0 with ``--authentication`` offers SCRAM but holds no users: every
login ends with ``e=unknown-user`` in server-final under error code 0, which
must still be a refusal.  Successful logins and wrong passwords run against
``tests.support.sasl_server`` (scramp's SCRAM server, PLAIN, v1 and raw v0).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig, Secret
from kafkacompat.errors import AuthenticationError, BrokerStartError, KafkaCompatError, KafkaTimeoutError
from kafkacompat.protocol.messages import (
    MetadataRequest,
    MetadataResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.connection import open_connection
from tests.support.sasl_server import run_sasl_server

pytestmark = pytest.mark.broker

USER, PASSWORD, WRONG = "alice", "Wonderland-0xC0FFEE", "Looking-Glass-0xBAD"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
SCRAM = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
DEADLINE = 15


def config(mechanism: str, password: str = PASSWORD, **sasl: object) -> ConnectionConfig:
    return ConnectionConfig(
        connect_timeout=3,
        request_timeout=3,
        sasl=SaslConfig(mechanism, USER, Secret(password), **sasl),  # type: ignore[arg-type]
    )


def unwrap(exc: BaseException) -> BaseException:
    # open_connection runs in a nursery, so its errors may arrive in an ExceptionGroup.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def login(host: str, port: int, cfg: ConnectionConfig) -> list[int]:
    """Open, authenticate, and send Metadata (refused by the server before authentication)."""
    with trio.fail_after(DEADLINE):
        async with open_connection(host, port, cfg) as conn:
            response = await conn.request(MetadataRequest(topics=[]))
    assert isinstance(response, MetadataResponse)
    return [broker.node_id for broker in response.brokers]


async def login_error(host: str, port: int, cfg: ConnectionConfig) -> KafkaCompatError:
    try:
        await login(host, port, cfg)
    except Exception as exc:  # unwrapped and checked just below
        error = unwrap(exc)
        assert isinstance(error, KafkaCompatError), repr(error)
        assert error.node == f"{host}:{port}"
        return error
    pytest.fail("the login succeeded")


# -- Tansu 0.6.0 -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tansu_auth() -> Iterator[TansuBroker]:
    try:
        broker = TansuBroker(extra_args=("--authentication",)).__enter__()
    except BrokerStartError as exc:
        pytest.fail(f"could not start Tansu with --authentication: {exc}", pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.mark.parametrize("mechanism", SCRAM)
async def test_tansu_unknown_user_with_error_code_zero_is_refused(
    tansu_auth: TansuBroker, mechanism: str
) -> None:
    # First what Tansu advertises, by hand: the mechanism is enabled.
    with trio.fail_after(DEADLINE):
        async with open_connection(tansu_auth.host, tansu_auth.port, ConnectionConfig()) as conn:
            reply = await conn.request(SaslHandshakeRequest(mechanism=mechanism), version=1)
    assert isinstance(reply, SaslHandshakeResponse)
    assert (reply.error_code, reply.mechanisms) == (0, [mechanism])

    error = await login_error(tansu_auth.host, tansu_auth.port, config(mechanism))
    assert isinstance(error, AuthenticationError)
    assert "unknown-user" in str(error) and mechanism in str(error)


async def test_tansu_without_plain_closes_on_the_handshake(tansu_auth: TansuBroker) -> None:
    error = await login_error(tansu_auth.host, tansu_auth.port, config("PLAIN"))
    assert isinstance(error, AuthenticationError)
    assert "closed the connection in answer to SaslHandshake" in str(error)


async def test_tansu_without_authentication_refuses_every_mechanism(tansu: TansuBroker) -> None:
    # Without --authentication Tansu answers UNSUPPORTED_SASL_MECHANISM yet lists the mechanism asked.
    error = await login_error(tansu.host, tansu.port, config("SCRAM-SHA-256"))
    assert isinstance(error, AuthenticationError)
    assert "UNSUPPORTED_SASL_MECHANISM" in str(error) and "is SASL enabled" in str(error)


# -- the in-test scramp server --------------------------------------------------------------------


@pytest.mark.parametrize("handshake_max", [1, 0], ids=["SaslAuthenticate", "raw-v0"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_login_and_wrong_password(mechanism: str, handshake_max: int) -> None:
    async with run_sasl_server({USER: PASSWORD}, handshake_max=handshake_max) as server:
        assert await login(server.host, server.port, config(mechanism)) == [1]
        assert server.logins == [(mechanism, USER)]
        error = await login_error(server.host, server.port, config(mechanism, WRONG))
    assert isinstance(error, AuthenticationError)
    if handshake_max:
        assert f"{mechanism} authentication as 'alice' failed: SASL_AUTHENTICATION_FAILED (58)" in str(error)
    else:  # under v0 the broker's only answer is to close
        assert "closed the connection during" in str(error) and "SaslHandshake v0" in str(error)
    assert server.logins == [(mechanism, USER)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_unknown_user(mechanism: str) -> None:
    async with run_sasl_server({"bob": PASSWORD}) as server:
        error = await login_error(server.host, server.port, config(mechanism))
    assert isinstance(error, AuthenticationError) and "SASL_AUTHENTICATION_FAILED" in str(error)


@pytest.mark.parametrize(
    ("fault", "match"),
    [
        ("tamper-signature", "server signature is wrong"),
        ("foreign-nonce", "nonce does not extend the client nonce"),
        ("final-error", "refused SCRAM-SHA-.* authentication: other-error"),
    ],
)
@pytest.mark.parametrize("handshake_max", [1, 0], ids=["SaslAuthenticate", "raw-v0"])
@pytest.mark.parametrize("mechanism", SCRAM)
async def test_scram_broker_misbehaviour_is_refused(
    mechanism: str, handshake_max: int, fault: str, match: str
) -> None:
    async with run_sasl_server({USER: PASSWORD}, fault=fault, handshake_max=handshake_max) as server:
        error = await login_error(server.host, server.port, config(mechanism))
    assert isinstance(error, AuthenticationError)
    assert re.search(match, str(error)), str(error)


@pytest.mark.parametrize("mechanism", SCRAM)
async def test_iteration_count_above_the_cap_is_refused(mechanism: str) -> None:
    async with run_sasl_server({USER: PASSWORD}, iterations=8192) as server:
        error = await login_error(server.host, server.port, config(mechanism, max_scram_iterations=5000))
        assert await login(server.host, server.port, config(mechanism, max_scram_iterations=8192)) == [1]
    assert isinstance(error, AuthenticationError)
    assert "asks for 8192" in str(error) and "maximum of 5000" in str(error)


async def test_mechanism_the_broker_does_not_enable() -> None:
    async with run_sasl_server({USER: PASSWORD}, mechanisms=("SCRAM-SHA-512", "PLAIN")) as server:
        error = await login_error(server.host, server.port, config("SCRAM-SHA-256"))
    assert isinstance(error, AuthenticationError)
    assert "does not enable SASL mechanism SCRAM-SHA-256; it enables: SCRAM-SHA-512, PLAIN" in str(error)


async def test_a_silent_broker_times_out(autojump_clock: trio.testing.MockClock) -> None:
    """The server runs in this loop, so the autojump clock spends the timeout in virtual time."""
    async with run_sasl_server({USER: PASSWORD}, fault="silent") as server:
        cfg = ConnectionConfig(request_timeout=5, sasl=SaslConfig("PLAIN", USER, Secret(PASSWORD)))
        start = trio.current_time()
        error = await login_error(server.host, server.port, cfg)
        elapsed = trio.current_time() - start
    assert isinstance(error, KafkaTimeoutError) and "SaslAuthenticate" in str(error)
    assert 5 <= elapsed < 10  # SaslAuthenticate's own request timeout, on trio's clock


async def test_a_broker_echoing_the_password_is_redacted() -> None:
    async with run_sasl_server({USER: PASSWORD}, fault="echo-password") as server:
        error = await login_error(server.host, server.port, config("PLAIN"))
    assert "with password *** is not allowed" in str(error)
    assert PASSWORD in server.refusals[0]  # the server did echo it


async def test_the_password_never_shows(caplog: pytest.LogCaptureFixture) -> None:
    """Every failure's message, repr and transcript, the config's repr and the logs."""
    caplog.set_level(logging.DEBUG, logger="kafkacompat")
    texts: list[str] = []
    scenarios: list[tuple[dict[str, object], str, str]] = [({}, mechanism, WRONG) for mechanism in MECHANISMS]
    scenarios += [({"fault": f}, m, PASSWORD) for f in ("tamper-signature", "final-error") for m in SCRAM]
    scenarios += [({"fault": "echo-password"}, "PLAIN", PASSWORD), ({"handshake_max": 0}, "PLAIN", WRONG)]
    scenarios += [({"iterations": 8192}, "SCRAM-SHA-256", PASSWORD)]
    for options, mechanism, password in scenarios:
        async with run_sasl_server({USER: PASSWORD}, **options) as server:
            cfg = config(mechanism, password, max_scram_iterations=5000)
            error = await login_error(server.host, server.port, cfg)
            if not options:  # and a successful login, for its debug log line
                await login(server.host, server.port, config(mechanism))
        texts += [str(error), repr(error), repr(error.transcript), repr(cfg), str(cfg)]
    logged = [record.getMessage() for record in caplog.records]
    assert any("authenticated to" in line for line in logged)
    texts += logged
    assert len(texts) > 5 * len(scenarios)
    for text in texts:
        assert PASSWORD not in text and WRONG not in text
