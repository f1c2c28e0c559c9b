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

from kafkacompat.negotiation.verdicts import NEVER_REQUIRED
from kafkacompat.protocol.messages import ApiKey

if TYPE_CHECKING:
    from kafkacompat.negotiation.recording import ClientRecord

__all__ = ["client_profile", "profile_pieces"]

API_VERSIONS = int(ApiKey.API_VERSIONS)
_NO_ENTRIES = '{"api_versions": []'
_NO_REQUESTS = '"requests": []'


def profile_pieces(record: ClientRecord, per_piece: int = 64) -> Iterator[str]:
    """``record``'s profile as one JSON line (sorted keys, no newline), in pieces.

    A piece holds at most ``per_piece`` of the per-API entries or of the
    (api key, version) entries, the two lists that grow with what a client
    sends; the pieces joined are ``json.dumps(client_profile(record), sort_keys=True)``.
    """
    text = json.dumps(client_profile(record, with_entries=False), sort_keys=True)
    # "api_versions" sorts first; inside a JSON string every quote is escaped, so the
    # markers can only be the keys themselves.
    middle, _, tail = text[len(_NO_ENTRIES) :].rpartition(_NO_REQUESTS)
    yield '{"api_versions": ['
    yield from _chunks(_api_entries(record), per_piece)
    yield "]" + middle + '"requests": ['
    yield from _chunks(_requests(record), per_piece)
    yield "]" + tail


def _chunks(entries: Iterator[dict[str, Any]], per_piece: int) -> Iterator[str]:
    first = True
    while True:
        chunk = list(itertools.islice(entries, per_piece))
        if not chunk:
            return
        text = json.dumps(chunk, sort_keys=True)[1:-1]  # one call per piece: the C encoder's loop
        yield text if first else ", " + text
        first = False


def _last_request(record: ClientRecord) -> dict[str, Any] | None:
    if record.last is None:
        return None
    sequence, api_key, version, outcome = record.last
    return {"api_key": api_key, "version": version, "outcome": outcome, "sequence": sequence}


def _requests(record: ClientRecord) -> Iterator[dict[str, Any]]:
    for (key, version), counts in sorted(record.outcomes.items()):
        yield {"api_key": key, "version": version, "outcomes": dict(counts)}  # sorted as kept


def _api_entries(record: ClientRecord) -> Iterator[dict[str, Any]]:
    by_api: dict[int, list[int]] = {}
    for api_key, version in record.outcomes:
        by_api.setdefault(api_key, []).append(version)
    for api_key, versions in sorted(by_api.items()):
        fixed = any((api_key, v) in record.unnegotiated for v in versions)
        exact = fixed or any((api_key, v) in record.below_offer for v in versions)
        if api_key == API_VERSIONS:
            fixed, exact = False, True  # its own negotiation: KIP-511 fallback, not an offer
        yield {
            "api_key": api_key, "min": min(versions), "max": max(versions),
            "required": api_key not in NEVER_REQUIRED,  # telemetry (KIP-714): used only where offered
            "pick": "fixed" if fixed else "highest", "max_exact": exact, "min_exact": False,
        }


def client_profile(record: ClientRecord, with_entries: bool = True) -> dict[str, Any]:
    """The client profile of ``record``; ``with_entries`` False leaves both growing lists empty."""
    offered = [
        {"apis": [{"api_key": k, "min": low, "max": high} for k, low, high in offer], "connections": n}
        for offer, n in record.offered.items()
    ]
    return {
        "client": record.name,
        "version": record.version,
        "api_versions": list(_api_entries(record)) if with_entries else [],
        "recorded": {
            "identified_by": record.identified_by,
            "client_ids": sorted(record.client_ids),
            "dropped_requests": record.dropped,
            "requests": list(_requests(record)) if with_entries else [],
            "offered": offered,
            "last_request": _last_request(record),
        },
    }
