"""How many connections one operation may open because a broker's answer named them.

Theory.  A Metadata answer is a list of addresses the client is then asked to
connect to: ``capabilities()``, ``inspect --all-brokers`` and coordinator
lookups open one connection per broker named.  A broker nobody vouches for
can name 100,000 of them; opened all at once, that took 1.6 GB and 25 s
before anything was printed.  So every driver opens at most
``ConnectionConfig.max_fanout`` of them (those already connected first, then
by node id) and at most ``fanout_concurrency`` at a time; the others are not
dropped but reported, all with one ``FanOutLimitError``.  This module is the
pure part: which nodes, and the error for the rest.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kafkacompat.errors import FanOutLimitError

__all__ = ["fanout_error", "fanout_split"]


def fanout_split(
    node_ids: Sequence[int], connected: Collection[int], limit: int
) -> tuple[list[int], list[int]]:
    """The nodes to connect to (at most ``limit``, those ``connected`` first) and those left out."""
    ordered = sorted(node_ids, key=lambda node_id: (node_id not in connected, node_id))
    return ordered[:limit], ordered[limit:]


def fanout_error(skipped: int, named: int, limit: int) -> FanOutLimitError:
    """One error for every node left out by the fan-out limit."""
    return FanOutLimitError(
        f"{skipped} of the {named} brokers the metadata names were not contacted: one operation "
        f"opens at most {limit} connections because a broker named them (ConnectionConfig.max_fanout)",
        limit=limit,
    )
