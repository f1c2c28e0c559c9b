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
from kafkacompat.cli.usage import closest
from kafkacompat.errors import EmulatorConfigError, UsageError
from kafkacompat.reference.releases import KINDS, RELEASES
from kafkacompat.testing.emulator import EmulatedCluster, SaslConfig
from kafkacompat.testing.emulator.sasl import MECHANISMS

__all__ = ["build_cluster", "register", "run"]

# Short names people type for a kind, as Kafka's docs say them.
_KIND_ALIASES = {"kraft": "kraft-broker", "broker": "kraft-broker", "controller": "kraft-controller",
                 "zk": "zk-broker", "zookeeper": "zk-broker"}


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
            raise UsageError(f"entry {number} of {source} is not USER:PASSWORD (not shown)")
        users[name] = password
    if not users:
        raise UsageError(f"{source} names no user")
    return users


def _sasl_users(args: argparse.Namespace) -> dict[str, str] | None:
    if args.sasl_users_file and args.sasl_users_env:
        raise UsageError("give SASL users once: --sasl-users-file or --sasl-users-env")
    if args.sasl_users_file:
        text = read_text(args.sasl_users_file, "the SASL users file")
        return _users(text, f"--sasl-users-file {args.sasl_users_file}")
    if args.sasl_users_env:
        if args.sasl_users_env not in os.environ:
            raise UsageError("the environment variable named by --sasl-users-env is not set")
        return _users(os.environ[args.sasl_users_env], "the variable named by --sasl-users-env")
    return None


def release_spec(spec: str) -> str:
    """``RELEASE[/KIND]`` checked against the release table, a short kind spelled out (``4.0/kraft``).

    A release the table lacks is a ``UsageError`` that names the closest one:
    ``2.3.1`` -> ``2.3`` (the table knows releases by major.minor).
    """
    release, slash, kind = spec.strip().partition("/")
    if slash:
        kind = _KIND_ALIASES.get(kind, kind)
        if kind not in KINDS:
            guess = closest(kind, [*KINDS, *_KIND_ALIASES])
            known_kinds = f"kinds: {', '.join(KINDS)}"
            hint = f"did you mean {_KIND_ALIASES.get(guess, guess)}?" if guess else known_kinds
            raise UsageError(f"--release {spec}: unknown broker kind {kind!r}; {hint}")
    kinds = {p.kind for p in RELEASES if p.release == release}
    if kinds and (not slash or kind in kinds):
        return f"{release}/{kind}" if slash else release
    if kinds:
        has = ", ".join(sorted(kinds))
        raise UsageError(f"--release {spec}: Kafka {release} has no {kind}; it has {has}")
    known = sorted({p.release for p in RELEASES if not slash or p.kind == kind},
                   key=lambda r: tuple(int(x) for x in r.split(".")))
    short = ".".join(release.split(".")[:2])
    guess = short if short in known else closest(release, known)
    hint = f"did you mean {guess}?" if guess else f"known releases: {known[0]} to {known[-1]}"
    raise UsageError(f"--release {spec}: no Kafka {release} in the release table; {hint}")


def build_cluster(args: argparse.Namespace) -> EmulatedCluster:
    topics: dict[str, int] = {}
    for spec in args.topic:
        name, _, partitions = spec.partition(":")
        try:
            topics[name] = int(partitions) if partitions else 1
        except ValueError:
            raise EmulatorConfigError(f"--topic wants NAME[:PARTITIONS]: {spec!r}") from None
    users = _sasl_users(args)
    sasl = SaslConfig(users, args.sasl_mechanism or MECHANISMS) if users is not None else None
    releases = [release_spec(spec) for spec in args.release or ["3.9"]]
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
    if args.duration is not None and args.duration <= 0:
        raise EmulatorConfigError("--duration must be positive")
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
