"""The fixture fleet: a generated fleet plus hand-made clusters for every edge the report has.

Every snapshot line is written by ``snapshot_line`` (or the generator, whose
lines are checked to match it), so the fixture also exercises the writer the
``kafkacompat snapshot`` command uses.  Bad lines are listed with the reason
the plain-Python validator gives them; the Spark job must agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.transcript import HandshakeAttempt, HandshakeTranscript
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.pipeline import FleetSpec, generate_clients, generate_fleet, snapshot_json, snapshot_line
from kafkacompat.pipeline.client_format import client_profile

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
BASE_APIS = {0: (0, 9), 1: (0, 13), 3: (0, 12), 10: (0, 4), 18: (0, 3)}
MV = "metadata.version"
KRAFT = "kraft.version"


def _line(
    cluster: str,
    node: int,
    apis: dict[int, tuple[int, int]] | None = None,
    *,
    at: datetime | str = T0,
    supported: dict[str, tuple[int, int]] | None = None,
    finalized: dict[str, tuple[int, int]] | None = None,
    epoch: int | None = None,
    endpoint: str | None = None,
) -> dict[str, Any]:
    transcript = HandshakeTranscript(
        attempts=(HandshakeAttempt(version=3, connection=1, outcome="ok"),),
        round_trips=1,
        connections=1,
        api_versions_version=3,
    )
    caps = BrokerCapabilities.from_ranges(
        endpoint or f"{cluster}-b{node}:9092",
        BASE_APIS if apis is None else apis,
        node_id=node,
        supported_features=supported,
        finalized_features=finalized,
        finalized_features_epoch=epoch,
        transcript=transcript,
    )
    return snapshot_line(caps, cluster, at)


def edge_clusters() -> list[dict[str, Any]]:
    """Hand-made snapshots, one list entry per line."""
    out: list[dict[str, Any]] = []
    # An API missing on one broker: min/max over the others would hide it.
    out += [_line("edge-missing", n) for n in (1, 2)]
    out.append(_line("edge-missing", 3, {k: r for k, r in BASE_APIS.items() if k != 10}))
    # A range with min above max is "not listed".
    out += [_line("edge-empty", 1), _line("edge-empty", 2, {**BASE_APIS, 3: (5, 3)})]
    # Brokers whose Metadata ranges do not meet; and a range the edge client cannot reach.
    out += [
        _line("edge-disjoint", 1, {**BASE_APIS, 3: (0, 4)}),
        _line("edge-disjoint", 2, {**BASE_APIS, 3: (6, 12)}),
    ]
    out += [_line("edge-old", n, {**BASE_APIS, 3: (0, 2), 1: (0, 3)}) for n in (1, 2)]
    # Features: a dependency that blocks (kraft.version 1 needs metadata.version 21) ...
    kraft_brokers = {MV: (1, 21), KRAFT: (0, 1)}
    out += [
        _line("edge-dep", n, supported=kraft_brokers, finalized={MV: (20, 20)}, epoch=7) for n in (1, 2, 3)
    ]
    # ... one that holds a level up (kraft.version 1 finalized keeps metadata.version >= 21,
    # which these brokers no longer support: no safe level at all) ...
    out += [
        _line(
            "edge-required",
            n,
            supported={MV: (1, 20), KRAFT: (0, 1)},
            finalized={MV: (21, 21), KRAFT: (1, 1)},
            epoch=40,
        )
        for n in (1, 2)
    ]
    # ... a rolled-back broker no longer holding the finalized level (fenced) ...
    out += [
        _line("edge-fenced", n, supported=kraft_brokers, finalized={MV: (21, 21)}, epoch=9) for n in (1, 2)
    ]
    out.append(
        _line("edge-fenced", 3, supported={MV: (1, 20), KRAFT: (0, 1)}, finalized={MV: (21, 21)}, epoch=9)
    )
    # ... a broker that does not list a feature (level 0 only), and a feature unknown to the catalog.
    out += [
        _line(
            "edge-unlisted",
            1,
            supported={MV: (1, 21), KRAFT: (0, 1), "custom.feature": (0, 3)},
            finalized={MV: (21, 21), "custom.feature": (2, 2)},
            epoch=3,
        ),
        _line(
            "edge-unlisted",
            2,
            supported={MV: (1, 21), "custom.feature": (1, 3)},
            finalized={MV: (21, 21), "custom.feature": (2, 2)},
            epoch=3,
        ),
    ]
    # Epochs: one broker behind, one unknown (-1): stale is only the known, older one.
    out += [
        _line("edge-stale", 1, supported=kraft_brokers, finalized={MV: (19, 19)}, epoch=10),
        _line("edge-stale", 2, supported=kraft_brokers, finalized={MV: (21, 21)}, epoch=12),
        _line("edge-stale", 3, supported=kraft_brokers, finalized={}, epoch=None),
    ]
    # Same epoch, different contents: the tie goes to the greater contents, as in merge_finalized.
    out += [
        _line("edge-conflict", 1, supported=kraft_brokers, finalized={MV: (18, 18)}, epoch=5),
        _line("edge-conflict", 2, supported=kraft_brokers, finalized={MV: (20, 20)}, epoch=5),
    ]
    # KRaft controllers (as `kafkacompat snapshot --bootstrap-controller` writes them): kept in
    # latest, features and epochs, never negotiated with.  A cluster with its quorum, where
    # the controllers lack every client API; and a quorum snapshotted alone.
    controller = {
        key: (r.lowest, r.highest) for key, r in known_api_ranges("3.9", "kraft-controller").items()
    }
    quorum_brokers = [
        _line("edge-quorum", n, supported=kraft_brokers, finalized={MV: (21, 21)}, epoch=4) for n in (1, 2)
    ]
    out += quorum_brokers
    out += [
        _line("edge-quorum", n, controller, supported=kraft_brokers, finalized={MV: (21, 21)}, epoch=n)
        for n in (3000, 3001)
    ]
    out.append(_line("edge-quorum-only", 3000, controller))
    # Latest by instant, not by text: +02:00 at 01:00 is 23:00Z, before 23:30Z.
    out += [
        _line("edge-time", 1, {**BASE_APIS, 3: (0, 5)}, at="2025-03-02T01:00:00+02:00"),
        _line("edge-time", 1, {**BASE_APIS, 3: (0, 7)}, at="2025-03-01T23:30:00Z"),
        _line("edge-time", 1, {**BASE_APIS, 3: (0, 9)}, at="2025-03-01T22:00:00.123456Z"),
        _line("edge-time", 2, {**BASE_APIS, 3: (0, 12)}, at=T0 + timedelta(days=1)),
    ]
    return out


def edge_client() -> dict[str, Any]:
    """A client with every kind of answer: no overlap, unknown API, an API it cannot write."""
    return client_profile(
        "edge-client",
        "1.0",
        {3: (5, 12), 10: (0, 4), 18: (0, 3), 200: (0, 1), 1: (3, 2), 0: (0, 9)},
        required=(3, 18),
    )


# (text, the validator's reason) for each bad snapshot line; the file, line and reason are checked.
_GOOD = _line("edge-bad", 1)


def _with(**changes: Any) -> str:
    return snapshot_json({**_GOOD, **changes})


def _without(name: str) -> str:
    return snapshot_json({k: v for k, v in _GOOD.items() if k != name})


BAD_SNAPSHOT_LINES: list[str] = [
    "not json at all",
    "[1, 2, 3]",
    "null",
    _with(schema=2),
    _without("node_id"),
    _with(cluster_id=None),
    _with(node_id="seven"),
    _with(node_id=2**40),
    _with(api_versions=[{"api_key": 3, "min": 0, "max": 4}, {"api_key": 3, "min": 0, "max": 5}]),
    _with(api_versions=[{"api_key": 3, "min": 0}, None]),
    _with(supported_features=[{"name": None, "min": 0, "max": 1}]),
    _with(observed_at="2025-03-01 12:00:00"),
    _with(observed_at="2025-03-01T12:00:00"),
    _with(observed_at="2025-02-30T12:00:00Z"),
    _with(finalized_features_epoch=-5),
    _with(schema=1, finalized_features=None, endpoint=None),
    '{"schema": 1, "observed_at": "2025-03-01T12:00:00Z"',
]
# Valid despite odd diagnostics: those are read as null, never make a line bad.
ODD_DIAGNOSTICS = snapshot_json({**_line("edge-diag", 1), "handshake": 5, "release_guess": {"text": [1]}})


@dataclass
class Fixture:
    files: dict[str, list[str]] = field(default_factory=dict)  # name -> lines
    crlf: set[str] = field(default_factory=set)  # files written with \r\n
    clients: list[str] = field(default_factory=list)
    bad: list[tuple[str, int, str]] = field(default_factory=list)  # (file, 1-based line, text)


def build_fixture() -> Fixture:
    generated = list(generate_fleet(FleetSpec(clusters=14, brokers=4, observations=3, seed=11)))
    edges = [snapshot_json(line) for line in edge_clusters()]
    first = generated[: len(generated) // 2] + edges[:20]
    second = generated[len(generated) // 2 :] + edges[20:] + [ODD_DIAGNOSTICS]
    fixture = Fixture()
    # Bad lines at known places: spread through the first file, a repeated one, and one last
    # line without a newline in the second (a CRLF file).
    bad_iter = iter(BAD_SNAPSHOT_LINES)
    out: list[str] = []
    for i, line in enumerate(first):
        out.append(line)
        if i % 5 == 2:
            bad = next(bad_iter, None)
            if bad is not None:
                out.append(bad)
        if i == 10:
            out.append("")  # a blank line: skipped, not bad
            out.append("   ")
    for bad in bad_iter:
        out.append(bad)
    out.append(BAD_SNAPSHOT_LINES[0])  # the same bad text twice: reported on both lines
    fixture.files["snapshots-1.jsonl"] = out
    fixture.files["snapshots-2.jsonl"] = [*second, BAD_SNAPSHOT_LINES[3]]
    fixture.crlf.add("snapshots-2.jsonl")
    for name, lines in fixture.files.items():
        for number, text in enumerate(lines, 1):
            if text in BAD_SNAPSHOT_LINES:
                fixture.bad.append((name, number, text))
    profiles = [*generate_clients(5, seed=2), edge_client()]
    fixture.clients = [json.dumps(p) for p in profiles]
    # Bad profiles: malformed, a missing field, and the same (client, version) twice.
    fixture.clients += ['{"client": "broken"', json.dumps({"client": "nov", "api_versions": []})]
    fixture.clients += [json.dumps(client_profile("twice", "1", {18: (0, 3)}))] * 2
    return fixture


def write_fixture(fixture: Fixture, directory: Any) -> tuple[list[str], str]:
    """Write the files; returns (snapshot paths, client path)."""
    paths = []
    for name, lines in fixture.files.items():
        path = directory / name
        ending = "\r\n" if name in fixture.crlf else "\n"
        body = ending.join(lines)
        path.write_bytes(body.encode("utf-8"))  # the last line has no line break
        paths.append(str(path))
    clients = directory / "clients.jsonl"
    clients.write_text("\n".join(fixture.clients) + "\n", encoding="utf-8")
    return paths, str(clients)
