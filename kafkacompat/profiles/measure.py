"""Measure client profiles: real client releases, real traffic, recorded from the wire.

Theory.  A profile typed in from a library's source says what its authors
meant; a recorded one says what it does.  For every (library, release) of
``MEASURED`` this script installs the release into a directory of its own
(``pip install --target``, never into the running environment, which pins the
current releases), and for every emulated broker release of ``AGAINST`` it
starts the emulator, puts ``kafkacompat record`` in front of it (the broker
advertising the proxy), and runs the traffic scenario of
``kafkacompat.testing.client_traffic`` with the release first on
``sys.path``.  The profiles recorded against each broker are merged into one
per client release (the scenario runs several clients of one library, which
name themselves differently) and written to ``measured.jsonl``, with the
evidence under ``recorded``: per broker release, the steps and the requests.

Four broker releases: 1.0 (before KIP-394, DeleteGroups and most of today's
versions), 2.3 (the last before KIP-511), 3.9 (the last before KIP-896) and
4.0 (KRaft; closes on every removed version, as Kafka 4.0 does).
Each shows the client's pick against another offer; a recorded ``min`` is
still only a bound (``min_exact`` false).  A
client that sends the same version of an API to both while the offers differ
above it has a fixed pick, or a lower max; one that follows the offer picks
the highest in common.

One more run, against the emulated 0.9.0 (``ERA``: no ApiVersions; like the
real 0.9.0.1 it stays silent on it), measures how the client reacts to a
broker that never answers ApiVersions: it gives up, or falls back to a
guessed release and goes on, and where it stops.  That run is evidence of its
own (``without_api_versions``: whether the traffic got through, the step it
stopped in, the last request it sent and what became of it); it is kept out
of ``api_versions``, which says what the client sends to brokers that answer
(its version probes to a silent broker are not its traffic).  ``--era-only``
adds or renews just that run on the profiles already written.

Run: ``python -m kafkacompat.profiles.measure [--cache DIR] [--out FILE]
[--only LIBRARY] [--era-only]`` (``make profiles``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kafkacompat._cache import cache_root
from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.testing import ThreadedCluster
from kafkacompat.testing.client_traffic import read_report

__all__ = ["AGAINST", "ERA", "MEASURED", "era_evidence", "measure", "merge_profiles", "with_era"]

# (library as the scenario names it, PyPI name, release, pins it needs): one old, one current
# of each.  aiokafka before 0.9 imports kafka-python's internals (kafka.conn), gone in 3.x.
MEASURED: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("kafka-python", "kafka-python", "2.0.2", ()),
    ("kafka-python", "kafka-python", "3.0.12", ()),
    ("aiokafka", "aiokafka", "0.8.1", ("kafka-python==2.0.2",)),
    ("aiokafka", "aiokafka", "0.14.0", ()),
    ("confluent-kafka", "confluent-kafka", "2.0.2", ()),
    ("confluent-kafka", "confluent-kafka", "2.16.1", ()),
)
AGAINST: tuple[str, ...] = ("1.0", "2.3", "3.9", "4.0/kraft-broker")
ERA = "0.9.0"  # a broker without ApiVersions, measured apart
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "measured.jsonl"
DEFAULT_CACHE = cache_root() / "clients"
ROOT = HERE.parent.parent


def install(pypi_name: str, release: str, cache: Path, pins: tuple[str, ...] = ()) -> Path:
    """The release's own directory, installed on first use."""
    target = cache / f"{pypi_name}-{release}"
    if not (target / ".complete").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--target",
                str(target),
                f"{pypi_name}=={release}",
                *pins,
            ],
            check=True,
        )
        (target / ".complete").write_text("ok\n")
    return target


def record_run(
    library: str, target: Path, broker_release: str, scratch: Path, request_timeout_s: float | None = None
) -> tuple[dict[str, Any], list[Any]]:
    """One traffic run through ``record`` in front of an emulated broker: (report, profiles).

    ``request_timeout_s`` is the clients' own request timeout (``client_traffic``'s
    ``--request-timeout``); None keeps the scenario's defaults.
    """
    timeout = [] if request_timeout_s is None else ["--request-timeout", str(request_timeout_s)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    out = scratch / f"{library}-{target.name}-{broker_release.replace('/', '-')}.jsonl"
    cluster = ThreadedCluster(broker_release, brokers=1, topics={"traffic": 1}).start()
    try:
        proxy = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kafkacompat.cli",
                "record",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                cluster.bootstrap,
                "--out",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proxy.stdout is not None
        first = proxy.stdout.readline()
        if not first.startswith("recording: "):
            proxy.kill()
            raise RuntimeError(f"kafkacompat record did not start (exit {proxy.wait()}): {first!r}")
        port = int(first.split()[1].rpartition(":")[2])
        cluster.brokers[0].node.port = port  # the broker advertises the proxy
        try:
            done = subprocess.run(
                [
                    sys.executable, "-m", "kafkacompat.testing.client_traffic", *timeout,
                    library, f"127.0.0.1:{port}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
                env=env,
            )
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)
    finally:
        cluster.close()
    report = read_report(done.stdout, library)
    profiles = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return report, profiles


def merge_profiles(
    client: str,
    version: str,
    runs: dict[str, tuple[dict[str, Any], list[Any]]],
    era: tuple[dict[str, Any], list[Any]] | None = None,
) -> dict[str, Any]:
    """One profile from every run's profiles: ranges joined, fixed if fixed anywhere.

    An API is required when the client sent it in every run whose traffic got
    through: one it did without against some broker (telemetry, KIP-848's
    describe where the broker does not offer them) is used only when offered.
    """
    entries: dict[int, dict[str, Any]] = {}
    passed = [
        {e["api_key"] for p in profiles for e in p["api_versions"]}
        for report, profiles in runs.values()
        if report["ok"]
    ]
    for _, profiles in runs.values():
        for profile in profiles:
            for e in profile["api_versions"]:
                seen = entries.get(e["api_key"])
                if seen is None:
                    entries[e["api_key"]] = dict(e)
                    continue
                if e["max"] > seen["max"]:
                    seen["max_exact"] = e["max_exact"]
                elif e["max"] == seen["max"]:
                    seen["max_exact"] = seen["max_exact"] or e["max_exact"]
                seen["min"], seen["max"] = min(seen["min"], e["min"]), max(seen["max"], e["max"])
                if e["pick"] == "fixed":
                    seen["pick"] = "fixed"
    for key, e in entries.items():
        e["required"] = all(key in sent for sent in passed)
    evidence = {
        release: {
            "steps": [
                {k: s[k] for k in ("step", "ok", "error", "skipped") if k in s} for s in report["steps"]
            ],
            "clients": sorted({p["client"] for p in profiles}),
            "requests": _joined_requests(profiles),
        }
        for release, (report, profiles) in sorted(runs.items())
    }
    merged: dict[str, Any] = {
        "client": client,
        "version": version,
        "api_versions": [entries[key] for key in sorted(entries)],
        "recorded": {"source": "kafkacompat.profiles.measure", "against": evidence},
    }
    if era is not None:
        merged = with_era(merged, era)
    problems = validate_client_profile(merged)
    if problems:
        raise ValueError(f"{client} {version}: {problems}")
    return merged


def era_evidence(report: dict[str, Any], profiles: list[Any]) -> dict[str, Any]:
    """What a run against a broker that never answers ApiVersions showed, as verdicts read it.

    The last request is the one the recording saw last over all the client's
    connections (one recording numbers them all): a client that stopped while
    waiting on it gave up there; one whose last request was answered stopped
    of its own accord after that answer.
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


def with_era(profile: dict[str, Any], era: tuple[dict[str, Any], list[Any]]) -> dict[str, Any]:
    """``profile`` with the run against ``ERA`` added (or renewed) as evidence of its own."""
    report, profiles = era
    against = dict(profile["recorded"]["against"])
    against[ERA] = {
        "steps": [{k: s[k] for k in ("step", "ok", "error", "skipped") if k in s} for s in report["steps"]],
        "clients": sorted({p["client"] for p in profiles}),
        "requests": _joined_requests(profiles),
    }
    merged: dict[str, Any] = {
        **profile,
        "recorded": {**profile["recorded"], "against": dict(sorted(against.items()))},
        "without_api_versions": era_evidence(report, profiles),
    }
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
    cache: Path, out: Path, only: str | None = None, era_only: bool = False
) -> list[dict[str, Any]]:
    """Measure every release of ``MEASURED`` (or ``only`` one library's) and write ``out``.

    ``era_only`` keeps the profiles already in ``out`` and runs only the
    release against ``ERA``, adding it to each.
    """
    cache.mkdir(parents=True, exist_ok=True)
    scratch = cache / "recordings"
    scratch.mkdir(exist_ok=True)
    results = []
    kept = _existing(out) if only is not None or era_only else {}
    for library, pypi_name, release, pins in MEASURED:
        if only is not None and only != library:
            if (library, release) in kept:
                results.append(kept[(library, release)])
            continue
        target = install(pypi_name, release, cache, pins)
        era = record_run(library, target, ERA, scratch)
        if era_only:
            if (library, release) not in kept:
                raise ValueError(f"--era-only: {library} {release} is not in {out}; measure it first")
            results.append(with_era(kept[(library, release)], era))
            print(f"{library} {release}: against {ERA} {era_summary(era[0])}", flush=True)
            continue
        runs = {against: record_run(library, target, against, scratch) for against in AGAINST}
        profile = merge_profiles(library, release, runs, era)
        steps = {a: era_summary(r) for a, (r, _) in {**runs, ERA: era}.items()}
        print(f"{library} {release}: {len(profile['api_versions'])} APIs; traffic {steps}", flush=True)
        results.append(profile)
    with out.open("w", encoding="utf-8") as handle:
        for profile in results:
            handle.write(json.dumps(profile, sort_keys=True) + "\n")
    return results


def era_summary(report: dict[str, Any]) -> str:
    return "ok" if report["ok"] else "failed"


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
    parser.add_argument("--only", choices=sorted({m[0] for m in MEASURED}))
    parser.add_argument(
        "--era-only", action="store_true", help=f"only (re)measure the run against {ERA} on the kept profiles"
    )
    args = parser.parse_args(argv)
    measure(args.cache, args.out, args.only, args.era_only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
