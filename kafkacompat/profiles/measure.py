"""Measure client profiles: real client releases, real traffic, recorded from the wire.

Theory.  A profile typed in from a library's source says what its authors
meant; a recorded one says what it does.  Every release of
``installs.CLIENTS`` (Python, Java, Go and Node clients, each installed into
the cache, never into the running environment) runs the same application
traffic against every broker of ``BROKERS``, with ``kafkacompat record`` in
front (the broker advertising the recorder's port, so every connection is
seen).  The recordings of one release are merged into one profile
(``profiles.merge``: how it picks each version, which APIs it needs) and
written to ``measured.jsonl`` with the evidence under ``recorded``: per
broker, the steps of its traffic and the requests with their outcomes.

The brokers: the emulator's 1.0 (before KIP-394, DeleteGroups and most of
today's versions), 3.9 (the last before KIP-896) and 4.0 (KRaft; closes on
every removed version, as Kafka 4.0 does), so a client's pick shows against
three offers; the real Tansu (a
look-alike); and the real Apache Kafka 0.9.0.1 (``ERA``: no ApiVersions; it
stays silent on it), which measures how the client reacts to a broker that
never answers ApiVersions: it gives up, or infers an old release and goes on,
and where it stops.  That run is evidence of its own
(``without_api_versions``) and kept out of ``api_versions``: its version
probes to a silent broker are not its traffic.  Each broker is started once
for every client.

Run: ``python -m kafkacompat.profiles.measure [--cache DIR] [--out FILE]
[--only LIBRARY] [--language LANG]`` (``make profiles``).  ``--only`` and
``--language`` renew those profiles and keep the others of ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from kafkacompat._cache import cache_root
from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.profiles.installs import CLIENTS, ClientRelease, install, traffic_command
from kafkacompat.profiles.merge import Recording, merge_recordings
from kafkacompat.testing.client_traffic import read_report
from kafkacompat.testing.ports import free_port

__all__ = ["BROKERS", "ERA", "RecordedBroker", "era_evidence", "measure", "recorded_broker", "traffic_run"]

EMULATED: tuple[str, ...] = ("1.0", "3.9", "4.0/kraft-broker")
TANSU = "tansu 0.6.0"
ERA = "0.9.0.1"  # the real Apache Kafka without ApiVersions, measured apart
BROKERS: tuple[str, ...] = (*EMULATED, TANSU, ERA)
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "measured.jsonl"
DEFAULT_CACHE = cache_root() / "clients"
ROOT = HERE.parent.parent
TRAFFIC_TIMEOUT_S = 240  # per run, should a client wait without end
ERA_REQUEST_TIMEOUT_S = 4.0  # every client waits this long on 0.9's silence before it moves
ERA_TRAFFIC_TIMEOUT_S = 75  # a client still retrying against 0.9 by then is stopped in its step


class RecordedBroker:
    """A running broker whose metadata names the port ``record`` listens on during each run."""

    def __init__(self, name: str, upstream: str, port: int) -> None:
        self.name, self.upstream, self.port = name, upstream, port

    @property
    def apache_release(self) -> str | None:
        return None if self.name == TANSU else self.name.partition("/")[0]

    @contextmanager
    def recording(self, out: Path) -> Iterator[int]:
        """``record`` in front of the broker; yields the port clients bootstrap from."""
        recorder = start_recorder(self.port, self.upstream, out)
        try:
            yield self.port
        finally:
            stop_recorder(recorder)


def start_recorder(port: int, upstream: str, out: Path) -> subprocess.Popen[str]:
    """``kafkacompat record`` listening on ``port`` of 127.0.0.1, writing ``out`` when stopped."""
    recorder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafkacompat.cli",
            "record",
            "--listen",
            f"127.0.0.1:{port}",
            "--upstream",
            upstream,
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert recorder.stdout is not None
    first = recorder.stdout.readline()
    if not first.startswith("recording: "):
        recorder.kill()
        raise RuntimeError(f"kafkacompat record did not start (exit {recorder.wait()}): {first!r}")
    return recorder


def stop_recorder(recorder: subprocess.Popen[str]) -> None:
    recorder.terminate()  # it writes its profiles on the way out
    try:
        recorder.wait(timeout=30)
    except subprocess.TimeoutExpired:
        recorder.kill()
        recorder.wait()


@contextmanager
def recorded_broker(name: str) -> Iterator[RecordedBroker]:
    """One broker of ``BROKERS`` (or an emulated release), started once, advertising a recorder's port."""
    port = free_port()
    if name == TANSU:
        from kafkacompat.testing.tansu import TansuBroker

        class AdvertisingTansu(TansuBroker):
            @property
            def command(self) -> list[str]:
                argv = super().command
                argv[argv.index("--advertised-listener-url") + 1] = f"tcp://127.0.0.1:{port}"
                return argv

        with AdvertisingTansu() as tansu:
            yield RecordedBroker(name, tansu.bootstrap, port)
        return
    if name == ERA:
        from kafkacompat.testing.kafka09 import Kafka09Broker

        broker_port = free_port()
        with tempfile.TemporaryDirectory() as scratch:
            # Its controller reaches the broker through the advertised port while it starts.
            startup = start_recorder(port, f"127.0.0.1:{broker_port}", Path(scratch) / "startup.jsonl")
            try:
                broker = Kafka09Broker(port=broker_port, advertised_port=port).__enter__()
            finally:
                stop_recorder(startup)
        try:
            yield RecordedBroker(name, broker.bootstrap, port)
        finally:
            broker.stop()
        return
    from kafkacompat.testing import ThreadedCluster

    cluster = ThreadedCluster(name, brokers=1, topics={"traffic": 1}).start()
    try:
        upstream = cluster.bootstrap  # before the broker advertises the recorder's port instead
        cluster.brokers[0].node.port = port
        yield RecordedBroker(name, upstream, port)
    finally:
        cluster.close()


def traffic_run(
    client: ClientRelease,
    target: Path,
    broker: RecordedBroker,
    scratch: Path,
    request_timeout_s: float | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One run of the client's traffic through ``record``: (report, profiles recorded)."""
    out = scratch / f"{client.slug}-{broker.name.replace('/', '-').replace(' ', '-')}.jsonl"
    out.unlink(missing_ok=True)
    with broker.recording(out) as port:
        argv, env = traffic_command(client, target, f"127.0.0.1:{port}", request_timeout_s)
        if request_timeout_s is not None:
            env["KAFKACOMPAT_TRAFFIC_TIMEOUT"] = str(int(request_timeout_s * 2))
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        try:
            output, _ = process.communicate(
                timeout=TRAFFIC_TIMEOUT_S if request_timeout_s is None else ERA_TRAFFIC_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:  # read_report names the step it was stopped in
            process.kill()
            output, _ = process.communicate()
    report = read_report(output, client.library)
    profiles = [json.loads(line) for line in out.read_text().splitlines() if line] if out.exists() else []
    return report, profiles


def era_evidence(report: dict[str, Any], profiles: list[Any]) -> dict[str, Any]:
    """What a run against a broker that never answers ApiVersions showed, as verdicts read it.

    The last request is the one the recording saw last over all the client's
    connections: a client that stopped while waiting on it gave up there; one
    whose last request was answered stopped of its own accord after that answer.
    """
    lasts = [p["recorded"].get("last_request") for p in profiles]
    last = max((r for r in lasts if r), key=lambda r: int(r["sequence"]), default=None)
    failed = next((s for s in report["steps"] if not s["ok"]), None)
    return {
        "measured_against": ERA,
        "ok": bool(report["ok"]),
        "stopped_in": None if failed is None else failed["step"],
        "last_request": None if last is None else {k: last[k] for k in ("api_key", "version", "outcome")},
        "answered": sorted(
            [r["api_key"], r["version"]] for r in _joined_requests(profiles) if "answered" in r["outcomes"]
        ),
    }


def profile_of(client: ClientRelease, runs: dict[str, tuple[dict[str, Any], list[Any]]]) -> dict[str, Any]:
    """The merged profile of one release, with its evidence and its run against ``ERA``."""
    recordings = [
        Recording(
            name,
            None if name == TANSU else name.partition("/")[0],
            profiles,
            bool(report["ok"]),
            sum(1 for step in report["steps"] if step["ok"] and "skipped" not in step),
        )
        for name, (report, profiles) in runs.items()
        if name != ERA
    ]
    merged = merge_recordings(client.library, client.release, recordings)
    merged["language"] = client.language
    merged["recorded"] = {
        "source": "kafkacompat.profiles.measure",
        "against": {
            name: {
                "steps": [
                    {k: s[k] for k in ("step", "ok", "error", "skipped") if k in s} for s in report["steps"]
                ],
                "clients": sorted({p["client"] for p in profiles}),
                "requests": _joined_requests(profiles),
            }
            for name, (report, profiles) in sorted(runs.items())
        },
    }
    if ERA in runs:
        merged["without_api_versions"] = era_evidence(*runs[ERA])
    problems = validate_client_profile(merged)
    if problems:
        raise ValueError(f"{client.library} {client.release}: {problems}")
    return merged


def _joined_requests(profiles: list[Any]) -> list[dict[str, Any]]:
    joined: dict[tuple[int, int], dict[str, int]] = {}
    for profile in profiles:
        for r in profile["recorded"]["requests"]:
            counts = joined.setdefault((r["api_key"], r["version"]), {})
            for outcome, n in r["outcomes"].items():
                counts[outcome] = counts.get(outcome, 0) + n
    return [
        {"api_key": key, "version": version, "outcomes": dict(sorted(outcomes.items()))}
        for (key, version), outcomes in sorted(joined.items())
    ]


def measure(
    cache: Path, out: Path, chosen: Sequence[ClientRelease] = CLIENTS, brokers: Sequence[str] = BROKERS
) -> list[dict[str, Any]]:
    """Install ``chosen``, run each against every broker, write every profile to ``out``.

    Profiles in ``out`` of releases not chosen are kept as they are.
    """
    installed = [(client, install(client, cache)) for client in chosen]
    runs: dict[str, dict[str, tuple[dict[str, Any], list[Any]]]] = {c.slug: {} for c in chosen}
    with tempfile.TemporaryDirectory(prefix="kafkacompat-measure-") as scratch:
        for name in brokers:
            timeout = ERA_REQUEST_TIMEOUT_S if name == ERA else None
            with _started(name) as broker:
                for client, target in installed:
                    report, profiles = traffic_run(client, target, broker, Path(scratch), timeout)
                    runs[client.slug][name] = (report, profiles)
                    print(f"{client.library} {client.release} against {name}: {_summary(report)}", flush=True)
    renewed = {(c.library, c.release): profile_of(c, runs[c.slug]) for c in chosen}
    kept = _existing(out)
    order = [(c.library, c.release) for c in CLIENTS]
    results = [renewed.get(k) or kept[k] for k in order if k in renewed or k in kept]
    with out.open("w", encoding="utf-8") as handle:
        for profile in results:
            handle.write(json.dumps(profile, sort_keys=True) + "\n")
    return results


def _started(name: str) -> AbstractContextManager[RecordedBroker]:
    return recorded_broker(name)


def _summary(report: dict[str, Any]) -> str:
    if report["ok"]:
        return "ok"
    failed = next((s for s in report["steps"] if not s["ok"]), {"step": "?", "error": ""})
    return f"failed in {failed['step']}: {str(failed.get('error', ''))[:120]}"


def _existing(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    if not out.exists():
        return {}
    profiles = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line]
    return {(p["client"], p["version"]): p for p in profiles}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkacompat.profiles.measure", description=__doc__)
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help="where client releases are installed"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", choices=sorted({c.library for c in CLIENTS}), action="append")
    parser.add_argument("--language", choices=sorted({c.language for c in CLIENTS}), action="append")
    parser.add_argument("--broker", choices=BROKERS, action="append", help="(default: all of them)")
    args = parser.parse_args(argv)
    chosen = [
        c
        for c in CLIENTS
        if (not args.only or c.library in args.only) and (not args.language or c.language in args.language)
    ]
    measure(args.cache, args.out, chosen, args.broker or BROKERS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
