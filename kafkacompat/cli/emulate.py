"""``kafkacompat emulate``: run emulated Kafka brokers of any release on loopback.

For people testing other clients against releases nobody can install any
more: the brokers answer ApiVersions, Metadata, FindCoordinator,
DescribeCluster, UpdateFeatures and SASL the way the chosen release did.  The
first line printed is ``bootstrap: HOST:PORT[,HOST:PORT...]``; the command runs
until Ctrl-C or SIGTERM (or ``--duration`` seconds).  It binds 127.0.0.1 and
refuses any non-loopback address unless ``--allow-non-loopback`` is given.
Each cluster has its own id, made of its releases and first port
(``emulated-3.9-9092``) unless ``--cluster-id`` names one.  SASL users come
from a file (``--sasl-users-file``) or an environment variable
(``--sasl-users-env``), never from the command line, where ``ps`` shows them.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from typing import Any

import trio

from kafkacompat.cli.files import read_text
from kafkacompat.cli.releases import release_option, release_span
from kafkacompat.errors import ConfigError, EmulatorConfigError, UsageError
from kafkacompat.reference.releases import KINDS
from kafkacompat.testing.emulator import EmulatedCluster, SaslConfig
from kafkacompat.testing.emulator.broker import check_bind_host
from kafkacompat.testing.emulator.sasl import MECHANISMS

__all__ = ["build_cluster", "register", "run"]

def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "emulate",
        help=f"run emulated brokers of any Kafka release ({release_span()}) on loopback",
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
    parser.add_argument(
        "--cluster-id",
        metavar="ID",
        help="the cluster id (default: emulated-RELEASES-PORT, e.g. emulated-3.9-9092)",
    )
    parser.add_argument(
        "--first-node-id",
        type=int,
        default=1,
        metavar="ID",
        help="the first node's id; the next ones count up (default 1)",
    )
    parser.add_argument("--topic", action="append", default=[], metavar="NAME[:PARTITIONS]")
    parser.add_argument(
        "--sasl-users-file",
        metavar="FILE",
        help="require SASL and accept the users of FILE, one USER:PASSWORD a line",
    )
    parser.add_argument(
        "--sasl-users-env",
        metavar="VAR",
        help="require SASL and accept the users of this environment variable (USER:PASSWORD,...)",
    )
    parser.add_argument("--sasl-user", nargs="?", action=_RefuseUsers, help=argparse.SUPPRESS)
    parser.add_argument(
        "--sasl-mechanism",
        action="append",
        choices=MECHANISMS,
        help="enabled SASL mechanisms (default: all of them)",
    )
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    parser.set_defaults(handler=run)


class _RefuseUsers(argparse.Action):
    """``--sasl-user USER:PASSWORD`` is gone: refused without echoing what followed it."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            "SASL users are not taken on the command line (ps shows it): "
            "use --sasl-users-file FILE or --sasl-users-env VAR"
        )


def _users(text: str, source: str) -> dict[str, str]:
    """``USER:PASSWORD`` entries, one a line or comma-separated; a bad entry is named by number, not shown."""
    users: dict[str, str] = {}
    entries = [entry.strip() for line in text.splitlines() for entry in line.split(",")]
    for number, entry in enumerate((e for e in entries if e and not e.startswith("#")), start=1):
        name, found, password = entry.partition(":")
        if not name or not found or not password:
            raise ConfigError(f"entry {number} of {source} is not USER:PASSWORD (not shown)")
        users[name] = password
    if not users:
        raise ConfigError(f"{source} names no user")
    return users


def _sasl_users(args: argparse.Namespace) -> dict[str, str] | None:
    if args.sasl_users_file and args.sasl_users_env:
        raise UsageError("give SASL users once: --sasl-users-file or --sasl-users-env")
    if args.sasl_users_file:
        text = read_text(args.sasl_users_file, "the SASL users file")
        return _users(text, f"--sasl-users-file {args.sasl_users_file}")
    if args.sasl_users_env:
        if args.sasl_users_env not in os.environ:
            raise ConfigError("the environment variable named by --sasl-users-env is not set")
        return _users(os.environ[args.sasl_users_env], "the variable named by --sasl-users-env")
    return None


def release_spec(spec: str) -> str:
    """``--release RELEASE[/KIND]`` checked against the release table (``cli.releases``)."""
    return release_option(spec, "--release")


def build_cluster(args: argparse.Namespace) -> EmulatedCluster:
    """The cluster the options describe; any option it cannot be built from is a ``UsageError``."""
    topics: dict[str, int] = {}
    for spec in args.topic:
        name, _, partitions = spec.partition(":")
        if not name or not (partitions or "1").isdigit():
            raise UsageError(f"--topic {spec}: give NAME or NAME:PARTITIONS, e.g. orders:3")
        topics[name] = int(partitions or "1")
    try:
        check_bind_host(args.host, args.allow_non_loopback)
    except EmulatorConfigError:
        raise UsageError(
            f"--host {args.host} is not a loopback address: the emulator listens on loopback only, "
            "unless --allow-non-loopback is given"
        ) from None
    if args.first_node_id < 0:
        raise UsageError(f"--first-node-id {args.first_node_id}: node ids are 0 or more")
    if args.cluster_id is not None and not args.cluster_id.strip():
        raise UsageError("--cluster-id is empty")
    users = _sasl_users(args)
    sasl = SaslConfig(users, args.sasl_mechanism or MECHANISMS) if users is not None else None
    releases = [release_spec(spec) for spec in args.release or ["3.9"]]
    try:
        return EmulatedCluster(
            releases,
            kind=args.kind,
            brokers=args.brokers,
            host=args.host,
            port=args.port,
            allow_non_loopback=args.allow_non_loopback,
            cluster_id=args.cluster_id or "emulated",  # without --cluster-id: named once the ports are bound
            first_node_id=args.first_node_id,
            topics=topics,
            sasl=sasl,
        )
    except EmulatorConfigError as exc:  # built from the options alone: one of them cannot be used
        raise UsageError(exc.message) from None


def derived_cluster_id(cluster: EmulatedCluster) -> str:
    """``emulated-RELEASES-PORT``: distinct for clusters of other releases or on other ports."""
    releases = "+".join(dict.fromkeys(str(b.profile.release or "custom") for b in cluster.brokers))
    return f"emulated-{releases}-{cluster.brokers[0].node.port}"


async def _serve(cluster: EmulatedCluster, duration: float | None, name_it: bool) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with cluster:
            if name_it:
                cluster.state.cluster_id = derived_cluster_id(cluster)
            print(f"bootstrap: {cluster.bootstrap}", flush=True)
            print(f"cluster id: {cluster.state.cluster_id}", flush=True)
            for broker in cluster.brokers:
                print(f"node {broker.node_id}: {broker.profile.label} at {broker.address}", flush=True)
            with trio.move_on_after(math.inf if duration is None else duration):
                async for _ in signals:
                    break
    print("stopped", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.duration is not None and not 0 < args.duration < math.inf:
        raise UsageError(f"--duration must be a positive number of seconds, got {args.duration}")
    cluster = build_cluster(args)
    try:
        trio.run(_serve, cluster, args.duration, args.cluster_id is None)
    except BaseExceptionGroup as group:  # a broker that could not start (its port taken): say why in one line
        config_errors, _ = group.split(EmulatorConfigError)
        if config_errors is None:
            raise
        first: BaseException = config_errors
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    return 0
