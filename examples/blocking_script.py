"""The blocking facade: the same cluster API from a plain script, no async code.

    python examples/blocking_script.py --bootstrap 127.0.0.1:9092

Needs: any Kafka broker, or `kafkacompat emulate`.  Ends with one line and
exit status 1 when the broker cannot be used.
"""

import argparse

import kafkacompat
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bootstrap", required=True, help="host:port[,host:port...]")
args = parser.parse_args()

try:
    with kafkacompat.connect_sync(args.bootstrap) as cluster:
        print(cluster.metadata.describe())
        for node_id, caps in cluster.capabilities().items():
            print(f"node {node_id}: {caps.release_guess.text}")
        print(cluster.view().describe())

        metadata = cluster.request(None, MetadataRequest(topics=[]))
        print(f"Metadata answered by the cluster {metadata.cluster_id}: {len(metadata.brokers)} broker(s)")

        lookup = cluster.find_coordinators([f"script-group-{n}" for n in range(10)])
        print(f"coordinators: {lookup.describe()}")

        features = cluster.describe_features()
        print(features.describe())
        try:
            report = cluster.update_features({"metadata.version": 21}, dry_run=True)
            print(report.describe())
        except KafkaCompatError as exc:  # a typed error, raised before anything was sent
            print(f"dry run refused: {type(exc).__name__}: {exc}")
except KafkaCompatError as exc:  # typed: unreachable, not Kafka, or no usable version
    raise SystemExit(f"cannot use {args.bootstrap}: {type(exc).__name__}: {exc}") from None
