"""``kafkacompat snapshot``: append one JSON line per broker connection, for the fleet pipeline.

Each line is schema 1 of the fleet pipeline's input, made by the pipeline's
own ``snapshot_line`` (``kafkacompat.pipeline.snapshot_format``; the shape is
in docs/cli.md): when it was observed, the cluster id, the node, its
endpoint, the release guess, every API range it answered, its supported and
finalized features with the epoch, and the handshake.  ``--out -`` writes to
stdout.  Lines are appended, never rewritten, so one file can collect many
runs.  KRaft controllers (``--bootstrap-controller``) are snapshotted like
brokers; one older than 3.7 says neither its node id nor its cluster id, so
both must then be given (``--node-id``, ``--cluster-id``).  Exit status: 0
when every broker probed gave a line, 1 otherwise (the others are still
written).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kafkacompat.cli.connection_options import add_connection_options, resolve_connection, warn_ignored
from kafkacompat.cli.files import append_text
from kafkacompat.cli.inspect import failure_note
from kafkacompat.cli.inspect_model import ProbeReport
from kafkacompat.cli.output import Output, Progress
from kafkacompat.cli.probe import probe
from kafkacompat.cluster.controller_discovery import UNKNOWN_NODE_ID
from kafkacompat.errors import ConfigError, UsageError
from kafkacompat.pipeline.snapshot_format import snapshot_json, snapshot_line, validate_snapshot

__all__ = ["register", "run", "snapshot_lines"]


def snapshot_lines(
    report: ProbeReport, cluster_id: str | None = None, node_id: int | None = None
) -> list[str]:
    """One schema-1 line per broker that answered; ``cluster_id`` overrides Metadata's.

    ``node_id`` names a lone node that did not say its own (a KRaft controller
    older than 3.7); a node id is never invented.
    """
    name = cluster_id or report.cluster_id
    if not name:
        why = (
            "the controller has no DescribeCluster, which came in Kafka 3.7"
            if report.node_kind == "controller"
            else "its Metadata version predates them"
        )
        raise ConfigError(f"the cluster sent no cluster id ({why}); name it with --cluster-id")
    unknown = [b for b in report.brokers if b.node_id == UNKNOWN_NODE_ID and b.capabilities is not None]
    if unknown and node_id is None:
        raise ConfigError(
            f"{unknown[0].endpoint} did not say its node id (a KRaft controller before Kafka 3.7 has no "
            "DescribeCluster); give it with --node-id"
        )
    if node_id is not None and not unknown:
        raise ConfigError("--node-id is only for a node that does not say its own id")
    lines = []
    for broker in report.brokers:
        if broker.capabilities is None:
            continue
        node = node_id if broker.node_id == UNKNOWN_NODE_ID and node_id is not None else broker.node_id
        line = snapshot_line(broker.capabilities, name, report.observed_at, node_id=node)
        problems = validate_snapshot(line)
        if problems:  # pragma: no cover - the pipeline's helper writes valid lines
            raise ConfigError(f"the snapshot of node {broker.node_id} is not valid: {'; '.join(problems)}")
        lines.append(snapshot_json(line))
    return lines


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "snapshot",
        help="append one JSON line per broker for the fleet pipeline",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
        allow_abbrev=False,
    )
    add_connection_options(parser)
    parser.add_argument("--all-brokers", action="store_true", help="one line for every broker Metadata names")
    parser.add_argument(
        "--out", required=True, metavar="FILE.jsonl", help="the file to append to ('-': stdout)"
    )
    parser.add_argument("--cluster-id", metavar="ID", help="the cluster id to record (default: Metadata's)")
    parser.add_argument(
        "--node-id", type=int, metavar="ID", help="the id of a controller that does not say it (before 3.7)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    parser.set_defaults(handler=run)


def _append(path: str, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    append_text(path, text, "--out")


def run(args: argparse.Namespace) -> int:
    if args.node_id is not None and args.node_id < 0:
        raise UsageError(f"--node-id {args.node_id}: node ids are 0 or more")
    if args.cluster_id is not None and not args.cluster_id.strip():
        raise UsageError("--cluster-id is empty")
    options = resolve_connection(args)
    if args.out != "-":  # a bad --out (a symbolic link, a directory) is said before any broker is asked
        append_text(args.out, "", "--out")
    output = Output(options.redactor)
    warn_ignored(options)
    progress = None
    if args.all_brokers:
        progress = Progress(0, "negotiating", redactor=options.redactor, mode="off" if args.quiet else None)
    report = probe(options, all_brokers=args.all_brokers, progress=progress)
    lines = [options.redactor.text(line) for line in snapshot_lines(report, args.cluster_id, args.node_id)]
    _append(args.out, lines)
    if args.out != "-" and not args.quiet:
        output.note(f"appended {len(lines)} line(s) to {args.out}")
    if report.failed:
        output.note(f"kafkacompat {args.command}: {failure_note(report)}")
        return 1
    return 0
