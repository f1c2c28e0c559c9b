"""Client profiles: which API versions a client application can send, and which it needs.

Theory.  A negotiation has two sides; the snapshots give the brokers', a
client profile gives the client's.  One profile is one JSON line::

    {"client": "billing-consumer", "version": "2.3.1",
     "api_versions": [{"api_key": 1, "min": 4, "max": 13, "required": true}, ...]}

``min``/``max`` are the request versions the client can write (inclusive; a
``min`` above ``max`` means it cannot write that API at all, as in
``VersionRange``).  An API the profile does not list is one the client never
sends.  ``required`` (default false) marks the APIs without which the client
cannot work: the fleet report calls a cluster *compatible* with a client when
every required API has a version every broker of the cluster accepts.  The
pair (client, version) names a profile and must be unique across the inputs.
Recorded and measured profiles (``kafkacompat record``,
``kafkacompat.profiles``) are read unchanged: their optional ``pick``
("highest" or "fixed"), ``min_exact``/``max_exact`` per API and
``obeys_feature_gates`` are what ``negotiation.verdicts.client_side`` reads
for the what-if table; other fields (``recorded``) are ignored.

kafkacompat's own profile comes from its generated codec
(``kafkacompat.protocol.messages.REQUEST_VERSIONS``).  Its required APIs are
the ones the library cannot do without: ApiVersions (18), since every
connection starts with the handshake; Metadata (3), since brokers, topics and
leaders are found with it; and FindCoordinator (10), since group and
transaction requests are routed by it.  Everything else is used when a caller
asks for it, so a cluster lacking it is still usable.

This module does not import Spark; ``snapshot_schema`` holds the Spark side.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kafkacompat._version import __version__
from kafkacompat.pipeline.snapshot_format import MALFORMED, entry_problems, missing, shape_ok
from kafkacompat.protocol import messages
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "CLIENT_REQUIRED_FIELDS",
    "CLIENT_TYPES",
    "KAFKACOMPAT_CLIENT",
    "KAFKACOMPAT_REQUIRED_APIS",
    "client_profile",
    "client_ranges",
    "kafkacompat_client_profile",
    "parse_client_line",
    "required_apis",
    "validate_client_profile",
]

KAFKACOMPAT_CLIENT = "kafkacompat"
# ApiVersions, Metadata, FindCoordinator: see the module docstring.
KAFKACOMPAT_REQUIRED_APIS: tuple[int, ...] = (18, 3, 10)

CLIENT_REQUIRED_FIELDS: tuple[str, ...] = ("client", "version", "api_versions")
CLIENT_ENTRY_FIELDS: tuple[str, ...] = ("api_key", "min", "max")
CLIENT_TYPES: Mapping[str, Any] = {
    "client": "str",
    "version": "str",
    "obeys_feature_gates": "bool",
    "api_versions": [
        {
            "api_key": "int",
            "min": "int",
            "max": "int",
            "required": "bool",
            "pick": "str",
            "min_exact": "bool",
            "max_exact": "bool",
            "by_release": [{"release": "str", "version": "int"}],
        }
    ],
}


def validate_client_profile(obj: object) -> list[str]:
    """The problems of one decoded profile line ([] when valid); ``required`` may be absent."""
    if not isinstance(obj, dict) or not shape_ok(obj, CLIENT_TYPES):
        return [MALFORMED]
    problems = [missing(name) for name in CLIENT_REQUIRED_FIELDS if obj.get(name) is None]
    return problems + entry_problems(obj.get("api_versions"), "api_versions", CLIENT_ENTRY_FIELDS, "api_key")


def parse_client_line(line: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Decode and validate one profile line: ``(object, [])`` or ``(None, problems)``."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None, [MALFORMED]
    problems = validate_client_profile(obj)
    return (None, problems) if problems else (obj, [])


def client_profile(
    client: str,
    version: str,
    ranges: Mapping[int, VersionRange | tuple[int, int]],
    required: Iterable[int] = (),
) -> dict[str, Any]:
    """A profile line (as a dict) from ``api_key -> range`` and the required keys."""
    needed = set(required)
    unknown = needed - set(ranges)
    if unknown:
        raise ValueError(f"required APIs {sorted(unknown)} are not in the client's ranges")
    entries = []
    for key, value in sorted(ranges.items()):
        low, high = (value.lowest, value.highest) if isinstance(value, VersionRange) else value
        entries.append({"api_key": key, "min": low, "max": high, "required": key in needed})
    return {"client": client, "version": version, "api_versions": entries}


def kafkacompat_client_profile() -> dict[str, Any]:
    """kafkacompat's own profile: its codec's request versions; 18, 3 and 10 required."""
    return client_profile(
        KAFKACOMPAT_CLIENT, __version__, dict(messages.REQUEST_VERSIONS), KAFKACOMPAT_REQUIRED_APIS
    )


def client_ranges(profile: Mapping[str, Any]) -> dict[int, VersionRange]:
    """``api_key -> VersionRange`` of a valid profile (what ``client_ranges=`` takes)."""
    return {e["api_key"]: VersionRange(e["min"], e["max"]) for e in profile["api_versions"]}


def required_apis(profile: Mapping[str, Any]) -> tuple[int, ...]:
    """The api keys a valid profile marks required, sorted."""
    return tuple(sorted(e["api_key"] for e in profile["api_versions"] if e.get("required")))
