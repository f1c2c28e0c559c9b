"""Golden bytes of the messages and versions Kafka 4.4 added, as Kafka's own classes write them.

Each hex string below was produced once by Kafka 4.4.0's generated Java message
classes (``org.apache.kafka:kafka-clients:4.4.0`` and ``kafka-metadata:4.4.0``
from Maven Central): the object was built with the field values shown, sized
and written through ``Message.write`` at the version given, and the bytes were
copied here as data.  So they are independent of this codec and of the JSON
it is generated from.  Both directions are checked, as in test_golden_bytes.py.
"""

from __future__ import annotations

import uuid

import pytest

from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
    TxnOffsetCommitRequest,
    UnregisterControllerRecord,
    UnregisterControllerRequest,
    UnregisterControllerResponse,
)

# On the native reader and on the generated Python readers (tests/support/codec_paths.py).
pytestmark = pytest.mark.usefixtures("each_codec_path")

AV = ApiVersionsResponse
TX = TxnOffsetCommitRequest
DG = DeleteGroupsResponse
SG = StreamsGroupTopologyDescriptionUpdateRequest
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"

# fmt: off
GOLDEN: list[tuple[str, KafkaMessage, int, str]] = [
    # ApiVersions v5 (KIP-1242): ClusterId (compact nullable string) and NodeId after the software fields
    ("identity", ApiVersionsRequest(client_software_name="kc", client_software_version="1.0",
                                    cluster_id=CLUSTER_ID, node_id=1), 5,
     "036b63" "04312e30" "17" + CLUSTER_ID.encode().hex() + "00000001" "00"),
    ("no-identity", ApiVersionsRequest(client_software_name="kc", client_software_version="1.0"), 5,
     "036b63" "04312e30" "00" "ffffffff" "00"),
    ("one-api", AV(error_code=0, api_keys=[AV.ApiVersion(api_key=18, min_version=0, max_version=5)],
                   throttle_time_ms=0), 5,
     "0000" "02" "0012" "0000" "0005" "00" "00000000" "00"),
    ("rebootstrap-required", AV(error_code=129), 5, "0081" "01" "00000000" "00"),
    # TxnOffsetCommit v6: topics by id instead of name
    ("topic-id", TX(transactional_id="tx", group_id="g", producer_id=7, producer_epoch=1,
                    generation_id_or_member_epoch=3, member_id="m", group_instance_id=None,
                    topics=[TX.TxnOffsetCommitRequestTopic(
                        topic_id=uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"),
                        partitions=[TX.TxnOffsetCommitRequestPartition(
                            partition_index=2, committed_offset=100, committed_leader_epoch=-1,
                            committed_metadata=None)])]), 6,
     "037478" "0267" "0000000000000007" "0001" "00000003" "026d" "00"
     "02" "00112233445566778899aabbccddeeff"
     "02" "00000002" "0000000000000064" "ffffffff" "00" "00" "00" "00"),
    ("two-groups", DeleteGroupsRequest(groups_names=["g1", "g2"]), 3, "03" "036731" "036732" "00"),
    # DeleteGroups v3: ErrorMessage per group
    ("error-message", DG(throttle_time_ms=0, results=[
        DG.DeletableGroupResult(group_id="g1", error_code=69, error_message="not empty"),
        DG.DeletableGroupResult(group_id="g2", error_code=0, error_message=None)]), 3,
     "00000000" "03" "036731" "0045" "0a" + b"not empty".hex() + "00" "036732" "0000" "00" "00" "00"),
    ("source-and-sink", SG(group_id="app", member_id="m", topology_epoch=1,
                           topology_description=SG.TopologyDescription(
                               subtopologies=[SG.TopologyDescriptionSubtopology(subtopology_id="0", nodes=[
                                   SG.TopologyDescriptionNode(name="S", node_type=1, source_topics=["in"],
                                                              sink_topic=None, stores=[], successors=["K"]),
                                   SG.TopologyDescriptionNode(name="K", node_type=3, source_topics=[],
                                                              sink_topic="out", stores=[], successors=[]),
                               ])],
                               global_stores=[])), 0,
     "04617070026d00000001020230030253010203696e000102024b00024b0301046f757401010000010000"),
    ("ok", StreamsGroupTopologyDescriptionUpdateResponse(throttle_time_ms=0, error_code=0,
                                                         error_message=None), 0,
     "00000000" "0000" "00" "00"),
    ("controller-3000", UnregisterControllerRequest(controller_id=3000), 0, "00000bb8" "00"),
    ("ok", UnregisterControllerResponse(throttle_time_ms=5, error_code=0, error_message=None), 0,
     "00000005" "0000" "00" "00"),
    ("controller-3000", UnregisterControllerRecord(controller_id=3000), 0, "00000bb8" "00"),
]
# fmt: on

IDS = [f"{type(m).NAME}-v{v}-{label}" for label, m, v, _ in GOLDEN]


@pytest.mark.parametrize(("label", "message", "version", "wire"), GOLDEN, ids=IDS)
def test_encodes_to_the_bytes_kafka_writes(
    label: str, message: KafkaMessage, version: int, wire: str
) -> None:
    assert message.encode(version).hex() == wire


@pytest.mark.parametrize(("label", "message", "version", "wire"), GOLDEN, ids=IDS)
def test_decodes_the_bytes_kafka_writes(label: str, message: KafkaMessage, version: int, wire: str) -> None:
    assert type(message).decode(bytes.fromhex(wire), version) == message


def test_the_golden_versions_are_the_newest_kafka_44_defines() -> None:
    newest = {type(m).NAME: (v, type(m).VALID_VERSIONS.highest) for _, m, v, _ in GOLDEN}
    assert all(v == top for v, top in newest.values()), newest
    assert newest["ApiVersionsRequest"] == (5, 5)
    assert newest["TxnOffsetCommitRequest"] == (6, 6)
    assert newest["DeleteGroupsResponse"] == (3, 3)
    assert StreamsGroupTopologyDescriptionUpdateRequest.API_KEY == 93
    assert UnregisterControllerRequest.API_KEY == 94
