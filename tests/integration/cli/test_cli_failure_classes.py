"""Expected failures, as a user meets them: one sentence on stderr, exit 1, no traceback unless --debug.

The classes: unreachable (a closed port), not Kafka (an HTTP server), TLS
mismatch (plaintext to a TLS listener, TLS to a plaintext one, an unknown CA),
authentication failed (wrong password; no credentials for a SASL listener),
not Kafka (a port that closes on everything), a silent peer.  Each runs ``python -m kafkacompat.cli`` as
a child process, in text and in JSON: a failure prints no JSON at all.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from kafkacompat.testing.emulator import SaslConfig
from tests.integration.cli.cli_runner import FAST, CliResult, Runner
from tests.support.tls_terminator import TlsFiles, make_tls_files, serve_tls_terminator, server_context

pytestmark = pytest.mark.broker

PASSWORD = "Wonderland-0xC0FFEE"
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("inspect",),
    ("inspect", "--format", "json"),
    ("inspect", "--all-brokers"),
    ("features", "describe"),
    ("coordinators", "--group", "g"),
    ("snapshot", "--out", "-"),
)


def one_sentence(result: CliResult, command: str, kind: str) -> str:
    assert result.code == 1, result
    assert result.stdout == "", result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith(f"kafkacompat {command}: {kind}: "), lines[0]
    return lines[0]


@pytest.fixture
def tls_files(tmp_path: Path) -> TlsFiles:
    return make_tls_files(tmp_path)


@pytest.fixture
async def tls_listener(emulated_cluster: Any, tls_files: TlsFiles) -> AsyncIterator[str]:
    """A TLS listener (a terminator) in front of an emulated 3.9 broker."""
    cluster = await emulated_cluster(["3.9"])
    host, port = cluster.broker(1).address.rsplit(":", 1)
    async with serve_tls_terminator((host, int(port)), server_context(tls_files)) as terminator:
        yield f"127.0.0.1:{terminator.port}"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
async def test_unreachable(run_cli: Runner, closed_port: str, command: tuple[str, ...]) -> None:
    result = await run_cli(*command, closed_port, *FAST)
    name = " ".join(command[:2]) if command[0] == "features" else command[0]
    line = one_sentence(result, name, "unreachable")
    assert line.endswith(f": unreachable: {closed_port}: connection refused"), line


@pytest.mark.parametrize("command", COMMANDS[:2], ids=" ".join)
async def test_not_kafka(run_cli: Runner, http_server: str, command: tuple[str, ...]) -> None:
    line = one_sentence(await run_cli(*command, http_server, *FAST), command[0], "not a Kafka broker")
    assert "HTTP" in line


async def test_plaintext_client_to_a_tls_listener(run_cli: Runner, tls_listener: str) -> None:
    line = one_sentence(await run_cli("inspect", tls_listener, *FAST), "inspect", "TLS listener")
    assert line.endswith("add --tls (security.protocol=SSL)") and "fallback" not in line


async def test_tls_client_to_a_plaintext_listener(
    run_cli: Runner, emulated_cluster: Any, tls_files: TlsFiles
) -> None:
    cluster = await emulated_cluster(["3.9"])
    result = await run_cli("inspect", cluster.bootstrap, "--tls", "--ca-file", str(tls_files.ca_file), *FAST)
    line = one_sentence(result, "inspect", "TLS failed")
    assert line.endswith("; if this listener is plaintext, drop --tls (security.protocol=PLAINTEXT)")


async def test_tls_with_an_unknown_ca(
    run_cli: Runner, tls_listener: str, tls_files: TlsFiles, tmp_path: Path
) -> None:
    config = tmp_path / "ssl.properties"
    config.write_text(
        f"security.protocol=SSL\nssl.truststore.location={tls_files.other_ca_file}\n", encoding="utf-8"
    )
    for fmt in ("text", "json"):
        result = await run_cli(
            "inspect", tls_listener, "--command-config", str(config), "--format", fmt, *FAST
        )
        line = one_sentence(result, "inspect", "TLS failed")
        assert "certificate verification failed" in line


async def test_wrong_password(run_cli: Runner, emulated_cluster: Any) -> None:
    cluster = await emulated_cluster(["3.9"], sasl=SaslConfig({"alice": PASSWORD}))
    sasl = ("--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "alice", "--sasl-password-env", "PW")
    for command in (("inspect",), ("coordinators", "--group", "g")):
        result = await run_cli(*command, cluster.bootstrap, *sasl, *FAST, env={"PW": "not-the-password"})
        line = one_sentence(result, command[0], "authentication failed")
        assert f"{cluster.bootstrap} refused SCRAM-SHA-512 as 'alice' (SASL_AUTHENTICATION_FAILED)" in line
        assert "not-the-password" not in result.output


async def test_sasl_listener_without_credentials(run_cli: Runner, emulated_cluster: Any) -> None:
    cluster = await emulated_cluster(["3.9"], sasl=SaslConfig({"alice": PASSWORD}))
    line = one_sentence(await run_cli("inspect", cluster.bootstrap, *FAST), "inspect", "connection closed")
    assert line.endswith("(or sasl.* in --command-config)")


async def test_a_port_closing_on_everything_is_not_kafka(run_cli: Runner, nursery: trio.Nursery) -> None:
    # A port that closes every connection at once: on ApiVersions, on the Metadata v0 that every
    # Kafka answers (0.8.x and 0.9 are recognised and inspected; see tests/integration/legacy), and
    # on the TLS ClientHello asked last (a TLS listener answers it).
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")

    async def close_at_once(stream: trio.SocketStream) -> None:
        await stream.aclose()

    nursery.start_soon(trio.serve_listeners, close_at_once, listeners)
    address = f"127.0.0.1:{listeners[0].socket.getsockname()[1]}"
    for fmt in ("text", "json"):
        result = await run_cli("inspect", address, "--format", fmt, *FAST)
        line = one_sentence(result, "inspect", "not a Kafka broker")
        assert "Metadata v0 (every Kafka answers it) and a TLS ClientHello" in line
        assert line.count("--fallback-release 0.8.2") == 1 and len(line) < 200, line
        assert "--tls" not in line  # it is no TLS listener: it closed on the ClientHello too


@pytest.mark.parametrize(
    "argv",
    [("--debug", "inspect", "{}"), ("inspect", "{}", "--debug"), ("features", "describe", "{}", "--debug")],
    ids=["before", "after", "after-nested"],
)
async def test_debug_shows_the_traceback(run_cli: Runner, closed_port: str, argv: tuple[str, ...]) -> None:
    result = await run_cli(*(arg.format(closed_port) for arg in argv), *FAST)
    assert result.code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "NoBrokerReachableError" in result.stderr  # the transport's error, as the cause
    assert "CommandFailed: unreachable: " in result.stderr


async def test_a_usage_error_exits_2(run_cli: Runner) -> None:
    result = await run_cli("inspect", "--format", "yaml")
    assert result.code == 2
    assert result.stderr == "kafkacompat inspect: unknown value for --format 'yaml'; choose from text, json\n"


async def test_config_errors_are_one_sentence_too(run_cli: Runner, tmp_path: Path) -> None:
    store = tmp_path / "truststore.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed" + bytes(32))
    result = await run_cli("inspect", "127.0.0.1:9", "--tls", "--ca-file", str(store))
    assert result.code == 1 and result.stdout == ""
    assert result.stderr.startswith(
        f"kafkacompat inspect: the CA file {store} is a JKS keystore, which is not"
    )
    assert "Traceback" not in result.stderr


async def test_deadline_bound_for_a_silent_peer(run_cli: Runner) -> None:
    """A listener that accepts and never answers: the failure comes within the timeout."""

    async def silent(stream: trio.SocketStream) -> None:
        with trio.move_on_after(10):
            await stream.receive_some(65536)
            await trio.sleep(10)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, silent, 0, host="127.0.0.1"))
        address = f"127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        with trio.fail_after(15):
            result = await run_cli("inspect", address, "--timeout", "1", "--retries", "1")
        nursery.cancel_scope.cancel()
    line = one_sentence(result, "inspect", "no answer")
    assert "the peer accepted the connection but answered nothing in 1 s" in line  # --timeout's second
    assert "--tls" not in line  # a TLS listener is never silent: it answers plaintext, or closes on it
