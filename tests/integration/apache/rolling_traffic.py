"""Client traffic that keeps running through a rolling upgrade: one trio cluster and one asyncio cluster.

Each driver connects once (``kafkacompat.connect`` on trio, ``kafkacompat.aio.connect``
on asyncio, in a thread of its own) and, round after round until told to stop,
sends Metadata to every broker it knows (noting the Metadata version it picked
for that node) and looks up the coordinators of ``GROUPS`` in one batched call.
Every outcome goes into a ``TrafficLog``: the picks per node in order, each
lookup's versions, shape and which keys came back, every error with its type.
The test reads the log afterwards; nothing here asserts.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

import kafkacompat
import kafkacompat.aio
from kafkacompat.connection.config import ConnectionConfig, RetryPolicy
from kafkacompat.errors import KafkaCompatError
from kafkacompat.negotiation.capability_changes import CapabilityChange
from kafkacompat.protocol.messages import MetadataRequest, MetadataResponse

__all__ = [
    "CONFIG",
    "FIND_COORDINATOR",
    "GROUPS",
    "METADATA",
    "LookupSeen",
    "TrafficLog",
    "asyncio_traffic",
    "in_thread",
    "trio_traffic",
]

GROUPS = tuple(f"rolling-group-{n}" for n in range(200))
METADATA, FIND_COORDINATOR = 3, 10
CONFIG = ConnectionConfig(connect_timeout=3.0, request_timeout=10.0, retry=RetryPolicy(attempts=3))
_PAUSE = 0.2


@dataclass(frozen=True)
class LookupSeen:
    at: float
    versions: tuple[int, ...]
    batched_requests: int
    requests: int
    found: frozenset[str]
    failed: frozenset[str]
    coordinators: frozenset[int]


@dataclass
class TrafficLog:
    """What one driver's traffic saw, in order (appended from one thread only)."""

    driver: str
    # (time, node id, api key, version): the Metadata and FindCoordinator picks before each Metadata
    picks: list[tuple[float, int, int, int]] = field(default_factory=list)
    metadata_brokers: list[frozenset[int]] = field(default_factory=list)  # the broker ids each answer named
    lookups: list[LookupSeen] = field(default_factory=list)
    errors: list[tuple[float, str, BaseException]] = field(default_factory=list)
    changes: tuple[CapabilityChange, ...] = ()
    rounds: int = 0
    final_features: Any = None

    def picks_of(self, node_id: int, api_key: int) -> list[int]:
        return [version for _, node, key, version in self.picks if (node, key) == (node_id, api_key)]


async def _one_round(cluster: Any, log: TrafficLog, clock: Callable[[], float]) -> None:
    for node_id in sorted(cluster.brokers):
        try:
            picked = [(key, await cluster.pick_version(node_id, key)) for key in (METADATA, FIND_COORDINATOR)]
            response = await cluster.request(node_id, MetadataRequest(topics=[]), request_timeout=10.0)
        except KafkaCompatError as exc:  # the node is being restarted: a typed error, never a hang
            log.errors.append((clock(), f"Metadata to node {node_id}", exc))
            continue
        assert isinstance(response, MetadataResponse), type(response)
        log.picks += [(clock(), node_id, key, version) for key, version in picked]
        log.metadata_brokers.append(frozenset(b.node_id for b in response.brokers))
    try:
        lookup = await cluster.find_coordinators(GROUPS, request_timeout=30.0)
    except KafkaCompatError as exc:
        log.errors.append((clock(), "FindCoordinator", exc))
        return
    log.lookups.append(
        LookupSeen(
            at=clock(),
            versions=tuple(lookup.versions),
            batched_requests=lookup.batched_requests,
            requests=lookup.requests,
            found=frozenset(lookup.found),
            failed=frozenset(lookup.failed),
            coordinators=frozenset(found.node_id for found in lookup.found.values()),
        )
    )
    log.rounds += 1


async def trio_traffic(bootstrap: str, log: TrafficLog, stop: trio.Event, features: trio.Event) -> None:
    """Rounds on trio until ``stop``; when ``features`` is set first, describe the features once more."""
    async with kafkacompat.connect(bootstrap, CONFIG) as cluster:
        while not stop.is_set():
            await _one_round(cluster, log, time.monotonic)
            await trio.sleep(_PAUSE)
        log.changes = cluster.changes
        if features.is_set():
            log.final_features = await cluster.describe_features()


def asyncio_traffic(bootstrap: str, log: TrafficLog, stop: threading.Event) -> threading.Thread:
    """The same rounds on asyncio, in a thread with its own loop, until ``stop`` is set."""

    async def run() -> None:
        async with kafkacompat.aio.connect(bootstrap, CONFIG) as cluster:
            while not stop.is_set():
                await _one_round(cluster, log, time.monotonic)
                await asyncio.sleep(_PAUSE)
            log.changes = cluster.changes
            log.final_features = await cluster.describe_features()

    def main() -> None:
        try:
            asyncio.run(run())
        except BaseException as exc:  # kept for the test to report
            log.errors.append((time.monotonic(), "asyncio traffic ended", exc))

    thread = threading.Thread(target=main, name="asyncio-traffic", daemon=True)
    thread.start()
    return thread


async def in_thread(function: Callable[..., object], *args: object) -> None:
    """A blocking launcher call (stop_node, start_node) off the trio loop, so the traffic keeps going."""
    await trio.to_thread.run_sync(function, *args)
