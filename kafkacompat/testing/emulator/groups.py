"""Consumer groups, committed offsets and transactions of the emulated cluster.

Theory.  A consumer in a group talks to its coordinator: JoinGroup, SyncGroup,
Heartbeat, OffsetCommit, OffsetFetch, LeaveGroup; an admin adds DescribeGroups,
ListGroups and DeleteGroups; a transactional producer InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.  The emulator
keeps the least state that lets that traffic run and be checked:

- A join completes at once (the emulator has no rebalance delay): the member
  gets an id (Kafka's shape, ``client_id-uuid``), the generation goes up, the
  first member still in the group leads and gets every member's metadata.
  SyncGroup from the leader stores the assignment; every member gets its own.
  From JoinGroup v4 (2.2, KIP-394) a join without a member id is answered
  MEMBER_ID_REQUIRED with the id to use, as Kafka does.
- Offsets are stored per (group, topic, partition), transactional ones when
  TxnOffsetCommit arrives (the emulator does not hold them until EndTxn).
- ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) answer
  UNSUPPORTED_VERSION where group.version is below 1, as Kafka's
  ``isConsumerGroupProtocolEnabled`` gate does whatever ApiVersions advertised;
  above it, the describe answers GROUP_ID_NOT_FOUND for every group (they are
  all classic here, Kafka's answer for a classic group) and clients fall back
  to DescribeGroups.
- DescribeGroups names an unknown group ``Dead`` (error 0 up to v5); from v6
  (KIP-1043, 4.0) it is GROUP_ID_NOT_FOUND.  DeleteGroups refuses a group with
  members (NON_EMPTY_GROUP) and an unknown one (GROUP_ID_NOT_FOUND).
- Producer ids count up from 1000; re-initialising a transactional id bumps its
  epoch.  EndTxn v5 (KIP-890) returns the bumped epoch.
"""

from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass, field

from kafkacompat.protocol.error_codes import BY_NAME, NONE
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    EndTxnRequest,
    EndTxnResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafkacompat.testing.emulator.handlers import Request
from kafkacompat.testing.emulator.state import ClusterState

__all__ = [
    "GroupState",
    "add_offsets_to_txn",
    "add_partitions_to_txn",
    "consumer_group_describe",
    "consumer_group_heartbeat",
    "delete_groups",
    "describe_groups",
    "end_txn",
    "heartbeat",
    "init_producer_id",
    "join_group",
    "leave_group",
    "list_groups",
    "offset_commit",
    "offset_fetch",
    "sync_group",
    "txn_offset_commit",
]

UNKNOWN_MEMBER_ID = BY_NAME["UNKNOWN_MEMBER_ID"].code
MEMBER_ID_REQUIRED = BY_NAME["MEMBER_ID_REQUIRED"].code
GROUP_ID_NOT_FOUND = BY_NAME["GROUP_ID_NOT_FOUND"].code
NON_EMPTY_GROUP = BY_NAME["NON_EMPTY_GROUP"].code
INVALID_GROUP_ID = BY_NAME["INVALID_GROUP_ID"].code
UNSUPPORTED_VERSION = BY_NAME["UNSUPPORTED_VERSION"].code
FIRST_PRODUCER_ID = 1000


@dataclass(slots=True)
class Member:
    member_id: str
    client_id: str
    group_instance_id: str | None
    metadata: bytes
    assignment: bytes = b""


@dataclass(slots=True)
class GroupState:
    """One group: members in join order, generation, protocol, committed offsets."""

    members: dict[str, Member] = field(default_factory=dict)
    generation: int = 0
    protocol_type: str = ""
    protocol_name: str = ""
    offsets: dict[tuple[str, int], tuple[int, str | None]] = field(default_factory=dict)

    @property
    def leader(self) -> str:
        return next(iter(self.members), "")

    @property
    def state_name(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass(slots=True)
class _Coordinator:
    groups: dict[str, GroupState] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)  # member ids given by MEMBER_ID_REQUIRED
    producers: dict[str, tuple[int, int]] = field(default_factory=dict)
    next_producer_id: int = FIRST_PRODUCER_ID


_COORDINATORS: weakref.WeakKeyDictionary[ClusterState, _Coordinator] = weakref.WeakKeyDictionary()


def _coordinator(state: ClusterState) -> _Coordinator:
    return _COORDINATORS.setdefault(state, _Coordinator())


def _group(request: Request, group_id: str, create: bool = True) -> GroupState | None:
    groups = _coordinator(request.state).groups
    if create:
        return groups.setdefault(group_id, GroupState())
    return groups.get(group_id)


# -- membership ----------------------------------------------------------------------------


def join_group(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, JoinGroupRequest)
    version, coordinator = request.version, _coordinator(request.state)
    if not body.group_id:
        return JoinGroupResponse(error_code=INVALID_GROUP_ID, generation_id=-1)
    member_id = body.member_id
    if not member_id:
        member_id = f"{request.client_id or 'client'}-{uuid.uuid4()}"
        if version >= 4 and body.group_instance_id is None:
            coordinator.pending.add(member_id)
            return JoinGroupResponse(error_code=MEMBER_ID_REQUIRED, generation_id=-1, member_id=member_id)
    group = _group(request, body.group_id)
    assert group is not None
    if member_id not in group.members and member_id not in coordinator.pending and body.member_id:
        return JoinGroupResponse(error_code=UNKNOWN_MEMBER_ID, generation_id=-1, member_id=member_id)
    coordinator.pending.discard(member_id)
    chosen = body.protocols[0] if body.protocols else None
    group.members[member_id] = Member(
        member_id, request.client_id or "", body.group_instance_id if version >= 5 else None,
        bytes(chosen.metadata) if chosen is not None else b"",
    )
    group.generation += 1
    group.protocol_type = body.protocol_type
    group.protocol_name = chosen.name if chosen is not None else ""
    response = JoinGroupResponse(
        generation_id=group.generation, protocol_type=group.protocol_type,
        protocol_name=group.protocol_name, leader=group.leader, member_id=member_id,
    )
    if member_id == group.leader:
        response.members = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
            )
            for m in group.members.values()
        ]
    return response


def sync_group(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, SyncGroupRequest)
    group = _group(request, body.group_id, create=False)
    if group is None or body.member_id not in group.members:
        return SyncGroupResponse(error_code=UNKNOWN_MEMBER_ID, assignment=b"")
    if body.member_id == group.leader:
        for given in body.assignments:
            if given.member_id in group.members:
                group.members[given.member_id].assignment = bytes(given.assignment)
    return SyncGroupResponse(
        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
        assignment=group.members[body.member_id].assignment,
    )


def heartbeat(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, HeartbeatRequest)
    group = _group(request, body.group_id, create=False)
    known = group is not None and body.member_id in group.members
    return HeartbeatResponse(error_code=NONE if known else UNKNOWN_MEMBER_ID)


def leave_group(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, LeaveGroupRequest)
    group = _group(request, body.group_id, create=False)
    leaving = [body.member_id] if request.version <= 2 else [m.member_id for m in body.members]
    results = []
    for member_id in leaving:
        gone = group is not None and group.members.pop(member_id, None) is not None
        results.append(LeaveGroupResponse.MemberResponse(
            member_id=member_id, error_code=NONE if gone else UNKNOWN_MEMBER_ID
        ))
    if request.version <= 2:
        return LeaveGroupResponse(error_code=results[0].error_code)
    return LeaveGroupResponse(members=results)


# -- offsets -------------------------------------------------------------------------------


def offset_commit(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, OffsetCommitRequest)
    group = _group(request, body.group_id)
    assert group is not None
    topics = []
    for topic in body.topics:
        rows = []
        for part in topic.partitions:
            committed = (part.committed_offset, part.committed_metadata)
            group.offsets[(topic.name, part.partition_index)] = committed
            rows.append(OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=part.partition_index))
        topics.append(OffsetCommitResponse.OffsetCommitResponseTopic(name=topic.name, partitions=rows))
    return OffsetCommitResponse(topics=topics)


def _fetched(
    group: GroupState | None, wanted: list[tuple[str, list[int]]] | None
) -> list[tuple[str, list[tuple[int, int, str | None]]]]:
    offsets = group.offsets if group is not None else {}
    if wanted is None:  # null topics (v2+): every committed offset of the group
        names = sorted({topic for topic, _ in offsets})
        wanted = [(name, sorted(p for t, p in offsets if t == name)) for name in names]
    return [
        (name, [(p, *offsets.get((name, p), (-1, ""))) for p in partitions]) for name, partitions in wanted
    ]


def offset_fetch(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, OffsetFetchRequest)
    if request.version >= 8:
        groups = []
        for asked in body.groups:
            wanted = (
                None if asked.topics is None else [(t.name, list(t.partition_indexes)) for t in asked.topics]
            )
            rows = _fetched(_group(request, asked.group_id, create=False), wanted)
            groups.append(OffsetFetchResponse.OffsetFetchResponseGroup(group_id=asked.group_id, topics=[
                OffsetFetchResponse.OffsetFetchResponseTopics(name=name, partitions=[
                    OffsetFetchResponse.OffsetFetchResponsePartitions(
                        partition_index=p, committed_offset=offset, metadata=meta, committed_leader_epoch=-1
                    )
                    for p, offset, meta in parts
                ])
                for name, parts in rows
            ]))
        return OffsetFetchResponse(groups=groups)
    wanted = None if body.topics is None else [(t.name, list(t.partition_indexes)) for t in body.topics]
    rows = _fetched(_group(request, body.group_id, create=False), wanted)
    return OffsetFetchResponse(topics=[
        OffsetFetchResponse.OffsetFetchResponseTopic(name=name, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=p, committed_offset=offset, metadata=meta, committed_leader_epoch=-1
            )
            for p, offset, meta in parts
        ])
        for name, parts in rows
    ])


# -- admin ---------------------------------------------------------------------------------


def describe_groups(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, DescribeGroupsRequest)
    described = []
    for group_id in body.groups:
        group = _group(request, group_id, create=False)
        row = DescribeGroupsResponse.DescribedGroup(group_id=group_id, group_state="Dead")
        if group is None and request.version >= 6:
            row.error_code = GROUP_ID_NOT_FOUND
        elif group is not None:
            row.group_state, row.protocol_type = group.state_name, group.protocol_type
            row.protocol_data = group.protocol_name
            row.members = [
                DescribeGroupsResponse.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                    client_host="/127.0.0.1", member_metadata=m.metadata, member_assignment=m.assignment,
                )
                for m in group.members.values()
            ]
        described.append(row)
    return DescribeGroupsResponse(groups=described)


def _consumer_protocol_enabled(request: Request) -> bool:
    """KIP-848's protocol is on where group.version is finalized at 1 or more."""
    return request.state.features_seen_by(request.node).levels.get("group.version", 0) >= 1


def consumer_group_heartbeat(request: Request) -> KafkaMessage:
    """Off (UNSUPPORTED_VERSION) below group.version 1; the emulator does not model KIP-848 groups."""
    code = NONE if _consumer_protocol_enabled(request) else UNSUPPORTED_VERSION
    return ConsumerGroupHeartbeatResponse(error_code=code, member_epoch=-1 if code else 0)


def consumer_group_describe(request: Request) -> KafkaMessage:
    """KIP-848's describe: off below group.version 1; every group here is a classic one (not found)."""
    body = request.body
    assert isinstance(body, ConsumerGroupDescribeRequest)
    enabled = _consumer_protocol_enabled(request)
    return ConsumerGroupDescribeResponse(groups=[
        ConsumerGroupDescribeResponse.DescribedGroup(
            group_id=group_id, error_code=GROUP_ID_NOT_FOUND if enabled else UNSUPPORTED_VERSION,
            error_message=f"Group {group_id} is not a consumer group." if enabled else None,
        )
        for group_id in body.group_ids
    ])


def list_groups(request: Request) -> KafkaMessage:
    groups = _coordinator(request.state).groups
    return ListGroupsResponse(groups=[
        ListGroupsResponse.ListedGroup(
            group_id=name, protocol_type=group.protocol_type, group_state=group.state_name,
            group_type="classic",
        )
        for name, group in sorted(groups.items())
    ])


def delete_groups(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, DeleteGroupsRequest)
    groups = _coordinator(request.state).groups
    results = []
    for group_id in body.groups_names:
        group = groups.get(group_id)
        code = GROUP_ID_NOT_FOUND if group is None else NON_EMPTY_GROUP if group.members else NONE
        if code == NONE:
            del groups[group_id]
        results.append(DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=code))
    return DeleteGroupsResponse(results=results)


# -- transactions --------------------------------------------------------------------------


def init_producer_id(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, InitProducerIdRequest)
    coordinator = _coordinator(request.state)
    key = body.transactional_id
    if key is not None and key in coordinator.producers:
        producer_id, epoch = coordinator.producers[key]
        epoch += 1
    else:
        producer_id, epoch = coordinator.next_producer_id, 0
        coordinator.next_producer_id += 1
    if key is not None:
        coordinator.producers[key] = (producer_id, epoch)
    return InitProducerIdResponse(producer_id=producer_id, producer_epoch=epoch)


def add_partitions_to_txn(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, AddPartitionsToTxnRequest)
    result_topic = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
    result_partition = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult

    def echo(
        topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic],
    ) -> list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]:
        return [
            result_topic(name=t.name, results_by_partition=[
                result_partition(partition_index=p, partition_error_code=NONE) for p in t.partitions
            ])
            for t in topics
        ]

    if request.version <= 3:
        return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=echo(body.v3_and_below_topics))
    return AddPartitionsToTxnResponse(results_by_transaction=[
        AddPartitionsToTxnResponse.AddPartitionsToTxnResult(
            transactional_id=t.transactional_id, topic_results=echo(t.topics)
        )
        for t in body.transactions
    ])


def add_offsets_to_txn(request: Request) -> KafkaMessage:
    return AddOffsetsToTxnResponse()


def txn_offset_commit(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, TxnOffsetCommitRequest)
    group = _group(request, body.group_id)
    assert group is not None
    topics = []
    for topic in body.topics:
        for part in topic.partitions:
            committed = (part.committed_offset, part.committed_metadata)
            group.offsets[(topic.name, part.partition_index)] = committed
        topics.append(TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(name=topic.name, partitions=[
            TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(partition_index=p.partition_index)
            for p in topic.partitions
        ]))
    return TxnOffsetCommitResponse(topics=topics)


def end_txn(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, EndTxnRequest)
    response = EndTxnResponse(producer_id=body.producer_id, producer_epoch=body.producer_epoch)
    if request.version >= 5:  # KIP-890: the coordinator bumps the epoch at every commit/abort
        response.producer_epoch = body.producer_epoch + 1
        producers = _coordinator(request.state).producers
        producers[body.transactional_id] = (body.producer_id, body.producer_epoch + 1)
    return response
