"""Picking one API's version for one broker: capabilities, policy steps, explanations, errors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkacompat.errors import UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.negotiation.release_guess import ReleaseGuess, known_api_ranges
from kafkacompat.negotiation.version_policy import (
    DEFAULT_POLICY,
    VersionPolicy,
    choice_for,
    client_ranges_of_codec,
)
from kafkacompat.protocol import messages
from kafkacompat.protocol.versions import VersionRange

FIND_COORDINATOR = 10
METADATA = 3
NODE = "127.0.0.1:9092"


def broker(**ranges: str) -> BrokerCapabilities:
    """A broker answering FindCoordinator (``fc``) and Metadata (``md``) as given."""
    table = {FIND_COORDINATOR: ranges.get("fc", "0-6"), METADATA: ranges.get("md", "0-12")}
    return BrokerCapabilities.from_ranges(NODE, table, node_id=1)


# -- BrokerCapabilities -----------------------------------------------------------------


def test_from_ranges_accepts_every_range_spelling() -> None:
    caps = BrokerCapabilities.from_ranges(
        NODE, {0: VersionRange(3, 9), 1: (4, 12), 3: "0-12"}, supported_features={"mv": (1, 20)}
    )
    assert caps.api_ranges == {0: VersionRange(3, 9), 1: VersionRange(4, 12), 3: VersionRange(0, 12)}
    assert caps.supported_features == {"mv": VersionRange(1, 20)}
    assert caps.broker_range(3) == VersionRange(0, 12)
    assert caps.broker_range(99).empty
    assert caps.lists_api(0) and not caps.lists_api(99)


def test_capabilities_are_read_only_and_copied_per_connection() -> None:
    source = {FIND_COORDINATOR: VersionRange(0, 6)}
    first = BrokerCapabilities.from_ranges("a:9092", source)
    second = BrokerCapabilities.from_ranges("b:9092", source)
    source[FIND_COORDINATOR] = VersionRange(0, 0)
    assert first.broker_range(FIND_COORDINATOR) == VersionRange(0, 6)
    with pytest.raises(TypeError):
        first.api_ranges[FIND_COORDINATOR] = VersionRange(0, 1)  # type: ignore[index]
    with pytest.raises(AttributeError):
        first.node = "c:9092"  # type: ignore[misc]
    assert first.api_ranges is not second.api_ranges


def test_capabilities_compare_by_value_and_hash() -> None:
    a = BrokerCapabilities.from_ranges(NODE, {10: "0-6"}, node_id=1)
    b = BrokerCapabilities.from_ranges(NODE, {10: (0, 6)}, node_id=1)
    assert a == b and hash(a) == hash(b)
    assert a != BrokerCapabilities.from_ranges(NODE, {10: "0-5"}, node_id=1)


def test_from_handshake_reads_attributes() -> None:
    transcript = HandshakeTranscript(round_trips=1, connections=1, api_versions_version=3)
    result = SimpleNamespace(
        api_ranges={FIND_COORDINATOR: VersionRange(0, 4)},
        supported_features={"metadata.version": VersionRange(1, 20)},
        finalized_features={"metadata.version": VersionRange(14, 14)},
        finalized_features_epoch=7,
        throttle_time_ms=25,
        transcript=transcript,
        fallback_release=None,
    )
    caps = BrokerCapabilities.from_handshake(result, node=NODE, node_id=3)
    assert caps.node == NODE and caps.node_id == 3
    assert caps.api_ranges == {FIND_COORDINATOR: VersionRange(0, 4)}
    assert caps.finalized_features == {"metadata.version": VersionRange(14, 14)}
    assert caps.finalized_features_epoch == 7
    assert caps.throttle_time_ms == 25
    assert caps.transcript is transcript
    assert caps.label == f"{NODE} (node id 3)"


def test_from_handshake_needs_only_api_ranges() -> None:
    caps = BrokerCapabilities.from_handshake(
        SimpleNamespace(api_ranges={18: VersionRange(0, 0)}, fallback_release="0.9.0"), node=NODE
    )
    assert caps.supported_features == {} and caps.finalized_features_epoch is None
    assert caps.fallback_release == "0.9.0"
    with pytest.raises(TypeError, match="api_ranges"):
        BrokerCapabilities.from_handshake(object(), node=NODE)


def test_from_handshake_takes_the_node_from_the_result_when_not_given() -> None:
    result = SimpleNamespace(api_ranges={18: VersionRange(0, 4)}, node="10.0.0.1:9092")
    assert BrokerCapabilities.from_handshake(result).node == "10.0.0.1:9092"
    assert BrokerCapabilities.from_handshake(result, node="other:1").node == "other:1"
    with pytest.raises(ValueError, match="names no node"):
        BrokerCapabilities.from_handshake(SimpleNamespace(api_ranges={}))


def test_node_label_is_required() -> None:
    with pytest.raises(ValueError, match="node label"):
        BrokerCapabilities.from_ranges("", {})


def test_release_guess_is_computed_once() -> None:
    caps = BrokerCapabilities.from_ranges(NODE, known_api_ranges("3.0", "zk-broker"))
    guess = caps.release_guess
    assert isinstance(guess, ReleaseGuess)
    assert guess.relation == "exact" and "3.0" in guess.releases
    assert caps.release_guess is guess


# -- picking ------------------------------------------------------------------------------


def test_default_pick_is_the_highest_common_version() -> None:
    assert broker(fc="0-3").pick_version(FIND_COORDINATOR) == 3
    assert broker(fc="2-9").pick_version(FIND_COORDINATOR) == messages.REQUEST_VERSIONS[10][1]
    assert broker(fc="0-4").pick_version(FIND_COORDINATOR) == 4
    assert broker(fc="0-4").pick_version(FIND_COORDINATOR, DEFAULT_POLICY) == 4


def test_cap_pin_deprecated_and_blocked() -> None:
    caps = broker(fc="0-6")
    assert caps.pick_version(10, VersionPolicy(caps={10: 3})) == 3
    assert caps.pick_version(10, VersionPolicy(pins={10: 2})) == 2
    assert caps.pick_version(10, VersionPolicy(blocked={10: [6, 5]})) == 4
    assert caps.pick_version(10, VersionPolicy(blocked={10: "4+"})) == 3
    assert caps.pick_version(10, VersionPolicy(deprecated={10: VersionRange(5, 6)})) == 4
    assert caps.pick_version(10, VersionPolicy(caps={10: 5}, blocked={10: 5})) == 4


def test_spec_deprecations_are_honoured_only_when_asked() -> None:
    assert VersionRange(0, 0) == messages.FindCoordinatorRequest.DEPRECATED_VERSIONS
    old = broker(fc="0", md="0-3")
    assert old.pick_version(FIND_COORDINATOR) == 0
    strict = VersionPolicy(honour_spec_deprecations=True)
    with pytest.raises(UnsupportedVersionError, match="spec-deprecated 0 excluded"):
        old.pick_version(FIND_COORDINATOR, strict)
    with pytest.raises(UnsupportedVersionError, match="spec-deprecated 0-3 excluded"):
        old.pick_version(METADATA, strict)
    assert broker(fc="0-6").pick_version(FIND_COORDINATOR, strict) == 6


def test_policy_accepts_api_names_and_normalises() -> None:
    by_name = VersionPolicy(caps={"FindCoordinator": 3}, blocked={"Metadata": ["0-1", 2, 7]})
    by_key = VersionPolicy(caps={10: 3}, blocked={3: [VersionRange(0, 2), VersionRange(7, 7)]})
    assert by_name == by_key and hash(by_name) == hash(by_key)
    assert by_name.blocked[METADATA] == (VersionRange(0, 2), VersionRange(7, 7))
    assert by_name.describe(METADATA) == "blocked 0-2, 7 excluded"
    assert by_name.describe(FIND_COORDINATOR) == "cap <= 3"
    assert by_name.describe(0) == ""


@pytest.mark.parametrize(
    "kwargs",
    [
        {"caps": {10: -1}},
        {"pins": {10: True}},
        {"caps": {"NoSuchApi": 1}},
        {"blocked": {10: [object()]}},
        {"deprecated": {10: "x-y"}},
    ],
)
def test_bad_policies_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        VersionPolicy(**kwargs)  # type: ignore[arg-type]


# -- unusable APIs and their errors -------------------------------------------------------


def test_empty_intersection_error_names_everything() -> None:
    caps = broker(fc="0-3")
    with pytest.raises(UnsupportedVersionError) as caught:
        caps.pick_version(FIND_COORDINATOR, VersionPolicy(pins={10: 5}, blocked={10: 1}))
    text = str(caught.value)
    for part in ("FindCoordinator", "api key 10", NODE, "client range 0-6", "broker range 0-3",
                 "pin = 5", "blocked 1 excluded"):
        assert part in text, part
    assert caught.value.node == NODE


def test_api_not_listed_is_unusable_with_a_reason() -> None:
    caps = BrokerCapabilities.from_ranges(NODE, {METADATA: "0-12", 11: "none"})
    choice = caps.explain(FIND_COORDINATOR)
    assert choice.chosen is None and not choice.usable and not choice.broker_lists_api
    assert "does not list FindCoordinator (api key 10)" in choice.reason
    assert not caps.explain(11).usable  # listed with an empty range: same thing
    with pytest.raises(UnsupportedVersionError, match="broker range not listed"):
        caps.pick_version(FIND_COORDINATOR)


def test_disjoint_ranges_and_client_gaps() -> None:
    with pytest.raises(UnsupportedVersionError, match="no version in common"):
        broker(fc="7-9").pick_version(FIND_COORDINATOR)
    own = {METADATA: VersionRange(0, 12)}
    with pytest.raises(UnsupportedVersionError, match="client cannot write FindCoordinator"):
        broker().pick_version(FIND_COORDINATOR, client_ranges=own)


def test_error_carries_the_transcript() -> None:
    transcript = HandshakeTranscript(round_trips=2, connections=1)
    caps = BrokerCapabilities.from_ranges(NODE, {}, transcript=transcript)
    with pytest.raises(UnsupportedVersionError) as caught:
        caps.pick_version(FIND_COORDINATOR)
    assert caught.value.transcript is transcript


# -- explanations -------------------------------------------------------------------------


def test_explain_lists_the_steps_in_order() -> None:
    policy = VersionPolicy(
        caps={10: 5}, deprecated={10: 0}, blocked={10: "4-5"}, honour_spec_deprecations=True
    )
    choice = choice_for(FIND_COORDINATOR, broker(fc="0-6"), policy)  # the engine itself
    assert [step.kind for step in choice.steps] == ["cap", "spec-deprecated", "deprecated", "blocked"]
    assert [str(r) for r in choice.steps[0].remaining] == ["0-5"]
    assert [str(r) for r in choice.steps[-1].remaining] == ["1-3"]
    assert choice.client_range == VersionRange(0, 6) and choice.broker_range == VersionRange(0, 6)
    assert choice.intersection == VersionRange(0, 6)
    assert choice.allowed == (VersionRange(1, 3),)
    assert choice.chosen == 3 and choice.usable
    assert choice.reason.startswith("v3:")
    assert choice.api == "FindCoordinator (api key 10)"


def test_explain_without_policy_has_no_steps() -> None:
    choice = broker(fc="0-4").explain(FIND_COORDINATOR)
    assert choice.steps == () and choice.chosen == 4
    assert choice == choice_for(FIND_COORDINATOR, broker(fc="0-4"))
    assert "highest of 0-4" in str(choice)


def test_pin_outside_the_common_range_explains_why() -> None:
    choice = broker(fc="0-3").explain(FIND_COORDINATOR, VersionPolicy(caps={10: 2}, pins={10: 3}))
    assert choice.chosen is None
    assert [str(step) for step in choice.steps] == ["cap <= 2 -> 0-2", "pin = 3 -> none"]
    assert "policy leaves none" in choice.reason


def test_codec_ranges_follow_the_generated_table() -> None:
    ranges = client_ranges_of_codec()
    assert ranges[FIND_COORDINATOR] == VersionRange(*messages.REQUEST_VERSIONS[10])
    assert len(ranges) == len(messages.REQUEST_VERSIONS)


def test_policy_limits_are_named_even_when_not_reached() -> None:
    with pytest.raises(UnsupportedVersionError) as caught:
        broker(fc="7-9").pick_version(FIND_COORDINATOR, VersionPolicy(caps={10: 2}))
    assert "policy: cap <= 2 (not reached)" in str(caught.value)
    with pytest.raises(UnsupportedVersionError, match="policy: none"):
        broker(fc="7-9").pick_version(FIND_COORDINATOR)
