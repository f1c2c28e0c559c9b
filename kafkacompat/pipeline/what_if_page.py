"""The what-if view of ``report.html``: which clusters can be upgraded today, and who blocks the rest.

Theory.  The what-if table has a row per cluster, client and target; a
person asks three smaller questions of it.  Per target: how many clusters
every client would follow (upgradable today), how many some client blocks,
and how many hang on a could-not-tell.  Which clients block the most
clusters (the ones to upgrade first).  And for a blocked cluster, which
clients block it and at which APIs.  Each answer is one small aggregate
collected to the driver; samples are capped like the rest of the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkacompat.protocol.removals import release_order

if TYPE_CHECKING:  # the report imports this page (through html_report): a type here, nothing more
    from kafkacompat.pipeline.report import FleetTables

__all__ = ["ClientBlock", "TargetOverview", "render_what_if", "upgrade_overview"]


@dataclass(frozen=True, slots=True)
class ClientBlock:
    label: str
    blocked: int
    unknown: int
    breaking_apis: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TargetOverview:
    target: str
    kind: str
    clusters: int
    upgradable: int  # every client works
    blocked: int  # some client breaks
    unknown: int  # none breaks, some could not tell
    blockers: tuple[ClientBlock, ...]  # clients blocking at least one cluster, most first

    @property
    def label(self) -> str:
        return f"Kafka {self.target} ({self.kind})"


def upgrade_overview(report: FleetTables) -> list[TargetOverview]:
    """Per target, in release order: the counts and the blocking clients (two small jobs)."""
    if report.what_if is None or report.upgrade_first is None:
        return []
    per_cluster = report.what_if.groupBy("target", "kind", "cluster_id").agg(
        F.max((F.col("verdict") == "breaks").cast("int")).alias("b"),
        F.max((F.col("verdict") == "unknown").cast("int")).alias("u"),
    )
    counts = {
        (r["target"], r["kind"]): r
        for r in per_cluster.groupBy("target", "kind")
        .agg(
            F.count(F.lit(1)).alias("clusters"),
            F.count_if(F.col("b") == 1).alias("blocked"),
            F.count_if((F.col("b") == 0) & (F.col("u") == 1)).alias("unknown"),
        )
        .collect()
    }
    blockers: dict[tuple[str, str], list[ClientBlock]] = {}
    for r in report.upgrade_first.where("blocked_clusters > 0").collect():
        blockers.setdefault((r["target"], r["kind"]), []).append(
            ClientBlock(
                f"{r['client']} {r['client_version']}",
                r["blocked_clusters"],
                r["unknown_clusters"],
                tuple(r["breaking_apis"]),
            )
        )
    out = []
    for t in report.targets:
        row = counts.get((t.release, t.kind))
        clusters, blocked, unknown = (row["clusters"], row["blocked"], row["unknown"]) if row else (0, 0, 0)
        ranked = sorted(blockers.get((t.release, t.kind), []), key=lambda c: (-c.blocked, c.label))
        out.append(
            TargetOverview(
                t.release, t.kind, clusters, clusters - blocked - unknown, blocked, unknown, tuple(ranked)
            )
        )
    return sorted(out, key=lambda o: (release_order(o.target), o.kind))


def _blocked_clusters(what_if: DataFrame, limit: int) -> list[tuple[Any, ...]]:
    blocked = what_if.where(F.col("verdict") == "breaks")
    per_cluster = blocked.groupBy("target", "kind", "cluster_id").agg(
        F.array_sort(
            F.collect_list(
                F.concat(
                    F.col("client"),
                    F.lit(" "),
                    F.col("client_version"),
                    F.lit(" ("),
                    F.array_join("breaking_apis", ", "),
                    F.lit(")"),
                )
            )
        ).alias("clients")
    )
    rows = per_cluster.orderBy("target", "kind", "cluster_id").limit(limit).collect()
    return [(r["target"], r["kind"], r["cluster_id"], r["clients"]) for r in rows]


def render_what_if(
    report: FleetTables,
    overview: Sequence[TargetOverview],
    table: Callable[[Sequence[str], Iterable[Sequence[Any]]], str],
    limit: int,
) -> str:
    """The page's what-if section (``table`` is the page's table renderer)."""
    if report.what_if is None:
        return ""
    parts = [
        "<h2>What if: upgrading every cluster</h2>",
        '<p class="note">Each cluster judged as if all its brokers ran the target release, with its '
        "finalized feature levels unchanged (upgrading binaries finalizes nothing). A cluster can be "
        "upgraded today when every client profile works with the target; it is blocked when one "
        "breaks.</p>",
        table(
            ("target", "clusters", "can be upgraded today", "blocked", "could not tell"),
            [(o.label, o.clusters, o.upgradable, o.blocked, o.unknown) for o in overview],
        ),
        "<h2>Clients to upgrade first</h2>",
        '<p class="note">Per target, the client profiles that break on at least one upgraded cluster, '
        "those blocking the most clusters first, with the APIs that break.</p>",
        table(
            ("target", "client", "blocked clusters", "could not tell", "breaking APIs"),
            [
                (o.label, c.label, c.blocked, c.unknown, list(c.breaking_apis))
                for o in overview
                for c in o.blockers
            ],
        ),
        "<h2>Which clients block which clusters</h2>",
    ]
    rows = _blocked_clusters(report.what_if, limit)
    total = sum(o.blocked for o in overview)  # a (target, cluster) pair is blocked once
    parts.append(table(("target", "kind", "cluster", "blocking clients (breaking APIs)"), rows))
    if total > len(rows):
        parts.append(f'<p class="note">showing {len(rows):,} of {total:,}</p>')
    return "\n".join(parts)
