"""What one broker connection can do, as negotiated: the input of every version decision.

A ``BrokerCapabilities`` is the frozen outcome of one handshake with one node:
the API ranges that node answered, its supported and finalized features (with
the finalized features' epoch), the throttle time of the answer, the handshake
transcript and, when the node predates ApiVersions, the release (configured,
or named by the node's behaviour) whose table stands in for an answer.

The values are per connection.  Nothing here copies one broker's ranges to
another, fills gaps from a neighbour, or remembers anything between
connections: a cluster in the middle of a rolling upgrade has nodes that
answer differently, and each request is decided against the node it goes to.
Views across several nodes live in ``cluster_view``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from kafkacompat.errors import ConfigError, ProtocolError
from kafkacompat.protocol.messages.api_key_numbers import API_VERSIONS
from kafkacompat.protocol.versions import VersionRange

if TYPE_CHECKING:  # annotations only: the handshake imports this module (sealed), not the reverse
    from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
    from kafkacompat.negotiation.release_guess import ReleaseGuess
    from kafkacompat.negotiation.version_policy import VersionChoice, VersionPolicy

__all__ = ["BrokerCapabilities", "RangeLike", "frozen_api_ranges", "frozen_features", "sealed"]

# What callers may write for a range: a VersionRange, an inclusive (low, high)
# pair, or Kafka's notation ("0-4", "3+", "5", "none").
RangeLike: TypeAlias = VersionRange | tuple[int, int] | str

_EMPTY: Mapping[Any, VersionRange] = MappingProxyType({})
_INT_TYPE = frozenset({int})
_RANGE_TYPE = frozenset({VersionRange})


def _release_at_least(release: str, floor: tuple[int, int]) -> bool:
    try:
        return tuple(int(part) for part in release.split(".")) >= floor
    except ValueError:
        return False


def _no_entries() -> Mapping[Any, VersionRange]:
    return _EMPTY


def as_range(value: RangeLike) -> VersionRange:
    """Read one ``RangeLike`` as a ``VersionRange``."""
    if isinstance(value, VersionRange):
        return value
    if isinstance(value, str):
        try:
            return VersionRange.parse(value)
        except ProtocolError:
            raise ConfigError(f"not a version range: {value!r}") from None
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(end, int) and not isinstance(end, bool) for end in value)
    ):
        return VersionRange.of(value[0], value[1])
    raise TypeError(f"not a version range: {value!r}")


# Read-only tables whose dicts nobody else holds, by identity, with the form capabilities
# keep them in once worked out (checked, in key order): such a table can never change, so
# a capabilities object built from it again (every connection to the same broker: its
# judged reply is memoized with its tables) reuses that form instead of checking, sorting
# and copying the table anew.  Strong references keep the ids valid.  Bounded: the least
# recently used table leaves first, so the tables of the brokers a process talks to stay
# while one-off tables (``from_ranges`` in a loop) come and go.
_Forms = list[Any]  # [table, its api-ranges form or None, its features form or None]
_SEALED: dict[int, _Forms] = {}
_SEALED_MAX: Final = 64
_API_FORM, _FEATURES_FORM = 1, 2


def sealed(table: dict[Any, VersionRange]) -> Mapping[Any, VersionRange]:
    """A read-only view of ``table``, which the caller hands over and never changes again.

    Capabilities built from the view reuse the copy they made of it the first time.
    """
    view = MappingProxyType(table)
    _remember([view, None, None])
    return view


def _remember(forms: _Forms) -> None:
    tables = _SEALED
    if len(tables) >= _SEALED_MAX:
        with suppress(KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
            del tables[next(iter(tables))]
    tables[id(forms[0])] = forms


def _own(table: dict[Any, VersionRange]) -> Mapping[Any, VersionRange]:
    """A table made below: already in the form capabilities keep, for either use."""
    view = MappingProxyType(table)
    _remember([view, view, view])
    return view


def _capabilities_form(table: Any, form: int, freeze: Callable[[Any], Mapping[Any, VersionRange]]) -> Any:
    key = id(table)
    forms = _SEALED.get(key)
    if forms is None or forms[0] is not table:
        return freeze(table)
    _SEALED.pop(key, None)  # most recently used: last to leave
    _SEALED[key] = forms
    if forms[form] is None:
        forms[form] = freeze(table)  # checked once: the table cannot change
    return forms[form]


def frozen_api_ranges(ranges: Mapping[int, RangeLike]) -> Mapping[int, VersionRange]:
    """``ranges`` as capabilities keep them: read-only, in key order, ``VersionRange`` values.

    Made once per sealed table (see ``sealed``), and a table this returned comes back as it is.
    """
    return _capabilities_form(ranges, _API_FORM, _frozen_api_ranges)  # type: ignore[no-any-return]


def frozen_features(features: Mapping[str, RangeLike] | None) -> Mapping[str, VersionRange]:
    """Feature ranges as capabilities keep them; made once per sealed table, as above."""
    return _capabilities_form(features, _FEATURES_FORM, _frozen_features)  # type: ignore[no-any-return]


def _frozen_api_ranges(ranges: Mapping[int, RangeLike]) -> Mapping[int, VersionRange]:
    if type(ranges) is MappingProxyType or type(ranges) is dict:
        # What a handshake hands over: int keys (exactly: no bools), VersionRange values,
        # usually in key order already.  Checked by whole-table passes that run in C, once
        # per connection; only a table that fails them takes the loop below.
        keys = list(ranges)
        if set(map(type, keys)) <= _INT_TYPE and set(map(type, ranges.values())) <= _RANGE_TYPE:
            ordered = keys == sorted(keys)
            return _own(dict(ranges) if ordered else dict(sorted(ranges.items())))
    table: dict[int, VersionRange] = {}
    for key, value in ranges.items():
        # A handshake hands over plain ints and VersionRanges: exact-type tests first.
        if type(key) is not int and (isinstance(key, bool) or not isinstance(key, int)):
            raise TypeError(f"API keys are ints, got {key!r}")
        table[key] = value if type(value) is VersionRange else as_range(value)
    return _own(dict(sorted(table.items())))


def _frozen_features(features: Mapping[str, RangeLike] | None) -> Mapping[str, VersionRange]:
    if not features:
        return _EMPTY
    table: dict[str, VersionRange] = {}
    for name, value in features.items():
        if not isinstance(name, str):
            raise TypeError(f"feature names are strings, got {name!r}")
        table[name] = as_range(value)
    return _own(dict(sorted(table.items())))


@dataclass(frozen=True)
class BrokerCapabilities:
    """The negotiated abilities of one broker connection.

    ``node`` labels the connection (``"host:port"``); ``node_id`` is the
    broker id when known (bootstrap connections often do not know it).
    ``api_ranges`` maps api key to the range the node answered; an API the node
    does not list, or lists with an empty range, cannot be used with it.
    Mappings are copied into read-only views at construction.
    """

    node: str
    api_ranges: Mapping[int, VersionRange] = field(default_factory=_no_entries, hash=False)
    node_id: int | None = None
    supported_features: Mapping[str, VersionRange] = field(default_factory=_no_entries, hash=False)
    finalized_features: Mapping[str, VersionRange] = field(default_factory=_no_entries, hash=False)
    finalized_features_epoch: int | None = None
    throttle_time_ms: int = 0
    transcript: HandshakeTranscript | None = field(default=None, compare=False)
    fallback_release: str | None = None
    #: The version policy bound when the capabilities were negotiated (the connection's config):
    #: ``pick_version(api_key)`` and ``explain(api_key)`` apply it without being told.
    policy: VersionPolicy | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.node, str) or not self.node:
            raise ConfigError(f"a broker needs a non-empty node label, got {self.node!r}")
        object.__setattr__(self, "api_ranges", frozen_api_ranges(self.api_ranges))
        object.__setattr__(self, "supported_features", frozen_features(self.supported_features))
        object.__setattr__(self, "finalized_features", frozen_features(self.finalized_features))

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_handshake(
        cls, result: Any, *, node: str | None = None, node_id: int | None = None,
        policy: VersionPolicy | None = None,
    ) -> BrokerCapabilities:
        """Build from a handshake result, read by attribute (duck-typed).

        Reads ``api_ranges`` (required), ``supported_features``,
        ``finalized_features``, ``finalized_features_epoch``, ``throttle_time_ms``,
        ``transcript``, ``fallback_release`` and, when ``node`` is not given,
        the result's own ``node``.
        """
        try:
            api_ranges = result.api_ranges
        except AttributeError:
            raise TypeError(
                f"{type(result).__name__} has no api_ranges: not a handshake result"
            ) from None
        label = node if node is not None else getattr(result, "node", None)
        if label is None:
            raise ConfigError("the handshake result names no node: pass node='host:port'")
        supported = getattr(result, "supported_features", None) or _EMPTY
        finalized = getattr(result, "finalized_features", None) or _EMPTY
        epoch = getattr(result, "finalized_features_epoch", None)
        throttle = getattr(result, "throttle_time_ms", 0) or 0
        transcript = getattr(result, "transcript", None)
        fallback = getattr(result, "fallback_release", None)
        if cls is not BrokerCapabilities or type(label) is not str or not label:
            return cls(
                node=label,
                node_id=node_id,
                api_ranges=api_ranges,
                supported_features=supported,
                finalized_features=finalized,
                finalized_features_epoch=epoch,
                throttle_time_ms=throttle,
                transcript=transcript,
                fallback_release=fallback,
                policy=policy,
            )
        # Once per connection: the fields __init__ and __post_init__ would set (the node
        # is a label, the tables in their kept form), stored at once, as a frozen
        # dataclass's __init__ costs five times a plain store per field.
        capabilities = object.__new__(cls)
        capabilities.__dict__.update(
            node=label,
            api_ranges=frozen_api_ranges(api_ranges),
            node_id=node_id,
            supported_features=supported if supported is _EMPTY else frozen_features(supported),
            finalized_features=finalized if finalized is _EMPTY else frozen_features(finalized),
            finalized_features_epoch=epoch,
            throttle_time_ms=throttle,
            transcript=transcript,
            fallback_release=fallback,
            policy=policy,
        )
        return capabilities

    @classmethod
    def from_ranges(
        cls,
        node: str,
        api_ranges: Mapping[int, RangeLike],
        *,
        node_id: int | None = None,
        supported_features: Mapping[str, RangeLike] | None = None,
        finalized_features: Mapping[str, RangeLike] | None = None,
        finalized_features_epoch: int | None = None,
        throttle_time_ms: int = 0,
        transcript: HandshakeTranscript | None = None,
        fallback_release: str | None = None,
    ) -> BrokerCapabilities:
        """Build from plain ranges (``VersionRange``, ``(low, high)`` or ``"0-4"``)."""
        return cls(
            node=node,
            node_id=node_id,
            api_ranges=frozen_api_ranges(api_ranges),
            supported_features=frozen_features(supported_features),
            finalized_features=frozen_features(finalized_features),
            finalized_features_epoch=finalized_features_epoch,
            throttle_time_ms=throttle_time_ms,
            transcript=transcript,
            fallback_release=fallback_release,
        )

    # -- questions -------------------------------------------------------------------------

    def broker_range(self, api_key: int) -> VersionRange:
        """The range this node answered for ``api_key``; empty when it does not list it."""
        return self.api_ranges.get(api_key, VersionRange.NONE)

    def lists_api(self, api_key: int) -> bool:
        """Whether this node answered a non-empty range for ``api_key``."""
        return not self.broker_range(api_key).empty

    @cached_property
    def release_guess(self) -> ReleaseGuess:
        """Which Kafka release these ranges point to (diagnostics only; computed once).

        A broker that skipped ApiVersions is named by that behaviour (its ranges
        are a release table's, not its answer).
        """
        # On first use: the guess reads the release table, which a connection that only
        # negotiates never needs.
        from kafkacompat.negotiation.release_guess import behaviour_guess, guess_release

        transcript = self.transcript
        if transcript is not None and transcript.detected_release is not None:
            skipped = [a.version for a in transcript.attempts if a.outcome == "skipped-api-versions"]
            return behaviour_guess(transcript.detected_release, skipped[-1] if skipped else None)
        return guess_release(self.api_ranges)

    @property
    def features_partial(self) -> str | None:
        """Why ``supported_features`` may be missing features, or None when it is whole.

        Every feature newer than metadata.version has minimum level 0 (group,
        transaction, share, streams, eligible leader replicas), which old clients
        reject.  A broker that has ApiVersions v4 leaves such features out of every
        answer below v4 (KAFKA-17492); 3.7 and 3.8, which stop at v3, left them out
        or rewrote their minimum to 1 (KAFKA-17011).  So where the handshake settled
        below v4 on such a broker, the list may hold metadata.version and little else.
        """
        accepted = self.transcript.api_versions_version if self.transcript is not None else None
        if accepted is None or accepted >= 4:
            return None
        own = self.api_ranges.get(API_VERSIONS)
        if own is not None and not own.empty and own.highest >= 4:
            return (
                f"partial: ApiVersions was answered at v{accepted}; this broker answers v4 and leaves "
                "every feature of minimum level 0 out of older answers (KAFKA-17492)"
            )
        if any(_release_at_least(r, (3, 7)) for r in self.release_guess.releases):
            return (
                f"may be partial: ApiVersions was answered at v{accepted}, and Kafka 3.7 and 3.8 leave "
                "features of minimum level 0 out of such answers, or rewrite their minimum to 1 (KAFKA-17011)"
            )
        return None

    @property
    def label(self) -> str:
        """``node`` plus the node id when known, for messages."""
        return self.node if self.node_id is None else f"{self.node} (node id {self.node_id})"

    # -- picking a version (the rules are version_policy's) -------------------------------

    def pick_version(
        self,
        api_key: int,
        policy: VersionPolicy | None = None,
        client_ranges: Mapping[int, VersionRange] | None = None,
        *,
        in_transaction: bool = False,
        feature_gates: bool | None = None,
    ) -> int:
        """The version to send ``api_key`` at to this node: the one way to pick a version.

        The highest version the client (``client_ranges``, default this codec's),
        the broker, the policy and the cluster's feature gates all allow (see
        ``version_policy``); ``policy`` defaults to the one bound at negotiation.
        Raises ``UnsupportedVersionError`` (before anything is sent) when none is.
        """
        choice = self.explain(
            api_key, policy, client_ranges, in_transaction=in_transaction, feature_gates=feature_gates
        )
        if choice.chosen is None:
            raise choice.error(self.transcript)
        return choice.chosen

    def explain(
        self,
        api_key: int,
        policy: VersionPolicy | None = None,
        client_ranges: Mapping[int, VersionRange] | None = None,
        *,
        in_transaction: bool = False,
        feature_gates: bool | None = None,
    ) -> VersionChoice:
        """Why ``pick_version`` picks what it picks (or nothing): every range and policy step.

        ``in_transaction``: the request is part of a transaction (Produce v12+ is gated
        by transaction.version then).  ``feature_gates`` defaults to on for this codec's
        ranges, off for ``client_ranges`` (another client need not obey the gates).
        """
        from kafkacompat.negotiation.version_policy import choice_for  # the first pick loads the rules

        return choice_for(
            api_key, self, self.policy if policy is None else policy, client_ranges,
            in_transaction=in_transaction, feature_gates=feature_gates,
        )
