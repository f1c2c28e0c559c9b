"""What if this cluster were upgraded to that release?  The plain-Python answer (no Spark).

Theory.  The upgrade question operators ask ("we move the brokers to Kafka
4.x: which applications break?") is a verdict (``negotiation.verdicts``)
against a broker that does not exist yet.  After a rolling upgrade every
broker of the cluster runs the target release, so each one answers
ApiVersions with the release table's ranges for that release and kind
(``kafkacompat.reference.RELEASES``, read through the emulator's
``profile_for``, the one place a release becomes ranges).  What the cluster
keeps is its *finalized* feature levels: upgrading binaries finalizes
nothing (Kafka raises metadata.version, transaction.version, group.version
only when an operator runs ``kafka-features upgrade``), so the levels after
the upgrade are the cluster's newest finalized state today
(``merge_finalized`` over its latest observations, controllers included,
since in KRaft they hold it).  A cluster that finalized nothing is at level
0 of every feature, so the feature-gated versions (``feature_gates``) stay
unusable there after the upgrade too.

So one row per (cluster, client profile, target): the verdict of
``verdicts.judge`` for that client against one broker of the target release
with the cluster's finalized levels, its findings (API, rule, severity, the
version the client would send, the rule's source) and the names of the
breaking APIs.  Only clusters with at least one broker are judged (a quorum
of controllers alone serves no client).  ``upgrade_first`` sums them up per
target and client: how many clusters each client blocks, so the clients to
upgrade first are the ones at the top.

The Spark job (``what_if``) calls the same ``judge`` on its driver and joins
the verdicts to the clusters; a test compares both row by row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkacompat.errors import ConfigError, KafkaCompatError
from kafkacompat.negotiation.features import FinalizedObservation, merge_finalized
from kafkacompat.negotiation.node_role import looks_like_controller
from kafkacompat.negotiation.verdicts import BrokerSide, client_side, judge
from kafkacompat.pipeline.snapshot_format import capabilities_from_snapshot
from kafkacompat.protocol.messages.api_keys import ApiKey
from kafkacompat.protocol.removals import release_order
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "GATED_FEATURES",
    "UpgradeTarget",
    "normalized_profile",
    "parse_targets",
    "upgrade_first",
    "what_if_rows",
]

_API_VERSIONS = int(ApiKey.API_VERSIONS)

# The features whose finalized level a verdict reads (``feature_gates``): the only part of a
# cluster's state, besides its having brokers, that the what-if verdict depends on.
GATED_FEATURES: tuple[str, ...] = ("transaction.version", "group.version", "share.version")


@dataclass(frozen=True, slots=True)
class UpgradeTarget:
    """A release to upgrade to, the broker kind after the upgrade, and that broker's ranges."""

    release: str
    kind: str
    apis: Mapping[int, VersionRange] = field(hash=False, compare=False)

    @property
    def label(self) -> str:
        return f"Kafka {self.release} ({self.kind})"

    def broker(self, finalized: Mapping[str, int]) -> BrokerSide:
        return BrokerSide(self.label, self.apis, self.release, dict(finalized))


def parse_targets(text: str | Sequence[str]) -> tuple[UpgradeTarget, ...]:
    """``"4.0,4.2"`` or ``["4.0", "3.9/kraft-broker"]`` -> the targets, in the order given.

    A release alone means its default broker kind (the emulator's: zk-broker
    where the release has one, else kraft-broker); ``RELEASE/KIND`` picks one.
    Unknown releases or kinds, controllers and repeats are a ``ConfigError``.
    """
    from kafkacompat.testing.emulator.profile import profile_for

    parts = text.split(",") if isinstance(text, str) else [p for item in text for p in item.split(",")]
    targets: list[UpgradeTarget] = []
    for raw in parts:
        spec = raw.strip()
        if not spec:
            raise ConfigError(f"--what-if wants RELEASE[/KIND] separated by commas, got {text!r}")
        release, _, kind = spec.partition("/")
        if kind == "kraft-controller":
            raise ConfigError(
                f"--what-if {spec}: clients never talk to a KRaft controller; name a broker kind"
            )
        try:
            profile = profile_for(release, kind or None)
        except KafkaCompatError as exc:
            raise ConfigError(f"--what-if {spec}: {exc.message}") from None
        if _API_VERSIONS not in profile.apis:
            # Before 0.10 a broker leaves ApiVersions unanswered; how each client copes with that
            # is measured, and judged by ``kafkacompat check`` (rules the Spark job does not have).
            raise ConfigError(
                f"--what-if {spec}: Kafka {release} has no ApiVersions; upgrade targets start at 0.10.0 "
                f"(judge a pre-0.10 broker with kafkacompat check --release {release})"
            )
        target = UpgradeTarget(release, profile.kind, dict(profile.apis))
        if target in targets:
            raise ConfigError(f"--what-if names {target.label} twice")
        targets.append(target)
    return tuple(targets)


def normalized_profile(profile: Mapping[str, Any]) -> dict[str, Any]:
    """A profile as Spark's reader sees it: a field set to null is a field left out."""
    out = {k: v for k, v in profile.items() if v is not None}
    out["api_versions"] = [{k: v for k, v in e.items() if v is not None} for e in profile["api_versions"]]
    return out


def cluster_levels(latest: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, int]]:
    """Cluster -> its finalized levels, for the clusters that have a broker (see the theory)."""
    levels: dict[str, dict[str, int]] = {}
    for cluster, nodes in latest.items():
        capabilities = [capabilities_from_snapshot(obj) for obj in nodes]
        if all(looks_like_controller(c) for c in capabilities):
            continue
        merged = merge_finalized(
            FinalizedObservation(
                c.node,
                c.finalized_features_epoch if c.finalized_features_epoch is not None else -1,
                c.finalized_features,
            )
            for c in capabilities
        )
        levels[cluster] = merged.levels
    return levels


def what_if_rows(
    latest: Mapping[str, Sequence[Mapping[str, Any]]],
    profiles: Iterable[Mapping[str, Any]],
    targets: Sequence[UpgradeTarget],
) -> list[dict[str, Any]]:
    """One row per (cluster, profile, target): the ``what_if`` table (see ``docs/pipeline.md``).

    ``latest``: cluster id -> the latest snapshot object of each of its nodes;
    ``profiles``: valid client profile objects (``client_format``).
    """
    clients = [client_side(normalized_profile(p)) for p in profiles]
    rows = []
    for cluster, levels in sorted(cluster_levels(latest).items()):
        for target in targets:
            broker = target.broker(levels)
            for client in clients:
                verdict = judge(client, [broker], target.label)
                findings = [
                    {
                        "api_key": f.api_key,
                        "api_name": f.api_name,
                        "rule": f.rule,
                        "severity": f.severity,
                        "version": f.version,
                        "source": f.source,
                    }
                    for f in verdict.findings
                ]
                rows.append(
                    {
                        "cluster_id": cluster,
                        "client": client.name,
                        "client_version": client.version,
                        "target": target.release,
                        "kind": target.kind,
                        "verdict": verdict.status,
                        "breaking_apis": [f["api_name"] for f in findings if f["severity"] == "breaks"],
                        "findings": findings,
                    }
                )
    return rows


def upgrade_first(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per target and client: clusters blocked, could-not-tell, judged, and the APIs that block.

    ``breaking_apis`` are the distinct API names that break somewhere, in
    api-key order.  Rows come sorted by target, most blocked clusters first,
    then client and version: the clients to upgrade first lead.
    """
    acc: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    apis: dict[tuple[str, str, str, str], dict[int, str]] = defaultdict(dict)
    for row in rows:
        key = (row["target"], row["kind"], row["client"], row["client_version"])
        entry = acc.setdefault(key, {"blocked_clusters": 0, "unknown_clusters": 0, "clusters": 0})
        entry["clusters"] += 1
        entry["blocked_clusters"] += row["verdict"] == "breaks"
        entry["unknown_clusters"] += row["verdict"] == "unknown"
        for f in row["findings"]:
            if f["severity"] == "breaks":
                apis[key][f["api_key"]] = f["api_name"]
    out = [
        {
            "target": target,
            "kind": kind,
            "client": client,
            "client_version": version,
            **entry,
            "breaking_apis": [name for _, name in sorted(apis[(target, kind, client, version)].items())],
        }
        for (target, kind, client, version), entry in acc.items()
    ]
    out.sort(
        key=lambda r: (
            release_order(r["target"]),
            r["kind"],
            -r["blocked_clusters"],
            r["client"],
            r["client_version"],
        )
    )
    return out
