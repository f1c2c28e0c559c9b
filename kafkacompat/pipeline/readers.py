"""Reading snapshots and client profiles: explicit schemas, and every bad line accounted for.

Theory.  A fleet report built from millions of lines must neither die on one
bad line nor lose it quietly.  Each line is read as text, parsed with
``from_json`` under the explicit schema in PERMISSIVE mode (Spark's own
corrupt-record handling: a line it cannot read keeps its text in
``_corrupt_record``), checked with the rules of ``snapshot_schema``, and
routed to the records or to the bad records, with the reasons.  Blank lines
are not records and are skipped.

Two passes, so that nothing large is cached or shuffled.  The *scan* parses
every line without the diagnostics and keeps a lean row per line: for a valid
line its broker, its ordering keys and its identity (file + a 64-bit hash of
its text, or the Parquet row index); for a bad line its file, text and
reason.  That is persisted (about a hundred bytes a line).  The latest
observation per broker is then known from the lean rows alone
(``latest.py``), and the *fetch* reads the input again, keeps only the lines
whose identity won (a broadcast semi-join on a hash: no parse), and parses
those in full.

Where was the bad line?  Spark's text reader splits files into byte ranges
and forgets line numbers, and a per-row generated id
(``monotonically_increasing_id``) says nothing about a line's position in its
file.  But a line's verdict depends on its text alone, so the bad lines of a
file are exactly the lines of that file whose text is one of the bad texts.
Only the files that had bad lines are read again whole (``wholetext``), split
into lines with their positions (``posexplode``) and joined with the bad
(file, text) pairs: every bad line gets its file and 1-based line number, and
a text repeated on several lines is reported once per line.  This costs
nothing on clean input.  A whole file in one string, split, takes up to
twenty times its size in memory (copies between Hadoop, Spark rows, Java
strings and the lines; measured: a 50 MB file fits in 1 GiB, a 100 MB one does
not), so these files are read one at a time (one task), and a file above
``max_locate_bytes`` is not re-read: its bad lines are reported with their
text and reason and a null line.  The default limit is a fortieth of the
memory of one executor (of the driver, for a local master), leaving room for
the JVM's handling of huge arrays: 25 MiB with Spark's default 1 GiB.
Collectors that write many moderate files (as ``kafkacompat snapshot``
appends do) never meet it.  Parquet rows carry their
position (``_metadata.row_index``), and their text is the row as JSON.  A
Parquet file whose column types contradict the schema cannot be read at all:
Spark fails it, naming the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from kafkacompat.pipeline.kept import keep
from kafkacompat.pipeline.session import sql_conf
from kafkacompat.pipeline.snapshot_schema import (
    CLIENT_SCHEMA,
    CORE_SCHEMA,
    CORRUPT_RECORD,
    DIAGNOSTIC_FIELDS,
    SNAPSHOT_SCHEMA,
    client_reason,
    snapshot_reason,
    with_corrupt_column,
)

__all__ = [
    "BAD_RECORDS_SCHEMA",
    "InputFormat",
    "SnapshotScan",
    "default_locate_limit",
    "fetch_snapshots",
    "input_bytes",
    "read_clients",
    "scan_snapshots",
    "snapshot_format_of",
]

InputFormat = Literal["auto", "json", "parquet"]

BAD_RECORDS_SCHEMA = StructType(
    [
        StructField("source", StringType(), False),  # "snapshots" or "clients"
        StructField("file", StringType(), True),
        StructField("line", LongType(), True),  # 1-based line (row, for Parquet); null: not located
        StructField("reason", StringType(), True),
        StructField("text", StringType(), True),
    ]
)
_MiB = 1 << 20
DUPLICATE_PROFILE = "duplicate profile: the same (client, version) appears more than once"
_LINE_BREAK = r"\r\n|\r|\n"  # what Spark's text reader splits on
_PARSE = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD}


def default_locate_limit(spark: SparkSession) -> int:
    """A fortieth of an executor's memory (the driver's, when local): see the theory above."""
    memory = spark.conf.get("spark.executor.memory", None)
    if memory is None or (spark.sparkContext.master or "").startswith("local"):
        jvm = spark.sparkContext._jvm
        heap = int(jvm.java.lang.Runtime.getRuntime().maxMemory())  # type: ignore[union-attr]
    else:
        heap = int(spark.sparkContext._jvm.org.apache.spark.util.Utils.byteStringAsBytes(memory))  # type: ignore[union-attr]
    return max(8 * _MiB, heap // 40)


def snapshot_format_of(paths: Sequence[str]) -> Literal["json", "parquet"]:
    """``auto`` resolved from the paths' names: all ending in ``.parquet`` means Parquet."""
    if paths and all(p.rstrip("/").endswith(".parquet") for p in paths):
        return "parquet"
    return "json"


def input_bytes(source: DataFrame) -> int:
    """The bytes of the files a plain read covers, known from the file listing alone (no job)."""
    stats = source._jdf.queryExecution().analyzed().stats()
    return int(str(stats.sizeInBytes()))  # a Scala BigInt: a Python int or a JVM object


def _lines(spark: SparkSession, paths: Sequence[str], text: DataFrame | None = None) -> DataFrame:
    """file, file_size, value (the line), id (hash of the line) for every non-blank line.

    ``text``: ``spark.read.text(paths)`` when the caller has it already (the files listed once).
    """
    source = spark.read.text(list(paths)) if text is None else text
    lines = source.select(
        F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_size").alias("file_size"),
        F.col("value"),
    )
    return lines.where(F.col("value").rlike(r"\S")).withColumn("id", F.xxhash64("value"))


def _parquet(
    spark: SparkSession, paths: Sequence[str], schema: StructType, table: DataFrame | None = None
) -> DataFrame:
    """file, file_size, id (row index), line, r (struct with a null corrupt column).

    ``table``: ``_parquet_table(spark, paths)`` when the caller has it already.
    """
    table = _parquet_table(spark, paths) if table is None else table
    row = F.struct(*[F.col(f.name) for f in schema.fields], F.lit(None).cast("string").alias(CORRUPT_RECORD))
    return table.select(
        F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_size").alias("file_size"),
        F.col("_metadata.row_index").alias("id"),
        row.alias("r"),
    )


def _parquet_table(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    return spark.read.schema(SNAPSHOT_SCHEMA).parquet(*paths)


def ordering(record: Column, file: Column, identity: Column) -> Column:
    """What "latest" sorts by: instant, epoch, endpoint, file, line identity (all non-null)."""
    return F.struct(
        record["observed_at"].try_cast("timestamp").alias("ts"),
        record["finalized_features_epoch"].alias("epoch"),
        record["endpoint"].alias("endpoint"),
        file.alias("file"),
        identity.alias("id"),
    )


@dataclass
class SnapshotScan:
    """The first pass: a lean, persisted row per input line (see the theory)."""

    spark: SparkSession
    paths: tuple[str, ...]
    fmt: Literal["json", "parquet"]
    rows: DataFrame
    max_locate_bytes: int = 0
    input_bytes: int = 0  # the size of the files read, from their listing
    held: list[DataFrame] = field(default_factory=list)  # the frames persisted for this scan (``kept``)

    def valid(self) -> DataFrame:
        """cluster_id, node_id, order: one row per valid line."""
        return self.rows.where(F.col("reason") == "").select("cluster_id", "node_id", "order")

    def bad_records(self, sizes: Mapping[str, int] | None = None) -> DataFrame:
        """``BAD_RECORDS_SCHEMA`` rows for the bad lines, located in their files.

        ``sizes``: the files holding bad lines and their sizes, if known (``locate_bad_lines``).
        """
        bad = self.rows.where(F.col("reason") != "").select("file", "file_size", "line", "reason", "text")
        if self.fmt == "parquet":
            return bad.select(F.lit("snapshots").alias("source"), "file", "line", "reason", "text")
        return locate_bad_lines(self.spark, bad, "snapshots", self.max_locate_bytes, sizes)

    def unpersist(self) -> None:
        for frame in self.held:  # rows' persisted frame among them: rows itself reads its cache
            frame.unpersist()
        self.held.clear()


def scan_snapshots(
    spark: SparkSession,
    paths: Sequence[str],
    fmt: InputFormat = "auto",
    *,
    max_locate_bytes: int | None = None,
    settings: Callable[[int], Mapping[str, str]] | None = None,
) -> SnapshotScan:
    """Pass one over snapshot lines (JSON lines, or Parquet of the same shape); lazy, persisted on use.

    ``settings``: the SQL settings to plan the scan under, given the size of
    its input files (known from their listing, before the plan is made).
    """
    kind = snapshot_format_of(paths) if fmt == "auto" else fmt
    if kind == "parquet":
        source = _parquet_table(spark, paths)
        parsed = _parquet(spark, paths, CORE_SCHEMA, source)
        text = F.to_json(F.col("r").dropFields(CORRUPT_RECORD))
        line = F.col("id") + 1
    else:
        source = spark.read.text(list(paths))
        parsed = _lines(spark, paths, source).withColumn(
            "r", F.from_json("value", with_corrupt_column(CORE_SCHEMA), _PARSE)
        )
        text, line = F.col("value"), F.lit(None).cast("long")
    size = input_bytes(source)
    # The reason is "" for a valid line; it is referenced once more below (for the text), and
    # turned into null only when the persisted rows are read (see ``snapshot_reason``).
    staged = parsed.withColumn("reason", snapshot_reason(F.col("r")))
    rows = staged.select(
        "reason",
        F.col("r.cluster_id").alias("cluster_id"),
        F.col("r.node_id").alias("node_id"),
        ordering(F.col("r"), F.col("file"), F.col("id")).alias("order"),
        "file",
        "file_size",
        F.when(F.col("reason") != "", text).alias("text"),
        line.alias("line"),
    )
    held: list[DataFrame] = []
    with sql_conf(spark, settings(size) if settings else {}):
        rows = keep(rows, held)  # persisting plans it
    limit = default_locate_limit(spark) if max_locate_bytes is None else max_locate_bytes
    return SnapshotScan(spark, tuple(paths), kind, rows, limit, size, held)


def fetch_snapshots(scan: SnapshotScan, wanted: DataFrame) -> DataFrame:
    """Pass two: the full records of the lines whose (file, id) is in ``wanted`` (at least).

    Columns: the snapshot schema's, ``source_file`` and ``order`` (as in the
    scan).  Diagnostics that do not have their documented shape are null.
    For JSON lines the result may hold more lines than wanted (see below):
    the caller matches them with the winners on every key anyway.
    """
    if scan.fmt == "parquet":
        keys = F.broadcast(wanted.select("file", "id").distinct())
        table = _parquet(scan.spark, scan.paths, SNAPSHOT_SCHEMA).join(keys, ["file", "id"], "left_semi")
        record, full = F.col("r"), F.col("r")
    else:
        # The lines are picked by their 64-bit hash alone: probing a broadcast set of longs is
        # far cheaper per line than hashing (file path, id) pairs, and every line is probed.
        # A line of another file with the same text passes too, and is dropped by the caller's
        # match on the file.  Blank lines are not filtered out here for the same reason: one
        # whose hash collides parses to null keys, which match no winner.
        ids = F.broadcast(wanted.select("id").distinct())
        source = scan.spark.read.text(list(scan.paths))
        lines = source.select(
            F.col("_metadata.file_path").alias("file"), F.col("value"), F.xxhash64("value").alias("id")
        ).join(ids, ["id"], "left_semi")
        # One parse with the full schema; a line whose diagnostics do not fit it (the whole
        # parse is then corrupt) is parsed again without them, so that its core fields are
        # read exactly as the scan read them.  Such lines are rare: the second parse sits in
        # a CASE branch and runs only for them.
        parsed = lines.select(
            "file",
            "value",
            "id",
            F.from_json("value", with_corrupt_column(SNAPSHOT_SCHEMA), _PARSE).alias("full"),
        )
        full_ok = F.col("full").isNotNull() & F.col(f"full.{CORRUPT_RECORD}").isNull()
        core_of_full = F.struct(*[F.col(f"full.{f.name}") for f in with_corrupt_column(CORE_SCHEMA).fields])
        core = F.from_json("value", with_corrupt_column(CORE_SCHEMA), _PARSE)
        table = parsed.select("file", "id", F.when(full_ok, core_of_full).otherwise(core).alias("r"), "full")
        record, full = F.col("r"), F.col("full")
    columns = [
        (
            F.when(full[CORRUPT_RECORD].isNull(), full[f.name])
            if f.name in DIAGNOSTIC_FIELDS
            else record[f.name]
        ).alias(f.name)
        for f in SNAPSHOT_SCHEMA.fields
    ]
    return table.select(
        *columns,
        F.col("file").alias("source_file"),
        ordering(record, F.col("file"), F.col("id")).alias("order"),
    )


def locate_bad_lines(
    spark: SparkSession, bad: DataFrame, source: str, max_bytes: int, sizes: Mapping[str, int] | None = None
) -> DataFrame:
    """Give each bad (file, text) its line numbers by re-reading only the files that hold one.

    ``sizes``: the size of each file holding a bad line, when the caller knows
    them already (otherwise a job of its own finds them).
    """
    if sizes is None:
        found = bad.select("file", "file_size").distinct().collect()
        sizes = {row["file"]: row["file_size"] for row in found}
    files = sorted(f for f, size in sizes.items() if size <= max_bytes)
    unlocated = bad.where(~F.col("file").isin(files)) if len(files) < len(sizes) else None
    frames = []
    if files:
        # One task reads them one after the other: memory for one whole file at a time.
        whole = (
            spark.read.text(files, wholetext=True)
            .select(F.col("_metadata.file_path").alias("file"), F.col("value"))
            .coalesce(1)
        )
        # Splitting on "\n" is a plain scan; the full rule is needed only where "\r" occurs.
        parts = F.when(F.instr("value", "\r") > 0, F.split("value", _LINE_BREAK)).otherwise(
            F.split("value", "\n")
        )
        exploded = whole.select("file", F.posexplode(parts).alias("pos", "text"))
        wanted = (
            bad.where(F.col("file").isin(files))
            .select("file", "text", "reason")
            .dropDuplicates(["file", "text"])
        )
        located = exploded.join(F.broadcast(wanted), ["file", "text"])
        frames.append(
            located.select(
                F.lit(source).alias("source"),
                "file",
                (F.col("pos") + 1).cast("long").alias("line"),
                "reason",
                "text",
            )
        )
    if unlocated is not None:
        frames.append(unlocated.select(F.lit(source).alias("source"), "file", "line", "reason", "text"))
    if not frames:
        return spark.createDataFrame([], BAD_RECORDS_SCHEMA)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


@dataclass(frozen=True)
class ClientRead:
    """Valid profiles (``CLIENT_SCHEMA`` + ``source_file``), and the bad lines."""

    records: DataFrame
    bad: DataFrame
    held: tuple[DataFrame, ...] = ()  # persisted for both: unpersist when done


def read_clients(
    spark: SparkSession, paths: Sequence[str], *, max_locate_bytes: int | None = None
) -> ClientRead:
    """Client profile lines -> profiles + bad records (a repeated (client, version) is bad)."""
    parsed = _lines(spark, paths).withColumn(
        "r", F.from_json("value", with_corrupt_column(CLIENT_SCHEMA), _PARSE)
    )
    checked = parsed.withColumn("reason", client_reason(F.col("r")))
    same = Window.partitionBy(F.col("r.client"), F.col("r.version"))
    valid = F.col("reason") == ""
    repeated = valid & (F.count(F.when(valid, F.lit(1))).over(same) > 1)
    staged = checked.withColumn(
        "reason", F.when(repeated, F.lit(DUPLICATE_PROFILE)).otherwise(F.col("reason"))
    )
    held: list[DataFrame] = []
    staged = keep(staged, held)  # profiles are few; read once for both frames
    records = staged.where(F.col("reason") == "").select(
        *[F.col("r")[f.name].alias(f.name) for f in CLIENT_SCHEMA.fields], F.col("file").alias("source_file")
    )
    bad = staged.where(F.col("reason") != "").select(
        "file", "file_size", F.lit(None).cast("long").alias("line"), "reason", F.col("value").alias("text")
    )
    limit = default_locate_limit(spark) if max_locate_bytes is None else max_locate_bytes
    return ClientRead(records, locate_bad_lines(spark, bad, "clients", limit), tuple(held))
