"""``kafkacompat emulate``: argument parsing and refusals, without starting anything."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkacompat.cli import COMMANDS, build_parser, main
from kafkacompat.cli.emulate import build_cluster, derived_cluster_id, release_spec
from kafkacompat.errors import ConfigError, EmulatorConfigError, UsageError
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


def test_sasl_users_come_from_the_environment_or_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EMULATOR_USERS", "alice:pw,bob:s3cret")
    cluster = cluster_of("--sasl-users-env", "EMULATOR_USERS", "--sasl-mechanism", "SCRAM-SHA-256")
    sasl = cluster.brokers[0].sasl  # type: ignore[attr-defined]
    assert sasl.mechanisms == ("SCRAM-SHA-256",) and sasl.users == {"alice": "pw", "bob": "s3cret"}
    users = tmp_path / "users"
    users.write_text("# who may log in\ncarol:pw:with:colons\n\n")
    assert cluster_of("--sasl-users-file", str(users)).brokers[0].sasl.users == {  # type: ignore[attr-defined]
        "carol": "pw:with:colons"
    }
    users.write_text("carol\n")
    with pytest.raises(ConfigError, match=r"entry 1 of --sasl-users-file .* is not USER:PASSWORD"):
        cluster_of("--sasl-users-file", str(users))


def test_sasl_users_on_the_command_line_are_refused_unechoed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulate", "--sasl-user", "alice:hunter2"]) == 2
    err = capsys.readouterr().err
    assert "--sasl-users-file" in err and "hunter2" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("spec", "answer"),
    [
        ("2.3.1", "no Kafka 2.3.1 in the release table; did you mean 2.3?"),
        ("2.3/kraft", "Kafka 2.3 has no kraft-broker; it has zk-broker"),
        ("3.9/krft", "unknown broker kind 'krft'; did you mean kraft-broker?"),
    ],
)
def test_releases_the_table_lacks_get_the_closest(spec: str, answer: str) -> None:
    with pytest.raises(UsageError, match=re.escape(answer)):
        release_spec(spec)


def test_short_kind_names_are_spelled_out() -> None:
    assert release_spec("4.0/kraft") == "4.0/kraft-broker"
    assert release_spec("2.8/zk") == "2.8/zk-broker"
    assert [b.profile.kind for b in cluster_of("--release", "4.0/kraft").brokers] == [  # type: ignore[attr-defined]
        "kraft-broker"
    ]


def test_clusters_of_other_releases_or_ports_have_other_ids() -> None:
    first = cluster_of("--release", "2.8", "--port", "19092", "--first-node-id", "7")
    second = cluster_of("--release", "3.9", "--port", "19092")
    third = cluster_of("--release", "3.9", "--port", "19192")
    ids = {derived_cluster_id(c) for c in (first, second, third)}  # type: ignore[arg-type]
    assert ids == {"emulated-2.8-19092", "emulated-3.9-19092", "emulated-3.9-19192"}
    assert [b.node_id for b in first.brokers] == [7]  # type: ignore[attr-defined]
    assert cluster_of("--cluster-id", "mine").state.cluster_id == "mine"  # type: ignore[attr-defined]


def test_bad_values_are_one_line_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulate", "--host", "10.0.0.1"]) == 2
    assert "--host 10.0.0.1 is not a loopback address" in capsys.readouterr().err
    assert main(["emulate", "--topic", "t:many"]) == 2
    assert main(["emulate", "--duration", "0"]) == 2
    assert main(["emulate", "--release", "3.9", "--brokers", "0"]) == 2


def test_loopback_check() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost"):
        check_bind_host(host)
    for host in ("0.0.0.0", "::", "10.1.2.3", "example.org"):
        with pytest.raises(EmulatorConfigError):
            check_bind_host(host)
    check_bind_host("0.0.0.0", allow_non_loopback=True)
    assert cluster_of("--host", "0.0.0.0", "--allow-non-loopback").brokers[0].bind_host == "0.0.0.0"  # type: ignore[attr-defined]
