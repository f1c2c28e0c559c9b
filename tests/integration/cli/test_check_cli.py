"""``kafkacompat check`` against releases, snapshot files and live (emulated) clusters, and against reality.

The verdicts on measured profiles are checked against what the same client release
does when it runs its traffic against the emulated release: a client the verdict
says works gets through; one it says breaks fails, at the API the verdict names.
Client releases are installed into a cache directory on first use (``pip install
--target``, as ``make profiles`` does), never into the test environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.negotiation.measured_runs import STEP_APIS
from kafkacompat.profiles.installs import CLIENTS, ROOT, install
from kafkacompat.profiles.measure import DEFAULT_CACHE
from kafkacompat.testing import ThreadedCluster
from kafkacompat.testing.client_traffic import read_report
from kafkacompat.testing.emulator.sasl import SaslConfig
from kafkacompat.testing.pytest_plugin import threaded_emulated_cluster

__all__ = ["threaded_emulated_cluster"]
Factory = Callable[..., ThreadedCluster]


def check(*argv: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-m", "kafkacompat.cli", "check", *argv, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    document = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, document, done.stderr


def traffic_of(library: str, release: str, bootstrap: str) -> dict[str, Any]:
    client = next(c for c in CLIENTS if (c.library, c.release) == (library, release))
    target = install(client, DEFAULT_CACHE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)]),
        "KAFKACOMPAT_TRAFFIC_TIMEOUT": "15",
    }
    done = subprocess.run(
        [sys.executable, "-m", "kafkacompat.testing.client_traffic", library, bootstrap, "traffic"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return read_report(done.stdout, library)


CASES = [
    # (library, client release, broker release, kind): old clients against Kafka 4.0 and an old broker
    ("kafka-python", "2.0.2", "4.0", "kraft-broker"),
    ("aiokafka", "0.8.1", "4.0", "kraft-broker"),
    ("aiokafka", "0.14.0", "4.0", "kraft-broker"),
    ("kafka-python", "3.0.12", "4.0", "kraft-broker"),
    ("confluent-kafka", "2.16.1", "4.0", "kraft-broker"),
    ("confluent-kafka", "2.0.2", "4.0", "kraft-broker"),
    ("kafka-python", "3.0.12", "1.0", "zk-broker"),
    ("confluent-kafka", "2.0.2", "1.0", "zk-broker"),
]


@pytest.mark.parametrize(("library", "version", "release", "kind"), CASES)
def test_the_verdict_on_a_measured_profile_is_what_happens(
    threaded_emulated_cluster: Factory, library: str, version: str, release: str, kind: str
) -> None:
    code, document, _ = check(
        "measured", "--client", f"{library}@{version}", "--release", release, "--kind", kind
    )
    (verdict,) = document["verdicts"]
    assert code == verdict["exit_code"] and verdict["status"] in ("works", "breaks")
    cluster = threaded_emulated_cluster(f"{release}/{kind}", brokers=1, topics={"traffic": 1})
    report = traffic_of(library, version, cluster.bootstrap)
    if verdict["status"] == "works":
        assert report["ok"], report
        assert all(r.answered for r in cluster.requests)
        return
    assert not report["ok"]
    breaking = [f for f in verdict["findings"] if f["severity"] == "breaks"]
    failed = next(s for s in report["steps"] if not s["ok"])
    # The step fails on the API named: the client refuses to send it, or the broker closes on it.
    named = {f["api"] for f in breaking}
    closed = {r.api_key for r in cluster.requests if not r.answered}
    in_step = set(STEP_APIS.get(failed["step"], ()))  # or it stopped in the step that sends it
    keys = {f["api_key"] for f in breaking}
    assert any(name in failed["error"] for name in named) or closed & keys or in_step & keys, (
        failed,
        breaking,
    )


def test_check_exits_2_on_input_it_cannot_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"client": "x"}\n')
    code, _, err = check(str(bad), "--release", "4.0")
    assert code == 2 and "could not tell" in err and "line 1" in err
    code, _, err = check("kafkacompat", "--release", "9.9")
    assert code == 2 and "no Kafka 9.9" in err


def test_check_a_live_cluster_and_its_snapshot_judge_every_node(
    threaded_emulated_cluster: Factory, tmp_path: Path
) -> None:
    # A rolling upgrade half done: node 1 still 3.9, node 2 already 4.0; Fetch v3 is gone from 4.0.
    cluster = threaded_emulated_cluster(["3.9/kraft-broker", "4.0/kraft-broker"], topics={"t": 1})
    profile = tmp_path / "old-consumer.jsonl"
    profile.write_text(
        json.dumps(
            {
                "client": "old-consumer",
                "version": "1",
                "api_versions": [
                    {"api_key": 3, "min": 1, "max": 1, "required": True, "pick": "fixed"},
                    {"api_key": 1, "min": 3, "max": 3, "required": True, "pick": "fixed"},
                ],
            }
        )
        + "\n"
    )
    code, live, _ = check(str(profile), "--bootstrap", cluster.bootstrap.split(",")[0])
    (verdict,) = live["verdicts"]
    assert code == 1 and live["_command"] == "check" and live["_version"] == 1
    assert [(f["api"], f["rule"], f["source"]) for f in verdict["findings"]] == [
        ("Fetch", "removed-in-4", "KIP-896")
    ]
    assert verdict["findings"][0]["broker"].startswith("node 2 at")
    (finding,) = verdict["findings"]
    assert (finding["client_range"], finding["broker_range"]) == ([3, 3], [4, 17])
    snapshot = tmp_path / "fleet.jsonl"
    taken = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkacompat.cli",
            "snapshot",
            cluster.bootstrap.split(",")[0],
            "--all-brokers",
            "--out",
            str(snapshot),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert taken.returncode == 0, taken.stderr
    code, offline, _ = check(str(profile), "--cluster", str(snapshot))
    assert code == 1 and offline["verdicts"][0]["findings"] == verdict["findings"]
    code, own, _ = check("kafkacompat", "--cluster", str(snapshot))
    assert code == 0 and own["verdicts"][0]["status"] == "works"


def test_check_bootstrap_takes_the_connection_options_of_every_connecting_command(
    threaded_emulated_cluster: Factory,
) -> None:
    password, wrong = "check-pw-4f1c2a", "not-the-pw-77e0"
    cluster = threaded_emulated_cluster("3.9", brokers=1, sasl=SaslConfig({"alice": password}))
    sasl = ["--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", "alice", "--sasl-password-env", "KC_PW"]
    target = ["kafkacompat", "--bootstrap", cluster.bootstrap, "--timeout", "5", "--retries", "1"]
    code, document, _ = check(*target, *sasl, env={"KC_PW": password})
    (verdict,) = document["verdicts"]
    assert code == 0 and verdict["status"] == "works"
    assert verdict["brokers"][0]["release"] == "3.9"
    # Without SASL the broker answers nothing but the handshake: could not tell, not a verdict.
    code, _, err = check(*target)
    assert code == 2 and "could not tell" in err
    code, _, err = check(*target, *sasl, env={"KC_PW": wrong})
    assert code == 2 and "could not tell" in err and "authentication" in err.lower()
    assert wrong not in err and password not in err
