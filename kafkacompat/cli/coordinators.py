"""``kafkacompat coordinators``: the coordinator of every group or transactional id, and how it was found.

Keys come from ``--group`` (repeatable), ``--groups-file`` (one group a line;
blank lines and ``#`` comments skipped; ``-`` reads stdin) and
``--transactional-id`` (repeatable).  They are looked up with as few
FindCoordinator requests as the brokers allow: one batched request per
destination on brokers that take v4+ (KIP-699), one request per key on older
ones; keys that fail with a retriable error are asked again, a bounded number
of times.  Exit status: 0 when every key has a coordinator, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkacompat.cli.connection_options import add_connection_options, resolve_connection, warn_ignored
from kafkacompat.cli.files import read_text
from kafkacompat.cli.output import Output
from kafkacompat.cli.probe import execute
from kafkacompat.cluster.coordinator_lookup import CoordinatorLookup
from kafkacompat.errors import ConfigError, UsageError
from kafkacompat.negotiation.coordinators import CoordinatorFound, KeyLookupFailure
from kafkacompat.transport.cluster import Cluster

__all__ = ["coordinators_document", "read_keys_file", "register", "render_text", "run"]

JSON_VERSION = 1
_KEY_TYPES = (("group", "group"), ("transaction", "transactional id"))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "coordinators",
        help="the coordinator of groups and transactional ids (batched where the broker allows)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
        allow_abbrev=False,
    )
    add_connection_options(parser)
    keys = parser.add_argument_group("keys")
    keys.add_argument("--group", action="append", default=[], metavar="GROUP", help="a group id (repeatable)")
    keys.add_argument("--groups-file", type=Path, metavar="FILE", help="group ids, one a line ('-': stdin)")
    keys.add_argument(
        "--transactional-id",
        action="append",
        default=[],
        metavar="ID",
        help="a transactional id (repeatable)",
    )
    keys.add_argument(
        "--max-batch", type=int, default=None, metavar="N", help="at most N keys per batched request"
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )
    parser.set_defaults(handler=run)


def read_keys_file(path: Path) -> list[str]:
    """Keys one a line; blank lines and lines starting with ``#`` are skipped."""
    text = sys.stdin.read() if str(path) == "-" else read_text(path, "the groups file")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def _unique(keys: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def _entries(key_type: str, keys: Sequence[str], lookup: CoordinatorLookup) -> list[dict[str, Any]]:
    entries = []
    for key in keys:
        result: CoordinatorFound | KeyLookupFailure = lookup.result(key)
        if isinstance(result, CoordinatorFound):
            entries.append(
                {
                    "key": key,
                    "key_type": key_type,
                    "node_id": result.node_id,
                    "host": result.host,
                    "port": result.port,
                    "error": None,
                }
            )
        else:
            error = f"{result.error_name}: {result.message}" if result.message else result.error_name
            entries.append(
                {
                    "key": key,
                    "key_type": key_type,
                    "node_id": None,
                    "host": None,
                    "port": None,
                    "error": error,
                }
            )
    return entries


def coordinators_document(lookups: Sequence[tuple[str, Sequence[str], CoordinatorLookup]]) -> dict[str, Any]:
    """The JSON document: every key's coordinator or error, and how the lookups went."""
    return {
        "_command": "coordinators",
        "_version": JSON_VERSION,
        "coordinators": [entry for kind, keys, lookup in lookups for entry in _entries(kind, keys, lookup)],
        "requests": sum(lookup.requests for _, _, lookup in lookups),
        "batched": any(lookup.batched for _, _, lookup in lookups),
        "batched_requests": sum(lookup.batched_requests for _, _, lookup in lookups),
        "round_trips": sum(lookup.round_trips for _, _, lookup in lookups),
        "rounds": max((lookup.rounds for _, _, lookup in lookups), default=0),
        "versions": sorted({v for _, _, lookup in lookups for v in lookup.versions}),
    }


def _how(kind: str, keys: Sequence[str], lookup: CoordinatorLookup) -> str:
    versions = ", ".join(f"v{v}" for v in lookup.versions) or "no version"
    shape = (
        f"{lookup.batched_requests} batched request(s)"
        + (f" and {lookup.single_key_requests} single-key request(s)" if lookup.single_key_requests else "")
        if lookup.batched
        else f"{lookup.requests} single-key request(s)"
    )
    return (
        f"{len(keys)} {kind} key(s): {len(lookup.found)} found, {len(lookup.failed)} failed; "
        f"FindCoordinator {versions}, {shape}, {lookup.round_trips} round trip(s), {lookup.rounds} round(s)"
    )


def render_text(lookups: Sequence[tuple[str, Sequence[str], CoordinatorLookup]]) -> list[str]:
    rows = [("KEY", "TYPE", "COORDINATOR (ID)")]
    for kind, keys, lookup in lookups:
        for entry in _entries(kind, keys, lookup):
            where = (
                f"{entry['host']}:{entry['port']} ({entry['node_id']})"
                if entry["error"] is None
                else f"ERROR: {entry['error']}"
            )
            rows.append((entry["key"], kind, where))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{key:<{widths[0]}}  {kind:<{widths[1]}}  {where}".rstrip() for key, kind, where in rows]
    lines.append("")
    lines += [_how(kind, keys, lookup) for kind, keys, lookup in lookups]
    return lines


def run(args: argparse.Namespace) -> int:
    groups = list(args.group) + (read_keys_file(args.groups_file) if args.groups_file is not None else [])
    wanted = [
        (kind, _unique(keys)) for kind, keys in (("group", groups), ("transaction", args.transactional_id))
    ]
    wanted = [(kind, keys) for kind, keys in wanted if keys]
    if not wanted and args.groups_file is not None:
        raise ConfigError(f"--groups-file {args.groups_file} names no group (one a line; # comments)")
    if not wanted:
        raise UsageError("no key given: use --group, --groups-file or --transactional-id")
    if args.max_batch is not None and args.max_batch < 1:
        raise UsageError(f"--max-batch must be at least 1, got {args.max_batch}")
    options = resolve_connection(args)
    output = Output(options.redactor)
    warn_ignored(options)

    async def look(cluster: Cluster) -> list[tuple[str, Sequence[str], CoordinatorLookup]]:
        found: list[tuple[str, Sequence[str], CoordinatorLookup]] = []
        for kind, keys in wanted:
            extra = {"max_batch": args.max_batch} if args.max_batch is not None else {}
            found.append((kind, keys, await cluster.find_coordinators(keys, kind, **extra)))
        return found

    lookups = execute(options, look)
    if args.format == "json":
        output.json(coordinators_document(lookups))
    else:
        output.lines(render_text(lookups))
    failed = sum(len(lookup.failed) for _, _, lookup in lookups)
    if failed:
        total = sum(len(keys) for _, keys, _ in lookups)
        output.note(f"kafkacompat {args.command}: {failed} of {total} key(s) have no coordinator")
        return 1
    return 0
