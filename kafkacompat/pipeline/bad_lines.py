"""Why a line is malformed, field by field, for the people reading the bad records.

Spark cannot tell which field made a record corrupt, so the pipeline's reason
for such a line is ``MALFORMED`` on both sides (``snapshot_format``).  The bad
records keep the line's text, and there are few of them, so the report reads
each malformed one again here, in plain Python, and names the fields whose
JSON does not have the documented type (at most three), with the value found:
``malformed: node_id is "one", not an integer; observed_at "yesterday" is
not an RFC 3339 timestamp with an offset``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from kafkacompat.pipeline.client_format import CLIENT_TYPES
from kafkacompat.pipeline.snapshot_format import CORE_TYPES, INT32, INT64, MALFORMED, RFC3339_PATTERN

__all__ = ["explain_malformed", "shape_faults"]

_SHOWN = 3
_VALUE_CUT = 24
_TYPE_NAMES = {"int": "an integer", "long": "an integer", "str": "a string", "bool": "true or false"}


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= _VALUE_CUT else text[:_VALUE_CUT] + "..."


def shape_faults(value: object, spec: Any, path: str = "") -> list[str]:
    """Each place where ``value`` (null anywhere allowed) departs from ``spec``'s JSON shape."""
    if value is None:
        return []
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [f"{path or 'the line'} is {_shown(value)}, not an object"]
        faults: list[str] = []
        for key, inner in spec.items():
            faults += shape_faults(value.get(key), inner, f"{path}.{key}" if path else key)
        return faults
    if isinstance(spec, list):
        if not isinstance(value, list):
            return [f"{path} is {_shown(value)}, not a list"]
        return [fault for i, item in enumerate(value)
                for fault in shape_faults(item, spec[0], f"{path}[{i}]")]
    if spec == "str":
        ok = isinstance(value, str)
    elif spec == "bool":
        ok = isinstance(value, bool)
    else:
        low, high = INT64 if spec == "long" else INT32
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    return [] if ok else [f"{path} is {_shown(value)}, not {_TYPE_NAMES.get(spec, spec)}"]


def explain_malformed(text: str, source: str = "snapshots") -> str:
    """``MALFORMED`` followed by what is wrong with the line ``text`` (a snapshot or a client profile)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{MALFORMED}: not JSON ({exc.msg.lower()} at character {exc.pos})"
    except ValueError:
        return f"{MALFORMED}: not JSON"
    if not isinstance(obj, dict):
        return f"{MALFORMED}: the line is {_shown(obj)}, not a JSON object"
    spec: Mapping[str, Any] = CORE_TYPES if source == "snapshots" else CLIENT_TYPES
    faults = shape_faults(obj, spec)
    observed = obj.get("observed_at") if source == "snapshots" else None
    if isinstance(observed, str) and not re.match(RFC3339_PATTERN, observed):
        faults.append(f"observed_at {_shown(observed)} is not an RFC 3339 timestamp with an offset")
    if not faults:
        return MALFORMED
    more = f" (and {len(faults) - _SHOWN} more)" if len(faults) > _SHOWN else ""
    return f"{MALFORMED}: {'; '.join(faults[:_SHOWN])}{more}"
