"""Driving the FindCoordinator planner over a cluster's connections (KIP-699).

Theory.  Before KIP-699 a FindCoordinator request names one key and its
answer one coordinator.  From v4 (Kafka 3.0) the request carries a list of
keys and the answer a coordinator per key, each with its own error, so one
key can be loading while the others are found.  Which shape a broker takes is
known only from its ApiVersions answer, and can change across a restart.

Each round: plan against the capabilities of the brokers reachable now
(``plan_coordinator_lookups``: batched to a broker that takes FindCoordinator
v4+, else one request per key), send the planned requests, pipelined on the
destination's connection by ``max_in_flight`` workers, and read every answer
into ``CoordinatorResults``.  Keys with a retriable error (coordinator loading
or not available, not the coordinator, left out of a batched answer, no answer
at all) are planned again after an exponential backoff with jitter, against
the brokers as they are then: a broken connection is negotiated again first,
and a broker that lost v4 in between gets single-key requests (KAFKA-13029).
Every key is retried at most ``max_attempts`` times, so the loop is bounded;
the rounds are tenacity's (``retries``), sleeping on the cluster's event loop.
The lookup runs by its call's deadline (``call_deadline``): each request is
sent with the time left as its timeout, and no round starts after a backoff
that would reach the deadline; the keys still waiting for one then fail,
saying so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

from kafkacompat.cluster.backend import ClusterBackend, Job
from kafkacompat.cluster.call_deadline import current_deadline, time_left
from kafkacompat.cluster.retries import retry_on_result
from kafkacompat.errors import ConfigError, KafkaCompatError, TransportError
from kafkacompat.negotiation.coordinators import (
    DEFAULT_MAX_BATCH,
    CoordinatorFound,
    CoordinatorKeyType,
    CoordinatorPlan,
    CoordinatorResults,
    KeyLookupFailure,
    PlannedLookup,
    plan_coordinator_lookups,
    replan,
)

if TYPE_CHECKING:
    from kafkacompat.cluster.core import ClusterCore

    Cluster = ClusterCore[Any]

__all__ = ["CoordinatorLookup", "KeyTypeLike", "coordinator_key_type", "find_coordinators"]

KeyTypeLike: TypeAlias = CoordinatorKeyType | int | str
_KEY_TYPE_NAMES = {"group": 0, "consumer": 0, "transaction": 1, "transactional": 1, "txn": 1, "share": 2}


def coordinator_key_type(value: KeyTypeLike) -> CoordinatorKeyType:
    """``"group"``, ``"transaction"``, ``"share"`` (or the enum, or its int) -> ``CoordinatorKeyType``."""
    try:
        return CoordinatorKeyType(_KEY_TYPE_NAMES[value.lower()] if isinstance(value, str) else value)
    except (KeyError, ValueError):
        raise ConfigError(f"unknown coordinator key type {value!r}: group, transaction or share") from None


@dataclass(frozen=True)
class CoordinatorLookup:
    """The coordinator of every key (or why not), and how the lookup was done.

    ``requests`` counts the FindCoordinator requests sent over all rounds,
    ``batched_requests`` those that carried a key list (v4+); ``rounds`` counts
    plan-send-read rounds (1 + retry rounds); ``round_trips`` counts the waves
    of pipelined requests a round needs (requests / workers, rounded up),
    summed over rounds.
    """

    key_type: CoordinatorKeyType
    found: Mapping[str, CoordinatorFound] = field(hash=False)
    failed: Mapping[str, KeyLookupFailure] = field(hash=False)
    requests: int
    batched_requests: int
    rounds: int
    round_trips: int
    versions: tuple[int, ...]
    plans: tuple[str, ...]
    notes: tuple[str, ...]
    elapsed: float

    @property
    def batched(self) -> bool:
        return self.batched_requests > 0

    @property
    def single_key_requests(self) -> int:
        return self.requests - self.batched_requests

    @property
    def ok(self) -> bool:
        return not self.failed

    def result(self, key: str) -> CoordinatorFound | KeyLookupFailure:
        if key in self.found:
            return self.found[key]
        if key in self.failed:
            return self.failed[key]
        raise KeyError(key)

    def by_coordinator(self) -> dict[int, list[str]]:
        """The found keys grouped by coordinator node id (both sorted)."""
        groups: dict[int, list[str]] = {}
        for key, found in sorted(self.found.items()):
            groups.setdefault(found.node_id, []).append(key)
        return dict(sorted(groups.items()))

    def describe(self) -> str:
        shape = (
            f"{self.batched_requests} batched request(s)" if self.batched
            else f"{self.requests} single-key request(s)"
        )
        versions = ", ".join(f"v{v}" for v in self.versions) or "none"
        return (
            f"{len(self.found)} found, {len(self.failed)} failed; {shape} at {versions} "
            f"in {self.rounds} round(s), {self.round_trips} round trip(s), {self.elapsed * 1000:.1f} ms"
        )


async def find_coordinators(
    cluster: Cluster,
    backend: ClusterBackend[Any],
    keys: Iterable[str],
    key_type: KeyTypeLike = "group",
    *,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_attempts: int | None = None,
) -> CoordinatorLookup:
    """Look up the coordinator of every key; see the module documentation.

    ``backend`` is the cluster's event loop: rounds back off and are timed on it.
    Called by ``ClusterCore.find_coordinators``, inside the call's deadline.
    """
    started = backend.clock()
    kind = coordinator_key_type(key_type)
    attempts = max_attempts if max_attempts is not None else cluster.config.retry.attempts
    results = CoordinatorResults(kind, attempts)
    policy = cluster.config.policy
    capabilities = await cluster.capabilities(require_all=False)
    plan = plan_coordinator_lookups(
        keys, kind, list(capabilities.values()), max_batch=max_batch, policy=policy
    )
    requests = batched = rounds = round_trips = 0
    versions: set[int] = set()
    reasons: list[str] = []
    if plan.requests:
        rounds_left = retry_on_result(
            cluster.config.retry, backend.sleep, bool, attempts=attempts,
            deadline=current_deadline(), clock=backend.clock,
        )
        async for attempt in rounds_left:
            with attempt:
                if rounds:  # after the backoff: planned against the brokers as they are now
                    capabilities = await cluster.capabilities(require_all=False)
                    plan = replan(results, list(capabilities.values()), max_batch=max_batch, policy=policy)
                    if not plan.requests:
                        results.give_up("no broker could be asked again")
                        break
                rounds += 1
                reasons.append(plan.reason)
                workers = min(cluster.config.max_in_flight, len(plan.requests))
                results.expect(plan)
                await _send_round(cluster, backend, plan, results, workers)
                requests += len(plan.requests)
                batched += sum(1 for planned in plan.requests if planned.batched)
                round_trips += math.ceil(len(plan.requests) / workers)
                versions.update(planned.version for planned in plan.requests)
            outcome = attempt.retry_state.outcome
            if outcome is not None and not outcome.failed:  # another round while keys wait for one
                attempt.retry_state.set_result(bool(results.retry))
        results.give_up("the call's deadline left no time for another round")  # none left otherwise
    return CoordinatorLookup(
        kind, MappingProxyType(dict(sorted(results.found.items()))),
        MappingProxyType(dict(sorted(results.failed.items()))),
        requests, batched, rounds, round_trips, tuple(sorted(versions)), tuple(reasons), results.notes,
        backend.clock() - started,
    )


async def _send_round(
    cluster: Cluster,
    backend: ClusterBackend[Any],
    plan: CoordinatorPlan,
    results: CoordinatorResults,
    workers: int,
) -> None:
    queue = iter(plan.requests)  # shared by the workers: each request goes to exactly one

    async def worker() -> None:
        for planned in queue:
            await _send_one(cluster, planned, results)

    jobs: list[Job] = [worker] * workers
    await backend.run_all(jobs)


async def _send_one(cluster: Cluster, planned: PlannedLookup, results: CoordinatorResults) -> None:
    try:
        if planned.destination_node_id is None:
            raise TransportError(f"{planned.destination} has no node id", node=planned.destination)
        conn = await cluster.connection(planned.destination_node_id)
        what = f"sending FindCoordinator to {planned.destination}"
        timeout = time_left(cluster.config.request_timeout, what)
        response = await conn.request(planned.request, version=planned.version, request_timeout=timeout)
    except KafkaCompatError as exc:
        results.read_failure(planned, f"{type(exc).__name__}: {exc}")
        return
    results.read(planned, response)
