"""The snapshot and client-profile schemas as Spark types, and their validation as Spark columns.

Theory.  Inputs are always read with these explicit schemas, never inferred:
inference reads the data twice, and it would turn one writer's typo into a
new column instead of a reported line.  Each schema is the Spark twin of the
plain-Python definition in ``snapshot_format`` / ``client_format``; the column
expressions below apply the same rules in the same order and produce the same
messages, with Spark built-in functions only, so the data path never leaves
the JVM.  (``validate_snapshot``, ``snapshot_line`` and friends are re-exported
here for whoever looks for "the schema".)

A line Spark's JSON reader cannot read with the schema (not JSON, not an
object, a string where an int belongs, an int out of range) comes back with
``_corrupt_record`` set and is *malformed*, whatever partial values Spark
salvaged.  Nulls and absent fields are told apart from that: they are
*missing*.  ``greatest``/``least``/``min``/``max`` skip nulls in Spark, which is
why every check here tests for null explicitly.

Cost.  Every line goes through these checks, so they use only expressions
Spark compiles to code: no higher-order functions (``exists``, ``filter``
and their lambdas are interpreted, and cost as much as the parse).  A null
in an array is found with ``sort_array`` (nulls sort first), the messages are
joined with ``concat_ws`` (which skips the checks that did not fire).

``CORE_SCHEMA`` is the schema without the diagnostics (``release_guess``,
``handshake``): what the first pass over every line parses.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from kafkacompat.negotiation.features import UNKNOWN_EPOCH
from kafkacompat.pipeline.client_format import CLIENT_ENTRY_FIELDS, CLIENT_REQUIRED_FIELDS
from kafkacompat.pipeline.snapshot_format import (
    BAD_EPOCH,
    BAD_TIMESTAMP,
    ENTRY_FIELDS,
    MALFORMED,
    REQUIRED_FIELDS,
    RFC3339_PATTERN,
    SCHEMA_VERSION,
    duplicate,
    missing,
    snapshot_line,
    validate_snapshot,
)

__all__ = [
    "CLIENT_SCHEMA",
    "CORE_SCHEMA",
    "CORRUPT_RECORD",
    "DIAGNOSTIC_FIELDS",
    "SNAPSHOT_SCHEMA",
    "client_reason",
    "snapshot_line",
    "snapshot_reason",
    "validate_snapshot",
    "with_corrupt_column",
]

CORRUPT_RECORD = "_corrupt_record"


def _field(name: str, kind: object) -> StructField:
    return StructField(name, kind, nullable=True)  # type: ignore[arg-type]  # DataType subclasses


def _range(key: str, key_type: object) -> StructType:
    return StructType([_field(key, key_type), _field("min", IntegerType()), _field("max", IntegerType())])


API_RANGE = _range("api_key", IntegerType())
FEATURE_RANGE = _range("name", StringType())

SNAPSHOT_SCHEMA = StructType(
    [
        _field("schema", IntegerType()),
        _field("observed_at", StringType()),
        _field("cluster_id", StringType()),
        _field("node_id", IntegerType()),
        _field("endpoint", StringType()),
        _field(
            "release_guess",
            StructType(
                [
                    _field("kind", StringType()),
                    _field("text", StringType()),
                    _field("evidence", ArrayType(StringType())),
                ]
            ),
        ),
        _field("api_versions", ArrayType(API_RANGE)),
        _field("supported_features", ArrayType(FEATURE_RANGE)),
        _field("finalized_features", ArrayType(FEATURE_RANGE)),
        _field("finalized_features_epoch", LongType()),
        _field(
            "handshake",
            StructType(
                [
                    _field(
                        "attempts",
                        ArrayType(
                            StructType(
                                [
                                    _field("version", IntegerType()),
                                    _field("outcome", StringType()),
                                ]
                            )
                        ),
                    ),
                    _field("round_trips", IntegerType()),
                    _field("connections", IntegerType()),
                    _field("api_versions_version", IntegerType()),
                ]
            ),
        ),
    ]
)

CLIENT_SCHEMA = StructType(
    [
        _field("client", StringType()),
        _field("version", StringType()),
        _field(
            "api_versions",
            ArrayType(
                StructType(
                    [
                        _field("api_key", IntegerType()),
                        _field("min", IntegerType()),
                        _field("max", IntegerType()),
                        _field("required", BooleanType()),
                        _field("pick", StringType()),
                        _field("min_exact", BooleanType()),
                        _field("max_exact", BooleanType()),
                        _field(
                            "by_release",
                            ArrayType(
                                StructType(
                                    [_field("release", StringType()), _field("version", IntegerType())]
                                )
                            ),
                        ),
                    ]
                )
            ),
        ),
        _field("obeys_feature_gates", BooleanType()),
    ]
)


DIAGNOSTIC_FIELDS: tuple[str, ...] = ("release_guess", "handshake")
CORE_SCHEMA = StructType([f for f in SNAPSHOT_SCHEMA.fields if f.name not in DIAGNOSTIC_FIELDS])
_INT_SENTINEL = -(2**31)
_STRING_SENTINEL = "\u0000"


def with_corrupt_column(schema: StructType) -> StructType:
    """``schema`` plus the string column Spark fills with lines it cannot read."""
    return StructType([*schema.fields, _field(CORRUPT_RECORD, StringType())])


def _when(condition: Column, message: str | Column) -> Column:
    return F.when(condition, message if isinstance(message, Column) else F.lit(message))


def _gated(checks: list[tuple[Column, str | Column]], gate: Column) -> list[Column]:
    """``when(condition & gate, message)`` per check: the condition first, so that it is always
    evaluated and Spark shares its parts between checks (code in a CASE branch is not shared)."""
    return [_when(condition & gate, message) for condition, message in checks]


def _has_null(values: Column) -> Column:
    """Whether a (non-null) array holds a null: ascending ``sort_array`` puts nulls first."""
    return (F.size(values) > 0) & F.try_element_at(F.sort_array(values), F.lit(1)).isNull()


def _list_checks(
    record: Column, name: str, fields: tuple[str, ...], unique: str, maybe_null: Column
) -> list[tuple[Column, str]]:
    """Missing entry fields (a null entry misses them all), then duplicate keys.

    ``maybe_null`` is a cheap test that is true whenever some entry field is
    null; the exact tests (a sort each) run only when it is.
    """
    items = record[name]
    checks = [(maybe_null & _has_null(items[f]), missing(f"{name}[].{f}")) for f in fields]
    keys = items[unique]
    no_null_key = ~(maybe_null & _has_null(keys))
    checks.append((no_null_key & (F.size(F.array_distinct(keys)) != F.size(keys)), duplicate(unique, name)))
    return checks


def _maybe_null(record: Column, lists: list[tuple[str, tuple[str, ...]]]) -> Column:
    """True when an entry field of ``lists`` may be null (sound, cheap: no sort, no allocation).

    ``array_contains`` is null exactly when the array holds a null and not the
    value looked for; the sentinel value found, or any doubt, also says "maybe".
    """
    tests = []
    for name, fields in lists:
        for f in fields:
            values = record[name][f]
            sentinel = F.lit(_STRING_SENTINEL) if f == "name" else F.lit(_INT_SENTINEL)
            tests.append(F.coalesce(F.array_contains(values, sentinel), F.lit(True)))
    found = tests[0]
    for test in tests[1:]:
        found = found | test
    return found


def _reason(checks: list[Column]) -> Column:
    """The messages of the checks that fired, joined by "; " ("" when none did).

    ``concat_ws`` skips nulls.  The empty string, not null, marks a valid line:
    turning it into null here would repeat the whole expression (Spark's
    ``nullif`` is ``if(x = '', null, x)``), and Spark cannot share it between
    the two when it sits in a CASE branch.
    """
    return F.concat_ws("; ", *checks)


def _bad_timestamp(observed: Column) -> Column:
    return ~observed.rlike(RFC3339_PATTERN) | observed.try_cast("timestamp").isNull()


def snapshot_reason(record: Column) -> Column:
    """Why a parsed snapshot (with the corrupt column) is bad; "" when it is valid.

    Same order and wording as ``"; ".join(snapshot_format.validate_snapshot(...))``.
    """
    corrupt = record.isNull() | record[CORRUPT_RECORD].isNotNull()
    schema = record["schema"]
    checks: list[tuple[Column, str | Column]] = [
        (record[name].isNull(), missing(name)) for name in REQUIRED_FIELDS
    ]
    maybe_null = _maybe_null(record, [(name, fields) for name, (fields, _) in ENTRY_FIELDS.items()])
    for name, (fields, unique) in ENTRY_FIELDS.items():
        checks += _list_checks(record, name, fields, unique, maybe_null)
    observed = record["observed_at"]
    checks.append((observed.isNotNull() & _bad_timestamp(observed), BAD_TIMESTAMP))
    checks.append((record["finalized_features_epoch"] < UNKNOWN_EPOCH, BAD_EPOCH))
    return _reason(
        [
            _when(corrupt, MALFORMED),
            _when(schema.isNull() & ~corrupt, missing("schema")),
            _when(
                (schema != SCHEMA_VERSION) & ~corrupt,
                F.concat(F.lit("unknown schema version "), schema.cast("string")),
            ),
            *_gated(checks, ~corrupt & (schema == SCHEMA_VERSION)),
        ]
    )


def client_reason(record: Column) -> Column:
    """Why a parsed profile is bad; "" when valid (``client_format.validate_client_profile``)."""
    corrupt = record.isNull() | record[CORRUPT_RECORD].isNotNull()
    checks: list[tuple[Column, str | Column]] = [
        (record[name].isNull(), missing(name)) for name in CLIENT_REQUIRED_FIELDS
    ]
    maybe_null = _maybe_null(record, [("api_versions", CLIENT_ENTRY_FIELDS)])
    checks += _list_checks(record, "api_versions", CLIENT_ENTRY_FIELDS, "api_key", maybe_null)
    return _reason([_when(corrupt, MALFORMED), *_gated(checks, ~corrupt)])
