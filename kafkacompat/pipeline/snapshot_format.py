"""The capability snapshot, schema 1: one JSON line per broker connection (no Spark here).

Theory.  ``kafkacompat snapshot`` writes what one handshake learnt about one
broker as one JSON object on one line, and the fleet pipeline reads millions of
them.  The line is the contract between the two, so it is defined once, here,
in plain Python (the command line must not need Spark), and mirrored as a Spark
``StructType`` in ``snapshot_schema``.  The rules a line must follow are the
same on both sides, with the same messages, so a line the pipeline rejects can
be checked by hand with ``validate_snapshot``:

- it is a JSON object whose fields have the documented types (otherwise it is
  *malformed*: Spark cannot tell which field was wrong once a record is
  corrupt, so neither do we);
- ``schema`` is 1 (a newer writer's lines are reported, never guessed at);
- every field the answers depend on is present and not null: ``schema``,
  ``observed_at``, ``cluster_id``, ``node_id``, ``endpoint``, ``api_versions``,
  ``supported_features``, ``finalized_features``,
  ``finalized_features_epoch``, and every field of their entries (a null
  entry misses all of its fields);
- ``observed_at`` is an RFC 3339 timestamp with an offset (``Z`` or ``+hh:mm``);
- an API key, or a feature name, appears at most once per list;
- the epoch is -1 (unknown) or more.

``release_guess`` and ``handshake`` are diagnostics: they are kept when they
have the documented shape and read as null otherwise, and never make a line
bad (so the pipeline's first pass need not parse them, which halves its cost).

A range whose ``min`` is above its ``max`` is kept as written: it means the
broker does not offer that API (or feature), exactly as in
``BrokerCapabilities``.  Known leniency of the Spark side: Spark reads any JSON
scalar into a string field (``"cluster_id": 5`` becomes ``"5"``) and reads the
first JSON value of a line, ignoring what follows it; this module refuses both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.features import UNKNOWN_EPOCH
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "MALFORMED",
    "REQUIRED_FIELDS",
    "RFC3339_PATTERN",
    "SCHEMA_VERSION",
    "capabilities_from_snapshot",
    "diagnostics",
    "format_observed_at",
    "observed_instant",
    "parse_snapshot_line",
    "snapshot_json",
    "snapshot_line",
    "validate_snapshot",
]

SCHEMA_VERSION = 1

# The problems, worded once for both validators.
MALFORMED = "malformed: not a JSON object of the expected shape"
BAD_TIMESTAMP = "observed_at is not an RFC 3339 timestamp with an offset"
BAD_EPOCH = "finalized_features_epoch is below -1"


def missing(path: str) -> str:
    return f"missing field {path}"


def duplicate(key: str, where: str) -> str:
    return f"duplicate {key} in {where}"


def unknown_schema(version: object) -> str:
    return f"unknown schema version {version}"


# Checked in this order; the entry lists' own fields follow their list.
REQUIRED_FIELDS: tuple[str, ...] = (
    "schema",
    "observed_at",
    "cluster_id",
    "node_id",
    "endpoint",
    "api_versions",
    "supported_features",
    "finalized_features",
    "finalized_features_epoch",
)
# list field -> (its entries' fields in order, the field that must be unique)
ENTRY_FIELDS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "api_versions": (("api_key", "min", "max"), "api_key"),
    "supported_features": (("name", "min", "max"), "name"),
    "finalized_features": (("name", "min", "max"), "name"),
}
# Python's regex; Spark's (Java) reads it the same way.
RFC3339_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$"
_RFC3339 = re.compile(RFC3339_PATTERN)

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

# field -> type tag, for the shape check ("int", "long", "str", "bool", or a nested spec)
_ENTRY_TYPES = {"api_key": "int", "min": "int", "max": "int", "name": "str"}
CORE_TYPES: Mapping[str, Any] = {
    "schema": "int",
    "observed_at": "str",
    "cluster_id": "str",
    "node_id": "int",
    "endpoint": "str",
    "api_versions": [_ENTRY_TYPES],
    "supported_features": [_ENTRY_TYPES],
    "finalized_features": [_ENTRY_TYPES],
    "finalized_features_epoch": "long",
}
DIAGNOSTIC_TYPES: Mapping[str, Any] = {
    "release_guess": {"kind": "str", "text": "str", "evidence": ["str"]},
    "handshake": {
        "attempts": [{"version": "int", "outcome": "str"}],
        "round_trips": "int",
        "connections": "int",
        "api_versions_version": "int",
    },
}


def shape_ok(value: object, spec: Any) -> bool:
    """Whether ``value`` (null anywhere allowed) has the JSON shape ``spec`` describes.

    This is what Spark's reader accepts for the matching ``StructType``, minus
    its leniency for strings: ints must be JSON integers in range (not floats,
    not booleans).
    """
    if value is None:
        return True
    if isinstance(spec, dict):
        return isinstance(value, dict) and all(shape_ok(value.get(k), s) for k, s in spec.items())
    if isinstance(spec, list):
        return isinstance(value, list) and all(shape_ok(item, spec[0]) for item in value)
    if spec == "str":
        return isinstance(value, str)
    if spec == "bool":
        return isinstance(value, bool)
    low, high = INT64 if spec == "long" else INT32
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def validate_snapshot(obj: object) -> list[str]:
    """The problems of one decoded snapshot line, in a fixed order ([] when it is valid)."""
    if not isinstance(obj, dict) or not shape_ok(obj, CORE_TYPES):
        return [MALFORMED]
    if obj.get("schema") is None:
        return [missing("schema")]
    if obj["schema"] != SCHEMA_VERSION:
        return [unknown_schema(obj["schema"])]
    return _field_problems(obj, REQUIRED_FIELDS, ENTRY_FIELDS) + _value_problems(obj)


def _field_problems(
    obj: Mapping[str, Any],
    required: tuple[str, ...],
    entries: Mapping[str, tuple[tuple[str, ...], str]],
) -> list[str]:
    problems: list[str] = []
    for name in required:
        if obj.get(name) is None:
            problems.append(missing(name))
    for name, (fields, unique) in entries.items():
        problems += entry_problems(obj.get(name), name, fields, unique)
    return problems


def entry_problems(items: list[Any] | None, name: str, fields: tuple[str, ...], unique: str) -> list[str]:
    """Missing fields of a list's entries (a null entry misses them all), then duplicate keys.

    Duplicates are looked for only when every key is present.
    """
    if items is None:
        return []
    rows = [item or {} for item in items]
    problems = [missing(f"{name}[].{f}") for f in fields if any(row.get(f) is None for row in rows)]
    keys = [row.get(unique) for row in rows]
    if None not in keys and len(set(keys)) != len(keys):
        problems.append(duplicate(unique, name))
    return problems


def _value_problems(obj: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    observed = obj.get("observed_at")
    if observed is not None and _parse_instant(observed) is None:
        problems.append(BAD_TIMESTAMP)
    epoch = obj.get("finalized_features_epoch")
    if epoch is not None and epoch < UNKNOWN_EPOCH:
        problems.append(BAD_EPOCH)
    return problems


def _parse_instant(text: str) -> datetime | None:
    if not _RFC3339.match(text):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def diagnostics(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``release_guess`` and ``handshake`` as the pipeline keeps them: null unless well-formed.

    (Spark keeps a diagnostic whose JSON fits its type: that is this shape check.)
    """
    return {
        name: obj.get(name) if shape_ok(obj.get(name), spec) else None
        for name, spec in DIAGNOSTIC_TYPES.items()
    }


def observed_instant(text: str) -> datetime:
    """``observed_at`` as an aware datetime (microseconds, as Spark keeps it)."""
    found = _parse_instant(text)
    if found is None:
        raise ValueError(f"{BAD_TIMESTAMP}: {text!r}")
    return found


def parse_snapshot_line(line: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Decode and validate one line: ``(object, [])`` or ``(None, problems)``."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None, [MALFORMED]
    problems = validate_snapshot(obj)
    return (None, problems) if problems else (obj, [])


def format_observed_at(value: datetime | str) -> str:
    """RFC 3339 in UTC with ``Z`` (an aware datetime), or a checked RFC 3339 string."""
    if isinstance(value, str):
        observed_instant(value)
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("observed_at must be timezone-aware (UTC is best)")
    text = value.astimezone(UTC).isoformat(timespec="microseconds")
    return text.removesuffix("+00:00") + "Z"


def _ranges(table: Mapping[Any, VersionRange], key: str) -> list[dict[str, Any]]:
    return [{key: k, "min": r.lowest, "max": r.highest} for k, r in sorted(table.items())]


def snapshot_line(
    capabilities: BrokerCapabilities,
    cluster_id: str,
    observed_at: datetime | str,
    *,
    node_id: int | None = None,
) -> dict[str, Any]:
    """The schema-1 snapshot of one broker connection, as a dict ready for ``json.dumps``.

    ``node_id`` overrides the capabilities' own (a bootstrap connection may not
    know it); one of them is needed, since the pipeline keys brokers by it.  An
    unknown finalized-features epoch is written as -1, as brokers send it.
    """
    node = capabilities.node_id if node_id is None else node_id
    if node is None:
        raise ValueError(f"no node id for {capabilities.node}: pass node_id=")
    if not cluster_id:
        raise ValueError("a snapshot needs a cluster id")
    guess = capabilities.release_guess
    transcript = capabilities.transcript
    epoch = capabilities.finalized_features_epoch
    return {
        "schema": SCHEMA_VERSION,
        "observed_at": format_observed_at(observed_at),
        "cluster_id": cluster_id,
        "node_id": node,
        "endpoint": capabilities.node,
        "release_guess": {"kind": guess.kind, "text": guess.text, "evidence": list(guess.evidence)},
        "api_versions": _ranges(capabilities.api_ranges, "api_key"),
        "supported_features": _ranges(capabilities.supported_features, "name"),
        "finalized_features": _ranges(capabilities.finalized_features, "name"),
        "finalized_features_epoch": UNKNOWN_EPOCH if epoch is None else epoch,
        "handshake": {
            "attempts": [
                {"version": a.version, "outcome": a.outcome}
                for a in (transcript.attempts if transcript else ())
            ],
            "round_trips": transcript.round_trips if transcript else 0,
            "connections": transcript.connections if transcript else 0,
            "api_versions_version": transcript.api_versions_version if transcript else None,
        },
    }


def snapshot_json(line: Mapping[str, Any]) -> str:
    """One compact JSON line (no newline) for a snapshot dict."""
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False)


def capabilities_from_snapshot(obj: Mapping[str, Any]) -> BrokerCapabilities:
    """The ``BrokerCapabilities`` a valid snapshot describes (node = endpoint)."""
    problems = validate_snapshot(obj)
    if problems:
        raise ValueError("; ".join(problems))

    def table(name: str, key: str) -> dict[Any, tuple[int, int]]:
        return {item[key]: (item["min"], item["max"]) for item in obj[name]}

    return BrokerCapabilities.from_ranges(
        obj["endpoint"],
        table("api_versions", "api_key"),
        node_id=obj["node_id"],
        supported_features=table("supported_features", "name"),
        finalized_features=table("finalized_features", "name"),
        finalized_features_epoch=obj["finalized_features_epoch"],
    )
