"""``check`` verdicts on the measured client profiles, against the real Apache Kafka 0.9.0.1.

For every measured client release (``kafkacompat.profiles.measure.MEASURED``),
the verdict of ``check --release 0.9.0`` (the release table) and of ``check
--bootstrap`` the real broker must be the same, and must be what happens when
that client release runs its traffic against the real broker (and the emulated
0.9.0 must make the client do the same as the real one does): every one is
judged "breaks" (0.9 has no ApiVersions, which every measured client sends
first, nor DeleteGroups, nor transactions), so every one must fail, and fail
at an API the verdict names as breaking: the API of the last request the
client sent before it stopped.  That is ApiVersions for a client measured
giving up on it, and the API it stopped after for one measured falling back
(kafka-python 2.0.2: answered Metadata v0, it sends nothing more).  The
profile's measurement against the emulated 0.9.0 (``without_api_versions``)
must be what the real broker shows too.

The real broker is started here advertising the port of ``kafkacompat record``,
so the recorder sees every connection the client opens and says what the broker
did with each request (answered, error, closed, or left unanswered when the
client gave up).  0.9.0.1 does not close on an API it lacks: it stays silent,
so each client hangs on its first ApiVersions until its own request timeout,
which the test sets short (``REQUEST_TIMEOUT_S``, the traffic harness's
``--request-timeout``); with the six verdicts from one ``check`` each way
and the emulated run alongside the real one, the file runs in about a
minute, not six and a half.
A client that would wait without end is stopped by the test's timeout: the
step it was in is its observed failure (``read_report`` reports it as "died in
this step"), and the recording still shows the request left unanswered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.errors import BrokerStartError
from kafkacompat.profiles import load_measured
from kafkacompat.profiles.measure import DEFAULT_CACHE, ERA, MEASURED, ROOT, era_evidence, install, record_run
from kafkacompat.testing.client_traffic import read_report
from kafkacompat.testing.kafka09 import Kafka09Broker
from kafkacompat.testing.ports import free_port

API_VERSIONS = 18
# The clients' own request timeout: long enough for the real broker on a loaded machine to
# answer what it answers, short enough that waiting on a silent ApiVersions costs little.
REQUEST_TIMEOUT_S = 4.0
STEP_TIMEOUT_S = "6"  # the traffic harness's wait for a step (KAFKACOMPAT_TRAFFIC_TIMEOUT)
TRAFFIC_TIMEOUT_S = 120  # per client release, should a client wait without end


@pytest.fixture(scope="module")
def kafka09_behind_recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kafka09Broker, int]]:
    """A real 0.9.0.1 whose metadata names the port a recorder listens on.

    Its controller reaches the broker through that port too, so a recorder
    forwards it while the broker starts (and one runs during every client's traffic).
    """
    broker_port, recorder_port = free_port(), free_port()
    startup = start_recorder(recorder_port, f"127.0.0.1:{broker_port}", tmp_path_factory.mktemp("start"))
    try:
        broker = Kafka09Broker(port=broker_port, advertised_port=recorder_port).__enter__()
    except BrokerStartError as exc:
        pytest.fail(f"could not start Kafka 0.9.0.1: {exc}", pytrace=False)
    finally:
        stop_recorder(startup)
    try:
        yield broker, recorder_port
    finally:
        broker.stop()


def start_recorder(port: int, upstream: str, directory: Path) -> subprocess.Popen[str]:
    recorder = subprocess.Popen(
        [
            sys.executable, "-m", "kafkacompat.cli", "record", "--listen", f"127.0.0.1:{port}",
            "--upstream", upstream, "--out", str(directory / "recorded.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert recorder.stdout is not None
    first = recorder.stdout.readline()
    if not first.startswith("recording: "):
        recorder.kill()
        recorder.wait()
        pytest.fail(f"kafkacompat record did not start: {first!r}")
    return recorder


def stop_recorder(recorder: subprocess.Popen[str]) -> None:
    recorder.terminate()  # it writes its profiles on the way out
    try:
        recorder.wait(timeout=30)
    except subprocess.TimeoutExpired:
        recorder.kill()
        recorder.wait()


@pytest.fixture(scope="module")
def verdicts(
    kafka09_behind_recorder: tuple[Kafka09Broker, int], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Per measured client, its verdict from the release table and from the live broker.

    One ``check`` of every measured profile each way: the verdicts of one
    client do not depend on the others'.
    """
    broker, port = kafka09_behind_recorder
    with ThreadPoolExecutor(max_workers=1) as alongside:
        modelled_check = alongside.submit(check, "measured", "--release", "0.9.0")
        with recording(broker, port, tmp_path_factory.mktemp("check")):  # check probes every broker
            real = check("measured", "--bootstrap", broker.bootstrap)
        modelled = modelled_check.result()
    by_client: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for one, other in zip(modelled["verdicts"], real["verdicts"], strict=True):
        assert one["client"] == other["client"]
        by_client[other["client"]] = (one, other)
    return by_client


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


@contextmanager
def recording(broker: Kafka09Broker, port: int, directory: Path) -> Iterator[list[dict[str, Any]]]:
    """``record`` on the port the broker advertises; the profiles it wrote, once it stopped."""
    profiles: list[dict[str, Any]] = []
    recorder = start_recorder(port, broker.bootstrap, directory)
    try:
        yield profiles
    finally:
        stop_recorder(recorder)
    out = directory / "recorded.jsonl"
    profiles.extend(json.loads(line) for line in out.read_text().splitlines() if line)


def traffic(library: str, target: Path, bootstrap: str) -> dict[str, Any]:
    """The client release's traffic; a client still running after the timeout is stopped mid-step."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)]),
        "KAFKACOMPAT_TRAFFIC_TIMEOUT": STEP_TIMEOUT_S,
        "PYTHONUNBUFFERED": "1",
    }
    client = subprocess.Popen(
        [
            sys.executable, "-m", "kafkacompat.testing.client_traffic",
            "--request-timeout", str(REQUEST_TIMEOUT_S), library, bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        output, _ = client.communicate(timeout=TRAFFIC_TIMEOUT_S)
    except subprocess.TimeoutExpired:  # read_report names the step it was stopped in
        client.kill()
        output, _ = client.communicate()
    return read_report(output, library)


def findings(verdict: dict[str, Any]) -> list[tuple[str, str, str, list[int] | None]]:
    return [(f["api"], f["rule"], f["severity"], f["broker_range"]) for f in verdict["findings"]]


@pytest.mark.parametrize(
    ("library", "pypi_name", "release", "pins"), MEASURED, ids=[f"{m[0]}-{m[2]}" for m in MEASURED]
)
def test_the_verdict_on_the_real_0_9_0_1_is_what_happens(
    kafka09_behind_recorder: tuple[Kafka09Broker, int],
    verdicts: dict[str, tuple[dict[str, Any], dict[str, Any]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    library: str,
    pypi_name: str,
    release: str,
    pins: tuple[str, ...],
) -> None:
    broker, port = kafka09_behind_recorder
    monkeypatch.setenv("KAFKACOMPAT_TRAFFIC_TIMEOUT", STEP_TIMEOUT_S)  # the emulated run's too
    target = install(pypi_name, release, DEFAULT_CACHE, pins)
    for directory in ("traffic", "emulated"):
        (tmp_path / directory).mkdir()
    with ThreadPoolExecutor(max_workers=1) as alongside:
        # The emulated run shares nothing with the real broker: it runs while the real one is
        # driven (each client mostly waits on its own timeouts).
        emulated_run = alongside.submit(
            record_run, library, target, ERA, tmp_path / "emulated", REQUEST_TIMEOUT_S
        )
        with recording(broker, port, tmp_path / "traffic") as profiles:
            report = traffic(library, target, f"127.0.0.1:{port}")
        emulated, emulated_profiles = emulated_run.result()
    modelled, verdict = verdicts[f"{library} {release}"]
    # The release table and the real broker agree, finding for finding (the real one wins if not).
    assert findings(verdict) == findings(modelled)
    assert verdict["brokers"][0]["release"] == "0.9.0"
    assert verdict["status"] == "breaks"
    breaking = {f["api_key"]: f for f in verdict["findings"] if f["severity"] == "breaks"}
    # Breaks: the traffic does not get through; no step passes, since the first (metadata) needs
    # the broker to have answered the client as it wants.
    assert not report["ok"], report
    assert not [s for s in report["steps"] if s["ok"] and "skipped" not in s], report
    # ... at the API named: the client's last request before it stopped is of an API the verdict
    # says breaks (no "could not tell" left on it).  0.9.0.1 answers nothing to an API key it
    # does not know and keeps the connection open: a client that gives up on ApiVersions leaves
    # it "unanswered"; one that falls back stops after an answer to some other API.
    seen = era_evidence(report, profiles)
    assert seen["last_request"] is not None, profiles
    stop = seen["last_request"]["api_key"]
    assert stop in breaking, (seen, verdict["findings"])
    api_versions = next(f for f in verdict["findings"] if f["api_key"] == API_VERSIONS)
    if stop == API_VERSIONS:
        assert seen["last_request"]["outcome"] == "unanswered", seen
        assert (api_versions["rule"], api_versions["severity"]) == ("api-missing", "breaks")
    else:  # it fell back: ApiVersions did not break it, the API it stopped at did
        assert (api_versions["rule"], api_versions["severity"]) == ("api-versions-fallback", "warns")
        answered = seen["last_request"]["outcome"] == "answered"
        assert breaking[stop]["rule"] == ("client-refuses-era" if answered else "fallback-not-answered")

    # The profile's measurement against the emulated 0.9.0 is what the real one shows.
    (profile,) = [p for p in load_measured() if (p["client"], p["version"]) == (library, release)]
    measured = profile["without_api_versions"]
    assert measured["measured_against"] == ERA
    assert (measured["ok"], measured["stopped_in"], measured["last_request"]) == (
        seen["ok"], seen["stopped_in"], seen["last_request"]
    ), (measured, seen)

    # The emulated 0.9.0 is the model of this broker: the same client stops in the same step,
    # having sent the same (API, version)s with the same outcomes (counts vary with timing).
    assert failed_step(emulated) == failed_step(report)
    assert wire(emulated_profiles) == wire(profiles)
    assert era_evidence(emulated, emulated_profiles)["last_request"] == seen["last_request"]


def failed_step(report: dict[str, Any]) -> str:
    return next(str(s["step"]) for s in report["steps"] if not s["ok"])


def wire(profiles: list[dict[str, Any]]) -> set[tuple[int, int, str]]:
    return {
        (r["api_key"], r["version"], outcome)
        for p in profiles
        for r in p["recorded"]["requests"]
        for outcome in r["outcomes"]
    }
