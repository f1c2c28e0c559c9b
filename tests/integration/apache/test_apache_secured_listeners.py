"""SCRAM and PLAIN logins and TLS verification on real Apache Kafka, through kafkacompat's three drivers.

Every cluster of ``CI_SET`` has a SASL_PLAINTEXT listener (PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512, users created the way its release allows)
and an SSL listener whose certificate for 127.0.0.1 is signed by a CA made for
that cluster.  Each driver (trio ``kafkacompat.connect``, asyncio
``kafkacompat.aio.connect``, the blocking connection) must log in with both
SCRAM mechanisms and read Metadata, be refused with ``AuthenticationError``
for a wrong password and for an unknown user, verify the broker's certificate
against the cluster's CA and refuse it against another CA.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio
import trustme

import kafkacompat
import kafkacompat.aio
from kafkacompat.blocking.connection import open_blocking_connection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig, Secret, TlsConfig
from kafkacompat.errors import AuthenticationError, KafkaCompatError, WrongProtocolError
from kafkacompat.protocol.messages import MetadataRequest, MetadataResponse
from kafkacompat.testing import ApacheKafka
from tests.integration.apache.conftest import USERS
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
DRIVERS = ("trio", "asyncio", "blocking")
DEADLINE = 30.0


def _config(**security: object) -> ConnectionConfig:
    return ConnectionConfig(connect_timeout=5.0, request_timeout=10.0, **security)  # type: ignore[arg-type]


def _ports(endpoints: list[tuple[int, str, int]]) -> set[int]:
    return {port for _, _, port in endpoints}


async def _trio_metadata(address: str, config: ConnectionConfig) -> MetadataResponse:
    with trio.fail_after(DEADLINE):
        async with kafkacompat.connect(address, config) as cluster:
            return await cluster.request(None, MetadataRequest(topics=[]))


def _asyncio_metadata(address: str, config: ConnectionConfig) -> MetadataResponse:
    async def run() -> MetadataResponse:
        async with asyncio.timeout(DEADLINE), kafkacompat.aio.connect(address, config) as cluster:
            return await cluster.request(None, MetadataRequest(topics=[]))

    return asyncio.run(run())


def _blocking_metadata(address: str, config: ConnectionConfig) -> MetadataResponse:
    host, port = address.rsplit(":", 1)
    with open_blocking_connection(host, int(port), config, timeout=DEADLINE) as conn:
        return conn.request(MetadataRequest(topics=[]))


async def metadata_through(driver: str, address: str, config: ConnectionConfig) -> MetadataResponse:
    """Metadata from ``address`` through ``driver``; the asyncio and blocking ones run in a thread."""
    if driver == "trio":
        return await _trio_metadata(address, config)
    run: Callable[[str, ConnectionConfig], MetadataResponse] = (
        _asyncio_metadata if driver == "asyncio" else _blocking_metadata
    )
    return await trio.to_thread.run_sync(run, address, config)


async def refused(call: Awaitable[MetadataResponse]) -> KafkaCompatError:
    try:
        await call
    except BaseException as exc:  # unwrapped and checked below
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        assert isinstance(exc, KafkaCompatError), repr(exc)
        return exc
    pytest.fail("the broker let the connection in")


@pytest.mark.parametrize("driver", DRIVERS)
async def test_scram_logins(apache_cluster: ApacheKafka, driver: str) -> None:
    address = apache_cluster.sasl_bootstrap
    assert address is not None
    (user, password), (_other, other_password) = USERS.items()
    for mechanism in SCRAM:
        login = _config(sasl=SaslConfig(mechanism, user, Secret(password)))
        response = await metadata_through(driver, address, login)
        # The SASL listener names the brokers by their SASL listeners.
        assert {b.port for b in response.brokers} == _ports(apache_cluster.sasl_endpoints)
    # Refusals, one mechanism each (a login costs a SCRAM exchange): another user's password,
    # and a user the cluster does not have.
    wrong = _config(sasl=SaslConfig(SCRAM[0], user, Secret(other_password)))
    error = await refused(metadata_through(driver, address, wrong))
    assert isinstance(error, AuthenticationError), repr(error)
    assert other_password not in str(error)
    stranger = _config(sasl=SaslConfig(SCRAM[1], "mallory", Secret(password)))
    assert isinstance(await refused(metadata_through(driver, address, stranger)), AuthenticationError)


@pytest.mark.parametrize("driver", DRIVERS)
async def test_tls_is_verified(apache_cluster: ApacheKafka, driver: str, tmp_path: Path) -> None:
    address, ca_file = apache_cluster.ssl_bootstrap, apache_cluster.ssl_ca_file
    assert address is not None and ca_file is not None
    response = await metadata_through(driver, address, _config(tls=TlsConfig(ca_file=ca_file)))
    assert {b.port for b in response.brokers} == _ports(apache_cluster.ssl_endpoints)
    stranger = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(stranger))
    error = await refused(metadata_through(driver, address, _config(tls=TlsConfig(ca_file=stranger))))
    assert isinstance(error, AuthenticationError), repr(error)
    assert "certificate verification failed" in str(error)
    misnamed = TlsConfig(ca_file=ca_file, server_hostname="kafka.example.com")
    error = await refused(metadata_through(driver, address, _config(tls=misnamed)))
    assert isinstance(error, AuthenticationError) and "kafka.example.com" in str(error), repr(error)


@pytest.mark.parametrize("driver", DRIVERS)
async def test_plaintext_to_the_ssl_listener_is_named_a_tls_listener(
    apache_cluster: ApacheKafka, driver: str
) -> None:
    """Issue 27's first contact against the real thing: Kafka's SSL listener, reached without TLS,
    is named a TLS listener (from its own TLS answer, or the ClientHello asked after its closes),
    on every driver, at once and without a retry."""
    address = apache_cluster.ssl_bootstrap
    assert address is not None
    started = time.monotonic()
    error = await refused(metadata_through(driver, address, _config()))
    took = time.monotonic() - started
    assert isinstance(error, WrongProtocolError) and error.kind == "tls", repr(error)
    assert str(error).startswith("TLS listener: the peer answered with a TLS record")
    assert took < 5.0, took


async def test_plain_login_through_the_cli(
    apache_cluster: ApacheKafka, cli: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = apache_cluster.sasl_bootstrap
    assert address is not None and address != apache_cluster.bootstrap
    login = ("--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password-env", "ALICE_PASSWORD")
    monkeypatch.setenv("ALICE_PASSWORD", USERS["alice"])
    good = await cli("coordinators", address, "--group", "g", *login, *FAST)
    assert good.code == 0, good.output
    monkeypatch.setenv("ALICE_PASSWORD", "wrong")
    bad = await cli("coordinators", address, "--group", "g", *login, *FAST)
    assert bad.code != 0 and "Authentication" in bad.output, bad.output
