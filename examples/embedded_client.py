"""An embedded client: negotiated Metadata, then ListOffsets at the highest version every broker takes.

    python examples/embedded_client.py --bootstrap 127.0.0.1:9092 --topic orders

Every request below goes out at a version picked from what the broker it is
sent to answered in ApiVersions; nothing is hard-coded.

Needs: a broker that creates topics on request (CreateTopics, Kafka 0.10.1 or
later, or Tansu; the emulator answers no CreateTopics).  It checks that first,
and ends with one line and exit status 1 when the broker cannot do it.
"""

import argparse

import trio

import kafkacompat
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import (
    CreateTopicsRequest,
    ListOffsetsRequest,
    MetadataRequest,
)

TOPIC_ALREADY_EXISTS = 36
LATEST = -1  # ListOffsets timestamp: the next offset to be written


async def main(bootstrap: str, topic: str) -> None:
    async with kafkacompat.connect(bootstrap) as cluster:
        print(cluster.metadata.describe())
        for node_id, caps in (await cluster.capabilities()).items():
            picked = {name: caps.pick_version(key) for name, key in
                      (("Metadata", MetadataRequest.API_KEY), ("ListOffsets", ListOffsetsRequest.API_KEY))}
            print(f"node {node_id}: {caps.release_guess.text}; would send {picked}")
            if not caps.lists_api(CreateTopicsRequest.API_KEY):
                raise SystemExit(f"node {node_id} ({caps.release_guess.text}) cannot create topics: "
                                 "this example needs Kafka 0.10.1 or later")

        # Make sure the topic exists (an admin request, sent to any broker).
        created = await cluster.request(None, CreateTopicsRequest(topics=[
            CreateTopicsRequest.CreatableTopic(name=topic, num_partitions=1, replication_factor=1)
        ], timeout_ms=10_000))
        for result in created.topics:
            if result.error_code not in (0, TOPIC_ALREADY_EXISTS):
                raise SystemExit(f"cannot create {topic}: error {result.error_code} {result.error_message}")

        # Metadata at the version the connection negotiated: who leads partition 0?
        conn = await cluster.any_connection()
        assert conn.capabilities is not None  # negotiated: any_connection hands out ready ones
        version = conn.capabilities.pick_version(MetadataRequest.API_KEY)
        wanted = MetadataRequest.MetadataRequestTopic(name=topic)
        metadata = await conn.request(MetadataRequest(topics=[wanted]))
        partition = metadata.topics[0].partitions[0]
        print(f"Metadata v{version}: {topic}[0] is led by node {partition.leader_id}")

        # ListOffsets at the highest version *every* broker accepts.
        view = await cluster.view()
        list_offsets = view.pick_everywhere(ListOffsetsRequest.API_KEY)
        answer = await cluster.request(partition.leader_id, ListOffsetsRequest(replica_id=-1, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=LATEST)
            ])
        ]), version=list_offsets)
        offset = answer.topics[0].partitions[0]
        print(f"ListOffsets v{list_offsets} (highest common): {topic}[0] latest offset {offset.offset}"
              f" (error {offset.error_code})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
    parser.add_argument("--topic", default="kafkacompat-example")
    args = parser.parse_args()
    try:
        trio.run(main, args.bootstrap, args.topic)
    except KafkaCompatError as exc:  # typed: unreachable, not Kafka, or no usable version
        raise SystemExit(f"cannot use {args.bootstrap}: {type(exc).__name__}: {exc}") from None
