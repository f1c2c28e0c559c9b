"""``kafkacompat emulate``: argument parsing and refusals, without starting anything."""

from __future__ import annotations

import pytest

from kafkacompat.cli import COMMANDS, build_parser, main
from kafkacompat.cli.emulate import build_cluster
from kafkacompat.errors import EmulatorConfigError
from kafkacompat.testing.emulator import check_bind_host


def cluster_of(*argv: str) -> object:
    args = build_parser().parse_args(["emulate", *argv])
    assert args.handler.__name__ == "run"
    return build_cluster(args)


def test_emulate_is_a_registered_command() -> None:
    assert "emulate" in COMMANDS


def test_defaults_and_mixed_releases() -> None:
    cluster = cluster_of()
    assert [b.profile.label for b in cluster.brokers] == ["Kafka 3.9 (zk-broker)"]  # type: ignore[attr-defined]
    mixed = cluster_of("--release", "2.8", "--release", "3.0", "--topic", "a:3", "--topic", "b")
    assert [b.profile.release for b in mixed.brokers] == ["2.8", "3.0"]  # type: ignore[attr-defined]
    assert mixed.state.topics == {"a": 3, "b": 1}  # type: ignore[attr-defined]
    three = cluster_of("--release", "4.0", "--brokers", "3", "--port", "19092")
    assert [b.node.port for b in three.brokers] == [19092, 19093, 19094]  # type: ignore[attr-defined]
    assert three.brokers[0].profile.kind == "kraft-broker"  # type: ignore[attr-defined]


def test_sasl_options() -> None:
    cluster = cluster_of("--sasl-user", "alice:pw", "--sasl-mechanism", "SCRAM-SHA-256")
    sasl = cluster.brokers[0].sasl  # type: ignore[attr-defined]
    assert sasl.mechanisms == ("SCRAM-SHA-256",) and sasl.users == {"alice": "pw"}
    with pytest.raises(EmulatorConfigError):
        cluster_of("--sasl-user", "alice")


def test_bad_values_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulate", "--host", "10.0.0.1"]) == 1
    assert "refusing to listen on 10.0.0.1" in capsys.readouterr().err
    assert main(["emulate", "--topic", "t:many"]) == 1
    assert main(["emulate", "--duration", "0"]) == 1
    assert main(["emulate", "--release", "3.9", "--brokers", "0"]) == 1


def test_loopback_check() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost"):
        check_bind_host(host)
    for host in ("0.0.0.0", "::", "10.1.2.3", "example.org"):
        with pytest.raises(EmulatorConfigError):
            check_bind_host(host)
    check_bind_host("0.0.0.0", allow_non_loopback=True)
    assert cluster_of("--host", "0.0.0.0", "--allow-non-loopback").brokers[0].bind_host == "0.0.0.0"  # type: ignore[attr-defined]
