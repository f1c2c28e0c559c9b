"""The cluster API from asyncio: discovery, capabilities, coordinators and features, no trio.

    python examples/asyncio_cluster.py --bootstrap 127.0.0.1:9092

``kafkacompat.aio.connect`` is ``kafkacompat.connect`` on the asyncio loop
the application already runs: the same methods, the same typed errors.

Needs: any Kafka broker, or `kafkacompat emulate`.  Ends with one line and
exit status 1 when the broker cannot be used.
"""

import argparse
import asyncio

import kafkacompat.aio
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest, MetadataResponse


async def main(bootstrap: str) -> int:
    try:
        async with kafkacompat.aio.connect(bootstrap) as cluster:
            print(cluster.metadata.describe())
            for node_id, caps in (await cluster.capabilities()).items():
                print(f"node {node_id}: {caps.release_guess.text}")
            print((await cluster.view()).describe())

            metadata = await cluster.request(None, MetadataRequest(topics=[]))
            assert isinstance(metadata, MetadataResponse)
            brokers = len(metadata.brokers)
            print(f"Metadata answered by the cluster {metadata.cluster_id}: {brokers} broker(s)")

            lookup = await cluster.find_coordinators([f"asyncio-group-{n}" for n in range(10)])
            print(f"coordinators: {lookup.describe()}")
            print((await cluster.describe_features()).describe())
    except KafkaCompatError as exc:  # typed: unreachable, not Kafka, or no usable version
        print(f"cannot use {bootstrap}: {type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.bootstrap)))
