"""``kafkacompat emulate``: run emulated Kafka brokers of any release on loopback.

For people testing other clients against releases nobody can install any
more: the brokers answer ApiVersions, Metadata, FindCoordinator,
DescribeCluster, UpdateFeatures and SASL the way the chosen release did.  The
first line printed is ``bootstrap: HOST:PORT[,HOST:PORT...]``; the command runs
until Ctrl-C or SIGTERM (or ``--duration`` seconds).  It binds 127.0.0.1 and
refuses any non-loopback address unless ``--allow-non-loopback`` is given.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from typing import Any

import trio

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.reference.releases import KINDS
from kafkacompat.testing.emulator import EmulatedCluster, SaslConfig
from kafkacompat.testing.emulator.sasl import MECHANISMS

__all__ = ["build_cluster", "register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "emulate",
        help="run emulated brokers of any Kafka release (0.8.0-4.2) on loopback",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "--release",
        action="append",
        metavar="RELEASE[/KIND]",
        help="Kafka release, e.g. 2.3 or 3.9/kraft-broker; repeat for a mixed cluster (default 3.9)",
    )
    parser.add_argument("--kind", choices=KINDS, help="broker kind (default: zk-broker where it exists)")
    parser.add_argument("--brokers", type=int, help="number of brokers (default: one per --release)")
    parser.add_argument("--port", type=int, default=0, help="first port; the next brokers take the next ones")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind and advertise (loopback)")
    parser.add_argument(
        "--allow-non-loopback", action="store_true", help="allow binding an address that is not loopback"
    )
    parser.add_argument("--cluster-id", default="kafkacompat-emulated")
    parser.add_argument("--topic", action="append", default=[], metavar="NAME[:PARTITIONS]")
    parser.add_argument(
        "--sasl-user",
        action="append",
        default=[],
        metavar="USER:PASSWORD",
        help="require SASL and accept this user (repeatable)",
    )
    parser.add_argument(
        "--sasl-mechanism",
        action="append",
        choices=MECHANISMS,
        help="enabled SASL mechanisms (default: all of them)",
    )
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    parser.set_defaults(handler=run)


def _pairs(values: list[str], what: str, sep: str = ":") -> list[tuple[str, str]]:
    out = []
    for value in values:
        name, found, rest = value.partition(sep)
        if not name or not found:
            raise EmulatorConfigError(f"{what} must look like NAME{sep}VALUE: {value!r}")
        out.append((name, rest))
    return out


def build_cluster(args: argparse.Namespace) -> EmulatedCluster:
    topics: dict[str, int] = {}
    for spec in args.topic:
        name, _, partitions = spec.partition(":")
        try:
            topics[name] = int(partitions) if partitions else 1
        except ValueError:
            raise EmulatorConfigError(f"--topic wants NAME[:PARTITIONS]: {spec!r}") from None
    sasl = None
    if args.sasl_user:
        users = dict(_pairs(args.sasl_user, "--sasl-user"))
        sasl = SaslConfig(users, args.sasl_mechanism or MECHANISMS)
    return EmulatedCluster(
        args.release or ["3.9"],
        kind=args.kind,
        brokers=args.brokers,
        host=args.host,
        port=args.port,
        allow_non_loopback=args.allow_non_loopback,
        cluster_id=args.cluster_id,
        topics=topics,
        sasl=sasl,
    )


async def _serve(cluster: EmulatedCluster, duration: float | None) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with cluster:
            print(f"bootstrap: {cluster.bootstrap}", flush=True)
            for broker in cluster.brokers:
                print(f"node {broker.node_id}: {broker.profile.label} at {broker.address}", flush=True)
            with trio.move_on_after(math.inf if duration is None else duration):
                async for _ in signals:
                    break
    print("stopped", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration <= 0:
        raise EmulatorConfigError("--duration must be positive")
    cluster = build_cluster(args)
    trio.run(_serve, cluster, args.duration)
    return 0
