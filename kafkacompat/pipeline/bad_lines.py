"""Why a snapshot or client-profile line is bad, field by field: the one wording every reader uses.

Spark cannot tell which field made a record corrupt, so the pipeline's reason
for such a line is ``MALFORMED`` on both sides (``snapshot_format``).  A person
needs the field: each bad line is read again here, in plain Python, and every
field whose JSON does not have the documented type is named with the value
found (at most three, then how many more), in the order of the format::

    snapshot line 3 of fleet.jsonl: observed_at: not an RFC 3339 time ('yesterday');
    node_id: not an integer ('one')

(on one line).  The same words go everywhere a bad line is reported: the fleet report's bad
records and its summary on the command line (``bad_record``), and ``kafkacompat
check``'s one-line error (``bad_line``).  A line that has the right shape but
breaks another rule (a missing field, an unknown schema, a duplicate key)
keeps the validator's own message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from kafkacompat.pipeline.client_format import CLIENT_TYPES, validate_client_profile
from kafkacompat.pipeline.snapshot_format import (
    BAD_TIMESTAMP,
    CORE_TYPES,
    INT32,
    INT64,
    MALFORMED,
    RFC3339_PATTERN,
    validate_snapshot,
)

__all__ = ["bad_line", "bad_record", "explain_malformed", "line_problems", "shape_faults"]

_SHOWN = 3
_VALUE_CUT = 24
_TYPE_NAMES = {"int": "an integer", "long": "an integer", "str": "a string", "bool": "true or false"}
# What a line of each source is called, and the shape it must have.
_WHAT = {"snapshots": "snapshot", "clients": "client profile"}
_TYPES: Mapping[str, Mapping[str, Any]] = {"snapshots": CORE_TYPES, "clients": CLIENT_TYPES}


def _shown(value: object) -> str:
    """A value as found, cut short: strings quoted as typed ('one'), anything else as JSON."""
    text = repr(value) if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= _VALUE_CUT else text[: _VALUE_CUT - 3] + "..."


def _fault(path: str, what: str, value: object) -> str:
    return f"{path}: {what} ({_shown(value)})"


def shape_faults(value: object, spec: Any, path: str = "") -> list[str]:
    """Each place where ``value`` (null anywhere allowed) departs from ``spec``'s JSON shape."""
    if value is None:
        return []
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [_fault(path or "the line", "not a JSON object", value)]
        faults: list[str] = []
        for key, inner in spec.items():
            faults += shape_faults(value.get(key), inner, f"{path}.{key}" if path else key)
        return faults
    if isinstance(spec, list):
        if not isinstance(value, list):
            return [_fault(path, "not a list", value)]
        return [f for i, item in enumerate(value) for f in shape_faults(item, spec[0], f"{path}[{i}]")]
    if spec == "str":
        ok = isinstance(value, str)
    elif spec == "bool":
        ok = isinstance(value, bool)
    else:
        low, high = INT64 if spec == "long" else INT32
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    return [] if ok else [_fault(path, f"not {_TYPE_NAMES.get(spec, spec)}", value)]


def _field_faults(obj: Mapping[str, Any], source: str) -> list[str]:
    """The shape faults of a decoded object, with a snapshot's observed_at also read as a time."""
    faults: list[str] = []
    for key, spec in _TYPES[source].items():
        found = shape_faults(obj.get(key), spec, key)
        value = obj.get(key)
        if not found and source == "snapshots" and key == "observed_at" and isinstance(value, str):
            found = [] if re.match(RFC3339_PATTERN, value) else [_fault(key, "not an RFC 3339 time", value)]
        faults += found
    return faults


def line_problems(text: str, source: str = "snapshots") -> list[str]:
    """Why one line of ``source`` (``snapshots`` or ``clients``) is bad, field by field; [] when good."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return [f"not JSON ({exc.msg.lower()} at character {exc.pos})"]
    except ValueError:
        return ["not JSON"]
    if not isinstance(obj, dict):
        return [f"not a JSON object ({_shown(obj)})"]
    faults = _field_faults(obj, source)
    if faults:
        return faults
    problems = validate_snapshot(obj) if source == "snapshots" else validate_client_profile(obj)
    bad_time = _fault("observed_at", "not an RFC 3339 time", obj.get("observed_at"))
    return [bad_time if problem == BAD_TIMESTAMP else problem for problem in problems]


def _listed(problems: list[str]) -> str:
    more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
    return "; ".join(problems[:_SHOWN]) + more


def _where(source: str, file: str | os.PathLike[str] | None, number: int | None) -> str:
    name = os.fspath(file) if file is not None else ""
    if name.startswith("file:"):  # Spark's name of a local file: shown as the path typed
        name = urlparse(name).path
    of = f" of {name}" if name else ""
    return f"{_WHAT.get(source, source)} line {number}{of}"


def bad_line(source: str, file: str | os.PathLike[str] | None, number: int, text: str) -> str | None:
    """``"snapshot line 3 of FILE: node_id: not an integer ('one')"`` for a bad line; None for a good one.

    ``source`` is ``snapshots`` or ``clients``; ``number`` counts from 1.
    """
    problems = line_problems(text, source)
    return f"{_where(source, file, number)}: {_listed(problems)}" if problems else None


def bad_record(source: str, file: str | None, number: int | None, reason: str, text: str | None) -> str:
    """One of the pipeline's bad records (its Spark ``reason``) in the words of ``bad_line``."""
    if reason == MALFORMED and text:
        reason = _listed(line_problems(text, source)) or reason
    where = _where(source, file, number)
    if number is None:  # not located (a file too large to read again): the file alone
        where = where.replace(" line None of", "")
    return f"{where}: {reason}"


def explain_malformed(text: str, source: str = "snapshots") -> str:
    """``MALFORMED`` followed by what is wrong with the line ``text`` (a snapshot or a client profile)."""
    problems = line_problems(text, source)
    return f"{MALFORMED}: {_listed(problems)}" if problems else MALFORMED
