"""Synthetic fleets for demos and benchmarks: snapshot lines and client profiles (pure Python).

Theory.  A believable fleet needs the situations the report exists for, drawn
from facts rather than invented: every broker answers the ApiVersions table of
a real release and kind (``kafkacompat.reference.RELEASES``), and KRaft
brokers support the feature levels their release shipped (read from the
feature table: a ``metadata.version`` level belongs to the release that
introduced it, and another feature's level is dated by the metadata.version it
requires or bootstraps with).  Per cluster, a seeded generator draws:

- a kind (KRaft or ZooKeeper brokers) and a release, newer ones more often;
- a scenario: steady, a rolling upgrade caught midway (some brokers already on
  a release one to three steps newer, each from some observation on), or a
  rollback (one broker back on an older release, which can fence it out of
  the finalized metadata.version);
- finalized features (KRaft): metadata.version at or a little below what the
  base release supports, sometimes raised during the observed period (the
  epoch grows), kraft.version and newer features where the release has them;
- lagging brokers that still report the previous epoch after a change.

Each broker is observed ``observations`` times, a few hours apart.  Each
cluster has its own ``random.Random`` (seeded from the fleet seed and its
index), so a fleet is reproducible and can be written in parts.  Lines are
assembled from JSON fragments rendered once per release, which is what makes a
million lines take seconds rather than minutes; a test checks that they read
back exactly as ``snapshot_line`` would write them.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import IO, Any, TextIO

from kafkacompat.negotiation.features import CATALOG, METADATA_VERSION
from kafkacompat.negotiation.release_guess import guess_release
from kafkacompat.pipeline.client_format import client_profile, kafkacompat_client_profile
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import FEATURES, RELEASES

__all__ = [
    "FleetSpec",
    "generate_clients",
    "generate_fleet",
    "release_features",
    "write_fleet",
    "write_fleet_files",
]

_KRAFT, _ZK = "kraft-broker", "zk-broker"
_APIVERSIONS = ApiKey.API_VERSIONS


@dataclass(frozen=True)
class FleetSpec:
    """What to generate: ``clusters`` x ``brokers`` x ``observations`` snapshot lines.

    ``bad_every``: replace every n-th line with a bad one (malformed, unknown
    schema, missing field, in turn); 0 writes none.
    """

    clusters: int
    brokers: int
    observations: int = 3
    seed: int = 0
    start: datetime = datetime(2025, 1, 1, tzinfo=UTC)
    interval: timedelta = timedelta(hours=6)
    bad_every: int = 0

    def __post_init__(self) -> None:
        if self.clusters < 0 or self.brokers < 1 or self.observations < 1 or self.bad_every < 0:
            raise ValueError("need clusters >= 0, brokers >= 1, observations >= 1, bad_every >= 0")

    @property
    def lines(self) -> int:
        return self.clusters * self.brokers * self.observations


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def release_features(release: str, kind: str) -> dict[str, tuple[int, int]]:
    """The feature levels a broker of ``release``/``kind`` supports (KRaft brokers only)."""
    if kind != _KRAFT:
        return {}
    shipped = {
        fact.level: fact.release
        for fact in FEATURES.get(METADATA_VERSION, ())
        if fact.release is not None and _release_key(fact.release) <= _release_key(release)
    }
    out: dict[str, tuple[int, int]] = {}
    for name, facts in FEATURES.items():
        if name == METADATA_VERSION:
            levels = sorted(shipped)
        else:
            levels = [
                fact.level
                for fact in facts
                if fact.level > 0
                and (fact.bootstrap_metadata_version or fact.requires.get(METADATA_VERSION)) in shipped
            ]
            levels = [0, *levels] if levels else []
        if levels:
            out[name] = (levels[0], levels[-1])
    return out


@dataclass(frozen=True)
class _Release:
    name: str
    kind: str
    features: dict[str, tuple[int, int]]
    fragment: str  # the line's middle part, from "release_guess" to "supported_features"
    handshake: str


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@cache
def _releases(kind: str) -> tuple[_Release, ...]:
    found = []
    for profile in sorted((p for p in RELEASES if p.kind == kind), key=lambda p: _release_key(p.release)):
        if _APIVERSIONS not in profile.apis:
            continue  # predates ApiVersions: no snapshot can come from a handshake with it
        ranges = {k: VersionRange(low, high) for k, (low, high) in sorted(profile.apis.items())}
        guess = guess_release(ranges)
        features = release_features(profile.release, kind)
        fragment = (
            '"release_guess":'
            + _dumps({"kind": guess.kind, "text": guess.text, "evidence": list(guess.evidence)})
            + ',"api_versions":'
            + _dumps([{"api_key": k, "min": r.lowest, "max": r.highest} for k, r in ranges.items()])
            + ',"supported_features":'
            + _dumps([{"name": n, "min": lo, "max": hi} for n, (lo, hi) in sorted(features.items())])
        )
        version = min(profile.apis[_APIVERSIONS][1], 3)
        handshake = _dumps(
            {
                "attempts": [{"version": version, "outcome": "ok"}],
                "round_trips": 1,
                "connections": 1,
                "api_versions_version": version,
            }
        )
        found.append(_Release(profile.release, kind, features, fragment, handshake))
    return tuple(found)


@dataclass
class _State:
    epoch: int
    finalized: dict[str, int]

    def json(self) -> str:
        return _dumps([{"name": n, "min": lv, "max": lv} for n, lv in sorted(self.finalized.items())])


def _pick(rng: random.Random, count: int) -> int:
    """An index below ``count``, newer (higher) ones more likely."""
    return min(count - 1, int(count * rng.random() ** 0.5))


def _initial_state(rng: random.Random, release: _Release) -> _State:
    if release.kind != _KRAFT:
        return _State(-1, {})
    finalized: dict[str, int] = {}
    mv = release.features.get(METADATA_VERSION)
    if mv is not None:
        finalized[METADATA_VERSION] = rng.randint(max(mv[0], mv[1] - 3), mv[1])
        for name, (_, high) in sorted(release.features.items()):
            if name == METADATA_VERSION or high == 0:
                continue
            needs = CATALOG.dependencies(name, high).get(METADATA_VERSION, 0)
            if finalized[METADATA_VERSION] >= needs and rng.random() < 0.5:
                finalized[name] = high
    return _State(rng.randint(1, 200), finalized)


def _cluster_lines(spec: FleetSpec, index: int) -> Iterator[str]:
    rng = random.Random(spec.seed * 1_000_003 + index)
    kind = _KRAFT if rng.random() < 0.7 else _ZK
    releases = _releases(kind)
    base = _pick(rng, len(releases))
    changes: list[tuple[int, int, int]] = []  # (broker, from observation, release index)
    scenario = rng.random()
    last = max(spec.observations - 1, 0)
    if scenario < 0.35 and base + 1 < len(releases):
        target = min(len(releases) - 1, base + rng.randint(1, 3))
        upgraded = rng.randint(1, max(1, spec.brokers - 1))
        changes = [(b, rng.randint(min(1, last), last), target) for b in range(upgraded)]
    elif scenario < 0.42 and base > 0:
        changes = [(spec.brokers - 1, rng.randint(min(1, last), last), max(0, base - rng.randint(1, 2)))]
    states = [_initial_state(rng, releases[base])]
    bump_at = rng.randint(1, last) if last and rng.random() < 0.3 else None
    lagging = {node for node in range(spec.brokers) if rng.random() < 0.25} if bump_at else set()
    cluster_id = f"cluster-{index:05d}"
    offset = timedelta(seconds=index % 3600)
    for t in range(spec.observations):
        state = states[-1]
        mv = state.finalized.get(METADATA_VERSION)
        supported = releases[base].features.get(METADATA_VERSION, (0, 0))[1]
        if t == bump_at and mv is not None and mv < supported:
            states.append(_State(state.epoch + 1, {**state.finalized, METADATA_VERSION: mv + 1}))
        when = spec.start + spec.interval * t + offset
        for node in range(spec.brokers):
            current = base
            for broker, start, release_index in changes:
                if broker == node and t >= start:
                    current = release_index
            release = releases[current]
            seen = states[-2] if len(states) > 1 and node in lagging else states[-1]
            stamp = (when + timedelta(seconds=7 * node)).strftime("%Y-%m-%dT%H:%M:%SZ")
            yield (
                f'{{"schema":1,"observed_at":"{stamp}","cluster_id":"{cluster_id}","node_id":{node},'
                f'"endpoint":"broker-{node}.{cluster_id}.example:9092",{release.fragment},'
                f'"finalized_features":{seen.json()},"finalized_features_epoch":{seen.epoch},'
                f'"handshake":{release.handshake}}}'
            )


def _spoil(line: str, which: int) -> str:
    if which == 0:
        return line[: len(line) // 2]
    if which == 1:
        return line.replace('"schema":1', '"schema":2', 1)
    start = line.index('"node_id":')
    return line[:start] + line[line.index(",", start) + 1 :]


def generate_fleet(spec: FleetSpec) -> Iterator[str]:
    """The fleet's snapshot lines (no newlines), cluster by cluster."""
    count = 0
    for index in range(spec.clusters):
        for line in _cluster_lines(spec, index):
            count += 1
            if spec.bad_every and count % spec.bad_every == 0:
                line = _spoil(line, (count // spec.bad_every) % 3)
            yield line


def write_fleet(spec: FleetSpec, out: IO[str], lines: Iterator[str] | None = None) -> int:
    """Write the fleet (or ``lines``) as JSON lines to ``out``; returns the number of lines."""
    written = 0
    batch: list[str] = []
    for line in generate_fleet(spec) if lines is None else lines:
        batch.append(line)
        if len(batch) == 4096:
            out.write("\n".join(batch) + "\n")
            written += len(batch)
            batch.clear()
    if batch:
        out.write("\n".join(batch) + "\n")
        written += len(batch)
    return written


def write_fleet_files(
    spec: FleetSpec, directory: Path, files: int, open_file: Callable[[Path], TextIO] | None = None
) -> list[Path]:
    """Write the fleet as ``files`` JSON-lines files (consecutive clusters per file), as a
    collector writing many files would; returns their paths.  ``open_file`` opens each
    for writing (default: ``Path.open``; the command line passes its own rules for files)."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = generate_fleet(spec)
    per_file = -(-spec.lines // max(1, files))
    paths = []
    for index in range(max(1, files)):
        path = directory / f"snapshots-{index:05d}.jsonl"
        with open_file(path) if open_file is not None else path.open("w", encoding="utf-8") as out:
            write_fleet(spec, out, itertools.islice(lines, per_file))
        paths.append(path)
    return paths


# Client-facing APIs a Java client of a release may send, and what each role needs.
_CLIENT_APIS = frozenset(
    {
        0,
        1,
        2,
        3,
        8,
        9,
        10,
        11,
        12,
        13,
        14,
        15,
        16,
        17,
        18,
        19,
        20,
        21,
        22,
        23,
        24,
        25,
        26,
        28,
        29,
        30,
        31,
        32,
        33,
        35,
        36,
        37,
        42,
        44,
        47,
        48,
        49,
        50,
        51,
        57,
        60,
        61,
        65,
        66,
        68,
        69,
    }
)
_ROLES: dict[str, tuple[int, ...]] = {
    "producer": (0, 3, 18),
    "consumer": (1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18),
    "admin": (3, 18, 19, 20, 32),
}


def generate_clients(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` client profiles: kafkacompat's own, then Java producers, consumers and admins.

    A synthetic Java client of release R writes the versions that release's
    brokers answer, for the client-facing APIs; its role's APIs are required.
    """
    if count < 1:
        return []
    rng = random.Random(seed)
    candidates = [
        (role, release) for role in _ROLES for release in [*_releases(_ZK), *_releases(_KRAFT)[-3:]]
    ]
    rng.shuffle(candidates)
    seen: set[tuple[str, str]] = set()
    profiles = [kafkacompat_client_profile()]
    for role, release in candidates:
        if len(profiles) == count:
            break
        if (role, release.name) in seen:
            continue
        seen.add((role, release.name))
        table = next(p.apis for p in RELEASES if p.release == release.name and p.kind == release.kind)
        ranges = {k: r for k, r in table.items() if k in _CLIENT_APIS}
        required = [k for k in _ROLES[role] if k in ranges]
        profiles.append(client_profile(f"java-{role}", release.name, ranges, required))
    return profiles
