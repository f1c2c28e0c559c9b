"""kafkacompat in an asyncio application, next to aiokafka: check the broker, then produce.

    python examples/asyncio_beside_aiokafka.py --bootstrap 127.0.0.1:9092 --topic events

Before the application's own client starts, kafkacompat's asyncio driver
negotiates with the broker in the same event loop (no trio, no thread) and
says what the broker speaks and which versions would be used; the
application refuses to start where a version it needs is missing.

Needs: a broker that stores messages (Kafka 0.10 or later, or Tansu; the
emulator answers ApiVersions for Produce but stores nothing).  A produce that
does not complete within PRODUCE_TIMEOUT seconds ends with one line and exit
status 1, as does a broker that cannot be used.
"""

import argparse
import asyncio
import logging

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from kafkacompat.aio import open_connection
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest

PRODUCE, METADATA = 0, 3
PRODUCE_TIMEOUT = 15.0  # seconds for aiokafka to start and produce one message


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

    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # its retries' log: the outcome is one line
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, compression_type="gzip", request_timeout_ms=int(PRODUCE_TIMEOUT * 1000)
    )
    try:
        async with asyncio.timeout(PRODUCE_TIMEOUT):
            await producer.start()
            sent = await producer.send_and_wait(topic, b"checked first", partition=0)
    except (KafkaError, TimeoutError) as exc:
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        print(f"aiokafka could not produce to {topic} within {PRODUCE_TIMEOUT:.0f} s: {why}")
        return 1
    finally:
        await producer.stop()
    print(f"aiokafka produced to {sent.topic}[{sent.partition}] at offset {sent.offset}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
    parser.add_argument("--topic", default="kafkacompat-aio-example")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.bootstrap, args.topic)))
