"""The cluster now: the latest observation of each broker, and the brokers behind on epochs.

Theory.  A broker is observed many times; every answer of the report is about
the fleet as last seen, so the first step keeps one observation per
(cluster_id, node_id): the greatest by (observed_at as an instant, epoch,
endpoint, source file, line identity).  Only the same line read twice can tie
on all of these, and then it does not matter which copy is kept.

Finding the latest without moving whole records: the scan's lean rows (the
ordering keys only) are aggregated per broker, a small shuffle; then only the
winning lines are fetched and parsed in full (``readers.fetch_snapshots``),
and matched with the winners once more on every key.  A window over whole
records would shuffle every observation instead.

Epochs follow ``kafkacompat.negotiation.features.merge_finalized`` applied to
the latest observations: the cluster's epoch is the highest one a broker
reports, and a broker is *stale* when it reports a known epoch (not -1) below
it: it has not yet seen the latest finalization.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkacompat.negotiation.features import UNKNOWN_EPOCH
from kafkacompat.pipeline.kept import keep
from kafkacompat.pipeline.readers import SnapshotScan, fetch_snapshots
from kafkacompat.pipeline.snapshot_schema import SNAPSHOT_SCHEMA

__all__ = ["LATEST_COLUMNS", "latest_observations", "stale_epochs"]

# The snapshot's own columns, so that latest/ can be read back as snapshots.
LATEST_COLUMNS: tuple[str, ...] = (*(f.name for f in SNAPSHOT_SCHEMA.fields), "source_file")
_BROKER = ["cluster_id", "node_id"]


def latest_observations(scan: SnapshotScan) -> DataFrame:
    """One row per (cluster_id, node_id): its latest observation (``LATEST_COLUMNS`` + ``observed_ts``)."""
    winners = scan.valid().groupBy(*_BROKER).agg(F.max("order").alias("order"))
    winners = keep(winners, scan.held)  # read twice below; one row per broker
    wanted = winners.select(F.col("order.file").alias("file"), F.col("order.id").alias("id"))
    fetched = fetch_snapshots(scan, wanted)
    # Null-safe equality: with a plain one Spark infers "key is not null" filters and pushes
    # them under the parse, which would then run on every line instead of the winners.
    won = F.broadcast(winners.select(*[F.col(c).alias(f"won_{c}") for c in [*_BROKER, "order"]]))
    matches = [fetched[c].eqNullSafe(won[f"won_{c}"]) for c in [*_BROKER, "order"]]
    latest = fetched.join(won, matches, "left_semi")
    # The same line read twice (two copies of a file) ties on every key: keep one.
    return latest.dropDuplicates(_BROKER).select(*LATEST_COLUMNS, F.col("order.ts").alias("observed_ts"))


def stale_epochs(latest: DataFrame) -> DataFrame:
    """Latest observations whose known epoch is below their cluster's highest.

    Columns: cluster_id, node_id, observed_at, epoch, cluster_epoch.
    """
    cluster = Window.partitionBy("cluster_id")
    with_cluster = latest.select(
        "cluster_id",
        "node_id",
        "observed_at",
        F.col("finalized_features_epoch").alias("epoch"),
        F.max("finalized_features_epoch").over(cluster).alias("cluster_epoch"),
    )
    return with_cluster.where((F.col("epoch") > UNKNOWN_EPOCH) & (F.col("epoch") < F.col("cluster_epoch")))
