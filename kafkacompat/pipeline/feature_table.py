"""Feature levels per cluster: finalized, safe to finalize, who blocks, who is fenced.

Theory.  This is ``kafkacompat.negotiation.features`` restated over columns,
on the latest observation of every broker:

- *Finalized state*: of the brokers' answers, the one with the highest epoch
  wins, ties broken by the sorted (name, min, max) contents, as
  ``merge_finalized`` does (Spark orders structs and arrays the way Python
  orders tuples).  A feature's finalized level is its range's max (0 when not
  finalized).
- *Support*: a broker that does not list a feature supports level 0 only, so
  every broker of the cluster is looked at for every feature the cluster
  mentions, unlisted ranges read as 0..0; the common range is [max of mins,
  min of maxes].
- *Max safe level* (``max_safe_level``): the highest level L in the common
  range (metadata.version starts at 1) such that ``can_finalize`` holds, i.e.
  (a) L's own dependencies (``CATALOG.dependencies``) are met by the finalized
  levels, and (b) every finalized feature that depends on this one still has
  what it needs: L >= the minimum it requires.  (b) is a lower bound; (a)
  fails only at catalog levels, a finite set U.  So the answer is the highest
  of {top} + {u - 1 : u in U} that lies in [floor, top] and is not in U: no
  loop over levels.
- *Blocking brokers*: the brokers that do not support the next level,
  ``next_level`` = (max safe level, else the finalized level) + 1, which is
  ``can_finalize(feature, next_level).blocking_brokers``.
- *Fenced*: brokers whose supported range does not hold a finalized level
  (null min/max: the broker does not list the feature at all).

Shape: one aggregation gathers each cluster's brokers (a cluster has a few to
a few hundred), then everything is array functions within the row, so the
whole table costs one shuffle of one small row per broker.  The dependency
catalog is a constant array in the plan.
"""

from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkacompat.negotiation.features import CATALOG, METADATA_VERSION, FeatureCatalog
from kafkacompat.reference import FEATURES

__all__ = [
    "catalog_dependencies",
    "feature_levels",
    "feature_rows",
    "fenced_brokers",
    "newest_finalized_state",
]

_DEPENDENCY_TYPE = "array<struct<feature:string,level:int,needed:string,minimum:int>>"


def catalog_dependencies(catalog: FeatureCatalog = CATALOG) -> Column:
    """Every dependency the catalog knows, as a constant array of (feature, level, needed, minimum)."""
    rows = [
        {"feature": name, "level": level.level, "needed": needed, "minimum": minimum}
        for name in sorted(FEATURES)
        for level in catalog.levels(name)
        for needed, minimum in sorted(level.requires.items())
    ]
    return F.from_json(F.lit(json.dumps(rows)), _DEPENDENCY_TYPE)


def newest_finalized_state() -> Column:
    """An aggregate over a cluster's latest observations: struct(epoch, finalized) of the newest state.

    The highest epoch wins, ties broken by the sorted (name, min, max) contents,
    as ``merge_finalized`` does.
    """
    answer = F.struct(
        F.col("finalized_features_epoch").alias("epoch"),
        F.array_sort("finalized_features").alias("finalized"),
    )
    return F.max(answer)


def _names(entries: Column) -> Column:
    return F.transform(entries, lambda e: e["name"])


def feature_rows(latest: DataFrame, dependencies: Column | None = None) -> DataFrame:
    """One row per (cluster, feature) with everything both tables need.

    cluster_id, feature, epoch, finalized_level, is_finalized, support (per
    broker: node_id, min, max, null when unlisted), low, high, max_safe_level,
    next_level.
    """
    deps = catalog_dependencies() if dependencies is None else dependencies
    clusters = latest.groupBy("cluster_id").agg(
        newest_finalized_state().alias("state"),
        F.collect_list(F.struct("node_id", "supported_features")).alias("brokers"),
    )
    finalized = F.col("state.finalized")
    mentioned = F.array_distinct(
        F.concat(
            F.flatten(F.transform("brokers", lambda b: _names(b["supported_features"]))), _names(finalized)
        )
    )
    per_feature = clusters.select(
        "cluster_id",
        F.col("state.epoch").alias("epoch"),
        "brokers",
        F.map_from_entries(F.transform(finalized, lambda f: F.struct(f["name"], f["max"]))).alias("levels"),
        F.explode(mentioned).alias("feature"),
    )
    feature = F.col("feature")
    levels = F.col("levels")

    def level_of(name: Column) -> Column:
        return F.coalesce(levels[name], F.lit(0))

    support = F.transform(
        "brokers",
        lambda b: F.struct(
            b["node_id"].alias("node_id"),
            F.try_element_at(
                F.filter(b["supported_features"], lambda s: s["name"] == feature), F.lit(1)
            ).alias("s"),
        ),
    )
    support = F.transform(
        support,
        lambda b: F.struct(
            b["node_id"].alias("node_id"), b["s"]["min"].alias("min"), b["s"]["max"].alias("max")
        ),
    )
    # (b) finalized features (level > 0) whose exact level needs this feature at some minimum
    required_by = F.filter(
        deps,
        lambda d: (
            (d["needed"] == feature)
            & (d["feature"] != feature)
            & (d["level"] > 0)
            & (level_of(d["feature"]) == d["level"])
        ),
    )
    # (a) catalog levels of this feature whose own dependencies are not met by the finalized levels
    unmet = F.array_distinct(
        F.transform(
            F.filter(
                deps,
                lambda d: (
                    (d["feature"] == feature) & (d["level"] > 0) & (level_of(d["needed"]) < d["minimum"])
                ),
            ),
            lambda d: d["level"],
        )
    )
    rows = per_feature.select(
        "cluster_id",
        "feature",
        "epoch",
        level_of(feature).alias("finalized_level"),
        levels[feature].isNotNull().alias("is_finalized"),
        support.alias("support"),
        F.coalesce(F.array_max(F.transform(required_by, lambda d: d["minimum"])), F.lit(0)).alias(
            "required_min"
        ),
        unmet.alias("unmet"),
    )
    rows = rows.withColumn(
        "low", F.array_max(F.transform("support", lambda s: F.coalesce(s["min"], F.lit(0))))
    )
    rows = rows.withColumn(
        "high", F.array_min(F.transform("support", lambda s: F.coalesce(s["max"], F.lit(0))))
    )
    top = F.col("high")
    floor = F.greatest(
        F.col("low"), F.when(feature == METADATA_VERSION, F.lit(1)).otherwise(F.lit(0)), F.col("required_min")
    )
    excluded = F.col("unmet")
    candidates = F.filter(
        F.array_union(F.array(top), F.transform(excluded, lambda u: u - 1)),
        lambda c: (c >= floor) & (c <= top) & ~F.array_contains(excluded, c),
    )
    rows = rows.withColumn("max_safe_level", F.array_max(candidates))
    return rows.withColumn("next_level", F.coalesce("max_safe_level", "finalized_level") + 1)


def _outside(level: Column, entry: Column) -> Column:
    """Whether a broker's entry (null min/max: unlisted, so 0..0) does not hold ``level``."""
    return (level < F.coalesce(entry["min"], F.lit(0))) | (level > F.coalesce(entry["max"], F.lit(0)))


def feature_levels(rows: DataFrame) -> DataFrame:
    """cluster_id, feature, finalized_level, epoch, max_safe_level, next_level, blocking_brokers."""
    next_level = F.col("next_level")
    blocking = F.array_sort(
        F.transform(F.filter("support", lambda s: _outside(next_level, s)), lambda s: s["node_id"])
    )
    return rows.select(
        "cluster_id",
        "feature",
        "finalized_level",
        "epoch",
        "max_safe_level",
        "next_level",
        blocking.alias("blocking_brokers"),
    )


def fenced_brokers(rows: DataFrame) -> DataFrame:
    """cluster_id, node_id, feature, finalized_level, supported_min, supported_max."""
    level = F.col("finalized_level")
    fenced = rows.where("is_finalized").select(
        "cluster_id",
        "feature",
        "finalized_level",
        F.explode(F.filter("support", lambda s: _outside(level, s))).alias("s"),
    )
    return fenced.select(
        "cluster_id",
        F.col("s.node_id").alias("node_id"),
        "feature",
        "finalized_level",
        F.col("s.min").alias("supported_min"),
        F.col("s.max").alias("supported_max"),
    )
