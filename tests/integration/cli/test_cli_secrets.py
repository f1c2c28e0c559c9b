"""No secret given through the environment or a command config reaches any output, even with --debug.

Every run is a child process, so what is checked is everything the user
would see: stdout, stderr, tracebacks.  The secrets are distinctive strings,
checked whole and in their longer halves.  The peers: an emulated SASL broker
(right and wrong passwords, SCRAM and PLAIN), a SASL server that repeats the
password in its refusal (``echo-password``), and the same server behind TLS
with a command config as Kafka users write it (SASL_SSL, PEM truststore, JAAS).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.testing.emulator import SaslConfig
from tests.integration.cli.cli_runner import FAST, CliResult, Runner
from tests.support.sasl_server import SaslServer, run_sasl_server
from tests.support.tls_terminator import make_tls_files, serve_tls_terminator, server_context

pytestmark = pytest.mark.broker

PASSWORD = "Env-Secret-7f3a9c1e5b"
FILE_PASSWORD = "File-Secret-2d8e6a4c0f"
KEY_PASSWORD = "Key-Secret-9b1d3f5a7c"
WRONG = "Wrong-Secret-4e6c8a0b2d"
SECRETS = (PASSWORD, FILE_PASSWORD, KEY_PASSWORD, WRONG)


def assert_no_secret(result: CliResult) -> None:
    for secret in SECRETS:
        for piece in (secret, secret[: len(secret) // 2 + 2], secret[len(secret) // 2 - 2 :]):
            assert piece not in result.stdout, (piece, result.stdout)
            assert piece not in result.stderr, (piece, result.stderr)


def jaas(module: str, password: str, user: str = "alice") -> str:
    return f'org.apache.kafka.common.security.{module} required username="{user}" password="{password}";'


def command_config(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(body + f"ssl.key.password={KEY_PASSWORD}\n", encoding="utf-8")
    return path


@pytest.fixture
async def sasl_broker(emulated_cluster: Any) -> str:
    cluster = await emulated_cluster(
        ["3.9", "3.9"], sasl=SaslConfig({"alice": PASSWORD, "bob": FILE_PASSWORD})
    )
    return str(cluster.bootstrap.split(",")[0])


@pytest.mark.parametrize("debug", [(), ("--debug",)], ids=["plain", "debug"])
async def test_environment_password(run_cli: Runner, sasl_broker: str, debug: tuple[str, ...]) -> None:
    flags = ("--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", "alice", "--sasl-password-env", "KC_PW")
    good = await run_cli(
        *debug, "inspect", sasl_broker, "--all-brokers", *flags, *FAST, env={"KC_PW": PASSWORD}
    )
    assert good.code == 0, good.stderr
    assert_no_secret(good)
    as_json = await run_cli(
        *debug, "inspect", sasl_broker, "--format", "json", *flags, *FAST, env={"KC_PW": PASSWORD}
    )
    assert json.loads(as_json.stdout)["brokers"][0]["node_id"] == 1
    assert_no_secret(as_json)
    bad = await run_cli(*debug, "inspect", sasl_broker, *flags, *FAST, env={"KC_PW": WRONG})
    assert bad.code == 1
    assert "authentication failed" in bad.stderr
    assert ("Traceback" in bad.stderr) == bool(debug)
    assert_no_secret(bad)


@pytest.mark.parametrize("debug", [(), ("--debug",)], ids=["plain", "debug"])
async def test_command_config_password(
    run_cli: Runner, sasl_broker: str, tmp_path: Path, debug: tuple[str, ...]
) -> None:
    good = command_config(
        tmp_path,
        "good.properties",
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f"sasl.jaas.config={jaas('plain.PlainLoginModule', FILE_PASSWORD, 'bob')}\n",
    )
    for command in (
        ("inspect",),
        ("features", "describe"),
        ("coordinators", "--group", "g"),
        ("snapshot", "--out", "-"),
    ):
        result = await run_cli(*debug, *command, sasl_broker, "--command-config", str(good), *FAST)
        assert result.code == 0, result.stderr
        assert_no_secret(result)
    bad = command_config(
        tmp_path,
        "bad.properties",
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={jaas('scram.ScramLoginModule', WRONG)}\n",
    )
    refused = await run_cli(*debug, "inspect", sasl_broker, "--command-config", str(bad), *FAST)
    assert refused.code == 1 and "authentication failed" in refused.stderr
    assert_no_secret(refused)


@pytest.mark.parametrize("debug", [(), ("--debug",)], ids=["plain", "debug"])
async def test_a_broker_that_repeats_the_password(
    run_cli: Runner, tmp_path: Path, debug: tuple[str, ...]
) -> None:
    async with run_sasl_server({"alice": WRONG}, fault="echo-password") as server:
        config = command_config(
            tmp_path,
            "echo.properties",
            "security.protocol=SASL_PLAINTEXT\n"
            f"sasl.jaas.config={jaas('plain.PlainLoginModule', FILE_PASSWORD)}\n",
        )
        result = await run_cli(
            *debug, "inspect", f"127.0.0.1:{server.port}", "--command-config", str(config), *FAST
        )
        env = await run_cli(
            *debug,
            "inspect",
            f"127.0.0.1:{server.port}",
            "--sasl-mechanism",
            "PLAIN",
            "--sasl-username",
            "alice",
            "--sasl-password-env",
            "KC_PW",
            *FAST,
            env={"KC_PW": PASSWORD},
        )
    for refused in (result, env):
        assert refused.code == 1
        assert "with password *** is not allowed" in refused.stderr
        assert_no_secret(refused)


@pytest.fixture
async def sasl_ssl_broker(tmp_path: Path) -> AsyncIterator[tuple[SaslServer, Path]]:
    """A SASL server behind a TLS listener, advertising the TLS address in its Metadata."""
    files = make_tls_files(tmp_path)
    async with (
        run_sasl_server({"alice": FILE_PASSWORD}) as server,
        serve_tls_terminator(("127.0.0.1", server.port), server_context(files)) as terminator,
    ):
        server.port = terminator.port  # what Metadata advertises from now on
        yield server, files.ca_file


async def test_sasl_ssl_from_a_kafka_command_config(
    run_cli: Runner, sasl_ssl_broker: tuple[SaslServer, Path], tmp_path: Path
) -> None:
    server, ca_file = sasl_ssl_broker
    config = command_config(
        tmp_path,
        "client.properties",
        "# as for kafka-broker-api-versions --command-config\n"
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={ca_file}\n"
        "ssl.truststore.type=PEM\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.jaas.config={jaas('scram.ScramLoginModule', FILE_PASSWORD)}\n",
    )
    for debug in ((), ("--debug",)):
        result = await run_cli(
            *debug, "inspect", f"127.0.0.1:{server.port}", "--command-config", str(config), *FAST
        )
        assert result.code == 0, result.stderr
        assert result.stdout.startswith(f"127.0.0.1:{server.port} (id: 1 rack: null) -> (")
        assert "kafkacompat: ignoring command config key(s): ssl.key.password" not in result.stderr
        assert_no_secret(result)
    assert ("SCRAM-SHA-256", "alice") in server.logins
