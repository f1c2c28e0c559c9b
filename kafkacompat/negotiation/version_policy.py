"""Which version of an API to send to one broker, and why.

The rule is Kafka's own: take the versions the client can write and the
versions the broker answered in ApiVersions, intersect them, and send the
highest one.  A user policy narrows this further, always in the same order:

1. ``caps``: never above ``caps[api]``;
2. ``pins``: exactly ``pins[api]`` or nothing;
3. the specs' deprecated versions, when ``honour_spec_deprecations`` is set;
4. versions the user marked ``deprecated``;
5. versions the user ``blocked`` (say, a version known broken on some fork).

6. the cluster's feature gates (``feature_gates``): versions the broker
   advertises but that need a finalized feature level the cluster does not
   have (transaction.version >= 2 for TxnOffsetCommit v5+, EndTxn v5+ and, with
   ``in_transaction``, Produce v12+; group.version >= 1 for the KIP-848 APIs;
   share.version >= 1 for the Share APIs) are removed, as Kafka's own clients
   do.  This is not a user policy: it applies to kafkacompat's own picks
   (no ``client_ranges``).  A caller modelling another client with
   ``client_ranges`` gets that client's plain intersection, since other
   clients need not obey the gates (``verdicts`` judges them), unless it
   passes ``feature_gates=True``.

What is left is a set of versions; the highest is picked.  When nothing is
left the request is never sent: ``UnsupportedVersionError`` says which API,
which node, both ranges and every policy step that removed versions.  An API
the broker does not list at all is unusable with the same error.

Everything here is a pure function of (api key, one node's capabilities,
policy, client ranges); ``choice_for`` returns the whole reasoning as data.
It is the engine, not a door: pick with ``capabilities.pick_version(api_key)``
and ask why with ``capabilities.explain(api_key)``, where the connection's
policy is already bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias

from kafkacompat.errors import ConfigError, ProtocolError, UnsupportedVersionError
from kafkacompat.protocol import messages
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.api_names import API_NAMES

if TYPE_CHECKING:
    from kafkacompat.negotiation.capabilities import BrokerCapabilities

__all__ = [
    "DEFAULT_POLICY",
    "PolicyStep",
    "VersionChoice",
    "VersionPolicy",
    "VersionSet",
    "api_name",
    "choice_for",
    "client_ranges_of_codec",
]

# What a caller may write for "some versions of one API": one version, a
# range ("0-2", "3+" or a VersionRange), or an iterable of those.
VersionSet: TypeAlias = int | str | VersionRange | Iterable[int | str | VersionRange]
ApiRef: TypeAlias = int | str  # an api key, or the API's name ("FindCoordinator")

StepKind = Literal["cap", "pin", "spec-deprecated", "deprecated", "blocked", "feature-gate"]

_NO_VERSIONS: tuple[VersionRange, ...] = ()


def client_ranges_of_codec() -> Mapping[int, VersionRange]:
    """The request versions this library's codec can write, per api key."""
    return _CODEC_RANGES


_CODEC_RANGES: Mapping[int, VersionRange] = MappingProxyType(
    {key: VersionRange(low, high) for key, (low, high) in messages.REQUEST_VERSIONS.items()}
)
_KEYS_BY_NAME = {name: key for key, name in API_NAMES.items()}


def api_name(api_key: int) -> str:
    return API_NAMES.get(api_key, f"UnknownApi{api_key}")


def _api_key(ref: ApiRef) -> int:
    if isinstance(ref, bool):
        raise TypeError(f"not an api key: {ref!r}")
    if isinstance(ref, int):
        return ref
    if isinstance(ref, str) and ref in _KEYS_BY_NAME:
        return _KEYS_BY_NAME[ref]
    raise ConfigError(f"unknown API {ref!r}")


def _version_ranges(value: VersionSet) -> tuple[VersionRange, ...]:
    """Normalise a ``VersionSet`` into sorted, merged, non-empty ranges."""
    items: Iterable[int | str | VersionRange]
    items = [value] if isinstance(value, int | str | VersionRange) else value
    ranges: list[VersionRange] = []
    for item in items:
        if isinstance(item, bool):
            raise TypeError(f"not a version: {item!r}")
        if isinstance(item, int):
            ranges.append(VersionRange(item, item))
        elif isinstance(item, str):
            ranges.append(_parse(item))
        elif isinstance(item, VersionRange):
            ranges.append(item)
        else:
            raise TypeError(f"not a version or version range: {item!r}")
    merged: list[VersionRange] = []
    for r in sorted((r for r in ranges if not r.empty), key=lambda r: r.lowest):
        if merged and r.lowest <= merged[-1].highest + 1:
            last = merged.pop()
            r = VersionRange(last.lowest, max(last.highest, r.highest))
        merged.append(r)
    return tuple(merged)


def _parse(text: str) -> VersionRange:
    try:
        return VersionRange.parse(text)
    except ProtocolError:
        raise ConfigError(f"not a version range: {text!r}") from None


def _describe(ranges: Iterable[VersionRange]) -> str:
    text = ", ".join(str(r) for r in ranges)
    return text or "none"


def _subtract(allowed: Iterable[VersionRange], removed: VersionRange) -> list[VersionRange]:
    left: list[VersionRange] = []
    for r in allowed:
        if removed.empty or removed.highest < r.lowest or r.highest < removed.lowest:
            left.append(r)
            continue
        if r.lowest < removed.lowest:
            left.append(VersionRange(r.lowest, removed.lowest - 1))
        if removed.highest < r.highest:
            left.append(VersionRange(removed.highest + 1, r.highest))
    return left


def _clip(allowed: Iterable[VersionRange], bound: VersionRange) -> list[VersionRange]:
    return [c for r in allowed if not (c := r & bound).empty]


@dataclass(frozen=True, init=False)
class VersionPolicy:
    """The user's limits on versions, per API (keys may be api keys or API names).

    ``caps`` bound versions from above, ``pins`` demand one exact version,
    ``deprecated`` and ``blocked`` remove versions (each a version, a range, or
    several).  ``honour_spec_deprecations`` also removes the versions the
    protocol specs mark deprecated.  The stored mappings are read-only, keyed
    by api key, with removed versions as sorted, merged ranges.
    """

    caps: Mapping[int, int] = field(hash=False)
    pins: Mapping[int, int] = field(hash=False)
    deprecated: Mapping[int, tuple[VersionRange, ...]] = field(hash=False)
    blocked: Mapping[int, tuple[VersionRange, ...]] = field(hash=False)
    honour_spec_deprecations: bool = False

    def __init__(
        self,
        *,
        caps: Mapping[ApiRef, int] | None = None,
        pins: Mapping[ApiRef, int] | None = None,
        deprecated: Mapping[ApiRef, VersionSet] | None = None,
        blocked: Mapping[ApiRef, VersionSet] | None = None,
        honour_spec_deprecations: bool = False,
    ) -> None:
        tables: dict[str, dict[int, object]] = {
            "caps": {_api_key(k): _version(v, "cap") for k, v in (caps or {}).items()},
            "pins": {_api_key(k): _version(v, "pin") for k, v in (pins or {}).items()},
            "deprecated": {
                _api_key(k): _version_ranges(v) for k, v in (deprecated or {}).items()
            },
            "blocked": {_api_key(k): _version_ranges(v) for k, v in (blocked or {}).items()},
        }
        for name, table in tables.items():
            object.__setattr__(self, name, MappingProxyType(dict(sorted(table.items()))))
        object.__setattr__(self, "honour_spec_deprecations", bool(honour_spec_deprecations))

    def describe(self, api_key: int) -> str:
        """The limits this policy sets on ``api_key``, in words ("" when none)."""
        return "; ".join(rule for _, rule, _ in _policy_rules(api_key, self))


def _version(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"a {what} must be a non-negative int, got {value!r}")
    return value


DEFAULT_POLICY = VersionPolicy()


def _spec_deprecated(api_key: int) -> VersionRange:
    class_name = messages.CLASS_BY_KEY.get((api_key, "request"))
    if class_name is None:
        return VersionRange.NONE
    deprecated: VersionRange = getattr(messages, class_name).DEPRECATED_VERSIONS
    return deprecated


@dataclass(frozen=True, slots=True)
class PolicyStep:
    """One policy rule that applied: what it says and which versions were left after it."""

    kind: StepKind
    rule: str
    remaining: tuple[VersionRange, ...]

    def __str__(self) -> str:
        return f"{self.rule} -> {_describe(self.remaining)}"


@dataclass(frozen=True, slots=True)
class VersionChoice:
    """The reasoning behind one pick: ranges, policy steps in order, outcome and why."""

    api_key: int
    api_name: str
    node: str
    client_range: VersionRange
    broker_range: VersionRange
    broker_lists_api: bool
    intersection: VersionRange
    steps: tuple[PolicyStep, ...]
    allowed: tuple[VersionRange, ...]
    chosen: int | None
    reason: str
    policy_limits: str = ""  # every limit the policy sets on this API, applied or not

    @property
    def usable(self) -> bool:
        return self.chosen is not None

    @property
    def api(self) -> str:
        return f"{self.api_name} (api key {self.api_key})"

    def error(self, transcript: object = None) -> UnsupportedVersionError:
        """The error to raise when nothing is usable (names API, node, ranges and policy)."""
        applied = "; ".join(str(step) for step in self.steps)
        if not applied:
            applied = f"{self.policy_limits} (not reached)" if self.policy_limits else "none"
        broker = str(self.broker_range) if self.broker_lists_api else "not listed"
        message = (
            f"cannot send {self.api} to {self.node}: {self.reason} "
            f"[client range {self.client_range}, broker range {broker}, "
            f"intersection {self.intersection}; policy: {applied}]"
        )
        return UnsupportedVersionError(message, node=self.node, transcript=transcript)

    def __str__(self) -> str:
        return self.reason


def choice_for(
    api_key: int,
    capabilities: BrokerCapabilities,
    policy: VersionPolicy | None = None,
    client_ranges: Mapping[int, VersionRange] | None = None,
    *,
    in_transaction: bool = False,
    feature_gates: bool | None = None,
) -> VersionChoice:
    """Why ``api_key`` would be sent to this node at some version, or could not be.

    ``in_transaction`` says the request is part of a transaction (it matters
    for Produce v12+, gated by transaction.version).  ``feature_gates``
    defaults to on for kafkacompat's own ranges, off for ``client_ranges``.
    """
    policy = DEFAULT_POLICY if policy is None else policy
    ranges = _CODEC_RANGES if client_ranges is None else client_ranges
    name = api_name(api_key)
    node, who = capabilities.node, capabilities.label
    client = ranges.get(api_key, VersionRange.NONE)
    broker = capabilities.broker_range(api_key)
    listed = not broker.empty
    both = client & broker
    steps: list[PolicyStep] = []

    def choice(allowed: Iterable[VersionRange], chosen: int | None, reason: str) -> VersionChoice:
        return VersionChoice(
            api_key, name, node, client, broker, listed, both, tuple(steps),
            tuple(allowed), chosen, reason, policy.describe(api_key),
        )

    if client.empty:
        return choice(_NO_VERSIONS, None, f"the client cannot write {name} (api key {api_key})")
    if not listed:
        return choice(_NO_VERSIONS, None, f"{who} does not list {name} (api key {api_key})")
    if both.empty:
        return choice(
            _NO_VERSIONS, None,
            f"no version in common: the client writes {client}, {who} answers {broker}",
        )

    allowed: list[VersionRange] = [both]
    gated = client_ranges is None if feature_gates is None else feature_gates
    gates = _gate_rules(api_key, capabilities, in_transaction) if gated else iter(())
    rules = [*_policy_rules(api_key, policy), *gates]
    for kind, rule, apply in rules:
        allowed = apply(allowed)
        steps.append(PolicyStep(kind, rule, tuple(allowed)))
    if not allowed:
        removed_by = ", ".join(step.rule for step in steps)
        by = _narrowers(steps)
        what = f"{by} leaves" if by == "the policy" else f"{by} leave"
        return choice(
            allowed, None,
            f"versions {both} are common to the client and {who}, "
            f"but {what} none ({removed_by})",
        )
    chosen = allowed[-1].highest
    how = f"the highest of {both}" if not steps else f"the highest of {_describe(allowed)}"
    narrowed = "" if not steps else f" left of {both} by {_narrowers(steps)}"
    return choice(allowed, chosen, f"v{chosen}: {how}{narrowed} (client {client}, broker {broker})")


_Apply: TypeAlias = Callable[[list[VersionRange]], list[VersionRange]]


def _narrowers(steps: Iterable[PolicyStep]) -> str:
    """Who narrowed the versions: "the policy", "the feature gates", or both."""
    kinds = {step.kind == "feature-gate" for step in steps}
    names = [name for gate, name in ((False, "the policy"), (True, "the feature gates")) if gate in kinds]
    return " and ".join(names)


def _policy_rules(api_key: int, policy: VersionPolicy) -> Iterator[tuple[StepKind, str, _Apply]]:
    """The rules that apply to ``api_key``, in the documented order."""
    if api_key in policy.caps:
        cap = VersionRange(0, policy.caps[api_key])
        yield "cap", f"cap <= {cap.highest}", lambda allowed: _clip(allowed, cap)
    if api_key in policy.pins:
        pin = VersionRange(policy.pins[api_key], policy.pins[api_key])
        yield "pin", f"pin = {pin.lowest}", lambda allowed: _clip(allowed, pin)
    if policy.honour_spec_deprecations:
        spec = _spec_deprecated(api_key)
        if not spec.empty:
            yield "spec-deprecated", f"spec-deprecated {spec} excluded", _subtracting((spec,))
    if api_key in policy.deprecated:
        removed = policy.deprecated[api_key]
        yield "deprecated", f"deprecated {_describe(removed)} excluded", _subtracting(removed)
    if api_key in policy.blocked:
        removed = policy.blocked[api_key]
        yield "blocked", f"blocked {_describe(removed)} excluded", _subtracting(removed)


def _gate_rules(
    api_key: int, capabilities: BrokerCapabilities, in_transaction: bool
) -> Iterator[tuple[StepKind, str, _Apply]]:
    """The feature gates on ``api_key`` that the cluster's finalized levels do not open."""
    from kafkacompat.negotiation.feature_gates import gates_for, level_of  # on the first gated pick

    for gate in gates_for(api_key, in_transaction=in_transaction):
        level = level_of(capabilities.finalized_features, gate.feature)
        if level < gate.min_level:
            rule = f"feature gate: {gate.describe(level)} ({gate.source})"
            yield "feature-gate", rule, _subtracting((gate.versions,))


def _subtracting(removed: tuple[VersionRange, ...]) -> _Apply:
    def apply(allowed: list[VersionRange]) -> list[VersionRange]:
        for r in removed:
            allowed = _subtract(allowed, r)
        return allowed

    return apply
