"""Partition logs of the emulated cluster, and the handlers that write and read them.

Theory.  Real clients do not stop at Metadata: a producer sends Produce, a
consumer ListOffsets and Fetch, an admin CreateTopics.  The emulator keeps just
enough state for that traffic to run end to end: per partition, the record
batches as the client sent them, each stamped with the offset the broker
assigned (the first 8 bytes of a batch, which no checksum covers), and the log
start and end offsets.  Nothing is decompressed or re-encoded: a batch goes out
on Fetch exactly as it came in, which is what a broker does when the formats
match.

Both record formats frame an entry the same way (offset int64, size int32,
then ``size`` bytes), so one walk reads either: a v2 batch (magic 2, KIP-98)
holds ``lastOffsetDelta + 1`` offsets; an old message (magic 0/1) takes one
offset here (a compressed wrapper is counted as one: the emulator does not
look inside).  Fetch before v4 cannot carry magic 2, so such batches are left
out of old fetches rather than down-converted.

Memory is bounded whatever the traffic: each partition keeps its newest
``MAX_PARTITION_BYTES`` of batches, advancing its log start offset as a
retention pass would.
"""

from __future__ import annotations

import struct
import weakref
from collections import deque
from dataclasses import dataclass, field

from kafkacompat.protocol.error_codes import BY_NAME, NONE
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafkacompat.testing.emulator.handlers import Request
from kafkacompat.testing.emulator.state import ClusterState

__all__ = [
    "MAX_PARTITION_BYTES",
    "PartitionLog",
    "create_topics",
    "delete_topics",
    "fetch",
    "list_offsets",
    "log_of",
    "offset_for_leader_epoch",
    "produce",
]

MAX_PARTITION_BYTES = 4 * 1024 * 1024
UNKNOWN_TOPIC_OR_PARTITION = BY_NAME["UNKNOWN_TOPIC_OR_PARTITION"].code
CORRUPT_MESSAGE = BY_NAME["CORRUPT_MESSAGE"].code
TOPIC_ALREADY_EXISTS = BY_NAME["TOPIC_ALREADY_EXISTS"].code
INVALID_PARTITIONS = BY_NAME["INVALID_PARTITIONS"].code
_ENTRY_HEAD = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a v2 batch
_MAGIC_AT, _DELTA_AT = 16, 23
LATEST, EARLIEST = -1, -2


@dataclass(slots=True)
class PartitionLog:
    """One partition: its batches (first offset, bytes), log start and end offsets."""

    batches: deque[tuple[int, bytes]] = field(default_factory=deque)
    start: int = 0
    end: int = 0
    size: int = 0

    def append(self, records: bytes) -> int:
        """Stamp and keep every entry of ``records``; the first offset given (raises ValueError)."""
        first = self.end
        for entry, count in _entries(records):
            stamped = struct.pack(">q", self.end) + entry[8:]
            self.batches.append((self.end, stamped))
            self.size += len(stamped)
            self.end += count
        while self.size > MAX_PARTITION_BYTES and len(self.batches) > 1:
            _, dropped = self.batches.popleft()
            self.size -= len(dropped)
            self.start = self.batches[0][0]
        return first

    def read(self, offset: int, max_bytes: int, magic2_allowed: bool) -> bytes:
        """Batches holding ``offset`` or later, up to ``max_bytes`` (always at least one)."""
        out = bytearray()
        for index, (_, data) in enumerate(self.batches):
            following = self.batches[index + 1][0] if index + 1 < len(self.batches) else self.end
            if following <= offset or (data[_MAGIC_AT] >= 2 and not magic2_allowed):
                continue
            if out and len(out) + len(data) > max_bytes:
                break
            out += data
        return bytes(out)


def _entries(records: bytes) -> list[tuple[bytes, int]]:
    entries = []
    position = 0
    while position < len(records):
        if len(records) - position < _ENTRY_HEAD.size + 1:
            raise ValueError("a truncated record entry")
        _, size = _ENTRY_HEAD.unpack_from(records, position)
        end = position + _ENTRY_HEAD.size + size
        if size < 1 or end > len(records):
            raise ValueError(f"a record entry of {size} bytes does not fit")
        entry = records[position:end]
        count = 1
        if entry[_MAGIC_AT] >= 2:
            if len(entry) < _DELTA_AT + 4:
                raise ValueError("a truncated record batch")
            count = _LAST_OFFSET_DELTA.unpack_from(entry, _DELTA_AT)[0] + 1
        entries.append((entry, max(count, 1)))
        position = end
    return entries


_LOGS: weakref.WeakKeyDictionary[ClusterState, dict[tuple[str, int], PartitionLog]] = (
    weakref.WeakKeyDictionary()
)


def log_of(state: ClusterState, topic: str, partition: int) -> PartitionLog | None:
    """The log of a partition that exists (created on first use), else None."""
    if partition < 0 or partition >= state.topics.get(topic, 0):
        return None
    logs = _LOGS.setdefault(state, {})
    return logs.setdefault((topic, partition), PartitionLog())


def _topic_name(state: ClusterState, name: str | None, topic_id: object) -> str:
    if name:
        return name
    for known in state.topics:
        if state.topic_id(known) == topic_id:
            return known
    return str(topic_id)


# -- Produce -------------------------------------------------------------------------------


def produce(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, ProduceRequest)
    responses = []
    for topic in body.topic_data:
        name = _topic_name(request.state, topic.name, getattr(topic, "topic_id", None))
        rows = []
        for part in topic.partition_data:
            row = ProduceResponse.PartitionProduceResponse(index=part.index, base_offset=-1)
            log = log_of(request.state, name, part.index)
            if log is None:
                row.error_code = UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    row.base_offset = log.append(bytes(part.records or b""))
                    row.log_start_offset = log.start
                except ValueError:
                    row.error_code = CORRUPT_MESSAGE
            rows.append(row)
        responses.append(ProduceResponse.TopicProduceResponse(name=topic.name, partition_responses=rows))
    return ProduceResponse(responses=responses)


# -- Fetch ---------------------------------------------------------------------------------


def fetch(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, FetchRequest)
    magic2 = request.version >= 4
    budget = body.max_bytes if request.version >= 3 and body.max_bytes > 0 else 1 << 30
    responses = []
    for topic in body.topics:
        name = _topic_name(request.state, topic.topic, topic.topic_id)
        rows = []
        for part in topic.partitions:
            row = FetchResponse.PartitionData(partition_index=part.partition, records=b"")
            log = log_of(request.state, name, part.partition)
            if log is None:
                row.error_code = UNKNOWN_TOPIC_OR_PARTITION
                row.high_watermark = -1
            else:
                if part.fetch_offset < log.start or part.fetch_offset > log.end:
                    row.error_code = BY_NAME["OFFSET_OUT_OF_RANGE"].code
                else:
                    data = log.read(part.fetch_offset, min(part.partition_max_bytes, budget), magic2)
                    budget -= len(data)
                    row.records = data
                row.high_watermark = row.last_stable_offset = log.end
                row.log_start_offset = log.start
            rows.append(row)
        responses.append(FetchResponse.FetchableTopicResponse(
            topic=topic.topic, topic_id=topic.topic_id, partitions=rows
        ))
    return FetchResponse(responses=responses, session_id=0)


# -- ListOffsets and OffsetForLeaderEpoch --------------------------------------------------


def list_offsets(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, ListOffsetsRequest)
    topics = []
    for topic in body.topics:
        rows = []
        for part in topic.partitions:
            row = ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=part.partition_index)
            log = log_of(request.state, topic.name, part.partition_index)
            if log is None:
                row.error_code = UNKNOWN_TOPIC_OR_PARTITION
            else:
                # Every record is stamped "now" as far as the emulator knows: a timestamp
                # query lands on the log start, latest on the end.
                offset = log.end if part.timestamp == LATEST else log.start
                row.offset, row.timestamp, row.leader_epoch = offset, -1, 0
                if request.version == 0:
                    row.old_style_offsets = [offset]
            rows.append(row)
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=rows))
    return ListOffsetsResponse(topics=topics)


def offset_for_leader_epoch(request: Request) -> KafkaMessage:
    """Every partition is at leader epoch 0 for ever: its end offset answers any epoch."""
    body = request.body
    assert isinstance(body, OffsetForLeaderEpochRequest)
    topics = []
    for topic in body.topics:
        rows = []
        for part in topic.partitions:
            log = log_of(request.state, topic.topic, part.partition)
            rows.append(OffsetForLeaderEpochResponse.EpochEndOffset(
                partition=part.partition,
                error_code=NONE if log is not None else UNKNOWN_TOPIC_OR_PARTITION,
                leader_epoch=0 if log is not None else -1,
                end_offset=log.end if log is not None else -1,
            ))
        result = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=topic.topic, partitions=rows)
        topics.append(result)
    return OffsetForLeaderEpochResponse(topics=topics)


# -- CreateTopics and DeleteTopics ---------------------------------------------------------


def create_topics(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, CreateTopicsRequest)
    state, results = request.state, []
    for topic in body.topics:
        partitions = topic.num_partitions if topic.num_partitions > 0 else max(len(topic.assignments), 1)
        result = CreateTopicsResponse.CreatableTopicResult(
            name=topic.name, num_partitions=partitions, replication_factor=1
        )
        if topic.name in state.topics:
            result.error_code, result.error_message = TOPIC_ALREADY_EXISTS, f"topic {topic.name!r} exists"
        elif topic.num_partitions == 0 or topic.num_partitions < -1:
            result.error_code, result.error_message = INVALID_PARTITIONS, "partitions must be at least 1"
        else:
            if request.version >= 7:
                result.topic_id = state.topic_id(topic.name)
            if not (request.version >= 1 and body.validate_only):
                state.topics[topic.name] = partitions
        results.append(result)
    return CreateTopicsResponse(topics=results)


def delete_topics(request: Request) -> KafkaMessage:
    body = request.body
    assert isinstance(body, DeleteTopicsRequest)
    state = request.state
    names = (
        [_topic_name(state, t.name, t.topic_id) for t in body.topics]
        if request.version >= 6 else list(body.topic_names)
    )
    results = []
    for name in names:
        result = DeleteTopicsResponse.DeletableTopicResult(name=name)
        if name in state.topics:
            partitions = state.topics.pop(name)
            logs = _LOGS.get(state, {})
            for index in range(partitions):
                logs.pop((name, index), None)
        else:
            result.error_code = UNKNOWN_TOPIC_OR_PARTITION
        results.append(result)
    return DeleteTopicsResponse(responses=results)
