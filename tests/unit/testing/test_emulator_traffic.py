"""The emulator's client traffic: every advertised API answered, and the state behind the answers."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from kafkacompat.protocol import framing, messages
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    EndTxnRequest,
    FetchRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
    SyncGroupRequest,
)
from kafkacompat.protocol.removals import refused_by
from kafkacompat.testing.emulator import release_profiles
from kafkacompat.testing.emulator.logs import MAX_PARTITION_BYTES, PartitionLog
from tests.unit.testing.emulator_harness import Close, Harness, Send, cluster, decode

SASL = {17, 36}


def _request_class(api_key: int) -> type[KafkaMessage]:
    return getattr(messages, messages.CLASS_BY_KEY[(api_key, "request")])  # type: ignore[no-any-return]


@pytest.mark.parametrize("profile", release_profiles(), ids=lambda p: f"{p.release}/{p.kind}")
def test_every_advertised_api_and_version_the_codec_reads_is_answered(profile: object) -> None:
    state = cluster(profile, topics={"orders": 2})  # type: ignore[arg-type]
    node = state.nodes[1]
    unanswered = []
    for api_key, versions in sorted(node.profile.apis.items()):
        if (api_key, "request") not in messages.CLASS_BY_KEY or api_key in SASL:
            continue
        cls = _request_class(api_key)
        for version in range(versions.lowest, versions.highest + 1):
            if version not in cls.VALID_VERSIONS:
                continue  # the codec's own limit: the connection closes and says so
            harness = Harness(state)
            actions = harness.send(cls(), version)
            if refused_by(node.profile.release, api_key, version) is not None:
                # advertised but refused by 4.x (Produce v0-2, KAFKA-18659): closed, as Kafka does
                assert actions == [Close()], (api_key, version, actions)
                continue
            if api_key == 0:  # a default Produce has acks=0: Kafka sends nothing
                assert actions == [] and harness.records[-1].outcome.startswith("answered")
                continue
            if len(actions) != 1 or not isinstance(actions[0], Send):
                unanswered.append((api_key, version, harness.records[-1].outcome))
                continue
            decode(actions[0].data, cls(), version, harness.correlation_id)
    assert unanswered == []


def _batch(records: int, payload: bytes = b"x") -> bytes:
    """A minimal v2 record batch header followed by ``payload`` (the emulator reads the framing only)."""
    body = struct.pack(">ibIhi", 0, 2, 0, 0, records - 1) + payload
    return struct.pack(">qi", 0, len(body)) + body


def _produce(harness: Harness, topic: str, partition: int, records: bytes, version: int = 7) -> Any:
    return harness.call(
        ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)],
                )
            ],
        ),
        version,
    )


def test_produced_batches_get_offsets_and_come_back_on_fetch() -> None:
    harness = Harness(cluster("3.9", topics={"orders": 2}))
    first = _produce(harness, "orders", 1, _batch(3))
    second = _produce(harness, "orders", 1, _batch(2, b"yy"))
    assert [
        first.responses[0].partition_responses[0].base_offset,
        second.responses[0].partition_responses[0].base_offset,
    ] == [0, 3]
    fetched = harness.call(
        FetchRequest(
            max_bytes=1 << 20,
            topics=[
                FetchRequest.FetchTopic(
                    topic="orders",
                    partitions=[
                        FetchRequest.FetchPartition(partition=1, fetch_offset=3, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        ),
        11,
    )
    row = fetched.responses[0].partitions[0]
    assert row.error_code == 0 and row.high_watermark == 5
    assert struct.unpack_from(">q", row.records)[0] == 3 and row.records.endswith(b"yy")
    offsets = harness.call(
        ListOffsetsRequest(
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="orders",
                    partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=1, timestamp=-1)],
                )
            ]
        ),
        5,
    )
    assert offsets.topics[0].partitions[0].offset == 5


def test_produce_to_an_unknown_partition_and_garbage_records_get_errors() -> None:
    harness = Harness(cluster("3.9", topics={"orders": 1}))
    unknown = _produce(harness, "orders", 4, _batch(1))
    assert unknown.responses[0].partition_responses[0].error_code == 3
    garbage = _produce(harness, "orders", 0, b"\x00\x00\x00")
    assert garbage.responses[0].partition_responses[0].error_code == 2


def test_produce_with_acks_zero_is_never_answered() -> None:
    harness = Harness(cluster("2.3", topics={"orders": 1}))
    frame = framing.encode_request(ProduceRequest(acks=0, topic_data=[]), 7, 1, "c")
    assert harness.connection.receive(frame) == []
    assert harness.call(MetadataRequest(topics=[]), 1).brokers  # the connection stays open


def test_a_partition_log_keeps_bounded_memory() -> None:
    log = PartitionLog()
    for _ in range(10):
        log.append(_batch(1, b"z" * (MAX_PARTITION_BYTES // 4)))
    assert log.size <= MAX_PARTITION_BYTES and log.end == 10 and log.start > 0


def test_a_consumer_group_joins_syncs_commits_and_is_deleted_after_it_leaves() -> None:
    harness = Harness(cluster("3.9", topics={"orders": 1}))
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"meta")
    join = JoinGroupRequest(
        group_id="g", session_timeout_ms=10000, protocol_type="consumer", protocols=[protocol]
    )
    required = harness.call(join, 5)
    assert required.error_code == 79 and required.member_id  # MEMBER_ID_REQUIRED (KIP-394)
    join.member_id = required.member_id
    joined = harness.call(join, 5)
    assert joined.error_code == 0 and joined.leader == joined.member_id and joined.generation_id == 1
    assert [m.metadata for m in joined.members] == [b"meta"]
    sync = harness.call(
        SyncGroupRequest(
            group_id="g",
            generation_id=1,
            member_id=joined.member_id,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"plan")
            ],
        ),
        3,
    )
    assert sync.error_code == 0 and sync.assignment == b"plan"
    assert harness.call(HeartbeatRequest(group_id="g", member_id=joined.member_id), 3).error_code == 0
    assert harness.call(HeartbeatRequest(group_id="g", member_id="stranger"), 3).error_code == 25
    harness.call(
        OffsetCommitRequest(
            group_id="g",
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name="orders",
                    partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(committed_offset=42)],
                )
            ],
        ),
        7,
    )
    fetched = harness.call(OffsetFetchRequest(group_id="g", topics=None), 7)
    assert [(t.name, p.committed_offset) for t in fetched.topics for p in t.partitions] == [("orders", 42)]
    described = harness.call(DescribeGroupsRequest(groups=["g", "nobody"]), 5)
    assert [(g.group_state, len(g.members)) for g in described.groups] == [("Stable", 1), ("Dead", 0)]
    assert harness.call(DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == 68
    harness.call(
        LeaveGroupRequest(
            group_id="g", members=[LeaveGroupRequest.MemberIdentity(member_id=joined.member_id)]
        ),
        3,
    )
    deleted = harness.call(DeleteGroupsRequest(groups_names=["g", "g"]), 2)
    assert [r.error_code for r in deleted.results] == [0, 69]


def test_a_transaction_gets_a_producer_id_and_ends_with_a_bumped_epoch_on_v5() -> None:
    harness = Harness(cluster("4.0/kraft-broker", topics={"orders": 1}))
    first = harness.call(InitProducerIdRequest(transactional_id="t", transaction_timeout_ms=1000), 4)
    again = harness.call(InitProducerIdRequest(transactional_id="t", transaction_timeout_ms=1000), 4)
    assert (again.producer_id, again.producer_epoch) == (first.producer_id, first.producer_epoch + 1)
    added = harness.call(
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="t",
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="orders", partitions=[0])
            ],
        ),
        3,
    )
    assert [
        (p.partition_index, p.partition_error_code)
        for p in added.results_by_topic_v3_and_below[0].results_by_partition
    ] == [(0, 0)]
    ended = harness.call(
        EndTxnRequest(
            transactional_id="t",
            producer_id=again.producer_id,
            producer_epoch=again.producer_epoch,
            committed=True,
        ),
        5,
    )
    assert ended.error_code == 0 and ended.producer_epoch == again.producer_epoch + 1


def test_create_topics_adds_a_topic_metadata_then_lists() -> None:
    harness = Harness(cluster("3.9"))
    created = harness.call(
        CreateTopicsRequest(
            topics=[CreateTopicsRequest.CreatableTopic(name="fresh", num_partitions=3, replication_factor=1)]
        ),
        5,
    )
    assert created.topics[0].error_code == 0
    again = harness.call(
        CreateTopicsRequest(
            topics=[CreateTopicsRequest.CreatableTopic(name="fresh", num_partitions=3, replication_factor=1)]
        ),
        5,
    )
    assert again.topics[0].error_code == 36
    listed = harness.call(MetadataRequest(topics=None), 9)
    assert [(t.name, len(t.partitions)) for t in listed.topics] == [("fresh", 3)]


def _populated_requests() -> list[KafkaMessage]:
    """One request per modelled API with every list filled, so every field of the answer is set."""
    topic, group = "orders", "g"
    return [
        ProduceRequest(
            acks=-1,
            timeout_ms=1000,
            transactional_id=None,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[ProduceRequest.PartitionProduceData(index=0, records=_batch(1))],
                )
            ],
        ),
        FetchRequest(
            max_bytes=1 << 20,
            topics=[
                FetchRequest.FetchTopic(
                    topic=topic,
                    partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=1 << 20)],
                )
            ],
        ),
        ListOffsetsRequest(
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)],
                )
            ]
        ),
        JoinGroupRequest(
            group_id=group,
            member_id="m",
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"x")],
        ),
        OffsetFetchRequest(
            group_id=group,
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
            groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)],
        ),
        DescribeGroupsRequest(groups=[group]),
        CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name="new", num_partitions=1)]),
        EndTxnRequest(transactional_id="t", producer_id=5, producer_epoch=1, committed=True),
        LeaveGroupRequest(
            group_id=group, member_id="m", members=[LeaveGroupRequest.MemberIdentity(member_id="m")]
        ),
        InitProducerIdRequest(transactional_id="t"),
    ]


@pytest.mark.parametrize("release", ["2.3", "3.9", "4.0/kraft-broker", "4.2/kraft-broker"])
def test_modelled_answers_fit_every_version_even_with_every_field_set(release: str) -> None:
    from kafkacompat.testing.emulator.fallback import fit_to_version

    state = cluster(release, topics={"orders": 1})
    answered = 0
    for request in _populated_requests():
        assert request.API_KEY is not None
        versions = state.nodes[1].profile.apis.get(request.API_KEY)
        if versions is None:
            continue
        for version in range(versions.lowest, versions.highest + 1):
            if version not in type(request).VALID_VERSIONS:
                continue
            if refused_by(state.nodes[1].profile.release, request.API_KEY, version) is not None:
                continue  # closed on, as the test above shows
            fit_to_version(request, version)
            reply = Harness(state).call(request, version)
            assert reply is not None
            answered += 1
    assert answered > 40
