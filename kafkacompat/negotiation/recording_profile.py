"""A recorded client's profile as the fleet pipeline reads it, whole or in pieces.

Theory.  ``negotiation.recording`` keeps per client what it sent and what
became of it; this module turns one ``ClientRecord`` into a client profile
(``client_format``) with a ``recorded`` block of evidence.  How the pick is
read is told in ``negotiation.recording``.  A profile of a busy client holds
up to ``MAX_ENTRIES`` (API, version) entries, the bulk of its JSON line, so
``profile_pieces`` gives the line a bounded number of entries at a time: a
writer sharing a loop with live traffic pauses between pieces.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kafkacompat.protocol.messages import ApiKey

if TYPE_CHECKING:
    from kafkacompat.negotiation.recording import ClientRecord

__all__ = ["client_profile", "profile_pieces"]

API_VERSIONS = int(ApiKey.API_VERSIONS)
_NO_REQUESTS = '"requests": []'


def profile_pieces(record: ClientRecord, per_piece: int = 64) -> Iterator[str]:
    """``record``'s profile as one JSON line (sorted keys, no newline), in pieces.

    A piece holds at most ``per_piece`` of the (api key, version) entries; the
    pieces joined are ``json.dumps(client_profile(record), sort_keys=True)``.
    """
    text = json.dumps(client_profile(record, with_requests=False), sort_keys=True)
    # Inside a JSON string every quote is escaped: the marker can only be the key itself.
    head, _, tail = text.rpartition(_NO_REQUESTS)
    yield head + '"requests": ['
    entries = _requests(record)
    first = True
    while True:
        chunk = [json.dumps(entry, sort_keys=True) for entry in itertools.islice(entries, per_piece)]
        if not chunk:
            break
        yield ("" if first else ", ") + ", ".join(chunk)
        first = False
    yield "]" + tail


def _last_request(record: ClientRecord) -> dict[str, Any] | None:
    if record.last is None:
        return None
    sequence, api_key, version, outcome = record.last
    return {"api_key": api_key, "version": version, "outcome": outcome, "sequence": sequence}


def _requests(record: ClientRecord) -> Iterator[dict[str, Any]]:
    for (key, version), counts in sorted(record.outcomes.items()):
        yield {"api_key": key, "version": version, "outcomes": dict(sorted(counts.items()))}


def client_profile(record: ClientRecord, with_requests: bool = True) -> dict[str, Any]:
    by_api: dict[int, list[int]] = {}
    for api_key, version in record.outcomes:
        by_api.setdefault(api_key, []).append(version)
    entries = []
    for api_key, versions in sorted(by_api.items()):
        fixed = any((api_key, v) in record.unnegotiated for v in versions)
        exact = fixed or any((api_key, v) in record.below_offer for v in versions)
        if api_key == API_VERSIONS:
            fixed, exact = False, True  # its own negotiation: KIP-511 fallback, not an offer
        entries.append({
            "api_key": api_key, "min": min(versions), "max": max(versions), "required": True,
            "pick": "fixed" if fixed else "highest", "max_exact": exact, "min_exact": False,
        })
    requests = list(_requests(record)) if with_requests else []
    offered = [
        {"apis": [{"api_key": k, "min": low, "max": high} for k, low, high in offer], "connections": n}
        for offer, n in record.offered.items()
    ]
    return {
        "client": record.name,
        "version": record.version,
        "api_versions": entries,
        "recorded": {
            "identified_by": record.identified_by,
            "client_ids": sorted(record.client_ids),
            "dropped_requests": record.dropped,
            "requests": requests,
            "offered": offered,
            "last_request": _last_request(record),
        },
    }
