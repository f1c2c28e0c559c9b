"""What does each broker speak?  A capability inspector in a few lines of kafkacompat.

    python examples/inspect_capabilities.py --bootstrap 127.0.0.1:9092
"""

import argparse

import trio

import kafkacompat


async def main(bootstrap: str) -> None:
    async with kafkacompat.connect(bootstrap) as cluster:
        print(cluster.metadata.describe())
        for node_id, caps in (await cluster.capabilities()).items():
            print(f"node {node_id} at {caps.node}: {caps.release_guess.text}, {len(caps.api_ranges)} APIs")
        print((await cluster.view()).describe())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
    trio.run(main, parser.parse_args().bootstrap)
