"""Properties of the finalized-features merge and of the finalize checks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkacompat.negotiation.features import (
    CATALOG,
    BrokerFeatures,
    FinalizedObservation,
    FinalizedView,
    can_finalize,
    can_finalize_all,
    max_safe_level,
    merge_finalized,
)
from kafkacompat.protocol.versions import VersionRange

MV, KRAFT, GROUP = "metadata.version", "kraft.version", "group.version"
NODES = st.sampled_from(["b1", "b2", "b3", "b4", "c1"])


def _level_range(low: int, high: int) -> st.SearchStrategy[VersionRange]:
    return st.tuples(st.integers(low, high), st.integers(low, high)).map(
        lambda t: VersionRange(min(t), max(t))
    )


observations = st.builds(
    FinalizedObservation,
    node=NODES,
    epoch=st.integers(-1, 6),
    features=st.dictionaries(st.sampled_from([MV, KRAFT, GROUP]), _level_range(0, 3), max_size=3),
)


arrivals = st.lists(observations, max_size=12).flatmap(
    lambda obs: st.tuples(st.just(obs), st.permutations(obs))
)


@given(arrivals)
def test_any_order_of_arrival_gives_the_same_view(
    pair: tuple[list[FinalizedObservation], list[FinalizedObservation]],
) -> None:
    arrived, reordered = pair
    assert merge_finalized(arrived) == merge_finalized(reordered)


@given(st.lists(observations, max_size=12), st.integers(0, 12))
def test_merging_in_steps_equals_merging_at_once(obs: list[FinalizedObservation], cut: int) -> None:
    at_once = merge_finalized(obs)
    assert merge_finalized(obs[cut:], merge_finalized(obs[:cut])) == at_once
    step_by_step = FinalizedView()
    for observation in obs:
        step_by_step = step_by_step.observe(observation)
    assert step_by_step == at_once


@given(st.lists(observations, min_size=1, max_size=12))
def test_the_newest_epoch_wins_and_laggards_are_reported(obs: list[FinalizedObservation]) -> None:
    view = merge_finalized(obs)
    newest = max(o.epoch for o in obs)
    assert view.epoch == newest
    assert any(o.epoch == newest and dict(o.features) == dict(view.features) for o in obs)
    for node in {o.node for o in obs}:
        best = max(o.epoch for o in obs if o.node == node)
        if -1 < best < newest:
            assert any(s.node == node and s.epoch == best for s in view.stale)
        if best == -1:
            assert node in view.unknown_epoch
    assert all(s.epoch < s.newest_epoch == newest for s in view.stale)
    assert set(view.sources) | set(view.conflicts) | {s.node for s in view.stale} | set(
        view.unknown_epoch
    ) >= {o.node for o in obs}


@given(st.lists(observations, min_size=1, max_size=10), observations)
def test_an_older_epoch_never_overwrites_a_newer_one(
    obs: list[FinalizedObservation], late: FinalizedObservation
) -> None:
    view = merge_finalized(obs)
    if late.epoch < view.epoch:
        after = view.observe(late)
        assert (after.epoch, dict(after.features)) == (view.epoch, dict(view.features))


# -- can_finalize against generated clusters ------------------------------------------------------

brokers = st.lists(
    st.builds(
        BrokerFeatures,
        node=st.integers(0, 99).map(lambda n: f"node-{n}"),
        supported_features=st.fixed_dictionaries(
            {}, optional={MV: _level_range(1, 25), KRAFT: _level_range(0, 1)}
        ),
    ),
    min_size=1,
    max_size=5,
    unique_by=lambda b: b.node,
)


def _supports(broker: BrokerFeatures, feature: str, level: int) -> bool:
    listed = broker.supported_features.get(feature)
    if listed is None:
        return level == 0
    if feature != MV and level == 0 and listed.lowest == 1:
        return True  # minimum 0 listed as 1 by an interim broker fix (KAFKA-17011)
    return level in listed


@given(brokers, st.integers(1, 25), st.integers(0, 1), st.booleans())
def test_verdict_is_support_everywhere_and_dependencies_met(
    cluster: list[BrokerFeatures], mv_now: int, kraft_target: int, together: bool
) -> None:
    if together:
        verdict = can_finalize_all({KRAFT: kraft_target, MV: mv_now}, cluster)
    else:
        verdict = can_finalize(KRAFT, kraft_target, cluster, finalized={MV: mv_now})
    unsupported = [b.node for b in cluster if not _supports(b, KRAFT, kraft_target)]
    if together:
        unsupported += [b.node for b in cluster if not _supports(b, MV, mv_now)]
    dependency_met = kraft_target == 0 or mv_now >= 21
    assert verdict.ok == (not unsupported and dependency_met)
    assert bool(verdict) == verdict.ok
    assert sorted(b.node for b in verdict.blocking_brokers) == sorted(unsupported)
    for node in unsupported:
        assert f"broker {node} " in verdict.reason
    if not dependency_met:
        assert verdict.blocking_dependencies
        assert "requires metadata.version 21 (3.9-IV0)" in verdict.reason
    if verdict.ok:
        assert "can be finalized" in verdict.reason


@given(brokers, st.integers(0, 25))
def test_max_safe_level_is_the_highest_level_that_can_be_finalized(
    cluster: list[BrokerFeatures], mv_now: int
) -> None:
    finalized = {MV: mv_now} if mv_now else {}
    for feature in (MV, KRAFT):
        best = max_safe_level(feature, cluster, finalized)
        floor = 1 if feature == MV else 0
        top = max(lv.level for lv in CATALOG.levels(feature)) + 2
        allowed = [
            level
            for level in range(floor, top)
            if can_finalize(feature, level, cluster, finalized=finalized)
        ]
        assert best == (max(allowed) if allowed else None)
