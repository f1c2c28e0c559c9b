"""The shared connection options: bootstrap, command config, TLS, SASL, policy, and secrets."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kafkacompat.cli import build_parser, main
from kafkacompat.cli.connection_options import ConnectionOptions, resolve_connection
from kafkacompat.errors import ConfigError

PASSWORD = "Wonderland-0xC0FFEE"
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="alice" password="{PASSWORD}";'
)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="alice" password="{PASSWORD}";'
)


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["inspect", *argv])


def resolve(*argv: str, env: dict[str, str] | None = None) -> ConnectionOptions:
    return resolve_connection(parse(*argv), env or {})


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_positional_or_flag_bootstrap_and_plaintext_defaults() -> None:
    options = resolve("127.0.0.1:9092")
    assert options.bootstrap == "127.0.0.1:9092"
    assert options.protocol == "PLAINTEXT"
    assert options.config.tls is None and options.config.sasl is None
    assert options.config.policy is None
    assert resolve("--bootstrap-server", "h1:1,h2:2").bootstrap == "h1:1,h2:2"
    assert resolve("h:1", "--bootstrap-server", "h:1").bootstrap == "h:1"


def test_bootstrap_missing_or_given_twice() -> None:
    with pytest.raises(ConfigError, match="no broker given"):
        resolve()
    with pytest.raises(ConfigError, match="give the bootstrap server once"):
        resolve("a:1", "--bootstrap-server", "b:2")


def test_bootstrap_servers_from_the_command_config(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.properties",
        "bootstrap.servers=h:9093\nclient.id=tool-x\nrequest.timeout.ms=2500\ndefault.api.timeout.ms=7000\n",
    )
    options = resolve("--command-config", str(config))
    assert options.bootstrap == "h:9093"
    assert options.config.client_id == "tool-x"
    assert options.config.request_timeout == 2.5
    assert options.config.call_timeout == 7.0  # every cluster call's deadline, as in Kafka
    assert options.ignored_keys == ()


def test_sasl_ssl_from_the_command_config(tmp_path: Path) -> None:
    ca = write(tmp_path / "ca.pem", PEM)
    config = write(
        tmp_path / "c.properties",
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={ca}\n"
        "ssl.endpoint.identification.algorithm=\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={SCRAM_JAAS}\n"
        "some.other.key=1\n",
    )
    options = resolve("h:1", "--command-config", str(config))
    assert options.protocol == "SASL_SSL"
    assert options.config.tls is not None
    assert options.config.tls.ca_file == ca
    assert options.config.tls.check_hostname is False
    assert options.config.sasl is not None
    assert options.config.sasl.mechanism == "SCRAM-SHA-512"
    assert options.config.sasl.username == "alice"
    assert options.config.sasl.password.reveal() == PASSWORD
    assert options.ignored_keys == ("some.other.key",)
    assert options.redactor.text(f"x{PASSWORD}y") == "x***y"
    assert PASSWORD not in repr(options)


def test_plain_mechanism_is_read_from_the_login_module(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.properties", f"security.protocol=SASL_PLAINTEXT\nsasl.jaas.config={PLAIN_JAAS}\n"
    )
    options = resolve("h:1", "--command-config", str(config))
    assert options.protocol == "SASL_PLAINTEXT"
    assert options.config.sasl is not None and options.config.sasl.mechanism == "PLAIN"


def test_flags_override_the_file_and_password_comes_from_the_environment(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.properties", f"security.protocol=SASL_PLAINTEXT\nsasl.jaas.config={PLAIN_JAAS}\n"
    )
    options = resolve(
        "h:1",
        "--command-config",
        str(config),
        "--sasl-username",
        "bob",
        "--sasl-password-env",
        "PW",
        env={"PW": "from-env-secret"},
    )
    assert options.config.sasl is not None
    assert options.config.sasl.username == "bob"
    assert options.config.sasl.password.reveal() == "from-env-secret"
    # Both passwords are masked: the file's too, although it was not used.
    assert options.redactor.text(f"{PASSWORD} from-env-secret") == "*** ***"


def test_flags_alone_make_sasl_and_tls(tmp_path: Path) -> None:
    ca = write(tmp_path / "ca.pem", PEM)
    options = resolve(
        "h:1",
        "--tls",
        "--ca-file",
        str(ca),
        "--no-hostname-check",
        "--sasl-mechanism",
        "scram-sha-256",
        "--sasl-username",
        "u",
        "--sasl-password-env",
        "PW",
        env={"PW": "x"},
    )
    assert options.protocol == "SASL_SSL"
    assert options.config.tls is not None and options.config.tls.check_hostname is False
    assert options.config.sasl is not None and options.config.sasl.mechanism == "SCRAM-SHA-256"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--sasl-username", "u", "--sasl-password-env", "PW"], {"PW": "x"}, "SASL needs a mechanism"),
        (["--sasl-mechanism", "PLAIN", "--sasl-password-env", "PW"], {"PW": "x"}, "SASL needs a username"),
        (["--sasl-mechanism", "PLAIN", "--sasl-username", "u"], {}, "SASL needs a password"),
        (
            ["--sasl-mechanism", "PLAIN", "--sasl-username", "u", "--sasl-password-env", "NOPE"],
            {},
            "environment variable NOPE",
        ),
    ],
)
def test_sasl_problems_are_named(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve("h:1", *argv, env=env)


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ("security.protocol=SOMETHING\n", "security.protocol must be one of"),
        ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n", "GSSAPI is not supported"),
        (
            "security.protocol=SASL_PLAINTEXT\n"
            "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;\n",
            "Krb5LoginModule, which is not supported",
        ),
        (
            f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={SCRAM_JAAS}\n",
            "needs PlainLoginModule",
        ),
        ("security.protocol=SSL\nssl.endpoint.identification.algorithm=ldap\n", "must be https or empty"),
        ("security.protocol=SSL\nssl.truststore.location=/nonexistent/ca.pem\n", "does not exist"),
        (
            "security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/x.jks\n",
            "ssl.truststore.type=JKS is not supported",
        ),
        ("request.timeout.ms=soon\n", "request.timeout.ms"),
        ("default.api.timeout.ms=0\n", "default.api.timeout.ms must be positive"),
    ],
)
def test_command_config_problems_never_show_secrets(tmp_path: Path, properties: str, message: str) -> None:
    config = write(tmp_path / "c.properties", properties + f"ssl.key.password={PASSWORD}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        resolve("h:1", "--command-config", str(config))
    assert PASSWORD not in str(caught.value)


def test_jks_truststore_is_recognised_by_its_bytes(tmp_path: Path) -> None:
    store = tmp_path / "truststore.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    with pytest.raises(ConfigError, match="is a JKS keystore, which is not supported"):
        resolve("h:1", "--tls", "--ca-file", str(store))
    der = tmp_path / "store.p12"
    der.write_bytes(b"\x30\x82\x01\x00" + bytes(60))
    with pytest.raises(ConfigError, match="not a PEM file"):
        resolve("h:1", "--tls", "--ca-file", str(der))


def test_pem_keystore_gives_a_client_certificate(tmp_path: Path) -> None:
    keystore = write(
        tmp_path / "client.pem", PEM + "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n"
    )
    config = write(
        tmp_path / "c.properties",
        f"security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={keystore}\n"
        f"ssl.key.password={PASSWORD}\n",
    )
    options = resolve("h:1", "--command-config", str(config))
    assert options.config.tls is not None
    assert options.config.tls.cert_file == keystore
    assert options.config.tls.key_password is not None
    assert options.redactor.text(PASSWORD) == "***"


def test_no_password_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--sasl-password", PASSWORD], [f"--sasl-password={PASSWORD}"]):
        assert main(["inspect", "h:1", *argv]) == 2
        err = capsys.readouterr().err
        assert "passwords are not taken on the command line" in err
        assert PASSWORD not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        [f"--sasl-pass={PASSWORD}"],
        ["--sasl-passw", PASSWORD],
        ["--sasl-passw", PASSWORD, "--secret-thing", PASSWORD + "2", "extra"],
    ],
)
def test_abbreviations_are_off_and_arguments_after_a_password_like_flag_are_masked(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "h:1", *argv]) == 2
    err = capsys.readouterr().err
    assert "unrecognized argument" in err and "did you mean --sasl-password-env?" in err
    assert PASSWORD not in err and "***" in err and len(err.splitlines()) == 1


def test_a_password_given_for_the_variable_name_is_never_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["inspect", "h:1", "--sasl-mechanism", "PLAIN", "--sasl-username", "alice"]
    assert main([*base, "--sasl-password-env", PASSWORD]) == 2
    err = capsys.readouterr().err
    assert "looks like a value (not shown)" in err and PASSWORD not in err
    assert main([*base, "--sasl-password-env", "hunter2"]) == 2  # a legal name, but not a variable's shape
    assert "hunter2" not in capsys.readouterr().err
    assert main([*base, "--sasl-password-env", "KAFKA_PASSWORD_UNSET"]) == 1
    assert "KAFKA_PASSWORD_UNSET (named by --sasl-password-env) is not set" in capsys.readouterr().err


def test_policy_flags_build_a_version_policy() -> None:
    options = resolve(
        "h:1",
        "--cap",
        "Fetch=12",
        "--pin",
        "3=9",
        "--deprecate",
        "Produce=0-2",
        "--block",
        "ListOffsets=7,8",
        "--honour-spec-deprecations",
    )
    policy = options.config.policy
    assert policy is not None
    assert policy.caps == {1: 12}
    assert policy.pins == {3: 9}
    assert [str(r) for r in policy.deprecated[0]] == ["0-2"]
    assert [str(r) for r in policy.blocked[2]] == ["7-8"]
    assert policy.honour_spec_deprecations


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cap", "Fetch"], "wants API=VERSION"),
        (["--cap", "Fetch=x"], "wants one version number"),
        (["--block", "NoSuchApi=1"], "bad version policy"),
        (["--timeout", "0"], "--timeout must be positive"),
        (["--retries", "0"], "--retries must be at least 1"),
        (["--fallback-release", "0.1.2"], "0.1.2"),
    ],
)
def test_bad_policy_and_limits(argv: list[str], message: str) -> None:
    with pytest.raises(Exception, match=message):
        resolve("h:1", *argv)


def test_fallback_release_reaches_the_handshake() -> None:
    options = resolve("h:1", "--fallback-release", "0.9.0", "--timeout", "3", "--retries", "2")
    assert options.config.handshake.fallback_release == "0.9.0"
    assert options.config.connect_timeout == 3
    assert options.config.retry.attempts == 2
