"""The what-if table in Spark: every cluster, every client, every target release.

Theory.  ``what_if_core`` says what the rows mean: the verdict of
``negotiation.verdicts.judge`` for a client against a broker of the target
release carrying the cluster's finalized levels (a binary upgrade finalizes
nothing).  The verdicts here are that very function's, not a restatement of
its rules: ``check``, ``check --cluster`` and this table share one verdict
function, so they cannot disagree.

Shape.  Of a cluster, a verdict reads only its finalized levels of the gated
features (``GATED_FEATURES``), so ``judge`` runs on the driver over the small
grid clients x targets x *distinct level combinations* (a handful in any
fleet; profiles are few), and the verdicts are then joined (broadcast) to the
clusters by their levels: the cost does not grow with clusters x clients, and
no Python runs on the executors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, StringType, StructField, StructType

from kafkacompat.negotiation.verdicts import client_side, judge
from kafkacompat.pipeline.feature_table import newest_finalized_state
from kafkacompat.pipeline.kept import keep
from kafkacompat.pipeline.negotiate import is_controller
from kafkacompat.pipeline.what_if_core import GATED_FEATURES, UpgradeTarget, normalized_profile

__all__ = ["WhatIf", "what_if"]

_CLIENT = ["client", "client_version"]
_TARGET = ["target", "kind"]
_LEVELS = [f"level_{i}" for i in range(len(GATED_FEATURES))]

_FINDING = StructType(
    [
        StructField("api_key", IntegerType(), False),
        StructField("api_name", StringType(), False),
        StructField("rule", StringType(), False),
        StructField("severity", StringType(), False),
        StructField("version", IntegerType(), True),
        StructField("source", StringType(), False),
    ]
)
_VERDICTS_SCHEMA = StructType(
    [
        *[StructField(name, StringType(), False) for name in (*_CLIENT, *_TARGET)],
        *[StructField(name, IntegerType(), False) for name in _LEVELS],
        StructField("findings", ArrayType(_FINDING, False), False),
        StructField("verdict", StringType(), False),
        StructField("breaking_apis", ArrayType(StringType(), False), False),
        StructField(
            "_breaking",
            ArrayType(StructType([StructField("k", IntegerType()), StructField("n", StringType())]), False),
            False,
        ),
    ]
)


def _cluster_levels(latest: DataFrame) -> DataFrame:
    """cluster_id and its finalized level of each gated feature, for clusters with a broker."""
    state = latest.groupBy("cluster_id").agg(
        newest_finalized_state().alias("state"),
        F.max((~is_controller(F.col("api_versions"))).cast("int")).alias("has_broker"),
    )
    finalized = F.col("state.finalized")

    def level(name: str) -> Column:
        entry = F.try_element_at(F.filter(finalized, lambda e: e["name"] == name), F.lit(1))
        return F.coalesce(entry["max"], F.lit(0))

    return state.where(F.col("has_broker") == 1).select(
        "cluster_id", *[level(name).alias(col) for name, col in zip(GATED_FEATURES, _LEVELS, strict=True)]
    )


def _verdict_rows(
    profiles: Sequence[dict[str, Any]], targets: Sequence[UpgradeTarget], combos: Sequence[tuple[int, ...]]
) -> list[tuple[Any, ...]]:
    """``judge`` over clients x targets x level combinations: one row each, as ``_VERDICTS_SCHEMA``."""
    clients = [client_side(normalized_profile(p)) for p in profiles]
    rows = []
    for combo in combos:
        levels = dict(zip(GATED_FEATURES, combo, strict=True))
        for target in targets:
            broker = target.broker(levels)
            for client in clients:
                verdict = judge(client, [broker], target.label)
                findings = [
                    (f.api_key, f.api_name, f.rule, f.severity, f.version, f.source) for f in verdict.findings
                ]
                breaking = [(f.api_key, f.api_name) for f in verdict.findings if f.severity == "breaks"]
                rows.append(
                    (
                        client.name,
                        client.version,
                        target.release,
                        target.kind,
                        *combo,
                        findings,
                        verdict.status,
                        [name for _, name in breaking],
                        breaking,
                    )
                )
    return rows


@dataclass(frozen=True)
class WhatIf:
    """The what-if table (one row per cluster, client and target) and its summary."""

    rows: DataFrame
    upgrade_first: DataFrame
    held: tuple[DataFrame, ...] = ()  # persisted here, read by both tables: unpersist when done


def what_if(latest: DataFrame, profiles: DataFrame, targets: Sequence[UpgradeTarget]) -> WhatIf:
    """Both tables, lazily; ``latest`` holds every node (controllers too), ``profiles`` the valid profiles.

    ``rows``: cluster_id, client, client_version, target, kind, verdict
    (works/breaks/unknown), breaking_apis, findings (api_key, api_name, rule,
    severity, version, source; in api-key order).  ``upgrade_first``: target,
    kind, client, client_version, blocked_clusters, unknown_clusters,
    clusters, breaking_apis.
    """
    spark = latest.sparkSession
    # Both small (one row per cluster; per client, target and level combination) and read by
    # both tables: kept, so that writing the second does not compute them again.
    held: list[DataFrame] = []
    clusters = keep(_cluster_levels(latest), held)
    combos = sorted(tuple(int(v) for v in row) for row in clusters.select(*_LEVELS).distinct().collect())
    chosen = profiles.select("client", "version", "api_versions", "obeys_feature_gates")
    judged = _verdict_rows([r.asDict(recursive=True) for r in chosen.collect()], targets, combos)
    verdicts = spark.createDataFrame(judged, _VERDICTS_SCHEMA)
    verdicts = keep(verdicts, held)
    rows = clusters.join(F.broadcast(verdicts), _LEVELS).select(
        "cluster_id", *_CLIENT, *_TARGET, "verdict", "breaking_apis", "findings"
    )
    per_combo = clusters.groupBy(*_LEVELS).agg(F.count(F.lit(1)).alias("n"))
    summary = (
        verdicts.join(per_combo, _LEVELS)
        .groupBy(*_TARGET, *_CLIENT)
        .agg(
            F.sum(F.when(F.col("verdict") == "breaks", F.col("n")).otherwise(0)).alias("blocked_clusters"),
            F.sum(F.when(F.col("verdict") == "unknown", F.col("n")).otherwise(0)).alias("unknown_clusters"),
            F.sum("n").alias("clusters"),
            F.array_sort(F.array_distinct(F.flatten(F.collect_list("_breaking")))).alias("_apis"),
        )
        .select(
            *_TARGET,
            *_CLIENT,
            *[F.col(c).cast("long").alias(c) for c in ("blocked_clusters", "unknown_clusters", "clusters")],
            F.transform("_apis", lambda a: a["n"]).alias("breaking_apis"),
        )
    )
    return WhatIf(rows, summary, tuple(held))
