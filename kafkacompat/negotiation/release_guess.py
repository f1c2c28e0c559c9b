"""Guess which Kafka release a broker runs from the API ranges it answers.

Theory.  Kafka brokers do not say which release they run; the ApiVersions
answer is the only fingerprint a client gets, and every Apache release (per
broker kind: ZooKeeper broker, KRaft broker, KRaft controller) answers a
distinct table, except a few consecutive releases that changed no API (KRaft
broker 3.3/3.4 and KRaft controller 3.7/3.8).  So:

- exact: the answer equals a known table; all releases sharing that table are
  named, because nothing on the wire tells them apart.
- otherwise we bound it, reading the table as "newer answers more".  A release
  is *reached* when the broker answers every one of its APIs at its highest
  version or above: the newest reached release is a lower bound.  A release
  *covers* the broker when it has every API the broker answers, at the
  broker's highest version or above: the oldest covering release is an upper
  bound.  Minimum versions are left out of both tests since Kafka raises them
  (4.0 dropped old versions) and forks choose their own.  Both bounds give
  "between"; only a lower bound (a newer release, or a fork with extra APIs)
  gives "at least".  A broker lacking APIs of every release but covered by one
  (a fork implementing part of the protocol) is "at least" the oldest covering
  release, since it answers versions first seen there: marked partial.
- unknown when no release of any kind fits.  The kind whose bounding releases
  differ least from the answer wins; ties go to the first kind in ``KINDS``.

Pre-0.10 brokers cannot answer ApiVersions at all, so their tables only ever
arrive here from a configured fallback; they match like any other.  A broker
that skipped ApiVersions and answered the request after it (the handshake's
Metadata v0 probe) is named by that behaviour instead, which only 0.9 has, and
one that closes on ApiVersions by the requests it answered (0.8.0, 0.8.1 and
0.8.2 each parse keys the one before did not): ``behaviour_guess``.  The guess
is for display and diagnostics only: negotiation never depends on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Literal, cast

from kafkacompat.errors import NegotiationError, ProtocolError
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.releases import API_NAMES, KINDS, RELEASES

__all__ = ["ReleaseGuess", "behaviour_guess", "guess_release", "known_api_ranges"]

Kind = Literal["kraft-broker", "kraft-controller", "zk-broker"]
Relation = Literal["exact", "at_least", "between", "unknown"]
Table = Mapping[int, tuple[int, int]]

# Enough lines to say why, few enough to read in a log line.
_MAX_DIFFERENCES_SHOWN = 3


@dataclass(frozen=True, slots=True)
class ReleaseGuess:
    """Which release(s) a broker's API ranges point to, and why."""

    kind: Kind | None
    relation: Relation
    releases: tuple[str, ...]
    text: str
    evidence: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class _TableGroup:
    """Consecutive releases of one kind that answer the very same table."""

    kind: Kind
    releases: tuple[str, ...]
    table: Table

    @property
    def first(self) -> str:
        return self.releases[0]

    @property
    def last(self) -> str:
        return self.releases[-1]

    @property
    def names(self) -> str:
        return _either(self.releases)


@dataclass(frozen=True, slots=True)
class _KindBounds:
    kind: Kind
    lower: int | None  # index of the newest reached group
    upper: int | None  # index of the oldest covering group
    distance: int  # differences between the answer and its nearest bounding table

    @property
    def rank(self) -> tuple[int, int, int]:
        """Nearest table first; then two bounds before a lower bound before a partial match."""
        shape = 2 if self.lower is None else (0 if self.upper is not None else 1)
        return (self.distance, shape, KINDS.index(self.kind))


# APIs a release lists only when configured to, left out of the comparison: GetTelemetrySubscriptions
# and PushTelemetry (KIP-714), which a real 3.7+ broker lists only with a client telemetry receiver
# (releases.json keeps them as "optional_apis"; the tables hold what a default broker answers).
OPTIONAL_APIS: frozenset[int] = frozenset(
    {int(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS), int(ApiKey.PUSH_TELEMETRY)}
)


# The broker listener of a combined node (broker and controller in one process) answers its
# release's broker-only table less these APIs: DescribeQuorum (55) on 3.0 to 3.2, seen on the
# real 3.0.2, 3.1.2 and 3.2.3 (make real-kafka).  Every other release's combined node answers
# exactly its split nodes' tables.
COMBINED_BROKER_HIDES: Mapping[str, frozenset[int]] = MappingProxyType(
    {release: frozenset({int(ApiKey.DESCRIBE_QUORUM)}) for release in ("3.0", "3.1", "3.2")}
)


def guess_release(api_ranges: Mapping[int, VersionRange]) -> ReleaseGuess:
    """Guess the broker's Kafka release from its ApiVersions answer (api key -> range)."""
    observed = {key: span for key, span in _as_table(api_ranges).items() if key not in OPTIONAL_APIS}
    if not observed:
        return ReleaseGuess(None, "unknown", (), "unknown", ("no API ranges given",))
    exact = [group for groups in _groups().values() for group in groups if group.table == observed]
    if exact:
        return _exact(observed, exact)
    combined = [group for group in _groups().get("kraft-broker", ()) if _combined_table(group) == observed]
    if combined:
        return _exact_combined(observed, combined)
    bounds = [b for kind in _groups() if (b := _bounds(_kind(kind), observed)) is not None]
    if not bounds:
        return ReleaseGuess(None, "unknown", (), "unknown", tuple(_unknown_evidence(observed)))
    best = min(bounds, key=lambda b: b.rank)
    groups = _groups()[best.kind]
    if best.lower is not None and best.upper is not None:
        return _between(observed, groups, best.lower, best.upper)
    if best.lower is not None:
        return _at_least(observed, groups, best.lower)
    assert best.upper is not None
    return _partial(observed, groups, best.upper)


_NOT_ANSWERED = "not the broker's answer"
# What each pre-0.10 release does that the others do not (handshake rules 9 and 10).
_BEHAVIOUR: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "0.8.2": (
            "ApiVersions closed the connection at every version, Metadata v0 was answered: a Kafka "
            "broker older than 0.10 that closes on requests it cannot read (0.8.x)",
            "Heartbeat (key 12) was answered: only 0.8.2 of the 0.8 releases parses it",
        ),
        "0.8.1": (
            "ApiVersions closed the connection at every version, Metadata v0 was answered: 0.8.x",
            "Heartbeat (key 12, 0.8.2) closed the connection; OffsetFetch v0 (key 9) was answered: 0.8.1",
        ),
        "0.8.0": (
            "ApiVersions closed the connection at every version, Metadata v0 was answered: 0.8.x",
            "Heartbeat (key 12, 0.8.2) and OffsetFetch v0 (key 9, 0.8.1) closed the connection: 0.8.0",
        ),
    }
)


def behaviour_guess(release: str, skipped_version: int | None = None) -> ReleaseGuess:
    """A pre-0.10 broker named by what it did with requests: no table of its own to compare.

    ``skipped_version``: the ApiVersions version a 0.9 broker skipped.
    """
    apis = len(known_api_ranges(release))
    did = _BEHAVIOUR.get(release) or (
        f"ApiVersions v{skipped_version} got no reply and the Metadata v0 written after it was "
        "answered: the broker skipped ApiVersions (KIP-35, Kafka 0.10) and served on",
        f"only {release} does that: 0.8.x closes the connection on a request it cannot "
        "read, 0.10 and later answer ApiVersions",
    )
    return ReleaseGuess(
        "zk-broker",
        "exact",
        (release,),
        f"Kafka {release} (zk-broker), older than 0.10",
        (*did, f"the {apis} API ranges shown are Kafka {release}'s from the release table, {_NOT_ANSWERED}"),
    )


def known_api_ranges(release: str, kind: str = "zk-broker") -> Mapping[int, VersionRange]:
    """The table ``release`` answers as ``kind`` (read-only), e.g. for a pre-0.10 fallback.

    Unknown kinds and releases raise ``NegotiationError`` naming what is known.
    """
    if kind not in KINDS:
        raise NegotiationError(f"unknown broker kind {kind!r}; known kinds: {', '.join(KINDS)}")
    for profile in RELEASES:
        if profile.release == release and profile.kind == kind:
            return MappingProxyType(
                {key: VersionRange(low, high) for key, (low, high) in sorted(profile.apis.items())}
            )
    known = ", ".join(p.release for p in RELEASES if p.kind == kind)
    raise NegotiationError(
        f"no API table for Kafka release {release!r} ({kind}) in the reference table; "
        f"known {kind} releases: {known}"
    )


# -- the reference tables, grouped --------------------------------------------------------


def _kind(name: str) -> Kind:
    if name not in ("kraft-broker", "kraft-controller", "zk-broker"):
        raise ProtocolError(f"unexpected broker kind in the reference table: {name!r}")
    return cast(Kind, name)


@cache
def _groups() -> dict[Kind, tuple[_TableGroup, ...]]:
    """Per kind, the releases oldest first, consecutive identical tables merged."""
    grouped: dict[Kind, list[_TableGroup]] = {}
    for profile in RELEASES:  # already sorted by kind, then release
        kind = _kind(profile.kind)
        groups = grouped.setdefault(kind, [])
        if groups and groups[-1].table == profile.apis:
            previous = groups.pop()
            groups.append(_TableGroup(kind, (*previous.releases, profile.release), profile.apis))
        else:
            groups.append(_TableGroup(kind, (profile.release,), profile.apis))
    return {kind: tuple(groups) for kind, groups in grouped.items()}


def _as_table(api_ranges: Mapping[int, VersionRange]) -> dict[int, tuple[int, int]]:
    table: dict[int, tuple[int, int]] = {}
    for key, versions in api_ranges.items():
        if not isinstance(key, int) or not isinstance(versions, VersionRange):
            raise ProtocolError(f"expected api key -> VersionRange, got {key!r}: {versions!r}")
        if not versions.empty:  # an empty range means the API is not offered
            table[key] = (versions.lowest, versions.highest)
    return table


# -- the two tests and the distance -------------------------------------------------------


def _reaches(observed: Table, release_table: Table) -> bool:
    return all(key in observed and observed[key][1] >= high for key, (_, high) in release_table.items())


def _covers(release_table: Table, observed: Table) -> bool:
    return all(key in release_table and release_table[key][1] >= high for key, (_, high) in observed.items())


def _differing_keys(a: Table, b: Table) -> list[int]:
    return sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))


def _bounds(kind: Kind, observed: Table) -> _KindBounds | None:
    groups = _groups()[kind]
    reached = [i for i, g in enumerate(groups) if _reaches(observed, g.table)]
    covering = [i for i, g in enumerate(groups) if _covers(g.table, observed)]
    lower = reached[-1] if reached else None
    upper = covering[0] if covering else None
    nearest = [i for i in (lower, upper) if i is not None]
    if not nearest:
        return None
    distance = min(len(_differing_keys(observed, groups[i].table)) for i in nearest)
    return _KindBounds(kind, lower, upper, distance)


# -- guesses and their evidence -----------------------------------------------------------


def _exact(observed: Table, matches: Sequence[_TableGroup]) -> ReleaseGuess:
    kinds = sorted({group.kind for group in matches})
    releases = tuple(release for group in matches for release in group.releases)
    text = " or ".join(f"Kafka {group.names} ({group.kind})" for group in matches)
    evidence = [f"all {len(observed)} API ranges equal those of {text}"]
    for group in matches:
        groups = _groups()[group.kind]
        index = groups.index(group)
        if index > 0:
            evidence += _newly_seen(groups[index - 1], group)
        if index + 1 < len(groups):
            evidence += _compared(observed, groups[index + 1], group.kind, "from")
    kind = _kind(kinds[0]) if len(kinds) == 1 else None
    return ReleaseGuess(kind, "exact", releases, text, tuple(evidence))


def _combined_table(group: _TableGroup) -> Table | None:
    """What a combined node of ``group``'s releases answers on its broker listener, where it differs."""
    hidden = frozenset().union(
        *(COMBINED_BROKER_HIDES.get(release, frozenset()) for release in group.releases)
    )
    if not hidden:
        return None
    return {key: span for key, span in group.table.items() if key not in hidden}


def _exact_combined(observed: Table, matches: Sequence[_TableGroup]) -> ReleaseGuess:
    guess = _exact(observed, matches)
    hidden = sorted(
        frozenset().union(
            *(COMBINED_BROKER_HIDES[r] for g in matches for r in g.releases if r in COMBINED_BROKER_HIDES)
        )
    )
    names = ", ".join(f"{API_NAMES.get(key, '?')}({key})" for key in hidden)
    first = (
        f"all {len(observed)} API ranges equal those of {guess.text} as the broker listener of a "
        f"combined broker-controller node, which leaves out {names} (a broker-only node lists it)"
    )
    return ReleaseGuess(guess.kind, "exact", guess.releases, guess.text, (first, *guess.evidence[1:]))


def _between(observed: Table, groups: Sequence[_TableGroup], lower: int, upper: int) -> ReleaseGuess:
    low_group, high_group = groups[lower], groups[upper]
    kind = low_group.kind
    span = groups[min(lower, upper) : max(lower, upper) + 1]
    releases = tuple(release for group in span for release in group.releases)
    if lower == upper:
        text = f"close to Kafka {low_group.names} ({kind})"
    else:
        text = f"between Kafka {span[0].first} and {span[-1].last} ({kind})"
    evidence = [
        f"answers every API of Kafka {low_group.names} ({kind}) at its highest version or above",
        f"Kafka {high_group.names} ({kind}) answers every API seen, at the version seen or above",
    ]
    evidence += _compared(observed, low_group, kind, "in")
    if upper != lower:
        evidence += _compared(observed, high_group, kind, "in")
    return ReleaseGuess(kind, "between", releases, text, tuple(evidence))


def _at_least(observed: Table, groups: Sequence[_TableGroup], lower: int) -> ReleaseGuess:
    group = groups[lower]
    evidence = [f"answers every API of Kafka {group.names} ({group.kind}) at its highest version or above"]
    evidence += _compared(observed, group, group.kind, "in")
    if lower + 1 < len(groups):
        newer = groups[lower + 1]
        short = [
            key for key, (_, high) in newer.table.items() if key not in observed or observed[key][1] < high
        ]
        evidence += _lines(
            (
                f"{_api(key)}: {_span(observed.get(key))} here, {_span(newer.table[key])} "
                f"in Kafka {newer.first}"
                for key in sorted(short)
            ),
            f"short of Kafka {newer.first}",
        )
    text = f"at least Kafka {group.first} ({group.kind})"
    return ReleaseGuess(group.kind, "at_least", group.releases, text, tuple(evidence))


def _partial(observed: Table, groups: Sequence[_TableGroup], upper: int) -> ReleaseGuess:
    group = groups[upper]
    missing = sorted(group.table.keys() - observed.keys())
    evidence = [
        f"Kafka {group.names} ({group.kind}) answers every API seen, at the version seen or above",
        f"lacks {len(missing)} of the {len(group.table)} APIs of Kafka {group.last}: "
        + ", ".join(_api(key) for key in missing[:_MAX_DIFFERENCES_SHOWN])
        + (", ..." if len(missing) > _MAX_DIFFERENCES_SHOWN else ""),
    ]
    if upper > 0:
        evidence += _beyond(observed, groups[upper - 1])
    text = f"at least Kafka {group.first} ({group.kind}), partial API set"
    return ReleaseGuess(group.kind, "at_least", group.releases, text, tuple(evidence))


def _unknown_evidence(observed: Table) -> Iterator[str]:
    if ApiKey.API_VERSIONS not in observed:
        yield f"{_api(ApiKey.API_VERSIONS)} absent: a pre-0.10 broker or not a Kafka broker"
    highest: dict[int, int] = {}
    for profile in RELEASES:
        for key, (_, high) in profile.apis.items():
            highest[key] = max(high, highest.get(key, -1))
    for key, (low, high) in sorted(observed.items()):
        if key not in highest:
            yield f"{_api(key)} {_span((low, high))} is in no known release"
        elif high > highest[key]:
            yield (
                f"{_api(key)} {_span((low, high))} goes beyond every known release (highest {highest[key]})"
            )
    yield "no known release of any kind is reached by, or covers, these API ranges"


def _newly_seen(previous: _TableGroup, group: _TableGroup) -> list[str]:
    """What ``group`` answers differently from the release before it (why it is not older)."""
    lines = []
    for key in _differing_keys(previous.table, group.table):
        now, before = group.table.get(key), previous.table.get(key)
        if now is None:
            lines.append(f"{_api(key)} is gone in {group.first} ({previous.last}: {_span(before)})")
        elif before is None:
            lines.append(f"{_api(key)} {_span(now)} first appears in {group.first}")
        else:
            lines.append(
                f"{_api(key)} {_span(now)} first appears in {group.first} ({previous.last}: {_span(before)})"
            )
    return _lines(lines, f"changes in {group.first}")


def _beyond(observed: Table, previous: _TableGroup) -> list[str]:
    """Why ``previous`` is too old for the answer: the ranges seen that it lacks or stops short of.

    Every line cites the range the broker advertised, never the newer
    release's, which a partial implementation need not reach.
    """
    lines = []
    for key, seen in sorted(observed.items()):
        before = previous.table.get(key)
        if before is None:
            lines.append(f"{_api(key)}: {_span(seen)} here, absent in Kafka {previous.last}")
        elif seen[1] > before[1]:
            lines.append(f"{_api(key)}: {_span(seen)} here, {_span(before)} in Kafka {previous.last}")
    return _lines(lines, f"reasons it is newer than Kafka {previous.last}")


def _compared(observed: Table, other: _TableGroup, kind: Kind, preposition: str) -> list[str]:
    """How the answer differs from ``other``'s table, key by key."""
    release = other.first if preposition == "from" else other.last
    return _lines(
        (
            f"{_api(key)}: {_span(observed.get(key))} here, {_span(other.table.get(key))} "
            f"{preposition} Kafka {release}"
            for key in _differing_keys(observed, other.table)
        ),
        f"differences from Kafka {release} ({kind})",
    )


def _lines(lines: Iterable[str], what: str) -> list[str]:
    shown = list(lines)
    if len(shown) <= _MAX_DIFFERENCES_SHOWN:
        return shown
    rest = len(shown) - _MAX_DIFFERENCES_SHOWN
    return [*shown[:_MAX_DIFFERENCES_SHOWN], f"... and {rest} more of the {what}"]  # "1 more" reads right too


def _api(key: int) -> str:
    name = API_NAMES.get(key)
    return f"{name}({key})" if name else f"API key {key}"


def _span(versions: tuple[int, int] | None) -> str:
    return "absent" if versions is None else str(VersionRange(*versions))


def _either(releases: Sequence[str]) -> str:
    if len(releases) == 1:
        return releases[0]
    return f"{', '.join(releases[:-1])} or {releases[-1]}"
