"""Laws of version picking, checked against a brute-force model over small ranges."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kafkacompat.errors import UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.version_policy import VersionChoice, VersionPolicy
from kafkacompat.protocol import messages
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference import API_NAMES


def pick_version(api_key: int, capabilities: BrokerCapabilities, *args: Any, **kwargs: Any) -> int:
    """The one door, spelled with the capabilities second as these cases read best."""
    return capabilities.pick_version(api_key, *args, **kwargs)


def explain(api_key: int, capabilities: BrokerCapabilities, *args: Any, **kwargs: Any) -> VersionChoice:
    return capabilities.explain(api_key, *args, **kwargs)


TOP = 16  # versions 0..TOP keep the brute force cheap
# APIs with and without spec deprecations: Produce (0-6), Metadata (0-3),
# FindCoordinator (0), ApiVersions (none).
API_KEYS = (0, 3, 10, 18)
NODE = "10.0.0.7:9092"


def ranges() -> st.SearchStrategy[VersionRange]:
    return st.tuples(st.integers(0, TOP), st.integers(0, TOP)).map(
        lambda ends: VersionRange(min(ends), max(ends))
    )


@dataclass(frozen=True)
class Case:
    api_key: int
    client: VersionRange | None  # None: the client cannot write the API
    broker: VersionRange | None  # None: the broker does not list the API
    cap: int | None
    pin: int | None
    deprecated: frozenset[int]
    blocked: tuple[VersionRange, ...]
    honour_spec: bool

    def policy(self) -> VersionPolicy:
        key = self.api_key
        return VersionPolicy(
            caps={} if self.cap is None else {key: self.cap},
            pins={} if self.pin is None else {key: self.pin},
            deprecated={key: sorted(self.deprecated)} if self.deprecated else {},
            blocked={key: self.blocked} if self.blocked else {},
            honour_spec_deprecations=self.honour_spec,
        )

    def capabilities(self) -> BrokerCapabilities:
        table = {} if self.broker is None else {self.api_key: self.broker}
        return BrokerCapabilities.from_ranges(NODE, table)

    def client_ranges(self) -> dict[int, VersionRange]:
        return {} if self.client is None else {self.api_key: self.client}

    def allowed(self) -> set[int]:
        """The model: every rule applied to every version, one by one."""
        if self.client is None or self.broker is None:
            return set()
        spec = _spec_deprecated(self.api_key) if self.honour_spec else VersionRange.NONE
        return {
            v
            for v in range(TOP + 1)
            if v in self.client
            and v in self.broker
            and (self.cap is None or v <= self.cap)
            and (self.pin is None or v == self.pin)
            and v not in self.deprecated
            and v not in spec
            and not any(v in r for r in self.blocked)
        }


def _spec_deprecated(api_key: int) -> VersionRange:
    name = messages.CLASS_BY_KEY[(api_key, "request")]
    deprecated: VersionRange = getattr(messages, name).DEPRECATED_VERSIONS
    return deprecated


cases = st.builds(
    Case,
    api_key=st.sampled_from(API_KEYS),
    client=st.none() | ranges(),
    broker=st.none() | ranges(),
    cap=st.none() | st.integers(0, TOP),
    pin=st.none() | st.integers(0, TOP),
    deprecated=st.frozensets(st.integers(0, TOP), max_size=4),
    blocked=st.lists(ranges(), max_size=3).map(tuple),
    honour_spec=st.booleans(),
)


def _pick(case: Case) -> int | None:
    try:
        return pick_version(
            case.api_key, case.capabilities(), case.policy(), case.client_ranges()
        )
    except UnsupportedVersionError:
        return None



@given(cases)
def test_picked_version_is_the_maximum_of_the_allowed_set(case: Case) -> None:
    allowed = case.allowed()
    assert _pick(case) == (max(allowed) if allowed else None)


@given(cases)
def test_picked_version_respects_every_bound(case: Case) -> None:
    picked = _pick(case)
    if picked is None:
        return
    assert case.client is not None and picked in case.client
    assert case.broker is not None and picked in case.broker
    assert case.cap is None or picked <= case.cap
    assert case.pin is None or picked == case.pin
    assert picked not in case.deprecated
    assert not any(picked in r for r in case.blocked)
    assert not case.honour_spec or picked not in _spec_deprecated(case.api_key)


@given(cases)
def test_pin_wins_when_it_is_allowed(case: Case) -> None:
    if case.pin is not None and case.pin in case.allowed():
        assert _pick(case) == case.pin


@given(cases)
def test_no_version_raises_and_the_message_names_api_node_and_ranges(case: Case) -> None:
    if case.allowed():
        return
    try:
        pick_version(case.api_key, case.capabilities(), case.policy(), case.client_ranges())
    except UnsupportedVersionError as error:
        text = str(error)
        assert API_NAMES[case.api_key] in text
        assert f"api key {case.api_key}" in text
        assert NODE in text and error.node == NODE
        assert f"client range {case.client or VersionRange.NONE}" in text
        assert f"broker range {case.broker if case.broker is not None else 'not listed'}" in text
        assert case.cap is None or f"cap <= {case.cap}" in text
        assert case.pin is None or f"pin = {case.pin}" in text
    else:
        raise AssertionError("expected UnsupportedVersionError")


@given(cases)
def test_explain_agrees_with_pick_and_the_model(case: Case) -> None:
    choice = explain(case.api_key, case.capabilities(), case.policy(), case.client_ranges())
    assert choice.chosen == _pick(case)
    versions = {v for r in choice.allowed for v in r}
    assert versions == case.allowed()
    for step in choice.steps:  # each step only ever narrows what the previous left
        assert {v for r in step.remaining for v in r} >= versions


@given(cases, ranges())
def test_blocking_more_never_raises_the_pick(case: Case, extra: VersionRange) -> None:
    before = _pick(case)
    after = _pick(replace(case, blocked=(*case.blocked, extra)))
    if before is None:
        assert after is None
    else:
        assert after is None or after <= before
