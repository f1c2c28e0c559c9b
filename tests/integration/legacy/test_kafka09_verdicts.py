"""``check`` verdicts on the measured Python clients, against the real Apache Kafka 0.9.0.1.

For every measured Python client release, the verdict of ``check --release
0.9.0`` (the release table) and of ``check --bootstrap`` the real broker must
be the same, and must be what happens when that release runs its traffic
against the real broker: the profile's measurement (``without_api_versions``,
taken against this same real broker by ``make profiles``) is what the run
shows again, and a "breaks" names the API of the last request the client sent
before it stopped (ApiVersions for a client that gives up on it; the API it
stopped after for one that falls back).  The emulated 0.9.0 must make the
client do what the real one does (same failed step, same requests and
outcomes).

0.9.0.1 does not close on an API it lacks: it stays silent, so each client
hangs on its first ApiVersions until its own request timeout, which is set
short (``ERA_REQUEST_TIMEOUT_S``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.profiles import load_measured
from kafkacompat.profiles.brokers import ERA, RecordedBroker, recorded_broker, start_recorder, stop_recorder
from kafkacompat.profiles.installs import CLIENTS, ClientRelease, install
from kafkacompat.profiles.measure import DEFAULT_CACHE, ERA_REQUEST_TIMEOUT_S, era_evidence, traffic_run

pytestmark = pytest.mark.broker

API_VERSIONS = 18
PYTHON = [c for c in CLIENTS if c.language == "python"]


@pytest.fixture(scope="module")
def real() -> Iterator[RecordedBroker]:
    with recorded_broker(ERA) as broker:
        yield broker


@pytest.fixture(scope="module")
def emulated() -> Iterator[RecordedBroker]:
    with recorded_broker("0.9.0") as broker:
        yield broker


@pytest.fixture(scope="module")
def verdicts(real: RecordedBroker, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per client label: (verdict from the release table, verdict from the live broker)."""
    modelled = check("measured", "--release", "0.9.0")
    recorder = start_recorder(real.bootstrap, real.upstream, tmp_path_factory.mktemp("check") / "c.jsonl")
    try:  # check probes every broker, at the address the broker advertises: the recorder's
        live = check("measured", "--bootstrap", real.bootstrap)
    finally:
        stop_recorder(recorder)
    return {
        other["client"]: (one, other)
        for one, other in zip(modelled["verdicts"], live["verdicts"], strict=True)
    }


def check(*argv: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "kafkacompat.cli", "check", *argv, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    document: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == document["exit_code"], done.stderr
    return document


def findings(verdict: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["api"], f["rule"], f["severity"]) for f in verdict["findings"]]


@pytest.mark.parametrize("client", PYTHON, ids=[c.slug for c in PYTHON])
def test_the_verdict_on_the_real_0_9_0_1_is_what_happens(
    real: RecordedBroker,
    emulated: RecordedBroker,
    verdicts: dict[str, Any],
    tmp_path: Path,
    client: ClientRelease,
) -> None:
    target = install(client, DEFAULT_CACHE)
    report, profiles = traffic_run(client, target, real, tmp_path, ERA_REQUEST_TIMEOUT_S)
    modelled, verdict = verdicts[f"{client.library} {client.release}"]
    # The release table and the real broker agree, finding for finding.
    assert findings(verdict) == findings(modelled)
    assert verdict["brokers"][0]["release"] == "0.9.0"
    seen = era_evidence(report, profiles)
    # The profile's measurement is what the real broker shows again.
    (profile,) = [
        p for p in load_measured() if (p["client"], p["version"]) == (client.library, client.release)
    ]
    measured = profile["without_api_versions"]
    assert (measured["ok"], measured["stopped_in"], measured["last_request"]) == (
        seen["ok"],
        seen["stopped_in"],
        seen["last_request"],
    ), (measured, seen)
    if report["ok"]:
        assert verdict["status"] == "works", verdict["findings"]
    else:
        assert verdict["status"] == "breaks", verdict["findings"]
        breaking = {f["api_key"]: f for f in verdict["findings"] if f["severity"] == "breaks"}
        stop = seen["last_request"]["api_key"]
        assert stop in breaking, (seen, verdict["findings"])
        if stop == API_VERSIONS:
            assert seen["last_request"]["outcome"] == "unanswered", seen
            assert breaking[stop]["rule"] == "api-missing"
        else:
            answered = seen["last_request"]["outcome"] == "answered"
            assert breaking[stop]["rule"] == ("client-refuses-era" if answered else "fallback-not-answered")
    # The emulated 0.9.0 is the model of this broker: the same client stops in the same step,
    # having sent the same (API, version)s with the same outcomes (counts vary with timing).
    (tmp_path / "emulated").mkdir()
    modelled_run, modelled_profiles = traffic_run(
        client, target, emulated, tmp_path / "emulated", ERA_REQUEST_TIMEOUT_S
    )
    assert failed_step(modelled_run) == failed_step(report)
    assert wire(modelled_profiles) == wire(profiles)


def failed_step(report: dict[str, Any]) -> str | None:
    return next((str(s["step"]) for s in report["steps"] if not s["ok"]), None)


def wire(profiles: list[dict[str, Any]]) -> set[tuple[int, int, str]]:
    return {
        (r["api_key"], r["version"], outcome)
        for p in profiles
        for r in p["recorded"]["requests"]
        for outcome in r["outcomes"]
    }
