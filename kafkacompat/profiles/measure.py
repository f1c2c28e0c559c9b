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

The brokers (``profiles.brokers``): real Apache Kafka 0.10.2, 1.0, 1.1
(ZooKeeper), 3.9 and 4.4 (KRaft; 4.4 closes on every version 4.x removed), so
a client's pick and its minimums show against five offers, old to new; the real Tansu
and librdkafka 2.0.2's mock cluster (look-alikes: a verdict on one is the
release's run there, ``verdicts``' measured-on-lookalike); and the real
Apache Kafka 0.9.0.1 (``ERA``: no ApiVersions;
it stays silent on it), which measures how the client reacts to a broker that
never answers ApiVersions: it gives up, or infers an old release and goes on,
and where it stops.  That run is evidence of its own
(``without_api_versions``) and kept out of ``api_versions``: its version
probes to a silent broker are not its traffic.  Each broker is started once
for every client.

Run: ``python -m kafkacompat.profiles.measure [--cache DIR] [--out FILE]
[--only LIBRARY] [--language LANG] [--runs DIR [--merge-only]]`` (``make
profiles``).  ``--only`` and ``--language`` renew those profiles and keep the
others of ``--out``; ``--runs`` keeps every run, and ``--merge-only`` merges
the runs kept there again without running anything.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkacompat._cache import cache_root
from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.profiles.brokers import (
    ERA,
    MOCK,
    TANSU,
    RecordedBroker,
    apache_line,
    client_profiles,
    recorded_broker,
)
from kafkacompat.profiles.installs import CLIENTS, ClientRelease, install, traffic_command
from kafkacompat.profiles.merge import Recording, merge_recordings
from kafkacompat.testing.client_traffic import read_report

__all__ = ["APACHE", "BROKERS", "ERA", "TANSU", "era_evidence", "measure", "traffic_run"]

# Real Apache Kafka, old to new: 0.10.2 offers the oldest versions a client may go down to
# (Metadata 0-2, Produce 0-2, JoinGroup 0-1); 1.0 and 1.1 come before KIP-394, 1.0 before
# DeleteGroups, and a client picking from its own table of releases sends them different versions
# where both offer the same (kafka-python 2.0.2's Produce: v4 to 1.0, v5 to 1.1); 3.9 is the last
# before KIP-896; 4.4 closes on every version 4.x removed and offers the newest.
APACHE: tuple[str, ...] = (
    "0.10.2.2/zookeeper",
    "1.0.2/zookeeper",
    "1.1.1/zookeeper",
    "3.9.2/kraft-combined",
    "4.4.0/kraft-combined",
)
BROKERS: tuple[str, ...] = (*APACHE, TANSU, MOCK, ERA)
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "measured.jsonl"
DEFAULT_CACHE = cache_root() / "clients"
ROOT = HERE.parent.parent
TRAFFIC_TIMEOUT_S = 240  # per run, should a client wait without end
ERA_REQUEST_TIMEOUT_S = 4.0  # every client waits this long on 0.9's silence before it moves
ERA_TRAFFIC_TIMEOUT_S = 75  # a client still retrying against 0.9 by then is stopped in its step


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
    with broker.recording(out) as bootstrap:
        argv, env = traffic_command(client, target, bootstrap, request_timeout_s)
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
    recorded = [json.loads(line) for line in out.read_text().splitlines() if line] if out.exists() else []
    return report, [dict(p) for p in client_profiles(recorded)]


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
            apache_line(name),
            profiles,
            bool(report["ok"]),
            sum(1 for step in report["steps"] if step["ok"] and "skipped" not in step),
            next((str(step["step"]) for step in report["steps"] if not step["ok"]), None),
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
    cache: Path,
    out: Path,
    chosen: Sequence[ClientRelease] = CLIENTS,
    brokers: Sequence[str] = BROKERS,
    runs_dir: Path | None = None,
    merge_only: bool = False,
) -> list[dict[str, Any]]:
    """Install ``chosen``, run each against every broker, write every profile to ``out``.

    Profiles in ``out`` of releases not chosen are kept as they are.  Each
    run (the traffic's report and what ``record`` wrote) is kept in
    ``runs_dir`` when given, one file per release and broker; ``merge_only``
    merges the runs already there instead of running anything.
    """
    with tempfile.TemporaryDirectory(prefix="kafkacompat-measure-") as scratch:
        kept_runs = runs_dir or Path(scratch) / "runs"
        if not merge_only:
            _run_all(cache, chosen, brokers, kept_runs, Path(scratch))
        renewed = {(c.library, c.release): profile_of(c, _read_runs(kept_runs, c, brokers)) for c in chosen}
    kept = _existing(out)
    order = [(c.library, c.release) for c in CLIENTS]
    results = [renewed.get(k) or kept[k] for k in order if k in renewed or k in kept]
    with out.open("w", encoding="utf-8") as handle:
        for profile in results:
            handle.write(json.dumps(profile, sort_keys=True) + "\n")
    return results


def _run_all(
    cache: Path, chosen: Sequence[ClientRelease], brokers: Sequence[str], runs_dir: Path, scratch: Path
) -> None:
    installed = [(client, install(client, cache)) for client in chosen]
    for name in brokers:
        timeout = ERA_REQUEST_TIMEOUT_S if name == ERA else None
        with recorded_broker(name) as broker:
            for client, target in installed:
                report, profiles = traffic_run(client, target, broker, scratch, timeout)
                path = _run_path(runs_dir, client, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"broker": name, "report": report, "profiles": profiles}) + "\n")
                print(f"{client.library} {client.release} against {name}: {_summary(report)}", flush=True)


def _run_path(runs_dir: Path, client: ClientRelease, broker: str) -> Path:
    return runs_dir / client.slug / f"{broker.replace('/', '-').replace(' ', '-')}.json"


def _read_runs(
    runs_dir: Path, client: ClientRelease, brokers: Sequence[str]
) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """The runs of ``client`` kept in ``runs_dir``, by broker; every broker must have one."""
    runs = {}
    for name in brokers:
        path = _run_path(runs_dir, client, name)
        if not path.exists():
            raise FileNotFoundError(f"no run of {client.library} {client.release} against {name} ({path})")
        run = json.loads(path.read_text(encoding="utf-8"))
        runs[name] = (run["report"], run["profiles"])
    return runs


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
    parser.add_argument("--runs", type=Path, help="keep each run (report, recordings) here")
    parser.add_argument("--merge-only", action="store_true", help="merge the runs already in --runs")
    args = parser.parse_args(argv)
    if args.merge_only and args.runs is None:
        parser.error("--merge-only needs --runs")
    chosen = [
        c
        for c in CLIENTS
        if (not args.only or c.library in args.only) and (not args.language or c.language in args.language)
    ]
    measure(args.cache, args.out, chosen, args.broker or BROKERS, args.runs, args.merge_only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
