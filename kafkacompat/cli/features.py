"""``kafkacompat features describe|upgrade|downgrade|disable``: Kafka's kafka-features, checked first.

``describe`` prints ``kafka-features describe``'s lines for the cluster
(supported levels are those every broker supports; the finalized levels and
epoch are the newest any broker answered), then what each broker said where
they differ, and the highest level of each feature that can be finalized now.

``upgrade``, ``downgrade`` and ``disable`` take ``--feature NAME=LEVEL``
(repeatable; ``disable`` takes ``NAME``) and ``--release-version V`` for
metadata.version (e.g. 3.9-IV0; ``--metadata`` is the older spelling).  Before
anything is sent, every broker is asked what it supports: a level some broker
does not support, or that breaks a dependency between features, is refused
here, naming the brokers and dependencies that block it.  Then one
UpdateFeatures request goes to the controller (``--dry-run``: validate only).
Each feature gets one of Kafka's result sentences; if any failed, the last line
(on stderr) is ``N out of M operation(s) failed.`` and the exit status is 1.
"""

from __future__ import annotations

import argparse
from typing import Any

from kafkacompat.cli.connection_options import add_connection_options, resolve_connection, warn_ignored
from kafkacompat.cli.feature_updates import (
    Outcome,
    blocked_outcomes,
    parse_updates,
    refused_outcomes,
    result_sentence,
    unknown_features,
    wrong_direction,
)
from kafkacompat.cli.features_describe import describe_document, describe_lines
from kafkacompat.cli.output import Output
from kafkacompat.cli.probe import execute
from kafkacompat.errors import FeatureError, FeatureUpdateBlockedError
from kafkacompat.protocol.error_codes import error_for
from kafkacompat.transport.cluster import Cluster

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "features",
        help="describe, upgrade, downgrade or disable KIP-584 feature flags (kafka-features)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        allow_abbrev=False,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe", help="the cluster's supported and finalized features", allow_abbrev=False
    )
    add_connection_options(describe)
    describe.add_argument("--format", choices=("text", "json"), default="text")
    describe.add_argument("--brief", action="store_true", help="only kafka-features describe's lines")
    helps = {
        "upgrade": "upgrade one or more feature flags",
        "downgrade": "downgrade one or more feature flags",
        "disable": "disable one or more feature flags (the same as downgrading to level 0)",
    }
    for name, text in helps.items():
        sub = actions.add_parser(name, help=text, allow_abbrev=False)
        add_connection_options(sub)
        if name == "disable":
            sub.add_argument(
                "--feature",
                action="append",
                default=[],
                metavar="NAME",
                help="a feature to disable (repeatable)",
            )
        else:
            sub.add_argument(
                "--feature",
                action="append",
                default=[],
                metavar="NAME=LEVEL",
                help=f"a feature {name}, e.g. kraft.version=1 (repeatable)",
            )
            sub.add_argument(
                "--release-version",
                "--metadata",
                dest="release_version",
                metavar="VERSION",
                help=f"the metadata.version to {name} to, e.g. 3.9-IV0",
            )
        if name != "upgrade":
            sub.add_argument(
                "--unsafe",
                action="store_true",
                help="perform this even if it may irreversibly destroy metadata",
            )
        sub.add_argument(
            "--dry-run", action="store_true", help=f"validate this {name}, but do not perform it"
        )
    parser.set_defaults(handler=run)


def _describe(args: argparse.Namespace, output: Output, cluster_run: Any) -> int:
    async def ask(cluster: Cluster) -> Any:
        return await cluster.describe_features(), cluster.metadata.node_kind

    features, kind = cluster_run(ask)
    if args.format == "json":
        output.json(describe_document(features))
    else:
        output.lines(describe_lines(features, brief=args.brief, kind=kind))
    return 0


def _update(args: argparse.Namespace, output: Output, cluster_run: Any) -> int:
    op: str = args.action
    targets = parse_updates(op, args.feature, getattr(args, "release_version", None))
    dry_run: bool = args.dry_run
    unsafe: bool = getattr(args, "unsafe", False)

    async def change(cluster: Cluster) -> list[Outcome]:
        described = await cluster.describe_features()
        current = described.levels
        known = {name for node in described.nodes.values() for name in node.supported} | set(current)
        wrong = {**wrong_direction(op, targets, current), **unknown_features(targets, known)}
        if wrong:  # the controller would refuse it too, with less to say
            return [
                Outcome(
                    name,
                    level,
                    wrong.get(name, f"Not sent: another feature of this request cannot be {op}d that way."),
                )
                for name, level in sorted(targets.items())
            ]
        try:
            report = await cluster.update_features(targets, dry_run=dry_run, unsafe=unsafe)
        except FeatureUpdateBlockedError as exc:
            return blocked_outcomes(targets, exc.verdict, cluster)
        except FeatureError as exc:  # e.g. an unsafe metadata.version downgrade without --unsafe
            return refused_outcomes(targets, exc.message)
        outcomes = []
        for name, level in sorted(targets.items()):
            result = report.by_feature[name]
            error = None if result.ok else (result.error_message or error_for(result.error_code).message)
            outcomes.append(Outcome(name, level, error))
        return outcomes

    outcomes: list[Outcome] = cluster_run(change)
    output.lines([result_sentence(op, outcome, dry_run=dry_run) for outcome in outcomes])
    failures = sum(1 for outcome in outcomes if outcome.error is not None)
    if failures:
        output.note(f"{failures} out of {len(outcomes)} operation(s) failed.")
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action != "describe":
        # Refuse bad --feature arguments before connecting, as Kafka's tool does.
        parse_updates(args.action, args.feature, getattr(args, "release_version", None))
    options = resolve_connection(args)
    output = Output(options.redactor)
    warn_ignored(options)

    def cluster_run(fn: Any) -> Any:
        return execute(options, fn)

    if args.action == "describe":
        return _describe(args, output, cluster_run)
    return _update(args, output, cluster_run)
