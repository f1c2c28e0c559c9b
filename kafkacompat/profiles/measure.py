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

Run: ``python -m kafkacompat.profiles.measure [--cache DIR] [--out FILE]``
(``make profiles``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.testing import ThreadedCluster
from kafkacompat.testing.cache import cache_root
from kafkacompat.testing.client_traffic import read_report

__all__ = ["AGAINST", "MEASURED", "measure", "merge_profiles"]

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
    library: str, target: Path, broker_release: str, scratch: Path
) -> tuple[dict[str, Any], list[Any]]:
    """One traffic run through ``record`` in front of an emulated broker: (report, profiles)."""
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
                [sys.executable, "-m", "kafkacompat.testing.client_traffic", library, f"127.0.0.1:{port}"],
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
    client: str, version: str, runs: dict[str, tuple[dict[str, Any], list[Any]]]
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
    profile = {
        "client": client,
        "version": version,
        "api_versions": [entries[key] for key in sorted(entries)],
        "recorded": {"source": "kafkacompat.profiles.measure", "against": evidence},
    }
    problems = validate_client_profile(profile)
    if problems:
        raise ValueError(f"{client} {version}: {problems}")
    return profile


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


def measure(cache: Path, out: Path, only: str | None = None) -> list[dict[str, Any]]:
    cache.mkdir(parents=True, exist_ok=True)
    scratch = cache / "recordings"
    scratch.mkdir(exist_ok=True)
    results = []
    kept = _existing(out) if only is not None else {}
    for library, pypi_name, release, pins in MEASURED:
        if only is not None and only != library:
            if (library, release) in kept:
                results.append(kept[(library, release)])
            continue
        target = install(pypi_name, release, cache, pins)
        runs = {against: record_run(library, target, against, scratch) for against in AGAINST}
        profile = merge_profiles(library, release, runs)
        steps = {a: "ok" if r["ok"] else "failed" for a, (r, _) in runs.items()}
        print(f"{library} {release}: {len(profile['api_versions'])} APIs; traffic {steps}", flush=True)
        results.append(profile)
    with out.open("w", encoding="utf-8") as handle:
        for profile in results:
            handle.write(json.dumps(profile, sort_keys=True) + "\n")
    return results


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
    args = parser.parse_args(argv)
    measure(args.cache, args.out, args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
