"""Finding the cluster from its bootstrap list: rounds over the addresses, by the call's deadline.

A round tries the addresses in order, each with ``try_address`` (the
cluster's: connect, negotiate, read who the cluster is, and take it), and ends
at the first that answers.  A round that fails is one of two things (see
``transport.cluster`` for the third, an incompatible broker):

- an address answered but cannot be used (not a Kafka broker, a handshake or
  a check that failed, a silent peer when the policy does not retry those):
  its error is raised at once, the other addresses' outcomes added as notes;
- none could be reached: ``NoBrokerReachableError``, every address with its
  reason, once the rounds the retry policy allows are spent.

The rounds are the one retry mechanism's (``retries``), run by the running
call's deadline (``call_deadline``); cut by that deadline, the outcome is
still ``NoBrokerReachableError``, the address being tried then named with the
timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from typing import Any

from kafkacompat.cluster.backend import ClusterBackend
from kafkacompat.cluster.call_deadline import current_deadline
from kafkacompat.cluster.discovery import RETRIABLE, address_label, describe_failure
from kafkacompat.cluster.retries import retrying, worth_retrying
from kafkacompat.connection.config import RetryPolicy
from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError, NoBrokerReachableError

__all__ = ["TryAddress", "bootstrap_rounds"]

log = logging.getLogger("kafkacompat.cluster")

#: One address, tried: returns once the cluster took it; raises its typed error otherwise.
TryAddress = Callable[[str, int], Awaitable[None]]


async def bootstrap_rounds(
    addresses: Sequence[tuple[str, int]],
    policy: RetryPolicy,
    backend: ClusterBackend[Any],
    try_address: TryAddress,
) -> None:
    """Rounds over ``addresses`` until one answers; see the module documentation."""
    reasons: dict[str, KafkaCompatError] = {}
    rounds = 0
    deadline = current_deadline()
    scope = nullcontext() if deadline is None else backend.deadline(deadline, "bootstrapping")
    try:
        async with scope:
            async for attempt in retrying(
                policy, backend.sleep, retry_on=RETRIABLE, deadline=deadline, clock=backend.clock
            ):
                with attempt:
                    rounds += 1
                    await _round(addresses, try_address, reasons, rounds, policy)
                    return
    except KafkaTimeoutError as exc:
        if not reasons or exc in reasons.values():  # no address tried, or one's own failure (silence)
            raise
        raise NoBrokerReachableError(reasons, rounds=rounds) from exc


async def _round(
    addresses: Sequence[tuple[str, int]],
    try_address: TryAddress,
    reasons: dict[str, KafkaCompatError],
    rounds: int,
    policy: RetryPolicy,
) -> None:
    fatal: list[KafkaCompatError] = []
    for host, port in addresses:
        label = address_label(host, port)
        # What this address is, should the call's deadline cut it short (replaced by the
        # outcome otherwise): a listing of every address, whatever ends the rounds.
        reasons[label] = KafkaTimeoutError("the call's deadline passed while this address was tried")
        try:
            await try_address(host, port)
        except KafkaCompatError as exc:
            reasons[label] = exc
            if not worth_retrying(exc, RETRIABLE, policy):
                fatal.append(exc)
            log.info("bootstrap address %s failed: %s", label, exc)
            continue
        del reasons[label]
        return
    if fatal:  # an address answered but cannot be used: retrying will not change that
        error = fatal[0]
        for label, other in reasons.items():
            if other is not error:
                error.add_note(f"bootstrap address {label}: {describe_failure(other, label)}")
        raise error
    raise NoBrokerReachableError(reasons, rounds=rounds)
