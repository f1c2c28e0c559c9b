"""``kafkacompat record`` in front of the emulator and Tansu while real clients run their traffic.

The broker advertises the proxy's address (Tansu's --advertised-listener-url; the
emulated broker's node port), so every connection after bootstrap goes through it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.testing import ThreadedCluster
from kafkacompat.testing.client_traffic import PAYLOAD, STEPS, read_report
from kafkacompat.testing.ports import free_port
from kafkacompat.testing.pytest_plugin import threaded_emulated_cluster
from kafkacompat.testing.tansu import TansuBroker

Factory = Callable[..., ThreadedCluster]
__all__ = ["threaded_emulated_cluster"]  # the fixture, for this module


def traffic(library: str, bootstrap: str, timeout_s: float = 20.0) -> dict[str, Any]:
    env = {**os.environ, "KAFKACOMPAT_TRAFFIC_TIMEOUT": str(timeout_s)}
    done = subprocess.run(
        [sys.executable, "-m", "kafkacompat.testing.client_traffic", library, bootstrap, "traffic"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return read_report(done.stdout, library)


@contextmanager
def recording(upstream: str, out: Path, listen_port: int = 0) -> Iterator[int]:
    """Run the CLI; yields the port it listens on; stops it with SIGTERM as an operator would."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafkacompat.cli",
            "record",
            "--listen",
            f"127.0.0.1:{listen_port}",
            "--upstream",
            upstream,
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("recording: "), first + (process.stderr.read() if process.stderr else "")
        yield int(first.split()[1].rpartition(":")[2])
    finally:
        process.terminate()
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "client profiles" in err


def wait_until_written(path: Path) -> None:
    """The CLI rewrites the file every half second; wait for a complete write after the traffic."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            time.sleep(1.0)
            return
        time.sleep(0.1)
    raise AssertionError(f"{path} was not written")


def check_live(profile: Path, bootstrap: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkacompat.cli",
            "check",
            str(profile),
            "--bootstrap",
            bootstrap,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    (verdict,) = json.loads(done.stdout)["verdicts"]
    assert done.returncode == verdict["exit_code"]
    return dict(verdict)


def profiles(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(validate_client_profile(p) == [] for p in lines)
    return lines


@pytest.mark.parametrize("release", ["2.3", "3.9"])
def test_record_in_front_of_the_emulator_profiles_each_client(
    threaded_emulated_cluster: Factory, tmp_path: Path, release: str
) -> None:
    cluster = threaded_emulated_cluster(release, brokers=1, topics={"traffic": 1})
    out = tmp_path / "profiles.jsonl"
    reports = {}
    with recording(cluster.bootstrap, out) as port:
        cluster.brokers[0].node.port = port  # the broker now advertises the proxy
        for library in ("kafka-python", "aiokafka", "confluent-kafka"):
            reports[library] = traffic(library, f"127.0.0.1:{port}")
    assert all(r["ok"] for r in reports.values()), reports
    assert [s["step"] for s in reports["kafka-python"]["steps"]] == list(STEPS)
    recorded = {p["client"]: p for p in profiles(out)}
    assert PAYLOAD.decode()[:20] not in out.read_text()
    # kafka-python and librdkafka name themselves (KIP-511) even to a 2.3 broker, which refuses
    # ApiVersions v3+: the refused request still carried the name, and their client ids follow it.
    assert {"kafka-python", "confluent-kafka-python"} <= set(recorded)
    assert any(name.startswith("aiokafka") for name in recorded)  # client ids: aiokafka sends v0
    logged = {(r.api_key, r.api_version) for r in cluster.requests}
    sent = {(r["api_key"], r["version"]) for p in recorded.values() for r in p["recorded"]["requests"]}
    assert sent == logged  # every request the broker saw was recorded, and nothing else
    assert all(r.answered for r in cluster.requests)
    kafka_python = next(p for name, p in recorded.items() if name.startswith("kafka-python"))
    assert {0, 1, 3, 8, 9, 11, 14, 15, 22, 26} <= {e["api_key"] for e in kafka_python["api_versions"]}


class ProxiedTansu(TansuBroker):
    """Tansu advertising another address (the recording proxy's) than the one it listens on."""

    def __init__(self, advertised_port: int) -> None:
        super().__init__()
        self.advertised_port = advertised_port

    @property
    def command(self) -> list[str]:
        command = super().command
        command[command.index("--advertised-listener-url") + 1] = f"tcp://127.0.0.1:{self.advertised_port}"
        return command


def test_record_in_front_of_tansu_is_transparent(tansu: TansuBroker, tmp_path: Path) -> None:
    library = "kafka-python"
    direct = traffic(library, tansu.bootstrap, timeout_s=6)
    proxy_port = free_port()
    out = tmp_path / "tansu.jsonl"
    with ProxiedTansu(proxy_port) as proxied, recording(proxied.bootstrap, out, proxy_port):
        through = traffic(library, f"127.0.0.1:{proxy_port}", timeout_s=6)
        wait_until_written(out)
        taken = tmp_path / "kafka-python.jsonl"
        taken.write_text(out.read_text())
        # Tansu advertises the proxy, so check's own probe goes through it too (and is recorded).
        verdict = check_live(taken, f"127.0.0.1:{proxy_port}")
    # Tansu 0.6 does not get kafka-python through all of it; the proxy changes nothing of that.
    assert [(s["step"], s["ok"]) for s in through["steps"]] == [(s["step"], s["ok"]) for s in direct["steps"]]
    recorded = {p["client"]: p for p in profiles(out)}
    assert set(recorded) == {"kafka-python", "kafkacompat"}  # check's own probe went through it
    profile = recorded["kafka-python"]
    assert profile["client"] == "kafka-python" and profile["recorded"]["identified_by"] == "software"
    by_key = {e["api_key"]: e for e in profile["api_versions"]}
    assert {3, 0, 18} <= set(by_key)  # metadata and produce passed through it
    produce = next(r for r in profile["recorded"]["requests"] if r["api_key"] == 0)
    assert produce["outcomes"] == {"answered": 1}
    # check, against the same Tansu, picks for each API the version the client was seen sending
    # in the file it was given (taken while the recorder ran: later rewrites may add to it).
    assert verdict["status"] == "works", verdict["findings"]
    (picks,) = verdict["picks"].values()
    given = {p["client"]: p for p in profiles(taken)}["kafka-python"]
    assert {3, 0, 18} <= {e["api_key"] for e in given["api_versions"]}
    seen = {e["api_key"]: e["max"] for e in given["api_versions"]}
    assert {p["api_key"]: p["version"] for p in picks} == seen


@pytest.mark.parametrize(
    ("argv", "said", "code"),
    [
        # Exit 2: the command line cannot be used as typed; 1: a file or a port failed.
        (["--listen", "10.1.2.3:9092", "--upstream", "127.0.0.1:9"], "--listen 10.1.2.3 is not loopback", 2),
        (["--listen", "127.0.0.1", "--upstream", "127.0.0.1:9"], "--listen must look like HOST:PORT", 2),
        (
            ["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--out", "/nonexistent/x.jsonl"],
            "no directory",
            1,
        ),
        (
            ["--listen", "127.0.0.1:TAKEN", "--upstream", "127.0.0.1:9", "--duration", "5"],
            "Address already in use",
            1,
        ),
        (
            ["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--out", "HERE"],
            "is a directory, not a file",
            1,
        ),
        (  # sysfs takes no new files, whoever asks (root included)
            ["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--out", "/sys/profiles.jsonl"],
            "--out: cannot write in /sys (Permission denied)",
            1,
        ),
    ],
)
def test_record_refuses_bad_arguments_in_one_sentence(
    argv: list[str], said: str, code: int, tmp_path: Path
) -> None:
    if "HERE" in argv:  # an existing directory: refused before anything is created in it
        _refused([str(tmp_path) if a == "HERE" else a for a in argv], said, code)
        assert list(tmp_path.iterdir()) == []
        return
    if "TAKEN" in " ".join(argv):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            return _refused([a.replace("TAKEN", str(port)) for a in argv], said, code)
    _refused(argv, said, code)


def _refused(argv: list[str], said: str, code: int = 1) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kafkacompat.cli", "record", *argv], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == code and said in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_record_passes_sasl_plaintext_and_never_records_the_credentials(
    threaded_emulated_cluster: Factory, tmp_path: Path, mechanism: str
) -> None:
    from kafkacompat.testing.emulator import SaslConfig

    secret = "pa55-never-recorded"
    cluster = threaded_emulated_cluster(
        "3.9", brokers=1, topics={"traffic": 1}, sasl=SaslConfig({"alice": secret}, [mechanism])
    )
    out = tmp_path / "sasl.jsonl"
    script = (
        "import sys, kafka.admin as a\n"
        "admin = a.KafkaAdminClient(bootstrap_servers=sys.argv[1], security_protocol='SASL_PLAINTEXT',\n"
        f"    sasl_mechanism='{mechanism}', sasl_plain_username='alice', sasl_plain_password='{secret}')\n"
        "print(sorted(admin.list_topics())); admin.close()\n"
    )
    with recording(cluster.bootstrap, out) as port:
        cluster.brokers[0].node.port = port
        done = subprocess.run(
            [sys.executable, "-c", script, f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0 and "traffic" in done.stdout, done.stderr[-2000:]
    text = out.read_text()
    assert secret not in text and "alice" not in text
    (profile,) = profiles(out)
    sent = {(r["api_key"], r["version"]): r["outcomes"] for r in profile["recorded"]["requests"]}
    assert {(17, 1), (36, 2), (3, 12)} <= set(sent)  # handshake, token, then traffic still read
    assert all(set(outcomes) == {"answered"} for outcomes in sent.values())
