"""``kafkacompat check``: will this client work with that broker, release or cluster?

PROFILE is a client-profile file (JSON lines, as ``record`` and the fleet
pipeline write them), ``kafkacompat`` (this library's own profile) or
``measured`` (the committed profiles of real client releases), or several of
them: recordings of one client made in front of different brokers are merged
into one profile (how it picks each version, which APIs it needs);
``--client NAME[@VERSION]`` picks some of the profiles.  The target is a release
(``--release 4.0``, its kind after a slash or with ``--kind``: ``2.8/kraft``;
with a fresh cluster's finalized features unless ``--finalized NAME=LEVEL``
says otherwise), a cluster's
snapshot file (``--cluster SNAPSHOT.jsonl``: every broker of each cluster, so
a rolling upgrade is judged node by node), or a live cluster
(``--bootstrap HOST:PORT``, every broker probed, connected to with the
options every connecting command takes: ``--command-config``, ``--tls``,
``--ca-file``, ``--sasl-*``, ``--timeout``, ``--retries``).  Every finding names the
API, both ranges, the rule and its source.  Exit status: 0 every client
works, 1 some client breaks, 2 could not tell.  A broker identified as
look-alike software (Tansu, noida-db, librdkafka's mock: its ApiVersions
answer is one measured from that software) is judged with that software's
measured deviations; a KRaft controller is not judged (clients never talk to
controllers): one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafkacompat._version import __version__
from kafkacompat.cli.connection_options import add_connection_options, resolve_connection, warn_ignored
from kafkacompat.cli.files import read_text
from kafkacompat.cli.output import Output
from kafkacompat.cli.releases import release_option
from kafkacompat.errors import ConfigError, KafkaCompatError, UsageError
from kafkacompat.negotiation.lookalikes import identify
from kafkacompat.negotiation.node_role import looks_like_controller
from kafkacompat.negotiation.release_guess import guess_release
from kafkacompat.negotiation.verdicts import BrokerSide, ClientSide, Verdict, client_side, judge, worst
from kafkacompat.pipeline.bad_lines import bad_line
from kafkacompat.pipeline.client_format import kafkacompat_client_profile
from kafkacompat.pipeline.snapshot_format import capabilities_from_snapshot
from kafkacompat.profiles import MEASURED_PATH
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import API_NAMES
from kafkacompat.reference.releases import KINDS, RELEASES

__all__ = ["brokers_for_release", "load_clients", "read_profiles", "register", "run", "verdict_document"]

JSON_VERSION = 1
EXIT_UNKNOWN = 2
_PICKS = {"fixed": "fixed", "release-table": "its table per release"}
_CONTROLLER = "{} is a KRaft controller: clients never talk to controllers, only to brokers"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="judge client profiles against a release, a cluster snapshot or a live cluster",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "profile",
        metavar="PROFILE",
        nargs="+",
        help="profiles files, 'kafkacompat' or 'measured'; recordings of one client are merged",
    )
    parser.add_argument("--client", action="append", default=[], metavar="NAME[@VERSION]")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--release", metavar="RELEASE[/KIND]", help="an Apache Kafka release, e.g. 4.0 or 2.8/kraft"
    )
    target.add_argument("--cluster", type=Path, metavar="SNAPSHOT.jsonl", help="snapshot lines of a cluster")
    target.add_argument("--bootstrap", metavar="HOST:PORT", help="a live cluster (every broker is probed)")
    parser.add_argument("--kind", choices=KINDS, help="with --release (default: kraft-broker from 4.0)")
    parser.add_argument(
        "--finalized",
        action="append",
        default=[],
        metavar="NAME=LEVEL",
        help="with --release: a finalized feature level instead of a fresh cluster's",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    # With --bootstrap: how to connect, as every connecting command takes it (TLS, SASL, timeouts).
    add_connection_options(parser, addresses=False, policy_flags=False)
    parser.set_defaults(handler=run)


# -- inputs --------------------------------------------------------------------------------


def load_clients(specs: str | Sequence[str], wanted: Sequence[str] = ()) -> list[ClientSide]:
    """The client profiles of ``specs`` as verdicts read them (``read_profiles``), those ``wanted``."""
    clients = [client_side(profile) for profile in read_profiles(specs)]
    chosen = [c for c in clients if not wanted or any(_matches(c, w) for w in wanted)]
    if not chosen:
        where = ", ".join([specs] if isinstance(specs, str) else specs)
        raise ConfigError(f"no client profile in {where} matches {', '.join(wanted) or 'anything'}")
    return chosen


def read_profiles(specs: str | Sequence[str]) -> list[dict[str, Any]]:
    """The client profiles of ``specs`` (files, ``kafkacompat``, ``measured``), recordings merged.

    Several recordings of one client (``kafkacompat record`` in front of
    different brokers, in one file or several) become one profile
    (``profiles.merge.merge_recorded``): how it picks, and what it needs.  A
    line that is not a profile is a ``ConfigError`` naming the file and line.
    """
    from kafkacompat.profiles.merge import merge_recorded

    named = [specs] if isinstance(specs, str) else list(specs)
    profiles: list[dict[str, Any]] = []
    for spec in named:
        if spec == "kafkacompat":
            profiles.append({**kafkacompat_client_profile(), "obeys_feature_gates": True})
            continue
        path = MEASURED_PATH if spec == "measured" else Path(spec)
        for number, line in _good_lines(path, "clients", "the profile file"):
            profile = json.loads(line)
            try:
                client_side(profile)  # what a verdict reads of it, checked where the line is known
            except ValueError as exc:
                raise ConfigError(f"client profile line {number} of {path}: {exc}") from None
            profiles.append(profile)
    try:
        return merge_recorded(profiles)
    except ValueError as exc:
        raise ConfigError(f"{', '.join(named)}: {exc}") from None


def _good_lines(path: Path, source: str, what: str) -> list[tuple[int, str]]:
    """The non-blank lines of a JSON-lines file with their numbers, every one a valid line of ``source``.

    The file is read with the command line's bounded reader (a missing, binary
    or endless file is a one-line ``ConfigError``); a bad line is one too, naming
    the fields that made it bad, in the fleet report's words (``bad_line``).
    """
    numbered = [(n, line) for n, line in enumerate(read_text(path, what).splitlines(), 1) if line.strip()]
    for number, line in numbered:
        problem = bad_line(source, path, number, line)
        if problem is not None:
            raise ConfigError(problem)
    return numbered


def _matches(client: ClientSide, wanted: str) -> bool:
    if client.name == wanted:  # a name with an @ of its own (kafka-go's client id "app@host (...)")
        return True
    name, _, version = wanted.partition("@")
    return client.name == name and (not version or client.version == version)


def _parse_levels(values: Sequence[str]) -> dict[str, int]:
    levels = {}
    for value in values:
        name, found, level = value.partition("=")
        if not found or not name or not level.isdigit():
            raise UsageError(f"--finalized wants NAME=LEVEL, got {value!r}")
        levels[name] = int(level)
    return levels


def _release_and_kind(spec: str, kind: str | None) -> tuple[str, str | None]:
    """``--release RELEASE[/KIND]`` checked against the release table (``cli.releases``), with ``--kind``."""
    release, _, named = release_option(spec, "--release").partition("/")
    if named and kind and named != kind:
        raise UsageError(f"--release {spec} names a {named}, --kind a {kind}: give the kind once")
    return release, named or kind


def brokers_for_release(release: str, kind: str | None, finalized: Mapping[str, int]) -> list[BrokerSide]:
    from kafkacompat.testing.emulator.profile import default_features

    release_option(release, "--release", with_kind=False)  # a release the table lacks: the closest named
    kinds = [p.kind for p in RELEASES if p.release == release]
    chosen = kind or ("zk-broker" if "zk-broker" in kinds else "kraft-broker")
    table = next((p for p in RELEASES if p.release == release and p.kind == chosen), None)
    if table is None:
        raise ConfigError(f"Kafka {release} has no {chosen}; it has {', '.join(sorted(kinds))}")
    if chosen == "kraft-controller":
        raise ConfigError(_CONTROLLER.format(f"Kafka {release} (kraft-controller)"))
    _, fresh, _ = default_features(release, chosen)
    levels = {**fresh, **finalized}
    apis = {key: VersionRange(low, high) for key, (low, high) in table.apis.items()}
    return [BrokerSide(f"Kafka {release} ({chosen})", apis, release, levels)]


def brokers_from_snapshots(path: Path) -> dict[str, list[BrokerSide]]:
    """The latest line of every node, per cluster id."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for _, line in _good_lines(path, "snapshots", "--cluster"):
        obj = json.loads(line)
        key = (obj["cluster_id"], obj["node_id"])
        if key not in latest or obj["observed_at"] >= latest[key]["observed_at"]:
            latest[key] = obj
    clusters: dict[str, list[BrokerSide]] = {}
    controllers: list[str] = []
    for (cluster, node), obj in sorted(latest.items()):
        label = f"node {node} at {obj['endpoint']}"
        if looks_like_controller(capabilities_from_snapshot(obj)):
            controllers.append(label)  # a cluster's controllers serve no client: its brokers are judged
            continue
        apis = {e["api_key"]: VersionRange(e["min"], e["max"]) for e in obj["api_versions"]}
        finalized = {e["name"]: e["max"] for e in obj["finalized_features"] or []}
        clusters.setdefault(cluster, []).append(_broker(label, apis, finalized))
    if not clusters and controllers:
        raise ConfigError(_CONTROLLER.format(", ".join(controllers)))
    if not clusters:
        raise ConfigError(f"{path} holds no snapshot line")
    return clusters


def _broker(label: str, apis: Mapping[int, VersionRange], finalized: Mapping[str, int]) -> BrokerSide:
    """A probed broker: its release guessed from its ranges, or the look-alike software they identify."""
    guess = guess_release(apis)
    release = min(guess.releases, key=lambda r: tuple(map(int, r.split(".")))) if guess.releases else None
    software = identify(apis)
    if software is not None:  # the release its table resembles: what a client infers from it too
        return BrokerSide(f"{label} ({software.label})", dict(apis), release, dict(finalized), software)
    return BrokerSide(label, dict(apis), release, dict(finalized))


def brokers_from_bootstrap(args: argparse.Namespace) -> dict[str, list[BrokerSide]]:
    """Every broker of the live cluster ``args.bootstrap`` names, with the connection options given."""
    from kafkacompat.cli.probe import probe

    options = resolve_connection(args)
    warn_ignored(options)
    bootstrap = options.bootstrap
    with options.redactor.scrubbing():  # a failure's text never carries a password
        report = probe(options, all_brokers=True)
    brokers = []
    for broker in report.brokers:
        caps = broker.capabilities
        if caps is None:
            raise ConfigError(f"node {broker.node_id} could not be probed: nothing to judge it by")
        if looks_like_controller(caps):
            raise ConfigError(_CONTROLLER.format(f"{bootstrap} (node {broker.node_id})"))
        finalized = {name: r.highest for name, r in caps.finalized_features.items()}
        brokers.append(_broker(f"node {broker.node_id} at {caps.node}", caps.api_ranges, finalized))
    return {report.cluster_id or bootstrap: brokers}


# -- output --------------------------------------------------------------------------------


def verdict_document(verdict: Verdict, brokers: Sequence[BrokerSide]) -> dict[str, Any]:
    return {
        "client": verdict.client,
        "target": verdict.target,
        "status": verdict.status,
        "exit_code": verdict.exit_code,
        "brokers": [
            {
                "label": b.label,
                "release": b.release,
                "finalized_features": dict(sorted((b.finalized or {}).items())),
            }
            for b in brokers
        ],
        "picks": {
            label: [
                {"api_key": k, "api": API_NAMES.get(k, str(k)), "version": v} for k, v in sorted(p.items())
            ]
            for label, p in verdict.picks.items()
        },
        "findings": [f.to_dict() for f in verdict.findings],
    }


def _text(verdict: Verdict, brokers: Sequence[BrokerSide], client: ClientSide) -> str:
    lines = [f"{verdict.client} against {verdict.target}: {verdict.status.upper()}"]
    for broker in brokers:
        levels = ", ".join(f"{k}={v}" for k, v in sorted((broker.finalized or {}).items())) or "none"
        lines.append(f"  {broker.label}: finalized features {levels}")
        picks = verdict.picks.get(broker.label, {})
        noted = {f.api_key for f in verdict.findings if f.severity != "warns"}
        for key, entry in sorted(client.entries.items()):
            if not entry.required and key not in noted:
                continue  # an optional API: only its findings are shown
            offered = broker.apis.get(key)
            sent = picks.get(key)
            how = _PICKS.get(entry.pick, "highest in common")
            higher = (
                sent is not None and offered is not None and not entry.max_exact and offered.highest > sent
            )
            lines.append(
                f"    {API_NAMES.get(key, str(key)):<24} client {entry.versions} ({how}), "
                f"broker {offered if offered is not None else '-'}: "
                f"{'v' + str(sent) if sent is not None else 'nothing to send'}"
                f"{' (or higher: the recording saw no max)' if higher else ''}"
            )
    missing = [f for f in verdict.findings if f.rule == "api-missing" and f.severity == "warns"]
    if missing:
        names = ", ".join(f"{f.api_name} ({f.api_key})" for f in missing[:8])
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        lines.append(f"  WARNS   optional APIs some broker lacks: {names}{more} [api-missing; KIP-35]")
    for f in verdict.findings:
        if f in missing:
            continue
        lines.append(
            f"  {f.severity.upper():<8}{f.api_name} ({f.api_key}) on {f.broker}: {f.message} "
            f"[{f.rule}; {f.source}]"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.release is not None:  # a command line that cannot be used as typed: a usage error, exit 2
        release, kind = _release_and_kind(args.release, args.kind)
        levels = _parse_levels(args.finalized)
    try:
        clients = load_clients(args.profile, args.client)
        if args.release is not None:
            targets = {f"Kafka {release}": brokers_for_release(release, kind, levels)}
        elif args.cluster is not None:
            targets = brokers_from_snapshots(args.cluster)
        else:
            targets = brokers_from_bootstrap(args)
    except KafkaCompatError as exc:
        Output().note(f"kafkacompat check: could not tell: {exc}")
        return EXIT_UNKNOWN
    verdicts, documents, texts = [], [], []
    for client in clients:
        for name, brokers in targets.items():
            target = name if len(brokers) > 1 or args.release is None else brokers[0].label
            verdict = judge(client, brokers, target)
            verdicts.append(verdict)
            documents.append(verdict_document(verdict, brokers))
            texts.append(_text(verdict, brokers, client))
    code = worst(verdicts)
    output = Output()
    if args.format == "json":
        output.json(
            {
                "_command": "check",
                "_version": JSON_VERSION,
                "kafkacompat": __version__,
                "exit_code": code,
                "verdicts": documents,
            }
        )
    else:
        output.line("\n\n".join(texts))
    return code
