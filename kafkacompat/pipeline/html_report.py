"""``report.html``: the page a person reads, next to the tables.

Theory.  The tables hold every answer; the page says what needs attention.
It is built from small aggregates and capped samples collected to the driver
(never a whole table), so it costs little at any fleet size, and it says what
it left out ("showing 50 of 1,234").  Sections, most urgent first: the counts
(including bad input, which must never go unnoticed), the clusters x clients
heatmap, clients with the APIs that break them, the what-if view when the
report has upgrade targets (which clusters can be upgraded today, the
clients to upgrade first, which clients block which clusters), clusters
running mixed releases, features (safe levels and blockers), fenced brokers, stale epochs,
and the bad records with file and line.  One self-contained file: inline CSS
and an inline SVG, no scripts, every value escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkacompat._version import __version__
from kafkacompat.pipeline.bad_lines import explain_malformed
from kafkacompat.pipeline.concurrency import run_concurrently
from kafkacompat.pipeline.heatmap import HeatmapCell, render_heatmap
from kafkacompat.pipeline.snapshot_format import MALFORMED
from kafkacompat.pipeline.what_if_page import render_what_if, upgrade_overview

if TYPE_CHECKING:  # the report imports this page: its class is a type here, nothing more
    from kafkacompat.pipeline.report import FleetTables

__all__ = ["MAX_HEATMAP_CLIENTS", "MAX_HEATMAP_CLUSTERS", "MAX_TABLE_ROWS", "render_report"]

MAX_HEATMAP_CLUSTERS = 60
MAX_HEATMAP_CLIENTS = 60
MAX_TABLE_ROWS = 50
_TEXT_CUT = 160

_CSS = """
body{font-family:sans-serif;margin:24px;color:#212121;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.num{text-align:right}.bad{color:#c62828;font-weight:bold}
.ok{color:#2e7d32;font-weight:bold}.note{color:#616161;font-size:12px}code{font-size:12px}
.counts td:first-child{font-weight:bold}
"""


def _cell(value: Any) -> str:
    if value is None:
        return '<td class="note">none</td>'
    if isinstance(value, bool):
        return f'<td class="{"ok" if value else "bad"}">{"yes" if value else "no"}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value:,}</td>'
    if isinstance(value, list | tuple):
        return f"<td>{escape(', '.join(str(v) for v in value)) or '&mdash;'}</td>"
    text = str(value)
    if len(text) > _TEXT_CUT:
        text = text[:_TEXT_CUT] + "…"
    return f"<td><code>{escape(text)}</code></td>" if text.startswith("{") else f"<td>{escape(text)}</td>"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>" if body else '<p class="note">none</p>'


def _sample(
    df: DataFrame,
    total: int | None,
    headers: Sequence[str],
    order: Sequence[str],
    shown: Callable[[tuple[Any, ...]], tuple[Any, ...]] = lambda row: row,
) -> str:
    """Up to MAX_TABLE_ROWS rows, each through ``shown``; a total of None is counted by the same query."""
    if total is None:  # the count joins the first rows: an aggregate, not a window over one partition
        counted = df.agg(F.count(F.lit(1)).alias("_total"))
        picked = df.orderBy(*order).limit(MAX_TABLE_ROWS).crossJoin(counted).orderBy(*order).collect()
        total = picked[0]["_total"] if picked else 0
        rows = [tuple(r)[:-1] for r in picked]
    else:
        rows = [tuple(r) for r in df.orderBy(*order).limit(MAX_TABLE_ROWS).collect()]
    note = f'<p class="note">showing {len(rows):,} of {total:,}</p>' if total > len(rows) else ""
    return _table(headers, [shown(row) for row in rows]) + note


def _with_fields_named(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A bad record (source, file, line, reason, text) whose reason names the fields of a malformed line."""
    source, file, line, reason, text = row
    if reason == MALFORMED and text:
        reason = explain_malformed(text, source)
    return source, file, line, reason, text


def _samples(frames: Sequence[DataFrame], order: Sequence[str]) -> list[tuple[list[tuple[Any, ...]], int]]:
    """Per frame (all of one schema): up to MAX_TABLE_ROWS rows in ``order`` and its total, in one query."""
    tagged = [df.withColumn("_frame", F.lit(i)) for i, df in enumerate(frames)]
    union = tagged[0]
    for df in tagged[1:]:
        union = union.unionByName(df)
    each = Window.partitionBy("_frame")
    picked = (
        union.withColumn("_total", F.count(F.lit(1)).over(each))
        .withColumn("_rank", F.row_number().over(each.orderBy(*order)))
        .where(F.col("_rank") <= MAX_TABLE_ROWS)
        .collect()
    )
    out: list[tuple[list[tuple[Any, ...]], int]] = []
    for i in range(len(frames)):
        mine = sorted((r for r in picked if r["_frame"] == i), key=lambda r: r["_rank"])
        out.append(([tuple(r)[:-3] for r in mine], mine[0]["_total"] if mine else 0))
    return out


def _shown(headers: Sequence[str], rows: list[tuple[Any, ...]], total: int) -> str:
    note = f'<p class="note">showing {len(rows):,} of {total:,}</p>' if total > len(rows) else ""
    return _table(headers, rows) + note


def _heatmap(report: FleetTables, labels: Sequence[str]) -> str:
    """The SVG and its note; the number of clusters comes with the chosen ones (no job of its own).

    ``labels``: every client profile's "client version", known from the clients' table already.
    """
    compat = report.compatibility.withColumn("label", F.concat_ws(" ", "client", "client_version"))
    clients = sorted(set(labels))[:MAX_HEATMAP_CLIENTS]
    per_cluster = compat.groupBy("cluster_id").agg(F.count_if(~F.col("compatible")).alias("broken"))
    # The number of clusters joins the chosen ones: an aggregate, not a window over one partition.
    total = per_cluster.agg(F.count(F.lit(1)).alias("_clusters"))
    order = (F.desc("broken"), "cluster_id")
    chosen = per_cluster.orderBy(*order).limit(MAX_HEATMAP_CLUSTERS).crossJoin(total).orderBy(*order)
    picked = chosen.collect()
    total_clusters = picked[0]["_clusters"] if picked else 0
    rows = [(r["cluster_id"], r["broken"]) for r in picked]
    clusters = [cluster for cluster, _ in rows]
    cells = {
        (r["cluster_id"], r["label"]): HeatmapCell(r["compatible"], tuple(r["broken_apis"]))
        for r in compat.where(F.col("cluster_id").isin(clusters)).collect()
    }
    svg = render_heatmap(clusters, clients, cells)
    note = (
        f'<p class="note">{len(clusters):,} of {total_clusters:,} clusters shown, those with the most '
        f"broken clients first; {len(clients):,} client profile(s). Hover a cell for the broken APIs.</p>"
    )
    return svg + note


def _clients(report: FleetTables) -> tuple[str, list[str]]:
    """The clients' table, and every profile's heatmap label ("client version")."""
    summary = report.compatibility.groupBy("client", "client_version").agg(
        F.count_if("compatible").alias("ok"), F.count(F.lit(1)).alias("clusters")
    )
    broken = (
        report.compatibility.select("client", "client_version", F.explode("broken_apis").alias("api"))
        .groupBy("client", "client_version", "api")
        .count()
        .groupBy("client", "client_version")
        .agg(F.array_sort(F.collect_list(F.struct(F.negative("count").alias("n"), "api"))).alias("apis"))
    )
    rows = (
        summary.join(broken, ["client", "client_version"], "left")
        .orderBy("client", "client_version")
        .collect()
    )
    out = []
    for r in rows[: MAX_TABLE_ROWS * 4]:
        apis = ", ".join(f"{a['api']} ({-a['n']:,})" for a in (r["apis"] or []))
        out.append((r["client"], r["client_version"], r["ok"], r["clusters"] - r["ok"], apis or None))
    labels = [f"{r['client']} {r['client_version']}" for r in rows]
    table = _table(
        ("client", "version", "compatible clusters", "broken clusters", "breaking APIs (clusters)"), out
    )
    return table, labels


def _clients_and_heatmap(report: FleetTables) -> tuple[str, str]:
    """The clients' table, then the heatmap, which labels its columns from it."""
    table, labels = _clients(report)
    return table, _heatmap(report, labels)


def _mixed_releases(report: FleetTables) -> str:
    per_cluster = report.latest.groupBy("cluster_id").agg(
        F.count(F.lit(1)).alias("brokers"),
        F.array_sort(F.collect_set(F.col("release_guess.text"))).alias("releases"),
    )
    mixed = per_cluster.where(F.size("releases") > 1)
    return _sample(mixed, None, ("cluster", "brokers", "releases (guessed)"), ["cluster_id"])


_FEATURE_COLUMNS = (
    "cluster_id",
    "feature",
    "finalized_level",
    "epoch",
    "max_safe_level",
    "next_level",
    "blocking_brokers",
)
_FEATURE_HEADERS = ("cluster", "feature", "finalized", "epoch", "max safe", "next level", "blocking brokers")


def _features(report: FleetTables) -> tuple[str, str]:
    """Both feature sections' samples, from one query: brokers out of line, and levels to raise."""
    sizes = report.latest.groupBy("cluster_id").agg(F.count(F.lit(1)).alias("_brokers"))
    features = report.features.join(sizes, "cluster_id")
    blocking = F.size("blocking_brokers")
    attention = features.where(
        ((blocking > 0) & (blocking < F.col("_brokers"))) | F.col("max_safe_level").isNull()
    )
    raisable = features.where(F.col("max_safe_level") > F.col("finalized_level"))
    both = _samples([df.select(*_FEATURE_COLUMNS) for df in (attention, raisable)], ["cluster_id", "feature"])
    first, second = (_shown(_FEATURE_HEADERS, rows, total) for rows, total in both)
    return first, second


def render_report(report: FleetTables, counts: Mapping[str, int]) -> str:
    """The whole page as a string (runs a few small Spark jobs)."""
    # Totals observed while the tables were written (``report.observed``) cost no job here.
    observed = report.observed
    if "bad_records.from_snapshots" in observed and "bad_records" in counts:
        from_snapshots = observed["bad_records.from_snapshots"]
        bad_by_source = {"snapshots": from_snapshots, "clients": counts["bad_records"] - from_snapshots}
    else:
        bad_by_source = {
            r["source"]: r["count"] for r in report.bad_records.groupBy("source").count().collect()
        }
    if "compatibility.incompatible" in observed:
        incompatible = observed["compatibility.incompatible"]
    else:
        incompatible = report.compatibility.where(~F.col("compatible")).count()
    # The sections' queries run two at a time (``run_concurrently``), the longest first.
    clients, what_if, features, mixed, fenced, stale, bad = run_concurrently(
        report.spark,
        [
            lambda: _clients_and_heatmap(report),
            lambda: render_what_if(report, upgrade_overview(report), _table, MAX_TABLE_ROWS),
            lambda: _features(report),
            lambda: _mixed_releases(report),
            lambda: _sample(
                report.fenced,
                counts.get("fenced", 0),
                ("cluster", "node", "feature", "finalized", "supported min", "supported max"),
                ["cluster_id", "node_id", "feature"],
            ),
            lambda: _sample(
                report.stale_epochs,
                counts.get("stale_epochs", 0),
                ("cluster", "node", "observed at", "epoch", "cluster epoch"),
                ["cluster_id", "node_id"],
            ),
            lambda: _sample(
                report.bad_records.select("source", "file", "line", "reason", "text"),
                counts.get("bad_records", 0),
                ("source", "file", "line", "reason", "text"),
                ["source", "file", "line"],
                _with_fields_named,
            ),
        ],
    )
    clients_table, heatmap = clients
    attention_rows, raisable_rows = features
    summary = [
        ("valid snapshot lines", report.valid_snapshots),
        ("bad snapshot lines", bad_by_source.get("snapshots", 0)),
        ("bad client profile lines", bad_by_source.get("clients", 0)),
        ("brokers (latest observations)", counts.get("latest", 0)),
        ("clusters x clients", counts.get("compatibility", 0)),
        ("incompatible pairs", incompatible),
        ("brokers on a stale epoch", counts.get("stale_epochs", 0)),
        ("fenced broker features", counts.get("fenced", 0)),
    ]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>Kafka fleet compatibility report</title>',
        f"<style>{_CSS}</style></head><body>",
        "<h1>Kafka fleet compatibility report</h1>",
        f'<p class="note">kafkacompat {escape(__version__)}, generated {stamp}. Data: the folders next to '
        "this file (one per table).</p>",
        '<table class="counts">'
        + "".join(f"<tr><td>{escape(k)}</td>{_cell(v)}</tr>" for k, v in summary)
        + "</table>",
        "<h2>Clusters x clients</h2>",
        heatmap,
        "<h2>Clients</h2>",
        clients_table,
        what_if,
        "<h2>Clusters running mixed releases</h2>",
        mixed,
        "<h2>Features: brokers out of line</h2>",
        '<p class="note">Some brokers support the next level and others do not (those are listed), or '
        "no level is safe at all (max safe: none). Max safe level: the highest level every broker "
        "supports with its dependencies met.</p>",
        attention_rows,
        "<h2>Features that can be raised now</h2>",
        '<p class="note">The finalized level is below the highest safe level.</p>',
        raisable_rows,
        "<h2>Fenced brokers</h2>",
        '<p class="note">brokers whose supported range no longer holds the finalized level '
        "(none: the broker does not list the feature).</p>",
        fenced,
        "<h2>Stale epochs</h2>",
        stale,
        "<h2>Bad records</h2>",
        bad,
        "</body></html>",
    ]
    return "\n".join(parts)
