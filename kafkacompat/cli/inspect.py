"""``kafkacompat inspect``: what a broker (or every broker) speaks, what this client would pick, and why.

Per broker: the block Kafka's ``kafka-broker-api-versions`` prints, with this
client's policy and the versions Kafka 4.x refuses marked; the features in
``kafka-features describe`` lines; the release guess with its evidence; the
handshake transcript.  With ``--all-brokers``: every broker Metadata names,
then the versions common to all of them, the skew between them, and
disagreeing feature epochs.  ``--format json`` prints one JSON document
instead (see docs/cli.md).  Exit status: 0 when every broker inspected
answered, 1 otherwise (the others are still shown).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from kafkacompat.cli.connection_options import (
    ConnectionOptions,
    add_connection_options,
    resolve_connection,
    warn_ignored,
)
from kafkacompat.cli.inspect_model import ProbeReport
from kafkacompat.cli.output import Output, Progress
from kafkacompat.cli.probe import probe
from kafkacompat.cli.render_inspect import broker_block, render_report
from kafkacompat.cli.render_json import inspect_document
from kafkacompat.cli.render_rich import colour_wanted, print_coloured

__all__ = ["add_output_options", "register", "run"]


def add_output_options(parser: argparse.ArgumentParser) -> None:
    out = parser.add_argument_group("output")
    out.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )
    out.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output (auto: on a terminal, when rich is installed)",
    )
    out.add_argument("--quiet", action="store_true", help="no progress on stderr")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="what a broker (or every broker) speaks, what this client would pick, and why",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
        allow_abbrev=False,
    )
    add_connection_options(parser)
    parser.add_argument("--all-brokers", action="store_true", help="inspect every broker Metadata names")
    parser.add_argument(
        "--expect-cluster-id",
        metavar="ID",
        help="the cluster the address must belong to: another one is an error (KIP-1242 on 4.4 brokers, "
        "Metadata's cluster id on older ones)",
    )
    parser.add_argument(
        "--brief",
        action="store_true",
        help="only the blocks kafka-broker-api-versions prints, exactly as it prints them",
    )
    add_output_options(parser)
    parser.set_defaults(handler=run)


def _brief(report: ProbeReport) -> list[str]:
    lines: list[str] = []
    for probe_result in report.brokers:
        lines += broker_block(probe_result, report.policy, marks=False)
    return lines


def print_text(output: Output, lines: list[str], colour: str) -> None:
    if colour_wanted(colour, output.stdout):
        try:
            print_coloured([output.redactor.text(line) for line in lines], output.stdout)
        except BrokenPipeError:  # the reader went away (| head): stop quietly
            output.closed = True
    else:
        output.lines(lines)


def failure_note(report: ProbeReport) -> str:
    failed = report.failed
    listed = "; ".join(f"node {b.node_id} at {b.endpoint}: {b.error}" for b in failed)
    return f"{len(failed)} of {len(report.brokers)} broker(s) could not be inspected: {listed}"


def expect_cluster(options: ConnectionOptions, cluster_id: str) -> ConnectionOptions:
    """The options with ``cluster_id`` expected by every handshake and bootstrap, and every
    broker checked: by itself at ApiVersions v5 (Kafka 4.4), else by the client from Metadata
    read on its connection (one round trip more per such broker; KIP-1242)."""
    handshake = dataclasses.replace(options.config.handshake, expected_cluster_id=cluster_id)
    config = dataclasses.replace(options.config, handshake=handshake, misrouting_check="every-connection")
    return dataclasses.replace(options, config=config)


def run(args: argparse.Namespace) -> int:
    options = resolve_connection(args)
    if args.expect_cluster_id is not None:
        options = expect_cluster(options, args.expect_cluster_id)
    output = Output(options.redactor)
    warn_ignored(options)
    progress = None
    if args.all_brokers:
        progress = Progress(0, "negotiating", redactor=options.redactor, mode="off" if args.quiet else None)
    report = probe(options, all_brokers=args.all_brokers, progress=progress)
    if args.format == "json":
        output.json(inspect_document(report))
    elif args.brief:
        output.lines(_brief(report))
    else:
        print_text(output, render_report(report), args.color)
    code = 0
    if report.failed:
        output.note(f"kafkacompat {args.command}: {failure_note(report)}")
        code = 1
    if report.not_contacted:
        output.note(f"kafkacompat {args.command}: {report.not_contacted}")
        code = 1
    return code
