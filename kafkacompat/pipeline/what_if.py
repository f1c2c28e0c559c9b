"""The what-if table in Spark: every cluster, every client, every target release.

Theory.  ``what_if_core`` says what the rows mean: the verdict of
``negotiation.verdicts.judge`` for a client against a broker of the target
release carrying the cluster's finalized levels (a binary upgrade finalizes
nothing).  Here the same rules are Spark column expressions, tried in
``judge``'s order for each API the client lists: the API missing from the
target, a fixed version outside its range (or removed by 4.x), no version in
common (or removed by 4.x), a version advertised but refused, a feature gate
the cluster's level does not open; with ``judge``'s severities (breaks only
for a required API; "could not tell" where a recorded profile's bounds stop,
or a gated API's fallback softens it to a warning).

Shape.  Of a cluster, a verdict reads only its finalized levels of the gated
features (``GATED_FEATURES``), so the rules run on the small grid client APIs
x targets x *distinct level combinations* (a handful in any fleet), and the
verdicts are then joined (broadcast) to the clusters by their levels: the
cost does not grow with clusters x clients x APIs.  The reference facts
(target ranges from the release table, KIP-896 removals through
``verdicts.removed_in_4``, the feature gates) enter as a small literal table;
no Python runs on the executors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from kafkacompat.negotiation.feature_gates import FEATURE_GATES
from kafkacompat.negotiation.verdicts import CLASSIC_FALLBACKS, TRANSACTIONAL_APIS, BrokerSide, removed_in_4
from kafkacompat.pipeline.feature_table import newest_finalized_state
from kafkacompat.pipeline.kept import keep
from kafkacompat.pipeline.negotiate import api_name_column, is_controller
from kafkacompat.pipeline.what_if_core import GATED_FEATURES, UpgradeTarget
from kafkacompat.reference import REMOVALS

__all__ = ["WhatIf", "target_facts", "what_if"]

_CLIENT = ["client", "client_version"]
_TARGET = ["target", "kind"]
_LEVELS = [f"level_{i}" for i in range(len(GATED_FEATURES))]
_KIP_35 = "KIP-35"

_FACTS_SCHEMA = StructType(
    [
        StructField("target", StringType(), False),
        StructField("kind", StringType(), False),
        StructField("api_key", IntegerType(), False),
        StructField("t_min", IntegerType(), False),
        StructField("t_max", IntegerType(), False),
        StructField("r_low", IntegerType(), True),  # a removal that applies to the target, if any
        StructField("r_high", IntegerType(), True),
        StructField("r_refused", BooleanType(), True),  # still advertised, refused when sent
        StructField("r_source", StringType(), True),
        StructField("g_low", IntegerType(), True),  # the feature gate on the API, if any
        StructField("g_feature", StringType(), True),
        StructField("g_min", IntegerType(), True),
        StructField("g_source", StringType(), True),
        StructField("g_txn_only", BooleanType(), True),
    ]
)


def target_facts(spark: SparkSession, targets: Sequence[UpgradeTarget]) -> DataFrame:
    """One row per (target, API it lists): its range, the removal and the gate that apply (facts only)."""
    gates = {gate.api_key: gate for gate in FEATURE_GATES}
    rows = []
    for target in targets:
        broker = BrokerSide(target.label, target.apis, target.release)
        for key, offered in sorted(target.apis.items()):
            fact = REMOVALS.get(key)
            removal = removed_in_4(broker, key, fact.lowest) if fact is not None else None
            gate = gates.get(key)
            rows.append(
                (
                    target.release,
                    target.kind,
                    key,
                    offered.lowest,
                    offered.highest,
                    fact.lowest if removal and fact else None,
                    fact.highest if removal and fact else None,
                    removal[1] if removal else None,
                    removal[2] if removal else None,
                    gate.versions.lowest if gate else None,
                    gate.feature if gate else None,
                    gate.min_level if gate else None,
                    gate.source if gate else None,
                    gate.in_transaction_only if gate else None,
                )
            )
    return spark.createDataFrame(rows, _FACTS_SCHEMA)


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


def _client_entries(profiles: DataFrame) -> DataFrame:
    """One row per profile and API, with what ``judge`` reads of the client as a whole."""
    keys = F.transform("api_versions", lambda a: a["api_key"])
    fallbacks = F.create_map(*[F.lit(v) for pair in sorted(CLASSIC_FALLBACKS.items()) for v in pair])
    transactional = F.exists(keys, lambda k: k.isin(*TRANSACTIONAL_APIS))
    per_client = profiles.select(
        F.col("client"),
        F.col("version").alias("client_version"),
        F.coalesce(F.col("obeys_feature_gates"), F.lit(False)).alias("obeys"),
        transactional.alias("transactional"),
        keys.alias("keys"),
        F.explode("api_versions").alias("a"),
    )
    a = F.col("a")
    return per_client.select(
        *_CLIENT,
        "obeys",
        "transactional",
        a["api_key"].alias("api_key"),
        a["min"].alias("lo"),
        a["max"].alias("hi"),
        F.coalesce(a["pick"] == "fixed", F.lit(False)).alias("fixed"),
        F.coalesce(a["min_exact"], F.lit(True)).alias("min_exact"),
        F.coalesce(a["max_exact"], F.lit(True)).alias("max_exact"),
        F.coalesce(a["required"], F.lit(False)).alias("required"),
        F.coalesce(F.array_contains("keys", fallbacks[a["api_key"]]), F.lit(False)).alias("has_fallback"),
    )


def _finding(grid: DataFrame) -> DataFrame:
    """``judge``'s per-API rules as columns: rule (null: no finding), severity, version, source."""
    c = F.col
    lo, hi, t_min, t_max = c("lo"), c("hi"), c("t_min"), c("t_max")
    fixed, required = c("fixed"), c("required")

    def removed(version: Column) -> Column:
        return c("r_low").isNotNull() & (version >= c("r_low")) & (version <= c("r_high"))

    def inside(version: Column) -> Column:
        return (version >= t_min) & (version <= t_max)

    def severity(severe: Column) -> Column:
        return F.when(severe & required, F.lit("breaks")).otherwise(F.lit("warns"))

    def unknown(severe: Column) -> Column:  # ``_as_unknown``: a break becomes "could not tell"
        return F.when(severe & required, F.lit("unknown")).otherwise(F.lit("warns"))

    missing = t_min.isNull() | (t_min > t_max)
    refused = ~inside(lo) | ~inside(hi)
    fixed_version = F.when(~inside(lo), lo).otherwise(hi)
    low, high = F.greatest(lo, t_min), F.least(hi, t_max)
    empty = low > high
    version = F.when(fixed, hi).otherwise(high)
    levels = F.create_map(
        *[x for name, col in zip(GATED_FEATURES, _LEVELS, strict=True) for x in (F.lit(name), c(col))]
    )
    gate_low = c("g_low")
    gate_shut = (
        c("g_feature").isNotNull()
        & (~c("g_txn_only") | c("transactional"))
        & (F.coalesce(levels[c("g_feature")], F.lit(0)) < c("g_min"))
    )
    could_send = (version >= gate_low) | (~c("max_exact") & ~fixed & (t_max >= gate_low))
    obeyed = c("obeys") & (F.least(version, gate_low - 1) >= lo)
    gated = gate_shut & could_send & ~obeyed
    no_fallback = ~c("has_fallback")
    yes = F.lit(True)
    beyond_record = ((lo > t_max) & ~c("min_exact")) | ((hi < t_min) & ~c("max_exact"))
    null = F.lit(None).cast("int")
    rules: list[tuple[Column, str, Column, Column, Column]] = [
        (missing, "api-missing", null, F.lit(_KIP_35), severity(no_fallback)),
        (
            fixed & refused & removed(fixed_version),
            "removed-in-4",
            fixed_version,
            c("r_source"),
            severity(yes),
        ),
        (
            fixed & refused & (fixed_version > t_max) & ~c("min_exact"),
            "fixed-version-not-accepted",
            fixed_version,
            F.lit(_KIP_35),
            unknown(yes),
        ),
        (fixed & refused, "fixed-version-not-accepted", fixed_version, F.lit(_KIP_35), severity(yes)),
        (~fixed & empty & removed(hi), "removed-in-4", null, c("r_source"), severity(yes)),
        (~fixed & empty & beyond_record, "no-common-version", null, F.lit(_KIP_35), unknown(yes)),
        (~fixed & empty, "no-common-version", null, F.lit(_KIP_35), severity(yes)),
        (removed(version) & c("r_refused"), "advertised-but-refused", version, c("r_source"), severity(yes)),
        (gated & (version < gate_low), "feature-gated", version, c("g_source"), unknown(no_fallback)),
        (gated, "feature-gated", version, c("g_source"), severity(no_fallback)),
    ]

    def chain(values: Sequence[Column]) -> Column:
        out = F.when(rules[0][0], values[0])
        for (condition, *_), value in zip(rules[1:], values[1:], strict=True):
            out = out.when(condition, value)
        return out

    finding = F.struct(
        c("api_key").alias("api_key"),
        api_name_column(c("api_key")).alias("api_name"),
        chain([F.lit(r[1]) for r in rules]).alias("rule"),
        chain([r[4] for r in rules]).alias("severity"),
        chain([r[2] for r in rules]).alias("version"),
        chain([r[3] for r in rules]).alias("source"),
    )
    return grid.select(*_CLIENT, *_TARGET, *_LEVELS, finding.alias("f")).where(c("f.rule").isNotNull())


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
    combos = clusters.select(*_LEVELS).distinct()
    header = spark.createDataFrame(
        [(t.release, t.kind) for t in targets],
        StructType([StructField(n, StringType(), False) for n in _TARGET]),
    )
    entries = _client_entries(profiles)
    grid = (
        entries.crossJoin(header)
        .join(F.broadcast(target_facts(spark, targets)), [*_TARGET, "api_key"], "left")
        .crossJoin(combos)
    )
    found = (
        _finding(grid)
        .groupBy(*_CLIENT, *_TARGET, *_LEVELS)
        .agg(F.array_sort(F.collect_list("f")).alias("found"))
    )
    every = (
        profiles.select("client", F.col("version").alias("client_version"))
        .crossJoin(header)
        .crossJoin(combos)
    )
    findings = F.coalesce(F.col("found"), F.array())
    breaks = F.filter("findings", lambda f: f["severity"] == "breaks")
    verdicts = (
        every.join(found, [*_CLIENT, *_TARGET, *_LEVELS], "left")
        .select(*_CLIENT, *_TARGET, *_LEVELS, findings.alias("findings"))
        .select(
            "*",
            F.when(F.size(breaks) > 0, F.lit("breaks"))
            .when(F.exists("findings", lambda f: f["severity"] == "unknown"), F.lit("unknown"))
            .otherwise(F.lit("works"))
            .alias("verdict"),
            F.transform(breaks, lambda f: f["api_name"]).alias("breaking_apis"),
            F.transform(breaks, lambda f: F.struct(f["api_key"].alias("k"), f["api_name"].alias("n"))).alias(
                "_breaking"
            ),
        )
    )
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
