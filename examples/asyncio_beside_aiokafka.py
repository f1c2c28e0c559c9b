"""kafkacompat in an asyncio application, next to aiokafka: check the broker, then produce.

    python examples/asyncio_beside_aiokafka.py --bootstrap 127.0.0.1:9092 --topic events

Before the application's own client starts, kafkacompat's asyncio driver
negotiates with the broker in the same event loop (no trio, no thread) and
says what the broker speaks and which versions would be used; the
application refuses to start where a version it needs is missing.
"""

import argparse
import asyncio

from aiokafka import AIOKafkaProducer

from kafkacompat.aio import open_connection
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest

PRODUCE, METADATA = 0, 3


async def main(bootstrap: str, topic: str) -> int:
    host, _, port = bootstrap.partition(",")[0].rpartition(":")
    try:
        async with open_connection(host, int(port)) as conn:
            caps = conn.capabilities
            assert caps is not None
            print(f"broker {conn.node}: {caps.release_guess.text}")
            for api, name in ((PRODUCE, "Produce"), (METADATA, "Metadata")):
                print(f"  {name} {caps.explain(api).reason}")
            metadata = await conn.request(MetadataRequest(topics=[]))
            print(f"  cluster {metadata.cluster_id}: {len(metadata.brokers)} broker(s)")
    except KafkaCompatError as exc:  # typed, with the node and the handshake transcript
        print(f"not starting: {exc}")
        return 1

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip")
    await producer.start()
    try:
        sent = await producer.send_and_wait(topic, b"checked first")
        print(f"aiokafka produced to {sent.topic}[{sent.partition}] at offset {sent.offset}")
    finally:
        await producer.stop()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
    parser.add_argument("--topic", default="kafkacompat-aio-example")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.bootstrap, args.topic)))
