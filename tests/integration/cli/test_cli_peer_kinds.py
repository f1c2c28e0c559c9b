"""The wrong peer is named within a few seconds by default: a web server, a silent port, TLS, a text server.

Each peer is real (``tests.support.wrong_peers``): Python's ``http.server``, a
listener that accepts and says nothing, a TLS listener (``ssl`` with a trustme
certificate), and a text server that answers a line only once it has read one;
and the emulator, which must be inspected as before.  Options are the defaults (no ``--timeout``), as a
new user types them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafkacompat.testing import ThreadedCluster
from tests.integration.cli.cli_runner import Runner
from tests.support import wrong_peers

FEW_SECONDS = 8.0  # a silent port is named after first_contact_timeout (5 s); the rest is slack for load


@pytest.fixture
def web_server() -> Iterator[str]:
    with wrong_peers.web_server() as address:
        yield address


@pytest.fixture
def silent_port() -> Iterator[str]:
    with wrong_peers.silent_port() as address:
        yield address


@pytest.fixture
def tls_listener() -> Iterator[str]:
    with wrong_peers.tls_listener() as (address, _):
        yield address


@pytest.fixture
def line_server() -> Iterator[str]:
    """Answers ``-ERR unknown command`` to a line, as Redis and many text protocols do; silent before."""
    with wrong_peers.text_server() as address:
        yield address


async def _inspect(cli: Runner, address: str) -> tuple[str, float]:
    started = time.monotonic()
    result = await cli("inspect", address)
    elapsed = time.monotonic() - started
    assert result.code == 1, result.output
    assert len(result.stderr.splitlines()) == 1 and len(result.stderr) < 220, result.stderr
    return result.stderr, elapsed


async def test_a_web_server_is_named(cli: Runner, web_server: str) -> None:
    line, elapsed = await _inspect(cli, web_server)
    assert "not a Kafka broker: the peer answered in HTTP" in line and elapsed < FEW_SECONDS


async def test_a_text_server_that_waits_for_a_line_is_named(cli: Runner, line_server: str) -> None:
    line, elapsed = await _inspect(cli, line_server)
    assert 'the peer answered in text ("-ERR unknown command")' in line and elapsed < FEW_SECONDS


async def test_a_tls_listener_is_named_with_the_flag_to_add(cli: Runner, tls_listener: str) -> None:
    line, elapsed = await _inspect(cli, tls_listener)
    assert "TLS listener: the peer answered with a TLS record" in line and "add --tls" in line
    assert elapsed < FEW_SECONDS
    assert "fallback" not in line


async def test_a_silent_port_is_said_to_be_silent(cli: Runner, silent_port: str) -> None:
    line, elapsed = await _inspect(cli, silent_port)
    assert "no answer: the peer accepted the connection but answered nothing" in line
    assert "--tls" not in line and elapsed < FEW_SECONDS


async def test_a_given_timeout_is_waited_out_for_a_silent_peer(cli: Runner, silent_port: str) -> None:
    started = time.monotonic()
    result = await cli("inspect", silent_port, "--timeout", "6", "--retries", "1")
    assert result.code == 1 and time.monotonic() - started >= 5.5, result.output


def test_an_emulated_broker_is_inspected_as_before() -> None:
    from kafkacompat.cli import main

    with ThreadedCluster(["2.8"]) as cluster:
        assert main(["inspect", cluster.bootstrap, "--brief"]) == 0
