"""What does each broker speak?  A capability inspector in a few lines of kafkacompat.

    python examples/inspect_capabilities.py --bootstrap 127.0.0.1:9092

Needs: any Kafka broker, 0.8.0 to today's, or `kafkacompat emulate`.  Ends with
one line and exit status 1 when the broker cannot be used.
"""

import argparse

import trio

import kafkacompat
from kafkacompat.errors import KafkaCompatError


async def main(bootstrap: str) -> None:
    async with kafkacompat.connect(bootstrap) as cluster:
        print(cluster.metadata.describe())
        for node_id, caps in (await cluster.capabilities()).items():
            print(f"node {node_id} at {caps.node}: {caps.release_guess.text}, {len(caps.api_ranges)} APIs")
        print((await cluster.view()).describe())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
    bootstrap = parser.parse_args().bootstrap
    try:
        trio.run(main, bootstrap)
    except KafkaCompatError as exc:  # typed: unreachable, not Kafka, or no usable version
        raise SystemExit(f"cannot use {bootstrap}: {type(exc).__name__}: {exc}") from None
