"""Finding the coordinators of many keys: the FindCoordinator planner (KIP-699).

Theory.  Group offsets, transactions and share groups each have a
coordinator: the broker leading the internal-topic partition that the key
hashes to.  Any broker can say which one it is, through FindCoordinator.

- Versions 0-3 carry one key and answer with one node (and, from v1, an
  error message) at the top level of the response.  v0 has no key type and
  only knows consumer groups; v1 adds the key type (transactional ids need it);
  v3 is the first flexible version.
- KIP-699 (v4) replaces the single key with a list, ``coordinator_keys``,
  and answers with a ``coordinators`` list holding one entry, with its own
  error, per key.  A client that needs the coordinators of a thousand groups
  sends one request instead of a thousand.  v5 only adds an error code and
  v6 the share-group key type (KIP-932).

So whether to batch depends on the broker the request goes to, and only on it.
KAFKA-13029 was the bug of deciding it once for the whole client: the first
batching clients switched to one-key requests for good after one old broker
refused v4, and during a rolling upgrade or downgrade kept sending a shape the
broker at hand did not expect until they were restarted.  Here the decision is
taken for each plan and each destination, from that destination's own
ApiVersions answer, before anything is sent; nothing is remembered between
plans.  In a mixed cluster the keys go, batched, to a node that accepts v4
(the highest usable version first, then the node label, so the choice is
deterministic); when no node accepts v4 they are sent one request per key.

Each key is then settled on its own: found, retried (the coordinator is
loading, not available, or moved), or failed (anything else, with Kafka's
error name).  One key's error never touches another key.  A batched answer
that leaves out a key counts as a retriable "not answered"; an entry for a
key nobody asked about is ignored and noted.  A batched answer whose entries
say UNSUPPORTED_VERSION means the destination refuses the version it
advertised (a stale answer, a proxy in front of an older broker): its keys
are retried, and the rest of this lookup sends that destination single-key
requests, as Kafka's admin client does since KAFKA-13029.  Retries are bounded per key, and
the driver loops: plan -> send -> read -> replan(retries) until settled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from types import MappingProxyType

from kafkacompat.errors import ConfigError, InvalidAddressError, NegotiationError, UnsupportedVersionError
from kafkacompat.negotiation.addresses import check_address
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.version_policy import (
    VersionChoice,
    VersionPolicy,
    choice_for,
    client_ranges_of_codec,
)
from kafkacompat.protocol.error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
    UNSUPPORTED_VERSION,
    error_for,
)
from kafkacompat.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from kafkacompat.protocol.versions import OPEN_END, VersionRange

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_BATCH",
    "FIRST_BATCHED_VERSION",
    "RETRIABLE_COORDINATOR_ERRORS",
    "CoordinatorFound",
    "CoordinatorKeyType",
    "CoordinatorPlan",
    "CoordinatorResults",
    "KeyLookupFailure",
    "PlannedLookup",
    "plan_coordinator_lookups",
    "read_coordinator_responses",
    "replan",
]

FIND_COORDINATOR = FindCoordinatorRequest.API_KEY
FIRST_BATCHED_VERSION = 4
# Keys per batched request: large enough that a thousand groups take a few
# round trips, small enough that one lost request concerns a bounded set.
DEFAULT_MAX_BATCH = 500
DEFAULT_MAX_ATTEMPTS = 5
RETRIABLE_COORDINATOR_ERRORS = frozenset(
    {COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}
)


class CoordinatorKeyType(IntEnum):
    """FindCoordinator's ``key_type``."""

    GROUP = 0
    TRANSACTION = 1
    SHARE = 2

    @property
    def first_version(self) -> int:
        """The first FindCoordinator version that can carry this key type."""
        return (0, 1, 6)[self]  # v1 added key_type; v6 the share key type (KIP-932)


@dataclass(frozen=True, eq=False)
class PlannedLookup:
    """One FindCoordinator request to send: where, at which version, for which keys."""

    destination: str
    destination_node_id: int | None
    version: int
    key_type: CoordinatorKeyType
    keys: tuple[str, ...]
    request: FindCoordinatorRequest

    @property
    def batched(self) -> bool:
        return self.version >= FIRST_BATCHED_VERSION

    def encode(self) -> bytes:
        """The request body at the planned version."""
        return self.request.encode(self.version)


@dataclass(frozen=True)
class CoordinatorPlan:
    """The requests of one round, and why they go where they go."""

    key_type: CoordinatorKeyType
    requests: tuple[PlannedLookup, ...]
    destination: str | None
    version: int | None
    reason: str
    choices: tuple[VersionChoice, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for request in self.requests for key in request.keys)


def plan_coordinator_lookups(
    keys: Iterable[str],
    key_type: int,
    brokers: Sequence[BrokerCapabilities],
    *,
    max_batch: int = DEFAULT_MAX_BATCH,
    policy: VersionPolicy | None = None,
    prefer: str | None = None,
    client_ranges: Mapping[int, VersionRange] | None = None,
) -> CoordinatorPlan:
    """Plan the FindCoordinator requests that look up ``keys`` of ``key_type``.

    The destination is the broker that batches (FindCoordinator v4+), then
    ``prefer``, then the highest usable version, then the lowest node label.
    Raises ``UnsupportedVersionError`` when no broker can take the key type.
    """
    try:
        kind = CoordinatorKeyType(key_type)
    except ValueError:
        raise ConfigError(
            f"unknown coordinator key type {key_type!r}: 0 (group), 1 (transaction) or 2 (share)"
        ) from None
    if max_batch < 1:
        raise ConfigError(f"max_batch must be at least 1, got {max_batch}")
    wanted = _distinct(keys)
    if not wanted:
        return CoordinatorPlan(kind, (), None, None, "no keys to look up")
    if not brokers:
        raise NegotiationError("no broker connection to send FindCoordinator to")
    ranges = dict(client_ranges_of_codec() if client_ranges is None else client_ranges)
    floor = VersionRange(kind.first_version, OPEN_END)
    ranges[FIND_COORDINATOR] = ranges.get(FIND_COORDINATOR, VersionRange.NONE) & floor
    ordered = sorted(brokers, key=lambda b: b.node)
    choices = tuple(choice_for(FIND_COORDINATOR, b, policy, ranges) for b in ordered)
    usable = [(c.chosen, b, c) for b, c in zip(ordered, choices, strict=True) if c.chosen is not None]
    if not usable:
        what = kind.name.lower()
        needs = f"{what} keys need FindCoordinator v{kind.first_version}+; " if kind else ""
        raise UnsupportedVersionError(
            f"no broker can look up {what} coordinators: {needs}"
            + "; ".join(c.reason for c in choices),
            node=ordered[0].node if len(ordered) == 1 else None,
        )

    def rank(entry: tuple[int, BrokerCapabilities, VersionChoice]) -> tuple[bool, bool, int, str]:
        version, broker, _ = entry
        return (version < FIRST_BATCHED_VERSION, broker.node != prefer, -version, broker.node)

    version, broker, choice = min(usable, key=rank)
    if version >= FIRST_BATCHED_VERSION:
        chunks = [wanted[i : i + max_batch] for i in range(0, len(wanted), max_batch)]
        requests = tuple(
            PlannedLookup(broker.node, broker.node_id, version, kind, chunk,
                          FindCoordinatorRequest(key_type=int(kind), coordinator_keys=list(chunk)))
            for chunk in chunks
        )
        shape = f"{len(requests)} batched request(s) of up to {max_batch} key(s)"
    else:
        requests = tuple(
            PlannedLookup(broker.node, broker.node_id, version, kind, (key,),
                          _single_key_request(key, kind, version))
            for key in wanted
        )
        shape = (
            f"{len(requests)} single-key request(s): no broker and policy allow "
            f"FindCoordinator v{FIRST_BATCHED_VERSION}+ for batching"
        )
    reason = f"{len(wanted)} key(s) to {broker.node} at v{version} ({choice.reason}): {shape}"
    if prefer is not None and broker.node != prefer:
        preferred = next((c for c in choices if c.node == prefer), None)
        why = preferred.reason if preferred is not None else "not among the brokers given"
        reason += f"; preferred {prefer} not used ({why})"
    return CoordinatorPlan(kind, requests, broker.node, version, reason, choices)


def _distinct(keys: Iterable[str]) -> tuple[str, ...]:
    if isinstance(keys, str):
        raise TypeError("keys must be an iterable of strings, not one string")
    seen: dict[str, None] = {}
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"coordinator keys are strings, got {key!r}")
        seen.setdefault(key, None)
    return tuple(seen)


def _single_key_request(key: str, kind: CoordinatorKeyType, version: int) -> FindCoordinatorRequest:
    if version == 0:  # v0 has no key_type field: groups only (guaranteed by the version floor)
        return FindCoordinatorRequest(key=key)
    return FindCoordinatorRequest(key=key, key_type=int(kind))


# -- reading the answers -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoordinatorFound:
    """The coordinator of ``key``, as ``answered_by`` said."""

    key: str
    node_id: int
    host: str
    port: int
    answered_by: str


@dataclass(frozen=True, slots=True)
class KeyLookupFailure:
    """Why ``key`` has no coordinator yet.  ``error_code`` is None for a missing answer."""

    key: str
    error_code: int | None
    error_name: str
    message: str
    retriable: bool
    attempts: int
    answered_by: str


class CoordinatorResults:
    """Per-key outcomes of FindCoordinator answers, fed one request at a time.

    ``found`` and ``failed`` are final; ``retry`` holds the keys to plan again
    (their last error in ``last_error``).  A key that has been retried
    ``max_attempts`` times moves to ``failed``.
    """

    def __init__(self, key_type: int, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> None:
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
        self.key_type = CoordinatorKeyType(key_type)
        self.max_attempts = max_attempts
        self._found: dict[str, CoordinatorFound] = {}
        self._failed: dict[str, KeyLookupFailure] = {}
        self._retry: dict[str, KeyLookupFailure] = {}
        self._attempts: dict[str, int] = {}
        self._outstanding: dict[PlannedLookup, None] = {}
        self._notes: list[str] = []
        self._refused_batching: set[str] = set()

    def __repr__(self) -> str:
        return (
            f"CoordinatorResults({self.key_type.name}: {len(self._found)} found, "
            f"{len(self._failed)} failed, {len(self._retry)} to retry, "
            f"{len(self._outstanding)} request(s) outstanding)"
        )

    @property
    def found(self) -> Mapping[str, CoordinatorFound]:
        return MappingProxyType(self._found)

    @property
    def failed(self) -> Mapping[str, KeyLookupFailure]:
        return MappingProxyType(self._failed)

    @property
    def last_error(self) -> Mapping[str, KeyLookupFailure]:
        """Why each key of ``retry`` is to be retried."""
        return MappingProxyType(self._retry)

    @property
    def attempts(self) -> Mapping[str, int]:
        """How many answers (or failed sends) each key has had."""
        return MappingProxyType(self._attempts)

    @property
    def refused_batching(self) -> frozenset[str]:
        """Destinations that answered a batched request with UNSUPPORTED_VERSION."""
        return frozenset(self._refused_batching)

    @property
    def retry(self) -> frozenset[str]:
        """The keys to look up again."""
        return frozenset(self._retry)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._notes)

    @property
    def outstanding(self) -> tuple[PlannedLookup, ...]:
        """Expected requests that have been neither answered nor failed."""
        return tuple(self._outstanding)

    @property
    def settled(self) -> bool:
        return not self._retry and not self._outstanding

    def expect(self, plan: CoordinatorPlan) -> None:
        """Register the requests of ``plan`` as sent and awaiting an answer."""
        self._check_type(plan.key_type)
        self._outstanding.update(dict.fromkeys(plan.requests))

    def read(self, planned: PlannedLookup, response: FindCoordinatorResponse) -> None:
        """Settle every key of ``planned`` from its decoded ``response``."""
        self._check_type(planned.key_type)
        self._outstanding.pop(planned, None)
        where = planned.destination
        if not planned.batched:
            (key,) = planned.keys
            self._settle(key, response.error_code, response.error_message,
                         response.node_id, response.host, response.port, where)
            return
        asked, answered = set(planned.keys), set[str]()
        for entry in response.coordinators:
            if entry.key not in asked:
                self._notes.append(f"{where} answered {entry.key!r}, which was not asked: ignored")
            elif entry.key in answered:
                self._notes.append(f"{where} answered {entry.key!r} twice: first answer kept")
            elif entry.error_code == UNSUPPORTED_VERSION:
                answered.add(entry.key)
                if where not in self._refused_batching:
                    self._refused_batching.add(where)
                    self._notes.append(f"{where} refused FindCoordinator v{planned.version}, which it "
                                       "advertised: single-key requests to it from now on")
                self._retriable(entry.key, UNSUPPORTED_VERSION, "UNSUPPORTED_VERSION",
                                entry.error_message or "", where)
            else:
                answered.add(entry.key)
                self._settle(entry.key, entry.error_code, entry.error_message,
                             entry.node_id, entry.host, entry.port, where)
        for key in planned.keys:
            if key not in answered:
                self._retriable(key, None, "NOT_ANSWERED",
                                f"{where} left the key out of its answer", where)

    def read_failure(self, planned: PlannedLookup, reason: str) -> None:
        """The request got no answer (connection lost, timeout): its keys are retried."""
        self._check_type(planned.key_type)
        self._outstanding.pop(planned, None)
        for key in planned.keys:
            self._retriable(key, None, "NO_RESPONSE", reason, planned.destination)

    def give_up(self, reason: str) -> None:
        """No more rounds (the caller's deadline): every key waiting for one fails, ``reason``
        beside its last error."""
        for key, last in sorted(self._retry.items()):
            message = f"{reason}; last: {last.message or last.error_name}"
            self._failed[key] = KeyLookupFailure(
                key, last.error_code, last.error_name, message, True, last.attempts, last.answered_by
            )
        self._retry.clear()

    # -- one key ---------------------------------------------------------------------------

    def _settle(
        self, key: str, code: int, message: str | None, node_id: int, host: str, port: int,
        where: str,
    ) -> None:
        refusal = _address_refusal(host, port, where) if code == 0 and node_id >= 0 else None
        if refusal is not None:  # never handed on: a caller would connect to it
            self._forget(key)
            attempts = self._attempts[key] = self._attempts.get(key, 0) + 1
            self._failed[key] = KeyLookupFailure(key, 0, "INVALID_ADDRESS", refusal, False, attempts, where)
        elif code == 0 and node_id >= 0 and host and port > 0:
            self._forget(key)
            self._attempts[key] = self._attempts.get(key, 0) + 1
            self._found[key] = CoordinatorFound(key, node_id, host, port, where)
        elif code == 0:
            self._retriable(key, 0, "NO_COORDINATOR_GIVEN",
                            f"no error but no usable node ({node_id}, {host!r}:{port})", where)
        elif code in RETRIABLE_COORDINATOR_ERRORS:
            self._retriable(key, code, error_for(code).name, message or "", where)
        else:
            entry = error_for(code)
            self._forget(key)
            attempts = self._attempts[key] = self._attempts.get(key, 0) + 1
            self._failed[key] = KeyLookupFailure(
                key, code, entry.name, message or entry.message, False, attempts, where
            )

    def _retriable(self, key: str, code: int | None, name: str, message: str, where: str) -> None:
        self._forget(key)
        attempts = self._attempts[key] = self._attempts.get(key, 0) + 1
        if attempts >= self.max_attempts:
            gave_up = f"gave up after {attempts} attempt(s); last: {message or name}"
            self._failed[key] = KeyLookupFailure(key, code, name, gave_up, True, attempts, where)
        else:
            self._retry[key] = KeyLookupFailure(key, code, name, message, True, attempts, where)

    def _forget(self, key: str) -> None:
        self._found.pop(key, None)
        self._failed.pop(key, None)
        self._retry.pop(key, None)

    def _check_type(self, kind: CoordinatorKeyType) -> None:
        if kind != self.key_type:
            raise ConfigError(f"these results are for {self.key_type.name} keys, not {kind.name}")


def _address_refusal(host: str, port: int, where: str) -> str | None:
    """Why the coordinator address a broker gave cannot be used, or None."""
    if not host or port <= 0:
        return None  # "no usable node": Kafka's own way to say none yet, retried as before
    try:
        check_address(host, port, source=f"FindCoordinator from {where}")
    except InvalidAddressError as exc:
        return exc.message
    return None


def read_coordinator_responses(
    plan: CoordinatorPlan,
    answers: Iterable[tuple[PlannedLookup, FindCoordinatorResponse | Exception]],
    *,
    results: CoordinatorResults | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> CoordinatorResults:
    """Read one round: each answer (a response, or the exception the send raised).

    Requests of ``plan`` with no answer count as failed sends: their keys are
    retried.  Pass ``results`` to accumulate over rounds.
    """
    if results is None:
        results = CoordinatorResults(plan.key_type, max_attempts)
    results.expect(plan)
    for planned, answer in answers:
        if isinstance(answer, Exception):
            results.read_failure(planned, f"{type(answer).__name__}: {answer}")
        else:
            results.read(planned, answer)
    outstanding = set(results.outstanding)
    for planned in plan.requests:
        if planned in outstanding:
            results.read_failure(planned, "no answer was read for the request")
    return results


def replan(
    results: CoordinatorResults,
    brokers: Sequence[BrokerCapabilities],
    *,
    max_batch: int = DEFAULT_MAX_BATCH,
    policy: VersionPolicy | None = None,
    prefer: str | None = None,
    client_ranges: Mapping[int, VersionRange] | None = None,
) -> CoordinatorPlan:
    """Plan the next round for ``results.retry`` (sorted), against the brokers as they are now.

    A broker in ``results.refused_batching`` is planned as if it advertised
    FindCoordinator up to v3 only.
    """
    refused = results.refused_batching
    usable = [_single_key_only(b) if b.node in refused else b for b in brokers]
    return plan_coordinator_lookups(
        sorted(results.retry), results.key_type, usable, max_batch=max_batch,
        policy=policy, prefer=prefer, client_ranges=client_ranges,
    )


def _single_key_only(broker: BrokerCapabilities) -> BrokerCapabilities:
    ranges = dict(broker.api_ranges)
    advertised = broker.broker_range(FIND_COORDINATOR)
    ranges[FIND_COORDINATOR] = advertised & VersionRange(0, FIRST_BATCHED_VERSION - 1)
    return replace(broker, api_ranges=ranges)
