"""Which version of each API a client will get from a whole cluster, and what breaks.

Theory.  ``kafkacompat.negotiation.version_policy`` picks, per broker, the
highest version in (client range ∩ broker range); ``cluster_view`` calls a
version usable everywhere when it is in that intersection for every broker.
With no user policy those are intervals, so for one cluster, client and API:

    version = min(client.max, min over brokers of max)
    if it is >= max(client.min, max over brokers of min)
    and every broker of the cluster lists the API with a non-empty range,
    else there is none.

Only brokers count: a KRaft controller's snapshot (``negotiation.node_role``:
no Metadata, but Vote and BrokerRegistration) is kept in the latest
observations, features and epochs, but a client never negotiates with a
controller, so ``brokers_only`` leaves controllers out of what follows.

The "every broker" clause is the one to get right in Spark: ``min``, ``max``,
``greatest`` and ``least`` skip nulls, so a broker that does not list the API
would simply vanish from the aggregate and the API would look fine.  Hence
the count: the brokers listing the API are counted and compared with the
brokers of the cluster, and those missing are named (``array_except`` of the
cluster's nodes and the listing nodes).  A range with min above max counts as
not listed, as in ``BrokerCapabilities.lists_api``.

Shapes: the brokers' side is aggregated per (cluster, API listed), one row
each, and joined on (cluster, API) to the grid clusters x client APIs (the
client side is small: profiles x their APIs, broadcast); Spark picks the
join by size, a hash table of the brokers' side on a small fleet, sorted
runs on a large one.  A lookup in a map of the cluster's APIs on each grid
row, the shape before, cost a small fleet's report more than the join does:
Spark scans a map built per row one key after the other (6,000 lines, the
128,400 grid rows with only the brokers' side read: 3.9 s of executor CPU
with the map, 2.4 s joined; see docs/pipeline.md for the whole table).  The
reasons use the negotiation core's wording where it has one.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkacompat.negotiation.node_role import CONTROLLER_ONLY_APIS, METADATA_API
from kafkacompat.protocol.versions import OPEN_END
from kafkacompat.reference import API_NAMES

__all__ = [
    "api_name_column",
    "brokers_only",
    "client_apis",
    "compatibility",
    "is_controller",
    "negotiated",
    "range_text",
]

_CLIENT = ["client", "client_version"]


# One SQL map literal (Kafka's API names are plain identifiers): one call into the JVM, not 200.
_API_NAME_MAP_SQL = "map(" + ", ".join(f"{key}, '{name}'" for key, name in sorted(API_NAMES.items())) + ")"


def api_name_column(api_key: Column) -> Column:
    """Kafka's API name for a key column (``UnknownApiN`` for keys Kafka never assigned)."""
    return F.coalesce(
        F.expr(_API_NAME_MAP_SQL)[api_key], F.concat(F.lit("UnknownApi"), api_key.cast("string"))
    )


def range_text(low: Column, high: Column) -> Column:
    """``VersionRange.__str__`` as a column: ``none``, ``3+``, ``5`` or ``0-4``."""
    return (
        F.when(low > high, F.lit("none"))
        .when(high == OPEN_END, F.concat(low.cast("string"), F.lit("+")))
        .when(low == high, low.cast("string"))
        .otherwise(F.concat(low.cast("string"), F.lit("-"), high.cast("string")))
    )


def _lists(api_versions: Column, key: int) -> Column:
    """The snapshot lists ``key`` with a non-empty range (``BrokerCapabilities.lists_api``)."""
    return F.exists(api_versions, lambda a: (a["api_key"] == key) & (a["min"] <= a["max"]))


def is_controller(api_versions: Column) -> Column:
    """``node_role.looks_like_controller`` as a column over a snapshot's ``api_versions``."""
    listed = [_lists(api_versions, key) for key in CONTROLLER_ONLY_APIS]
    test = ~_lists(api_versions, METADATA_API)
    for column in listed:
        test = test & column
    return test


def brokers_only(latest: DataFrame) -> DataFrame:
    """The latest observations without KRaft controllers' (one row per broker)."""
    return latest.where(~is_controller(F.col("api_versions")))


def client_apis(profiles: DataFrame) -> DataFrame:
    """One row per profile and API: client, client_version, api_key, client_min, client_max, required."""
    entry = F.explode("api_versions").alias("a")
    return profiles.select(F.col("client"), F.col("version").alias("client_version"), entry).select(
        *_CLIENT,
        F.col("a.api_key").alias("api_key"),
        F.col("a.min").alias("client_min"),
        F.col("a.max").alias("client_max"),
        F.coalesce(F.col("a.required"), F.lit(False)).alias("required"),
    )


def cluster_nodes(latest: DataFrame) -> DataFrame:
    """cluster_id, nodes (sorted node ids), brokers (their count)."""
    return latest.groupBy("cluster_id").agg(
        F.array_sort(F.collect_list("node_id")).alias("nodes"), F.count(F.lit(1)).alias("brokers")
    )


def _api_support(latest: DataFrame) -> DataFrame:
    """One row per cluster and API listed (with a non-empty range) by at least one broker.

    Columns: cluster_id, api_key, listing (how many brokers list it),
    broker_min (the highest min), broker_max (the lowest max), listing_nodes.
    """
    listed = latest.select("cluster_id", "node_id", F.explode("api_versions").alias("a")).where(
        F.col("a.min") <= F.col("a.max")
    )
    return listed.groupBy("cluster_id", F.col("a.api_key").alias("api_key")).agg(
        F.count(F.lit(1)).alias("listing"),
        F.max("a.min").alias("broker_min"),
        F.min("a.max").alias("broker_max"),
        F.collect_list("node_id").alias("listing_nodes"),
    )


def _join_ints(values: Column) -> Column:
    return F.array_join(F.transform(values, lambda v: v.cast("string")), ", ")


def negotiated(latest: DataFrame, profiles: DataFrame) -> DataFrame:
    """cluster_id, client, client_version, api_key, api_name, version (null: none), reason, required."""
    c_min, c_max = F.col("client_min"), F.col("client_max")
    # What depends on the client's API alone is worked out once per profile and API, not per row.
    name = api_name_column(F.col("api_key"))
    per_client = client_apis(profiles).select(
        "*",
        name.alias("api_name"),
        F.concat(name, F.lit(" (api key "), F.col("api_key").cast("string"), F.lit(")")).alias("_api"),
        range_text(c_min, c_max).alias("_client_range"),
    )
    grid = cluster_nodes(latest).crossJoin(F.broadcast(per_client))
    rows = grid.join(_api_support(latest), ["cluster_id", "api_key"], "left")  # no broker: nulls
    b_min, b_max = F.col("broker_min"), F.col("broker_max")
    low, high = F.greatest(c_min, b_min), F.least(c_max, b_max)  # both sides non-null where used
    api, client_range, broker_range = F.col("_api"), F.col("_client_range"), range_text(b_min, b_max)
    missing = F.array_except(F.col("nodes"), F.coalesce(F.col("listing_nodes"), F.array().cast("array<int>")))
    everywhere = F.col("listing").isNotNull() & (F.col("listing") == F.col("brokers"))
    usable = everywhere & (c_min <= c_max) & (low <= high)
    version = F.when(usable, high)
    reason = (
        F.when(c_min > c_max, F.concat(F.lit("the client cannot write "), api))
        .when(F.col("listing").isNull(), F.concat(F.lit("no broker lists "), api))
        .when(
            ~everywhere,
            F.concat(
                api,
                F.lit(" is not listed by broker(s) "),
                _join_ints(missing),
                F.lit(" of "),
                F.col("brokers").cast("string"),
            ),
        )
        .when(
            b_min > b_max,
            F.concat(
                F.lit("the brokers have no version of "),
                api,
                F.lit(" in common (highest minimum "),
                b_min.cast("string"),
                F.lit(", lowest maximum "),
                b_max.cast("string"),
                F.lit(")"),
            ),
        )
        .when(
            low > high,
            F.concat(
                F.lit("no version in common: the client writes "),
                client_range,
                F.lit(", every broker answers "),
                broker_range,
            ),
        )
        .otherwise(
            F.concat(
                F.lit("v"),
                high.cast("string"),
                F.lit(": the highest of client "),
                client_range,
                F.lit(" and all "),
                F.col("brokers").cast("string"),
                F.lit(" broker(s) "),
                broker_range,
            )
        )
    )
    return rows.select(
        "cluster_id",
        *_CLIENT,
        "api_key",
        "api_name",
        version.alias("version"),
        reason.alias("reason"),
        "required",
    )


def compatibility(latest: DataFrame, profiles: DataFrame, negotiated_rows: DataFrame) -> DataFrame:
    """cluster_id, client, client_version, compatible, broken_apis (required APIs with no version).

    ``broken_apis`` lists API names in api-key order; a profile with no
    required API is compatible with every cluster.
    """
    broken = negotiated_rows.where(F.col("required") & F.col("version").isNull())
    per_pair = broken.groupBy("cluster_id", *_CLIENT).agg(
        F.array_sort(F.collect_list(F.struct("api_key", "api_name"))).alias("_broken")
    )
    pairs = (
        cluster_nodes(latest)
        .select("cluster_id")
        .crossJoin(F.broadcast(profiles.select("client", F.col("version").alias("client_version"))))
    )
    names = F.coalesce(
        F.transform(F.col("_broken"), lambda item: item["api_name"]), F.array().cast("array<string>")
    )
    return pairs.join(per_pair, ["cluster_id", *_CLIENT], "left").select(
        "cluster_id", *_CLIENT, (F.size(names) == 0).alias("compatible"), names.alias("broken_apis")
    )
