"""A rolling upgrade from 2.8 to 3.0, seen through kafkacompat's coordinator lookups.

2.8 brokers answer FindCoordinator up to v3 (one key per request); 3.0 brought
v4 (KIP-699, batched keys).  Whatever the mix, every key must get the same
coordinator as on an all-3.0 cluster: the emulator places coordinators the
same way on every release, so any difference is the client's.
"""

from __future__ import annotations

from typing import Any

import trio

from kafkacompat.cluster.coordinator_lookup import CoordinatorLookup
from kafkacompat.protocol.messages import FindCoordinatorResponse
from kafkacompat.testing.emulator import EmulatedCluster, Request
from kafkacompat.testing.emulator.handlers import find_coordinator
from kafkacompat.transport.cluster import connect

KEYS = [f"group-{i}" for i in range(24)]


async def lookup(cluster: EmulatedCluster, keys: list[str] = KEYS) -> CoordinatorLookup:
    with trio.fail_after(20):
        async with connect(cluster.bootstrap) as client:
            return await client.find_coordinators(keys)


def placement(result: CoordinatorLookup) -> dict[str, int]:
    assert not result.failed, result.failed
    return {key: found.node_id for key, found in result.found.items()}


def find_coordinator_versions(cluster: EmulatedCluster) -> dict[int, set[int]]:
    used: dict[int, set[int]] = {}
    for record in cluster.requests:
        if record.api_key == 10:
            used.setdefault(record.node_id, set()).add(record.api_version)
    return used


async def test_lookups_batch_on_30_and_match_an_all_30_cluster(emulated_cluster: object) -> None:
    reference: EmulatedCluster = await emulated_cluster(["3.0", "3.0", "3.0"])  # type: ignore[operator]
    expected = placement(await lookup(reference))
    assert len(set(expected.values())) == 3

    cluster: EmulatedCluster = await emulated_cluster(["2.8", "2.8", "2.8"])  # type: ignore[operator]
    before = await lookup(cluster)
    assert placement(before) == expected
    assert not before.batched and before.versions == (3,) and before.requests == len(KEYS)

    for step, node_id in enumerate((2, 3, 1), start=1):
        cluster.upgrade(node_id, "3.0")  # restart one broker as 3.0
        during = await lookup(cluster)
        assert placement(during) == expected, f"after upgrading {step} broker(s)"
        assert during.batched and during.versions == (4,) and during.requests == 1
    # Batches went only to brokers that had been upgraded when they were asked.
    for node_id, versions in find_coordinator_versions(cluster).items():
        assert 4 not in versions or cluster.broker(node_id).profile.release == "3.0"


async def test_keys_that_are_loading_are_asked_again(emulated_cluster: object) -> None:
    asked: dict[str, int] = {}
    loading = {"group-3", "group-7", "group-11"}

    def first_time_loading(request: Request) -> FindCoordinatorResponse:
        response = find_coordinator(request)
        assert isinstance(response, FindCoordinatorResponse)
        answers: list[Any] = list(response.coordinators) if request.version >= 4 else [response]
        keys = request.body.coordinator_keys if request.version >= 4 else [request.body.key]  # type: ignore[attr-defined]
        for key, answer in zip(keys, answers, strict=True):
            asked[key] = asked.get(key, 0) + 1
            if key in loading and asked[key] == 1:
                answer.error_code, answer.node_id, answer.host, answer.port = 14, -1, "", -1
        return response

    reference: EmulatedCluster = await emulated_cluster(["3.0", "3.0", "3.0"])  # type: ignore[operator]
    expected = placement(await lookup(reference))
    mixed: EmulatedCluster = await emulated_cluster(  # type: ignore[operator]
        ["2.8", "3.0", "3.0"], handlers={10: first_time_loading}
    )
    result = await lookup(mixed)
    assert placement(result) == expected
    assert result.rounds == 2 and result.batched
    assert {key for key, count in asked.items() if count == 2} == loading


async def test_an_all_28_cluster_falls_back_to_one_key_per_request(emulated_cluster: object) -> None:
    cluster: EmulatedCluster = await emulated_cluster(["2.8", "2.8"], coordinator_errors={"denied": 30})  # type: ignore[operator]
    result = await lookup(cluster, ["a", "b", "denied"])
    assert not result.batched and result.requests == 3
    assert set(result.found) == {"a", "b"}
    assert result.failed["denied"].error_code == 30 and not result.failed["denied"].retriable
    used = find_coordinator_versions(cluster)
    assert used and all(versions == {3} for versions in used.values())


async def test_a_broker_refusing_the_batches_it_advertises_gets_one_key_per_request(
    emulated_cluster: object,
) -> None:
    """KAFKA-13029 from the other side: advertised v4, answered UNSUPPORTED_VERSION to every batch."""

    def refuse_batches(request: Request) -> FindCoordinatorResponse:
        response = find_coordinator(request)
        assert isinstance(response, FindCoordinatorResponse)
        if request.version >= 4:
            for entry in response.coordinators:
                entry.error_code, entry.node_id, entry.host, entry.port = 35, -1, "", -1
        return response

    reference: EmulatedCluster = await emulated_cluster(["3.0", "3.0"])  # type: ignore[operator]
    expected = placement(await lookup(reference))
    cluster: EmulatedCluster = await emulated_cluster(  # type: ignore[operator]
        ["3.0", "3.0"], handlers={10: refuse_batches}
    )
    result = await lookup(cluster)
    assert placement(result) == expected
    # Each broker is given one batch; once both refused, one request per key.
    assert result.rounds == 3 and result.batched_requests == 2 and result.requests == 2 + len(KEYS)
    assert result.versions == (3, 4)
    assert len([note for note in result.notes if "refused FindCoordinator v4" in note]) == 2
