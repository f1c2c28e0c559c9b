"""The FindCoordinator planner (KIP-699) and the per-key reading of its answers."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from kafkacompat.errors import NegotiationError, UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.coordinators import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_BATCH,
    CoordinatorKeyType,
    CoordinatorPlan,
    CoordinatorResults,
    PlannedLookup,
    plan_coordinator_lookups,
    read_coordinator_responses,
    replan,
)
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

GROUP, TXN, SHARE = CoordinatorKeyType.GROUP, CoordinatorKeyType.TRANSACTION, CoordinatorKeyType.SHARE
Coordinator = FindCoordinatorResponse.Coordinator


def broker(label: str, find_coordinator: str, node_id: int | None = None) -> BrokerCapabilities:
    return BrokerCapabilities.from_ranges(label, {10: find_coordinator, 3: "0-12"}, node_id=node_id)


def groups(count: int) -> list[str]:
    return [f"group-{i:04d}" for i in range(count)]


def assert_valid_on_the_wire(plan: CoordinatorPlan) -> None:
    """Every planned request encodes at its version and reads back with the same keys."""
    for planned in plan.requests:
        body = planned.encode()
        back = FindCoordinatorRequest.decode(body, planned.version)
        if planned.batched:
            assert back.coordinator_keys == list(planned.keys)
            assert back.key_type == planned.key_type
        else:
            assert [back.key] == list(planned.keys)
            assert back.key_type == (planned.key_type if planned.version >= 1 else 0)


def over_the_wire(planned: PlannedLookup, response: FindCoordinatorResponse) -> FindCoordinatorResponse:
    """The response as a broker would send it at the planned version, decoded by the codec."""
    return FindCoordinatorResponse.decode(response.encode(planned.version), planned.version)


def found(key: str, node_id: int = 1) -> Coordinator:
    return Coordinator(key=key, node_id=node_id, host=f"broker{node_id}", port=9092)


def error(key: str, code: int, message: str | None = None) -> Coordinator:
    return Coordinator(key=key, node_id=-1, host="", port=-1, error_code=code, error_message=message)


# -- planning -----------------------------------------------------------------------------


def test_all_v4_cluster_batches_and_splits_large_key_sets() -> None:
    brokers = [broker("a:9092", "0-6"), broker("b:9092", "0-6")]
    plan = plan_coordinator_lookups(groups(1000), GROUP, brokers, max_batch=300)
    assert plan.destination == "a:9092" and plan.version == 6
    assert [len(r.keys) for r in plan.requests] == [300, 300, 300, 100]
    assert plan.keys == tuple(groups(1000))
    assert all(r.batched and r.destination == "a:9092" for r in plan.requests)
    assert "4 batched request(s)" in plan.reason
    assert_valid_on_the_wire(plan)


def test_default_batch_size() -> None:
    plan = plan_coordinator_lookups(groups(1000), GROUP, [broker("a:1", "0-4")])
    assert DEFAULT_MAX_BATCH == 500
    assert [len(r.keys) for r in plan.requests] == [500, 500]
    assert plan.version == 4
    assert_valid_on_the_wire(plan)


def test_no_v4_cluster_sends_one_request_per_key() -> None:
    plan = plan_coordinator_lookups(["g1", "g2", "g3"], GROUP, [broker("a:1", "0-3")])
    assert plan.version == 3 and len(plan.requests) == 3
    assert [r.keys for r in plan.requests] == [("g1",), ("g2",), ("g3",)]
    assert not any(r.batched for r in plan.requests)
    assert "single-key" in plan.reason
    assert_valid_on_the_wire(plan)


def test_v0_only_broker_takes_group_keys_in_the_v0_shape() -> None:
    plan = plan_coordinator_lookups(["g1", "g2"], GROUP, [broker("old:9092", "0")])
    assert plan.version == 0
    assert [r.request.key for r in plan.requests] == ["g1", "g2"]
    assert_valid_on_the_wire(plan)


def test_transactional_ids_need_v1() -> None:
    with pytest.raises(UnsupportedVersionError) as caught:
        plan_coordinator_lookups(["txn-1"], TXN, [broker("old:9092", "0")])
    assert "transaction keys need FindCoordinator v1+" in str(caught.value)
    assert caught.value.node == "old:9092"
    plan = plan_coordinator_lookups(["txn-1"], TXN, [broker("old:9092", "0"), broker("z:1", "0-2")])
    assert plan.destination == "z:1" and plan.version == 2
    assert plan.requests[0].request.key_type == TXN
    assert_valid_on_the_wire(plan)


def test_share_keys_need_v6() -> None:
    with pytest.raises(UnsupportedVersionError, match="v6"):
        plan_coordinator_lookups(["share:t:0"], SHARE, [broker("a:1", "0-5")])
    plan = plan_coordinator_lookups(["share:t:0"], SHARE, [broker("a:1", "0-5"), broker("b:1", "0-6")])
    assert plan.destination == "b:1" and plan.version == 6
    assert_valid_on_the_wire(plan)


def test_mixed_cluster_sends_the_batch_to_a_v4_broker() -> None:
    brokers = [broker("a:1", "0-3"), broker("b:1", "0-4", node_id=2), broker("c:1", "0-2")]
    plan = plan_coordinator_lookups(groups(10), GROUP, brokers)
    assert plan.destination == "b:1" and plan.version == 4 and len(plan.requests) == 1
    assert plan.requests[0].destination_node_id == 2
    assert [c.node for c in plan.choices] == ["a:1", "b:1", "c:1"]
    assert_valid_on_the_wire(plan)


def test_destination_choice_is_deterministic() -> None:
    brokers = [broker(f"n{i}:9092", "0-4") for i in range(5)] + [broker("z:9092", "0-5")]
    destinations = set()
    for seed in range(10):
        shuffled = brokers[:]
        random.Random(seed).shuffle(shuffled)
        destinations.add(plan_coordinator_lookups(groups(3), GROUP, shuffled).destination)
    assert destinations == {"z:9092"}  # highest version first, then the label
    tie = [broker("m:1", "0-4"), broker("c:1", "0-4"), broker("x:1", "0-4")]
    assert plan_coordinator_lookups(["g"], GROUP, tie).destination == "c:1"


def test_prefer_is_honoured_among_equally_good_shapes() -> None:
    brokers = [broker("a:1", "0-6"), broker("b:1", "0-4"), broker("c:1", "0-3")]
    assert plan_coordinator_lookups(["g"], GROUP, brokers, prefer="b:1").destination == "b:1"
    not_batching = plan_coordinator_lookups(["g"], GROUP, brokers, prefer="c:1")
    assert not_batching.destination == "a:1"
    assert "preferred c:1 not used" in not_batching.reason
    unknown = plan_coordinator_lookups(["g"], GROUP, brokers, prefer="gone:1")
    assert unknown.destination == "a:1" and "not among the brokers given" in unknown.reason
    old_only = [broker("c:1", "0-3"), broker("d:1", "0-2")]
    assert plan_coordinator_lookups(["g"], GROUP, old_only, prefer="d:1").destination == "d:1"


def test_policy_decides_batching_too() -> None:
    brokers = [broker("a:1", "0-6")]
    capped = plan_coordinator_lookups(groups(3), GROUP, brokers, policy=VersionPolicy(caps={10: 3}))
    assert capped.version == 3 and len(capped.requests) == 3
    pinned = plan_coordinator_lookups(groups(3), GROUP, brokers, policy=VersionPolicy(pins={10: 4}))
    assert pinned.version == 4 and len(pinned.requests) == 1
    assert_valid_on_the_wire(capped)
    assert_valid_on_the_wire(pinned)


def test_batching_is_decided_per_plan_never_sticky() -> None:
    """KAFKA-13029: an old broker seen once must not stop batching on an upgraded one."""
    before = plan_coordinator_lookups(groups(4), GROUP, [broker("a:1", "0-3")])
    after_upgrade = plan_coordinator_lookups(groups(4), GROUP, [broker("a:1", "0-4")])
    after_downgrade = plan_coordinator_lookups(groups(4), GROUP, [broker("a:1", "0-3")])
    assert [len(p.requests) for p in (before, after_upgrade, after_downgrade)] == [4, 1, 4]
    assert [p.version for p in (before, after_upgrade, after_downgrade)] == [3, 4, 3]


def test_keys_are_deduplicated_in_order_and_inputs_checked() -> None:
    plan = plan_coordinator_lookups(["b", "a", "b", "c", "a"], GROUP, [broker("a:1", "0-4")])
    assert plan.keys == ("b", "a", "c")
    empty = plan_coordinator_lookups([], GROUP, [])
    assert empty.requests == () and empty.destination is None
    with pytest.raises(TypeError):
        plan_coordinator_lookups("group", GROUP, [broker("a:1", "0-4")])
    with pytest.raises(ValueError):
        plan_coordinator_lookups(["g"], GROUP, [broker("a:1", "0-4")], max_batch=0)
    with pytest.raises(ValueError):
        plan_coordinator_lookups(["g"], 7, [broker("a:1", "0-4")])
    with pytest.raises(NegotiationError):
        plan_coordinator_lookups(["g"], GROUP, [])


# -- reading answers ----------------------------------------------------------------------


def test_batched_answer_with_every_kind_of_per_key_outcome() -> None:
    plan = plan_coordinator_lookups(
        ["ok", "loading", "unavailable", "moved", "denied", "strange", "silent"],
        GROUP, [broker("a:1", "0-6")],
    )
    (planned,) = plan.requests
    response = FindCoordinatorResponse(coordinators=[
        found("ok", node_id=3),
        error("loading", 14),
        error("unavailable", 15, "no coordinator yet"),
        error("moved", 16),
        error("denied", 30, "not allowed to see the group"),
        error("strange", 999),
        found("not-asked"),
    ])
    results = read_coordinator_responses(plan, [(planned, over_the_wire(planned, response))])
    assert results.found["ok"].node_id == 3 and results.found["ok"].host == "broker3"
    assert results.found["ok"].answered_by == "a:1"
    assert results.retry == {"loading", "unavailable", "moved", "silent"}
    assert results.last_error["loading"].error_name == "COORDINATOR_LOAD_IN_PROGRESS"
    assert results.last_error["unavailable"].message == "no coordinator yet"
    assert results.last_error["moved"].error_name == "NOT_COORDINATOR"
    assert results.last_error["silent"].error_name == "NOT_ANSWERED"
    assert results.failed["denied"].error_name == "GROUP_AUTHORIZATION_FAILED"
    assert results.failed["denied"].message == "not allowed to see the group"
    assert not results.failed["denied"].retriable
    assert results.failed["strange"].error_name == "UNKNOWN_CODE_999"
    assert any("'not-asked'" in note for note in results.notes)
    assert not results.settled and results.outstanding == ()


def test_single_key_answers_carry_a_top_level_error() -> None:
    plan = plan_coordinator_lookups(["g1", "g2", "g3"], GROUP, [broker("a:1", "0-3")])
    answers = [
        FindCoordinatorResponse(node_id=5, host="broker5", port=9093),
        FindCoordinatorResponse(error_code=15, error_message="not yet", node_id=-1, port=-1),
        FindCoordinatorResponse(error_code=30, error_message=None, node_id=-1, port=-1),
    ]
    pairs = [(p, over_the_wire(p, a)) for p, a in zip(plan.requests, answers, strict=True)]
    results = read_coordinator_responses(plan, pairs)
    assert results.found["g1"].port == 9093
    assert results.retry == {"g2"} and results.last_error["g2"].message == "not yet"
    assert results.failed["g3"].error_name == "GROUP_AUTHORIZATION_FAILED"
    assert results.failed["g3"].message  # the table's wording stands in for a null message


def test_v0_answers_are_read_too() -> None:
    plan = plan_coordinator_lookups(["g"], GROUP, [broker("old:1", "0")])
    (planned,) = plan.requests
    answer = over_the_wire(planned, FindCoordinatorResponse(node_id=1, host="h", port=9092))
    assert read_coordinator_responses(plan, [(planned, answer)]).found["g"].host == "h"


def test_no_error_but_no_coordinator_is_retried() -> None:
    plan = plan_coordinator_lookups(["g"], GROUP, [broker("a:1", "0-4")])
    (planned,) = plan.requests
    response = FindCoordinatorResponse(coordinators=[Coordinator(key="g", node_id=-1, port=-1)])
    results = read_coordinator_responses(plan, [(planned, over_the_wire(planned, response))])
    assert results.last_error["g"].error_name == "NO_COORDINATOR_GIVEN"


UNUSABLE = [("a..b", 9092), ("evil\x00host", 9092), ("b", 70000), ("x" * 300, 1)]


@pytest.mark.parametrize(("host", "port"), UNUSABLE)
def test_an_unusable_coordinator_address_is_a_failure_naming_the_sender(host: str, port: int) -> None:
    plan = plan_coordinator_lookups(["g"], GROUP, [broker("a:1", "0-4")])
    (planned,) = plan.requests
    response = FindCoordinatorResponse(coordinators=[Coordinator(key="g", node_id=3, host=host, port=port)])
    results = read_coordinator_responses(plan, [(planned, over_the_wire(planned, response))])
    failure = results.failed["g"]
    assert failure.error_name == "INVALID_ADDRESS" and not failure.retriable and "g" not in results.found
    assert "FindCoordinator from a:1" in failure.message and "\x00" not in failure.message


def test_a_failed_or_missing_send_retries_its_keys_only() -> None:
    plan = plan_coordinator_lookups(groups(6), GROUP, [broker("a:1", "0-4")], max_batch=2)
    first, second, third = plan.requests
    ok = FindCoordinatorResponse(coordinators=[found(k) for k in first.keys])
    results = read_coordinator_responses(
        plan, [(first, over_the_wire(first, ok)), (second, ConnectionResetError("reset"))]
    )
    assert set(results.found) == set(first.keys)
    assert results.retry == set(second.keys) | set(third.keys)
    assert "ConnectionResetError" in results.last_error[second.keys[0]].message
    assert results.last_error[third.keys[0]].error_name == "NO_RESPONSE"


def test_outstanding_requests_are_tracked() -> None:
    plan = plan_coordinator_lookups(groups(4), GROUP, [broker("a:1", "0-4")], max_batch=2)
    results = CoordinatorResults(GROUP)
    results.expect(plan)
    assert results.outstanding == plan.requests and not results.settled
    first = plan.requests[0]
    results.read(first, FindCoordinatorResponse(coordinators=[found(k) for k in first.keys]))
    results.read_failure(plan.requests[1], "timed out")
    assert results.outstanding == () and results.retry == set(plan.requests[1].keys)
    with pytest.raises(ValueError, match="GROUP"):
        results.read_failure(
            plan_coordinator_lookups(["t"], TXN, [broker("a:1", "0-4")]).requests[0], "x"
        )


# -- the driver loop ----------------------------------------------------------------------

Answer = Callable[[str, int], Coordinator | None]


def drive(
    keys: Sequence[str], brokers: Sequence[BrokerCapabilities], answer: Answer, rounds: int = 20
) -> tuple[CoordinatorResults, int]:
    """plan -> send (answer(key, round) per key; None leaves it out) -> read -> replan."""
    plan = plan_coordinator_lookups(keys, GROUP, brokers)
    results = CoordinatorResults(GROUP)
    for round_number in range(rounds):
        if not plan.requests:
            return results, round_number
        pairs = []
        for planned in plan.requests:
            entries = [e for k in planned.keys if (e := answer(k, round_number)) is not None]
            if planned.batched:
                response = FindCoordinatorResponse(coordinators=entries)
            elif entries:  # the v0-v3 shape: the one key's answer at the top level
                (e,) = entries
                response = FindCoordinatorResponse(
                    error_code=e.error_code, error_message=e.error_message,
                    node_id=e.node_id, host=e.host, port=e.port,
                )
            else:
                continue  # no answer at all: read_coordinator_responses retries the key
            pairs.append((planned, over_the_wire(planned, response)))
        read_coordinator_responses(plan, pairs, results=results)
        plan = replan(results, brokers)
    raise AssertionError("the loop did not settle")


def test_driver_loop_settles_after_transient_errors() -> None:
    def answer(key: str, round_number: int) -> Coordinator:
        return error(key, 14) if round_number < 2 and key.endswith("7") else found(key)

    results, rounds = drive(groups(50), [broker("a:1", "0-4")], answer)
    assert len(results.found) == 50 and results.settled and rounds == 3
    assert results.attempts["group-0007"] == 3 and results.attempts["group-0001"] == 1


def test_a_key_answered_nowhere_fails_after_bounded_attempts() -> None:
    def answer(key: str, round_number: int) -> Coordinator | None:
        return None if key == "group-0002" else found(key)

    results, rounds = drive(groups(5), [broker("a:1", "0-4")], answer)
    assert rounds == DEFAULT_MAX_ATTEMPTS
    failure = results.failed["group-0002"]
    assert failure.retriable and failure.error_name == "NOT_ANSWERED"
    assert failure.attempts == DEFAULT_MAX_ATTEMPTS and "gave up" in failure.message
    assert len(results.found) == 4 and results.settled


def test_retriable_errors_are_bounded_too() -> None:
    results, _ = drive(["g"], [broker("a:1", "0-3")], lambda key, _: error(key, 15))
    assert results.failed["g"].error_name == "COORDINATOR_NOT_AVAILABLE"
    assert results.failed["g"].attempts == DEFAULT_MAX_ATTEMPTS


def test_replan_follows_the_brokers_as_they_are_now() -> None:
    plan = plan_coordinator_lookups(groups(3), GROUP, [broker("a:1", "0-4")])
    (planned,) = plan.requests
    response = FindCoordinatorResponse(coordinators=[error(k, 16) for k in planned.keys])
    results = read_coordinator_responses(plan, [(planned, response)], max_attempts=3)
    downgraded = replan(results, [broker("a:1", "0-3")])
    assert downgraded.version == 3 and downgraded.keys == tuple(sorted(groups(3)))
    assert len(downgraded.requests) == 3
    assert results.max_attempts == 3


def test_a_broker_refusing_the_batch_it_advertised_gets_single_key_requests() -> None:
    """KAFKA-13029: a batched answer of UNSUPPORTED_VERSION switches that broker, for this lookup."""
    stale = broker("a:1", "0-4")  # advertises v4 (a stale answer, or a proxy in front of 2.8)

    def answer(key: str, round_number: int) -> Coordinator:
        return error(key, 35) if round_number == 0 else found(key)

    results, rounds = drive(groups(5), [stale], answer)
    assert rounds == 2 and len(results.found) == 5 and results.settled
    assert results.refused_batching == {"a:1"}
    assert any("refused FindCoordinator v4" in note for note in results.notes)
    assert results.attempts["group-0003"] == 2


def test_only_the_refusing_broker_loses_batching() -> None:
    brokers = [broker("a:1", "0-4"), broker("b:1", "0-4")]
    plan = plan_coordinator_lookups(groups(3), GROUP, brokers)
    (planned,) = plan.requests
    assert planned.destination == "a:1" and planned.batched
    response = FindCoordinatorResponse(coordinators=[error(k, 35) for k in planned.keys])
    results = read_coordinator_responses(plan, [(planned, over_the_wire(planned, response))])
    again = replan(results, brokers)
    assert again.destination == "b:1" and again.version == 4 and len(again.requests) == 1
    alone = replan(results, [broker("a:1", "0-4")])
    assert alone.version == 3 and len(alone.requests) == 3  # one per key, to the refusing broker


def test_unsupported_version_on_a_single_key_request_is_final() -> None:
    results, _ = drive(["g"], [broker("a:1", "0-3")], lambda key, _: error(key, 35))
    assert results.failed["g"].error_name == "UNSUPPORTED_VERSION" and not results.failed["g"].retriable
    assert results.refused_batching == frozenset()


def test_single_key_requests_without_an_answer_are_bounded() -> None:
    def answer(key: str, round_number: int) -> Coordinator | None:
        return None if key == "g2" else found(key)

    results, rounds = drive(["g1", "g2"], [broker("a:1", "0-3")], answer)
    assert rounds == DEFAULT_MAX_ATTEMPTS
    assert results.failed["g2"].error_name == "NO_RESPONSE" and "g1" in results.found


def test_group_keys_against_brokers_without_find_coordinator() -> None:
    brokers = [BrokerCapabilities.from_ranges("a:1", {3: "0-12"}), broker("b:1", "7-9")]
    with pytest.raises(UnsupportedVersionError) as caught:
        plan_coordinator_lookups(["g"], GROUP, brokers)
    text = str(caught.value)
    assert "no broker can look up group coordinators" in text and "v0+" not in text
    assert "a:1 does not list FindCoordinator" in text and "b:1 answers 7-9" in text
    assert caught.value.node is None
