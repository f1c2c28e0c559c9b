"""Parsing feature updates and wording their results as Kafka's kafka-features does.

Argument errors keep Kafka's sentences (``Can't parse feature=level string
...``, ``Feature X was specified more than once.``, ``You must specify at
least one feature to upgrade``).  Results, one per feature in name order::

    metadata.version was upgraded to 21.          kraft.version can be disabled.   (--dry-run)
    Could not upgrade metadata.version to 22. <why>
    Can not downgrade metadata.version to 7. <why>                                 (--dry-run)

A refusal by this client's own check (before anything is sent) names the
brokers that do not support the level and the dependencies it breaks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkacompat.cli.usage import closest
from kafkacompat.errors import FeatureError
from kafkacompat.negotiation.feature_updates import result_sentence as core_sentence
from kafkacompat.negotiation.features import (
    CATALOG,
    METADATA_VERSION,
    BlockingBroker,
    BlockingDependency,
    FinalizeVerdict,
)
from kafkacompat.transport.cluster import BrokerAddress

__all__ = [
    "Outcome",
    "as_sentence",
    "blocked_outcomes",
    "parse_updates",
    "refused_outcomes",
    "result_sentence",
    "unknown_features",
    "wrong_direction",
]

_INT16_MAX = 0x7FFF


class _HasBrokers(Protocol):
    @property
    def brokers(self) -> Mapping[int, BrokerAddress]: ...


@dataclass(frozen=True)
class Outcome:
    """One feature's result: ``error`` None for success."""

    feature: str
    level: int
    error: str | None = None


def _level(feature: str, text: str, given: str) -> int:
    value = text.strip()
    try:
        level = int(value)
    except ValueError:
        if feature == METADATA_VERSION:  # a name like 3.9-IV0 is clearer than 21
            return CATALOG.metadata_version_level(value)
        raise FeatureError(
            f"Can't parse feature=level string {given}: unable to parse {value} as a short."
        ) from None
    if not 0 <= level <= _INT16_MAX:
        raise FeatureError(f"Can't parse feature=level string {given}: unable to parse {value} as a short.")
    return level


def parse_updates(op: str, features: Sequence[str], release_version: str | None) -> dict[str, int]:
    """``--feature`` and ``--release-version`` -> {feature: target level}."""
    updates: dict[str, int] = {}
    if release_version is not None:
        updates[METADATA_VERSION] = CATALOG.metadata_version_level(release_version)
    for given in features:
        name, found, rest = given.partition("=")
        name = name.strip()
        if op == "disable":
            if found and rest.strip() != "0":
                raise FeatureError(f"disable takes feature names only (it sets level 0): {given}")
            level = 0
        else:
            if not found:
                raise FeatureError(f"Can't parse feature=level string {given}: equals sign not found.")
            level = _level(name, rest, given)
        if not name:
            raise FeatureError(f"Can't parse feature=level string {given}: no feature name.")
        if name in updates:
            raise FeatureError(f"Feature {name} was specified more than once.")
        updates[name] = level
    if not updates:
        raise FeatureError(f"You must specify at least one feature to {op}")
    return updates


def wrong_direction(op: str, targets: Mapping[str, int], current: Mapping[str, int]) -> dict[str, str]:
    """Targets that ``op`` cannot reach from the finalized levels, with why."""
    problems = {}
    for name, level in targets.items():
        now = current.get(name, 0)
        finalized = f"It is finalized at {CATALOG.describe(name, now)}"
        if op == "upgrade" and level < now:
            problems[name] = f"{finalized}: an upgrade cannot lower it; use downgrade."
        elif op == "downgrade" and level > now:
            problems[name] = f"{finalized}: a downgrade cannot raise it; use upgrade."
    return problems


def unknown_features(targets: Mapping[str, int], known: Collection[str]) -> dict[str, str]:
    """Targets no broker lists or finalizes (a mistyped name, most likely), with the closest known one."""
    problems = {}
    for name in targets:
        if name not in known:
            guess = closest(name, known)
            hint = f"; did you mean {guess}?" if guess else ""
            problems[name] = f"Refused before sending: no broker lists {name} or finalizes it{hint}"
    return problems


def as_sentence(text: str) -> str:
    """``text`` with a capital first letter and a full stop."""
    text = text.strip()
    if not text:
        return text
    return text[0].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


def refused_outcomes(targets: Mapping[str, int], reason: str) -> list[Outcome]:
    """A refusal before sending: the features ``reason`` names get it, the others were not sent."""
    named = [name for name in targets if f"{name} " in f"{reason} "]
    if not named:
        named = list(targets)
    others = ", ".join(sorted(named))
    return [
        Outcome(
            name,
            level,
            as_sentence(reason) if name in named else f"Not sent: {others} in the same request was refused.",
        )
        for name, level in sorted(targets.items())
    ]


def result_sentence(op: str, outcome: Outcome, *, dry_run: bool) -> str:
    """Kafka's sentence for one feature's result."""
    return core_sentence(op, outcome.feature, outcome.level, outcome.error, dry_run=dry_run)


def _node(cluster: _HasBrokers, label: str) -> str:
    for node_id, broker in cluster.brokers.items():
        if broker.address == label:
            return f"node {node_id} at {label}"
    return f"the broker at {label}"


def _range_text(feature: str, blocker: BlockingBroker) -> str:
    low, high = blocker.supported.lowest, blocker.supported.highest
    if feature == METADATA_VERSION:
        names = [CATALOG.get(feature, v) for v in (low, high)]
        labels = [n.version_name for n in names if n is not None and n.version_name]
        if len(labels) == 2:
            return f"{low}-{high} ({labels[0]} to {labels[1]})"
    return f"{low}-{high}"


def _broker_reason(cluster: _HasBrokers, blocker: BlockingBroker) -> str:
    who = _node(cluster, blocker.node)
    if not blocker.listed:
        return f"{who} does not list {blocker.feature}, so it supports level 0 only"
    if blocker.supported.empty:
        return f"{who} supports no level of {blocker.feature}"
    return f"{who} supports {blocker.feature} {_range_text(blocker.feature, blocker)} only"


def _dependency_reason(blocker: BlockingDependency) -> str:
    needs = CATALOG.describe(blocker.feature, blocker.needed_level)
    after = (
        f"{blocker.feature} would not be finalized"
        if blocker.current_level == 0
        else f"{blocker.feature} would be at "
        f"{CATALOG.describe(blocker.feature, blocker.current_level).removeprefix(blocker.feature + ' ')}"
    )
    required_by = CATALOG.describe(blocker.required_by, blocker.required_by_level)
    return f"{required_by} requires {needs} or higher, but {after}"


def blocked_outcomes(
    targets: Mapping[str, int], verdict: FinalizeVerdict, cluster: _HasBrokers
) -> list[Outcome]:
    """Per feature, why the check on every broker refused the request (nothing was sent)."""
    outcomes = []
    blocked_names = sorted(
        {b.feature for b in verdict.blocking_brokers}
        | {d.required_by for d in verdict.blocking_dependencies}
        | {d.feature for d in verdict.blocking_dependencies}
    )
    for name, level in sorted(targets.items()):
        reasons = [_broker_reason(cluster, b) for b in verdict.blocking_brokers if b.feature == name]
        reasons += [
            _dependency_reason(d) for d in verdict.blocking_dependencies if name in (d.required_by, d.feature)
        ]
        if reasons:
            error = "Refused before sending, by the check on every broker: " + "; ".join(reasons) + "."
        else:
            others = ", ".join(n for n in blocked_names if n != name) or "another feature"
            error = f"Not sent: {others} in the same request cannot be finalized."
        outcomes.append(Outcome(name, level, error))
    return outcomes
