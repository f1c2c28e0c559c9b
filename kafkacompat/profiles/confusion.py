"""Verdicts against reality: each measured client's traffic on real brokers, next to ``check``'s verdict.

Theory.  A verdict is worth betting an upgrade on only if it matches what
happens.  For each real broker here (``REAL_BROKERS``: Apache Kafka 2.8.2 and
3.9.2 in ZooKeeper mode, 4.0.2 and 4.4.0 in KRaft, 0.9.0.1; Tansu, noida-db,
librdkafka's mock; ``profiles.brokers`` starts them), started once with
``kafkacompat record`` in front, this takes the broker's
snapshot (``kafkacompat snapshot``, what an operator's fleet collects) and
runs the traffic of the client releases planned for it (``runs``; ``make
verdict-table`` plans every measured release on every broker, ``make test``
a representative set); then ``kafkacompat
check measured --cluster`` of that snapshot (the broker identified, its
release guessed) gives the verdicts (``judged``), each put next to the
outcome.  The two halves are apart so that traffic can be collected while
the profiles are being measured:

- ``works`` and the traffic got through: right; failed: a false "works";
- ``breaks`` and the traffic failed: right if a breaking API is where the
  client stopped (an API the broker answered with an error, closed on or
  left unanswered; the last request of a client that stopped of its own
  accord; or an API of the step it failed in); got through: a false "breaks";
- ``unknown``: "can't tell", whatever happened.

Run: ``python -m kafkacompat.profiles.confusion [--client LIB@RELEASE ...]
[--broker NAME ...] [--runs DIR] [--judge-only]`` (``make verdict-table``
runs all of them); ``--runs`` keeps the runs (snapshots and outcomes) in
DIR, ``--judge-only`` judges the runs already there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkacompat.negotiation.measured_runs import STEP_APIS
from kafkacompat.profiles import load_measured
from kafkacompat.profiles.brokers import (
    ERA,
    MOCK,
    NOIDA,
    TANSU,
    RecordedBroker,
    recorded_broker,
    start_recorder,
    stop_recorder,
)
from kafkacompat.profiles.installs import CLIENTS, ClientRelease, install
from kafkacompat.profiles.measure import DEFAULT_CACHE, ERA_REQUEST_TIMEOUT_S, traffic_run

__all__ = ["APACHE_BROKERS", "REAL_BROKERS", "Cell", "cells", "judged", "markdown", "runs", "summary"]

# Real Apache Kafka: a ZooKeeper-mode 2.x and 3.9, and KRaft 4.0 and 4.4 (4.0.2 is not among the
# brokers profiles are measured against: its column is judged from ranges measured elsewhere).
APACHE_BROKERS: tuple[str, ...] = (
    "2.8.2/zookeeper",
    "3.9.2/zookeeper",
    "4.0.2/kraft-combined",
    "4.4.0/kraft-combined",
)
REAL_BROKERS: tuple[str, ...] = (*APACHE_BROKERS, ERA, TANSU, NOIDA, MOCK)

# Sent in the first steps by every client (ApiVersions, Metadata, FindCoordinator).
_COMMON = {3, 10, 18}


@dataclass(frozen=True)
class Cell:
    client: str  # "library release"
    broker: str
    verdict: str  # works, breaks, unknown
    breaking: tuple[str, ...]  # the APIs the verdict says break
    ok: bool  # the traffic got through
    failed_step: str | None
    stopped_at: tuple[str, ...]  # the APIs where the client stopped (see the theory)
    findings: tuple[str, ...] = field(default=())

    @property
    def kind(self) -> str:
        if self.verdict == "unknown":
            return "can't tell"
        if self.verdict == "works":
            return "right" if self.ok else "false works"
        if self.ok:
            return "false breaks"
        return "right" if set(self.breaking) & set(self.stopped_at) else "breaks at the wrong API"


def _api_names() -> dict[int, str]:
    from kafkacompat.reference import API_NAMES

    return dict(API_NAMES)


def stopped_at(report: dict[str, Any], profiles: list[dict[str, Any]]) -> tuple[str, ...]:
    """The APIs where a failed run stopped, by the recording and the step it failed in."""
    if report["ok"]:
        return ()
    names = _api_names()
    keys: set[int] = set()
    for profile in profiles:
        for r in profile["recorded"]["requests"]:
            if any(o != "answered" for o in r["outcomes"]):
                keys.add(r["api_key"])
    lasts = [p["recorded"].get("last_request") for p in profiles]
    last = max((r for r in lasts if r), key=lambda r: int(r["sequence"]), default=None)
    if last is not None:
        keys.add(int(last["api_key"]))
    failed = next((s["step"] for s in report["steps"] if not s["ok"]), None)
    keys |= set(STEP_APIS.get(str(failed), ())) | (_COMMON if failed in ("setup", "metadata") else set())
    return tuple(names.get(k, str(k)) for k in sorted(keys))


def snapshot_of(broker: RecordedBroker, out: Path) -> None:
    """``kafkacompat snapshot`` of the running broker, through the recorder it advertises."""
    recorder = start_recorder(broker.bootstrap, broker.upstream, out.with_suffix(".recorded.jsonl"))
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafkacompat.cli",
                "snapshot",
                "--all-brokers",
                "--timeout",
                "10",
                "--out",
                str(out),
                "--quiet",
                # a broker before KIP-78 (0.9) names no cluster id: the broker's name stands in
                "--cluster-id",
                broker.name.replace(" ", "-"),
                broker.bootstrap,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        stop_recorder(recorder)
    if not out.exists() or not out.read_text().strip():
        raise RuntimeError(f"no snapshot of {broker.name}: {done.stderr.strip()[-300:]}")


def runs(
    plan: Mapping[str, Sequence[ClientRelease]],
    directory: Path,
    cache: Path = DEFAULT_CACHE,
    while_running: Callable[[RecordedBroker], None] | None = None,
) -> None:
    """Each broker's snapshot and the outcomes of its clients (``plan``: broker -> clients) in ``directory``.

    ``while_running`` is called with each broker once its clients ran, before it stops.
    """
    installed = {c: install(c, cache) for clients in plan.values() for c in clients}
    directory.mkdir(parents=True, exist_ok=True)
    for name, clients in plan.items():
        slug = _slug(name)
        with (
            recorded_broker(name) as broker,
            tempfile.TemporaryDirectory(prefix="kafkacompat-confusion-") as scratch,
        ):
            snapshot_of(broker, directory / f"{slug}.snapshot.jsonl")
            timeout = ERA_REQUEST_TIMEOUT_S if name == ERA else None
            with (directory / f"{slug}.outcomes.jsonl").open("a", encoding="utf-8") as outcomes:
                for client in clients:
                    report, profiles = traffic_run(client, installed[client], broker, Path(scratch), timeout)
                    outcome = {
                        "client": f"{client.library} {client.release}",
                        "library": client.library,
                        "release": client.release,
                        "broker": name,
                        "ok": bool(report["ok"]),
                        "failed_step": next((s["step"] for s in report["steps"] if not s["ok"]), None),
                        "error": next((s.get("error") for s in report["steps"] if not s["ok"]), None),
                        "stopped_at": list(stopped_at(report, profiles)),
                    }
                    outcomes.write(json.dumps(outcome) + "\n")
                    outcomes.flush()
            if while_running is not None:
                while_running(broker)


def _slug(name: str) -> str:
    return name.replace(" ", "-").replace("/", "-")


def judged(directory: Path, brokers: Sequence[str] = REAL_BROKERS) -> list[Cell]:
    """The cells of the runs under ``directory``: ``check measured --cluster`` of each snapshot."""
    measured = {f"{p['client']} {p['version']}" for p in load_measured()}
    out = []
    for name in brokers:
        slug = _slug(name)
        snapshot, outcomes_file = directory / f"{slug}.snapshot.jsonl", directory / f"{slug}.outcomes.jsonl"
        if not outcomes_file.exists():
            continue
        latest = {}
        for line in outcomes_file.read_text(encoding="utf-8").splitlines():
            outcome = json.loads(line)
            if outcome["client"] in measured:
                latest[outcome["client"]] = outcome  # a client run again: its last run
        if not latest:
            continue
        wanted = [a for o in latest.values() for a in ("--client", f"{o['library']}@{o['release']}")]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafkacompat.cli",
                "check",
                "measured",
                *wanted,
                "--cluster",
                str(snapshot),
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        try:
            verdicts = {v["client"]: v for v in json.loads(done.stdout)["verdicts"]}
        except ValueError:
            raise RuntimeError(
                f"check of {name}'s snapshot printed no verdicts: {done.stderr.strip()[-300:]}"
            ) from None
        for client, outcome in latest.items():
            verdict = verdicts[client]
            findings = [f for f in verdict["findings"] if f["severity"] != "warns"]
            out.append(
                Cell(
                    client,
                    name,
                    verdict["status"],
                    tuple(dict.fromkeys(f["api"] for f in findings if f["severity"] == "breaks")),
                    outcome["ok"],
                    outcome["failed_step"],
                    tuple(outcome["stopped_at"]),
                    tuple(dict.fromkeys(f"{f['api']}: {f['rule']}" for f in findings)),
                )
            )
    return out


def cells(
    plan: Mapping[str, Sequence[ClientRelease]],
    cache: Path = DEFAULT_CACHE,
    while_running: Callable[[RecordedBroker], None] | None = None,
) -> list[Cell]:
    """Every cell of ``plan`` (broker -> clients): the verdict of ``check`` and what the traffic did."""
    with tempfile.TemporaryDirectory(prefix="kafkacompat-runs-") as directory:
        runs(plan, Path(directory), cache, while_running)
        return judged(Path(directory), list(plan))


def summary(table: Sequence[Cell]) -> Counter[str]:
    return Counter(cell.kind for cell in table)


def markdown(table: Sequence[Cell]) -> str:
    """The table as docs/upgrade.md shows it: one row per client, one column per broker."""
    brokers = list(dict.fromkeys(c.broker for c in table))
    clients = list(dict.fromkeys(c.client for c in table))
    at = {(c.client, c.broker): c for c in table}
    lines = ["| client | " + " | ".join(brokers) + " |", "|---|" + "---|" * len(brokers)]
    for client in clients:
        row = []
        for broker in brokers:
            cell = at.get((client, broker))
            if cell is None:
                row.append("")
                continue
            outcome = "ran" if cell.ok else f"failed in {cell.failed_step or 'setup'}"
            said = cell.verdict + (f" ({', '.join(cell.breaking)})" if cell.breaking else "")
            mark = "" if cell.kind == "right" else f" **{cell.kind}**"
            row.append(f"{said} / {outcome}{mark}")
        lines.append(f"| {client} | " + " | ".join(row) + " |")
    counts = summary(table)
    kinds = ("right", "false works", "false breaks", "breaks at the wrong API", "can't tell")
    lines.append("")
    lines.append(f"{len(table)} cells: " + ", ".join(f"{counts[kind]} {kind}" for kind in kinds))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkacompat.profiles.confusion", description=__doc__)
    parser.add_argument("--client", action="append", metavar="LIBRARY@RELEASE", help="(default: every one)")
    parser.add_argument("--language", action="append", choices=sorted({c.language for c in CLIENTS}))
    parser.add_argument("--broker", action="append", choices=REAL_BROKERS, help="(default: every one)")
    parser.add_argument("--runs", type=Path, help="keep the runs here (snapshots, outcomes)")
    parser.add_argument("--judge-only", action="store_true", help="judge the runs already in --runs")
    parser.add_argument("--json", type=Path, help="also write the cells as JSON lines")
    args = parser.parse_args(argv)
    chosen = [
        c
        for c in CLIENTS
        if (not args.client or f"{c.library}@{c.release}" in args.client)
        and (not args.language or c.language in args.language)
    ]
    brokers = args.broker or REAL_BROKERS
    plan = {broker: chosen for broker in brokers}
    if args.runs is None:
        table = cells(plan)
    else:
        if not args.judge_only:
            runs(plan, args.runs)
        table = judged(args.runs, brokers)
    if args.json is not None:
        with args.json.open("w", encoding="utf-8") as handle:
            for cell in table:
                handle.write(json.dumps(cell.__dict__) + "\n")
    print(markdown(table))
    counts = summary(table)
    return 0 if counts["false works"] == 0 and counts["breaks at the wrong API"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
